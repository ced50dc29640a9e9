import Foundation
import PCSCSandbox
import SecbridgeCLI
import Testing

@testable import SecbridgeTools

/// Issue 33 item 1 against pcsc-lite itself: an interactive `secbridge shell` (on a terminal:
/// util-linux `script` gives it one) on a private pcscd of its own, restarted under it. The first
/// line after the restart, with the card present, is answered.
///
/// `script` is started with posix_spawn and an empty signal mask (`SecbridgeCLI.spawn`): started
/// by Foundation's Process from a test thread it inherits that thread's blocked signals and hangs
/// before relaying any output (measured).
@Suite struct ShellRestartEndToEndTests {
    @Test func theShellAnswersTheFirstLineAfterPcscdRestarts() async throws {
        try requireBuiltBinaries()
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/script") else { return }  // util-linux
        let directory = NSTemporaryDirectory() + "secbridge-shell-restart.\(getpid())"
        try? FileManager.default.removeItem(atPath: directory)
        try FileManager.default.createDirectory(atPath: directory + "/a", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // A reader of this test's own (not the shared reader's control directory).
        let reader = ReaderConfEntry(
            friendlyName: SimulatedReaders.friendlyName, deviceName: directory + "/a:field=restart", libraryPath: SimulatedReaders.libraryPath)
        let pcscd = try PrivatePCSCD(readers: [reader])
        defer { pcscd.stop() }
        _ = try await blocking { try pcscd.start() }
        let control = SimulatedReaderControl(socketPath: directory + "/a/control.sock")
        _ = try await blocking { try control.send("place-card uid=04A1B2C3 applet=echo id=card") }

        var ends: [Int32] = [-1, -1]
        try #require(pipe(&ends) == 0)
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        let output = directory + "/terminal"
        let command = try secbridgeBinary().path + " shell --wait 20 --history " + directory + "/history"
        let pid = try SecbridgeCLI.spawn(
            ["/usr/bin/script", "-qfc", command, "/dev/null"], environment: pcscd.environment, standardOutput: output,
            standardInput: ends[0])
        close(ends[0])
        defer {
            close(ends[1])  // end of input: the shell ends, and script with it
            var status: Int32 = 0
            for _ in 0..<200 where waitpid(pid, &status, WNOHANG) != pid { usleep(10_000) }
            kill(pid, SIGKILL)
            _ = waitpid(pid, &status, WNOHANG)
        }
        func type(_ line: String) {
            let bytes = Array((line + "\n").utf8)
            _ = bytes.withUnsafeBufferPointer { write(ends[1], $0.baseAddress, $0.count) }
        }
        func terminal() -> String { (try? String(contentsOfFile: output, encoding: .utf8)) ?? "" }
        /// Waits (bounded: 20 s, generous on a shared machine) until `needle` was printed `count` times.
        func waitFor(_ needle: String, count: Int = 1) async throws {
            let deadline = ContinuousClock.now + .seconds(20)
            while terminal().components(separatedBy: needle).count - 1 < count {
                guard ContinuousClock.now < deadline else {
                    Issue.record("no \(count)× '\(needle)' on the terminal: \(terminal())\n\(pcscd.logTail())")
                    throw HarnessError(code: .timeout, reason: "shell output")
                }
                try await Task.sleep(for: .milliseconds(20))
            }
        }
        let answer = "< 00 A4 04 00 01 AA 90 00"
        try await waitFor("card ATR 3B 80 80 01 01")
        type("00 A4 04 00 01 AA")
        try await waitFor(answer)

        _ = try await blocking { try pcscd.restart() }
        _ = try await blocking { try control.send("place-card uid=04A1B2C3 applet=echo id=card") }
        // pcscd sees the card at its next poll: the line is typed once pcsc_scan shows it.
        let environment = pcscd.environment
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline {
            let left = deadline - ContinuousClock.now  // one bound for the whole wait, not one per pcsc_scan
            let readers = try await blocking { try PCSCScan.status(environment: environment, timeout: left) }
            if readers.contains(where: \.isCardPresent) { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        type("00 A4 04 00 01 AA")
        try await waitFor("secbridge: note: pcscd came back; a new PC/SC context was established")
        try await waitFor(answer, count: 2)
        type("exit")
        #expect(!terminal().contains("SCARD_E_NO_SERVICE"), "\(terminal())")
    }
}
