import ISO7816
import NFCTags

/// The logic of an ``ExternalTerminal``: it chooses each C-APDU from the R-APDUs so far, as a
/// reader's software does, and ends with what it read or why it gave up.
///
/// Called with the field locked: it must return promptly and must not call into the field.
public protocol TerminalProgram: Sendable {
    /// The first action once the target is activated (after RATS/ATS).
    mutating func start() -> TerminalAction
    /// The next action, given the R-APDU (SW1-SW2 included) to the last C-APDU sent.
    mutating func receive(_ response: [UInt8]) -> TerminalAction
}

/// What a terminal program does next.
public enum TerminalAction: Sendable, Hashable {
    /// Send this C-APDU.
    case send([UInt8])
    /// Release the target, with this outcome.
    case finish(TerminalOutcome)
}

/// How a terminal program ended.
public enum TerminalOutcome: Sendable, Hashable {
    /// A model read what it reads.
    case completed(TerminalReport)
    /// A recorded script ran to its end, each answer as recorded.
    case passedScript
    /// A recorded script's step `step` got another answer.
    case mismatch(step: Int, expected: String, actual: [UInt8])
    /// A model gave up: `stage` names the step of its algorithm, `reason` why (in the words of
    /// the real reader's rule); `report` what it had read so far, if anything.
    case failed(stage: String, reason: String, report: TerminalReport?)
}

/// What a terminal model read, for the control socket's `terminal-result`, `emulate`'s output
/// and the transcript.
public struct TerminalReport: Sendable, Hashable {
    /// One line, e.g. "NDEF message, 1 record: URI https://example.com".
    public var summary: String
    /// The NDEF message read (without NLEN), for a tag reader; nil otherwise.
    public var ndefMessage: [UInt8]?
    /// One text per record or data object read, e.g. "URI https://example.com",
    /// "record 01/01: 70 …".
    public var items: [String]

    /// A report with a one-line `summary`, the NDEF message read (for a tag reader), and one text per
    /// record or data object read.
    public init(summary: String, ndefMessage: [UInt8]? = nil, items: [String] = []) {
        self.summary = summary
        self.ndefMessage = ndefMessage
        self.items = items
    }

    /// The report of an NDEF read: the message parsed and each record described; a message that
    /// does not parse gives nil with the parse error in `error`.
    static func ndef(_ message: [UInt8]) -> Result<TerminalReport, TagFormatError> {
        guard !message.isEmpty else {
            return .success(TerminalReport(summary: "an empty NDEF file (NLEN 0000)", ndefMessage: [], items: []))
        }
        do {
            let parsed = try NDEFMessage(parsing: message)
            let items = parsed.records.map(\.summary)
            let noun = items.count == 1 ? "record" : "records"
            return .success(TerminalReport(
                summary: "NDEF message, \(items.count) \(noun): \(items.joined(separator: "; "))", ndefMessage: message, items: items))
        } catch {
            return .failure(error)
        }
    }
}

/// A recorded ``ExternalTerminal/Script`` as a program: each step's answer is checked against the
/// recording; the first difference ends the run.
struct ScriptProgram: TerminalProgram {
    let script: ExternalTerminal.Script
    private var step = 0

    init(script: ExternalTerminal.Script) { self.script = script }

    mutating func start() -> TerminalAction {
        script.steps.isEmpty ? .finish(.passedScript) : .send(script.steps[0].command)
    }

    mutating func receive(_ response: [UInt8]) -> TerminalAction {
        if let outcome = script.steps[step].mismatch(response, step: step) { return .finish(outcome) }
        step += 1
        return step < script.steps.count ? .send(script.steps[step].command) : .finish(.passedScript)
    }
}

/// An R-APDU split into its data and status word (ISO/IEC 7816-4 §5.1), or nil when it is
/// shorter than SW1 SW2.
func splitResponse(_ response: [UInt8]) -> (data: [UInt8], sw: StatusWord)? {
    guard response.count >= 2 else { return nil }
    return (Array(response.dropLast(2)), StatusWord(sw1: response[response.count - 2], sw2: response[response.count - 1]))
}

