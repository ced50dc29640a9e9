import Foundation
import PCSCCore
import SecbridgeCLI
import SecbridgeTesting
import SecbridgeTools
import Testing
import Transcript

/// Standard input on the test's clock: each line is either at hand when the tool asks for it, or
/// comes only after a pause the test ends (``endPause()``). `waitForLine(upTo:)` answers at once:
/// a paused line has not come within the bound (no real time passes), any other has; the bounds
/// asked are kept. `readLine()` at a paused line blocks (at most 30 s) until the test ends the pause.
final class PacedConsole: Console, @unchecked Sendable {
    // @unchecked: everything below is guarded by `condition`.
    private let condition = NSCondition()
    private var lines: [(text: String, paused: Bool)]
    private var pauseEnded = false
    private var waitingInPause = false
    private var outText = ""
    private var errText = ""
    private var asked: [Duration] = []

    /// `lines` in order; a line in `pausedBefore` (0-based) comes after a pause.
    init(_ lines: [String], pausedBefore: Set<Int> = []) {
        self.lines = lines.enumerated().map { ($0.element, pausedBefore.contains($0.offset)) }
    }

    var standardOutput: String { locked { outText } }
    var standardError: String { locked { errText } }
    /// The bounds the tool asked `waitForLine(upTo:)` with.
    var boundsAsked: [Duration] { locked { asked } }

    func out(_ text: String) { locked { outText += text } }
    func err(_ text: String) { locked { errText += text } }

    func waitForLine(upTo bound: Duration) -> Bool {
        locked {
            asked.append(bound)
            guard let next = lines.first else { return true }
            return !next.paused
        }
    }

    func readLine() -> String? {
        condition.lock()
        defer { condition.unlock() }
        guard let next = lines.first else { return nil }
        if next.paused {
            waitingInPause = true
            condition.broadcast()
            let deadline = Date(timeIntervalSinceNow: 30)
            while !pauseEnded && condition.wait(until: deadline) {}
            waitingInPause = false
            guard pauseEnded else { return nil }
            pauseEnded = false
        }
        lines.removeFirst()
        return next.text
    }

    /// Waits (at most `limit`) until the tool blocks in `readLine()` at a paused line.
    func waitUntilPaused(upTo limit: TimeInterval = 30) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        let deadline = Date(timeIntervalSinceNow: limit)
        while !waitingInPause && condition.wait(until: deadline) {}
        return waitingInPause
    }

    /// Ends the pause: the paused line comes (at once, when the pause has not begun yet).
    func endPause() {
        locked {
            pauseEnded = true
            condition.broadcast()
        }
    }

    private func locked<T>(_ body: () -> T) -> T {
        condition.lock()
        defer { condition.unlock() }
        return body()
    }
}

/// Runs the whole tool in process against `desk` with `console` as its standard streams, on a
/// thread of its own; returns the exit status.
func runTool(_ arguments: [String], on desk: SimulatedDesk, console: any Console) async throws -> Int32 {
    let executor = BlockingExecutor(name: "cli-test")
    defer { executor.shutdown() }
    let client = desk.client
    return try await executor.run { SecbridgeTools.main(arguments: arguments, console: console, client: client) }
}

/// The lines of a transcript without their time stamps (`+12.345ms `), header left out.
func untimedRecords(_ file: String) throws -> [String] {
    try Transcript(contentsOfFile: file).serialized().split(separator: "\n").compactMap { line in
        guard line.hasPrefix("+"), let space = line.firstIndex(of: " ") else { return nil }
        return String(line[line.index(after: space)...])
    }
}

/// Runs the tool with `arguments` on `desk`, its standard input `lines` with a pause before the
/// line at `pausedBefore` (0-based): once the tool waits there, `duringPause` runs as another
/// program (on a thread of its own), then the pause ends, also when it threw.
func runPaused<T: Sendable>(
    _ arguments: [String], lines: [String], pausedBefore: Int, on desk: SimulatedDesk,
    duringPause: @escaping @Sendable () throws -> T
) async throws -> (status: Int32, console: PacedConsole, other: Result<T, any Error>) {
    let console = PacedConsole(lines, pausedBefore: [pausedBefore])
    let other = BlockingExecutor(name: "other-program")
    defer { other.shutdown() }
    let otherProgram = Task {
        try await other.run { () throws -> T in
            defer { console.endPause() }
            guard console.waitUntilPaused() else { throw CLIError.failure("the script never paused") }
            return try duringPause()
        }
    }
    let status = try await runTool(arguments, on: desk, console: console)
    return (status, console, await otherProgram.result)
}

