import PCSCCore
import Testing

// The waits of the long-running commands between attempts to reach pcscd or vpcd (issue 33: the
// first command after a restart answered within 2 s; docs/faults.md, "pcscd restarts").
@Suite("Retry back-off")
struct RetryBackoffTests {
    @Test("monitor's waits: 100 ms doubling to the 1 s ceiling, and from the start once pcscd answered")
    func monitorSchedule() {
        var backoff = RetryBackoff(initial: .milliseconds(100))
        #expect((0..<6).map { _ in backoff.next() } == [100, 200, 400, 800, 1000, 1000].map(Duration.milliseconds))
        backoff.reset()
        #expect(backoff.next() == .milliseconds(100))
    }

    @Test("serve's waits: 250 ms doubling to the 1 s ceiling")
    func serveSchedule() {
        var backoff = RetryBackoff(initial: .milliseconds(250))
        #expect((0..<4).map { _ in backoff.next() } == [250, 500, 1000, 1000].map(Duration.milliseconds))
    }

    @Test("No wait is longer than the ceiling, none is zero, and a ceiling below the first wait is raised to it")
    func bounds() {
        #expect(RetryBackoff.serviceCeiling == .seconds(1))
        var zero = RetryBackoff(initial: .zero, maximum: .zero)
        #expect(zero.next() == .milliseconds(1))
        var inverted = RetryBackoff(initial: .seconds(3), maximum: .seconds(1))
        #expect(inverted.next() == .seconds(3))
        #expect(inverted.next() == .seconds(3))
    }
}
