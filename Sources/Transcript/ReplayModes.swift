import ISO7816

/// How strictly a replay compares what happens now with what was recorded.
///
/// Every mode checks the ORDER and the COUNT of exchanges: the recorded commands are played one
/// after the other, each answer is compared before the next command goes, and the first
/// difference stops the replay. Bytes written `??` or `[REDACTED n]` in the file always match any
/// byte. The modes differ as follows:
///
/// - ``strict``: answers must match the recorded bytes exactly (apart from the marks written in
///   the file). A replay never checks time offsets (a replay cannot reproduce the recorded timing,
///   and its speed depends on the machine); when two transcripts are compared
///   (``ReplayOptions/diffOptions``), strict compares their offsets too.
/// - ``ignoreTiming``: as strict for a replay; comparing two transcripts leaves offsets out.
/// - ``wildcard``: as ignore-timing, and answers may also differ in bytes that are random by
///   definition: the response data (not SW1-SW2, not the length) of GET CHALLENGE (INS 84) and of
///   INTERNAL AUTHENTICATE (INS 88) and EXTERNAL AUTHENTICATE (INS 82) (ISO/IEC 7816-4 §11.5.2,
///   §11.5.4, §11.5.6). Only card APDUs with an interindustry class (CLA 00–7F) count; reader
///   pseudo-APDUs (CLA FF), proprietary classes and PN532 frames inside SCardControl are compared
///   as recorded.
public enum ReplayMode: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Answers must match exactly, apart from `??` and `[REDACTED n]`; see ``ReplayMode``.
    case strict
    /// As ``strict``; comparing two transcripts leaves the time offsets out.
    case ignoreTiming = "ignore-timing"
    /// As ``ignoreTiming``, and the random data of GET CHALLENGE, INTERNAL and EXTERNAL AUTHENTICATE
    /// answers matches any bytes.
    case wildcard

    /// The name used on the command line: `strict`, `ignore-timing` or `wildcard`.
    public var description: String { rawValue }
}

/// The options of a replay (``LiveReplay/run(_:on:channelID:options:describeFailure:)``,
/// `TerminalReplay.run(_:options:terminalActivated:answer:)`).
public struct ReplayOptions: Sendable, Hashable {
    /// How strictly answers are compared (``ReplayMode/strict`` by default).
    public var mode: ReplayMode

    /// Options with `mode`.
    public init(mode: ReplayMode = .strict) {
        self.mode = mode
    }

    /// INS codes whose answer data is random: GET CHALLENGE (84), INTERNAL AUTHENTICATE (88),
    /// EXTERNAL AUTHENTICATE (82) (ISO/IEC 7816-4 §11.5).
    public static let randomAnswerInstructions: Set<UInt8> = [0x84, 0x88, 0x82]

    /// The pattern an answer must match under this mode.
    ///
    /// In ``ReplayMode/wildcard`` mode, when `command` is a card APDU
    /// `| CLA (00–7F) | INS (84, 88 or 82) | …` and the recorded answer has at least the two status
    /// bytes, its data bytes become `??` (the length and SW1-SW2 are still compared). Otherwise
    /// the recorded answer is returned unchanged.
    /// - Parameters:
    ///   - recorded: the recorded answer `| data | SW1 | SW2 |`.
    ///   - command: the recorded command it answers.
    public func answerPattern(_ recorded: TranscriptBytes, forCommand command: TranscriptBytes) -> TranscriptBytes {
        guard mode == .wildcard, command.items.count >= 2,
            case .byte(let cla) = command.items[0], cla & 0x80 == 0,
            case .byte(let ins) = command.items[1], Self.randomAnswerInstructions.contains(ins)
        else { return recorded }
        // The status word is the last two items; both must be single bytes to be told apart.
        let items = recorded.items
        guard items.count >= 2, items.suffix(2).allSatisfy({ if case .redacted = $0 { false } else { true } }) else {
            return recorded
        }
        var pattern: [TranscriptBytes.Item] = []
        for item in items.dropLast(2) {
            switch item {
            case .byte, .wildcard: pattern.append(.wildcard)
            case .redacted: pattern.append(item)  // already matches any bytes of its length
            }
        }
        return TranscriptBytes(items: pattern + items.suffix(2))
    }

    /// How two transcripts are compared under this mode: ``ReplayMode/strict`` compares time
    /// offsets, the other modes leave them out. Notes and the `date`/`tool` header keys are
    /// left out as ``TranscriptDiffOptions``'s defaults say.
    public var diffOptions: TranscriptDiffOptions {
        var options = TranscriptDiffOptions()
        options.compareTiming = mode == .strict
        return options
    }
}

