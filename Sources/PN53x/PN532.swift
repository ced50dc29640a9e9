import ISO7816

/// What `PN532.receiveCommand()` got in target mode.
public enum PN532TargetReceiveResult: Sendable, Hashable {
    /// A C-APDU from the initiator (chained parts already joined).
    case command([UInt8])
    /// Status 25: the PN532 has not been activated as a target yet.
    case notActivated
    /// Status 29 or 2B: the initiator released the target or went away; call `initAsTarget` again.
    case released(PN532ErrorCode)
}

/// What `PN532.sendResponse(_:)` achieved in target mode.
public enum PN532TargetSendResult: Sendable, Hashable {
    /// Status 00: the chip took the R-APDU.
    case delivered
    /// Status 25: the PN532 has not been activated as a target.
    case notActivated
    /// Status 29 or 2B: the initiator released the target; call `initAsTarget` again.
    case released(PN532ErrorCode)
}

/// A PN532 behind an ACR122U: typed commands, echo checking and resynchronisation, and the
/// initiator and target operations built on them (PN532 UM0701-02; docs/acr122-pn532.md §4, §5, §5b).
///
/// Every reply must start `D5 cmd+1`. When it does not, the reply answers an earlier command that
/// timed out on the host side (a late reply). `send(_:)` then resynchronises, as libnfc does: it sends
/// GetFirmwareVersion and discards answers until one carries the right echo (`D5 03`), at most
/// `resynchronizationAttempts` times, and then throws `PN532Error.desynchronized` for the original
/// command. It does not resend that command: it may not be idempotent (TgSetData, WriteRegister), so
/// the caller decides.
///
/// Not thread-safe; every call blocks until the reader answers (see `ACR122Link`).
public final class PN532 {
    /// The link that carries each frame to the chip (Direct Transmit, or an escape command).
    public let link: ACR122Link
    /// The most GetFirmwareVersion commands sent to resynchronise after a late reply.
    public var resynchronizationAttempts = 4
    /// The most frames joined by MI chaining in one exchange.
    public var chainingLimit = 16

    /// A PN532 reached through `link`; nothing is sent until the first command.
    public init(link: ACR122Link) { self.link = link }

    /// Sends one command and parses its answer.
    ///
    /// - Throws: `PN532Error.desynchronized` after resynchronising (see the type's discussion),
    ///   `.resynchronizationFailed`, `.chipError` for a non-zero status, `.malformedResponse`,
    ///   `.invalidRequest`; `ACR122Error` from the link (63 00 when the chip did not answer).
    public func send<Command: PN532Command>(_ command: Command) throws -> Command.Response {
        let reply = try link.transmitPN532(try command.hostFrame())
        guard let frame = try? PN532ChipFrame(parsing: reply), frame.answers(Command.code) else {
            try resynchronize()
            throw PN532Error.desynchronized(sent: Command.code, received: reply)
        }
        return try command.response(parsing: frame.data)
    }

    /// Sends GetFirmwareVersion until its answer carries the right echo, discarding other replies.
    /// - Throws: `PN532Error.resynchronizationFailed` after `resynchronizationAttempts` tries.
    public func resynchronize() throws {
        let probe = try GetFirmwareVersion().hostFrame()
        for _ in 0..<max(1, resynchronizationAttempts) {
            let reply = try link.transmitPN532(probe)
            if let frame = try? PN532ChipFrame(parsing: reply), frame.answers(.getFirmwareVersion) { return }
        }
        throw PN532Error.resynchronizationFailed(attempts: max(1, resynchronizationAttempts))
    }

    // MARK: Initiator

