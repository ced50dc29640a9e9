import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// One active session per reader (docs/session-model.md: a second session on the same reader gets
/// `resourceUnavailable`): within the process always, and across processes for readers behind
/// pcscd.
///
/// Across processes the claim is an flock(2) on a lock file, so a second `secbridge emulate` (or
/// any program using this library) on a reader that is emulating is refused at once, and a
/// process that dies, however it dies, lets go: the kernel drops its lock. Lock files live in
/// `/tmp/secbridge-claims-<euid>` (mode 0700), one per pcscd socket and reader name,
/// `<FNV-1a 64 of "socket\nreader">.lock`, holding the holder's pid and the reader's name for the
/// message. They are never removed (removing a lock file races with a process opening it); each is
/// a few bytes. Processes of other users are not excluded: each user has a directory of their own.
enum ReaderClaims {
    private static let claims = Mutex<(next: UInt64, holders: [String: UInt64], files: [UInt64: Int32])>((0, [:], [:]))

    /// Why a claim was refused.
    enum Refusal: Error, Equatable {
        /// Another session of this process holds the reader.
        case heldInProcess
        /// Another process holds the reader (its pid when the lock file names one).
        case heldByProcess(pid: Int32?)
    }

    /// Claims `reader`; returns a token for `release`.
    /// - Parameter acrossProcesses: the pcscd socket the reader belongs to, when other processes
    ///   can reach the same reader (pcsc-lite); nil for in-process readers.
    static func claim(_ reader: String, acrossProcesses socket: String? = nil) -> Result<UInt64, Refusal> {
        claims.withLock { c in
            guard c.holders[reader] == nil else { return .failure(.heldInProcess) }
            var file: Int32?
            if let socket {
                switch lockFile(socket: socket, reader: reader) {
                case .success(let descriptor): file = descriptor
                case .failure(let refusal): return .failure(refusal)
                }
            }
            c.next += 1
            c.holders[reader] = c.next
            if let file, file >= 0 { c.files[c.next] = file }
            return .success(c.next)
        }
    }

    /// Releases `reader` if `token` still holds it (and its lock file, if any).
    static func release(_ reader: String, token: UInt64) {
        claims.withLock { c in
            if c.holders[reader] == token { c.holders[reader] = nil }
            if let file = c.files.removeValue(forKey: token) {
                _ = flock(file, LOCK_UN)
                close(file)
            }
        }
    }

    /// The lock directory of this user.
    static var directory: String { "/tmp/secbridge-claims-\(geteuid())" }

    /// Takes the lock file of `reader` behind `socket` without waiting (LOCK_EX | LOCK_NB).
    /// A lock directory or file that cannot be made is no reason to refuse a session: the
    /// in-process rule still holds, so the claim goes ahead without the file (nil descriptor is
    /// never returned as success; -1 stands for "no file").
    private static func lockFile(socket: String, reader: String) -> Result<Int32, Refusal> {
        let directory = directory
        if mkdir(directory, 0o700) != 0 && errno != EEXIST { return .success(-1) }
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in Array((socket + "\n" + reader).utf8) {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3
        }
        let path = directory + "/" + String(hash, radix: 16) + ".lock"
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return .success(-1) }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let holder = holderPID(descriptor)
            close(descriptor)
            return .failure(.heldByProcess(pid: holder))
        }
        let record = Array("\(getpid()) \(reader)\n".utf8)
        _ = ftruncate(descriptor, 0)
        _ = record.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) }
        return .success(descriptor)
    }

    private static func holderPID(_ descriptor: Int32) -> Int32? {
        var buffer = [UInt8](repeating: 0, count: 32)
        let count = buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return nil }
        let text = String(decoding: buffer[0..<count], as: UTF8.self)
        return text.split(separator: " ").first.flatMap { Int32($0) }
    }
}
