import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A pcscd of the tests' own, with its own readers, invisible to the system's pcscd.
///
/// pcscd 1.9.9 hard-codes its socket as `/run/pcscd/pcscd.comm` (it ignores `PCSCLITE_CSOCK_NAME`,
/// which only clients read). So the daemon runs in a mount namespace of its own
/// (`unshare --mount --propagation private`) where a private directory is bind-mounted on
/// `/run/pcscd`; clients outside reach it through that directory's `pcscd.comm` by exporting
/// `PCSCLITE_CSOCK_NAME`. Inside the namespace an empty directory is also mounted over each USB
/// driver bundle (`/usr/lib/pcsc/drivers/*.bundle`), so the private daemon does not compete for a
/// real reader on a desk. A system pcscd, if any, is left alone.
///
/// As root this needs nothing more. Without root the harness tries
/// `unshare --user --map-root-user --mount`, which the host may forbid (user namespaces disabled).
///
/// Layout of ``directory`` (a fresh `secbridge-pcscd.*` under the temporary directory, mode 0700:
/// only its owner reaches the socket):
///
///     run/             bind-mounted on /run/pcscd: pcscd.comm (the socket), pcscd.pid
///     reader.conf.d/   one file per ``ReaderConfEntry``, passed as `pcscd -c` (absolute)
///     empty/           mounted over the USB driver bundles
///     pcscd.log        pcscd's stdout and stderr (`--foreground` logs to stdout)
///     owner.pid        the test process, so a later run can reap a pcscd it left behind
///
/// `--force-reader-polling` is not passed: it only overrides the hot-plug capability of USB
/// drivers, which are hidden; reader.conf readers are loaded at start-up.
///
/// Every wait is bounded. The daemon is stopped at normal process exit (`atexit`).
public final class PrivatePCSCD: Sendable {
    /// The private directory (see the layout above).
    public let directory: URL
    /// The socket clients use: export it as `PCSCLITE_CSOCK_NAME`.
    public let socketPath: String
    /// pcscd's log, appended to across restarts.
    public let logURL: URL
    /// The readers written to `reader.conf.d`, in order (changed by ``restart(readers:timeout:)``).
    public var readers: [ReaderConfEntry] { state.withLock { $0.readers } }

    private struct State {
        var child: ChildProcess?
        var watcher: ChildProcess?
        var cleanupToken: UUID?
        var readerNames: [String] = []
        var readers: [ReaderConfEntry] = []
    }
    private let state = Mutex(State())

    /// Prepares the private directory and configuration; does not start pcscd (see ``start(timeout:)``).
    /// - Parameter readers: the reader.conf entries, each validated (see ``ReaderConfEntry/validate()``).
    /// - Throws: ``HarnessError`` with `.invalidConfiguration` or `.missingDependency`.
    public init(readers: [ReaderConfEntry]) throws {
        for reader in readers { try reader.validate() }
        state.withLock { $0.readers = readers }
        let base = URL(fileURLWithPath: NSTemporaryDirectory(), isDirectory: true)
        directory = base.appendingPathComponent("secbridge-pcscd.\(getpid()).\(UUID().uuidString.prefix(8))")
        socketPath = directory.appendingPathComponent("run/pcscd.comm").path
        logURL = directory.appendingPathComponent("pcscd.log")
    }

    /// The socket variable a client needs, as an environment entry.
    public static let socketVariable = "PCSCLITE_CSOCK_NAME"

    /// This process's environment with `PCSCLITE_CSOCK_NAME` set to ``socketPath``: pass it to
    /// subprocesses (`pcsc_scan`, `secbridge`) that should talk to this pcscd.
    public var environment: [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment[Self.socketVariable] = socketPath
        return environment
    }

    /// Whether the daemon process is alive.
    public var isRunning: Bool { state.withLock { $0.child.map { !$0.hasExited } ?? false } }

    /// The process id of the running daemon, or `nil`.
    public var processIdentifier: Int32? {
        state.withLock { state in state.child.flatMap { $0.hasExited ? nil : $0.pid } }
    }

    /// The reader names pcscd listed when it became ready, e.g. `["Virtual PCD 00 00", "Virtual PCD 00 01"]`.
    public var readerNames: [String] { state.withLock { $0.readerNames } }

