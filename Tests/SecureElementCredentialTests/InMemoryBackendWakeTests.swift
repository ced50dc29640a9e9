import SecbridgeTesting
import Synchronization
import Testing
@testable import SecureElementCredential

/// InMemoryEmulationBackend loses no wake: an interrupt that comes while the engine is on its way
/// into a wait (EmulationRunner.stop() between its check and the wait) ends that wait. Lost, it
/// left the wait to its step on the virtual clock, which no test moves then: the session's
/// endCardEmulation waited for good.
@Suite struct InMemoryBackendWakeTests {
    @Test func anInterruptBeforeTheWaitParksEndsTheWaitWithNoTerminal() async throws {
        let clock = VirtualSessionClock()
        let backend = InMemoryEmulationBackend(readerName: "in-memory wake test", clock: clock)
        try await backend.prepare()
        backend.interrupt()  // no wait is parked yet
        let rescued = Atomic(false)
        // A safety net, so that a lost interrupt fails this test instead of hanging it: a second
        // interrupt after 10 s of real time, when the wait has long parked.
        let rescue = Task {
            try await Task.sleep(for: .seconds(10))
            rescued.store(true, ordering: .relaxed)
            backend.interrupt()
        }
        let outcome = try await backend.waitForActivation(TargetParameters(CardEmulationOptions()))
        rescue.cancel()
        #expect(outcome == .noTerminal)
        let wasRescued = rescued.load(ordering: .relaxed)
        #expect(!wasRescued, "the first interrupt was lost: only the second ended the wait")
        #expect(clock.now == .zero)  // no step passed
        // The interrupt is spent: the next wait parks on the clock until its 5 s step passes.
        let next = Task { try await backend.waitForActivation(TargetParameters(CardEmulationOptions())) }
        #expect(await clock.untilSleepers(1, within: .seconds(10)))
        clock.advance(by: .seconds(5))
        #expect(try await next.value == .noTerminal)
    }

    /// An interrupt of one emulation does not end the first wait of the next (prepare() clears it):
    /// that wait parks, and a terminal presented then activates it.
    @Test func prepareClearsAnInterruptThatFoundNoWait() async throws {
        let clock = VirtualSessionClock()
        let backend = InMemoryEmulationBackend(readerName: "in-memory wake test 2", clock: clock)
        backend.interrupt()
        try await backend.prepare()
        let wait = Task { try await backend.waitForActivation(TargetParameters(CardEmulationOptions())) }
        #expect(await clock.untilSleepers(1, within: .seconds(10)))
        backend.present(InMemoryTerminal(commands: []))
        #expect(try await wait.value == .activated(mode: 0x08, initiatorCommand: [0xE0, 0x80]))
    }
}