/// A desk whose reader has the echo applet's card, and a transcript path in a scratch directory.
struct EchoCardDesk {
    let desk: SimulatedDesk
    let reader: String
    let directory: String
    /// Where a test records (`--record`).
    let transcript: String

    init(_ name: String) async throws {
        desk = try await SimulatedDesk.open()
        reader = desk.names[0]
        try desk.control(.placeCard(uid: [0x04, 0xA1, 0xB2, 0xC3], applet: .echo, id: "card"))
        directory = try scratchDirectory(name)
        transcript = directory + "/\(name).trn"
    }

    /// What the card received, oldest first, `; ` between commands.
    func cardLog() throws -> String? { try desk.control(.cardLog(peer: "card"))["all"] }

    func close() {
        try? FileManager.default.removeItem(atPath: directory)
        desk.close()
    }
}

/// A script read from standard input (`run -`, `shell` from a pipe) keeps its PC/SC transaction
/// only while its next line comes within `ScriptInterpreter.inputHold`: a pause ends it, so another
/// program on the reader is not locked out for as long as the pipe stays open (docs/shell.md §1).
@Suite struct PausedInputTests {
    /// The decision: 200 ms (docs/faults.md §2).
    @Test func theHoldIs200Milliseconds() {
        #expect(ScriptInterpreter.inputHold == .milliseconds(200))
        #expect(ScriptInterpreter.Options().inputHold == .milliseconds(200))
    }

