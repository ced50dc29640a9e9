import FuzzSupport
import SimulatedACR122IFD
#if canImport(Glibc)
import Glibc
#endif

/// The simulated reader's control protocol (Sources/SimulatedACR122IFD/ControlProtocol.swift) as a
/// test or `secbridge simulate` speaks it: the reader is opened through the driver's public entry
/// point IFDHCreateChannelByName, as pcscd opens it, and every input line is written to its
/// control socket. Never traps or hangs; every request line gets exactly one reply line, `ok …`
/// or `error <code> <reason>`.
///
/// Inputs over 4096 bytes are skipped (a longer line is refused and the connection closed, which
/// is tested elsewhere), and so are inputs naming `wait-ms` (terminal-result waits, bounded, up to
/// 60 s of real time by design). After each input the field is emptied and the personality reset.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzControlLine(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let input = FuzzInput.bytes(data, size)
    guard input.count <= 4096, !String(decoding: input, as: UTF8.self).contains("wait-ms") else { return 0 }
    let lines = input.split(separator: 0x0A, omittingEmptySubsequences: false)
    for reply in ControlConnection.shared.exchange(input + [0x0A], lines: lines.count) {
        FuzzInput.require(reply.hasPrefix("ok") || reply.hasPrefix("error "), "reply '\(reply)' to \(FuzzInput.hex(input))")
    }
    _ = ControlConnection.shared.exchange(Array("remove all=yes\npersonality name=ccid-escape-enabled\ntimescale value=0\n".utf8), lines: 3)
    return 0
}

/// One reader opened on Lun 0 in a private directory, and one connection to its control socket.
final class ControlConnection: @unchecked Sendable {
    static let shared = ControlConnection()

    private let socket: Int32

    private init() {
        let directory = "/tmp/secbridge-fuzz-control.\(getpid())"
        var name = Array("\(directory):timescale=0".utf8CString)
        guard IFDHCreateChannelByName(0, &name) == 0 else { fatalError("IFDHCreateChannelByName failed for \(directory)") }
        socket = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let path = Array((directory + "/control.sock").utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in path.enumerated() { raw[index] = byte }
            raw[path.count] = 0
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else { fatalError("cannot connect to \(directory)/control.sock: errno \(errno)") }
    }

    /// Writes `request` and reads `lines` reply lines, each within 30 s (a hang is a failure; the bound of scripts/fuzz.sh's -timeout).
    func exchange(_ request: [UInt8], lines: Int) -> [String] {
        var offset = 0
        while offset < request.count {
            let written = request[offset...].withUnsafeBytes { send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard written > 0 else { fatalError("property violated: the control socket closed while writing (errno \(errno))") }
            offset += written
        }
        var replies: [String] = []
        var pending: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while replies.count < lines {
            if let newline = pending.firstIndex(of: 0x0A) {
                replies.append(String(decoding: pending[..<newline], as: UTF8.self))
                pending.removeSubrange(...newline)
                continue
            }
            var poller = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 30_000) > 0 else {
                fatalError("property violated: no reply within 30 s (\(replies.count) of \(lines) lines answered)")
            }
            let count = chunk.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { fatalError("property violated: the control socket closed after \(replies.count) of \(lines) replies") }
            pending += chunk[0..<count]
        }
        FuzzInput.require(pending.isEmpty, "more reply bytes than request lines: \(String(decoding: pending, as: UTF8.self))")
        return replies
    }
}
