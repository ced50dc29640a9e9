import ISO7816

/// A failure of a PN532 serial exchange (docs/pn532-uart.md §2, §4).
public enum PN532SerialError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No ACK within `bound` after the command was sent (and resent after NACKs).
    case noAcknowledgement(command: PN532CommandCode, bound: Duration)
    /// The chip kept answering NACK: `attempts` sends, none acknowledged.
    case rejected(command: PN532CommandCode, attempts: Int)
    /// The ACK came, but no response within `bound`; the link aborted the command with ACK.
    case noResponse(command: PN532CommandCode, bound: Duration)
    /// The response stayed corrupted after `attempts` NACKs asking for it again.
    case corruptedResponse(command: PN532CommandCode, PN532UARTFrameError, attempts: Int)
    /// The chip answered the error frame (an application-level error: e.g. a syntax error in
    /// the command's parameters, UM0701-02 §6.2).
    case applicationError(command: PN532CommandCode)
    /// A frame the exchange cannot take at this point (e.g. a response before the ACK, a frame
    /// with the wrong TFI).
    case unexpectedFrame(command: PN532CommandCode, String)
    /// The response answers another command (D5 with another code).
    case wrongResponseCode(command: PN532CommandCode, received: UInt8)
    /// A command with more than 264 code and parameter bytes.
    case commandTooLong(command: PN532CommandCode, length: Int)
    /// ``PN532SerialLink/receiveResponse(timeout:)`` with no command pending.
    case noCommandPending
    /// The line failed.
    case line(PN532SerialLineError)

    public var description: String {
        switch self {
        case .noAcknowledgement(let command, let bound):
            return "the PN532 did not acknowledge \(command.name) within \(bound): check the wiring (TX to RX), the board's interface switches (HSU), the baud rate (115200) and that it was woken up (55 preamble)"
        case .rejected(let command, let attempts):
            return "the PN532 answered NACK to \(command.name) \(attempts) times: the line corrupts the host's frames; check the baud rate and the cable"
        case .noResponse(let command, let bound):
            return "the PN532 acknowledged \(command.name) but did not answer within \(bound); the command was aborted (ACK sent)"
        case .corruptedResponse(let command, let error, let attempts):
            return "the PN532's answer to \(command.name) stayed corrupted after \(attempts) NACKs: \(error)"
        case .applicationError(let command):
            return "the PN532 answered \(command.name) with the error frame (application-level error: a command or parameter it does not accept)"
        case .unexpectedFrame(let command, let what):
            return "unexpected frame during \(command.name): \(what)"
        case .wrongResponseCode(let command, let received):
            return "the answer to PN532 \(command.name) should carry response code \(HexBytes.format(command.responseCode)) but carries \(HexBytes.format(received)): a late answer to another command"
        case .commandTooLong(let command, let length):
            return "PN532 \(command.name) has \(length) code and parameter bytes; a frame carries at most 264"
        case .noCommandPending:
            return "no PN532 command is pending: send one first"
        case .line(let error):
            return "PN532 serial line: \(error)"
        }
    }
}

/// The host side of the PN532 high-speed UART protocol (UM0701-02 §6.2; libnfc's `pn532_uart`
/// driver, nfcpy's `pn532` module; docs/pn532-uart.md §2–§4).
///
/// One exchange: the command frame `00 00 FF LEN LCS D4 cmd params DCS 00` goes out; the chip
/// answers ACK `00 00 FF 00 FF 00` (within ``ackTimeout``), then the response `… D5 cmd+1 data …`
/// (within the timeout of the command). On the way:
/// - a NACK from the chip makes the link send the command again (at most ``maximumAttempts`` sends);
/// - a response with a wrong length or data checksum is asked for again with NACK
///   (at most ``maximumAttempts`` − 1 NACKs);
/// - no response in time: the link sends ACK, which aborts the command on the chip, and throws;
/// - ``abortCommand()`` aborts a command whose response is still pending.
///
/// Not thread-safe, and every call blocks the calling thread while it waits on the line: run it on
/// a thread of its own or a `BlockingExecutor` (PCSCCore), never on Swift's shared concurrency pool.
public final class PN532SerialLink {
    /// The byte line (a tty, or the host end of an in-memory line).
    public let stream: any PN532ByteStream
    /// The clock every bound is measured on.
    public let clock: PN532SerialClock
    /// How long the chip may take to acknowledge a command. nfcpy waits 100 ms (the chip should
    /// answer within 15 ms); libnfc the command's own timeout (docs/pn532-uart.md §4).
    public var ackTimeout: Duration
    /// The most sends of one command (NACKs from the chip) and, minus one, the most NACKs sent for
    /// one corrupted response.
    public var maximumAttempts: Int
    /// The wake-up bytes: 55 55 then 14 × 00, as libnfc's pn532_uart driver sends them.
    public static let wakeUpPreamble: [UInt8] = [0x55, 0x55] + [UInt8](repeating: 0x00, count: 14)

