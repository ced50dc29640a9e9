/// The waits between attempts to reach a service that went away: `initial`, then twice the wait
/// before, at most `maximum`, and `initial` again once it answered (``reset()``).
///
/// The ceiling sets how late a long-running command notices that pcscd (or vpcd) is back: at most
/// one ceiling after its return, plus the time the attempt takes. Issue 33 asks for the first
/// command after a restart answered within 2 s, so the commands use a ceiling of 1 s
/// (``serviceCeiling``); the restart times measured with it are in docs/faults.md, "pcscd restarts".
package struct RetryBackoff: Sendable, Equatable {
    /// The first wait.
    package let initial: Duration
    /// The longest wait.
    package let maximum: Duration
    private var current: Duration

    /// The ceiling of every long-running command's back-off: 1 s.
    package static let serviceCeiling = Duration.seconds(1)

    /// A back-off from `initial` to `maximum` (both clamped to at least 1 ms; `maximum` to at
    /// least `initial`).
    package init(initial: Duration, maximum: Duration = serviceCeiling) {
        self.initial = max(initial, .milliseconds(1))
        self.maximum = max(maximum, self.initial)
        current = self.initial
    }

    /// The wait before the next attempt; the one after it doubles, up to ``maximum``.
    package mutating func next() -> Duration {
        let wait = current
        current = min(current * 2, maximum)
        return wait
    }

    /// The service answered: the next wait is ``initial`` again.
    package mutating func reset() { current = initial }
}