    /// Polls once for an ISO/IEC 14443-A target at 106 kbit/s.
    ///
    /// Sends RFConfiguration item 05 (`00 01 retries`) so that InListPassiveTarget returns after a
    /// bounded number of activation attempts, then InListPassiveTarget with MaxTg 1.
    /// - Parameter passiveActivationRetries: 0 … FE; FF (infinite) is refused because it could block
    ///   until a card appears.
    /// - Returns: the target, or nil when none answered.
    public func pollISO14443A(passiveActivationRetries: UInt8 = 0x02) throws -> ISO14443ATarget? {
        guard passiveActivationRetries != 0xFF else {
            throw PN532Error.invalidRequest(
                command: .rfConfiguration, reason: "passive activation retries FF means infinite: give 00 … FE")
        }
        try send(RFConfiguration(.maxRetries(atr: 0x00, psl: 0x01, passiveActivation: passiveActivationRetries)))
        return try send(InListPassiveTarget(maxTargets: 1)).first
    }

    /// Exchanges one APDU with an ISO/IEC 14443-4 target through InDataExchange.
    ///
    /// A command longer than one frame (251 bytes after Tg) goes out in parts with Tg's MI bit set on
    /// all but the last; an answer whose status has MI is completed by sending InDataExchange again
    /// with no data and appending. Both are bounded by `chainingLimit`.
    /// - Throws: `PN532Error.chipError` (e.g. 01 timeout, 27 not acceptable), `.chainingLimitExceeded`,
    ///   and `send(_:)`'s errors.
    public func exchangeAPDU(_ apdu: [UInt8], target: UInt8 = 1) throws -> [UInt8] {
        let partSize = PN532HostFrame.maximumParameterLength - 1
        var parts: [[UInt8]] = stride(from: 0, to: apdu.count, by: partSize).map {
            Array(apdu[$0..<min($0 + partSize, apdu.count)])
        }
        if parts.isEmpty { parts = [[]] }
        guard parts.count <= chainingLimit else {
            throw PN532Error.chainingLimitExceeded(command: .inDataExchange, limit: chainingLimit)
        }
        var response = PN532DataResponse(moreInformation: false, data: [])
        for (index, part) in parts.enumerated() {
            let isLast = index == parts.count - 1
            response = try send(InDataExchange(target: target, moreInformation: !isLast, data: part))
            if !isLast, !response.data.isEmpty {
                throw PN532Error.malformedResponse(
                    PN53xParseError(.trailingBytes, at: 3, "the target answered before the chained command was complete: \(HexBytes.format(response.data))"),
                    command: .inDataExchange)
            }
        }
        var answer = response.data
        var frames = 1
        while response.moreInformation {
            guard frames < chainingLimit else {
                throw PN532Error.chainingLimitExceeded(command: .inDataExchange, limit: chainingLimit)
            }
            frames += 1
            response = try send(InDataExchange(target: target, data: []))
            answer += response.data
        }
        return answer
    }

    /// Releases a target (InRelease); 0 releases all.
    public func release(target: UInt8 = 0) throws {
        try send(InRelease(target: target))
    }

    // MARK: Target

    /// Prepares the reader for card emulation (docs/acr122-pn532.md §5 steps 2–3): PICC operating parameter 00
    /// (no automatic polling), RF field off, SetParameters 30 (automatic RATS, ISO 14443-4 PICC).
    /// Call `restoreReaderDefaults()` afterwards.
    public func prepareForCardEmulation() throws {
        try link.setPICCOperatingParameter([])
        try send(RFConfiguration(.rfField(on: false)))
        try send(SetParameters([.automaticRATS, .iso14443_4PICC]))
    }

    // `restoreReaderDefaults(_:onStep:)` (ACR122Restore.swift) puts the reader back: by default the
    // PICC operating parameter FF alone, `.all` for the whole sequence.