    private var parser = PN532UARTFrameParser(receiving: PN532UARTFrame.chipTFI)
    private var pending: PN532CommandCode?

    /// - Parameters:
    ///   - stream: the line.
    ///   - clock: the time base; `.monotonic` for a tty, the test's virtual time for an in-memory line.
    ///   - ackTimeout: default 100 ms (nfcpy's bound).
    ///   - maximumAttempts: default 3.
    public init(stream: any PN532ByteStream, clock: PN532SerialClock = .monotonic,
                ackTimeout: Duration = .milliseconds(100), maximumAttempts: Int = 3) {
        self.stream = stream
        self.clock = clock
        self.ackTimeout = ackTimeout
        self.maximumAttempts = max(1, maximumAttempts)
    }

    /// The command sent and acknowledged whose response has not been read yet.
    public var pendingCommand: PN532CommandCode? { pending }

    /// Wakes the chip from power-down or low-battery mode: the 55 preamble, then SAMConfiguration
    /// normal mode (`D4 14 01`, timeout 00, no IRQ), which takes a PN532 C106 out of low-battery
    /// mode (libnfc pn532_uart; AN10609 C106 appendix; docs/pn532-uart.md §3).
    /// - Throws: ``PN532SerialError``.
    public func wakeUp(timeout: Duration = .seconds(1)) throws(PN532SerialError) {
        do { try stream.write(Self.wakeUpPreamble) } catch { throw .line(error) }
        let answer = try exchange(.samConfiguration, [0x01, 0x00, 0x00], timeout: timeout)
        guard answer.isEmpty else {
            throw .unexpectedFrame(command: .samConfiguration, "SAMConfiguration answered \(HexBytes.format(answer)), expected no data")
        }
    }

    /// Sends a typed command and parses its answer.
    /// - Throws: ``PN532SerialError``, or `PN532Error` from the command's parser.
    public func send<Command: PN532Command>(_ command: Command, timeout: Duration = .seconds(1)) throws -> Command.Response {
        let data = try exchange(Command.code, try command.parameters(), timeout: timeout)
        return try command.response(parsing: data)
    }

    /// Sends `D4 code parameters`, waits for the ACK and the response, and returns the data after
    /// `D5 code+1`.
    /// - Parameters:
    ///   - code: the command code, e.g. ``PN532CommandCode/getFirmwareVersion``.
    ///   - parameters: the bytes after the command code.
    ///   - timeout: how long the chip may take to answer once it acknowledged.
    /// - Throws: ``PN532SerialError``.
    public func exchange(
        _ code: PN532CommandCode, _ parameters: [UInt8] = [], timeout: Duration = .seconds(1)
    ) throws(PN532SerialError) -> [UInt8] {
        try sendCommand(code, parameters)
        return try receiveResponse(timeout: timeout)
    }

    /// Sends the command and returns once the chip acknowledged it; the response is then read with
    /// ``receiveResponse(timeout:)`` or the command aborted with ``abortCommand()``.
    /// - Throws: ``PN532SerialError/noAcknowledgement(command:bound:)`` when no ACK came within
    ///   ``ackTimeout`` after the last send, `.rejected` after ``maximumAttempts`` NACKs,
    ///   `.commandTooLong`, `.unexpectedFrame`, `.line`.
    public func sendCommand(_ code: PN532CommandCode, _ parameters: [UInt8] = []) throws(PN532SerialError) {
        let bytes: [UInt8]
        do {
            bytes = try PN532UARTFrame.command(code, parameters).serialized()
        } catch {
            throw .commandTooLong(command: code, length: parameters.count + 1)
        }
        pending = nil
        stream.discardInput()
        parser.reset()
        for _ in 0..<maximumAttempts {
            do { try stream.write(bytes) } catch { throw .line(error) }
            let deadline = clock.deadline(after: ackTimeout)
            while true {
                let frame: PN532UARTFrame?
                do {
                    frame = try nextFrame(until: deadline)
                } catch .line(let error) {
                    throw .line(error)
                } catch {
                    continue  // noise in place of the ACK: keep waiting for it until the bound
                }
                guard let frame else { throw .noAcknowledgement(command: code, bound: ackTimeout) }
                switch frame {
                case .ack:
                    pending = code
                    return
                case .nack:
                    break
                case .applicationError:
                    throw .applicationError(command: code)
                case .information(let tfi, let data):
                    throw .unexpectedFrame(command: code, "a frame \(HexBytes.format(tfi)) \(HexBytes.format(data)) before the ACK")
                }
                break  // NACK: send again
            }
        }
        throw .rejected(command: code, attempts: maximumAttempts)
    }

