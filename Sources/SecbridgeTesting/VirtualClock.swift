import Synchronization

/// A clock whose time moves only when the test says so: for the `@Sendable () -> Duration` clocks
/// the package takes (a `TranscriptRecorder`'s time since the start of a recording, for one).
///
///     let clock = VirtualClock()
///     let recorder = TranscriptRecorder(sink: buffer, clock: clock.read)
///     clock.advance(by: .milliseconds(20))   // the next line is stamped +20.000ms
///
/// The session engine has its own, `VirtualSessionClock` (SecureElementCredential), which also
/// wakes the session's timers when time advances; the simulated readers take a time scale instead
/// (`SimulatedDesk`, the driver's `timescale=`).
public final class VirtualClock: Sendable {
    private let now = Mutex<Duration>(.zero)

    /// Starts at zero.
    public init() {}

    /// The time since the clock was made.
    public var elapsed: Duration { now.withLock { $0 } }

    /// Moves time forward by `duration` (a negative duration is ignored: time never goes back).
    public func advance(by duration: Duration) {
        guard duration > .zero else { return }
        now.withLock { $0 += duration }
    }

    /// The clock as the closure the package's APIs take.
    public var read: @Sendable () -> Duration { { [self] in elapsed } }
}
