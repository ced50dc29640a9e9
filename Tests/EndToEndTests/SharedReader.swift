import Foundation
import PCSC
import PCSCSandbox
import SecbridgeCLI
import SecbridgeTools
import Testing

/// Every suite that uses the shared vpcd reader and its vicc card is nested in this one, so that
/// `.serialized` covers them all: one test at a time touches the card (swift test runs suites in
/// parallel otherwise).
@Suite(.serialized, .needsPrivatePCSCD) enum SharedReader {}

extension Trait where Self == ConditionTrait {
    /// The suites that need a private pcscd (the shared reader group, the harness, monitoring across
    /// pcscd restarts, `secbridge simulate`): skipped, with the reason, where none can start
    /// (`SECBRIDGE_NO_PCSCD=1`, no pcscd, no root and no user namespaces; see PCSCDAvailability).
    static var needsPrivatePCSCD: Self {
        .enabled(if: PCSCDAvailability.isAvailable, Comment(rawValue: PCSCDAvailability.unavailableReason ?? ""))
    }
}

/// Checks that the binaries the tests run were built (no pcscd is started).
func requireBuiltBinaries() throws {
    _ = try secbridgeBinary()
}

/// The capture directories left in /tmp (each capture removes its own on every way out):
/// those whose owner (the pid in their `owner` file) has ended. A capture still running in
/// another test process (scripts/sharded-test.sh runs several side by side) owns its
/// directory and is not counted; nor is one whose owner file is not written yet.
func leftoverCaptureDirectories() -> Set<String> {
    Set(((try? FileManager.default.contentsOfDirectory(atPath: "/tmp")) ?? []).filter { name in
        guard name.hasPrefix("secbridge-capture-") && !name.hasPrefix("secbridge-capture-test-") else { return false }
        guard let text = try? String(contentsOfFile: "/tmp/\(name)/owner", encoding: .utf8),
              let owner = pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines)), owner > 0
        else { return false }
        return kill(owner, 0) != 0 && errno == ESRCH
    })
}

/// PC/SC calls block: tests run them here, never on Swift's shared concurrency pool.
let pcscExecutor = BlockingExecutor(name: "e2e-pcsc")

/// Starts (once) the private pcscd with vpcd and vicc, and returns it.
///
/// The first start takes seconds (pcscd, vicc): it runs on the PC/SC executor's thread, never on
/// Swift's shared pool, where two suites waiting for it would stall every other test of the run.
func sharedEnvironment() async throws -> TestEnvironment {
    try await blocking { try TestEnvironment.shared.start() }
}

/// Runs blocking work on ``pcscExecutor``.
func blocking<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await pcscExecutor.run(body)
}

/// Runs blocking work (a bounded wait for a subprocess) on a thread of its own: neither on Swift's
/// shared pool, whose 2 threads it would hold while other tests' tasks wait for them, nor on the
/// shared ``pcscExecutor``, which other suites' PC/SC calls queue on.
func onOwnThread<T: Sendable>(_ name: String, _ body: @escaping @Sendable () throws -> T) async throws -> T {
    let executor = BlockingExecutor(name: name)
    defer { executor.shutdown() }
    return try await executor.run(body)
}

/// Runs the CLI in this process (so it talks to the shared pcscd) and captures its output.
func runCLI(_ arguments: [String], input: [String] = []) async throws -> (status: Int32, out: String, err: String) {
    try await blocking {
        let console = CapturingConsole(input: input)
        let status = SecbridgeTools.main(arguments: arguments, console: console)
        return (status, console.standardOutput, console.standardError)
    }
}

/// The `secbridge` binary next to the test bundle (swift test builds it with the tests).
func secbridgeBinary() throws -> URL {
    var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    for _ in 0..<4 {
        let candidate = directory.appendingPathComponent("secbridge")
        if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        directory = directory.deletingLastPathComponent()
    }
    let fallback = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
        .appendingPathComponent(".build/debug/secbridge")
    guard FileManager.default.isExecutableFile(atPath: fallback.path) else {
        throw HarnessError(code: .missingDependency, reason: "the secbridge binary was not built; run `swift build` first")
    }
    return fallback
}