    /// Starts pcscd and waits until it answers `pcsc_scan -r` with a reader for every entry.
    ///
    /// Does nothing if it is already running. Stale `pcscd.comm`/`pcscd.pid` files (after
    /// ``kill()``) are removed first.
    /// - Parameter timeout: the longest wait for readiness; it takes about 0.1 s.
    /// - Returns: the reader names pcscd lists.
    /// - Throws: ``HarnessError`` — `.missingDependency`, `.notPermitted` (no root and no user
    ///   namespaces), `.launchFailed` (pcscd exited, with its log tail), `.timeout`.
    @discardableResult
    public func start(timeout: Duration = .seconds(10)) throws -> [String] {
        if isRunning { return readerNames }
        let pcscd = try HarnessPaths.requireTool("pcscd", package: "pcscd")
        let unshare = try HarnessPaths.requireTool("unshare", package: "util-linux")
        try prepareDirectory()
        let namespaceArguments = try Self.namespaceArguments(unshare: unshare)
        let run = directory.appendingPathComponent("run").path
        let arguments = namespaceArguments + [
            "/bin/sh", "-c", Self.launchScript, "secbridge-pcscd",
            run, directory.appendingPathComponent("empty").path,
            directory.appendingPathComponent("reader.conf.d").path, pcscd,
        ]
        let child = try ChildProcess(name: "pcscd", executable: unshare, arguments: arguments,
                                     environment: ProcessInfo.processInfo.environment, logURL: logURL)
        // Ties pcscd's life to this process's (see `watcherScript`).
        let watcher = try? ChildProcess(
            name: "pcscd-watcher", executable: "/bin/sh",
            arguments: ["-c", Self.watcherScript, "secbridge-pcscd-watcher", String(child.pid),
                        directory.appendingPathComponent("reader.conf.d").path],
            environment: ProcessInfo.processInfo.environment, logURL: logURL, lifeline: true)
        state.withLock { state in
            state.child = child
            state.watcher?.cutLifeline()
            state.watcher = watcher
            if state.cleanupToken == nil {
                state.cleanupToken = ExitCleanup.register { [self] in self.stop(timeout: .seconds(2)) }
            }
        }
        do {
            let names = try waitUntilReady(child: child, timeout: timeout)
            state.withLock { $0.readerNames = names }
            return names
        } catch {
            child.terminate(grace: .seconds(1))
            throw error
        }
    }

    /// Stops pcscd (SIGTERM, up to `timeout`, then SIGKILL) and removes ``directory``.
    ///
    /// SIGTERM makes pcscd remove its socket and pid file. Safe to call more than once.
    public func stop(timeout: Duration = .seconds(5)) {
        let (child, watcher, token) = state.withLock { state in
            defer { state.child = nil; state.watcher = nil; state.cleanupToken = nil; state.readerNames = [] }
            return (state.child, state.watcher, state.cleanupToken)
        }
        child?.terminate(grace: timeout)
        watcher?.cutLifeline()
        if let token { ExitCleanup.unregister(token) }
        try? FileManager.default.removeItem(at: directory)
    }

    /// Kills pcscd with SIGKILL, as a crash would: the socket and pid file stay behind.
    /// For fault tests; ``restart(timeout:)`` or ``start(timeout:)`` bring it back.
    /// - Returns: whether the process has exited (waits at most 2 s).
    @discardableResult
    public func kill() -> Bool {
        guard let child = state.withLock({ $0.child }) else { return true }
        child.send(SIGKILL)
        return child.waitForExit(timeout: .seconds(2))
    }

    /// Stops pcscd (keeping ``directory``) and starts it again with the same readers and the same
    /// ``socketPath``, so clients that cached the socket path reconnect to it.
    /// - Returns: the reader names pcscd lists.
    /// - Throws: as ``start(timeout:)``.
    @discardableResult
    public func restart(timeout: Duration = .seconds(10)) throws -> [String] {
        if let child = state.withLock({ $0.child }) {
            guard child.terminate(grace: .seconds(5)) else {
                throw HarnessError(code: .timeout, reason: "pcscd (pid \(child.pid)) did not exit after SIGKILL",
                                   logTail: child.logTail())
            }
        }
        state.withLock { $0.child = nil }
        return try start(timeout: timeout)
    }

    /// Stops pcscd and starts it again at the same ``socketPath`` with other readers: to clients
    /// (and a reader monitor) the readers that are gone were detached and the new ones attached.
    /// - Throws: as ``ReaderConfEntry/validate()`` and ``start(timeout:)``.
    @discardableResult
    public func restart(readers: [ReaderConfEntry], timeout: Duration = .seconds(10)) throws -> [String] {
        for reader in readers { try reader.validate() }
        if let child = state.withLock({ $0.child }) {
            guard child.terminate(grace: .seconds(5)) else {
                throw HarnessError(code: .timeout, reason: "pcscd (pid \(child.pid)) did not exit after SIGKILL",
                                   logTail: child.logTail())
            }
        }
        state.withLock { state in
            state.child = nil
            state.readers = readers
        }
        return try start(timeout: timeout)
    }

