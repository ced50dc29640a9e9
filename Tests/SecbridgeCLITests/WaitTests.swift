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

    /// A clock the test moves by hand (nanoseconds).
    final class ManualClock: @unchecked Sendable {
        let now = Atomic<Int64>(1_000_000_000)
        func advance(_ duration: Duration) {
            let (seconds, attoseconds) = duration.components
            now.add(seconds * 1_000_000_000 + attoseconds / 1_000_000_000, ordering: .relaxed)
        }
        var reading: @Sendable () -> Int64 { { [self] in now.load(ordering: .relaxed) } }
    }

    /// A watchdog with no thread of its own: the test takes the watch thread's steps.
    static func manualWatchdog(bound: Duration = .seconds(40)) -> (CallWatchdog, ManualClock) {
        let clock = ManualClock()
        let watchdog = CallWatchdog(clock: clock.reading)
        watchdog.enable(bound: bound, console: Silent(), watchThread: false)
        return (watchdog, clock)
    }

    @Test func watchdogWakesOncePerBoundOfBusyTimeHoweverManyCalls() {
        let (watchdog, clock) = Self.manualWatchdog(bound: .seconds(40))
        // 100 s of calls 10 ms apart (10 000 calls), each taking 1 ms; the watch thread wakes when
        // its sleep ends and looks at what is in progress then.
        var wakeAt = clock.now.load(ordering: .relaxed)
        var wakes = 0
        for call in 0..<10_000 {
            watchdog.guarding("SCardTransmit") {
                clock.advance(.milliseconds(1))
                if clock.now.load(ordering: .relaxed) >= wakeAt {
                    wakes += 1
                    guard case .sleep(let nanoseconds) = watchdog.step(now: clock.now.load(ordering: .relaxed)) else {
                        Issue.record("call \(call): the watchdog fired or went idle during a call of 1 ms")
                        return
                    }
                    // Asleep until this call's deadline: 40 s after it began, and a tick.
                    #expect(nanoseconds == 40_000_000_000 - 1_000_000 + 10_000_000)
                    wakeAt = clock.now.load(ordering: .relaxed) + nanoseconds
                }
            }
            clock.advance(.milliseconds(9))
        }
        // The first look, then one at each deadline: 0 s, 40 s, 80 s.
        #expect(wakes == 3)
        #expect(watchdog.wakeCount == 0 && watchdog.signalCount == 0)
    }

    @Test func watchdogFiresAtTheBoundOfTheCallInProgress() {
        let (watchdog, clock) = Self.manualWatchdog(bound: .seconds(40))
        watchdog.guarding("SCardTransmit") {
            clock.advance(.seconds(39))
            #expect(watchdog.step(now: clock.now.load(ordering: .relaxed)) == .sleep(nanoseconds: 1_010_000_000))
            clock.advance(.seconds(1))
            #expect(watchdog.step(now: clock.now.load(ordering: .relaxed)) == .fire(
                "secbridge: error: SCardTransmit did not return within 40 s: pcscd or the card stopped answering; check `systemctl status pcscd` (or the PCSCLITE_CSOCK_NAME socket), then remove and replace the card\n"))
        }
        // Returned: nothing fires, however late the watch thread looks; with no call since its
        // last look it goes idle.
        clock.advance(.seconds(100))
        #expect(watchdog.step(now: clock.now.load(ordering: .relaxed)) == .idle)
    }

    @Test func watchdogGivesExtraTimeAndTheStalledMessageOfThatCall() {
        let (watchdog, clock) = Self.manualWatchdog(bound: .seconds(40))
        watchdog.guarding("SCardControl", extra: .seconds(5)) {
            clock.advance(.seconds(44))
            #expect(watchdog.step(now: clock.now.load(ordering: .relaxed)) == .sleep(nanoseconds: 1_010_000_000))
        }
        watchdog.guarding("SCardBeginTransaction", stalled: "another program holds the card") {
            clock.advance(.seconds(40))
            #expect(watchdog.step(now: clock.now.load(ordering: .relaxed)) == .fire(
                "secbridge: error: SCardBeginTransaction did not return within 40 s: another program holds the card\n"))
        }
        // The next call is not described by the earlier call's message.
        watchdog.guarding("SCardTransmit") {
            clock.advance(.seconds(40))
            guard case .fire(let message) = watchdog.step(now: clock.now.load(ordering: .relaxed)) else {
                Issue.record("no fire at the bound")
                return
            }
            #expect(message.contains("SCardTransmit did not return within 40 s: pcscd or the card stopped answering"))
        }
    }

    @Test func watchdogGoesIdleOnlyAfterABoundWithoutCallsAndACallWakesItOnce() {
        let (watchdog, clock) = Self.manualWatchdog(bound: .seconds(40))
        watchdog.guarding("SCardTransmit") { clock.advance(.milliseconds(1)) }
        // A call was made since the last look: awake one more bound, even with none in progress.
        #expect(watchdog.step(now: clock.now.load(ordering: .relaxed)) == .sleep(nanoseconds: 40_000_000_000))
        clock.advance(.seconds(40))
        #expect(watchdog.step(now: clock.now.load(ordering: .relaxed)) == .idle)
        // The watch thread would now wait without a deadline: the next calls signal it, once.
        watchdog.enterIdle()
        for _ in 0..<100 { watchdog.guarding("SCardTransmit") {} }
        #expect(watchdog.signalCount == 1)
        #expect(watchdog.step(now: clock.now.load(ordering: .relaxed)) == .sleep(nanoseconds: 40_000_000_000))
    }

    @Test func watchdogThreadDoesNotWakeForEachGuardedCall() throws {
        let watchdog = CallWatchdog()
        watchdog.enable(bound: .seconds(600), console: Silent())
        for _ in 0..<2000 {
            watchdog.guarding("SCardTransmit") { () -> Void in }
        }
        // The thread started at the first call and sleeps at most one bound (600 s) from its first
        // look, whether it was scheduled before or after that call returned: no call signals it.
        #expect(watchdog.signalCount == 0)
        #expect(watchdog.wakeCount == 0)
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
