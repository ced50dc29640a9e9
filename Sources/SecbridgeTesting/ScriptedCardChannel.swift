import ISO7816
import PCSCCore
import Testing

/// A `CardChannel` that follows a script, in the spirit of NIOEmbedded's channel: it does no I/O,
/// answers each call with the next scripted step, and reports what was left over.
///
/// Each step names the call it expects (SCardTransmit or SCardControl with its code), the command
/// bytes, and the answer or the error to throw. One semantics, for every test target:
/// - a call whose kind, control code or bytes differ from the next step is recorded as a test issue
///   at the line that built the channel, and the step is used anyway (so the test goes on and shows
///   every difference);
/// - a call past the end of the script is recorded as an issue and throws ``UnscriptedCall``;
/// - ``leftovers`` are the steps never used; ``assertFinished(sourceLocation:)`` records an issue when
///   there are any.
///
/// Every such difference is also kept in ``problems``, one line each; a test of a harness built on
/// the channel sets ``recordsIssues`` to false and asserts on ``problems`` instead.
///
/// Not thread-safe: drive it from one thread, as a PC/SC handle is.
public final class ScriptedCardChannel: CardChannel {
    /// One scripted call and its outcome.
    public enum Step: Sendable, CustomStringConvertible {
        /// SCardTransmit of `expect`, answered with `reply`.
        case transmit(expect: [UInt8], reply: [UInt8])
        /// SCardTransmit of `expect`, failing with `error`.
        case transmitThrows(expect: [UInt8], error: any Error & Sendable)
        /// SCardControl(`code`) of `expect`, answered with `reply`.
        case control(code: UInt32, expect: [UInt8], reply: [UInt8])
        /// SCardControl(`code`) of `expect`, failing with `error`.
        case controlThrows(code: UInt32, expect: [UInt8], error: any Error & Sendable)

        /// `> 00 A4 04 00` or `control 0x42000001 > FF 00 48 00 00`.
        public var description: String {
            switch self {
            case .transmit(let expect, _), .transmitThrows(let expect, _): "> " + expect.hexString
            case .control(let code, let expect, _), .controlThrows(let code, let expect, _):
                "control 0x" + String(code, radix: 16, uppercase: true) + " > " + expect.hexString
            }
        }
    }

    /// Thrown for a call past the end of the script.
    public struct UnscriptedCall: Error, Sendable, CustomStringConvertible {
        /// The call, written as a ``Step`` is.
        public var call: String
        /// `unscripted call <call>`.
        public var description: String { "unscripted call \(call)" }
    }

    /// The protocol the channel reports (default T=1).
    public let transmissionProtocol: TransmissionProtocol
    private var steps: [Step]
    private var next = 0
    private let sourceLocation: SourceLocation
    /// Every call made, written as a ``Step`` is (`> …` or `control 0x… > …`).
    public private(set) var sent: [String] = []
    /// The command bytes of every call made, in order.
    public private(set) var commands: [[UInt8]] = []
    /// Every difference from the script, in order, as it is recorded (`step 2: > 00 B0 00 00 10,
    /// but the script expects > 00 B0 00 00 00`, `unscripted call …`, `1 scripted step(s) were not
    /// used: …`).
    public private(set) var problems: [String] = []
    /// Whether a difference is also recorded as a Swift Testing issue (default true).
    public var recordsIssues = true

    /// - Parameters:
    ///   - transmissionProtocol: what the channel reports (`.undefined` for a DIRECT connection).
    ///   - steps: the script, in order.
    ///   - sourceLocation: where an unscripted or mismatched call is recorded as a Swift Testing
    ///     issue; default the line that made the channel (``assertFinished(sourceLocation:)``
    ///     takes its own).
    public init(
        _ transmissionProtocol: TransmissionProtocol, _ steps: [Step],
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        self.transmissionProtocol = transmissionProtocol
        self.steps = steps
        self.sourceLocation = sourceLocation
    }

    /// A transmit-only script of `(command, answer)` hex pairs, e.g. `("00 B0 00 00 00", "61 00")`.
    public convenience init(
        _ transmissionProtocol: TransmissionProtocol, exchanges: [(String, String)],
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        self.init(
            transmissionProtocol,
            exchanges.map { .transmit(expect: hex($0.0, sourceLocation: sourceLocation), reply: hex($0.1, sourceLocation: sourceLocation)) },
            sourceLocation: sourceLocation)
    }

    /// A transmit-only script of `(command, answer)` byte pairs.
    public convenience init(
        _ transmissionProtocol: TransmissionProtocol, exchanges: [([UInt8], [UInt8])],
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        self.init(
            transmissionProtocol, exchanges.map { .transmit(expect: $0.0, reply: $0.1) }, sourceLocation: sourceLocation)
    }

    /// The steps not used yet.
    public var leftovers: [Step] { Array(steps[next...]) }

    /// The scripted answer to the next transmit.
    /// - Throws: the scripted error, or ``UnscriptedCall`` when the script expected something else.
    public func transmit(_ command: [UInt8]) throws -> [UInt8] {
        let call = "> " + command.hexString
        commands.append(command)
        return try take(call) { step in
            switch step {
            case .transmit(let expect, let reply):
                check(command == expect, call, step)
                return .success(reply)
            case .transmitThrows(let expect, let error):
                check(command == expect, call, step)
                return .failure(error)
            case .control(_, _, let reply):
                check(false, call, step)
                return .success(reply)
            case .controlThrows(_, _, let error):
                check(false, call, step)
                return .failure(error)
            }
        }
    }

    /// The scripted answer to the next control call.
    /// - Throws: the scripted error, or ``UnscriptedCall`` when the script expected something else.
    public func control(code: UInt32, _ command: [UInt8]) throws -> [UInt8] {
        let call = "control 0x" + String(code, radix: 16, uppercase: true) + " > " + command.hexString
        commands.append(command)
        return try take(call) { step in
            switch step {
            case .control(let expectedCode, let expect, let reply):
                check(code == expectedCode && command == expect, call, step)
                return .success(reply)
            case .controlThrows(let expectedCode, let expect, let error):
                check(code == expectedCode && command == expect, call, step)
                return .failure(error)
            case .transmit(_, let reply):
                check(false, call, step)
                return .success(reply)
            case .transmitThrows(_, let error):
                check(false, call, step)
                return .failure(error)
            }
        }
    }

    /// Records a test issue when scripted steps were never used.
    public func assertFinished(sourceLocation: SourceLocation = #_sourceLocation) {
        let left = leftovers
        if !left.isEmpty {
            report(
                "\(left.count) scripted step(s) were not used: \(left.map(\.description).joined(separator: "; "))",
                at: sourceLocation)
        }
    }

    private func report(_ problem: String, at sourceLocation: SourceLocation) {
        problems.append(problem)
        if recordsIssues { Issue.record(Comment(rawValue: problem), sourceLocation: sourceLocation) }
    }

    private func take(_ call: String, _ answer: (Step) -> Result<[UInt8], any Error>) throws -> [UInt8] {
        sent.append(call)
        guard next < steps.count else {
            report("unscripted call \(call) after the script's \(steps.count) step(s)", at: sourceLocation)
            throw UnscriptedCall(call: call)
        }
        let step = steps[next]
        next += 1
        return try answer(step).get()
    }

    private func check(_ matches: Bool, _ call: String, _ step: Step) {
        if !matches {
            report("step \(next): \(call), but the script expects \(step)", at: sourceLocation)
        }
    }
}
