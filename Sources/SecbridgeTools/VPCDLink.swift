// vsmartcard's vpcd protocol, card side (what vicc speaks): docs/vpcd-protocol.md.
import SecbridgeCLI

#if canImport(Glibc)
import Glibc
#endif

/// One message from vpcd to the card (docs/vpcd-protocol.md §2).
///
/// On the wire every message is `| length (2 bytes, big-endian) | payload (length bytes) |`. A
/// payload of exactly one byte is a control message (00 power off, 01 power on, 02 reset, 04 ATR
/// request); any other non-empty payload is a C-APDU as the PC/SC client gave it to SCardTransmit.
package enum VPCDMessage: Sendable, Equatable {
    /// `00`: vpcd powers the card down (IFDHPowerICC IFD_POWER_DOWN). No answer.
    case powerOff
    /// `01`: vpcd powers the card up (IFD_POWER_UP); it asks for the ATR next. No answer.
    case powerOn
    /// `02`: vpcd resets the card (IFD_RESET); it asks for the ATR next. No answer.
    case reset
    /// `04`: vpcd asks for the ATR (at power-up, reset and every presence poll). Answer: the ATR.
    case atrRequest
    /// A one-byte payload that is none of the above; vicc ignores it and sends nothing.
    case unknownControl(UInt8)
    /// A C-APDU `| CLA | INS | P1 | P2 | [Lc data] | [Le] |`. Answer: the R-APDU `| data | SW1 | SW2 |`.
    case commandAPDU([UInt8])

    /// The message `payload` carries; nil for an empty payload (vpcd never sends one).
    package init?(payload: [UInt8]) {
        switch payload.count {
        case 0: return nil
        case 1:
            switch payload[0] {
            case 0x00: self = .powerOff
            case 0x01: self = .powerOn
            case 0x02: self = .reset
            case 0x04: self = .atrRequest
            default: self = .unknownControl(payload[0])
            }
        default: self = .commandAPDU(payload)
        }
    }

    /// `payload` with its 2-byte big-endian length in front, in one buffer (one send, so Nagle's
    /// algorithm does not hold the payload back behind the length).
    /// - Throws: `CLIError.failure` for an empty payload (vpcd drops a card that answers with
    ///   nothing) or one longer than 65535 bytes (the length field's limit).
    package static func frame(_ payload: [UInt8]) throws(CLIError) -> [UInt8] {
        guard !payload.isEmpty, payload.count <= 0xFFFF else {
            throw .failure("a vpcd message holds 1 to 65535 bytes, not \(payload.count)")
        }
        return [UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)] + payload
    }
}

/// Why a ``VPCDLink`` stopped reading.
package enum VPCDLinkEnd: Error, Equatable, Sendable {
    /// The stop descriptor became readable (SIGINT, SIGTERM).
    case stopped
    /// vpcd closed the connection, or it broke (`reason`).
    case closed(String)
}

