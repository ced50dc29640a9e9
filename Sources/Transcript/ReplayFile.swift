import PCSCCore

/// A transcript file replayed without holding it in memory.
///
/// ``init(contentsOfFile:channelID:inspect:)`` reads the file once, line by line: every parse
/// error surfaces there, before anything is sent, and so does what a replay refuses
/// (``LiveReplay/check(_:channelID:)``'s rules for the channel layer, ``TerminalReplay``'s for the
/// terminal side). Each replay then reads the file again, one exchange at a time
/// (``LiveReplay/run(_:on:options:describeFailure:)``,
/// `TerminalReplay.run(_:options:terminalActivated:answer:)`): memory holds one read buffer and the
/// exchanges whose answer has not come yet (one per channel, and those recorded on other channels
/// meanwhile), whatever the file's size.
public struct TranscriptReplayFile: Sendable {
    /// The path given, as errors cite it.
    public let fileName: String
    /// The header fields.
    public let header: TranscriptHeader
    /// Commands of the channel layer (`>` and `ctl … >`) on the chosen channel(s).
    public let commandCount: Int
    /// The channel replayed; nil takes every channel-layer line.
    public let channelID: String?
    /// The 1-based number of the file's last line.
    let lastLine: Int
    /// Lines of channel-layer commands that no answer follows.
    let unanswered: Set<Int>
    /// The first command a live replay refuses (``LiveReplay/check(_:channelID:)``), if any.
    let liveRefusal: ReplayError?
    /// True when the file holds `tgt` lines: the terminal side is `tgt <`, else `>`.
    let usesTarget: Bool
    /// The terminal-side commands (``TerminalReplay/exchanges(of:)``) and the first one refused.
    let terminalCommandCount: Int
    let terminalRefusal: ReplayError?

    /// Reads `path` once whole, checking every line.
    /// - Parameters:
    ///   - path: the transcript file.
    ///   - channelID: replay only the lines of `@channelID`; nil takes every channel-layer line.
    ///   - inspect: called with each body line and its 1-based number, in order (for checks of the
    ///     caller's own, e.g. that commands are well-formed APDUs).
    /// - Throws: ``TranscriptParseError`` for the first bad line, or `unreadable`.
    public init(
        contentsOfFile path: String, channelID: String? = nil, inspect: (Int, TranscriptLine) -> Void = { _, _ in }
    ) throws(TranscriptParseError) {
        let reader = try TranscriptFileReader(contentsOfFile: path)
        fileName = path
        header = reader.header
        self.channelID = channelID
        var last = 1 + reader.header.fields.count
        var commands = 0
        var pending = PerChannel<RecordedExchange>()
        var commandRefusal: ReplayError?
        var usesTarget = false
        // The terminal side, both ways until the end says which applies: `tgt <` and `>`.
        var targetCommands = 0, transmitCommands = 0
        var targetRefusal: ReplayError?, transmitRefusal: ReplayError?
        while let (number, line) = try reader.next() {
            inspect(number, line)
            last = number
            guard let record = line.record else { continue }
            switch record.entry {
            case .target(.incoming, let bytes):
                usesTarget = true
                targetCommands += 1
                let e = TerminalExchange(command: bytes, line: number, isTarget: true, activatedBefore: false)
                if targetRefusal == nil { targetRefusal = TerminalReplay.refusal(of: e, file: path) }
            case .target:
                usesTarget = true
            case .transmit(.outgoing, let bytes) where bytes.firstItem != .byte(0xFF):
                transmitCommands += 1
                let e = TerminalExchange(command: bytes, line: number, isTarget: false, activatedBefore: false)
                if transmitRefusal == nil { transmitRefusal = TerminalReplay.refusal(of: e, file: path) }
            default:
                break
            }
            if let channelID, record.channel != channelID { continue }
            switch record.entry {
            case .transmit(.outgoing, let b), .control(_, .outgoing, let b):
                commands += 1
                let kind: RecordedExchange.Kind = if case .control(let code, _, _) = record.entry { .control(code) } else { .transmit }
                // An answer is assumed here; a missing one is found at the end.
                let e = RecordedExchange(kind: kind, command: b, line: number, outcome: .answer(TranscriptBytes([]), line: 0))
                if commandRefusal == nil { commandRefusal = LiveReplay.refusal(of: e, file: path) }
                pending[record.channel] = RecordedExchange(kind: kind, command: b, line: number, outcome: .none)
            case .transmit(.incoming, _), .control(_, .incoming, _), .failure:
                pending[record.channel] = nil
            default:
                break
            }
        }
        var unanswered = Set<Int>()
        var firstUnanswered: RecordedExchange?
        pending.forEachValue { e in
            unanswered.insert(e.line)
            if firstUnanswered.map({ e.line < $0.line }) ?? true { firstUnanswered = e }
        }
        if let e = firstUnanswered, commandRefusal.map({ e.line < $0.line }) ?? true {
            commandRefusal = LiveReplay.refusal(of: e, file: path)
        }
        lastLine = last
        commandCount = commands
        self.unanswered = unanswered
        liveRefusal = commandRefusal
        self.usesTarget = usesTarget
        terminalCommandCount = usesTarget ? targetCommands : transmitCommands
        terminalRefusal = usesTarget ? targetRefusal : transmitRefusal
    }