    /// The last lines of pcscd's log.
    public func logTail(lines: Int = 20) -> String { LogFile.tail(of: logURL, lines: lines) }

    // MARK: - Launch

    /// Runs inside the new mount namespace: `$1` run directory, `$2` empty directory,
    /// `$3` reader.conf.d, `$4` pcscd. Without root and without `/run/pcscd`, a tmpfs on `/run`
    /// (private to the namespace) makes room for the mount point.
    /// The launch script, run by `/bin/sh` inside the namespace: mounts the private run directory
    /// and hides the USB drivers, then becomes pcscd (`exec`, same pid).
    static let launchScript = """
        set -eu
        if [ ! -d /run/pcscd ]; then
            mkdir -p /run/pcscd 2>/dev/null || { mount -t tmpfs -o mode=0755 secbridge-run /run && mkdir -p /run/pcscd; }
        fi
        mount --bind "$1" /run/pcscd
        for bundle in /usr/lib/pcsc/drivers/*.bundle; do
            if [ -d "$bundle" ]; then mount --bind "$2" "$bundle"; fi
        done
        exec "$4" --foreground -c "$3"
        """

    /// The watcher's script (`/bin/sh -c`, arguments: pcscd's pid, its reader.conf.d): blocks in
    /// read(2) on its standard input, the ``ChildProcess`` lifeline, until the process that started
    /// pcscd exits, however it exits (SIGKILL of `simulate`, a CI timeout, the OOM killer), then
    /// stops pcscd with SIGTERM (which removes its socket). No polling. The pid is signalled only
    /// while its command line still names this instance's reader.conf.d, so a pid reused after
    /// pcscd's own exit is never hit.
    ///
    /// The watcher is a process of its own, not a job left behind by the launch script: a child of
    /// pcscd would inherit the descriptor through which Foundation's `Process` learns of pcscd's
    /// exit, and hide that exit for as long as it lives (measured).
    static let watcherScript = """
        cat >/dev/null
        if grep -qaF -- "$2" "/proc/$1/cmdline" 2>/dev/null; then kill -TERM "$1"; fi
        """

    /// `unshare` and its options: a mount namespace as root, else a user and mount namespace.
    /// - Throws: ``HarnessError/Code/notPermitted`` when the host forbids user namespaces.
    static func namespaceArguments(unshare: String) throws -> [String] {
        if geteuid() == 0 { return ["--mount", "--propagation", "private"] }
        let arguments = ["--user", "--map-root-user", "--mount", "--propagation", "private"]
        let probe = try Tool.run(unshare, arguments + ["/bin/true"],
                                 environment: ProcessInfo.processInfo.environment, timeout: .seconds(5))
        guard probe.status == 0 else {
            throw HarnessError(
                code: .notPermitted,
                reason: "a private pcscd needs its own mount namespace (pcscd hard-codes /run/pcscd): not root, "
                    + "and `unshare --user --map-root-user --mount` failed (status \(probe.status): "
                    + probe.output.trimmingCharacters(in: .whitespacesAndNewlines)
                    + "); run the tests as root or allow unprivileged user namespaces "
                    + "(sysctl kernel.unprivileged_userns_clone=1, user.max_user_namespaces > 0)")
        }
        return arguments
    }

    /// Creates the directory layout and writes the configuration (idempotent).
    private func prepareDirectory() throws {
        let files = FileManager.default
        do {
            if geteuid() == 0, !files.fileExists(atPath: "/run/pcscd") {
                try files.createDirectory(atPath: "/run/pcscd", withIntermediateDirectories: true)
            }
            // Owner only: the socket inside is 0666 (pcscd makes it so), so the directory is what
            // keeps other local users away from this private pcscd and its readers.
            try files.createDirectory(at: directory, withIntermediateDirectories: true)
            guard chmod(directory.path, 0o700) == 0 else {
                throw HarnessError(code: .launchFailed, reason: "cannot make \(directory.path) private (chmod 700): \(String(cString: strerror(errno)))")
            }
            for name in ["run", "reader.conf.d", "empty"] {
                try files.createDirectory(at: directory.appendingPathComponent(name), withIntermediateDirectories: true)
            }
            for stale in ["run/pcscd.comm", "run/pcscd.pid"] {
                try? files.removeItem(at: directory.appendingPathComponent(stale))
            }
            try "\(getpid())\n".write(to: directory.appendingPathComponent("owner.pid"), atomically: true, encoding: .utf8)
            let conf = directory.appendingPathComponent("reader.conf.d")
            for old in (try? files.contentsOfDirectory(atPath: conf.path)) ?? [] {
                try files.removeItem(at: conf.appendingPathComponent(old))
            }
            for (index, reader) in readers.enumerated() {
                let file = conf.appendingPathComponent(String(format: "%02d-reader", index))
                try reader.rendered.write(to: file, atomically: true, encoding: .utf8)
            }
        } catch let error as HarnessError {
            throw error
        } catch {
            throw HarnessError(code: .launchFailed, reason: "cannot prepare \(directory.path): \(error)")
        }
    }

