import PCSCCore
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

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
        let before = CheckedFiles.identity(of: path, channelID: channelID)
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
        // Kept for ``checked(contentsOfFile:channelID:)`` when the file did not change meanwhile.
        if let before, before == CheckedFiles.identity(of: path, channelID: channelID) { CheckedFiles.remember(self, as: before) }
    }

    /// The file at `path` as checked: the result of an earlier check in this process when the
    /// file is the same one (by any path) and unchanged since (device, inode, size, modification
    /// and status change times; errors then cite the path that check was given), else
    /// a new check (``init(contentsOfFile:channelID:inspect:)``). `replay --against simulated`
    /// checks the file, then places a card that answers from it: the card reads the file once,
    /// as the APDUs come, not twice.
    /// - Parameters:
    ///   - path: the transcript file.
    ///   - channelID: replay only the lines of `@channelID`; nil takes every channel-layer line.
    /// - Throws: ``TranscriptParseError`` for the first bad line, or `unreadable`.
    public static func checked(contentsOfFile path: String, channelID: String? = nil) throws(TranscriptParseError) -> TranscriptReplayFile {
        if let identity = CheckedFiles.identity(of: path, channelID: channelID),
           let file = CheckedFiles.recent.withLock({ $0.first { $0.identity == identity }?.file }) {
            return file
        }
        return try TranscriptReplayFile(contentsOfFile: path, channelID: channelID)
    }

    /// Throws what a live replay refuses before anything is sent: the first command with
    /// `[REDACTED n]` or `??` bytes, or with no recorded answer (``LiveReplay/check(_:channelID:)``).
    /// - Throws: ``ReplayError`` `refusedRedacted`, `refusedWildcard` or `noRecordedAnswer`.
    public func checkLive() throws(ReplayError) {
        if let liveRefusal { throw liveRefusal }
    }

    /// A new reading of the file's body lines, pulled one at a time: what this file's replays
    /// read, for a caller that pairs the lines its own way (the simulator's external terminal,
    /// `ExternalTerminal(transcriptFile:name:)`). It holds one read buffer.
    /// - Throws: ``ReplayError`` `unreadable` when the file no longer opens or reads.
    public func lines() throws(ReplayError) -> Lines {
        do { return Lines(self, try TranscriptFileReader(contentsOfFile: fileName)) } catch { throw unreadable(error) }
    }

    /// One reading of a ``TranscriptReplayFile``'s body lines (``TranscriptReplayFile/lines()``).
    public final class Lines {
        private let file: TranscriptReplayFile
        private let reader: TranscriptFileReader

        fileprivate init(_ file: TranscriptReplayFile, _ reader: TranscriptFileReader) {
            self.file = file
            self.reader = reader
        }

        /// The next body line (blank, comment or record) and its 1-based number, nil at the end.
        /// - Throws: ``ReplayError`` `unreadable` when the file no longer reads as it did when it
        ///   was checked.
        public func next() throws(ReplayError) -> (line: Int, content: TranscriptLine)? {
            do { return try reader.next() } catch { throw file.unreadable(error) }
        }
    }

    fileprivate func unreadable(_ error: TranscriptParseError) -> ReplayError {
        ReplayError(code: .unreadable, file: fileName, line: error.line,
                    reason: "the file no longer reads as it did when it was checked (\(error.reason)): was it changed during the replay?")
    }

    /// Calls `body` with each body line of a new reading of the file.
    /// - Throws: ``ReplayError`` `unreadable` when the file no longer reads (it changed since it was
    ///   checked); what `body` throws.
    private func forEachLine(_ body: (Int, TranscriptLine) throws(ReplayError) -> Void) throws(ReplayError) {
        let lines = try self.lines()
        while let next = try lines.next() { try body(next.line, next.content) }
    }

    /// The channel-layer exchanges (``Transcript/recordedExchanges(channel:)``), in the order of
    /// their commands, each handed out once its answer was read.
    func forEachRecordedExchange(_ body: (RecordedExchange) throws(ReplayError) -> Void) throws(ReplayError) {
        let stream = try RecordedExchangeStream(self)
        while let e = try stream.next() { try body(e) }
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

/// The last few files checked in this process, for ``TranscriptReplayFile/checked(contentsOfFile:channelID:)``.
enum CheckedFiles {
    /// What makes a check reusable: the same file (by any path), unchanged, and the same channel.
    struct Identity: Hashable, Sendable {
        var channelID: String?
        var device: UInt64
        var inode: UInt64
        var size: Int64
        var modified: Int64
        var modifiedNanoseconds: Int64
        /// The status change time: moves with every write, and cannot be set back as mtime can.
        var changed: Int64
        var changedNanoseconds: Int64
    }

    /// The most files remembered (each entry is a few hundred bytes).
    static let capacity = 4
    static let recent = Mutex<[(identity: Identity, file: TranscriptReplayFile)]>([])

    /// `path`'s identity by stat(2), nil when it cannot be taken.
    static func identity(of path: String, channelID: String?) -> Identity? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return Identity(channelID: channelID, device: UInt64(info.st_dev), inode: UInt64(info.st_ino),
                        size: Int64(info.st_size), modified: Int64(info.st_mtim.tv_sec), modifiedNanoseconds: Int64(info.st_mtim.tv_nsec),
                        changed: Int64(info.st_ctim.tv_sec), changedNanoseconds: Int64(info.st_ctim.tv_nsec))
    }

    static func remember(_ file: TranscriptReplayFile, as identity: Identity) {
        recent.withLock { recent in
            recent.removeAll { $0.identity == identity }
            recent.append((identity, file))
            if recent.count > capacity { recent.removeFirst(recent.count - capacity) }
        }
    }
}

