import ISO7816

/// A PN532 command code, the byte after D4 (PN532 UM0701-02 §7). Open: unknown codes still fit.
///
/// The PN532 answers a command with D5 and the command code plus one.
public struct PN532CommandCode: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// 02 GetFirmwareVersion (UM0701-02 §7.2.2).
    public static let getFirmwareVersion = PN532CommandCode(rawValue: 0x02)
    /// 04 GetGeneralStatus (UM0701-02 §7.2.3).
    public static let getGeneralStatus = PN532CommandCode(rawValue: 0x04)
    /// 06 ReadRegister (UM0701-02 §7.2.4).
    public static let readRegister = PN532CommandCode(rawValue: 0x06)
    /// 08 WriteRegister (UM0701-02 §7.2.5).
    public static let writeRegister = PN532CommandCode(rawValue: 0x08)
    /// 12 SetParameters (UM0701-02 §7.2.9).
    public static let setParameters = PN532CommandCode(rawValue: 0x12)
    /// 14 SAMConfiguration (UM0701-02 §7.2.10).
    public static let samConfiguration = PN532CommandCode(rawValue: 0x14)
    /// 32 RFConfiguration (UM0701-02 §7.3.1).
    public static let rfConfiguration = PN532CommandCode(rawValue: 0x32)
    /// 40 InDataExchange (UM0701-02 §7.3.8).
    public static let inDataExchange = PN532CommandCode(rawValue: 0x40)
    /// 42 InCommunicateThru (UM0701-02 §7.3.9).
    public static let inCommunicateThru = PN532CommandCode(rawValue: 0x42)
    /// 44 InDeselect (UM0701-02 §7.3.10).
    public static let inDeselect = PN532CommandCode(rawValue: 0x44)
    /// 4A InListPassiveTarget (UM0701-02 §7.3.5).
    public static let inListPassiveTarget = PN532CommandCode(rawValue: 0x4A)
    /// 52 InRelease (UM0701-02 §7.3.11).
    public static let inRelease = PN532CommandCode(rawValue: 0x52)
    /// 54 InSelect (UM0701-02 §7.3.12).
    public static let inSelect = PN532CommandCode(rawValue: 0x54)
    /// 86 TgGetData (UM0701-02 §7.3.16).
    public static let tgGetData = PN532CommandCode(rawValue: 0x86)
    /// 88 TgGetInitiatorCommand (UM0701-02 §7.3.19).
    public static let tgGetInitiatorCommand = PN532CommandCode(rawValue: 0x88)
    /// 8A TgGetTargetStatus (UM0701-02 §7.3.21).
    public static let tgGetTargetStatus = PN532CommandCode(rawValue: 0x8A)
    /// 8C TgInitAsTarget (UM0701-02 §7.3.14).
    public static let tgInitAsTarget = PN532CommandCode(rawValue: 0x8C)
    /// 8E TgSetData (UM0701-02 §7.3.17).
    public static let tgSetData = PN532CommandCode(rawValue: 0x8E)
    /// 90 TgResponseToInitiator (UM0701-02 §7.3.20).
    public static let tgResponseToInitiator = PN532CommandCode(rawValue: 0x90)
    /// 94 TgSetMetaData (UM0701-02 §7.3.18).
    public static let tgSetMetaData = PN532CommandCode(rawValue: 0x94)

    /// The response code the PN532 echoes: command + 1.
    public var responseCode: UInt8 { rawValue &+ 1 }

    private static let names: [UInt8: String] = [
        0x02: "GetFirmwareVersion", 0x04: "GetGeneralStatus", 0x06: "ReadRegister", 0x08: "WriteRegister",
        0x12: "SetParameters", 0x14: "SAMConfiguration", 0x32: "RFConfiguration", 0x40: "InDataExchange",
        0x42: "InCommunicateThru", 0x44: "InDeselect", 0x4A: "InListPassiveTarget", 0x52: "InRelease",
        0x54: "InSelect", 0x86: "TgGetData", 0x88: "TgGetInitiatorCommand", 0x8A: "TgGetTargetStatus",
        0x8C: "TgInitAsTarget", 0x8E: "TgSetData", 0x90: "TgResponseToInitiator", 0x94: "TgSetMetaData",
    ]

    /// The UM0701 name, e.g. "InDataExchange", or "command 0xNN" for an unknown code.
    public var name: String { Self.names[rawValue] ?? "command \(HexBytes.format(rawValue))" }

    public var description: String { "\(name) (\(HexBytes.format(rawValue)))" }
}