    /// Polls `pcsc_scan -r` every 50 ms until pcscd lists a reader for every entry.
    private func waitUntilReady(child: ChildProcess, timeout: Duration) throws -> [String] {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        var lastAnswer = "no answer yet"
        while clock.now < deadline {
            if child.hasExited {
                throw HarnessError(code: .launchFailed,
                                   reason: "pcscd exited with status \(child.exitStatus ?? -1) before it was ready "
                                       + "(a bad LIBPATH or a failing mount makes it exit)",
                                   logTail: child.logTail())
            }
            do {
                let names = try PCSCScan.readers(environment: environment, timeout: .seconds(2))
                let missing = readers.filter { entry in !names.contains { $0.hasPrefix(entry.friendlyName + " ") } }
                if missing.isEmpty { return names }
                lastAnswer = "readers \(names), missing \(missing.map(\.friendlyName))"
            } catch let error as HarnessError where error.code == .launchFailed || error.code == .timeout {
                lastAnswer = error.reason
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
        throw HarnessError(code: .timeout,
                           reason: "pcscd at \(socketPath) was not ready within \(timeout): \(lastAnswer)",
                           logTail: child.logTail())
    }

    // MARK: - Leftovers

    /// Kills pcscd instances that earlier test processes left behind (they crashed before their
    /// `atexit` ran) and removes their directories and tool output files.
    ///
    /// A directory counts as left behind when its `owner.pid` names a process that no longer
    /// exists. Its pcscd is killed only if `/proc/PID/cmdline` mentions that directory, so a reused
    /// pid is never hit. vicc exits by itself when its pcscd goes.
    /// - Returns: the directories removed.
    @discardableResult
    public static func reapLeftovers() -> [String] {
        let base = NSTemporaryDirectory()
        let files = FileManager.default
        let names = (try? files.contentsOfDirectory(atPath: base)) ?? []
        var removed: [String] = []
        // Output files of short tool runs: `secbridge-tool.<owner pid>.<id>.out`.
        for name in names where name.hasPrefix("secbridge-tool.") {
            let owner = name.split(separator: ".").dropFirst().first.flatMap { Int32($0) }
            if let owner, owner != getpid(), !processExists(owner) {
                try? files.removeItem(atPath: (base as NSString).appendingPathComponent(name))
            }
        }
        for name in names where name.hasPrefix("secbridge-pcscd.") {
            let directory = (base as NSString).appendingPathComponent(name)
            guard let owner = readPID(directory + "/owner.pid"), owner != getpid(), !processExists(owner) else { continue }
            if let pid = readPID(directory + "/run/pcscd.pid"),
               commandLine(of: pid).contains(directory) {
                _ = Glibc.kill(pid, SIGKILL)
            }
            try? files.removeItem(atPath: directory)
            removed.append(directory)
        }
        return removed
    }

    /// `/proc/PID/cmdline` with NULs as spaces ("" if gone). Read through a handle: procfs files
    /// report size 0, so size-based reads come back empty.
    private static func commandLine(of pid: Int32) -> String {
        guard let handle = FileHandle(forReadingAtPath: "/proc/\(pid)/cmdline") else { return "" }
        defer { try? handle.close() }
        let data = (try? handle.readToEnd()) ?? Data()
        return String(decoding: data.map { $0 == 0 ? 0x20 : $0 }, as: UTF8.self)
    }

    /// The pid in the `pcscd.pid` file beside the socket `socketPath` (a private pcscd's
    /// `run/pcscd.comm`), or nil when there is none: for tests that stop, continue or watch that pcscd.
    public static func daemonPID(socketPath: String) -> Int32? {
        readPID(String(socketPath.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")) + "/pcscd.pid")
    }

    private static func readPID(_ path: String) -> Int32? {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        // pcscd writes "PID\n\0"
        return Int32(text.trimmingCharacters(in: .whitespacesAndNewlines.union(CharacterSet(charactersIn: "\0"))))
    }

    private static func processExists(_ pid: Int32) -> Bool {
        Glibc.kill(pid, 0) == 0 || errno == EPERM
    }
}
