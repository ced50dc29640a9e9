import ISO7816

/// A typed PN532 command: the parameters after `D4 cmd` and the parser for the data after
/// `D5 cmd+1` (PN532 UM0701-02 §7).
///
/// Commands whose answer carries a status byte throw `PN532Error.chipError` when its error code is
/// not 00: SW 90 00 around the frame says nothing about the chip's success (docs/cases.md P08).
public protocol PN532Command: Sendable {
    /// What the command's answer decodes to (`Void` for commands that answer only a status).
    associatedtype Response: Sendable
    /// The command code, the byte after D4.
    static var code: PN532CommandCode { get }
    /// The bytes after `D4 cmd`.
    /// - Throws: `PN532Error.invalidRequest` when a field is out of range.
    func parameters() throws(PN532Error) -> [UInt8]
    /// Parses the data after `D5 cmd+1`.
    /// - Throws: `PN532Error.chipError` for a non-zero status, `.malformedResponse` for a wrong layout.
    func response(parsing data: [UInt8]) throws(PN532Error) -> Response
}

extension PN532Command {
    /// `D4 cmd params`.
    /// - Throws: `PN532Error.invalidRequest`, or `ACR122Error.frameTooLong` above 254 bytes.
    public func hostFrame() throws -> PN532HostFrame {
        try PN532HostFrame(command: Self.code, parameters: parameters())
    }

    /// Parses a whole chip frame `D5 cmd+1 data` (status word already removed).
    /// - Throws: `PN532Error.desynchronized` when the frame does not answer this command (docs/cases.md P08),
    ///   then the errors of `response(parsing:)`.
    public func response(parsingFrame bytes: [UInt8]) throws(PN532Error) -> Response {
        try response(parsing: PN532ChipFrame.data(answering: Self.code, in: bytes))
    }
}

/// Parsing helpers shared by the commands.
enum PN532Parse {
    /// The status byte at the start of `data`, thrown as `chipError` when its code is not 00.
    static func status(
        _ data: [UInt8], _ command: PN532CommandCode
    ) throws(PN532Error) -> (status: PN532Status, rest: [UInt8]) {
        guard let first = data.first else {
            throw .malformedResponse(PN53xParseError(.truncated, at: 2, "the status byte is missing"), command: command)
        }
        let status = PN532Status(rawValue: first)
        guard status.isSuccess else { throw .chipError(status, command: command) }
        return (status, Array(data.dropFirst()))
    }

    /// Checks that `data` is empty (commands answered by `D5 cmd+1` alone).
    static func empty(_ data: [UInt8], _ command: PN532CommandCode) throws(PN532Error) {
        guard data.isEmpty else {
            throw .malformedResponse(
                PN53xParseError(.trailingBytes, at: 2, "expected no data after the response code, got \(HexBytes.format(data))"),
                command: command)
        }
    }

    /// Runs a byte-reader parse and reports failures as `malformedResponse`, offsets counted from D5.
    static func reading<T>(
        _ data: [UInt8], _ command: PN532CommandCode, _ body: (inout PN53xByteReader) throws(PN53xParseError) -> T
    ) throws(PN532Error) -> T {
        var reader = PN53xByteReader(data)
        do {
            let value = try body(&reader)
            try reader.expectEnd("\(command.name) answer")
            return value
        } catch {
            throw .malformedResponse(PN53xParseError(error.code, at: error.offset + 2, error.reason), command: command)
        }
    }
}

/// A status-checked answer that may announce more data: `| Status | data |`, as InDataExchange and
/// TgGetData return it.
public struct PN532DataResponse: Sendable, Hashable {
    /// The status byte's MI bit: the chip has more data; send the command again to get it.
    public var moreInformation: Bool
    /// The data after the status byte.
    public var data: [UInt8]

    /// A response with the status byte's MI bit and the data after it.
    public init(moreInformation: Bool, data: [UInt8]) {
        self.moreInformation = moreInformation
        self.data = data
    }
}

/// The PN532's own version: `D5 03 IC Ver Rev Support` (UM0701-02 §7.2.2), e.g. `32 01 06 07`.
public struct PN532FirmwareVersion: Sendable, Hashable, CustomStringConvertible {
    /// IC: 0x32 for the PN532.
    public var ic: UInt8
    /// The firmware version (Ver; 01 on the PN532 v1.6 of an ACR122U).
    public var version: UInt8
    /// The firmware revision (Rev; 06 on the PN532 v1.6 of an ACR122U).
    public var revision: UInt8
    /// Support bits: 01 ISO 14443 Type A, 02 Type B, 04 ISO 18092.
    public var support: UInt8