    /// During a pause another program begins its transaction and is answered; the script then runs
    /// its last line, and the recording keeps both exchanges with the release between them.
    @Test(arguments: [["run", "-"], ["shell"]])
    func anotherProgramIsServedWhileAPipedScriptPauses(command: [String]) async throws {
        let setup = try await EchoCardDesk("paused-input")
        defer { setup.close() }
        let (desk, reader, file, client) = (setup.desk, setup.reader, setup.transcript, setup.desk.client)
        let arguments = command[0] == "shell" ? ["shell", "--record", file] : ["run", "--record", file, "-"]
        let lines = ["00 A4 04 00 01 AA", "# a comment after the pause", "00 B0 00 00 01 BB"]
        let (status, console, otherAnswer) = try await runPaused(arguments, lines: lines, pausedBefore: 1, on: desk) {
            let context = try client.establishContext()
            // pcscd (and the in-process client) let SCardConnect wait for a transaction held on
            // the reader, and SCardBeginTransaction too: both give up with SCARD_E_TIMEOUT after
            // the desk's bound (0.6 s here) when the script still holds its transaction.
            let handle = try context.connect(to: reader, share: .shared, protocols: .any)
            try handle.beginTransaction()
            let answer = try handle.transmit([0x00, 0xA4, 0x04, 0x00, 0x01, 0xCC])
            try handle.endTransaction(.leave)
            try handle.disconnect(.leave)
            return answer
        }
        if case .failure(let error) = otherAnswer { Issue.record("the other program was not served during the pause: \(error)") }
        #expect((try? otherAnswer.get()) == [0x00, 0xA4, 0x04, 0x00, 0x01, 0xCC, 0x90, 0x00])
        #expect(status == 0, "\(console.standardError)")
        #expect(console.standardOutput.hasPrefix("> 00 A4 04 00 01 AA\n< 00 A4 04 00 01 AA 90 00\n  SW 90 00: "), "\(console.standardOutput)")
        #expect(console.standardOutput.contains("> 00 B0 00 00 01 BB\n< 00 B0 00 00 01 BB 90 00\n  SW 90 00: "), "\(console.standardOutput)")
        #expect(console.standardError == "secbridge: note: <stdin>:3: the PC/SC transaction was released to wait for input (no line within 0.2 s after line 1) and begun again for this line: other programs could use the card in between, so the lines before and after the pause did not run in one transaction\n")
        // The card saw the other program's command between the script's two.
        #expect(try setup.cardLog() == "00 A4 04 00 01 AA; 00 A4 04 00 01 CC; 00 B0 00 00 01 BB")
        #expect(try untimedRecords(file) == [
            "> 00 A4 04 00 01 AA", "< 00 A4 04 00 01 AA 90 00",
            "event transaction-ended reason=\"waiting for input\"", "event transaction-began",
            "> 00 B0 00 00 01 BB", "< 00 B0 00 00 01 BB 90 00",
        ])
        // Each line was waited for with the hold, the first one too (before any transaction).
        #expect(console.boundsAsked == Array(repeating: ScriptInterpreter.inputHold, count: 4))
    }

    /// The hold is the interpreter's option (`ScriptInterpreter.Options.inputHold`): given 30 ms,
    /// the script asks its input for each line with 30 ms, and the note names it.
    @Test func theHoldIsAnOptionOfTheInterpreter() async throws {
        let setup = try await EchoCardDesk("paused-option")
        defer { setup.close() }
        let console = PacedConsole(["00 A4 04 00 01 AA", "00 B0 00 00 01 BB"], pausedBefore: [1])
        console.endPause()  // the line comes after the hold, with no other program in between
        let client = setup.desk.client
        let executor = BlockingExecutor(name: "cli-test")
        defer { executor.shutdown() }
        let status = try await executor.run { () throws -> Int32 in
            let arguments = try parseArguments(["-"], options: SecbridgeCLI.runCommand.options)
            let invocation = Invocation(arguments: arguments, console: console, path: ["run"], client: client)
            var options = SecbridgeCLI.interpreterOptions(invocation, command: "run")
            options.inputHold = .milliseconds(30)
            var source = ConsoleLines(console: console)
            return try SecbridgeCLI.interpret(&source, invocation: invocation, fileName: "<stdin>", options: options, needsCard: true)
        }
        #expect(status == 0, "\(console.standardError)")
        #expect(console.boundsAsked == Array(repeating: .milliseconds(30), count: 3))
        #expect(console.standardError.hasPrefix("secbridge: note: <stdin>:2: the PC/SC transaction was released to wait for input (no line within 0.03 s after line 1) and begun again for this line"), "\(console.standardError)")
        #expect(try setup.cardLog() == "00 A4 04 00 01 AA; 00 B0 00 00 01 BB")
    }

    /// Another program resets the card during the pause: its state is lost, and the script stops
    /// at its next line with the card-reset words of a run, saying that the transaction had been
    /// released to wait for input; the exchanges before are kept.
    @Test func aCardResetDuringThePauseStopsTheScriptAndSaysWhy() async throws {
        let setup = try await EchoCardDesk("paused-reset")
        defer { setup.close() }
        let (desk, reader, file, client) = (setup.desk, setup.reader, setup.transcript, setup.desk.client)
        let lines = ["00 A4 04 00 01 AA", "00 B0 00 00 01 BB", "00 B0 00 00 01 DD"]
        let (status, console, other) = try await runPaused(["run", "--record", file, "-"], lines: lines, pausedBefore: 1, on: desk) {
            let context = try client.establishContext()
            let handle = try context.connect(to: reader, share: .shared, protocols: .any)
            try handle.beginTransaction()
            try handle.endTransaction(.reset)
            try handle.disconnect(.leave)
        }
        try other.get()
        #expect(status == 1)
        #expect(console.standardOutput.hasPrefix("> 00 A4 04 00 01 AA\n< 00 A4 04 00 01 AA 90 00\n"), "\(console.standardOutput)")
        #expect(!console.standardOutput.contains("BB"), "\(console.standardOutput)")
        #expect(console.standardError == "secbridge: error: <stdin>:2: while the PC/SC transaction was released to wait for input (no line within 0.2 s after line 1), the card was reset by another program (SCARD_W_RESET_CARD): its state is lost (the selected application, a verified PIN, an open secure channel); the exchanges before it are shown and recorded. Run the script again from the start (its SELECT)\n")
        #expect(try setup.cardLog() == "00 A4 04 00 01 AA")
        #expect(try untimedRecords(file) == [
            "> 00 A4 04 00 01 AA", "< 00 A4 04 00 01 AA 90 00",
            "event transaction-ended reason=\"waiting for input\"",
            "event card-reset reason=\"another program, while the transaction was released\"",
        ])
    }

    /// The card is taken away during the pause: the script stops at its next line, and the words
    /// say the card was removed while the transaction was released, not "during the exchange"
    /// (no exchange was on); the exchanges before are kept, and the removal is recorded.
    @Test func aCardRemovedDuringThePauseStopsTheScriptAndSaysWhen() async throws {
        let setup = try await EchoCardDesk("paused-removed")
        defer { setup.close() }
        let (desk, reader, file, client) = (setup.desk, setup.reader, setup.transcript, setup.desk.client)
        let lines = ["00 A4 04 00 01 AA", "00 B0 00 00 01 BB"]
        let (status, console, other) = try await runPaused(["run", "--record", file, "-"], lines: lines, pausedBefore: 1, on: desk) {
            try desk.control(.removeAll)
            // pcscd's presence poll sees it before the pause ends (the in-process one polls on use).
            var states = [ReaderState(readerName: reader)]
            _ = try client.establishContext().getStatusChange(&states, timeout: .zero)
            #expect(!states[0].eventFlags.contains(.present))
        }
        _ = try other.get()
        #expect(status == 1)
        #expect(!console.standardOutput.contains("BB"), "\(console.standardOutput)")
        let error = console.standardError
        #expect(
            error.hasPrefix(
                "secbridge: error: <stdin>:2: while the PC/SC transaction was released to wait for input (no line within 0.2 s after line 1), "
                    + "the card was removed; the exchanges before it are shown and recorded. Hold the card on the reader and run the script again ("),
            "\(error)")
        #expect(!error.contains("during the exchange"), "\(error)")
        #expect(try untimedRecords(file).prefix(3) == [
            "> 00 A4 04 00 01 AA", "< 00 A4 04 00 01 AA 90 00", "event transaction-ended reason=\"waiting for input\"",
        ])
        #expect(try untimedRecords(file).last?.hasPrefix("event card-removed") == true)
    }

    /// Lines that come within the hold (a script given whole, or a pipe faster than 200 ms a line)
    /// run in one transaction: another program sending all the while never lands between them.
    @Test func aScriptWhoseLinesComeWithinTheHoldIsOneTransaction() async throws {
        // Scaled time: another program sends all the while from a thread of its own, and the
        // command's thread between its PC/SC calls is no participant of a virtual clock, which
        // would let the other program's 60 s transaction wait end at once (seen in a sharded run).
        let desk = try await SimulatedDesk.open(time: .scaled(SimulatedDesk.defaultTimeScale))
        defer { desk.close() }
        let reader = desk.names[0]
        try desk.control(.placeCard(uid: [0x04, 0xA1, 0xB2, 0xC3], applet: .echo, id: "card"))
        let script = ["00 A4 04 00 01 A1", "00 A4 04 00 01 A2", "reset", "00 A4 04 00 01 A3"]
        try await whileAnotherProgramSends([0x00, 0xA4, 0x04, 0x00, 0x01, 0xCC], to: reader, on: desk) {
            for _ in 0..<3 {
                let console = PacedConsole(script)
                let status = try await runTool(["run", "-"], on: desk, console: console)
                #expect(status == 0, "\(console.standardError)")
                #expect(console.standardError == "")
                #expect(console.boundsAsked == Array(repeating: ScriptInterpreter.inputHold, count: script.count + 1))
            }
        }
        let reply = try desk.control(.cardLog(peer: "card"))
        let log = reply["all"]?.components(separatedBy: "; ") ?? []
        let ours = ["00 A4 04 00 01 A1", "00 A4 04 00 01 A2", "00 A4 04 00 01 A3"]
        let starts = log.indices.filter { log[$0] == ours[0] }
        // At most 2 000 of the other program's commands and 9 of ours: the card (4096) kept all.
        #expect(reply["dropped"] == "0", "\(reply)")
        #expect(starts.count == 3, "\(log.count) commands")
        for start in starts {
            #expect(Array(log[start..<min(log.count, start + ours.count)]) == ours)
        }
        #expect(log.contains("00 A4 04 00 01 CC"), "the other program was served too")
    }
}
