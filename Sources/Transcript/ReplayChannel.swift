import ISO7816
import PCSCCore

/// Why a replay stopped: the transcript's file and line, the expected and actual bytes, and a
/// reason. Equatable by ``code``.
public struct ReplayError: CodedError {
    /// An open set of fault kinds.
    public struct Code: ErrorCode {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The command differs from the recorded one (or the live answer from the recorded one).
        public static let mismatch = Self(rawValue: "mismatch")
        /// transmit where control was recorded, another control code, or the reverse.
        public static let unexpectedCall = Self(rawValue: "unexpected-call")
        /// The host sent a command after the last recorded exchange.
        public static let endOfTranscript = Self(rawValue: "end-of-transcript")
        /// The recording ends after a command, with no answer.
        public static let noRecordedAnswer = Self(rawValue: "no-recorded-answer")
        /// A recorded answer holds `??` or `[REDACTED n]`: a replay cannot make those bytes up.
        public static let unreplayableAnswer = Self(rawValue: "unreplayable-answer")
        /// Live replay: a command holds `[REDACTED n]`.
        public static let refusedRedacted = Self(rawValue: "refused-redacted")
        /// Live replay: a command holds `??`.
        public static let refusedWildcard = Self(rawValue: "refused-wildcard")
        /// Live replay: the device failed where an answer was recorded, or answered where a
        /// failure was recorded, or failed differently.
        public static let failureMismatch = Self(rawValue: "failure-mismatch")
        /// ``ReplayChannel/finish()``: recorded exchanges were never asked for.
        public static let leftover = Self(rawValue: "leftover")
        /// A ``TranscriptReplayFile`` no longer reads as it did when it was checked.
        public static let unreadable = Self(rawValue: "unreadable")
    }

    public var code: Code
    /// The transcript's file name, as given to the parser.
    public var file: String
    /// The 1-based line of the transcript concerned.
    public var line: Int
    /// The recorded line's text (`> 00 A4 04 00 …`), when there is one.
    public var expected: String?
    /// What happened instead, in the same form.
    public var actual: String?
    /// Why the replay stopped, and what to do.
    public var reason: String

    /// An error of `code` at `line` of `file`, with the recorded and the actual text when there are
    /// both.
    public init(code: Code, file: String, line: Int, expected: String? = nil, actual: String? = nil, reason: String) {
        self.code = code
        self.file = file
        self.line = line
        self.expected = expected
        self.actual = actual
        self.reason = reason
    }

    /// `file:line: reason`, then the expected and actual lines.
    public var description: String {
        var s = "\(file):\(line): \(reason)"
        if let expected { s += "\n  expected: \(expected)" }
        if let actual { s += "\n  actual:   \(actual)" }
        return s
    }
}

/// The error a ``ReplayChannel`` throws where the transcript recorded a `!` line.
public struct ReplayedFailure: Error, Sendable, Hashable, TranscriptDescribableError, CustomStringConvertible {
    public var transcriptFailure: TranscriptFailure
    /// The transcript's file name.
    public var file: String
    /// The 1-based line of the `!` record.
    public var line: Int

    public var description: String {
        let f = transcriptFailure
        return "\(file):\(line): recorded failure \(f.name)" + (f.code.map { " " + HexText.code($0) } ?? "")
            + (f.message.map { ": " + $0 } ?? "")
    }
}

/// One command of the channel layer and what answered it.
struct RecordedExchange {
    enum Kind: Equatable {
        case transmit
        case control(UInt32)
    }
    enum Outcome {
        case answer(TranscriptBytes, line: Int)
        case failure(TranscriptFailure, line: Int)
        case none
    }
    var kind: Kind
    var command: TranscriptBytes
    var line: Int
    var outcome: Outcome

    var commandText: String {
        TranscriptRecord(entry(.outgoing, command)).serialized()
    }

    func entry(_ d: TranscriptDirection, _ bytes: TranscriptBytes) -> TranscriptEntry {
        switch kind {
        case .transmit: .transmit(d, bytes)
        case .control(let code): .control(code: code, d, bytes)
        }
    }

    func text(_ d: TranscriptDirection, _ bytes: [UInt8]) -> String {
        TranscriptRecord(entry(d, TranscriptBytes(bytes))).serialized()
    }
}

