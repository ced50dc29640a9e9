import Synchronization
import Transcript

// A terminal that replays the terminal commands of a transcript: from a `Transcript` in memory
// (``ExternalTerminal/init(transcript:channel:name:)``) or from a file read as the run goes
// (``ExternalTerminal/init(transcriptFile:name:)``, `place-terminal transcript=`). Both check the
// records and pair them the same way, here.

extension ExternalTerminal {
    /// A transcript file checked for a terminal to replay (``ExternalTerminal/init(transcriptFile:name:)``):
    /// read once whole, line by line, keeping counts only, not the exchanges.
    ///
    /// The terminal's commands are the `tgt <` lines (each answered by the next `tgt >`), or, in a
    /// transcript without `tgt <` lines, the `>` lines (answered by `<`), of `@channel` when one
    /// is given (the format: Fixtures/README.md).
    public struct TranscriptFile: Sendable {
        /// The file, as the terminal's readings reopen it.
        public let file: TranscriptReplayFile
        /// The channel whose lines are replayed; nil takes every line.
        public var channel: String? { file.channelID }
        /// The terminal's commands in the file.
        public var commandCount: Int { check.commandCount }
        let check: TranscriptTerminalCheck

        /// Reads `path` once whole, checking every line.
        /// - Parameters:
        ///   - path: the transcript file.
        ///   - channel: replay only the lines of `@channel`; nil takes every line.
        /// - Throws: `TranscriptParseError` for the first bad line, or `unreadable`.
        public init(contentsOfFile path: String, channel: String? = nil) throws(TranscriptParseError) {
            var check = TranscriptTerminalCheck(channel: channel)
            file = try TranscriptReplayFile(contentsOfFile: path, channelID: channel) { _, line in
                if let record = line.record { check.read(record) }
            }
            self.check = check
        }
    }

    /// A terminal replaying a transcript file's terminal commands as
    /// ``init(transcript:channel:name:)`` does, reading them from the file as the run goes: it
    /// holds the command it sent and the next one read, not the file (docs/transcript-diff.md
    /// §7). ``script`` is nil. The file is read anew at each activation; should it change after
    /// it was checked, the run plays what it reads then, and ends with
    /// ``Result/failed(step:stage:reason:)`` at a line that no longer parses, a command that can
    /// no longer be sent, or a count of commands other than the checked one (a file cut short at
    /// a line's end never passes).
    /// - Parameters:
    ///   - transcriptFile: the file, checked.
    ///   - name: the name in reports; by default the path.
    /// - Throws: ``ExternalTerminalError`` when the transcript holds no command to send, or a
    ///   command with wildcard or redacted bytes (a terminal must send concrete bytes).
    public convenience init(transcriptFile: TranscriptFile, name: String? = nil) throws(ExternalTerminalError) {
        let usesTarget = try transcriptFile.check.sideToReplay(fileName: transcriptFile.file.fileName)
        self.init(name: name ?? transcriptFile.file.fileName,
                  program: TranscriptFileProgram(file: transcriptFile.file, usesTarget: usesTarget,
                                                 commandCount: transcriptFile.commandCount))
    }

    /// For a terminal reading a transcript file as it goes: the most steps it held at once
    /// (read from the file and not yet answered or passed over); nil for other terminals.
    var transcriptStepsHeld: Int? { (initialProgram as? TranscriptFileProgram)?.held.maximum }
}

/// What a terminal checks in a transcript's records before it replays them: which side it plays
/// (`tgt <`, else `>`), how many commands that side has, and the first one it cannot send.
struct TranscriptTerminalCheck: Sendable {
    let channel: String?
    private var targetCommands = 0
    private var transmitCommands = 0
    private var unsendableTarget: TranscriptBytes?
    private var unsendableTransmit: TranscriptBytes?

    init(channel: String?) { self.channel = channel }