    /// The answer `D5 03 IC Ver Rev Support` (UM0701-02 §7.2.2), e.g. `32 01 06 07`.
    public init(ic: UInt8, version: UInt8, revision: UInt8, support: UInt8) {
        self.ic = ic
        self.version = version
        self.revision = revision
        self.support = support
    }

    /// The 4 data bytes.
    public func serialized() -> [UInt8] { [ic, version, revision, support] }

    public var description: String { "PN5\(String(ic, radix: 16)) v\(version).\(revision)" }
}

/// One target the chip reports in GetGeneralStatus: `| Tg | BrRx | BrTx | Type |`.
public struct PN532GeneralStatusTarget: Sendable, Hashable {
    /// Tg, the target's logical number (1 or 2).
    public var logicalNumber: UInt8
    /// Bit rate in reception: 00 106, 01 212, 02 424 kbit/s.
    public var receiveBitRate: UInt8
    /// Bit rate in transmission: 00 106, 01 212, 02 424 kbit/s.
    public var transmitBitRate: UInt8
    /// Modulation type, e.g. 00 MIFARE / ISO 14443-A.
    public var modulationType: UInt8
}

/// GetGeneralStatus's answer: `| Err | Field | NbTg | [Tg BrRx BrTx Type]… | SAM |` (UM0701-02 §7.2.3).
public struct PN532GeneralStatus: Sendable, Hashable {
    /// The last error the chip met.
    public var lastError: PN532ErrorCode
    /// True when an external RF field is present.
    public var externalFieldPresent: Bool
    /// The targets the chip handles now, at most two (NbTg entries).
    public var targets: [PN532GeneralStatusTarget]
    /// The SAM status byte.
    public var samStatus: UInt8
}

/// A target found by InListPassiveTarget at 106 kbit/s Type A:
/// `| Tg | SENS_RES (2, MSB first) | SEL_RES | NFCIDLength | NFCID1 | [ATS incl. TL] |`
/// (UM0701-02 §7.3.5).
public struct ISO14443ATarget: Sendable, Hashable {
    /// Tg, the logical number to use in InDataExchange.
    public var logicalNumber: UInt8
    /// SENS_RES, as the chip reported it (most significant byte first in InListPassiveTarget).
    public var atqa: ATQA
    /// SEL_RES (SAK); bit 0x20 set means ISO/IEC 14443-4 compliant.
    public var sak: UInt8
    /// NFCID1, the UID: 4, 7 or 10 bytes.
    public var uid: [UInt8]
    /// The ATS including its TL byte, present when SAK has bit 0x20.
    public var ats: [UInt8]?

    /// A target as InListPassiveTarget reports it (UM0701-02 §7.3.5).
    public init(logicalNumber: UInt8, atqa: ATQA, sak: UInt8, uid: [UInt8], ats: [UInt8]? = nil) {
        self.logicalNumber = logicalNumber
        self.atqa = atqa
        self.sak = sak
        self.uid = uid
        self.ats = ats
    }

    /// True when SAK says the card speaks ISO/IEC 14443-4.
    public var supportsISO14443_4: Bool { sak & 0x20 != 0 }

    /// The target's bytes in the InListPassiveTarget answer.
    public func serialized() -> [UInt8] {
        [logicalNumber] + atqa.mostSignificantFirst + [sak, UInt8(uid.count)] + uid + (ats ?? [])
    }

    static func read(from reader: inout PN53xByteReader) throws(PN53xParseError) -> ISO14443ATarget {
        let tg = try reader.readByte("Tg")
        let atqa = try reader.readBytes(2, "SENS_RES")
        let sak = try reader.readByte("SEL_RES")
        let uidLengthOffset = reader.offset
        let uidLength = try reader.readByte("NFCIDLength")
        guard [4, 7, 10].contains(uidLength) else {
            throw PN53xParseError(.invalidValue, at: uidLengthOffset, "NFCID1 length must be 4, 7 or 10, got \(uidLength)")
        }
        let uid = try reader.readBytes(Int(uidLength), "NFCID1")
        var ats: [UInt8]?
        if sak & 0x20 != 0 {
            let tlOffset = reader.offset
            let tl = try reader.readByte("ATS length byte TL")
            guard tl >= 1 else {
                throw PN53xParseError(.invalidValue, at: tlOffset, "ATS TL counts itself, so it is at least 1; got 00")
            }
            ats = [tl] + (try reader.readBytes(Int(tl) - 1, "ATS"))
        }
        return ISO14443ATarget(
            logicalNumber: tg, atqa: ATQA(mostSignificantFirst: (atqa[0], atqa[1])), sak: sak, uid: uid, ats: ats)
    }
}