/// A TCP connection to vpcd, read and written in whole messages.
///
/// Every wait is a `poll` on the connection and on a stop descriptor (the read end of a pipe a
/// signal handler writes to), so a signal ends any wait at once; there is no other timeout, since
/// vpcd may leave a card idle for as long as no program uses it.
package final class VPCDLink {
    package let descriptor: Int32
    private let stop: Int32

    /// Connects to vpcd at `host` (a name or an address, resolved by getaddrinfo) `port`.
    /// - Throws: `CLIError.failure` naming the host, the port and the system's reason.
    package init(host: String, port: UInt16, stop: Int32) throws(CLIError) {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0 else {
            throw .failure("cannot resolve vpcd's host '\(host)': \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(list) }
        var lastError: Int32 = ECONNREFUSED
        var cursor = list
        while let entry = cursor {
            cursor = entry.pointee.ai_next
            let fd = socket(entry.pointee.ai_family, entry.pointee.ai_socktype | Int32(SOCK_CLOEXEC.rawValue), entry.pointee.ai_protocol)
            guard fd >= 0 else { lastError = errno; continue }
            if connect(fd, entry.pointee.ai_addr, entry.pointee.ai_addrlen) == 0 {
                var one: Int32 = 1
                // Each answer is one small write; send it at once.
                setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
                descriptor = fd
                self.stop = stop
                return
            }
            lastError = errno
            close(fd)
        }
        throw .failure("cannot connect to vpcd at \(host):\(port): \(String(cString: strerror(lastError)))")
    }

    deinit { close(descriptor) }

    /// Waits at most `bound` for vpcd's first bytes on a connection just made; true when they came.
    ///
    /// vpcd accepts one card per slot (docs/vpcd-protocol.md §1): a second connection to a port
    /// whose slot has its card is completed by the kernel into vpcd's listen backlog, but vpcd never
    /// accepts it and never sends on it. The vpcd that does accept asks for the ATR at pcscd's
    /// next presence poll (about every 400 ms, §2), so silence for `bound` means the slot is held
    /// by another program, or what listens there is not vpcd. Reads nothing: the bytes stay for
    /// ``receive()``.
    /// - Throws: ``VPCDLinkEnd/stopped`` when the stop descriptor becomes readable,
    ///   ``VPCDLinkEnd/closed(_:)`` when the connection ends or breaks first.
    package func awaitFirstMessage(within bound: Duration) throws(VPCDLinkEnd) -> Bool {
        let deadline = ContinuousClock.now + bound
        while true {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return false }
            let (seconds, attoseconds) = left.components
            let milliseconds = Int32(clamping: seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000)
            var fds = [pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0), pollfd(fd: stop, events: Int16(POLLIN), revents: 0)]
            let ready = poll(&fds, 2, milliseconds)
            if ready < 0 {
                if errno == EINTR { continue }
                throw .closed("poll: \(String(cString: strerror(errno)))")
            }
            if fds[1].revents != 0 { throw .stopped }
            guard fds[0].revents != 0 else { continue }
            // Readable: data, or an end of stream (a zero-byte peek) or an error.
            var byte: UInt8 = 0
            let n = recv(descriptor, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
            if n > 0 { return true }
            if n == 0 { throw .closed("vpcd closed the connection") }
            if errno == EINTR || errno == EAGAIN { continue }
            throw .closed(String(cString: strerror(errno)))
        }
    }

    /// The next message's payload.
    /// - Throws: ``VPCDLinkEnd``.
    package func receive() throws(VPCDLinkEnd) -> [UInt8] {
        let header = try read(count: 2)
        let length = Int(header[0]) << 8 | Int(header[1])
        guard length > 0 else { throw .closed("vpcd sent an empty message") }
        return try read(count: length)
    }

    /// Sends `payload` as one message.
    /// - Throws: ``VPCDLinkEnd/closed(_:)`` when the connection is gone.
    package func send(_ payload: [UInt8]) throws(VPCDLinkEnd) {
        let bytes: [UInt8]
        do { bytes = try VPCDMessage.frame(payload) } catch { throw .closed(error.message) }
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n < 0 {
                if errno == EINTR { continue }
                throw .closed(String(cString: strerror(errno)))
            }
            sent += n
        }
    }

    /// Asks Linux to acknowledge what arrives next at once (TCP_QUICKACK; the kernel clears it
    /// again by itself, so it is re-armed before every read). Stock vpcd writes a message's length
    /// and its payload in two sends without TCP_NODELAY: Nagle's algorithm holds the payload until
    /// the length is acknowledged, and a delayed ACK from this side costs about 40 ms per APDU
    /// (docs/vpcd-protocol.md §3). Does nothing where the option does not exist.
    private func acknowledgeAtOnce() {
        #if os(Linux)
        var one: Int32 = 1
        setsockopt(descriptor, Int32(IPPROTO_TCP), Int32(TCP_QUICKACK), &one, socklen_t(MemoryLayout<Int32>.size))
        #endif
    }

    private func read(count: Int) throws(VPCDLinkEnd) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: count)
        var filled = 0
        while filled < count {
            acknowledgeAtOnce()
            var fds = [pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0), pollfd(fd: stop, events: Int16(POLLIN), revents: 0)]
            if poll(&fds, 2, -1) < 0 {
                if errno == EINTR { continue }
                throw .closed("poll: \(String(cString: strerror(errno)))")
            }
            if fds[1].revents != 0 { throw .stopped }
            guard fds[0].revents != 0 else { continue }
            let n = buffer[filled...].withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if n == 0 { throw .closed(filled == 0 && count == 2 ? "vpcd closed the connection" : "vpcd closed the connection inside a message") }
            if n < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                throw .closed(String(cString: strerror(errno)))
            }
            filled += n
        }
        return buffer
    }
}
