import SecbridgeCLI
import ISO7816
import Transcript

/// What `secbridge emulate` reports while it runs, in order: each as its line(s) of text, or with
/// `--json` as one JSON line (`{"event": …}`, keys below). The one place both renderings live.
enum EmulateReport: Sendable {
    /// The authorization prompt's outcome: approved with --yes or an answer; declined with the
    /// reason (`interrupted`, `no answer`, `declined`).
    case authorization(prompt: String, approved: Bool, reason: String)
    /// The session's state after a step, e.g. `wiredMode(…)`; `reader` while it emulates.
    case state(String, reader: String? = nil)
    /// The presentment assertion's state (`active`, …).
    case assertion(String)
    /// One C-APDU from the terminal and the R-APDU the host answered, as shown: secrets masked
    /// (``SecretDisplay``) unless `--show-secrets`.
    case apdu(command: TranscriptBytes, response: TranscriptBytes)
    /// `fieldStateChanged`: `fieldPresent` or `fieldAbsent`, and how it was observed.
    case field(state: String, observation: String)
    /// The secure element behind the credential changed (a relayed card was reset or replaced).
    case secureElementChanged(String)
    /// The 60-second card-emulation window ended.
    case cardEmulationTimeout
    /// Ctrl-C during card emulation: the emulation is being ended.
    case interrupted
    /// Any other session event, by its description.
    case other(String)
    /// What the terminals did (``TerminalVerdict``): the `terminal:` line, its detail lines, and
    /// whether it counts as a success.
    case terminal(line: String, details: [String], succeeded: Bool)
    /// The end: how many C-APDUs terminals sent, and the exit status.
    case end(commands: Int, status: Int32)
    /// A failure after events were printed (`--json`: the stream's last line).
    case failure(String)

    /// The text line(s), or nil for an event the text output does not show.
    var text: String? {
        switch self {
        case .authorization(let prompt, true, let reason): "authorization: \(prompt) → approved (\(reason))"
        case .authorization(_, false, "interrupted"): "\ninterrupted at the prompt: declined"
        case .authorization(_, false, "no answer"): "\nno answer on standard input: declined (use --yes to approve without asking)"
        case .authorization: nil
        case .state(let state, let reader?): "state: \(state) on \(reader): present the reader to the terminal (Ctrl-C stops)"
        case .state(let state, nil): "state: \(state)"
        case .assertion(let state): "presentment assertion: \(state)"
        case .apdu(let command, let response): "  terminal > \(command)\n  host     < \(response)"
        case .field(let state, let observation): "event: fieldStateChanged(\(state): \(observation))"
        case .secureElementChanged(let detail): "event: secure element changed: \(detail)"
        case .cardEmulationTimeout: "event: cardEmulationTimeout (the 60-second window ended)"
        case .interrupted: "interrupted: ending card emulation (within one MCU timeout)"
        case .other(let description): "event: \(description)"
        case .terminal(let line, let details, _): ([line] + details).joined(separator: "\n")
        case .end, .failure: nil
        }
    }

    /// The JSON line's object.
    var json: JSONValue {
        switch self {
        case .authorization(let prompt, let approved, let reason):
            .object([("event", .string("authorization")), ("prompt", .string(prompt)), ("approved", .bool(approved)), ("reason", .string(reason))])
        case .state(let state, let reader):
            .object([("event", .string("state")), ("state", .string(state))] + (reader.map { [("reader", JSONValue.string($0))] } ?? []))
        case .assertion(let state):
            .object([("event", .string("assertion")), ("state", .string(state))])
        case .apdu(let command, let response):
            .object([("event", .string("apdu")), ("command", SecretDisplay.jsonBytes(command)), ("response", SecretDisplay.jsonBytes(response))])
        case .field(let state, let observation):
            .object([("event", .string("field")), ("state", .string(state)), ("observation", .string(observation))])
        case .secureElementChanged(let detail):
            .object([("event", .string("secureElementChanged")), ("detail", .string(detail))])
        case .cardEmulationTimeout:
            .object([("event", .string("cardEmulationTimeout"))])
        case .interrupted:
            .object([("event", .string("interrupted"))])
        case .other(let description):
            .object([("event", .string("other")), ("description", .string(description))])
        case .terminal(let line, let details, let succeeded):
            .object([("event", .string("terminal")), ("summary", .string(String(line.dropFirst("terminal: ".count)))),
                     ("details", .array(details.map { .string(String($0.drop { $0 == " " })) })), ("succeeded", .bool(succeeded))])
        case .end(let commands, let status):
            .object([("event", .string("end")), ("commands", .int(commands)), ("status", .int(Int(status)))])
        case .failure(let message):
            .object([("event", .string("error")), ("error", .string(message))])
        }
    }

    /// Prints `report` on `console`: its text, or its JSON line with `json`.
    static func print(_ report: EmulateReport, json: Bool, on console: any Console) {
        if json {
            console.out(report.json.serialized() + "\n")
        } else if let text = report.text {
            console.out(text + "\n")
        }
    }
}
