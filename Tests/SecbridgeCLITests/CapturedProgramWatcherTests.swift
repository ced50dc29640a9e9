import Foundation
import SecbridgeCLI
import Testing

@testable import SecbridgeTools

/// Issue 33 item 5: the program capture runs dies with capture. The kernel closes a killed
/// process's descriptors, the watcher's lifeline among them; `finish()` closes it the same way.
@Suite struct CapturedProgramWatcherTests {
    /// Waits for `pid` to end, at most `bound` (WNOHANG every 10 ms); its exit status, or nil.
    static func reap(_ pid: pid_t, within bound: Duration) -> Int32? {
        let deadline = ContinuousClock.now + bound
        var status: Int32 = 0
        while ContinuousClock.now < deadline {
            if waitpid(pid, &status, WNOHANG) == pid { return SecbridgeCLI.exitStatus(status) }
            usleep(10_000)
        }
        return nil
    }

    /// The lifeline cut while the program still runs (capture gone): SIGTERM ends it (143).
    @Test func aProgramStillRunningWhenTheLifelineIsCutIsTerminated() throws {
        let pid = try SecbridgeCLI.spawn(["sleep", "30"], environment: ["PATH": "/usr/bin:/bin"], standardOutput: nil)
        var watcher = try CapturedProgramWatcher(watching: pid)
        #expect(Self.reap(pid, within: .milliseconds(100)) == nil)  // it runs while capture holds the lifeline
        watcher.finish()
        let status = Self.reap(pid, within: .seconds(10))
        if status == nil { kill(pid, SIGKILL); _ = Self.reap(pid, within: .seconds(5)) }
        #expect(status == 128 + SIGTERM)
    }

    /// The start time is field 22 of /proc/PID/stat, after a command name with a space and a `)`.
    @Test func theStartTimeIsReadAfterTheCommandName() throws {
        let name = "a b) c"
        let directory = NSTemporaryDirectory() + "secbridge-watch-\(getpid())"
        try? FileManager.default.removeItem(atPath: directory)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createSymbolicLink(atPath: directory + "/" + name, withDestinationPath: "/bin/sleep")
        let pid = try SecbridgeCLI.spawn([directory + "/" + name, "30"], environment: [:], standardOutput: nil)
        defer { kill(pid, SIGKILL); _ = Self.reap(pid, within: .seconds(5)) }
        usleep(50_000)  // the exec done: the name in /proc is the new one
        let stat = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
        #expect(stat.contains("(\(name))"), "\(stat)")
        let started = try #require(CapturedProgramWatcher.startTime(of: pid))
        // proc(5): field 22 is starttime; our own, read the same way, is not later than the child's.
        let own = try #require(CapturedProgramWatcher.startTime(of: getpid()))
        #expect(UInt64(started)! >= UInt64(own)!)
        #expect(CapturedProgramWatcher.startTime(of: pid) == started)
    }
}
