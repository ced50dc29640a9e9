import SecbridgeCLI
import ACR122Simulator
import ISO7816
import PN53x
import Transcript

/// The fixed sequence of `secbridge selftest --hardware`: what it sends to an ACR122U, in both roles,
/// and the answer each step should get according to the documents.
///
/// Every step is one escape command (SCardControl on a DIRECT connection, so it works with or
/// without a card) whose bytes are written out here, so that a recording from any unit replays the
/// very same commands. The answers are recorded as they come: a unit that answers otherwise than the
/// documents is noted ("differs"), not failed, since the recording is what the simulator must learn
/// from. A bundle is a directory of transcripts, one per part (``Part``), each with its provenance in
/// the header (see ``BundleHeader``).
enum HardwareSelftest {
    /// The parts of a bundle, one transcript file each.
    enum Part: String, CaseIterable, Sendable {
        /// Reader role and the MCU: identification, PICC parameter, LED, PN532 status, RF field,
        /// polling for a card (with bounded retries), error answers.
        case reader
        /// Target role without a terminal: TgInitAsTarget under a 5 s MCU timeout, and what the chip
        /// answers afterwards.
        case target
        /// Target role with a phone or terminal reading the built-in URI tag (`--phone`).
        case phone

        var fileName: String { rawValue + ".trn" }
    }

    /// What a step's answer should be, from the documents.
    enum Expectation: Sendable {
        /// Exactly these bytes.
        case exactly([UInt8])
        /// Starting with these bytes and ending in 90 00.
        case prefix([UInt8])
        /// The 10-byte firmware string "ACR122U…", without a status word (ACR122U API v2.04, Get Firmware Version).
        case firmwareString
        /// Whatever comes: the answer depends on the unit or what is in the field.
        case recorded

        func matches(_ answer: [UInt8]) -> Bool {
            switch self {
            case .exactly(let bytes): answer == bytes
            case .prefix(let bytes): answer.starts(with: bytes) && answer.count >= bytes.count + 2 && answer.suffix(2) == [0x90, 0x00]
            case .firmwareString: answer.count == 10 && answer.starts(with: Array("ACR122U".utf8))
            case .recorded: true
            }
        }

        var text: String {
            switch self {
            case .exactly(let bytes): bytes.hexString
            case .prefix(let bytes): bytes.hexString + " … 90 00"
            case .firmwareString: "\"ACR122U…\" (10 ASCII bytes, no status word)"
            case .recorded: "(as the unit answers)"
            }
        }
    }

    /// One step: an escape command (or, with `controlCode`, another SCardControl code), its
    /// purpose, the documented answer and its source.
    struct Step: Sendable {
        var label: String
        var command: [UInt8]
        var expected: Expectation
        var source: String
        /// The control code when it is not the reader's escape code.
        var controlCode: UInt32? = nil
    }

    /// A step's result: the answer or the PC/SC error instead.
    struct Outcome: Sendable {
        var step: Step
        var answer: [UInt8]?
        var error: String?

        var verdict: String {
            guard let answer else { return "error" }
            return step.expected.matches(answer) ? "ok" : "differs"
        }
    }

    // MARK: The sequence

    /// Wraps a PN532 frame in Direct Transmit: `FF 00 00 00 Lc D4 …` (ACR122U API v2.04, Direct Transmit).
    static func direct(_ frame: [UInt8]) -> [UInt8] { [0xFF, 0x00, 0x00, 0x00, UInt8(frame.count)] + frame }

