import PCSCCore
import Synchronization
import Testing

/// `VirtualTime.Activity`: work on Swift tasks that time waits for (`secbridge emulate`'s session
/// on a desk on virtual time). Asserted on virtual instants and on what has woken, never on wall
/// time; the suite's limit bounds a wait the clock fails to end.
@Suite(.timeLimit(.minutes(1))) struct VirtualTimeActivityTests {
    func onThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            startThread(name: "vt-activity") { continuation.resume(returning: body()) }
        }
    }

    /// When a plain sleeper woke (nil: not yet).
    final class WakeUp: Sendable {
        private let instant = Mutex<Duration?>(nil)
        var time: Duration? { instant.withLock { $0 } }
        func record(_ now: Duration) { instant.withLock { $0 = now } }
    }

    /// A task sleeping on the clock (not a flow) whose wake-up is recorded.
    func plainSleeper(_ time: VirtualTime, until deadline: Duration, woke: WakeUp) -> Task<Void, Never> {
        Task.detached {
            try? await time.sleep(until: deadline)
            woke.record(time.now)
        }
    }

    /// The flow that wakes from its handed-over sleep at 1 s holds again at once: the plain
    /// sleeper due at 2 s stays asleep until that flow releases, however long it runs.
    @Test func aFlowWokenFromItsSleepHoldsTimeUntilItReleases() async throws {
        let time = VirtualTime(stallLimit: .seconds(30))
        defer { time.close() }
        let activity = time.beginActivity()
        let plain = WakeUp()
        let sleeper = plainSleeper(time, until: .seconds(2), woke: plain)
        activity.hold()  // the second flow, started by the first
        let flow = Task.detached { () -> (Duration, Duration?) in
            try? await activity.sleep(until: .seconds(1), handingOver: true)
            // Running again: time must not move while this flow runs, whatever the delay.
            await Task.yield()
            let seen = (time.now, plain.time)
            activity.release()
            return seen
        }
        await onThread { time.waitUntilWaiting(2) }
        #expect(time.now == .zero, "the first flow holds")
        activity.release()  // the first flow now waits for the others
        let (wokeAt, plainWhileRunning) = await flow.value
        #expect(wokeAt == .seconds(1))
        #expect(plainWhileRunning == nil, "time moved to 2 s while the woken flow ran")
        await sleeper.value
        #expect(plain.time == .seconds(2))
        #expect(activity.holds == 0)
        #expect(time.stallCount == 0)
    }

    /// A reader command on a participant thread holds in the flow's place: time moves while the
    /// thread waits on the clock (5 s), and the flow holds again when the call returns, so the
    /// plain sleeper due at 6 s sleeps until the flow releases.
    @Test func blockingWorkHandedOverLetsTimeMoveOnlyWhileItWaits() async throws {
        let time = VirtualTime(stallLimit: .seconds(30))
        defer { time.close() }
        let activity = time.beginActivity()
        let plain = WakeUp()
        let sleeper = plainSleeper(time, until: .seconds(6), woke: plain)
        await onThread { time.waitUntilWaiting(1) }
        let executor = BlockingExecutor(name: "vt-handover", activity: activity)
        defer { executor.shutdown() }
        let returnedAt = try await executor.run { () -> Duration in
            time.sleepThread(.seconds(5))
            return time.now
        }
        #expect(returnedAt == .seconds(5))
        #expect(activity.holds == 1, "the flow's hold is back")
        await onThread { time.waitUntilWaiting(1) }
        #expect(plain.time == nil)
        #expect(time.now == .seconds(5))
        activity.release()
        await sleeper.value
        #expect(plain.time == .seconds(6))
        #expect(time.stallCount == 0)
    }

    /// A timer flow (`handingOver: false`) holds from its wake-up, also when it is cancelled, and
    /// `end()` gives back every hold left and takes no more.
    @Test func aTimerFlowHoldsFromItsWakeUpAndEndGivesEverythingBack() async throws {
        let time = VirtualTime(stallLimit: .seconds(30))
        defer { time.close() }
        let activity = time.beginActivity()
        activity.release()
        let timer = Task.detached { () -> Duration in
            try? await activity.sleep(until: .seconds(15), handingOver: false)
            return time.now
        }
        #expect(await timer.value == .seconds(15))
        #expect(activity.holds == 1, "the fired timer holds until its work is done")
        let cancelled = Task.detached { () -> Bool in
            do {
                try await activity.sleep(until: .seconds(40), handingOver: false)
                return false
            } catch {
                return true
            }
        }
        cancelled.cancel()
        #expect(await cancelled.value)
        #expect(activity.holds == 2, "a cancelled timer holds too, and releases as it ends")
        let plain = WakeUp()
        let sleeper = plainSleeper(time, until: .seconds(20), woke: plain)
        activity.end()
        await sleeper.value
        #expect(plain.time == .seconds(20))
        activity.hold()
        #expect(activity.holds == 0, "no hold after end()")
        #expect(time.now == .seconds(20))
    }
}
