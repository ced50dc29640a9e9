#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import PCSCCore

/// The time base of a simulation: how long simulated durations take on the wall clock.
///
/// Every wait in the simulator (the ACR122U MCU timeout, libccid's 30 s escape timeout, the PN532's
/// passive activation attempts) is a simulated `Duration` multiplied by `scale` before the calling
/// thread blocks on a condition variable. `scale` 1 is real time; tests use e.g. 0.001 so that a 5 s
/// MCU timeout takes 5 ms. A scale of 0 makes every timeout expire at once (a wait then only succeeds
/// when what it waits for has already happened).
///
/// The clock is CLOCK_MONOTONIC: changes of the wall-clock time do not move deadlines.
///
/// A clock made with ``init(virtualTime:)`` is virtual instead: every deadline is a point on a
/// `VirtualTime` (PCSCCore), which moves only when the desk is idle or the test advances it, so
/// no wait takes wall time and the outcome is the same on every run; ``scale`` is then 0.
public struct SimulationClock: Sendable, Hashable {
    /// Wall-clock seconds per simulated second, 0 … 1000 (0 for a virtual clock).
    public let scale: Double
    /// The virtual time every wait runs on, or nil for scaled wall-clock time.
    public let virtualTime: VirtualTime?

    /// - Parameter scale: wall-clock seconds per simulated second; values outside 0 … 1000 (and NaN)
    ///   are clamped into that range, so no wait can become unbounded.
    public init(scale: Double = 1) {
        if scale.isNaN || scale < 0 {
            self.scale = 0
        } else {
            self.scale = min(scale, 1000)
        }
        virtualTime = nil
    }

    /// A clock on `virtualTime`: simulated durations are virtual durations.
    public init(virtualTime: VirtualTime) {
        scale = 0
        self.virtualTime = virtualTime
    }

    public static func == (a: SimulationClock, b: SimulationClock) -> Bool {
        a.scale == b.scale && a.virtualTime === b.virtualTime
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(scale)
        hasher.combine(virtualTime.map(ObjectIdentifier.init))
    }

    /// Real time.
    public static let realTime = SimulationClock(scale: 1)

    /// The wall-clock nanoseconds a simulated duration takes (saturating, never negative).
    public func wallNanoseconds(for duration: Duration) -> UInt64 {
        let (seconds, attoseconds) = duration.components
        let simulated = Double(seconds) * 1e9 + Double(attoseconds) / 1e9
        let wall = simulated * scale
        if !(wall > 0) { return 0 }
        if wall >= Double(UInt64.max / 2) { return UInt64.max / 2 }
        return UInt64(wall)
    }

    /// The monotonic clock now, in nanoseconds.
    static func monotonicNow() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
    }

    /// The wall-clock deadline `duration` (simulated) from now.
    func deadline(after duration: Duration) -> Deadline {
        if let virtualTime {
            return Deadline(monotonicNanoseconds: virtualTime.deadline(after: duration), virtualTime: virtualTime)
        }
        let now = Self.monotonicNow()
        let (sum, overflow) = now.addingReportingOverflow(wallNanoseconds(for: duration))
        return Deadline(monotonicNanoseconds: overflow ? UInt64.max / 2 : sum)
    }
}

/// A point on the monotonic clock, in nanoseconds, or on a virtual clock (``virtualTime``).
struct Deadline: Sendable, Comparable {
    var monotonicNanoseconds: UInt64
    /// The virtual clock the nanoseconds count on, nil for CLOCK_MONOTONIC.
    var virtualTime: VirtualTime?

    init(monotonicNanoseconds: UInt64, virtualTime: VirtualTime? = nil) {
        self.monotonicNanoseconds = monotonicNanoseconds
        self.virtualTime = virtualTime
    }

    static func < (a: Deadline, b: Deadline) -> Bool { a.monotonicNanoseconds < b.monotonicNanoseconds }
    static func == (a: Deadline, b: Deadline) -> Bool { a.monotonicNanoseconds == b.monotonicNanoseconds }

    var hasPassed: Bool {
        if let virtualTime { return virtualTime.hasPassed(monotonicNanoseconds) }
        return SimulationClock.monotonicNow() >= monotonicNanoseconds
    }

    static func earliest(_ a: Deadline?, _ b: Deadline?) -> Deadline? {
        switch (a, b) {
        case (nil, nil): nil
        case (let x?, nil), (nil, let x?): x
        case (let x?, let y?): min(x, y)
        }
    }
}

/// A pthread mutex with one condition variable (CLOCK_MONOTONIC), guarding a non-Sendable state
/// object. `Synchronization.Mutex` has no condition variable, and the simulator must block threads
/// until a peer appears (TgInitAsTarget, InListPassiveTarget), so this wraps the POSIX primitives.
///
/// The state is only touched inside `withLock`; `wait(until:)` must be called from inside `withLock`.
final class ConditionLock<State>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>
    /// Only accessed with the mutex held.
    let state: State

    init(_ state: State) {
        self.state = state
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        condition = .allocate(capacity: 1)
        condition.initialize(to: pthread_cond_t())
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        condition.deinitialize(count: 1)
        condition.deallocate()
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    func withLock<R, E: Error>(_ body: (State) throws(E) -> R) throws(E) -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(state)
    }

    /// Releases the mutex until `broadcast()` or `deadline` (nil: no deadline), then takes it again.
    /// Spurious wake-ups happen: callers re-check their condition in a loop bounded by the deadline.
    /// - Returns: false once the deadline has passed.
    @discardableResult
    func wait(until deadline: Deadline?) -> Bool {
        guard let deadline else {
            pthread_cond_wait(condition, mutex)
            return true
        }
        if let virtualTime = deadline.virtualTime {
            // The thread waits untimed; the clock's keeper wakes it when virtual time reaches the
            // deadline (VirtualTime.park: this lock, then the clock's).
            virtualTime.park(until: deadline.monotonicNanoseconds, key: waitKey, wake: { [self] in
                pthread_mutex_lock(mutex)
                pthread_cond_broadcast(condition)
                pthread_mutex_unlock(mutex)
            }) {
                pthread_cond_wait(condition, mutex)
            }
            return !deadline.hasPassed
        }
        if deadline.hasPassed { return false }
        var ts = timespec()
        ts.tv_sec = Int(deadline.monotonicNanoseconds / 1_000_000_000)
        ts.tv_nsec = Int(deadline.monotonicNanoseconds % 1_000_000_000)
        pthread_cond_timedwait(condition, mutex, &ts)
        return !deadline.hasPassed
    }

    /// Wakes every waiting thread; call with the mutex held after changing the state.
    func broadcast() {
        pthread_cond_broadcast(condition)
    }

    /// What a wait on virtual time is registered under (`VirtualTime.wakeWaiters(of:)`).
    var waitKey: ObjectIdentifier { ObjectIdentifier(self) }

    /// On virtual time, wakes the threads waiting in ``wait(until:)`` through the clock, which
    /// counts them as running at once (`VirtualTime.wakeWaiters(of:)`): after a change a
    /// broadcast announced, so that time does not move before they have seen it. Call it with the
    /// mutex not held.
    func wakeWaiters(on virtualTime: VirtualTime?) {
        virtualTime?.wakeWaiters(of: waitKey)
    }
}
