/// One rule that finds secret bytes in a command.
///
/// A rule sees the whole command (an APDU, a reader pseudo-APDU or the bytes of an SCardControl
/// call) and returns the byte ranges to mask. Headers stay readable: the rules below mask data
/// fields only, so `00 20 00 81 08 12 34 56 FF FF FF FF FF` becomes
/// `00 20 00 81 08 [REDACTED 8]`.
public struct RedactionRule: Sendable {
    /// A short name, e.g. `verify`.
    public var id: String
    /// What the rule masks, for help text.
    public var summary: String
    private let locate: @Sendable ([UInt8]) -> [Range<Int>]

    /// A rule from a function returning the ranges to mask (out-of-bounds parts are ignored).
    public init(id: String, summary: String, locate: @escaping @Sendable ([UInt8]) -> [Range<Int>]) {
        self.id = id
        self.summary = summary
        self.locate = locate
    }

    /// The ranges of `command` this rule masks, clamped to the command.
    public func ranges(in command: [UInt8]) -> [Range<Int>] {
        locate(command).compactMap { r in
            let lower = max(0, r.lowerBound), upper = min(command.count, r.upperBound)
            return lower < upper ? lower..<upper : nil
        }
    }

    /// Masks the command data field of card APDUs whose INS is in `instructions`, whatever the
    /// CLA (interindustry, proprietary, with secure messaging or chaining bits) except `FF`, the
    /// class of reader pseudo-APDUs.
    ///
    /// `| CLA | INS | P1 | P2 | Lc | data | Le |` — the data field is found from Lc, short
    /// (1 byte) or extended (`00` + 2 bytes) (ISO/IEC 7816-4 §5.1). When the lengths do not add up,
    /// everything after the fifth byte is masked: a malformed secret is still a secret.
    public static func commandData(ofInstructions instructions: Set<UInt8>, id: String, summary: String) -> RedactionRule {
        RedactionRule(id: id, summary: summary) { c in
            guard c.count > 4, c[0] != 0xFF, instructions.contains(c[1]) else { return [] }
            return APDUData.range(in: c).map { [$0] } ?? []
        }
    }

    /// VERIFY (INS 20, and 21 with BER-TLV data): the reference data (PIN) (ISO/IEC 7816-4 §11.5, basic security handling).
    public static let verify = commandData(ofInstructions: [0x20, 0x21], id: "verify",
                                           summary: "VERIFY (INS 20/21): the PIN or reference data")
    /// CHANGE REFERENCE DATA (INS 24, 25): old and new PIN (ISO/IEC 7816-4 §11.5).
    public static let changeReferenceData = commandData(ofInstructions: [0x24, 0x25], id: "change-reference-data",
                                                        summary: "CHANGE REFERENCE DATA (INS 24/25): old and new PIN")
    /// RESET RETRY COUNTER (INS 2C, 2D): PUK and new PIN (ISO/IEC 7816-4 §11.5).
    public static let resetRetryCounter = commandData(ofInstructions: [0x2C, 0x2D], id: "reset-retry-counter",
                                                      summary: "RESET RETRY COUNTER (INS 2C/2D): PUK and new PIN")
    /// PUT KEY (INS D8): the key set (GlobalPlatform Card Specification §11.8).
    public static let putKey = commandData(ofInstructions: [0xD8], id: "put-key",
                                           summary: "PUT KEY (INS D8): key values")
    /// EXTERNAL / MUTUAL AUTHENTICATE (INS 82): the host cryptogram and MAC (ISO/IEC 7816-4
    /// §11.5; GlobalPlatform SCP02/SCP03 EXTERNAL AUTHENTICATE).
    public static let externalAuthenticate = commandData(ofInstructions: [0x82], id: "external-authenticate",
                                                         summary: "EXTERNAL/MUTUAL AUTHENTICATE (INS 82): cryptograms")

    /// ACR122U LOAD KEY `| FF | 82 | 00 | slot | 06 | key (6) |`: the MIFARE key
    /// (ACR122U API v2.04, Load Authentication Keys). Key structure and slot stay readable.
    public static let acr122LoadKey = RedactionRule(
        id: "acr122-load-key", summary: "ACR122U LOAD KEY (FF 82): the MIFARE key"
    ) { c in
        guard c.count > 4, c[0] == 0xFF, c[1] == 0x82 else { return [] }
        return APDUData.range(in: c).map { [$0] } ?? []
    }