/// The channel-layer exchanges of a ``TranscriptReplayFile`` pulled one at a time from a new
/// reading of the file (``next()``), in the order of their commands, each once its answer was read.
///
/// Memory holds one read buffer and the exchanges read but not yet handed out: those whose answer
/// has not come yet (one per channel) and those recorded on other channels meanwhile. A command
/// with no answer in the whole file (``TranscriptReplayFile`` found it when it checked the file)
/// holds nothing up. ``maximumHeld`` records the most held at once.
final class RecordedExchangeStream {
    private let file: TranscriptReplayFile
    private let lines: TranscriptReplayFile.Lines
    /// The exchanges read and not yet handed out start at `queue[head]`; `queue[i]` is the
    /// exchange numbered `dropped + i` in command order.
    private var queue: [RecordedExchange] = []
    private var head = 0
    private var dropped = 0
    /// The number of each channel's command that waits for its answer.
    private var pending = PerChannel<Int>()
    private var atEnd = false
    /// The most exchanges held at once (read, not yet handed out).
    private(set) var maximumHeld = 0

    /// Opens a new reading of `file`.
    /// - Throws: ``ReplayError`` `unreadable` when the file no longer opens.
    init(_ file: TranscriptReplayFile) throws(ReplayError) {
        self.file = file
        lines = try file.lines()
    }

    /// The next exchange, nil after the last.
    /// - Throws: ``ReplayError`` `unreadable` when the file no longer reads as it did when it was checked.
    func next() throws(ReplayError) -> RecordedExchange? {
        while true {
            if head < queue.count {
                let e = queue[head]
                if atEnd || file.unanswered.contains(e.line) || !isAwaitingAnswer(e) {
                    head += 1
                    compact()
                    return e
                }
            } else if atEnd {
                return nil
            }
            guard let (number, line) = try lines.next() else {
                atEnd = true
                continue
            }
            read(line, number: number)
        }
    }

    private func isAwaitingAnswer(_ e: RecordedExchange) -> Bool {
        if case .none = e.outcome { return true }
        return false
    }

    private func read(_ line: TranscriptLine, number: Int) {
        guard let record = line.record else { return }
        if let channelID = file.channelID, record.channel != channelID { return }
        switch record.entry {
        case .transmit(.outgoing, let b):
            enqueue(RecordedExchange(kind: .transmit, command: b, line: number, outcome: .none), channel: record.channel)
        case .control(let code, .outgoing, let b):
            enqueue(RecordedExchange(kind: .control(code), command: b, line: number, outcome: .none), channel: record.channel)
        case .transmit(.incoming, let b), .control(_, .incoming, let b):
            if let n = pending.removeValue(for: record.channel) { queue[n - dropped].outcome = .answer(b, line: number) }
        case .failure(let f):
            if let n = pending.removeValue(for: record.channel) { queue[n - dropped].outcome = .failure(f, line: number) }
        case .target, .initiator, .event, .reader:
            return
        }
    }

    private func enqueue(_ e: RecordedExchange, channel: String?) {
        if !file.unanswered.contains(e.line) { pending[channel] = dropped + queue.count }
        queue.append(e)
        maximumHeld = max(maximumHeld, queue.count - head)
    }

    /// Drops the exchanges handed out: all of them once the queue is empty, else once they are
    /// most of it (so a long wait on one channel costs no quadratic moves).
    private func compact() {
        if head == queue.count {
            dropped += queue.count
            queue.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 1024 && head * 2 >= queue.count {
            dropped += head
            queue.removeFirst(head)
            head = 0
        }
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