    /// The reader part before polling: identification, reader settings, PN532 state, RF field.
    static let readerSteps: [Step] = [
        Step(label: "feature request (CM_IOCTL_GET_FEATURE_REQUEST)", command: [], expected: .recorded,
             source: "PC/SC part 10 §2.2; acr122-pn532.md §1, §5c", controlCode: ACR122ControlCode.getFeatureRequest),
        Step(label: "firmware version", command: [0xFF, 0x00, 0x48, 0x00, 0x00], expected: .firmwareString,
             source: "ACR122U API v2.04, Get Firmware Version; acr122-pn532.md §2"),
        Step(label: "automatic polling off (PICC parameter 00)", command: [0xFF, 0x00, 0x51, 0x00, 0x00],
             expected: .exactly([0x90, 0x00]), source: "ACR122U API v2.04, Set PICC Operating Parameter"),
        Step(label: "PICC parameter read back", command: [0xFF, 0x00, 0x50, 0x00, 0x00],
             expected: .exactly([0x90, 0x00]), source: "ACR122U API v2.04, Get PICC Operating Parameter"),
        Step(label: "LEDs: both on", command: [0xFF, 0x00, 0x40, 0x0F, 0x04, 0x00, 0x00, 0x00, 0x00],
             expected: .exactly([0x90, 0x03]), source: "ACR122U API v2.04, Bi-Color LED and Buzzer Control (LED status byte)"),
        Step(label: "buzzer on detection off", command: [0xFF, 0x00, 0x52, 0x00, 0x00],
             expected: .exactly([0x90, 0x00]), source: "ACR122U API v2.04, Set Buzzer Output during Card Detection"),
        Step(label: "PN532 GetFirmwareVersion", command: direct([0xD4, 0x02]),
             expected: .prefix([0xD5, 0x03, 0x32]), source: "PN532 UM0701-02 §7.2.2 (IC 32)"),
        Step(label: "PN532 GetGeneralStatus", command: direct([0xD4, 0x04]),
             expected: .prefix([0xD5, 0x05, 0x00]), source: "PN532 UM0701-02 §7.2.3 (Err 00)"),
        Step(label: "PN532 SetParameters 14", command: direct([0xD4, 0x12, 0x14]),
             expected: .exactly([0xD5, 0x13, 0x90, 0x00]), source: "PN532 UM0701-02 §7.2.9"),
        Step(label: "RF field off", command: direct([0xD4, 0x32, 0x01, 0x00]),
             expected: .exactly([0xD5, 0x33, 0x90, 0x00]), source: "PN532 UM0701-02 §7.3.1, acr122-pn532.md §2"),
        Step(label: "RF field on", command: direct([0xD4, 0x32, 0x01, 0x01]),
             expected: .exactly([0xD5, 0x33, 0x90, 0x00]), source: "PN532 UM0701-02 §7.3.1"),
        Step(label: "passive activation retries 02 (bounded polling)", command: direct([0xD4, 0x32, 0x05, 0x00, 0x01, 0x02]),
             expected: .exactly([0xD5, 0x33, 0x90, 0x00]), source: "PN532 UM0701-02 §7.3.1 (MxRtyPassiveActivation)"),
        Step(label: "InListPassiveTarget 106 kbit/s Type A", command: direct([0xD4, 0x4A, 0x01, 0x00]),
             expected: .recorded, source: "PN532 UM0701-02 §7.3.5"),
    ]

    /// After polling: release what was found (when something was), then answers to commands that
    /// cannot succeed, which is where units and simulators most often part.
    static func probeSteps(cardFound: Bool) -> [Step] {
        var steps: [Step] = []
        if cardFound {
            steps.append(Step(label: "InRelease target 1", command: direct([0xD4, 0x52, 0x01]),
                              expected: .exactly([0xD5, 0x53, 0x00, 0x90, 0x00]), source: "PN532 UM0701-02 §7.3.11"))
        }
        steps += [
            Step(label: "TgGetData while not a target (status 25)", command: direct([0xD4, 0x86]),
                 expected: .exactly([0xD5, 0x87, 0x25, 0x90, 0x00]), source: "PN532 UM0701-02 §7.1 (error 25), acr122-pn532.md §5"),
            Step(label: "Direct Transmit with Lc one too long", command: [0xFF, 0x00, 0x00, 0x00, 0x03, 0xD4, 0x02],
                 expected: .prefix([0xD5, 0x03]), source: "acr122-pn532.md §2 (the MCU passes on the data it got; nfc-pcsc issue 59)"),
            Step(label: "Get Data (UID) through the escape path, no card activated", command: [0xFF, 0xCA, 0x00, 0x00, 0x00],
                 expected: .exactly([0x63, 0x00]), source: "ACR122U API v2.04, Get Data (63 00: operation failed)"),
        ]
        return steps
    }