    /// Throws what a live replay refuses before anything is sent: the first command with
    /// `[REDACTED n]` or `??` bytes, or with no recorded answer (``LiveReplay/check(_:channelID:)``).
    /// - Throws: ``ReplayError`` `refusedRedacted`, `refusedWildcard` or `noRecordedAnswer`.
    public func checkLive() throws(ReplayError) {
        if let liveRefusal { throw liveRefusal }
    }

    /// Calls `body` with each body line of a new reading of the file.
    /// - Throws: ``ReplayError`` `unreadable` when the file no longer reads (it changed since it was
    ///   checked); what `body` throws.
    private func forEachLine(_ body: (Int, TranscriptLine) throws(ReplayError) -> Void) throws(ReplayError) {
        func unreadable(_ error: TranscriptParseError) -> ReplayError {
            ReplayError(code: .unreadable, file: fileName, line: error.line,
                        reason: "the file no longer reads as it did when it was checked (\(error.reason)): was it changed during the replay?")
        }
        let reader: TranscriptFileReader
        do { reader = try TranscriptFileReader(contentsOfFile: fileName) } catch { throw unreadable(error) }
        while true {
            let next: (line: Int, content: TranscriptLine)?
            do { next = try reader.next() } catch { throw unreadable(error) }
            guard let next else { return }
            try body(next.line, next.content)
        }
    }

    /// The channel-layer exchanges (``Transcript/recordedExchanges(channel:)``), in the order of
    /// their commands, each handed out once its answer was read.
    func forEachRecordedExchange(_ body: (RecordedExchange) throws(ReplayError) -> Void) throws(ReplayError) {
        var queue: [RecordedExchange] = []
        var head = 0
        var pending = PerChannel<Int>()
        try forEachLine { (number, line) throws(ReplayError) in
            guard let record = line.record else { return }
            if let channelID, record.channel != channelID { return }
            switch record.entry {
            case .transmit(.outgoing, let b):
                if !unanswered.contains(number) { pending[record.channel] = queue.count }
                queue.append(RecordedExchange(kind: .transmit, command: b, line: number, outcome: .none))
            case .control(let code, .outgoing, let b):
                if !unanswered.contains(number) { pending[record.channel] = queue.count }
                queue.append(RecordedExchange(kind: .control(code), command: b, line: number, outcome: .none))
            case .transmit(.incoming, let b), .control(_, .incoming, let b):
                if let i = pending.removeValue(for: record.channel) { queue[i].outcome = .answer(b, line: number) }
            case .failure(let f):
                if let i = pending.removeValue(for: record.channel) { queue[i].outcome = .failure(f, line: number) }
            case .target, .initiator, .event, .reader:
                return
            }
            while head < queue.count {
                if case .none = queue[head].outcome, !unanswered.contains(queue[head].line) { break }
                try body(queue[head])
                head += 1
            }
            if head == queue.count {
                queue.removeAll(keepingCapacity: true)
                head = 0
            }
        }
        while head < queue.count {
            try body(queue[head])
            head += 1
        }
    }