    /// Initialises the PN532 as an ISO/IEC 14443-4 PICC (TgInitAsTarget, modes PassiveOnly | PICCOnly)
    /// and blocks until an initiator activates it or the ACR122U's MCU timeout expires.
    ///
    /// The chip answers RATS itself with ATS `05 75 33 92 03` + `historicalBytes` (docs/acr122-pn532.md §4).
    /// - Parameters:
    ///   - uid: 08 + 3 bytes.
    ///   - atqa: default 0x0004 (sent `04 00`).
    ///   - sak: default 20 (ISO 14443-4).
    ///   - historicalBytes: at most 48.
    /// - Returns: the activation mode and the initiator's first command (typically RATS `E0 80`).
    /// - Throws: `ACR122Error.operationFailed` when the MCU timeout expires; `send(_:)`'s errors.
    public func initAsTarget(
        uid: EmulatedUID, atqa: ATQA = ATQA(rawValue: 0x0004), sak: UInt8 = 0x20, historicalBytes: [UInt8] = []
    ) throws -> PN532TargetActivation {
        try send(Self.cardEmulationTarget(uid: uid, atqa: atqa, sak: sak, historicalBytes: historicalBytes))
    }

    /// The TgInitAsTarget of card emulation, whatever carries the frame (an ACR122U's Direct
    /// Transmit or a serial line): passive ISO/IEC 14443-4 PICC only.
    package static func cardEmulationTarget(
        uid: EmulatedUID, atqa: ATQA = ATQA(rawValue: 0x0004), sak: UInt8 = 0x20, historicalBytes: [UInt8] = []
    ) -> TgInitAsTarget {
        TgInitAsTarget(modes: [.passiveOnly, .piccOnly], atqa: atqa, uid: uid, sak: sak, historicalBytes: historicalBytes)
    }

    /// Receives the initiator's next C-APDU (TgGetData, joining MI-chained parts, bounded).
    /// - Returns: the command, `.notActivated` (status 25) or `.released` (29 / 2B).
    /// - Throws: other chip errors as `PN532Error.chipError`, and `send(_:)`'s errors.
    public func receiveCommand() throws -> PN532TargetReceiveResult {
        try Self.receiveCommand(chainingLimit: chainingLimit) { try send(TgGetData()) }
    }

    /// Sends the R-APDU for the last C-APDU (TgSetData), at most 252 bytes.
    /// - Returns: `.delivered` (status 00), `.notActivated` (25) or `.released` (29 / 2B).
    /// - Throws: `ACR122Error.frameTooLong` above 252 bytes; other chip errors as `PN532Error.chipError`.
    public func sendResponse(_ responseAPDU: [UInt8]) throws -> PN532TargetSendResult {
        try Self.sendResponse { _ = try send(TgSetData(responseAPDU)) }
    }

    /// ``receiveCommand()`` over any way to send TgGetData (`getData`): the MI-chained parts
    /// joined, at most `chainingLimit` frames; status 25 and 29/2B as the typed results.
    package static func receiveCommand(chainingLimit: Int, _ getData: () throws -> PN532DataResponse) throws -> PN532TargetReceiveResult {
        var command: [UInt8] = []
        for _ in 0..<max(1, chainingLimit) {
            let response: PN532DataResponse
            do {
                response = try getData()
            } catch let error as PN532Error {
                if let result = targetState(error) { return result.receive }
                throw error
            }
            command += response.data
            if !response.moreInformation { return .command(command) }
        }
        throw PN532Error.chainingLimitExceeded(command: .tgGetData, limit: max(1, chainingLimit))
    }

    /// ``sendResponse(_:)`` over any way to send TgSetData (`setData`).
    package static func sendResponse(_ setData: () throws -> Void) throws -> PN532TargetSendResult {
        do {
            try setData()
            return .delivered
        } catch let error as PN532Error {
            if let result = targetState(error) { return result.send }
            throw error
        }
    }

    /// Maps status 25 and 29/2B to the typed target results.
    private static func targetState(
        _ error: PN532Error
    ) -> (receive: PN532TargetReceiveResult, send: PN532TargetSendResult)? {
        guard let code = error.chipErrorCode else { return nil }
        if code == .invalidState { return (.notActivated, .notActivated) }
        if code.isReleased { return (.released(code), .released(code)) }
        return nil
    }
}
