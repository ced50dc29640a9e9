import NFCTags

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
    fileprivate let locate: @Sendable ([UInt8]) -> [Range<Int>]
    /// Commands the rule can never mask, known without calling its function: the built-in rules
    /// say whether they look at reader pseudo-APDUs (CLA FF) only or at card commands of some
    /// instructions only, so a command none of them concerns costs a byte test per rule.
    var scope = CommandScope.any

    /// A rule from a function returning the ranges to mask (out-of-bounds parts are ignored).
    public init(id: String, summary: String, locate: @escaping @Sendable ([UInt8]) -> [Range<Int>]) {
        self.id = id
        self.summary = summary
        self.locate = locate
    }

    /// The ranges of `command` this rule masks, clamped to the command.
    public func ranges(in command: [UInt8]) -> [Range<Int>] {
        let found = locate(command)
        if found.isEmpty { return found }
        return found.compactMap { r in
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
        // A table by INS byte: a lookup per command, not a hash.
        let masked = (0...255).map { instructions.contains(UInt8($0)) }
        var rule = RedactionRule(id: id, summary: summary) { c in
            guard c.count > 4, c[0] != 0xFF, masked[Int(c[1])] else { return [] }
            return APDUData.range(in: c).map { [$0] } ?? []
        }
        rule.scope = .cardInstructions(masked)
        return rule
    }

    /// This rule, known to mask reader pseudo-APDUs (CLA FF) only.
    func readerCommandsOnly() -> RedactionRule {
        var rule = self
        rule.scope = .readerCommands
        return rule
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
    }.readerCommandsOnly()

    /// PC/SC part 3 Update Binary of a MIFARE Classic sector trailer `| FF | D6 | 00 | block | 10 |
    /// key A (6) | access bits (3) | GPB (1) | key B (6) |`, the block a trailer by
    /// `MifareClassicLayout/isSectorTrailer(_:)` (NFCTags): keys A and B (data bytes 0–5 and
    /// 10–15, command offsets 5–10 and 15–20) are masked; access bits and GPB stay readable (ACR122U
    /// API v2.04 §5, Update Binary Blocks; NXP MF1S50yyX §8.7). Type 2 Tag page writes (Lc 04) are
    /// left alone.
    public static let mifareSectorTrailerWrite = RedactionRule(
        id: "mifare-trailer-write", summary: "Update Binary (FF D6) of a MIFARE Classic sector trailer: keys A and B"
    ) { c in
        guard c.count >= 21, c[0] == 0xFF, c[1] == 0xD6, c[2] == 0x00, c[4] == 0x10,
              MifareClassicLayout.isSectorTrailer(Int(c[3]))
        else { return [] }
        return [5..<11, 15..<21]
    }.readerCommandsOnly()

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
    }.readerCommandsOnly()
}

/// What a built-in rule can concern, checked before its function is called (a necessary
/// condition for the rule to mask anything in a command, or in the answer to it).
enum CommandScope: Sendable {
    /// Any command: the function decides.
    case any
    /// Reader pseudo-APDUs only (CLA FF: PC/SC part 3, ACR122U API v2.04).
    case readerCommands
    /// Card commands (CLA other than FF) of more than the 4 header bytes whose INS is true here.
    case cardInstructions([Bool])

    /// True when a rule of this scope masks nothing in `command` (nor in its answer).
    @inline(__always)
    func excludes(_ command: [UInt8]) -> Bool {
        switch self {
        case .any: false
        case .readerCommands: command.first != 0xFF
        case .cardInstructions(let masked): !(command.count > 4 && command[0] != 0xFF && masked[Int(command[1])])
        }
    }
}

/// One rule that finds secret bytes in an answer, given the command it answers.
///
/// A rule sees the command (unredacted) and its whole answer, status word included, and returns
/// the answer's byte ranges to mask; the marks keep the length, and redacted answer bytes match
/// anything in a replay.
public struct ResponseRedactionRule: Sendable {
    /// A short name, e.g. `mifare-trailer-read`.
    public var id: String
    /// What the rule masks, for help text.
    public var summary: String
    fileprivate let locate: @Sendable (_ command: [UInt8], _ response: [UInt8]) -> [Range<Int>]
    /// The commands whose answers the rule can never mask (``RedactionRule``'s `scope`).
    var scope = CommandScope.any

