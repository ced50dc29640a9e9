// Child processes timed from spawn to reap: posix_spawn and wait4 (Foundation's Process adds tens
// of milliseconds of its own per run). Everything a spawn needs (argv, envp, file actions) is
// prepared before the clock starts, and wait4's rusage gives the child's own CPU time.

import Foundation

/// One child run: wall time from posix_spawn to wait4's return, the child's CPU time (user +
/// system, from wait4's rusage, which includes the children it reaped) and its exit status.
///
/// Not its peak RSS: a child made by posix_spawn shares this process's memory until it execs, and
/// Linux keeps that high-water mark in the child's ru_maxrss. TranscriptMemory.swift measures
/// peaks through /usr/bin/time, whose own small child is a fresh fork.
struct ChildRun {
    var wall: Double
    var cpu: Double
    var status: Int32
}

/// A command ready to spawn: argv, envp and the file actions built once, reused by every run.
final class PreparedCommand {
    let executable: String
    let arguments: [String]
    private let argv: [UnsafeMutablePointer<CChar>?]
    private let envp: [UnsafeMutablePointer<CChar>?]
    private var actions = posix_spawn_file_actions_t()

    /// - Parameters:
    ///   - environment: the child's whole environment.
    ///   - output: where standard output goes (`/dev/null` by default); standard error goes to
    ///     `/dev/null` too, unless `errors` names a file.
    init(_ executable: String, _ arguments: [String], environment: [String: String],
         output: String = "/dev/null", errors: String = "/dev/null") {
        self.executable = executable
        self.arguments = arguments
        argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let lines: [String] = environment.map { "\($0.key)=\($0.value)" }.sorted()
        envp = lines.map { strdup($0) } + [nil]
        posix_spawn_file_actions_init(&actions)
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, errors, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    }

    deinit {
        posix_spawn_file_actions_destroy(&actions)
        (argv + envp).forEach { free($0) }
    }

    /// The command line, for messages.
    var commandLine: String { ([executable] + arguments).joined(separator: " ") }

    /// Spawns the command and waits for it; nil when it could not be spawned.
    func run() -> ChildRun? {
        var pid: pid_t = 0
        var usage = rusage()
        var status: Int32 = 0
        let start = ContinuousClock.now
        let spawned = argv.withUnsafeBufferPointer { argv in
            envp.withUnsafeBufferPointer { envp in
                posix_spawn(&pid, executable, &actions, nil, UnsafeMutablePointer(mutating: argv.baseAddress!),
                            UnsafeMutablePointer(mutating: envp.baseAddress!))
            }
        }
        guard spawned == 0 else { return nil }
        while wait4(pid, &status, 0, &usage) == -1 && errno == EINTR {}
        let wall = seconds(ContinuousClock.now - start)
        func value(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
        let exit = (status & 0x7F) == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
        return ChildRun(wall: wall, cpu: value(usage.ru_utime) + value(usage.ru_stime), status: exit)
    }
}

func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

/// Runs `a` and `b` in `pairs` alternating pairs (after `warmUp` unmeasured runs of each) and
/// returns both sides' runs; nil, with the failing command printed, when a run fails or exits with
/// a status other than those `accepting` allows.
func pairedRuns(_ a: PreparedCommand, _ b: PreparedCommand, pairs: Int, warmUp: Int = 2,
                accepting: Set<Int32> = [0], report: Report) -> (a: [ChildRun], b: [ChildRun])? {
    struct Failed: Error { var commandLine: String; var status: Int32? }
    func one(_ command: PreparedCommand) throws(Failed) -> ChildRun {
        guard let run = command.run() else { throw Failed(commandLine: command.commandLine, status: nil) }
        guard accepting.contains(run.status) else { throw Failed(commandLine: command.commandLine, status: run.status) }
        return run
    }
    do {
        for _ in 0..<warmUp {
            _ = try one(a)
            _ = try one(b)
        }
        return try alternating(pairs: pairs, { _ throws(Failed) in try one(a) }, { _ throws(Failed) in try one(b) })
    } catch {
        report.detail("\(error.commandLine): " + (error.status.map { "exit status \($0)" } ?? "could not be spawned"))
        return nil
    }
}