extension LiveReplay {
    /// Sends the recorded commands to `channel` and compares the answers under `options`; stops at
    /// the first difference. With ``ReplayMode/strict`` this is ``run(_:on:channelID:describeFailure:)``.
    ///
    /// - Returns: the number of exchanges replayed.
    /// - Throws: ``ReplayError``: `refusedRedacted`, `refusedWildcard` or `noRecordedAnswer` before
    ///   anything is sent; then `mismatch` or `failureMismatch`, naming the answer's line.
    @discardableResult
    public static func run(
        _ transcript: Transcript, on channel: any CardChannel, channelID: String? = nil, options: ReplayOptions,
        describeFailure: (any Error) -> TranscriptFailure = TranscriptRecorder.defaultFailureDescription
    ) throws(ReplayError) -> Int {
        try play(transcript, on: channel, channelID: channelID, options: options, describeFailure: describeFailure)
    }
}

/// One exchange of the terminal's side of a transcript: the command a terminal sent and what
/// answered it.
public struct TerminalExchange: Sendable, Hashable {
    /// The terminal's command (`tgt <`, or `>` in a transcript without `tgt` lines).
    public var command: TranscriptBytes
    /// The 1-based line of the command.
    public var line: Int
    /// The recorded answer (`tgt >` or `<`) and its line; nil when none was recorded (the field
    /// dropped, or the recording was cut short).
    public var answer: TranscriptBytes?
    /// The 1-based line of ``answer``; nil when there is none.
    public var answerLine: Int?
    /// The recorded failure (`!`) in place of an answer, for `>` commands.
    public var failure: TranscriptFailure?
    /// True when the exchange comes from `tgt` lines.
    public var isTarget: Bool
    /// True when an `event target-activated` line comes before this command (and after the
    /// previous one): the card was activated anew and forgets its selection.
    public var activatedBefore: Bool

    func text(_ direction: TranscriptDirection, _ bytes: TranscriptBytes) -> String {
        TranscriptRecord(isTarget ? .target(direction, bytes) : .transmit(direction, bytes)).serialized()
    }
    var commandText: String { text(isTarget ? .incoming : .outgoing, command) }
}

/// Plays a transcript's TERMINAL side against something that answers C-APDUs in this process (a
/// credential's host applets), and checks each answer against the recorded one.
///
/// The terminal side is the `tgt <` commands (the C-APDUs a terminal sent to the emulated card),
/// each answered by the next `tgt >`; a transcript without any `tgt` line uses its `>` commands
/// and their `<` or `!` answers instead (a card read over PC/SC, which an applet can stand in
/// for). Reader pseudo-APDUs (CLA FF) are skipped there: they are for the reader, not the card.
/// `@channel` ids are ignored (one terminal).
public enum TerminalReplay {
    /// The terminal-side exchanges of `transcript`, in file order.
    public static func exchanges(of transcript: Transcript) -> [TerminalExchange] {
        let usesTarget = transcript.lines.contains {
            if case .target? = $0.record?.entry { true } else { false }
        }
        var result: [TerminalExchange] = []
        var pending: Int?
        var activated = false
        for (index, line) in transcript.lines.enumerated() {
            guard let entry = line.record?.entry else { continue }
            let number = transcript.lineNumber(ofBodyIndex: index)
            switch (usesTarget, entry) {
            case (_, .event(let event)) where event.kind == .targetActivated:
                activated = true
            case (true, .target(.incoming, let bytes)), (false, .transmit(.outgoing, let bytes)):
                if !usesTarget, bytes.items.first == .byte(0xFF) {
                    pending = nil
                    continue
                }
                pending = result.count
                result.append(TerminalExchange(
                    command: bytes, line: number, isTarget: usesTarget, activatedBefore: activated))
                activated = false
            case (true, .target(.outgoing, let bytes)), (false, .transmit(.incoming, let bytes)):
                if let i = pending {
                    result[i].answer = bytes
                    result[i].answerLine = number
                }
                pending = nil
            case (false, .failure(let failure)):
                if let i = pending {
                    result[i].failure = failure
                    result[i].answerLine = number
                }
                pending = nil
            default:
                continue
            }
        }
        return result
    }

