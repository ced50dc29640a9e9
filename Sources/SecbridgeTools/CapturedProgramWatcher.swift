// The program `secbridge capture` runs dies with capture, however capture ends (issue 33).
import Foundation
import SecbridgeCLI

#if canImport(Glibc)
import Glibc
#endif

/// Ties the captured program's life to capture's: a watcher process (`/bin/sh`) blocks in read(2)
/// on a pipe whose write end only capture holds. The kernel closes that end when capture exits,
/// SIGKILL included; the watcher then sees end-of-file and stops the program: SIGTERM, and SIGKILL
/// 2 s later if it still runs. No polling.
///
/// The program is signalled only while `/proc/PID/stat` shows the start time (field 22, in clock
/// ticks since boot; proc(5)) it had when it was started, so a pid reused after the program's own
/// end is never hit. PR_SET_PDEATHSIG is not used: it fires when the *thread* that started the
/// child ends (prctl(2)), and it needs code between fork and exec, which posix_spawn has no room for.
struct CapturedProgramWatcher {
    /// The pipe's write end: closing it (or capture's exit) lets the watcher act.
    private var lifeline: Int32
    private let watcher: pid_t

    /// The watcher's script (`/bin/sh -c`, arguments: the program's pid and its start time).
    static let script = """
        cat >/dev/null
        same() { s=$(cat "/proc/$1/stat" 2>/dev/null) || return 1; want=$2; set -- ${s##*\\) }; [ "${20}" = "$want" ]; }
        if same "$1" "$2"; then kill -TERM "$1"; sleep 2; if same "$1" "$2"; then kill -KILL "$1"; fi; fi
        """

    /// Field 22 of `/proc/PID/stat` (the start time), nil when it cannot be read. The fields after
    /// the command name in parentheses (which may hold spaces and parentheses) start at field 3.
    static func startTime(of pid: pid_t) -> String? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = text.range(of: ") ", options: .backwards) else { return nil }
        let fields = text[close.upperBound...].split(separator: " ")
        return fields.count > 19 ? String(fields[19]) : nil
    }

    /// Starts the watcher of `pid`, a child of this process started a moment ago.
    /// - Throws: `CLIError.failure` when the pipe or the watcher cannot be made.
    /// The watcher gets a plain PATH alone: not the program's environment, whose spy library
    /// (LD_PRELOAD or LD_LIBRARY_PATH) has no business in `sh`, `cat` and `sleep`.
    init(watching pid: pid_t) throws(CLIError) {
        guard let started = Self.startTime(of: pid) else {
            throw .failure("cannot read /proc/\(pid)/stat to watch the captured program")
        }
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { throw .failure("pipe: \(String(cString: strerror(errno)))") }
        // Neither end leaks into a program started later (the watcher gets the read end as fd 0).
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        do {
            watcher = try SecbridgeCLI.spawn(
                ["/bin/sh", "-c", Self.script, "secbridge-capture-watcher", String(pid), started],
                environment: ["PATH": "/usr/bin:/bin"], standardOutput: nil, standardInput: ends[0], blockingStopSignals: true)
        } catch {
            close(ends[0])
            close(ends[1])
            throw error
        }
        close(ends[0])
        lifeline = ends[1]
    }

    /// After the program ended: cuts the lifeline, and reaps the watcher when it has ended within
    /// 200 ms (it has nothing to do then; one still running is left to end by itself).
    mutating func finish() {
        guard lifeline >= 0 else { return }
        close(lifeline)
        lifeline = -1
        var status: Int32 = 0
        for _ in 0..<20 {
            let done = waitpid(watcher, &status, WNOHANG)
            if done == watcher || (done < 0 && errno != EINTR) { return }
            usleep(10_000)
        }
    }
}