/// Runs the `secbridge` binary as a subprocess with `environment` and a bound on its run time;
/// with `input`, standard input is a pipe that carries it and then ends.
func runBinary(_ arguments: [String], environment: [String: String], input: String? = nil, timeout: Duration = .seconds(20)) async throws
    -> (status: Int32, out: String, err: String)
{
    try await runProgram(try secbridgeBinary(), arguments, environment: environment, input: input, timeout: timeout)
}

/// Runs `program` as a subprocess with `environment` and a bound on its run time; with `input`,
/// standard input is a pipe that carries it and then ends.
///
/// Standard output and error are read as they come, both at once (a child that fills one pipe
/// while this reads the other would otherwise never exit). When the program has not exited
/// within `timeout` it is killed and this throws ``HarnessError/Code/timeout`` with what it had
/// printed; output that a process it started still holds open is awaited 5 s at most.
func runProgram(
    _ binary: URL, _ arguments: [String], environment: [String: String], input: String? = nil, timeout: Duration = .seconds(20)
) async throws
    -> (status: Int32, out: String, err: String)
{
    let child = try BinaryProcess(arguments, environment: environment, executable: binary, input: input != nil)
    if let pipe = child.input {
        // Small inputs only: they fit the pipe's buffer, so this write does not wait for a reader.
        try? pipe.fileHandleForWriting.write(contentsOf: Data((input ?? "").utf8))  // EPIPE: the child ended first
        try pipe.fileHandleForWriting.close()
    }
    try await child.exit(within: timeout, after: "starting")
    return (child.process.terminationStatus, child.finalOutputText(timeout: .seconds(5)), child.finalStandardError(timeout: .seconds(5)))
}

/// Waits at most `timeout` for `process` to exit, polling every 10 ms, so no thread waits (this
/// may run on Swift's shared pool).
///
/// When it has not exited in time it is killed with SIGKILL (a child started from a thread of
/// the shared pool inherits a signal mask that blocks SIGINT and SIGTERM, so those may never reach
/// it), given up to 5 s to go, and this throws ``HarnessError/Code/timeout`` naming `what` it did
/// not finish after.
func awaitExit(_ process: Process, within timeout: Duration = .seconds(20), after what: String, details: @Sendable () -> String = { "" })
    async throws
{
    // A cancelled task stops waiting at once (a `try?` sleep would spin, throwing each round)
    // and kills the process as at the deadline.
    let deadline = ContinuousClock.now + timeout
    while process.isRunning && ContinuousClock.now < deadline {
        do { try await Task.sleep(for: .milliseconds(10)) } catch { break }
    }
    guard process.isRunning else { return }
    kill(process.processIdentifier, SIGKILL)
    // The reaping takes a moment; a thread of its own waits for it (no sleep that cancellation
    // turns into a spin).
    _ = try? await pcscExecutor.run { process.waitUntilExit() }
    throw exitTimeout(process, timeout, what, details())
}

/// ``awaitExit(_:within:after:details:)`` for a thread that may block (a ``blocking(_:)`` job).
func waitForExit(_ process: Process, within timeout: Duration = .seconds(20), after what: String, details: () -> String = { "" }) throws {
    let deadline = ContinuousClock.now + timeout
    while process.isRunning && ContinuousClock.now < deadline { usleep(10_000) }
    guard process.isRunning else { return }
    let killDeadline = ContinuousClock.now + .seconds(5)
    kill(process.processIdentifier, SIGKILL)
    while process.isRunning && ContinuousClock.now < killDeadline { usleep(10_000) }
    throw exitTimeout(process, timeout, what, details())
}

private func exitTimeout(_ process: Process, _ timeout: Duration, _ what: String, _ details: String) -> HarnessError {
    let name = ([process.executableURL?.lastPathComponent ?? "child"] + (process.arguments ?? [])).joined(separator: " ")
    let end = process.isRunning ? "it is still running after SIGKILL and 5 s more" : "it was killed (SIGKILL)"
    return HarnessError(code: .timeout, reason: "`\(name)` (pid \(process.processIdentifier)) did not exit within \(timeout) after \(what); \(end)"
        + (details.isEmpty ? "" : "; \(details)"))
}

