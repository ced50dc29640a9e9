import PCSCCore
import Synchronization

/// The time base of a session: every duration the session rules use (card-emulation window,
/// assertion lifetime and rate window, wired idle rule, authorization timeout) is measured on it.
///
/// Instants are `Duration`s since the clock's origin. Production uses `ContinuousSessionClock`;
/// tests use `VirtualSessionClock`, which moves only when the test says so.
public protocol SessionClock: Sendable {
    /// The time since the clock's origin.
    var now: Duration { get }
    /// Suspends until `now >= deadline`.
    /// - Throws: `CancellationError` when the task is cancelled first.
    func sleep(until deadline: Duration) async throws
}

/// Real time, from `ContinuousClock` (monotonic, counts while the system sleeps).
public struct ContinuousSessionClock: SessionClock {
    private let origin: ContinuousClock.Instant

    /// A clock whose zero is now.
    public init() { origin = ContinuousClock.now }

    /// The time since the clock was made.
    public var now: Duration { ContinuousClock.now - origin }

    /// Sleeps until `deadline` on this clock.
    /// - Throws: `CancellationError` when the task is cancelled.
    public func sleep(until deadline: Duration) async throws {
        try await ContinuousClock().sleep(until: origin.advanced(by: deadline), tolerance: nil)
    }
}

/// A clock that moves only in `advance(by:)`: sleepers whose deadline is reached resume then, in
/// deadline order. No real time passes in tests that use it.
public final class VirtualSessionClock: SessionClock {
    private struct Sleeper {
        var id: UInt64
        var deadline: Duration
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct Watcher {
        var id: UInt64
        /// What the sleepers' deadlines must show for the watcher to resume.
        var condition: @Sendable ([Duration]) -> Bool
        var continuation: CheckedContinuation<Bool, Never>
    }

    private struct State {
        var now: Duration = .zero
        var nextID: UInt64 = 0
        var sleepers: [Sleeper] = []
        /// Tasks in ``untilSleepers(_:)`` or ``untilSleeper(until:)``, resumed when a sleeper
        /// that satisfies them registers.
        var watchers: [Watcher] = []

        /// Removes and returns the watchers the sleepers now satisfy.
        mutating func satisfiedWatchers() -> [Watcher] {
            let deadlines = sleepers.map(\.deadline)
            let satisfied = watchers.filter { $0.condition(deadlines) }
            watchers.removeAll { $0.condition(deadlines) }
            return satisfied
        }
    }

    private let state = Mutex(State())

    /// A clock at zero.
    public init() {}

    /// The virtual time.
    public var now: Duration { state.withLock { $0.now } }

    /// The number of tasks sleeping on this clock (for tests that wait for a loop to park).
    public var sleeperCount: Int { state.withLock { $0.sleepers.count } }

    /// Suspends until at least `count` tasks sleep on this clock (a loop parked on its timer), with
    /// no polling: the sleeper that makes the count resumes it when it registers.
    /// - Returns: true once `count` tasks sleep; false when the calling task is cancelled first
    ///   (a test bounds the wait by cancelling it, e.g. from a timeout task).
    public func untilSleepers(_ count: Int) async -> Bool {
        await until { $0.count >= count }
    }

    /// Suspends until a task sleeps on this clock until `deadline` (a timer of that length
    /// started), with no polling, as ``untilSleepers(_:)``.
    /// - Returns: true once such a sleeper is there; false when the calling task is cancelled first.
    public func untilSleeper(until deadline: Duration) async -> Bool {
        await until { $0.contains(deadline) }
    }

    /// Suspends until the sleepers' deadlines satisfy `condition`, checked now and whenever a
    /// sleeper registers; false when the calling task is cancelled first.
    private func until(_ condition: @escaping @Sendable ([Duration]) -> Bool) async -> Bool {
        let id: UInt64 = state.withLock { s in
            s.nextID += 1
            return s.nextID
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let resumeNow: Bool? = state.withLock { s in
                    if Task.isCancelled { return false }
                    if condition(s.sleepers.map(\.deadline)) { return true }
                    s.watchers.append(Watcher(id: id, condition: condition, continuation: continuation))
                    return nil
                }
                if let resumeNow { continuation.resume(returning: resumeNow) }
            }
        } onCancel: {
            let cancelled: Watcher? = state.withLock { s in
                guard let index = s.watchers.firstIndex(where: { $0.id == id }) else { return nil }
                return s.watchers.remove(at: index)
            }
            cancelled?.continuation.resume(returning: false)
        }
    }