    /// Reads the response to the pending command.
    /// - Throws: ``PN532SerialError/noResponse(command:bound:)`` (after sending ACK to abort it),
    ///   `.corruptedResponse`, `.applicationError`, `.wrongResponseCode`, `.unexpectedFrame`,
    ///   `.noCommandPending`, `.line`.
    public func receiveResponse(timeout: Duration) throws(PN532SerialError) -> [UInt8] {
        guard let code = pending else { throw .noCommandPending }
        defer { pending = nil }
        let deadline = clock.deadline(after: timeout)
        var nacks = 0
        while true {
            let frame: PN532UARTFrame?
            do {
                frame = try nextFrame(until: deadline)
            } catch {
                guard case .frame(let error) = error else {
                    if case .line(let lineError) = error { throw .line(lineError) }
                    continue
                }
                if case .wrongTFI = error { throw .unexpectedFrame(command: code, error.description) }
                guard nacks < maximumAttempts - 1 else {
                    throw .corruptedResponse(command: code, error, attempts: nacks)
                }
                nacks += 1
                parser.reset()
                do { try stream.write(PN532UARTFrame.nackBytes) } catch { throw .line(error) }
                continue
            }
            guard let frame else {
                try? stream.write(PN532UARTFrame.ackBytes)
                throw .noResponse(command: code, bound: timeout)
            }
            switch frame {
            case .ack, .nack:
                continue  // a late or repeated ACK: not the response
            case .applicationError:
                throw .applicationError(command: code)
            case .information(_, let data):
                guard let first = data.first else {
                    throw .unexpectedFrame(command: code, "a D5 frame without a response code")
                }
                guard first == code.responseCode else { throw .wrongResponseCode(command: code, received: first) }
                return Array(data.dropFirst())
            }
        }
    }

    /// Aborts the pending command: sends ACK, which makes the chip drop the command (UM0701-02
    /// §6.2; libnfc's pn532_uart abort, nfcpy's send_ack). Does nothing without a pending command.
    /// - Throws: ``PN532SerialError/line(_:)``.
    public func abortCommand() throws(PN532SerialError) {
        guard pending != nil else { return }
        pending = nil
        do { try stream.write(PN532UARTFrame.ackBytes) } catch { throw .line(error) }
    }

    private enum ReadFailure: Error {
        case line(PN532SerialLineError)
        case frame(PN532UARTFrameError)
    }

    /// The next frame before `deadline`, nil when it passed.
    private func nextFrame(until deadline: PN532SerialDeadline) throws(ReadFailure) -> PN532UARTFrame? {
        while true {
            do {
                if let frame = try parser.next() { return frame }
            } catch {
                throw .frame(error)
            }
            let bytes: [UInt8]
            do {
                bytes = try stream.read(maximumCount: 512, until: deadline)
            } catch {
                throw .line(error)
            }
            if bytes.isEmpty { return nil }
            parser.append(bytes)
        }
    }
}

/// A ``PN532SerialLink`` for async code: every call runs on the link's own `BlockingExecutor`
/// thread (PCSCCore), one at a time and in order, so a tty's blocking reads never occupy Swift's
/// shared concurrency pool; on a virtual clock that thread takes part in the clock's time while it
/// runs a call.
public final class PN532SerialConnection: @unchecked Sendable {
    // Touched only by jobs on `executor`, which runs them one at a time.
    private let link: PN532SerialLink
    private let executor: BlockingExecutor

    /// - Parameters:
    ///   - link: the link; use it only through this connection from now on.
    ///   - name: the executor thread's name (at most 15 bytes kept).
    public init(_ link: PN532SerialLink, name: String = "pn532-serial") {
        self.link = link
        executor = BlockingExecutor(name: name)
    }

    deinit { executor.shutdown() }

    /// ``PN532SerialLink/wakeUp(timeout:)`` on the link's thread.
    public func wakeUp(timeout: Duration = .seconds(1)) async throws {
        try await run { link in try link.wakeUp(timeout: timeout) }
    }

    /// ``PN532SerialLink/exchange(_:_:timeout:)`` on the link's thread.
    /// - Throws: ``PN532SerialError``, or `ExecutorStoppedError` after the connection ended.
    public func exchange(
        _ code: PN532CommandCode, _ parameters: [UInt8] = [], timeout: Duration = .seconds(1)
    ) async throws -> [UInt8] {
        try await run { link in try link.exchange(code, parameters, timeout: timeout) }
    }

    /// ``PN532SerialLink/send(_:timeout:)`` on the link's thread.
    public func send<Command: PN532Command>(_ command: Command, timeout: Duration = .seconds(1)) async throws -> Command.Response {
        try await run { link in try link.send(command, timeout: timeout) }
    }

    private func run<T: Sendable>(_ body: @escaping @Sendable (PN532SerialLink) throws -> T) async throws -> T {
        try await executor.run { [self] in
            try link.clock.participate { () throws -> T in try body(link) }
        }
    }
}