/// A running `secbridge` subprocess (`monitor --json`, `serve`, `simulate`), its standard output
/// lines collected as they come; standard error is kept whole.
/// SIGPIPE ignored in the test process, once: a test that writes to a child's standard input
/// after the child exited then gets EPIPE from the write (and the child's result says what
/// happened) instead of the whole test process dying of SIGPIPE, which ended a full run at
/// `simulateInProcessThroughAPipe`'s second write (seen under gdb: signal 13 in FileHandle.write).
let ignoringSIGPIPE: Void = { _ = signal(SIGPIPE, SIG_IGN) }()

final class BinaryProcess: @unchecked Sendable {
    let process = Process()
    /// Standard input, with `input: true`; otherwise this process's is inherited.
    let input: Pipe?
    private let lines = Locked<[String]>([])
    /// Standard output and error, each read to its end on a thread of its own (both at once).
    private let outputDrain: PipeDrain
    private let errorDrain: PipeDrain

    /// - Parameters:
    ///   - executable: the binary to run: the build's `secbridge` unless given (an installed copy).
    ///   - directory: its working directory, unless this process's.
    ///   - input: give it a pipe as standard input (``input``), for programs that read it.
    ///   - noInput: standard input is /dev/null instead of this process's (without `input`).
    init(_ arguments: [String], environment: [String: String], executable: URL? = nil, directory: URL? = nil, input: Bool = false,
         noInput: Bool = false) throws {
        _ = ignoringSIGPIPE
        process.executableURL = try executable ?? secbridgeBinary()
        process.arguments = arguments
        process.environment = environment
        if let directory { process.currentDirectoryURL = directory }
        self.input = input ? Pipe() : nil
        if let pipe = self.input { process.standardInput = pipe } else if noInput { process.standardInput = FileHandle.nullDevice }
        let pipe = Pipe()
        process.standardOutput = pipe
        let errors = Pipe()
        process.standardError = errors
        let partial = Locked(Data())  // the output's last line until its newline comes
        outputDrain = PipeDrain(pipe.fileHandleForReading, name: "e2e-stdout") { [lines] chunk in
            partial.withLock { pending in
                pending += chunk
                while let newline = pending.firstIndex(of: 0x0A) {
                    let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
                    pending = Data(pending[pending.index(after: newline)...])
                    lines.withLock { $0.append(line) }
                }
            }
        }
        errorDrain = PipeDrain(errors.fileHandleForReading, name: "e2e-stderr")
        do {
            try process.run()
        } catch {
            // No child holds the write ends: closing this process's ends the drains' reading.
            try? pipe.fileHandleForWriting.close()
            try? errors.fileHandleForWriting.close()
            throw error
        }
    }

    var output: [String] { lines.withLock { $0 } }
    var standardError: String { errorDrain.text }

    /// Standard error once every writer closed it (the process and what it started exited), at
    /// most `timeout`: what the process wrote last may still be on its way when it has exited.
    func finalStandardError(timeout: Duration = .seconds(10)) -> String {
        errorDrain.waitForEnd(timeout: timeout)
        return standardError
    }

    /// The lines of standard output once every writer closed it, at most `timeout`: as
    /// ``finalStandardError(timeout:)``, the last lines may come after the exit.
    func finalOutput(timeout: Duration = .seconds(10)) -> [String] {
        outputDrain.waitForEnd(timeout: timeout)
        return output
    }

    /// Standard output byte for byte (as UTF-8 text), once every writer closed it, at most `timeout`.
    func finalOutputText(timeout: Duration = .seconds(10)) -> String {
        outputDrain.waitForEnd(timeout: timeout)
        return outputDrain.text
    }

