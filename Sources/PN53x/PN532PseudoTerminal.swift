#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import PCSCCore

/// A pseudo-terminal pair for a simulated PN532 board: the master end is this byte stream (serve a
/// ``PN532SerialDevice`` on it), the slave end is the device node ``devicePath`` (`/dev/pts/N`) a
/// host opens as it would open `/dev/ttyUSB0` (``PN532TTY``, libnfc's `pn532_uart:/dev/pts/N`,
/// nfcpy's `tty:pts/N`) (posix_openpt(3), grantpt(3), unlockpt(3), ptsname(3); docs/pn532-uart.md §6).
///
/// The slave's line discipline is set raw (cfmakeraw(3): no echo, no line editing, no CR/LF
/// translation, 8 bits) before any host opens it, so frame bytes pass unchanged. The pair keeps a
/// descriptor of its own on the slave, so a host may open and close the device node many times
/// (libnfc does per tool run) without the master seeing a hang-up; bytes the chip sent while no
/// host had the node open wait in the slave's input, and hosts discard stale input before each
/// command (libnfc's `uart_flush_input`, ``PN532SerialLink``).
///
/// Reads wait with poll(2) in steps of at most 200 ms: a blocking call, run it on a thread of its
/// own (``PN532SerialDevice`` does), never on Swift's shared concurrency pool. ``close()`` ends a
/// waiting read within one step (it then throws ``PN532SerialLineError/closed``).
public final class PN532PseudoTerminal: PN532ByteStream, @unchecked Sendable {
    /// The slave's device node, e.g. `/dev/pts/3`.
    public let devicePath: String
    private let master: Int32
    private let slave: Int32
    private let lock = ConditionLock()
    // Guarded by `lock`.
    private var closed = false