/// A host-to-PN532 frame as the ACR122U carries it: `| D4 | cmd | params |` (PN532 UM0701-02 §6.2;
/// the TFI byte D4 marks host to chip).
///
/// At most 254 bytes in all through the ACR122U (docs/acr122-pn532.md §4), so 252 parameter bytes.
public struct PN532HostFrame: Sendable, Hashable, CustomStringConvertible {
    /// The most bytes `D4 cmd params` may have through an ACR122U.
    public static let maximumLength = 254
    /// The most parameter bytes after `D4 cmd`.
    public static let maximumParameterLength = maximumLength - 2

    /// The command code, the byte after D4.
    public let command: PN532CommandCode
    /// The parameter bytes, at most ``maximumParameterLength``.
    public let parameters: [UInt8]

    /// - Throws: `ACR122Error.frameTooLong` when `D4 cmd params` would exceed 254 bytes.
    public init(command: PN532CommandCode, parameters: [UInt8] = []) throws(ACR122Error) {
        guard parameters.count <= Self.maximumParameterLength else {
            throw .frameTooLong(length: parameters.count + 2)
        }
        self.command = command
        self.parameters = parameters
    }

    /// - Throws: `PN53xParseError` `.truncated` without a command byte, `.unexpectedByte` when the
    ///   first byte is not D4, `.invalidValue` above 254 bytes.
    public init(parsing bytes: [UInt8]) throws(PN53xParseError) {
        var reader = PN53xByteReader(bytes)
        try reader.expectByte(0xD4, "TFI (host to PN532)")
        let code = try reader.readByte("PN532 command code")
        guard bytes.count <= Self.maximumLength else {
            throw PN53xParseError(
                .invalidValue, at: Self.maximumLength,
                "a PN532 frame through the ACR122U is at most \(Self.maximumLength) bytes, got \(bytes.count)")
        }
        command = PN532CommandCode(rawValue: code)
        parameters = reader.readRest()
    }

    /// The frame's bytes: `| D4 | cmd | params |`.
    public func serialized() -> [UInt8] { [0xD4, command.rawValue] + parameters }

    public var description: String { HexBytes.format(serialized()) }
}

/// A PN532-to-host frame: `| D5 | cmd + 1 | data |` (PN532 UM0701-02 §6.2).
public struct PN532ChipFrame: Sendable, Hashable, CustomStringConvertible {
    /// The response code, the answered command's code plus one.
    public let responseCode: UInt8
    /// The bytes after the response code.
    public let data: [UInt8]

    /// The chip's answer to `command`: response code `command + 1`, then `data`.
    public init(answering command: PN532CommandCode, data: [UInt8] = []) {
        self.responseCode = command.responseCode
        self.data = data
    }

    /// - Throws: `PN53xParseError` `.truncated` for fewer than 2 bytes, `.unexpectedByte` when the
    ///   first byte is not D5.
    public init(parsing bytes: [UInt8]) throws(PN53xParseError) {
        var reader = PN53xByteReader(bytes)
        try reader.expectByte(0xD5, "TFI (PN532 to host)")
        responseCode = try reader.readByte("PN532 response code")
        data = reader.readRest()
    }

    /// Whether this frame answers `command` (D5 and command + 1).
    public func answers(_ command: PN532CommandCode) -> Bool { responseCode == command.responseCode }

    /// The data after `D5 cmd+1`, after checking that the frame answers `command`.
    /// - Throws: `PN532Error.desynchronized` when the frame answers another command (docs/cases.md P08).
    public static func data(answering command: PN532CommandCode, in bytes: [UInt8]) throws(PN532Error) -> [UInt8] {
        guard let frame = try? PN532ChipFrame(parsing: bytes), frame.answers(command) else {
            throw .desynchronized(sent: command, received: bytes)
        }
        return frame.data
    }

    /// The frame's bytes: `| D5 | cmd + 1 | data |`.
    public func serialized() -> [UInt8] { [0xD5, responseCode] + data }

    public var description: String { HexBytes.format(serialized()) }
}

