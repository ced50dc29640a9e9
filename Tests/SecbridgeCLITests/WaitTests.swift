import PCSCCore
import SecbridgeTesting
import Synchronization
import Testing

@testable import SecbridgeCLI

/// Waits sleep on a condition or a descriptor, never in polling steps: the number of wake-ups is
/// counted, and it does not grow with the calls or the time spent (no wall-clock assertion).
@Suite struct WaitTests {
    final class Silent: Console, @unchecked Sendable {
        func out(_ text: String) {}
        func err(_ text: String) {}
        func readLine() -> String? { nil }
    }

    @Test func watchdogDoesNotWakeForEachGuardedCall() throws {
        let watchdog = CallWatchdog()
        watchdog.enable(bound: .seconds(600), console: Silent())
        for _ in 0..<2000 {
            watchdog.guarding("SCardTransmit") { () -> Void in }
        }
        // The idle thread wakes when a call arms it; if it is scheduled only after that call
        // (empty here) has returned, it goes idle again and the next call wakes it once more. On
        // an idle machine that happens at most once; under load (a fresh-clone CI run beside
        // other work) it was seen twice. A watch that woke per call would wake about 2000 times,
        // and a poll every 100 ms as often as the loop took tenths of a second.
        #expect(watchdog.wakeCount <= 3)
    }

    @Test func completionWakesOnceWhenSignalled() async throws {
        let done = Completion()
        #expect(startThread(name: "test-signal") { done.signal() })
        try await onOwnThread { done.waitSignalledOrInterrupted(until: ContinuousClock.now + .seconds(60)) }
        #expect(done.isSignalled)
        // One poll(2) returned for the signal (or none when it came before the first wait).
        #expect(done.wakeCount <= 1)
    }

    @Test func completionWaitEndsAtItsDeadlineWithoutPolling() async throws {
        let done = Completion()
        try await onOwnThread { done.waitSignalledOrInterrupted(until: ContinuousClock.now + .milliseconds(30)) }
        #expect(!done.isSignalled)
        #expect(done.wakeCount <= 2)  // the timed poll(2), and at most one more for rounding
    }

    @Test func asyncBridgeSleepsOnceUntilTheTaskSignals() async throws {
        let waits = WaitCount()
        // The work finishes 50 ms after it starts, on a thread of its own: a 5 ms polling wait
        // would have slept about ten times.
        let value = try await onOwnThread {
            try awaitResult("the test work", timeout: .seconds(60), waits: waits) {
                await withCheckedContinuation { (c: CheckedContinuation<Int, Never>) in
                    _ = startThread(name: "test-resume") {
                        sleepThread(.milliseconds(50))
                        c.resume(returning: 42)
                    }
                }
            }
        }
        #expect(value == 42)
        #expect(waits.value <= 1)
    }
}