    /// MIFARE Classic authentication inside PN532 InDataExchange through the ACR122U direct
    /// transmit: `| FF 00 00 00 | Lc | D4 40 | Tg | 60 or 61 | block | key (6) | UID (4) |`; the six
    /// key bytes (offsets 10–15) are masked (PN532 UM0701-02 §7.3.8 InDataExchange; ACR122U API v2.04, Direct Transmit).
    public static let pn532MifareAuthentication = RedactionRule(
        id: "pn532-mifare-auth", summary: "PN532 InDataExchange MIFARE authentication (60/61): the key"
    ) { c in
        guard c.count > 10, c[0] == 0xFF, c[1] == 0x00, c[2] == 0x00, c[3] == 0x00,
              c[5] == 0xD4, c[6] == 0x40, c[8] == 0x60 || c[8] == 0x61
        else { return [] }
        return [10..<16]
    }
}

/// Masks secrets in commands before they are written, keeping their length.
///
/// The default policy masks: VERIFY, CHANGE REFERENCE DATA, RESET RETRY COUNTER, PUT KEY,
/// EXTERNAL/MUTUAL AUTHENTICATE data, the ACR122U LOAD KEY key and the MIFARE key in PN532
/// InDataExchange authentication. It applies to every command line: `>`, `ctl … >`, `tgt <` (a
/// terminal's C-APDU to the emulated target) and `ini >`. Answers are not touched.
public struct Redactor: Sendable {
    /// The rules, all applied; their ranges are merged.
    public var rules: [RedactionRule]

    public init(rules: [RedactionRule]) {
        self.rules = rules
    }

    /// The default policy (see the type's summary).
    public static let `default` = Redactor(rules: [
        .verify, .changeReferenceData, .resetRetryCounter, .putKey, .externalAuthenticate,
        .acr122LoadKey, .pn532MifareAuthentication,
    ])

    /// No redaction: transcripts keep secrets. Use only for test cards.
    public static let disabled = Redactor(rules: [])

    /// The command with secret bytes replaced by `[REDACTED n]` marks (one mark per run).
    public func redact(_ command: [UInt8]) -> TranscriptBytes {
        var masked = [Bool](repeating: false, count: command.count)
        var any = false
        for rule in rules {
            for range in rule.ranges(in: command) {
                for i in range { masked[i] = true }
                any = true
            }
        }
        guard any else { return TranscriptBytes(command) }
        var items: [TranscriptBytes.Item] = []
        var run = 0
        for (i, b) in command.enumerated() {
            if masked[i] {
                run += 1
                continue
            }
            if run > 0 { items.append(.redacted(count: run)) }
            run = 0
            items.append(.byte(b))
        }
        if run > 0 { items.append(.redacted(count: run)) }
        return TranscriptBytes(items: items)
    }

    /// A command pattern redacted; patterns holding wildcards or marks are left as they are.
    public func redact(_ bytes: TranscriptBytes) -> TranscriptBytes {
        guard let concrete = bytes.bytes else { return bytes }
        return redact(concrete)
    }

    /// The record with its command payload redacted; answers, failures and events unchanged.
    public func redact(_ record: TranscriptRecord) -> TranscriptRecord {
        guard record.entry.isCommand, let payload = record.entry.payload else { return record }
        var copy = record
        copy.entry = record.entry.replacingPayload(redact(payload))
        return copy
    }

    /// Every command line of a transcript redacted (e.g. after importing a log).
    public func redact(_ transcript: Transcript) -> Transcript {
        var copy = transcript
        copy.lines = transcript.lines.map { line in
            guard let record = line.record else { return line }
            return .record(redact(record))
        }
        return copy
    }
}

/// Where the command data field of an APDU is (ISO/IEC 7816-4 §5.1).
enum APDUData {
    /// The data field's range; nil for cases 1 and 2 (no data). When Lc does not fit the length,
    /// everything after byte 5 (conservative).
    static func range(in c: [UInt8]) -> Range<Int>? {
        guard c.count > 5 else { return nil }
        if c[4] != 0 {
            let nc = Int(c[4])
            if c.count == 5 + nc || c.count == 6 + nc { return 5..<5 + nc }
            return 5..<c.count
        }
        if c.count == 7 { return nil }  // case 2E: 00 Le1 Le2
        if c.count > 7 {
            let nc = Int(c[5]) << 8 | Int(c[6])
            if nc > 0, c.count == 7 + nc || c.count == 9 + nc { return 7..<7 + nc }
        }
        return 5..<c.count
    }
}