    /// A rule from a function of the command and the answer returning the answer's ranges to mask
    /// (out-of-bounds parts are ignored).
    public init(id: String, summary: String, locate: @escaping @Sendable (_ command: [UInt8], _ response: [UInt8]) -> [Range<Int>]) {
        self.id = id
        self.summary = summary
        self.locate = locate
    }

    /// This rule, known to mask answers to reader pseudo-APDUs (CLA FF) only.
    func readerCommandsOnly() -> ResponseRedactionRule {
        var rule = self
        rule.scope = .readerCommands
        return rule
    }

    /// The ranges of `response` this rule masks, clamped to the answer.
    public func ranges(in response: [UInt8], answering command: [UInt8]) -> [Range<Int>] {
        let found = locate(command, response)
        if found.isEmpty { return found }
        return found.compactMap { r in
            let lower = max(0, r.lowerBound), upper = min(response.count, r.upperBound)
            return lower < upper ? lower..<upper : nil
        }
    }

    /// PC/SC part 3 Read Binary of a MIFARE Classic sector trailer `FF B0 00 <trailer block> 10`
    /// (a trailer by `MifareClassicLayout/isSectorTrailer(_:)`, NFCTags): the answer
    /// `| key A (6, reads as zeros) | access bits (3) | GPB | key B (6) | 90 00 |` may reveal key B,
    /// so answer bytes 10–15 are masked (ACR122U API v2.04 §5, Read Binary Blocks; NXP MF1S50yyX
    /// §8.7). Type 2 Tag readers should read page 3 with Le 04, which this rule leaves alone.
    public static let mifareSectorTrailerRead = ResponseRedactionRule(
        id: "mifare-trailer-read", summary: "Read Binary (FF B0 … 10) answer of a MIFARE Classic sector trailer: key B"
    ) { c, r in
        guard c.count == 5, c[0] == 0xFF, c[1] == 0xB0, c[2] == 0x00, c[4] == 0x10,
              MifareClassicLayout.isSectorTrailer(Int(c[3])), r.count >= 16
        else { return [] }
        return [10..<16]
    }.readerCommandsOnly()
}

/// Masks secrets in commands before they are written, keeping their length.
///
/// The default policy masks: VERIFY, CHANGE REFERENCE DATA, RESET RETRY COUNTER, PUT KEY,
/// EXTERNAL/MUTUAL AUTHENTICATE data, the ACR122U LOAD KEY key, the MIFARE key in PN532
/// InDataExchange authentication and the keys of a MIFARE Classic sector trailer written with
/// Update Binary, and the same card-command rules on the C-APDU inside a PN532 InDataExchange or
/// InCommunicateThru Direct Transmit (``RedactionRule/pn532CardCommand``). It applies to every
/// command line: `>`, `ctl … >`, `tgt <` (a terminal's C-APDU to the emulated target) and `ini >`.
/// Answers are masked by ``responseRules``, which see the command they answer (by default: key B
/// in a Read Binary or PN532 READ answer of a sector trailer, and the terminal's C-APDU in a
/// TgGetData answer). The rules and where they apply are listed in docs/secrets.md.
public struct Redactor: Sendable {
    /// The command rules, all applied; their ranges are merged.
    public var rules: [RedactionRule]
    /// The answer rules, all applied; their ranges are merged.
    public var responseRules: [ResponseRedactionRule]

    /// A redactor applying `rules` to commands and `responseRules` to answers (none by default).
    public init(rules: [RedactionRule], responseRules: [ResponseRedactionRule] = []) {
        self.rules = rules
        self.responseRules = responseRules
    }

    /// The default policy (see the type's summary).
    public static let `default` = Redactor(
        rules: RedactionRule.cardCommandRules + [
            .acr122LoadKey, .pn532MifareAuthentication, .mifareSectorTrailerWrite, .pn532CardCommand,
        ],
        responseRules: [.mifareSectorTrailerRead, .pn532TargetCommand, .pn532CardAnswer])

    /// No redaction: transcripts keep secrets. Use only for test cards.
    public static let disabled = Redactor(rules: [])

    /// The command with secret bytes replaced by `[REDACTED n]` marks (one mark per run).
    public func redact(_ command: [UInt8]) -> TranscriptBytes {
        var ranges: [Range<Int>] = []
        // By index: each rule is read in place, not copied (its strings retained) per command.
        for index in rules.indices {
            let found = rules[index].ranges(in: command)
            if !found.isEmpty { ranges += found }
        }
        return Self.mask(command, ranges)
    }

