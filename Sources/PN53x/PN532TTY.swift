#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A serial port (`/dev/ttyUSB0`, `/dev/ttyS0`, a pty) set up for the PN532's high-speed UART:
/// raw mode, 115 200 baud, 8 data bits, no parity, 1 stop bit, no flow control, modem lines
/// ignored (UM0701-02 §6.2; libnfc's uart_open; docs/pn532-uart.md §4).
///
/// Reads wait with poll(2) up to the deadline's real time left: they block the calling thread, so
/// call them from a thread of their own or a `BlockingExecutor` (PCSCCore), never from Swift's
/// shared concurrency pool. Use it with ``PN532SerialClock/monotonic``.
public final class PN532TTY: PN532ByteStream, @unchecked Sendable {
    /// The device path.
    public let path: String
    private let descriptor: Int32

    /// Opens and configures `path`.
    /// - Parameters:
    ///   - path: the serial device node, e.g. `/dev/ttyUSB0`.
    ///   - baudRate: one of 9600 … 921 600; default 115 200 (the PN532's speed after reset).
    /// - Throws: ``PN532SerialLineError/system(operation:path:errno:)``: ENOENT (no such device),
    ///   EACCES (the dialout group), ENOTTY (not a serial port), EINVAL (an unsupported baud rate).
    public init(path: String, baudRate: Int = 115_200) throws(PN532SerialLineError) {
        self.path = path
        let fd = open(path, O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { throw .system(operation: "open", path: path, errno: errno) }
        descriptor = fd
        var settings = termios()
        guard tcgetattr(fd, &settings) == 0 else {
            let code = errno
            close(fd)
            throw .system(operation: "tcgetattr", path: path, errno: code)
        }
        guard let speed = Self.speed(baudRate) else {
            close(fd)
            throw .system(operation: "set \(baudRate) baud on", path: path, errno: EINVAL)
        }
        cfmakeraw(&settings)
        settings.c_cflag &= ~(tcflag_t(PARENB) | tcflag_t(CSTOPB) | tcflag_t(CSIZE) | tcflag_t(CRTSCTS))
        settings.c_cflag |= tcflag_t(CS8) | tcflag_t(CLOCAL) | tcflag_t(CREAD)
        settings.c_iflag &= ~(tcflag_t(IXON) | tcflag_t(IXOFF) | tcflag_t(IXANY))
        // VMIN 0, VTIME 0: read returns what is there; poll(2) does the waiting.
        withUnsafeMutableBytes(of: &settings.c_cc) { cc in
            cc[Int(VMIN)] = 0
            cc[Int(VTIME)] = 0
        }
        cfsetispeed(&settings, speed)
        cfsetospeed(&settings, speed)
        guard tcsetattr(fd, TCSANOW, &settings) == 0 else {
            let code = errno
            close(fd)
            throw .system(operation: "tcsetattr", path: path, errno: code)
        }
        tcflush(fd, TCIOFLUSH)
    }

    deinit { close(descriptor) }

    static func speed(_ baudRate: Int) -> speed_t? {
        switch baudRate {
        case 9600: speed_t(B9600)
        case 19_200: speed_t(B19200)
        case 38_400: speed_t(B38400)
        case 57_600: speed_t(B57600)
        case 115_200: speed_t(B115200)
        case 230_400: speed_t(B230400)
        case 460_800: speed_t(B460800)
        case 921_600: speed_t(B921600)
        default: nil
        }
    }

    /// Writes every byte, waiting at most 1 s for the port to take them (a stalled adapter fails
    /// instead of hanging).
    public func write(_ bytes: [UInt8]) throws(PN532SerialLineError) {
        var offset = 0
        let deadline = PN532SerialClock.monotonic.deadline(after: .seconds(1))
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            if written > 0 {
                offset += written
                continue
            }
            if written < 0 && errno != EAGAIN && errno != EINTR {
                throw .system(operation: "write", path: path, errno: errno)
            }
            guard !deadline.hasPassed else { throw .system(operation: "write", path: path, errno: ETIMEDOUT) }
            var request = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
            _ = poll(&request, 1, max(1, deadline.remainingMilliseconds))
        }
    }

    public func read(maximumCount: Int, until deadline: PN532SerialDeadline?) throws(PN532SerialLineError) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: max(1, maximumCount))
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count > 0 { return Array(buffer.prefix(count)) }
            if count < 0 && errno != EAGAIN && errno != EINTR {
                throw .system(operation: "read", path: path, errno: errno)
            }
            if count == 0 && isPseudoTerminalHangUp() { throw .closed }
            if let deadline, deadline.hasPassed { return [] }
            var request = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            // Without a deadline: poll in 1 s steps (each bounded), until bytes come or the port fails.
            let wait = deadline.map { max(1, $0.remainingMilliseconds) } ?? 1000
            let ready = poll(&request, 1, wait)
            if ready > 0 && request.revents & Int16(POLLHUP | POLLERR | POLLNVAL) != 0
                && request.revents & Int16(POLLIN) == 0 {
                throw .closed
            }
        }
    }

    private func isPseudoTerminalHangUp() -> Bool {
        var request = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        return poll(&request, 1, 0) > 0 && request.revents & Int16(POLLHUP) != 0 && request.revents & Int16(POLLIN) == 0
    }

    public func discardInput() { tcflush(descriptor, TCIFLUSH) }
}