    /// The terminal-side exchanges (``TerminalReplay/exchanges(of:)``), in order, each handed out
    /// once its answer (or the next command) was read.
    func forEachTerminalExchange(_ body: (TerminalExchange) throws(ReplayError) -> Void) throws(ReplayError) {
        var current: TerminalExchange?
        var activated = false
        let usesTarget = usesTarget
        try forEachLine { (number, line) throws(ReplayError) in
            guard let entry = line.record?.entry else { return }
            switch (usesTarget, entry) {
            case (_, .event(let event)) where event.kind == .targetActivated:
                activated = true
            case (true, .target(.incoming, let bytes)), (false, .transmit(.outgoing, let bytes)):
                if let e = current { try body(e) }
                current = nil
                if !usesTarget, bytes.firstItem == .byte(0xFF) { return }
                current = TerminalExchange(command: bytes, line: number, isTarget: usesTarget, activatedBefore: activated)
                activated = false
            case (true, .target(.outgoing, let bytes)), (false, .transmit(.incoming, let bytes)):
                if var e = current {
                    e.answer = bytes
                    e.answerLine = number
                    try body(e)
                }
                current = nil
            case (false, .failure(let failure)):
                if var e = current {
                    e.failure = failure
                    e.answerLine = number
                    try body(e)
                }
                current = nil
            default:
                return
            }
        }
        if let e = current { try body(e) }
    }
}

extension LiveReplay {
    /// Sends the recorded commands of a file to `channel` and compares the answers under `options`,
    /// reading the file line by line; stops at the first difference. The same replay as
    /// ``run(_:on:channelID:options:describeFailure:)`` in memory bounded independently of the file.
    ///
    /// - Returns: the number of exchanges replayed.
    /// - Throws: ``ReplayError``: those of ``TranscriptReplayFile/checkLive()`` before anything is
    ///   sent; then `mismatch` or `failureMismatch`, naming the answer's line; `unreadable` when
    ///   the file changed since it was checked.
    @discardableResult
    public static func run(
        _ file: TranscriptReplayFile, on channel: any CardChannel, options: ReplayOptions = ReplayOptions(),
        describeFailure: (any Error) -> TranscriptFailure = TranscriptRecorder.defaultFailureDescription
    ) throws(ReplayError) -> Int {
        try file.checkLive()
        var count = 0
        try file.forEachRecordedExchange { (e) throws(ReplayError) in
            try replay(e, file: file.fileName, on: channel, options: options, describeFailure: describeFailure)
            count += 1
        }
        return count
    }
}

extension TerminalReplay {
    /// Plays the terminal side of a file (``run(_:options:terminalActivated:answer:)``), reading
    /// it line by line: memory does not grow with the file.
    ///
    /// - Returns: the number of exchanges replayed.
    /// - Throws: ``ReplayError``: `endOfTranscript`, `refusedRedacted` or `refusedWildcard` before
    ///   anything is sent; then `mismatch` or `failureMismatch`; `unreadable` when the file changed
    ///   since it was checked.
    @discardableResult
    public static func run(
        _ file: TranscriptReplayFile, options: ReplayOptions = ReplayOptions(),
        terminalActivated: () -> Void = {}, answer: ([UInt8]) throws -> [UInt8]
    ) throws(ReplayError) -> Int {
        guard file.terminalCommandCount > 0 else {
            throw ReplayError(code: .endOfTranscript, file: file.fileName, line: file.lastLine,
                              reason: "no terminal commands to replay: write `tgt <` lines (or `>` lines when the file has no `tgt` lines)")
        }
        if let refusal = file.terminalRefusal { throw refusal }
        terminalActivated()
        var index = 0
        try file.forEachTerminalExchange { (e) throws(ReplayError) in
            try replay(e, index: index, file: file.fileName, options: options, terminalActivated: terminalActivated, answer: answer)
            index += 1
        }
        return index
    }
}