    /// The target part: emulation set-up (docs/acr122-pn532.md §5 steps 2–3) and TgInitAsTarget with
    /// no terminal, bounded by a 5 s MCU timeout; then GetFirmwareVersion, which also takes back a
    /// command the chip may still hold (§5b), and TgGetData.
    static let targetSteps: [Step] = [
        Step(label: "firmware version", command: [0xFF, 0x00, 0x48, 0x00, 0x00], expected: .firmwareString,
             source: "ACR122U API v2.04, Get Firmware Version"),
        Step(label: "automatic polling off (PICC parameter 00)", command: [0xFF, 0x00, 0x51, 0x00, 0x00],
             expected: .exactly([0x90, 0x00]), source: "ACR122U API v2.04, Set PICC Operating Parameter"),
        Step(label: "MCU timeout 5 s (01)", command: [0xFF, 0x00, 0x41, 0x01, 0x00],
             expected: .exactly([0x90, 0x00]), source: "ACR122U API v2.04, Set Timeout Parameter"),
        Step(label: "RF field off", command: direct([0xD4, 0x32, 0x01, 0x00]),
             expected: .exactly([0xD5, 0x33, 0x90, 0x00]), source: "PN532 UM0701-02 §7.3.1"),
        Step(label: "SetParameters 30 (automatic RATS, ISO 14443-4 PICC)", command: direct([0xD4, 0x12, 0x30]),
             expected: .exactly([0xD5, 0x13, 0x90, 0x00]), source: "PN532 UM0701-02 §7.2.9"),
        Step(label: "TgInitAsTarget, no terminal: ends at the MCU timeout",
             command: direct([0xD4, 0x8C, 0x05, 0x04, 0x00, 0x12, 0x34, 0x56, 0x20]
                 + [UInt8](repeating: 0, count: 18) + [UInt8](repeating: 0, count: 10) + [0x00, 0x00]),
             expected: .exactly([0x63, 0x00]), source: "PN532 UM0701-02 §7.3.14, acr122-pn532.md §5b"),
        Step(label: "PN532 GetFirmwareVersion (takes back a pending command)", command: direct([0xD4, 0x02]),
             expected: .prefix([0xD5, 0x03, 0x32]), source: "acr122-pn532.md §1, §5b"),
        Step(label: "TgGetData, not activated (status 25)", command: direct([0xD4, 0x86]),
             expected: .exactly([0xD5, 0x87, 0x25, 0x90, 0x00]), source: "PN532 UM0701-02 §7.1 (error 25)"),
    ]

    /// Puts back what the sequence changed (docs/acr122-pn532.md §5d): MCU timeout 01, RF on, buzzer on
    /// detection, idle LEDs (red on, green off), automatic polling (PICC parameter FF).
    ///
    /// The same settings as `PN532.restoreReaderDefaults(.all)` (plus the buzzer), spelled out as
    /// bytes on purpose: a bundle's commands must stay the same across versions of this tool, so
    /// recordings from different units and years replay alike.
    static let restoreSteps: [Step] = [
        Step(label: "restore: MCU timeout 01", command: [0xFF, 0x00, 0x41, 0x01, 0x00],
             expected: .exactly([0x90, 0x00]), source: "ACR122U API v2.04, Set Timeout Parameter"),
        Step(label: "restore: RF field on", command: direct([0xD4, 0x32, 0x01, 0x01]),
             expected: .exactly([0xD5, 0x33, 0x90, 0x00]), source: "PN532 UM0701-02 §7.3.1"),
        Step(label: "restore: buzzer on detection", command: [0xFF, 0x00, 0x52, 0xFF, 0x00],
             expected: .exactly([0x90, 0x00]), source: "ACR122U API v2.04, Set Buzzer Output during Card Detection"),
        Step(label: "restore: idle LEDs (red on, green off)", command: [0xFF, 0x00, 0x40, 0x0D, 0x04, 0x00, 0x00, 0x00, 0x00],
             expected: .exactly([0x90, 0x01]), source: "ACR122U API v2.04, Bi-Color LED and Buzzer Control"),
        Step(label: "restore: automatic polling (PICC parameter FF)", command: [0xFF, 0x00, 0x51, 0xFF, 0x00],
             expected: .exactly([0x90, 0xFF]), source: "ACR122U API v2.04, Set PICC Operating Parameter; acr122-pn532.md §5d"),
    ]

