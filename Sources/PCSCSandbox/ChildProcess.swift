import Foundation
import PCSCCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A long-running child process (pcscd, vicc) whose output goes to a log file.
///
/// Every wait is bounded. The child stays in the test process's process group, so an interrupt
/// (Ctrl-C) reaches it too; ``ExitCleanup`` stops it when the test process exits normally.
final class ChildProcess: Sendable {
    let name: String
    let pid: Int32
    let logURL: URL
    private let process: Mutex<Process>
    private let exit = ExitRecord()
    /// The write end of the child's standard input when it has a lifeline (see `init`): held open
    /// by this process alone, so it closes when this process dies, however it dies.
    private let lifeline: Mutex<FileHandle?>

    /// The exit status, set once by the termination handler; the group is left at exit.
    private final class ExitRecord: Sendable {
        let group = DispatchGroup()
        let status = Mutex<Int32?>(nil)
    }

    /// Launches `executable` with `arguments`, appending its stdout and stderr to `logURL`.
    ///
    /// With `lifeline`, the child's standard input is a pipe whose write end only this process
    /// holds (close-on-exec, so no other child inherits it): the child sees end-of-file on its
    /// standard input when this process exits — normally, by SIGKILL or the OOM killer alike — and
    /// can stop itself (``PrivatePCSCD``'s launch script does). Otherwise standard input is /dev/null.
    /// - Throws: ``HarnessError/Code/launchFailed`` when the executable cannot be started.
    init(name: String, executable: String, arguments: [String], environment: [String: String], logURL: URL,
         lifeline: Bool = false) throws {
        self.name = name
        self.logURL = logURL
        if !FileManager.default.fileExists(atPath: logURL.path) {
            _ = FileManager.default.createFile(atPath: logURL.path, contents: nil)
        }
        let log: FileHandle
        do {
            log = try FileHandle(forWritingTo: logURL)
            _ = try log.seekToEnd()
        } catch {
            throw HarnessError(code: .launchFailed, reason: "cannot open log \(logURL.path) for \(name): \(error)")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = environment
        var lifelinePipe: Pipe?
        if lifeline {
            let pipe = Pipe()
            _ = fcntl(pipe.fileHandleForWriting.fileDescriptor, F_SETFD, FD_CLOEXEC)
            process.standardInput = pipe
            lifelinePipe = pipe
        } else {
            process.standardInput = FileHandle.nullDevice
        }
        process.standardOutput = log
        process.standardError = log
        let exit = exit
        exit.group.enter()
        process.terminationHandler = { finished in
            exit.status.withLock { $0 = finished.terminationStatus }
            exit.group.leave()
        }
        if let failure = Self.spawnWithEmptySignalMask(process) {
            // A launch that did not finish in time may still succeed: its termination handler
            // then leaves the group (the spawn thread kills that child), so only a failed run()
            // leaves it here; leaving twice would crash the process.
            if !failure.timedOut { exit.group.leave() }
            try? log.close()
            throw HarnessError(code: .launchFailed, reason: "cannot launch \(name) (\(executable)): \(failure.reason)")
        }
        try? log.close()
        // Process.run() closes this process's copy of the read end itself (closing it again here
        // would close whatever descriptor reused that number).
        pid = process.processIdentifier
        self.process = Mutex(process)
        self.lifeline = Mutex(lifelinePipe?.fileHandleForWriting)
    }

    /// Closes the lifeline's write end (the child then sees end-of-file on standard input).
    func cutLifeline() {
        let handle = lifeline.withLock { handle in
            defer { handle = nil }
            return handle
        }
        try? handle?.close()
    }

    /// Runs `process` from a fresh thread whose signal mask is empty; returns the launch error, if any.
    ///
    /// A child inherits the signal mask of the thread that spawns it, and Dispatch worker threads
    /// (where Swift tests run) block SIGTERM and SIGINT: vicc launched from one ignores SIGTERM
    /// until SIGKILL (measured). A thread of our own that unblocks everything first avoids that.
    private static func spawnWithEmptySignalMask(_ process: Process) -> (reason: String, timedOut: Bool)? {
        final class Launch: @unchecked Sendable {  // handed to one thread, read after `done`
            let process: Process
            var failure: String?
            let done = DispatchSemaphore(value: 0)
            /// Set when the caller stopped waiting: a child started after that is killed.
            let abandoned = Atomic(false)
            init(_ process: Process) { self.process = process }
        }
        let launch = Launch(process)
        startThread(name: "secbridge-spawn") {
            var empty = sigset_t()
            sigemptyset(&empty)
            pthread_sigmask(SIG_SETMASK, &empty, nil)
            do { try launch.process.run() } catch { launch.failure = "\(error)" }
            if launch.failure == nil, launch.abandoned.load(ordering: .sequentiallyConsistent) {
                _ = Glibc.kill(launch.process.processIdentifier, SIGKILL)
            }
            launch.done.signal()
        }
        guard launch.done.wait(timeout: .now() + 10) == .success else {
            launch.abandoned.store(true, ordering: .sequentiallyConsistent)
            return ("the launch did not finish within 10 s", true)
        }
        return launch.failure.map { ($0, false) }
    }

    /// The exit status (or terminating signal number) once the child has exited, else `nil`.
    var exitStatus: Int32? { exit.status.withLock { $0 } }

    var hasExited: Bool { exitStatus != nil }

    /// Waits at most `timeout` for the child to exit; returns whether it has.
    @discardableResult
    func waitForExit(timeout: Duration) -> Bool {
        exit.group.wait(timeout: .now() + timeout.timeInterval) == .success
    }

    /// Sends `signal` unless the child has already exited.
    func send(_ signal: Int32) {
        guard !hasExited else { return }
        _ = Glibc.kill(pid, signal)
    }

    /// SIGTERM, up to `grace` for the child to exit, then SIGKILL and up to 2 s more.
    /// - Returns: whether the child has exited.
    @discardableResult
    func terminate(grace: Duration) -> Bool {
        defer { cutLifeline() }
        send(SIGTERM)
        if waitForExit(timeout: grace) { return true }
        send(SIGKILL)
        return waitForExit(timeout: .seconds(2))
    }

    /// The last `lines` lines of the log (at most the last 8 KiB of the file).
    func logTail(lines: Int = 20) -> String { LogFile.tail(of: logURL, lines: lines) }
}

enum LogFile {
    /// The last `lines` lines of the file at `url`, read from at most its last 8 KiB.
    static func tail(of url: URL, lines: Int = 20) -> String {
        guard let handle = try? FileHandle(forReadingFrom: url) else { return "" }
        defer { try? handle.close() }
        let size = (try? handle.seekToEnd()) ?? 0
        let start = size > 8192 ? size - 8192 : 0
        try? handle.seek(toOffset: start)
        let data = (try? handle.readToEnd()) ?? Data()
        let text = String(decoding: data, as: UTF8.self)
        return text.split(separator: "\n", omittingEmptySubsequences: false).suffix(lines).joined(separator: "\n")
    }
}

extension Duration {
    /// The duration in seconds, for Foundation and Dispatch APIs.
    var timeInterval: TimeInterval {
        let (seconds, attoseconds) = components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }
}

/// The result of a short tool run: exit status and combined stdout and stderr.
struct ToolOutput: Sendable {
    var status: Int32
    var output: String
}

enum Tool {
    /// Runs a short-lived tool to completion, at most `timeout`, and returns its status and output.
    ///
    /// Output goes through a temporary file, so a chatty tool cannot block on a full pipe.
    /// - Throws: ``HarnessError/Code/launchFailed`` when it cannot start,
    ///   ``HarnessError/Code/timeout`` when it runs longer than `timeout` (it is killed).
    static func run(_ executable: String, _ arguments: [String], environment: [String: String],
                    timeout: Duration = .seconds(5)) throws -> ToolOutput {
        let logURL = FileManager.default.temporaryDirectory
            .appendingPathComponent("secbridge-tool.\(getpid()).\(UUID().uuidString.prefix(8)).out")
        defer { try? FileManager.default.removeItem(at: logURL) }
        let name = URL(fileURLWithPath: executable).lastPathComponent
        let child = try ChildProcess(name: name, executable: executable, arguments: arguments,
                                     environment: environment, logURL: logURL)
        guard child.waitForExit(timeout: timeout) else {
            child.terminate(grace: .milliseconds(200))
            throw HarnessError(code: .timeout,
                               reason: "\(name) \(arguments.joined(separator: " ")) ran longer than \(timeout)",
                               logTail: LogFile.tail(of: logURL))
        }
        let data = (try? Data(contentsOf: logURL)) ?? Data()
        return ToolOutput(status: child.exitStatus ?? -1, output: String(decoding: data, as: UTF8.self))
    }
}

/// Stops the harness's children when the test process exits normally (`atexit`), so no pcscd or
/// vicc is left behind. Each registered action must be bounded.
enum ExitCleanup {
    private static let actions = Mutex<[UUID: @Sendable () -> Void]>([:])
    private static let installed = Mutex(false)

    /// Registers `action` to run at exit; returns a token for ``unregister(_:)``.
    static func register(_ action: @escaping @Sendable () -> Void) -> UUID {
        let token = UUID()
        actions.withLock { $0[token] = action }
        let first = installed.withLock { done in
            defer { done = true }
            return !done
        }
        if first { atexit { ExitCleanup.runAll() } }
        return token
    }

    static func unregister(_ token: UUID) {
        _ = actions.withLock { $0.removeValue(forKey: token) }
    }

    static func runAll() {
        let pending = actions.withLock { all in
            defer { all.removeAll() }
            return Array(all.values)
        }
        for action in pending { action() }
    }
}