/// The 4-byte UID a PN532 target presents: 08 followed by the three NFCID1t bytes.
///
/// The PN532 emulates single-size UIDs only and fixes the first byte at 08, the "random UID" value
/// (UM0701-02 §7.3.14; ISO/IEC 14443-3 §6.4.4).
public struct EmulatedUID: Sendable, Hashable, CustomStringConvertible {
    /// The three bytes TgInitAsTarget sends as NFCID1t.
    public let nfcid1t: [UInt8]

    /// - Throws: `PN53xParseError` `.lengthMismatch` unless `uid` is 4 bytes, `.invalidValue` unless
    ///   its first byte is 08.
    public init(_ uid: [UInt8]) throws(PN53xParseError) {
        guard uid.count == 4 else {
            throw PN53xParseError(.lengthMismatch, at: 0, "a PN532 target's UID is 4 bytes (08 + 3), got \(uid.count): \(HexBytes.format(uid))")
        }
        guard uid[0] == 0x08 else {
            throw PN53xParseError(.invalidValue, at: 0, "a PN532 target's UID must start with 08 (the chip fixes it), got \(HexBytes.format(uid))")
        }
        nfcid1t = Array(uid.dropFirst())
    }

    /// From the three bytes after 08.
    public init(nfcid1t: (UInt8, UInt8, UInt8)) {
        self.nfcid1t = [nfcid1t.0, nfcid1t.1, nfcid1t.2]
    }

    /// The UID as a reader sees it: `08 u1 u2 u3`.
    public var bytes: [UInt8] { [0x08] + nfcid1t }

    public var description: String { HexBytes.format(bytes) }
}

/// The mode byte TgInitAsTarget reports on activation (UM0701-02 §7.3.14):
/// bits 6–4 bit rate (0 106, 1 212, 2 424 kbit/s), bit 3 ISO 14443-4 PICC, bit 2 DEP,
/// bits 1–0 framing (00 Type A, 01 active, 10 FeliCa).
public struct PN532ActivatedMode: RawRepresentable, Sendable, Hashable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// The bit rate in kbit/s: 106, 212 or 424; nil for a reserved value.
    public var bitRateKbps: Int? {
        switch (rawValue >> 4) & 0x07 {
        case 0: 106
        case 1: 212
        case 2: 424
        default: nil
        }
    }
    /// Bit 3: the initiator activated the target as an ISO/IEC 14443-4 PICC (it sent RATS).
    public var isISO14443_4PICC: Bool { rawValue & 0x08 != 0 }
    /// Bit 2: the initiator activated the target in DEP (ISO/IEC 18092) mode.
    public var isDEP: Bool { rawValue & 0x04 != 0 }
    /// Bits 1–0: 0 Type A, 1 active mode, 2 FeliCa.
    public var framing: UInt8 { rawValue & 0x03 }
}

/// TgInitAsTarget's answer: `| Mode | InitiatorCommand… |`, e.g. `08 E0 80` (PICC at 106 kbit/s,
/// then the reader's RATS).
public struct PN532TargetActivation: Sendable, Hashable {
    /// The Mode byte: bit rate, framing, and PICC or DEP activation (docs/acr122-pn532.md §4).
    public var mode: PN532ActivatedMode
    /// The first command the initiator sent, e.g. RATS `E0 80`.
    public var initiatorCommand: [UInt8]

    /// An activation with its Mode byte and the initiator's first command (e.g. RATS `E0 80`).
    public init(mode: PN532ActivatedMode, initiatorCommand: [UInt8]) {
        self.mode = mode
        self.initiatorCommand = initiatorCommand
    }

    /// The answer's bytes after `D5 8D`: `| Mode | InitiatorCommand… |`.
    public func serialized() -> [UInt8] { [mode.rawValue] + initiatorCommand }
}

/// TgGetTargetStatus's answer: `| Status | BRit |` (UM0701-02 §7.3.21). Kept raw: the meaning of
/// each value is not in this project's reference (U).
public struct PN532TargetStatus: Sendable, Hashable {
    /// The Status byte, as the chip sent it.
    public var state: UInt8
    /// Initiator and target bit rates.
    public var bitRates: UInt8
}