    /// Sends each recorded terminal command to `answer` and compares the result with the recorded
    /// answer under `options`; stops at the first difference.
    ///
    /// A command with no recorded answer is still sent (the applet's state moves on as it did) but
    /// its answer is not compared. Before anything is sent, the whole transcript is checked.
    ///
    /// - Parameters:
    ///   - transcript: the recording; its `tgt <` lines (or `>` lines when it has no `tgt` lines)
    ///     are the terminal's commands.
    ///   - options: how answers are compared (``ReplayMode/strict`` by default).
    ///   - terminalActivated: called before the first command and at each `event target-activated`
    ///     (host applets forget their selection, as a card does at activation).
    ///   - answer: answers one C-APDU `| CLA | INS | P1 | P2 | [Lc data] | [Le] |` with an R-APDU
    ///     `| data | SW1 | SW2 |`; a thrown error is compared with a recorded `!` line.
    /// - Returns: the number of exchanges replayed.
    /// - Throws: ``ReplayError``: `refusedRedacted` / `refusedWildcard` (a command holds
    ///   `[REDACTED n]` / `??`: the applet must get real bytes) or `endOfTranscript` (no terminal
    ///   commands) before anything is sent; then `mismatch` (another answer, at the answer's line)
    ///   or `failureMismatch`.
    @discardableResult
    public static func run(
        _ transcript: Transcript, options: ReplayOptions = ReplayOptions(),
        terminalActivated: () -> Void = {}, answer: ([UInt8]) throws -> [UInt8]
    ) throws(ReplayError) -> Int {
        let file = transcript.fileName
        let exchanges = exchanges(of: transcript)
        guard !exchanges.isEmpty else {
            throw ReplayError(code: .endOfTranscript, file: file, line: transcript.lastLineNumber,
                              reason: "no terminal commands to replay: write `tgt <` lines (or `>` lines when the file has no `tgt` lines)")
        }
        for e in exchanges {
            if let refusal = refusal(of: e, file: file) { throw refusal }
        }
        terminalActivated()
        for (index, e) in exchanges.enumerated() {
            try replay(e, index: index, file: file, options: options, terminalActivated: terminalActivated, answer: answer)
        }
        return exchanges.count
    }

    /// Why the terminal command of `e` cannot be sent (redacted or wildcard bytes), or nil.
    static func refusal(of e: TerminalExchange, file: String) -> ReplayError? {
        if e.command.containsRedaction {
            return ReplayError(code: .refusedRedacted, file: file, line: e.line, expected: e.commandText,
                               reason: "this command was redacted, and the credential must get the real bytes; re-record it without redaction")
        }
        if e.command.containsWildcard {
            return ReplayError(code: .refusedWildcard, file: file, line: e.line, expected: e.commandText,
                               reason: "this command holds ?? wildcard bytes, which cannot be sent; write the real bytes")
        }
        return nil
    }

    /// Sends exchange number `index` (0-based) to `answer` and compares the result with the recording.
    static func replay(
        _ e: TerminalExchange, index: Int, file: String, options: ReplayOptions,
        terminalActivated: () -> Void, answer: ([UInt8]) throws -> [UInt8]
    ) throws(ReplayError) {
        guard let command = e.command.bytes else { return }  // excluded by the check
        if e.activatedBefore, index > 0 { terminalActivated() }
        let result: Result<[UInt8], any Error>
        do { result = .success(try answer(command)) } catch { result = .failure(error) }
        let line = e.answerLine ?? e.line
        switch (e.answer, e.failure, result) {
        case (let recorded?, _, .success(let actual)):
            let pattern = options.answerPattern(recorded, forCommand: e.command)
            if let at = pattern.firstMismatch(in: actual) {
                throw ReplayError(code: .mismatch, file: file, line: line,
                                  expected: e.text(e.isTarget ? .outgoing : .incoming, recorded),
                                  actual: e.text(e.isTarget ? .outgoing : .incoming, TranscriptBytes(actual)),
                                  reason: "the credential answered differently than recorded (first difference at byte \(at))")
            }
        case (let recorded?, _, .failure(let error)):
            throw ReplayError(code: .failureMismatch, file: file, line: line,
                              expected: e.text(e.isTarget ? .outgoing : .incoming, recorded),
                              actual: "\(error)",
                              reason: "the credential failed where an answer was recorded")
        case (nil, let recorded?, .success(let actual)):
            throw ReplayError(code: .failureMismatch, file: file, line: line,
                              expected: TranscriptRecord(.failure(recorded)).serialized(),
                              actual: e.text(.incoming, TranscriptBytes(actual)),
                              reason: "the credential answered where a failure was recorded")
        default:
            return  // no recorded answer, or a failure met by a failure
        }
    }
}