    /// What makes a bundle not replay against a lone simulated unit: another reader's RF field
    /// (GetGeneralStatus Field byte 01, UM0701-02 §7.2.3) or a terminal that activated the target
    /// part's TgInitAsTarget (a phone, or another reader polling nearby).
    static func warnings(_ outcomes: [Outcome]) -> [String] {
        var warnings: [String] = []
        for outcome in outcomes {
            guard let answer = outcome.answer, outcome.step.command.count >= 7 else { continue }
            let code = outcome.step.command[6]
            if outcome.step.command[5] == 0xD4, code == 0x04, answer.count >= 4, answer.starts(with: [0xD5, 0x05]), answer[3] == 0x01 {
                warnings.append("an external RF field was present (GetGeneralStatus: Field 01): another reader or a phone is near; the bundle will not replay against a single simulated unit, record it again with nothing near the reader")
            }
            if outcome.step.command[5] == 0xD4, code == 0x8C, answer.starts(with: [0xD5, 0x8D]) {
                warnings.append("a terminal activated the target part's TgInitAsTarget (\(answer.hexString)): a phone or another reader was near; record again with nothing near the reader (use --phone to record a phone)")
            }
        }
        return warnings
    }

    // MARK: Running

    /// Sends `step` through the escape code; a PC/SC error becomes the outcome's error (it is in the
    /// recording as a `!` line too).
    static func run(_ step: Step, on channel: any CardChannel, escapeCode: UInt32) -> Outcome {
        do {
            return Outcome(step: step, answer: try channel.control(code: step.controlCode ?? escapeCode, step.command))
        } catch {
            return Outcome(step: step, error: "\(error)")
        }
    }

    /// What InListPassiveTarget found: the first target of `D5 4B NbTg …`, or nil.
    static func target(in outcome: Outcome) -> ISO14443ATarget? {
        guard let answer = outcome.answer, answer.count >= 4, answer.starts(with: [0xD5, 0x4B]),
              answer.suffix(2) == [0x90, 0x00] else { return nil }
        return try? PN532.InListPassiveTarget().response(parsing: Array(answer.dropFirst(2).dropLast(2))).first
    }

    /// Runs the reader part; `report` sees each outcome as it comes. When `stop` says so (Ctrl-C),
    /// the remaining steps are left out, but not the restore steps.
    /// - Returns: the outcomes and the card InListPassiveTarget found, if any.
    static func runReaderPart(
        on channel: any CardChannel, escapeCode: UInt32, stop: () -> Bool = { false }, report: (Outcome) -> Void
    ) -> (outcomes: [Outcome], card: ISO14443ATarget?) {
        var outcomes: [Outcome] = []
        var card: ISO14443ATarget?
        for step in readerSteps where !stop() {
            let outcome = run(step, on: channel, escapeCode: escapeCode)
            outcomes.append(outcome)
            report(outcome)
            if step.command.count > 6, step.command[5...6] == [0xD4, 0x4A] { card = target(in: outcome) }
        }
        for step in probeSteps(cardFound: card != nil) where !stop() {
            let outcome = run(step, on: channel, escapeCode: escapeCode)
            outcomes.append(outcome)
            report(outcome)
        }
        return (outcomes + runRestore(on: channel, escapeCode: escapeCode, report: report), card)
    }

    /// Runs the target part (about 5 s: one MCU timeout), `stop` as in the reader part.
    static func runTargetPart(
        on channel: any CardChannel, escapeCode: UInt32, stop: () -> Bool = { false }, report: (Outcome) -> Void
    ) -> [Outcome] {
        var outcomes: [Outcome] = []
        for step in targetSteps where !stop() {
            let outcome = run(step, on: channel, escapeCode: escapeCode)
            outcomes.append(outcome)
            report(outcome)
        }
        return outcomes + runRestore(on: channel, escapeCode: escapeCode, report: report)
    }

    static func runRestore(on channel: any CardChannel, escapeCode: UInt32, report: (Outcome) -> Void) -> [Outcome] {
        restoreSteps.map { step in
            let outcome = run(step, on: channel, escapeCode: escapeCode)
            report(outcome)
            return outcome
        }
    }
}

/// The provenance header of a bundle's transcripts (Fixtures/README.md, "Header"), and what a replay
/// against the simulator reads back from it.
///
/// | Key | Value |
/// |---|---|
/// | `reader`, `firmware`, `date`, `tool`, `origin` | as every recording |
/// | `driver` | `libccid` (escape code 0x42000001) or `acsccid` (0x42000DAC), from the feature request |
/// | `escape-code` | the control code the pseudo-APDUs went through, `0x…` |
/// | `selftest-part` | `reader`, `target` or `phone` (``HardwareSelftest/Part``) |
/// | `card` | what InListPassiveTarget found: `uid=… atqa=… sak=… [ats=…]` (hex without spaces, ATQA most significant byte first), or `none` |
/// | `credential` | the credential the phone part emulated (`example-uri-tag`) |
struct BundleHeader {
    static let partKey = "selftest-part"
    static let escapeCodeKey = "escape-code"
    static let cardKey = "card"
    static let credentialKey = "credential"