    /// Opens a pair.
    /// - Throws: ``PN532SerialLineError/system(operation:path:errno:)`` when posix_openpt, grantpt,
    ///   unlockpt, ptsname_r, opening the slave or setting it raw fails (e.g. EMFILE, or ENOENT
    ///   without a mounted devpts).
    public init() throws(PN532SerialLineError) {
        guard let calls = PseudoTerminalCalls.shared else {
            throw .system(operation: "find posix_openpt, grantpt, unlockpt and ptsname_r in", path: "the C library", errno: ENOSYS)
        }
        let fd = calls.openpt(O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard fd >= 0 else { throw .system(operation: "posix_openpt", path: "/dev/ptmx", errno: errno) }
        func fail(_ operation: String, _ path: String = "/dev/ptmx") -> PN532SerialLineError {
            let code = errno
            Glibc.close(fd)
            return .system(operation: operation, path: path, errno: code)
        }
        guard calls.grantpt(fd) == 0 else { throw fail("grantpt") }
        guard calls.unlockpt(fd) == 0 else { throw fail("unlockpt") }
        var name = [CChar](repeating: 0, count: 128)
        guard calls.ptsname(fd, &name, name.count) == 0 else { throw fail("ptsname_r") }
        let path = String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let slaveFD = open(path, O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK)
        guard slaveFD >= 0 else { throw fail("open", path) }
        var settings = termios()
        guard tcgetattr(slaveFD, &settings) == 0 else {
            let error = fail("tcgetattr", path)
            Glibc.close(slaveFD)
            throw error
        }
        cfmakeraw(&settings)
        settings.c_cflag |= tcflag_t(CLOCAL) | tcflag_t(CREAD)
        cfsetispeed(&settings, speed_t(B115200))
        cfsetospeed(&settings, speed_t(B115200))
        guard tcsetattr(slaveFD, TCSANOW, &settings) == 0 else {
            let error = fail("tcsetattr", path)
            Glibc.close(slaveFD)
            throw error
        }
        let flags = fcntl(fd, F_GETFL)
        _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
        master = fd
        slave = slaveFD
        devicePath = path
    }

    deinit {
        Glibc.close(master)
        Glibc.close(slave)
    }

    /// Ends the stream: reads and writes throw ``PN532SerialLineError/closed`` from now on (a read
    /// waiting in poll(2) within 200 ms). The descriptors close with the object.
    public func close() {
        lock.lock()
        closed = true
        lock.unlock()
    }

    private var isClosed: Bool {
        lock.lock()
        defer { lock.unlock() }
        return closed
    }

    /// Writes every byte to the master (the host reads them from the device node), waiting at
    /// most 1 s for room.
    public func write(_ bytes: [UInt8]) throws(PN532SerialLineError) {
        var offset = 0
        let deadline = PN532SerialClock.monotonic.deadline(after: .seconds(1))
        while offset < bytes.count {
            guard !isClosed else { throw .closed }
            let written = bytes[offset...].withUnsafeBytes { Glibc.write(master, $0.baseAddress, $0.count) }
            if written > 0 {
                offset += written
                continue
            }
            if written < 0 && errno != EAGAIN && errno != EINTR {
                throw .system(operation: "write", path: devicePath + " (master)", errno: errno)
            }
            guard !deadline.hasPassed else { throw .system(operation: "write", path: devicePath + " (master)", errno: ETIMEDOUT) }
            var request = pollfd(fd: master, events: Int16(POLLOUT), revents: 0)
            _ = poll(&request, 1, max(1, min(200, deadline.remainingMilliseconds)))
        }
    }

    /// What the host wrote to the device node, at most `maximumCount` bytes.
    public func read(maximumCount: Int, until deadline: PN532SerialDeadline?) throws(PN532SerialLineError) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: max(1, maximumCount))
        while true {
            guard !isClosed else { throw .closed }
            let count = buffer.withUnsafeMutableBytes { Glibc.read(master, $0.baseAddress, $0.count) }
            if count > 0 { return Array(buffer.prefix(count)) }
            if count < 0 && errno != EAGAIN && errno != EINTR && errno != EIO {
                throw .system(operation: "read", path: devicePath + " (master)", errno: errno)
            }
            if let deadline, deadline.hasPassed { return [] }
            var request = pollfd(fd: master, events: Int16(POLLIN), revents: 0)
            let wait = min(200, deadline.map { max(1, $0.remainingMilliseconds) } ?? 200)
            _ = poll(&request, 1, wait)
        }
    }

    /// Drops what the host wrote and the chip has not read.
    public func discardInput() { tcflush(master, TCIFLUSH) }
}

/// glibc's pseudo-terminal calls, looked up at run time: its headers declare them only under
/// _XOPEN_SOURCE, which the Glibc module Swift imports does not define.
private struct PseudoTerminalCalls: Sendable {
    let openpt: @convention(c) (Int32) -> Int32
    let grantpt: @convention(c) (Int32) -> Int32
    let unlockpt: @convention(c) (Int32) -> Int32
    let ptsname: @convention(c) (Int32, UnsafeMutablePointer<CChar>, Int) -> Int32

    static let shared: PseudoTerminalCalls? = {
        // RTLD_DEFAULT: the process's global symbols, glibc's among them.
        guard let openpt = dlsym(nil, "posix_openpt"), let grant = dlsym(nil, "grantpt"),
              let unlock = dlsym(nil, "unlockpt"), let name = dlsym(nil, "ptsname_r") else { return nil }
        return PseudoTerminalCalls(
            openpt: unsafeBitCast(openpt, to: (@convention(c) (Int32) -> Int32).self),
            grantpt: unsafeBitCast(grant, to: (@convention(c) (Int32) -> Int32).self),
            unlockpt: unsafeBitCast(unlock, to: (@convention(c) (Int32) -> Int32).self),
            ptsname: unsafeBitCast(name, to: (@convention(c) (Int32, UnsafeMutablePointer<CChar>, Int) -> Int32).self))
    }()
}