extension Transcript {
    /// The channel-layer exchanges in file order; `channel` nil takes every channel id.
    func recordedExchanges(channel: String?) -> [RecordedExchange] {
        var result: [RecordedExchange] = []
        var pending: [String: Int] = [:]
        for (index, line) in lines.enumerated() {
            guard let record = line.record else { continue }
            if let channel, record.channel != channel { continue }
            let key = record.channel ?? ""
            let number = lineNumber(ofBodyIndex: index)
            switch record.entry {
            case .transmit(.outgoing, let b):
                pending[key] = result.count
                result.append(RecordedExchange(kind: .transmit, command: b, line: number, outcome: .none))
            case .control(let code, .outgoing, let b):
                pending[key] = result.count
                result.append(RecordedExchange(kind: .control(code), command: b, line: number, outcome: .none))
            case .transmit(.incoming, let b), .control(_, .incoming, let b):
                if let i = pending.removeValue(forKey: key) { result[i].outcome = .answer(b, line: number) }
            case .failure(let f):
                if let i = pending.removeValue(forKey: key) { result[i].outcome = .failure(f, line: number) }
            case .target, .initiator, .event, .reader:
                continue
            }
        }
        return result
    }

    /// The number of the file's last line.
    var lastLineNumber: Int { lineNumber(ofBodyIndex: lines.count - 1) }
}

/// A `CardChannel` that plays the card's (or reader's) side of a transcript: the host's
/// commands must come exactly as recorded, in order, and get the recorded answers.
///
/// Only the channel layer is replayed (`>`/`<`, `ctl`, `!`); `tgt`/`ini` lines, events and
/// comments are skipped. In recorded commands, `??` and `[REDACTED n]` bytes match any byte (the
/// host sends the real PIN; the transcript masked it). A recorded `!` line is thrown as
/// ``ReplayedFailure`` (or what `makeError` makes of it).
///
/// After a mismatch the replay does not move on: the same recorded command is expected again.
/// Call ``finish()`` at the end to check that nothing recorded was left out.
///
/// Made from a ``Transcript`` it plays exchanges held in memory; made from a
/// ``TranscriptReplayFile`` (``init(file:transmissionProtocol:makeError:)``) it reads them from the
/// file as the host asks for them, in memory bounded independently of the file's size.
public final class ReplayChannel: CardChannel {
    public let transmissionProtocol: TransmissionProtocol
    /// Hands out the recorded exchanges in order, nil after the last.
    private let nextExchange: () throws(ReplayError) -> RecordedExchange?
    /// The exchange the host's next command must match, once read; nil after the last.
    private var upcoming: RecordedExchange?
    private var upcomingRead = false
    private let total: Int
    private var played = 0
    private let fileName: String
    private let lastLine: Int
    private let makeError: (ReplayedFailure) -> any Error
    /// The file's exchanges as they are read (nil for a transcript in memory).
    let stream: RecordedExchangeStream?

    /// - Parameters:
    ///   - transcript: a parsed transcript (or one a ``TranscriptBuffer`` holds).
    ///   - channel: replay only the lines of `@channel`; nil replays every channel-layer line.
    ///   - transmissionProtocol: what the channel reports; by default the header's `protocol`,
    ///     else T=1.
    ///   - makeError: turns a recorded failure into the error thrown (e.g. into a PC/SC error).
    public init(
        _ transcript: Transcript, channel: String? = nil, transmissionProtocol: TransmissionProtocol? = nil,
        makeError: @escaping (ReplayedFailure) -> any Error = { $0 }
    ) {
        self.transmissionProtocol = transmissionProtocol ?? transcript.header.transmissionProtocol ?? .t1
        let exchanges = transcript.recordedExchanges(channel: channel)
        var index = 0
        nextExchange = { () throws(ReplayError) -> RecordedExchange? in
            guard index < exchanges.count else { return nil }
            defer { index += 1 }
            return exchanges[index]
        }
        total = exchanges.count
        fileName = transcript.fileName
        lastLine = transcript.lastLineNumber
        self.makeError = makeError
        stream = nil
    }

    /// A replay of a checked file (its channel, ``TranscriptReplayFile/channelID``), read from a
    /// new reading of the file one exchange at a time: memory holds a read buffer and the
    /// exchanges whose answer is not read yet (one per channel), whatever the file's size.
    /// - Parameters:
    ///   - file: the file, checked when it was opened.
    ///   - transmissionProtocol: what the channel reports; by default the header's `protocol`,
    ///     else T=1.
    ///   - makeError: turns a recorded failure into the error thrown (e.g. into a PC/SC error).
    /// - Throws: ``ReplayError`` `unreadable` when the file no longer opens. Later, a command
    ///   meets `unreadable` when the file changed since it was checked.
    public init(
        file: TranscriptReplayFile, transmissionProtocol: TransmissionProtocol? = nil,
        makeError: @escaping (ReplayedFailure) -> any Error = { $0 }
    ) throws(ReplayError) {
        self.transmissionProtocol = transmissionProtocol ?? file.header.transmissionProtocol ?? .t1
        let stream = try RecordedExchangeStream(file)
        nextExchange = { () throws(ReplayError) -> RecordedExchange? in try stream.next() }
        self.stream = stream
        total = file.commandCount
        fileName = file.fileName
        lastLine = file.lastLine
        self.makeError = makeError
    }