    /// The driver name for an escape code.
    static func driver(forEscapeCode code: UInt32) -> String {
        switch code {
        case ACR122ControlCode.ccidEscape: "libccid"
        case ACR122ControlCode.acsccidEscape: "acsccid"
        default: "unknown"
        }
    }

    /// The simulator personality a bundle part replays against: the registry entry whose feature
    /// list equals the recorded CM_IOCTL_GET_FEATURE_REQUEST answer (without one in the part, the
    /// list of the driver the `escape-code` header names), whose answer to TgInitAsTarget with no
    /// terminal (empty or not) and firmware are the recorded ones when such an entry exists
    /// (``ReaderVariantClassifier/matchingPersonality(_:)``); else by the `escape-code` header:
    /// `acs-driver` for 0x42000DAC, the default otherwise.
    static func personality(for transcript: Transcript) -> String {
        let escapeCode = transcript.header[escapeCodeKey].flatMap { UInt32($0.dropFirst(2), radix: 16) }
        var featureList: [UInt8]?
        var emptyTargetAnswer: Bool?
        var previous: (code: UInt32, bytes: [UInt8])?
        for line in transcript.lines {
            guard case .control(let code, let direction, let payload)? = line.record?.entry else { continue }
            let bytes = payload.bytes ?? []
            if direction == .outgoing {
                previous = (code, bytes)
                continue
            }
            defer { previous = nil }
            guard let command = previous, command.code == code else { continue }
            if code == ACR122ControlCode.getFeatureRequest, featureList == nil {
                featureList = payload.bytes
            } else if command.bytes.count > 6, command.bytes[0...5] == [0xFF, 0x00, 0x00, 0x00, command.bytes[4], 0xD4],
                      command.bytes[6] == 0x8C, emptyTargetAnswer == nil {
                // TgInitAsTarget's answer with no terminal in the bundle's target part.
                emptyTargetAnswer = bytes.isEmpty
            }
        }
        // A part without the feature request (the target part) went through the escape path, so its
        // driver lists what libccid with the option or acsccid lists.
        let driverList = escapeCode == ACR122ControlCode.acsccidEscape
            ? ACR122Personality.acsDriver.featureList : ACR122Personality.ccidEscapeEnabled.featureList
        let evidence = ReaderVariantEvidence(
            featureList: featureList ?? driverList, workingEscapeCode: escapeCode, firmware: transcript.header.firmware,
            emptyTargetAnswer: emptyTargetAnswer)
        if let name = ReaderVariantClassifier.matchingPersonality(evidence) { return name }
        return escapeCode == ACR122ControlCode.acsccidEscape ? "acs-driver" : ACR122Personality.defaultName
    }

    /// The targets the PN532 listed when the reader part began: NbTg of the first GetGeneralStatus
    /// answer before any InListPassiveTarget (`D5 05 Err Field NbTg [Tg BrRx BrTx Type]… SAM 90 00`,
    /// PN532 UM0701-02 §7.2.3); nil when the transcript has no such answer (the target and phone
    /// parts, a sequence cut short).
    ///
    /// A card pcscd powered up is the chip's target 1 (the ACR122U activates it to build its ATR),
    /// so NbTg 01 means pcscd still held the card powered when the sequence began, NbTg 00 that it
    /// had powered it down (docs/acr122-units.md §6).
    static func targetsListedAtStart(in transcript: Transcript) -> Int? {
        var command: [UInt8]?
        for line in transcript.lines {
            guard case .control(_, let direction, let payload)? = line.record?.entry else { continue }
            let bytes = payload.bytes ?? []
            if direction == .outgoing {
                command = bytes
                continue
            }
            defer { command = nil }
            guard let sent = command, sent.count >= 7, sent[0...3] == [0xFF, 0x00, 0x00, 0x00], sent[5] == 0xD4 else { continue }
            if sent[6] == 0x4A { return nil }
            if sent[6] == 0x04, bytes.count >= 5, bytes.starts(with: [0xD5, 0x05]) { return Int(bytes[4]) }
        }
        return nil
    }