    /// True when the terminal plays the `tgt <` commands, false for the `>` ones.
    var usesTarget: Bool { targetCommands > 0 }
    /// The commands of the side played.
    var commandCount: Int { usesTarget ? targetCommands : transmitCommands }

    mutating func read(_ record: TranscriptRecord) {
        if let channel, record.channel != channel { return }
        switch record.entry {
        case .target(.incoming, let bytes):
            targetCommands += 1
            if unsendableTarget == nil, bytes.bytes == nil { unsendableTarget = bytes }
        case .transmit(.outgoing, let bytes):
            transmitCommands += 1
            if unsendableTransmit == nil, bytes.bytes == nil { unsendableTransmit = bytes }
        default:
            return
        }
    }

    /// The side to replay (true: `tgt <`).
    /// - Throws: ``ExternalTerminalError`` when there is no command, or one with wildcard or redacted bytes.
    func sideToReplay(fileName: String) throws(ExternalTerminalError) -> Bool {
        guard commandCount > 0 else {
            throw ExternalTerminalError(reason: "\(fileName) holds no `tgt <` nor `>` command to send")
        }
        if let command = usesTarget ? unsendableTarget : unsendableTransmit {
            throw ExternalTerminalError(
                reason: "\(fileName): the command \(command) has wildcard or redacted bytes; a terminal must send concrete bytes")
        }
        return usesTarget
    }
}

/// Pairs a transcript's terminal commands with their answers as the records come, in file
/// order: a command (`tgt <`, or `>`) waits for the next answer of its side (`tgt >`, or `<`);
/// the next command, or the end, leaves it with none (any answer is then accepted). An answer
/// with no command waiting is passed over. It holds one command at a time.
struct TranscriptStepPairing {
    /// A command and its recorded answer (nil: none recorded).
    typealias Pair = (command: TranscriptBytes, answer: TranscriptBytes?)

    let usesTarget: Bool
    let channel: String?
    private var waiting: TranscriptBytes?

    init(usesTarget: Bool, channel: String?) {
        self.usesTarget = usesTarget
        self.channel = channel
    }

    /// True while a command read waits for its answer.
    var isHolding: Bool { waiting != nil }

    /// Reads one record; returns the command (and its answer) it completes, if any.
    mutating func read(_ record: TranscriptRecord) -> Pair? {
        if let channel, record.channel != channel { return nil }
        switch (record.entry, usesTarget) {
        case (.target(.incoming, let bytes), true), (.transmit(.outgoing, let bytes), false):
            defer { waiting = bytes }
            return waiting.map { ($0, nil) }
        case (.target(.outgoing, let bytes), true), (.transmit(.incoming, let bytes), false):
            defer { waiting = nil }
            return waiting.map { ($0, bytes) }
        default:
            return nil
        }
    }

    /// The command still waiting at the end of the records, with no answer.
    mutating func end() -> Pair? {
        defer { waiting = nil }
        return waiting.map { ($0, nil) }
    }
}

/// The most steps a ``TranscriptStepReader`` held at once, over every reading of a terminal.
final class HeldSteps: Sendable {
    private let most = Mutex(0)
    var maximum: Int { most.withLock { $0 } }
    func record(_ count: Int) { most.withLock { $0 = max($0, count) } }
}

/// One reading of a transcript file by a terminal: pulls its steps one at a time (``next()``).
/// The reader is not Sendable: it lives behind a mutex (the terminal calls it with its own lock held).
final class TranscriptStepReader: Sendable {
    private struct Reading {
        let lines: TranscriptReplayFile.Lines
        var pairing: TranscriptStepPairing
        var atEnd = false
        /// The commands handed out so far.
        var commands = 0
    }

    private let reading: Mutex<Reading>
    private let fileName: String
    private let held: HeldSteps
    private let commandCount: Int