    /// Recorded exchanges not yet played.
    public var remainingExchanges: Int { total - played }

    public func transmit(_ command: [UInt8]) throws -> [UInt8] {
        try play(.transmit, command)
    }

    public func control(code: UInt32, _ command: [UInt8]) throws -> [UInt8] {
        try play(.control(code), command)
    }

    /// Throws ``ReplayError`` `leftover` naming the first recorded command never sent.
    public func finish() throws(ReplayError) {
        guard let e = try peek() else { return }
        throw ReplayError(code: .leftover, file: fileName, line: e.line, expected: e.commandText,
                          reason: "the host stopped early: \(total - played) recorded exchange(s) from this line on were never sent")
    }

    /// The exchange the next command must match (read when first asked for), nil after the last.
    private func peek() throws(ReplayError) -> RecordedExchange? {
        if !upcomingRead {
            upcoming = try nextExchange()
            upcomingRead = true
        }
        return upcoming
    }

    /// Moves past the exchange just played.
    private func advance() {
        played += 1
        upcoming = nil
        upcomingRead = false
    }

    private func play(_ kind: RecordedExchange.Kind, _ command: [UInt8]) throws -> [UInt8] {
        let probe = RecordedExchange(kind: kind, command: TranscriptBytes(command), line: 0, outcome: .none)
        let actual = probe.text(.outgoing, command)
        guard let e = try peek() else {
            throw ReplayError(code: .endOfTranscript, file: fileName, line: lastLine, actual: actual,
                              reason: "the transcript ends here, but the host sent another command")
        }
        guard e.kind == kind else {
            throw ReplayError(code: .unexpectedCall, file: fileName, line: e.line, expected: e.commandText, actual: actual,
                              reason: "the host made another kind of call than recorded (transmit vs control, or another control code)")
        }
        if let at = e.command.firstMismatch(in: command) {
            throw ReplayError(code: .mismatch, file: fileName, line: e.line, expected: e.commandText, actual: actual,
                              reason: "the host sent another command than recorded (first difference at byte \(at))")
        }
        switch e.outcome {
        case .none:
            throw ReplayError(code: .noRecordedAnswer, file: fileName, line: e.line, expected: e.commandText,
                              reason: "the recording ends after this command: no answer was recorded (was the recording cut short?)")
        case .failure(let f, let line):
            advance()
            throw makeError(ReplayedFailure(transcriptFailure: f, file: fileName, line: line))
        case .answer(let bytes, let line):
            guard let concrete = bytes.bytes else {
                throw ReplayError(code: .unreplayableAnswer, file: fileName, line: line,
                                  expected: TranscriptRecord(e.entry(.incoming, bytes)).serialized(),
                                  reason: "the recorded answer holds ?? or [REDACTED n]: a replay cannot make those bytes up; write the real bytes")
            }
            advance()
            return concrete
        }
    }
}

/// Drives a real channel with a transcript's recorded commands and checks its answers.
///
/// Before anything is sent, the whole transcript is checked: a command holding `[REDACTED n]` or
/// `??` is refused (a replayed masked VERIFY would send wrong PIN bytes and spend the card's PIN
/// tries), and so is a command with no recorded answer. Then each command is sent in order; the
/// answer must match the recorded one (`??` and redacted answer bytes match anything), and a
/// recorded `!` must meet a thrown error of the same name (and code, when recorded).
public enum LiveReplay {
    /// Checks that every command of the channel layer can be sent as is; sends nothing.
    /// - Throws: ``ReplayError`` `refusedRedacted`, `refusedWildcard` or `noRecordedAnswer`, at the
    ///   first such line.
    public static func check(_ transcript: Transcript, channelID: String? = nil) throws(ReplayError) {
        for e in transcript.recordedExchanges(channel: channelID) {
            if let refusal = refusal(of: e, file: transcript.fileName) { throw refusal }
        }
    }