    /// Waits at most `timeout` for the process to exit (no thread waits); when it has not, kills
    /// it and throws, naming `what` it did not finish after and what it had printed
    /// (``awaitExit(_:within:after:details:)``).
    func exit(within timeout: Duration = .seconds(20), after what: String) async throws {
        try await awaitExit(process, within: timeout, after: what) { [self] in "standard output: \(output), standard error: \(standardError)" }
    }

    /// ``exit(within:after:)`` for a thread that may block (a ``blocking(_:)`` job).
    func waitForExit(within timeout: Duration = .seconds(20), after what: String) throws {
        try EndToEndTests.waitForExit(process, within: timeout, after: what) { "standard output: \(output), standard error: \(standardError)" }
    }

    func wait(for needle: String, after index: Int = 0, timeout: Duration = .seconds(20)) async throws -> Int {
        let deadline = ContinuousClock.now + timeout
        func found() -> Int? {
            let current = output
            return current.indices.first { $0 >= index && current[$0].contains(needle) }
        }
        while ContinuousClock.now < deadline {
            if let line = found() { return line }
            try await Task.sleep(for: .milliseconds(20))
        }
        // Once more after the deadline: a sleep that overslept it (a busy machine) may have missed
        // a line that came in time.
        if let line = found() { return line }
        throw HarnessError(code: .timeout, reason: "secbridge \(process.arguments?.first ?? "") printed no line with \(needle) within \(timeout): \(output) \(standardError)")
    }

    /// The first line holding `needle`, once it came (``wait(for:after:timeout:)``).
    func line(containing needle: String) async throws -> String {
        let index = try await wait(for: needle)
        return output[index]
    }

    /// SIGINT, then at most 10 s for the exit; a process that has not exited by then is killed
    /// and the test fails with an issue saying so.
    func stop() {
        if process.isRunning { process.interrupt() }
        do {
            try waitForExit(within: .seconds(10), after: "SIGINT")
        } catch {
            Issue.record(error)
        }
    }
}

/// `secbridge simulate --in-process …` fed through a pipe: `first` written at once, `then` once
/// a line of output holds `firstDone` (a place-card request handled before the next line is
/// sent; presence is polled on use), then SIGINT once a later line holds `thenDone`; returns its
/// exit status and standard output. Nothing here depends on how fast the machine is: an earlier
/// version wrote `then` after 0.3 s and let the child's `--timeout 1.5` end it, and on a loaded
/// machine the second line came after that end. A `--timeout` in `arguments` is only a bound.
func simulateInProcessThroughAPipe(
    _ arguments: [String], first: String, firstDone: String, then: String, thenDone: String
) async throws -> (status: Int32, out: String) {
    let child = try BinaryProcess(["simulate", "--in-process"] + arguments, environment: ProcessInfo.processInfo.environment, input: true)
    let input = child.input!.fileHandleForWriting
    defer { try? input.close() }
    // A child that already ended makes a write fail (EPIPE): the waits below then say so.
    try? input.write(contentsOf: Data(first.utf8))
    let firstLine = try await child.wait(for: firstDone)
    try? input.write(contentsOf: Data(then.utf8))
    _ = try await child.wait(for: thenDone, after: firstLine + 1)
    child.process.interrupt()
    try await child.exit(within: .seconds(20), after: "SIGINT")
    return (child.process.terminationStatus, child.finalOutputText(timeout: .seconds(5)))
}

/// `task`'s value, awaited at most `bound` of real time: past it the task is cancelled (a
/// `for await` over a stream then ends) and this throws ``HarnessError/Code/timeout`` saying that
/// `what` did not happen. An event stream that never yields the awaited event, and never finishes,
/// then fails the test instead of keeping it waiting for good.
func value<T: Sendable>(of task: Task<T, Never>, within bound: Duration, _ what: String) async throws -> T {
    let late = Locked(false)
    let watchdog = Task {
        try await Task.sleep(for: bound)
        late.withLock { $0 = true }
        task.cancel()
    }
    let value = await task.value
    watchdog.cancel()
    if late.withLock({ $0 }) {
        throw HarnessError(code: .timeout, reason: "\(what) did not happen within \(bound) (the task awaiting it was cancelled)")
    }
    return value
}