    /// ``untilSleepers(_:)`` bounded by `bound` of real time (a safety net for a test whose task
    /// never parks: it then fails instead of hanging).
    /// - Returns: true once `count` tasks sleep, false when `bound` passed first.
    public func untilSleepers(_ count: Int, within bound: Duration) async -> Bool {
        await firstOf(
            { await self.untilSleepers(count) },
            { try? await ContinuousClock().sleep(for: bound); return false })
    }

    /// ``untilSleeper(until:)`` bounded by `bound` of real time.
    /// - Returns: true once a task sleeps until `deadline`, false when `bound` passed first.
    public func untilSleeper(until deadline: Duration, within bound: Duration) async -> Bool {
        await firstOf(
            { await self.untilSleeper(until: deadline) },
            { try? await ContinuousClock().sleep(for: bound); return false })
    }

    /// The earliest deadline a task sleeps until, or nil.
    public var nextDeadline: Duration? { state.withLock { $0.sleepers.map(\.deadline).min() } }

    /// Moves the clock forward and resumes every sleeper whose deadline is reached.
    /// - Parameter duration: how far; negative values count as zero.
    public func advance(by duration: Duration) {
        let due: [Sleeper] = state.withLock { s in
            s.now += max(duration, .zero)
            let now = s.now
            let due = s.sleepers.filter { $0.deadline <= now }.sorted { $0.deadline < $1.deadline }
            s.sleepers.removeAll { $0.deadline <= now }
            return due
        }
        for sleeper in due { sleeper.continuation.resume() }
    }

    /// Sleeps until `deadline` on this clock.
    /// - Throws: `CancellationError` when the task is cancelled.
    public func sleep(until deadline: Duration) async throws {
        let id: UInt64 = state.withLock { s in
            s.nextID += 1
            return s.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                // Checked under the lock: a cancellation that came before this registration finds
                // no sleeper to resume in its handler, so it must be seen here.
                let (resumeNow, watchers): (Bool?, [Watcher]) = state.withLock { s in
                    if Task.isCancelled { return (nil, []) }
                    if s.now >= deadline { return (true, []) }
                    s.sleepers.append(Sleeper(id: id, deadline: deadline, continuation: continuation))
                    return (false, s.satisfiedWatchers())
                }
                switch resumeNow {
                case nil: continuation.resume(throwing: CancellationError())
                case true?: continuation.resume()
                case false?: break
                }
                // Outside the lock: a watcher resumed here may run at once.
                for watcher in watchers { watcher.continuation.resume(returning: true) }
            }
        } onCancel: {
            let cancelled: Sleeper? = state.withLock { s in
                guard let index = s.sleepers.firstIndex(where: { $0.id == id }) else { return nil }
                return s.sleepers.remove(at: index)
            }
            cancelled?.continuation.resume(throwing: CancellationError())
        }
        try Task.checkCancellation()
    }
}

/// Runs two operations at once and returns the first result; the other is cancelled and not
/// waited for (an authorizer that ignores cancellation cannot hold the caller).
package func firstOf<T: Sendable>(
    _ first: @escaping @Sendable () async -> T,
    _ second: @escaping @Sendable () async -> T
) async -> T {
    let race = RaceState()
    return await withCheckedContinuation { (continuation: CheckedContinuation<T, Never>) in
        @Sendable func finish(_ value: T) {
            let tasks: [Task<Void, Never>]? = race.state.withLock { s in
                if s.done { return nil }
                s.done = true
                return s.tasks
            }
            guard let tasks else { return }
            continuation.resume(returning: value)
            for task in tasks { task.cancel() }
        }
        let a = Task { finish(await first()) }
        let b = Task { finish(await second()) }
        let cancelNow: Bool = race.state.withLock { s in
            s.tasks = [a, b]
            return s.done
        }
        if cancelNow {
            a.cancel()
            b.cancel()
        }
    }
}

/// Who won a `firstOf` race, and the tasks to cancel.
private final class RaceState: Sendable {
    let state = Mutex<(done: Bool, tasks: [Task<Void, Never>])>((false, []))
}

/// A desk's virtual time (PCSCCore) as a session clock: the session's timers (the 60 s
/// card-emulation window among them) run on the same time as the simulated readers, so a test on
/// a `SimulatedDesk` sees a window end without waiting for it.
extension VirtualTime: SessionClock {}