/// "SW 6A 82: file or application not found".
func describeStatus(_ sw: StatusWord) -> String { "SW \(sw.bytes.hexString): \(sw.meaning)" }

extension ExternalTerminal {
    /// The terminals `place-terminal script=<name>` places, by name, with what each one is.
    public static let catalog: [(name: String, description: String)] = [
        ("android-t4t-read", "Android reading a Type 4 Tag, the rules of android-15.0.0_r23 (strict: Android 12 and later)"),
        ("android11-t4t-read", "Android reading a Type 4 Tag, the rules of android-11.0.0_r1 (lenient: Android 8 to 11)"),
        ("android-t4t-write", "Android writing an NDEF message (URI https://example.org/written) to a Type 4 Tag, android-15.0.0_r23"),
        ("ios-t4t-read", "an iPhone (Core NFC) reading a Type 4 Tag, probes first"),
        ("emv-payment", "a payment terminal: PPSE, AID by priority, GET PROCESSING OPTIONS, READ RECORD per AFL entry"),
        ("access-control", "an access-control reader: SELECT F0 53 42 41 44 47 45, GET CHALLENGE, INTERNAL and EXTERNAL AUTHENTICATE"),
        ("android-t4t-recording", "the recorded Android read of the worked example, byte for byte"),
        ("ios-t4t-recording", "the recorded iOS read of the worked example, byte for byte"),
        ("android-beam-p2p", "a phone polling as a peer-to-peer initiator (Android Beam, Android 4.0 to 9): ATR_REQ instead of RATS"),
    ]

    /// The message `android-t4t-write` writes: one URI record, https://example.org/written
    /// (`D1 01 14 55 04` + "example.org/written").
    public static let writtenMessage: [UInt8] = [0xD1, 0x01, 0x14, 0x55, 0x04] + Array("example.org/written".utf8)

    /// A new terminal of the ``catalog``, or nil for an unknown name.
    ///
    /// - Parameters:
    ///   - name: a name of the ``catalog`` (`android-t4t-read`, `emv-payment`, …).
    ///   - adjust: changes the terminal's ``PhoneBehaviour`` (leaving, taps, a slow host);
    ///     the Android models start from ``PhoneBehaviour/android`` (RW_T4T_TOUT_RESP), the others
    ///     from no response limit. A recording has no behaviour: `adjust` is not applied to it.
    public static func named(_ name: String, adjust: (inout PhoneBehaviour) -> Void = { _ in }) -> ExternalTerminal? {
        func behaviour(_ base: PhoneBehaviour) -> PhoneBehaviour {
            var copy = base
            adjust(&copy)
            return copy
        }
        let android = behaviour(.android)
        let other = behaviour(PhoneBehaviour())
        switch name {
        case "android-t4t-read":
            return ExternalTerminal(name: "Android Type 4 Tag read (android-15.0.0_r23)", program: AndroidType4Reader(release: .android15), behaviour: android)
        case "android11-t4t-read":
            return ExternalTerminal(name: "Android Type 4 Tag read (android-11.0.0_r1)", program: AndroidType4Reader(release: .android11), behaviour: android)
        case "android-t4t-write":
            return ExternalTerminal(name: "Android Type 4 Tag write (android-15.0.0_r23)",
                                    program: AndroidType4Reader(release: .android15, writing: Self.writtenMessage), behaviour: android)
        case "ios-t4t-read":
            return ExternalTerminal(name: "iOS Core NFC Type 4 Tag read", program: IOSType4Reader(), behaviour: other)
        case "emv-payment": return ExternalTerminal(name: "EMV contactless payment terminal", program: PaymentTerminal(), behaviour: other)
        case "access-control": return ExternalTerminal(name: "access-control reader", program: AccessControlReader(), behaviour: other)
        case "android-t4t-recording": return ExternalTerminal(script: .androidType4ReadExample)
        case "ios-t4t-recording": return ExternalTerminal(script: .iOSType4ReadExample)
        case "android-beam-p2p":
            return ExternalTerminal(name: "Android Beam peer-to-peer initiator", program: PeerToPeerInitiator(), behaviour: other)
        default: return nil
        }
    }
}