    /// The answer to `command` with secret bytes replaced by `[REDACTED n]` marks.
    public func redact(response: [UInt8], answering command: [UInt8]) -> TranscriptBytes {
        var ranges: [Range<Int>] = []
        for index in responseRules.indices {
            let found = responseRules[index].ranges(in: response, answering: command)
            if !found.isEmpty { ranges += found }
        }
        return Self.mask(response, ranges)
    }

    /// Whether a command rule masks any byte of `command`; when not, `redact(_:)`
    /// gives the bytes unchanged (a display can print them without building the redacted form).
    /// (A rule whose ranges all fall outside the command counts as masking: `redact(_:)` then
    /// finds nothing to mask, which is still the right answer.)
    public func masksAny(of command: [UInt8]) -> Bool {
        // Only each rule's function is read, in place: copying the rules would retain their strings.
        rules.withUnsafeBufferPointer { rules in
            for index in rules.indices where !rules[index].scope.excludes(command) && !rules[index].locate(command).isEmpty {
                return true
            }
            return false
        }
    }

    /// Whether an answer rule masks any byte of `response`, the answer to `command`.
    public func masksAny(ofResponse response: [UInt8], answering command: [UInt8]) -> Bool {
        responseRules.withUnsafeBufferPointer { rules in
            for index in rules.indices where !rules[index].scope.excludes(command) && !rules[index].locate(command, response).isEmpty {
                return true
            }
            return false
        }
    }

    /// `bytes` with the bytes in `ranges` replaced by one mark per run.
    static func mask(_ bytes: [UInt8], _ ranges: [Range<Int>]) -> TranscriptBytes {
        guard !ranges.isEmpty else { return TranscriptBytes(bytes) }
        var masked = [Bool](repeating: false, count: bytes.count)
        for range in ranges {
            for i in range { masked[i] = true }
        }
        let command = bytes
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

    /// The record with its command payload redacted; failures and events unchanged. An answer
    /// is redacted by ``responseRules`` when `command` (the concrete bytes it answers) is given,
    /// and left as it is otherwise.
    public func redact(_ record: TranscriptRecord, answering command: [UInt8]? = nil) -> TranscriptRecord {
        guard let payload = record.entry.payload else { return record }
        var copy = record
        if record.entry.isCommand {
            copy.entry = record.entry.replacingPayload(redact(payload))
        } else if let command, !responseRules.isEmpty, let answer = payload.bytes {
            copy.entry = record.entry.replacingPayload(redact(response: answer, answering: command))
        }
        return copy
    }

    /// The header's command lines (``redact(_:)-(TranscriptHeader)``) and every command line of a
    /// transcript redacted (e.g. after importing a log), and every answer whose command (the last command line of the same kind and channel) holds concrete bytes.
    public func redact(_ transcript: Transcript) -> Transcript {
        var copy = transcript
        copy.header = redact(transcript.header)
        var stream = stream()
        copy.lines = transcript.lines.map { stream.redact($0) }
        return copy
    }

    /// ``redact(_:)-(Transcript)`` one line at a time, in file order (a transcript streamed from a
    /// file): it keeps only the last command per channel and line kind.
    public func stream() -> Stream { Stream(redactor: self) }

    /// The state of a line-by-line redaction (``stream()``).
    public struct Stream: Sendable {
        let redactor: Redactor
        private var lastCommand: [String: [UInt8]] = [:]

        init(redactor: Redactor) { self.redactor = redactor }

        /// The line with its secrets redacted; blank lines, comments, failures and events unchanged.
        public mutating func redact(_ line: TranscriptLine) -> TranscriptLine {
            guard let record = line.record else { return line }
            guard let key = Redactor.pairingKey(record) else { return .record(redactor.redact(record)) }
            if record.entry.isCommand {
                lastCommand[key] = record.entry.payload?.bytes
                return .record(redactor.redact(record))
            }
            return .record(redactor.redact(record, answering: lastCommand.removeValue(forKey: key)))
        }
    }

    /// Which command an answer pairs with: same kind of line, same control code, same channel.
    static func pairingKey(_ record: TranscriptRecord) -> String? {
        let channel = record.channel ?? ""
        switch record.entry {
        case .transmit: return "t " + channel
        case .control(let code, _, _): return "c \(code) " + channel
        case .target: return "g " + channel
        case .initiator: return "i " + channel
        case .failure, .event, .reader: return nil
        }
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
