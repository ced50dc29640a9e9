import Foundation
import PCSCCore
import PCSCSandbox
#if canImport(Glibc)
import Glibc
#endif

/// ``runChild(_:_:environment:timeout:)`` from async code (a Swift Testing test): the bounded wait
/// runs on a thread of its own, never on Swift's shared pool, whose two threads it would hold
/// while every other test's task queues behind them (seen: `zsh` and `groff` runs of
/// ManPageCompletionTests holding both for seconds at the start of a run).
func runChild(_ executable: URL, _ arguments: [String], environment: [String: String]? = nil, timeout: Duration = .seconds(60)) async throws
    -> (status: Int32, out: String, err: String)
{
    let executor = BlockingExecutor(name: "child-run")
    defer { executor.shutdown() }
    return try await executor.run { try runChildBlocking(executable, arguments, environment: environment, timeout: timeout) }
}

/// Runs `executable` with `arguments` to its end and returns its exit status and both outputs
/// (on a thread that may block; from async code use ``runChild(_:_:environment:timeout:)``).
///
/// Every wait is bounded: standard output and error are read as they come, both at once, each by a
/// ``PipeDrain`` (a child
/// that fills the pipe this is not reading would otherwise never exit); past `timeout` the child
/// is killed with SIGKILL (a child started from a thread of Swift's shared pool inherits a signal
/// mask that blocks SIGINT and SIGTERM) and this throws ``HarnessError/Code/timeout`` with what it
/// had printed; output that a process it started still holds open is awaited 5 s at most.
func runChildBlocking(_ executable: URL, _ arguments: [String], environment: [String: String]? = nil, timeout: Duration = .seconds(60))
    throws -> (status: Int32, out: String, err: String)
{
    let process = Process()
    process.executableURL = executable
    process.arguments = arguments
    if let environment { process.environment = environment }
    process.standardInput = FileHandle.nullDevice
    let out = Pipe(), err = Pipe()
    (process.standardOutput, process.standardError) = (out, err)
    let drains = [PipeDrain(out.fileHandleForReading, name: "child-stdout"), PipeDrain(err.fileHandleForReading, name: "child-stderr")]
    let exited = DispatchSemaphore(value: 0)
    process.terminationHandler = { _ in exited.signal() }
    do {
        try process.run()
    } catch {
        for pipe in [out, err] { try? pipe.fileHandleForWriting.close() }  // ends the drains' reading
        throw error
    }
    if exited.wait(timeout: .now() + timeout.seconds) == .timedOut {
        kill(process.processIdentifier, SIGKILL)
        let gone = exited.wait(timeout: .now() + 5) == .success
        let name = ([executable.lastPathComponent] + arguments).joined(separator: " ")
        throw HarnessError(
            code: .timeout,
            reason: "`\(name)` did not exit within \(timeout); "
                + (gone ? "it was killed (SIGKILL)" : "it is still running after SIGKILL and 5 s more")
                + "; standard output: \(drains[0].text); standard error: \(drains[1].text)")
    }
    for drain in drains { drain.waitForEnd(timeout: .seconds(5)) }
    return (process.terminationStatus, drains[0].text, drains[1].text)
}

extension Duration {
    /// The duration in seconds, for Dispatch's deadlines.
    fileprivate var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
