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
func runProgram(
    _ binary: URL, _ arguments: [String], environment: [String: String], input: String? = nil, timeout: Duration = .seconds(20)
) async throws
    -> (status: Int32, out: String, err: String)
{
    // A thread of its own: subprocesses of suites that run in parallel do not queue behind each
    // other on the shared PC/SC executor.
    let executor = BlockingExecutor(name: "e2e-binary")
    defer { executor.shutdown() }
    return try await executor.run {
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        process.environment = environment
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        let stdin = input.map { _ in Pipe() }
        if let stdin { process.standardInput = stdin }
        let exited = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in exited.signal() }
        try process.run()
        if let stdin, let input {
            stdin.fileHandleForWriting.write(Data(input.utf8))
            try stdin.fileHandleForWriting.close()
        }
        let (seconds, attoseconds) = timeout.components
        if exited.wait(timeout: .now() + .nanoseconds(Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000))) == .timedOut {
            process.terminate()
        }
        process.waitUntilExit()
        let outText = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let errText = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        return (process.terminationStatus, outText, errText)
    }
}

/// A running `secbridge` subprocess (`monitor --json`, `serve`, `simulate`), its standard output
/// lines collected as they come; standard error is kept whole.
final class BinaryProcess: @unchecked Sendable {
    let process = Process()
    /// Standard input, with `input: true`; otherwise this process's is inherited.
    let input: Pipe?
    private let lines = Locked<[String]>([])
    private let buffer = Locked<String>("")
    private let errorText = Locked<String>("")
    private let errorClosed = DispatchSemaphore(value: 0)
    private let outputClosed = DispatchSemaphore(value: 0)

    /// - Parameters:
    ///   - executable: the binary to run: the build's `secbridge` unless given (an installed copy).
    ///   - directory: its working directory, unless this process's.
    ///   - input: give it a pipe as standard input (``input``), for programs that read it.
    init(_ arguments: [String], environment: [String: String], executable: URL? = nil, directory: URL? = nil, input: Bool = false) throws {
        process.executableURL = try executable ?? secbridgeBinary()
        process.arguments = arguments
        process.environment = environment
        if let directory { process.currentDirectoryURL = directory }
        self.input = input ? Pipe() : nil
        if let pipe = self.input { process.standardInput = pipe }
        let pipe = Pipe()
        process.standardOutput = pipe
        let errors = Pipe()
        process.standardError = errors
        errors.fileHandleForReading.readabilityHandler = { [errorText, errorClosed] handle in
            let data = handle.availableData
            guard !data.isEmpty else {
                handle.readabilityHandler = nil
                errorClosed.signal()
                return
            }
            errorText.withLock { $0 += String(decoding: data, as: UTF8.self) }
        }
        pipe.fileHandleForReading.readabilityHandler = { [lines, buffer, outputClosed] handle in
            let data = handle.availableData
            guard !data.isEmpty else {
                handle.readabilityHandler = nil
                outputClosed.signal()
                return
            }
            buffer.withLock { text in
                text += String(decoding: data, as: UTF8.self)
                while let newline = text.firstIndex(of: "\n") {
                    let line = String(text[..<newline])
                    text = String(text[text.index(after: newline)...])
                    lines.withLock { $0.append(line) }
                }
            }
        }
        try process.run()
    }

    var output: [String] { lines.withLock { $0 } }
    var standardError: String { errorText.withLock { $0 } }

    /// Standard error once every writer closed it (the process and what it started exited), at
    /// most `timeout`: what the process wrote last, which the readability handler may deliver
    /// after `waitUntilExit` returns.
    func finalStandardError(timeout: Duration = .seconds(10)) -> String {
        _ = errorClosed.wait(timeout: .now() + .seconds(Int(timeout.components.seconds)))
        return standardError
    }

    /// The lines of standard output once every writer closed it, at most `timeout`: as
    /// ``finalStandardError(timeout:)``, the last lines may be delivered after `waitUntilExit`.
    func finalOutput(timeout: Duration = .seconds(10)) -> [String] {
        _ = outputClosed.wait(timeout: .now() + .seconds(Int(timeout.components.seconds)))
        return output
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

    func stop() {
        if process.isRunning { process.interrupt() }
        process.waitUntilExit()
    }
}

/// `secbridge simulate --in-process …` fed through a pipe: `first` written at once, `then` 0.3 s
/// later (a place-card request is handled before the next line; presence is polled on use), until
/// its own `--timeout` ends it; returns its exit status and standard output.
func simulateInProcessThroughAPipe(_ arguments: [String], first: String, then: String) async throws -> (status: Int32, out: String) {
    let binary = try secbridgeBinary()
    return try await blocking { () -> (Int32, String) in
        let process = Process()
        process.executableURL = binary
        process.arguments = ["simulate", "--in-process"] + arguments
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        input.fileHandleForWriting.write(Data(first.utf8))
        usleep(300_000)
        input.fileHandleForWriting.write(Data(then.utf8))
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self))    }
}