    /// Why `e` cannot be sent as is (redacted or wildcard bytes, no recorded answer), or nil.
    static func refusal(of e: RecordedExchange, file: String) -> ReplayError? {
        if e.command.containsRedaction {
            return ReplayError(code: .refusedRedacted, file: file, line: e.line, expected: e.commandText,
                               reason: "refusing a live replay: this command was redacted, and sending other bytes (e.g. a masked VERIFY) can spend the card's PIN tries; replay it against a simulator, or re-record it without redaction on a test card")
        }
        if e.command.containsWildcard {
            return ReplayError(code: .refusedWildcard, file: file, line: e.line, expected: e.commandText,
                               reason: "refusing a live replay: this command holds ?? wildcard bytes, which cannot be sent; write the real bytes")
        }
        if case .none = e.outcome {
            return ReplayError(code: .noRecordedAnswer, file: file, line: e.line, expected: e.commandText,
                               reason: "refusing a live replay: this command has no recorded answer to compare with; complete or remove it")
        }
        return nil
    }

    /// Sends the recorded commands to `channel` and compares the answers; stops at the first
    /// difference.
    ///
    /// - Parameters:
    ///   - transcript: the recording.
    ///   - channel: the live device.
    ///   - channelID: replay only the lines of `@channelID`; nil takes every channel-layer line.
    ///   - describeFailure: how a thrown error is compared with a `!` line.
    /// - Returns: the number of exchanges replayed.
    /// - Throws: ``ReplayError``: those of ``check(_:channelID:)`` before anything is sent; then
    ///   `mismatch` (the answer differs) or `failureMismatch`.
    @discardableResult
    public static func run(
        _ transcript: Transcript, on channel: any CardChannel, channelID: String? = nil,
        describeFailure: (any Error) -> TranscriptFailure = TranscriptRecorder.defaultFailureDescription
    ) throws(ReplayError) -> Int {
        try play(transcript, on: channel, channelID: channelID, options: ReplayOptions(mode: .strict), describeFailure: describeFailure)
    }

    /// The replay of ``run(_:on:channelID:describeFailure:)``, with the answer comparison of `options`.
    static func play(
        _ transcript: Transcript, on channel: any CardChannel, channelID: String?, options: ReplayOptions,
        describeFailure: (any Error) -> TranscriptFailure
    ) throws(ReplayError) -> Int {
        try check(transcript, channelID: channelID)
        let exchanges = transcript.recordedExchanges(channel: channelID)
        for e in exchanges {
            try replay(e, file: transcript.fileName, on: channel, options: options, describeFailure: describeFailure)
        }
        return exchanges.count
    }

    /// Sends one recorded command to `channel` and compares what happens with the recording.
    /// - Throws: ``ReplayError`` `mismatch` or `failureMismatch`, naming the answer's line.
    static func replay(
        _ e: RecordedExchange, file: String, on channel: any CardChannel, options: ReplayOptions,
        describeFailure: (any Error) -> TranscriptFailure
    ) throws(ReplayError) {
        guard let command = e.command.bytes else { return }  // excluded by the check
        var answer: [UInt8]?
        var thrown: TranscriptFailure?
        do {
            switch e.kind {
            case .transmit: answer = try channel.transmit(command)
            case .control(let code): answer = try channel.control(code: code, command)
            }
        } catch {
            thrown = describeFailure(error)
        }
        switch (e.outcome, answer, thrown) {
        case (.answer(let expected, let line), let answer?, _):
            let pattern = e.kind == .transmit ? options.answerPattern(expected, forCommand: e.command) : expected
            if let at = pattern.firstMismatch(in: answer) {
                throw ReplayError(code: .mismatch, file: file, line: line,
                                  expected: TranscriptRecord(e.entry(.incoming, expected)).serialized(),
                                  actual: e.text(.incoming, answer),
                                  reason: "the device answered differently than recorded (first difference at byte \(at))")
            }
        case (.answer(let expected, let line), nil, let thrown?):
            throw ReplayError(code: .failureMismatch, file: file, line: line,
                              expected: TranscriptRecord(e.entry(.incoming, expected)).serialized(),
                              actual: TranscriptRecord(.failure(thrown)).serialized(),
                              reason: "the device failed where an answer was recorded")
        case (.failure(let recorded, let line), let answer?, _):
            throw ReplayError(code: .failureMismatch, file: file, line: line,
                              expected: TranscriptRecord(.failure(recorded)).serialized(),
                              actual: e.text(.incoming, answer),
                              reason: "the device answered where a failure was recorded")
        case (.failure(let recorded, let line), nil, let thrown?):
            if thrown.name != recorded.name || (recorded.code != nil && thrown.code != recorded.code) {
                throw ReplayError(code: .failureMismatch, file: file, line: line,
                                  expected: TranscriptRecord(.failure(recorded)).serialized(),
                                  actual: TranscriptRecord(.failure(thrown)).serialized(),
                                  reason: "the device failed differently than recorded")
            }
        default:
            return  // .none is excluded by the check
        }
    }
}