/// A PN532 error code: the low 6 bits of a status byte (PN532 UM0701-02 §7.1). Open.
public struct PN532ErrorCode: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// 00: no error.
    public static let none = PN532ErrorCode(rawValue: 0x00)
    /// 01: the target did not answer in time (UM0701-02 §7.1; docs/acr122-pn532.md §4).
    public static let timeout = PN532ErrorCode(rawValue: 0x01)
    /// 02: a CRC error was detected.
    public static let crc = PN532ErrorCode(rawValue: 0x02)
    /// 03: a parity error was detected.
    public static let parity = PN532ErrorCode(rawValue: 0x03)
    /// 04: an erroneous bit count was detected.
    public static let bitCount = PN532ErrorCode(rawValue: 0x04)
    /// 05: a framing error (MIFARE).
    public static let framing = PN532ErrorCode(rawValue: 0x05)
    /// 06: a bit collision during anticollision.
    public static let collision = PN532ErrorCode(rawValue: 0x06)
    /// 07: the communication buffer is too small.
    public static let bufferTooSmall = PN532ErrorCode(rawValue: 0x07)
    /// 09: the RF buffer overflowed.
    public static let rfBufferOverflow = PN532ErrorCode(rawValue: 0x09)
    /// 0A: the counterpart did not switch its RF field on in time (active mode).
    public static let activeRFTimeout = PN532ErrorCode(rawValue: 0x0A)
    /// 0B: an RF protocol error.
    public static let rfProtocol = PN532ErrorCode(rawValue: 0x0B)
    /// 0D: the antenna drivers overheated.
    public static let overheat = PN532ErrorCode(rawValue: 0x0D)
    /// 0E: an internal buffer overflowed.
    public static let internalBufferOverflow = PN532ErrorCode(rawValue: 0x0E)
    /// 10: an invalid parameter (range, format).
    public static let invalidParameter = PN532ErrorCode(rawValue: 0x10)
    /// 12: the initiator sent a DEP command the chip does not support (target mode).
    public static let unsupportedDEPCommand = PN532ErrorCode(rawValue: 0x12)
    /// 13: a received frame's format is wrong (DEP, ISO/IEC 14443-4).
    public static let badFrameFormat = PN532ErrorCode(rawValue: 0x13)
    /// 14: MIFARE authentication failed.
    public static let mifareAuthentication = PN532ErrorCode(rawValue: 0x14)
    /// 23: the UID's check byte (BCC) is wrong.
    public static let bcc = PN532ErrorCode(rawValue: 0x23)
    /// 25: the command is not valid in the chip's state (e.g. TgGetData before activation).
    public static let invalidState = PN532ErrorCode(rawValue: 0x25)
    /// 26: not allowed in the current configuration.
    public static let notAllowed = PN532ErrorCode(rawValue: 0x26)
    /// 27: not acceptable now (wrong role, unknown Tg).
    public static let notAcceptable = PN532ErrorCode(rawValue: 0x27)
    /// 29: the initiator released the target (target mode); libnfc, and this project, read 2B the same.
    public static let targetReleased = PN532ErrorCode(rawValue: 0x29)
    /// 2A: the Type B card's ID does not match.
    public static let typeBIDMismatch = PN532ErrorCode(rawValue: 0x2A)
    /// 2B: the card has disappeared (documented as a Type B initiator code).
    public static let cardDisappeared = PN532ErrorCode(rawValue: 0x2B)
    /// 2C: the NFCID3 of the initiator and target do not match (DEP).
    public static let nfcid3Mismatch = PN532ErrorCode(rawValue: 0x2C)
    /// 2D: an over-current event was detected.
    public static let overCurrent = PN532ErrorCode(rawValue: 0x2D)
    /// 2E: the NAD is missing in a DEP frame.
    public static let nadMissing = PN532ErrorCode(rawValue: 0x2E)

    private static let meanings: [UInt8: String] = [
        0x00: "success",
        0x01: "timeout: the target did not answer",
        0x02: "CRC error",
        0x03: "parity error",
        0x04: "wrong bit count during anticollision",
        0x05: "framing error",
        0x06: "bit collision",
        0x07: "communication buffer too small",
        0x09: "RF buffer overflow",
        0x0A: "the RF field was not switched on in time (active mode)",
        0x0B: "RF protocol error",
        0x0D: "overheating: the antenna drivers were switched off",
        0x0E: "internal buffer overflow",
        0x10: "invalid parameter",
        0x12: "DEP command not supported",
        0x13: "bad data format",
        0x14: "MIFARE authentication error",
        0x23: "wrong UID check byte (BCC)",
        0x25: "invalid device state for this command (e.g. TgGetData before the target was activated)",
        0x26: "operation not allowed in this configuration",
        0x27: "command not acceptable now (wrong role or unknown target)",
        0x29: "the initiator released the target",
        0x2A: "Type B card ID mismatch",
        0x2B: "the card disappeared",
        0x2C: "NFCID3 mismatch",
        0x2D: "over-current",
        0x2E: "NAD missing",
    ]

    /// What the code means (UM0701-02 §7.1), or "unknown error" for a code not in the table.
    public var meaning: String { Self.meanings[rawValue] ?? "unknown error" }

    /// True for 29 (target released by the initiator) and 2B (card disappeared).
    ///
    /// UM0701 lists 2B under Type B initiator errors, but libnfc maps both 29 and 2B to "target
    /// released" (`NFC_ETGRELEASED`); we follow libnfc, because in target mode both mean the reader
    /// is gone and the target must be initialised again (docs/acr122-pn532.md §4).
    public var isReleased: Bool { self == .targetReleased || self == .cardDisappeared }

    public var description: String { "\(HexBytes.format(rawValue)) (\(meaning))" }
}