    /// How a replay puts the recorded card on the simulated reader before the sequence connects
    /// DIRECT, so that the chip holds what it held when the recording began (docs/acr122-units.md §6).
    enum CardStaging: Equatable, Sendable {
        /// No card was recorded: nothing is placed.
        case none
        /// Placed, then powered up (pcscd at insertion: the chip lists it as target 1) and left
        /// powered, as pcscd holds it until its power-off grace period ends: the recording's first
        /// GetGeneralStatus lists a target.
        case powered
        /// Placed, powered up and powered down again, as pcscd does once its grace period passes
        /// with no client: the recording's first GetGeneralStatus lists no target (or the part has
        /// none).
        case poweredDown
        /// Placed only: the unit never reports a card to pcscd (a clone,
        /// `ACR122Personality/reportsCardsToPCSC`), so pcscd never powers one up.
        case placedOnly
    }

    /// The staging for a part whose `card` header is `card` (nil for `none`), whose first
    /// GetGeneralStatus listed `listedAtStart` targets, replayed against a unit that reports cards
    /// to pcscd (`reportsCards`); with a note when the recording shows a state no staging
    /// reproduces, which the replay then reports beside the first different answer.
    /// - Parameters:
    ///   - card: the parsed `card` header (``cardArguments(_:)``), nil for `none`.
    ///   - listedAtStart: ``targetsListedAtStart(in:)``.
    ///   - reportsCards: whether the personality reports a card to pcscd at all.
    static func cardStaging(card: [String: String]?, listedAtStart: Int?, reportsCards: Bool) -> (staging: CardStaging, note: String?) {
        let listed = listedAtStart ?? 0
        let targets = "\(listed) target\(listed == 1 ? "" : "s")"
        guard card != nil else {
            guard listed == 0 else {
                return (.none, "the recording's first GetGeneralStatus lists \(targets) but its `card` header is none, so no card can be staged to match; the card left the field during the recording, or the bundle was edited: record it again with the card left in place or taken away")
            }
            return (.none, nil)
        }
        guard reportsCards else {
            let note = listed == 0 ? nil
                : "the recording's first GetGeneralStatus lists \(targets), but this unit never reports a card to pcscd, so nothing powers one up before the sequence: another program had left the card activated (InListPassiveTarget); record again with no other program using the reader"
            return (.placedOnly, note)
        }
        switch listed {
        case 0: return (.poweredDown, nil)
        case 1: return (.powered, nil)
        default:
            return (.powered, "the recording's first GetGeneralStatus lists \(targets); pcscd powers one card, and the replay stages that one (the recorded card) only: another program had left targets activated; record again with no other program using the reader")
        }
    }

    /// `uid=… atqa=… sak=… [ats=…]`, or `none`.
    static func cardValue(_ card: ISO14443ATarget?) -> String {
        guard let card else { return "none" }
        var text = "uid=\(compactHex(card.uid)) atqa=\(compactHex([UInt8(card.atqa.rawValue >> 8), UInt8(card.atqa.rawValue & 0xFF)])) sak=\(compactHex([card.sak]))"
        if let ats = card.ats { text += " ats=\(compactHex(ats))" }
        return text
    }

    /// The `card` header parsed back into control-socket arguments (`uid`, `atqa`, `sak`, `ats`);
    /// nil for `none` or no header.
    /// - Throws: a message naming the malformed part.
    static func cardArguments(_ value: String?) throws(CLIError) -> [String: String]? {
        guard let value, value != "none" else { return nil }
        var arguments: [String: String] = [:]
        for part in value.split(separator: " ") {
            let pieces = part.split(separator: "=", maxSplits: 1).map(String.init)
            guard pieces.count == 2, ["uid", "atqa", "sak", "ats"].contains(pieces[0]), !pieces[1].isEmpty,
                  pieces[1].count % 2 == 0, pieces[1].allSatisfy(\.isHexDigit)
            else {
                throw .failure("the bundle's `card` header has a malformed part '\(part)'; expected uid=HEX atqa=HEX sak=HEX [ats=HEX]")
            }
            arguments[pieces[0]] = pieces[1]
        }
        guard arguments["uid"] != nil else { throw .failure("the bundle's `card` header names no uid") }
        return arguments
    }
}

/// Uppercase hex without spaces, as the control socket and `--json` take it.
func compactHex(_ bytes: [UInt8]) -> String {
    guard case .string(let text) = JSONValue.hex(bytes) else { return "" }
    return text
}
