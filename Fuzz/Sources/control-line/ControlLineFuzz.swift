import FuzzSupport
import SecbridgeTesting
import SimulatedACR122IFD
#if canImport(Glibc)
import Glibc
#endif

/// The simulated reader's control protocol (Sources/SimulatedACR122IFD/ControlProtocol.swift) as a
/// test or `secbridge simulate` speaks it: for each input a fresh reader is opened through the
/// driver's public entry point IFDHCreateChannelByName, as pcscd opens it, every input line is
/// written to its control socket, and the reader is closed again (IFDHCloseChannel), so no input
/// sees what an earlier one left (peers, the field's event log). Never traps or hangs; every
/// request line gets exactly one reply line, `ok …` or `error <code> <reason>`; and every line the
/// parser accepts round-trips through its typed request (`ControlLineRoundTrip`, SecbridgeTesting):
/// its text form parses back to the same request.
///
/// Inputs over 4096 bytes are skipped (a longer line is refused and the connection closed, which
/// is tested elsewhere), and so are inputs naming `wait-ms` (terminal-result waits, bounded, up to
/// 60 s of real time by design).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzControlLine(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let input = FuzzInput.bytes(data, size)
    guard input.count <= 4096, !String(decoding: input, as: UTF8.self).contains("wait-ms") else { return 0 }
    let lines = input.split(separator: 0x0A, omittingEmptySubsequences: false)
    for line in lines {
        let text = String(decoding: line, as: UTF8.self)
        if let failure = ControlLineRoundTrip.failure(text) {
            FuzzInput.require(false, "\(failure) (input \(FuzzInput.hex(input)))")
        }
    }
    let connection = ControlConnection()
    defer { connection.close() }
    for reply in connection.exchange(input + [0x0A], lines: lines.count) {
        FuzzInput.require(reply.hasPrefix("ok") || reply.hasPrefix("error "), "reply '\(reply)' to \(FuzzInput.hex(input))")
    }
    return 0
}

/// A reader opened on Lun 0 in a private directory, and a connection to its control socket.
final class ControlConnection {
    private let directory = "/tmp/secbridge-fuzz-control.\(getpid())"
    private let socket: Int32

    init() {
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

    /// Closes the connection and the reader, and removes the directory.
    func close() {
        _ = Glibc.close(socket)
        _ = IFDHCloseChannel(0)
        unlink(directory + "/control.sock")
        rmdir(directory)
    }

    /// Writes `request` and reads `lines` reply lines, each within 30 s (a hang is a failure; the
    /// bound of scripts/fuzz.sh's -timeout).
    ///
    /// A call interrupted by a signal (EINTR) is made again with what is left of the bound:
    /// libFuzzer's `-timeout=N` arms a periodic SIGALRM every N/2+1 s (setitimer ITIMER_REAL, its
    /// handler installed without SA_RESTART; LLVM compiler-rt FuzzerUtilPosix.cpp `SetTimer`), and
    /// poll(2) is never restarted after a handler (signal(7)), so one alarm landing while this
    /// thread waited for a reply once read as "no reply within 30 s" (docs/faults.md).
    func exchange(_ request: [UInt8], lines: Int) -> [String] {
        var offset = 0
        while offset < request.count {
            let written = request[offset...].withUnsafeBytes { send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { fatalError("property violated: the control socket closed while writing (errno \(errno))") }
            offset += written
        }
        var replies: [String] = []
        var pending: [UInt8] = []
        var lineStart = 0
        var searched = 0
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while replies.count < lines {
            if let newline = pending[searched...].firstIndex(of: 0x0A) {
                replies.append(String(decoding: pending[lineStart..<newline], as: UTF8.self))
                lineStart = newline + 1
                searched = lineStart
                continue
            }
            searched = pending.count
            let deadline = ContinuousClock.now + .seconds(30)
            var ready: Int32 = 0
            repeat {
                let left = deadline - ContinuousClock.now
                guard left > .zero else { ready = 0; break }
                let milliseconds = Int32(clamping: left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000 + 1)
                var poller = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
                ready = poll(&poller, 1, milliseconds)
            } while ready < 0 && errno == EINTR
            guard ready >= 0 else { fatalError("poll of the control socket failed (errno \(errno))") }
            guard ready > 0 else {
                fatalError("property violated: no reply within 30 s (\(replies.count) of \(lines) lines answered)")
            }
            var count = 0
            repeat {
                count = chunk.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
            } while count < 0 && errno == EINTR
            guard count > 0 else { fatalError("property violated: the control socket closed after \(replies.count) of \(lines) replies") }
            pending += chunk[0..<count]
        }
        FuzzInput.require(lineStart == pending.count, "more reply bytes than request lines")
        return replies
    }
}
