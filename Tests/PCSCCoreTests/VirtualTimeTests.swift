import PCSCCore
import Testing

/// The desk clock: time moves when every participant waits, to the earliest deadline, and never
/// while one runs or a hold is in force. Each test bounds its own waits by the clock's stall limit
/// (which would print a line, count a stall and advance), never by sleeping, and asserts on virtual
/// time and the stall count, never on wall time (a loaded machine may take seconds for anything).
/// The suite's time limit bounds a wait this clock fails to end.
@Suite(.timeLimit(.minutes(1))) struct VirtualTimeTests {
    /// Runs `body` on a thread of its own (the waits block; never on the shared pool) and returns
    /// its result.
    func onThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            startThread(name: "vt-test") { continuation.resume(returning: body()) }
        }
    }

    @Test func aLoneThreadSleepEndsAtItsDeadlineWithNoWallTime() async {
        let time = VirtualTime(stallLimit: .seconds(30))
        defer { time.close() }
        let woke = await onThread {
            time.sleepThread(.seconds(5))
            return time.now
        }
        #expect(woke == .seconds(5))
        // Time moved once, because the desk was idle, not because the stall bound ran out.
        #expect(time.advanceCount == 1)
        #expect(time.stallCount == 0)
    }

    @Test func twoSleepersWakeInDeadlineOrderAtTheirOwnDeadlines() async {
        let time = VirtualTime(stallLimit: .seconds(30))
        defer { time.close() }
        // Held until both wait: a thread the clock has not seen yet cannot keep it still.
        time.hold()
        // Participants: a woken one reads the time before it moves on.
        async let a = onThread { time.participate { time.sleepThread(.milliseconds(400)); return time.now } }
        async let b = onThread { time.participate { time.sleepThread(.seconds(3)); return time.now } }
        await onThread { time.waitUntilWaiting(2) }
        time.release()
        let (first, second) = await (a, b)
        #expect(first == .milliseconds(400))
        #expect(second == .seconds(3))
        #expect(time.stallCount == 0)
    }

    @Test func aRunningParticipantKeepsTimeStillUntilItWaits() async {
        let time = VirtualTime(stallLimit: .seconds(30))
        defer { time.close() }
        let woke = ConditionFlag()
        let seenWhileRunning = await onThread {
            time.participate {
                startThread(name: "vt-sleeper") {
                    time.sleepThread(.seconds(1))
                    woke.set()
                }
                // The sleeper's deadline is due as soon as it waits, but a participant runs.
                time.waitUntilWaiting(1)
                return time.now
            }
        }
        #expect(seenWhileRunning == .zero)
        await onThread { woke.wait() }
        #expect(time.now == .seconds(1))
    }

    @Test func aHoldKeepsTimeStillAndManualAdvanceStillMovesIt() async {
        let time = VirtualTime(stallLimit: .seconds(30))
        defer { time.close() }
        time.hold()
        async let sleeper = onThread { time.sleepThread(.seconds(2)); return time.now }
        await onThread { time.waitUntilWaiting(1) }
        // Held: the due sleeper stays asleep until the test moves time itself.
        #expect(time.now == .zero)
        time.advance(by: .seconds(2))
        #expect(await sleeper == .seconds(2))
        time.release()
    }

    @Test func aTaskSleepResumesWhenThreadsAreIdleAndAtItsDeadline() async throws {
        let time = VirtualTime(stallLimit: .seconds(30))
        defer { time.close() }
        try await time.sleep(until: .seconds(60))
        #expect(time.now == .seconds(60))
    }

    @Test func aCancelledTaskSleepThrowsCancellationError() async {
        let time = VirtualTime(stallLimit: .seconds(30))
        defer { time.close() }
        time.hold()
        let task = Task { try await time.sleep(until: .seconds(60)) }
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(time.now == .zero)
    }

    @Test func aDeskNamesItsClockAndCloseEndsEveryWait() async {
        let time = VirtualTime(stallLimit: .seconds(30))
        #expect(VirtualTime.named(time.name) === time)
        time.hold()
        async let sleeper: Void = onThread { time.sleepThread(.seconds(3600)) }
        time.close()
        await sleeper
        #expect(VirtualTime.named(time.name) == nil)
    }

    @Test func aParticipantBlockedOutsideTheClockIsAdvancedPastAfterTheStallLimit() async {
        let time = VirtualTime(stallLimit: .milliseconds(50))
        defer { time.close() }
        let woke = await onThread {
            time.participate {
                // This participant blocks on something the clock cannot see (it waits for the
                // sleeper itself): after the stall limit, time advances anyway.
                let done = ConditionFlag()
                startThread(name: "vt-sleeper") {
                    time.sleepThread(.seconds(1))
                    done.set()
                }
                done.wait()
                return time.now
            }
        }
        #expect(woke == .seconds(1))
        #expect(time.stallCount == 1)
    }
}

/// A one-shot flag threads wait on.
final class ConditionFlag: @unchecked Sendable {
    private var isSet = false
    private let lock = ConditionLock()
    func set() {
        lock.lock()
        isSet = true
        lock.broadcast()
        lock.unlock()
    }
    func wait() {
        lock.lock()
        while !isSet { lock.wait() }
        lock.unlock()
    }
}