/// A PN532 status byte: `| NAD (bit 7) | MI (bit 6) | error code (bits 5–0) |` (UM0701-02 §7.1).
public struct PN532Status: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Bits 5–0.
    public var errorCode: PN532ErrorCode { PN532ErrorCode(rawValue: rawValue & 0x3F) }
    /// Bit 6: more information follows; send the command again to get it.
    public var moreInformation: Bool { rawValue & 0x40 != 0 }
    /// Bit 7: a NAD byte is present.
    public var nadPresent: Bool { rawValue & 0x80 != 0 }
    /// True when the error code is 00.
    public var isSuccess: Bool { errorCode == .none }

    public var description: String {
        var text = errorCode.description
        if moreInformation { text += ", MI" }
        if nadPresent { text += ", NAD" }
        return text
    }
}

/// A failure at the PN532 level (PN532 UM0701-02; docs/acr122-pn532.md §4, §5b).
public enum PN532Error: Error, Sendable, Equatable, CustomStringConvertible {
    /// The chip reported a non-zero error code in the status byte of `command`'s answer.
    case chipError(PN532Status, command: PN532CommandCode)
    /// The reply does not start D5 with `sent`'s code + 1: it answers another command, typically a
    /// late reply to an earlier one (docs/cases.md P08; docs/acr122-pn532.md §5b).
    case desynchronized(sent: PN532CommandCode, received: [UInt8])
    /// GetFirmwareVersion did not bring the replies back in step within `attempts` tries.
    case resynchronizationFailed(attempts: Int)
    /// The answer to `command` does not have the layout UM0701 gives.
    case malformedResponse(PN53xParseError, command: PN532CommandCode)
    /// A request field is out of range for `command`.
    case invalidRequest(command: PN532CommandCode, reason: String)
    /// The chip kept setting MI beyond `limit` frames.
    case chainingLimitExceeded(command: PN532CommandCode, limit: Int)

    /// The error code, for `chipError`; nil otherwise.
    public var chipErrorCode: PN532ErrorCode? {
        if case .chipError(let status, _) = self { return status.errorCode }
        return nil
    }

    public var description: String {
        switch self {
        case .chipError(let status, let command):
            return "PN532 \(command.name) failed with status \(status)"
        case .desynchronized(let sent, let received):
            return "the answer to PN532 \(sent.name) should start D5 \(HexBytes.format(sent.responseCode)) but was \(received.isEmpty ? "empty" : HexBytes.format(received)): a late reply to another command"
        case .resynchronizationFailed(let attempts):
            return "the PN532 replies did not come back in step after \(attempts) GetFirmwareVersion commands: unplug and replug the reader"
        case .malformedResponse(let error, let command):
            return "malformed PN532 \(command.name) answer: \(error)"
        case .invalidRequest(let command, let reason):
            return "invalid PN532 \(command.name) request: \(reason)"
        case .chainingLimitExceeded(let command, let limit):
            return "PN532 \(command.name) still had more data (MI) after \(limit) frames"
        }
    }
}