    /// Opens a new reading of `file`, whose check counted `commandCount` commands of the side played.
    /// - Throws: `ReplayError` `unreadable` when the file no longer opens.
    init(_ file: TranscriptReplayFile, usesTarget: Bool, commandCount: Int, held: HeldSteps) throws(ReplayError) {
        reading = Mutex(Reading(lines: try file.lines(), pairing: TranscriptStepPairing(usesTarget: usesTarget, channel: file.channelID)))
        fileName = file.fileName
        self.held = held
        self.commandCount = commandCount
    }

    /// The next step, nil after the last.
    /// - Throws: ``ExternalTerminalError`` when the file no longer reads as it did when it was
    ///   checked, a command now has wildcard or redacted bytes, or the file now holds more or
    ///   fewer commands than the check counted.
    func next() throws(ExternalTerminalError) -> ExternalTerminal.Step? {
        let held = held
        let fileName = fileName
        let commandCount = commandCount
        return try reading.withLock { (r) throws(ExternalTerminalError) -> ExternalTerminal.Step? in
            func changed(_ now: String) -> ExternalTerminalError {
                ExternalTerminalError(
                    reason: "\(fileName) held \(commandCount) terminal command\(commandCount == 1 ? "" : "s") when it was checked and now \(now): "
                        + "was the file changed after the terminal was placed? Place it again")
            }
            var pair: TranscriptStepPairing.Pair?
            while pair == nil, !r.atEnd {
                let next: (line: Int, content: TranscriptLine)?
                do throws(ReplayError) { next = try r.lines.next() } catch { throw ExternalTerminalError(reason: error.description) }
                if let (_, line) = next {
                    guard let record = line.record else { continue }
                    pair = r.pairing.read(record)
                    // The step handed out and the command read after it.
                    held.record((pair == nil ? 0 : 1) + (r.pairing.isHolding ? 1 : 0))
                } else {
                    r.atEnd = true
                    pair = r.pairing.end()
                }
            }
            guard let pair else {
                // A file cut short at the end of a line reads without error: the count tells.
                if r.commands < commandCount { throw changed("\(r.commands)") }
                return nil
            }
            guard r.commands < commandCount else { throw changed("more") }
            r.commands += 1
            guard let bytes = pair.command.bytes else {
                throw ExternalTerminalError(
                    reason: "\(fileName): the command \(pair.command) has wildcard or redacted bytes; a terminal must send concrete bytes (was the file changed after it was checked?)")
            }
            return ExternalTerminal.Step(command: bytes, expectedResponse: pair.answer)
        }
    }
}

/// The program of a terminal reading its transcript file as it goes: a ``ScriptProgram`` whose
/// steps come from a new reading of the file at each activation (``TranscriptStepReader``).
struct TranscriptFileProgram: TerminalProgram {
    let file: TranscriptReplayFile
    let usesTarget: Bool
    /// The commands the file's check counted on the side played.
    let commandCount: Int
    let held = HeldSteps()
    private var reader: TranscriptStepReader?
    private var current: ExternalTerminal.Step?
    private var step = 0

    init(file: TranscriptReplayFile, usesTarget: Bool, commandCount: Int) {
        self.file = file
        self.usesTarget = usesTarget
        self.commandCount = commandCount
    }

    mutating func start() -> TerminalAction {
        step = 0
        do throws(ReplayError) {
            reader = try TranscriptStepReader(file, usesTarget: usesTarget, commandCount: commandCount, held: held)
        } catch {
            return .finish(.failed(stage: "reading \(file.fileName)", reason: error.description, report: nil))
        }
        return advance()
    }

    mutating func receive(_ response: [UInt8]) -> TerminalAction {
        if let outcome = current?.mismatch(response, step: step) { return .finish(outcome) }
        step += 1
        return advance()
    }

    private mutating func advance() -> TerminalAction {
        do throws(ExternalTerminalError) {
            current = try reader?.next()
        } catch {
            return .finish(.failed(stage: "reading \(file.fileName)", reason: error.reason, report: nil))
        }
        return current.map { .send($0.command) } ?? .finish(.passedScript)
    }
}
