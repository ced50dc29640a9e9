import Testing
@testable import SecureElementCredential

/// The virtual clock's waits for sleepers: resumed by the sleeper that registers, never by polling.
@Suite struct VirtualSessionClockTests {
    @Test func untilSleepersResumesWhenTheCountIsReachedAndNotBefore() async throws {
        let clock = VirtualSessionClock()
        let first = Task { try await clock.sleep(until: .seconds(40)) }
        #expect(await clock.untilSleepers(1, within: .seconds(10)))
        #expect(clock.sleeperCount == 1)
        // Two are awaited: the wait stays suspended until the second sleeper registers.
        let watcher = Task { await clock.untilSleepers(2) }
        let second = Task { try await clock.sleep(until: .seconds(5)) }
        #expect(await watcher.value)
        #expect(clock.sleeperCount == 2)
        #expect(await clock.untilSleeper(until: .seconds(5), within: .seconds(10)))
        clock.advance(by: .seconds(40))
        try await first.value
        try await second.value
        #expect(clock.sleeperCount == 0)
    }

    @Test func aWaitNoSleeperSatisfiesEndsAtItsBoundOrWhenCancelled() async {
        let clock = VirtualSessionClock()
        // No task sleeps: the bound (real time, short) ends the wait with false.
        #expect(await clock.untilSleepers(1, within: .milliseconds(50)) == false)
        #expect(await clock.untilSleeper(until: .seconds(1), within: .milliseconds(50)) == false)
        let watcher = Task { await clock.untilSleepers(3) }
        watcher.cancel()
        #expect(await watcher.value == false)
        // A sleeper registering later no longer finds the cancelled watcher.
        let sleeper = Task { try await clock.sleep(until: .seconds(1)) }
        #expect(await clock.untilSleepers(1, within: .seconds(10)))
        sleeper.cancel()
        await #expect(throws: CancellationError.self) { try await sleeper.value }
    }
}
