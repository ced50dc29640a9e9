#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Synchronization

/// Time that moves only when everything that uses it is waiting: the clock of an in-process desk
/// (simulated readers, the in-process PC/SC client, the session engine), so that a 5 s MCU
/// timeout, a 60 s card-emulation window or a 40 s call bound take no wall time and end the same
/// way on every run.
///
/// Time starts at zero and advances in two ways:
/// - ``advance(by:)``: the caller moves it, waking every wait whose deadline it reaches, in deadline
///   order (as NIOEmbedded's `EmbeddedEventLoop.advanceTime(by:)` does for its scheduled tasks);
/// - on its own, when the desk is idle: no *participant* thread is running (every one waits on this
///   clock) and no ``hold()`` is in force. Time then jumps to the earliest deadline of those waits
///   (and of the tasks sleeping in ``sleep(until:)``), and the waits due at it end. A participant
///   is a thread inside ``participate(_:)``: the in-process PC/SC client makes every thread in one
///   of its calls one, so a reader command, a status wait or a transaction wait is accounted for.
///
/// Waits come in two kinds. A deadline (a device timeout, a call bound, a sleep) is a reason to
/// advance. A poll step (the 400 ms presence poll of a status wait) advances time only as far as
/// its poll's own bound, if any; otherwise it is honoured when time advances for another deadline
/// anyway, and ``nudge()`` wakes it at once (a card placed in the field is seen by the next poll,
/// which in virtual time is "now"): a desk with nothing but an idle `monitor` on it stays still
/// instead of spinning through polls.
///
/// Every wait is bounded: when a hard deadline is due but some participant has not waited for
/// ``stallLimit`` of real time (it blocks on something this clock cannot see), time advances
/// anyway and one line on standard error says so.
///
///     let time = VirtualTime()
///     defer { time.close() }
///     // DEVICENAME …:clock=\(time.name) puts a simulated reader on it (SimulatedDesk does).
///     time.advance(by: .seconds(5))
///
/// Lock order: a waiter holds its own lock while it registers (its lock, then this clock's); the
/// clock's keeper thread calls a waiter's `wake` with no lock of the clock held.
public final class VirtualTime: @unchecked Sendable {
    /// The clock's name in `DEVICENAME`'s `clock=` option (``named(_:)``): `vt-<pid>-<n>`.
    public let name: String
    /// How long the keeper lets participants run without waiting before it advances a due hard
    /// deadline anyway (real time; see the type's documentation).
    public let stallLimit: Duration

    private struct Waiter {
        var id: UInt64
        /// When the wait ends.
        var deadline: UInt64?
        /// The deadline that is a reason to advance: the same as `deadline` for a hard wait; for a
        /// poll step, the poll's overall bound (nil: none).
        var hard: UInt64?
        var participant: Bool
        /// What the waiter waits on (its condition lock), for ``wakeWaiters(of:)``; nil: not given.
        var key: ObjectIdentifier?
        var wake: @Sendable () -> Void
        /// A poll step (its `hard` is not its `deadline`): ``nudge()`` wakes it.
        var isPoll: Bool { hard != deadline }
    }

    private struct Sleeper {
        var id: UInt64
        var deadline: UInt64
        var resume: @Sendable (Bool) -> Void
        /// Runs with the mutex held when the sleeper leaves the list (woken, cancelled, closed):
        /// an ``Activity`` takes its hold back here, before the keeper can look again.
        var leaving: (() -> Void)? = nil
    }

    // Guarded by `mutex`.
    private var nowNanoseconds: UInt64 = 0
    private var nextID: UInt64 = 1
    private var waiters: [Waiter] = []
    private var sleepers: [Sleeper] = []
    /// Threads inside ``participate(_:)``, by thread id, with their nesting depth.
    private var depth: [UInt: Int] = [:]
    /// Participants not waiting on this clock.
    private var running = 0
    private var holds = 0
    /// Bumped by every change the keeper must look at.
    private var generation: UInt64 = 0
    private var closed = false
    private var advances: UInt64 = 0
    private var stalls: UInt64 = 0

    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let keeperCondition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    private static let registry = Registry()
    private static let counter = Atomic<Int>(0)

    /// A clock at zero, with its keeper thread started.
    /// - Parameter stallLimit: see ``stallLimit``; default 10 s.
    public init(stallLimit: Duration = .seconds(10)) {
        name = "vt-\(getpid())-\(Self.counter.add(1, ordering: .relaxed).newValue)"
        self.stallLimit = stallLimit
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(keeperCondition, &attributes)
        pthread_condattr_destroy(&attributes)
        Self.registry.add(self)
        let started = startThread(name: "virtual-time") { [self] in keep() }
        precondition(started, "VirtualTime: no thread for the keeper (the process is out of threads)")
    }

    deinit {
        pthread_cond_destroy(keeperCondition)
        pthread_mutex_destroy(mutex)
        keeperCondition.deallocate()
        mutex.deallocate()
    }

    /// The clock named `name` (``name``), while it is open.
    public static func named(_ name: String) -> VirtualTime? { registry.find(name) }

    /// The time since the clock was made.
    public var now: Duration { locked { .nanoseconds(Int64(clamping: nowNanoseconds)) } }

    /// How many times time has moved (by ``advance(by:)`` or on its own).
    public var advanceCount: UInt64 { locked { advances } }

    /// How many times time moved because a participant ran ``stallLimit`` of real time without
    /// waiting (each also printed a line on standard error): zero on a desk whose every wait the
    /// clock sees.
    public var stallCount: UInt64 { locked { stalls } }

    /// Moves time forward by `duration` and ends every wait due by then (a negative duration does
    /// nothing: time never goes back).
    public func advance(by duration: Duration) {
        guard duration > .zero else { return }
        let due = locked { () -> [@Sendable () -> Void] in
            let (sum, overflow) = nowNanoseconds.addingReportingOverflow(Self.nanoseconds(duration))
            nowNanoseconds = overflow ? UInt64.max / 2 : sum
            advances += 1
            return takeDue()
        }
        for wake in due { wake() }
    }

    /// Keeps time still until ``release()`` (holds nest): for a test that acts on the desk from a
    /// thread that is not a participant while a command waits, e.g. placing a terminal while
    /// `emulate` waits in TgInitAsTarget.
    public func hold() { locked { holds += 1; changed() } }

    /// Ends one ``hold()``.
    public func release() { locked { holds = max(0, holds - 1); changed() } }

    /// Runs `body` with time held (``hold()``).
    public func holding<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        hold()
        defer { release() }
        return try body()
    }

    /// Runs `body` with the calling thread a participant: time advances on its own only while it
    /// waits on this clock (nested calls are counted once).
    public func participate<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        enter()
        defer { leave() }
        return try body()
    }

    /// Runs `body` with the calling thread not a participant, whatever its nesting: for a blocking
    /// wait the clock cannot see (taking a reader's lock that a thread waiting on this clock holds),
    /// which must not keep time still.
    package func outside<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        let thread = UInt(pthread_self())
        let saved = locked { () -> Int in
            let saved = depth[thread] ?? 0
            if saved > 0 {
                depth[thread] = nil
                running -= 1
                changed()
            }
            return saved
        }
        defer {
            if saved > 0 {
                locked {
                    depth[thread] = saved
                    running += 1
                    changed()
                }
            }
        }
        return try body()
    }

    /// Wakes every poll step at once (see the type's documentation): the simulated field calls it
    /// when a peer is placed or removed, so status waits re-read presence.
    public func nudge() {
        let polls = locked { () -> [@Sendable () -> Void] in
            waiters.filter(\.isPoll).map(\.wake)
        }
        for wake in polls { wake() }
    }

    /// Stops the keeper and ends every wait (their deadlines count as passed); the clock no longer
    /// resolves by name. Idempotent.
    public func close() {
        let (wakes, resumes) = locked { () -> ([@Sendable () -> Void], [@Sendable (Bool) -> Void]) in
            closed = true
            changed()
            let result = (waiters.map(\.wake), sleepers.map(\.resume))
            for sleeper in sleepers { sleeper.leaving?() }
            sleepers.removeAll()
            return result
        }
        Self.registry.remove(self)
        for wake in wakes { wake() }
        for resume in resumes { resume(false) }
    }

    /// Blocks the calling thread (never on Swift's shared pool) until at least `count` waits and
    /// task sleeps are registered on this clock, or the clock is closed: for a test that must act
    /// once a command has reached its wait.
    package func waitUntilWaiting(_ count: Int) {
        locked {
            while !closed && waiters.count + sleepers.count < count { pthread_cond_wait(keeperCondition, mutex) }
        }
    }

    /// Whether ``close()`` was called.
    public var isClosed: Bool { locked { closed } }

    // MARK: Waits (the simulator's and the in-process client's condition locks)

    /// Blocks the calling thread on this clock until `deadline` (virtual nanoseconds; nil: none),
    /// a wake-up of its own lock, or ``close()``.
    ///
    /// `block` must block the thread until it is woken (a `pthread_cond_wait` on the caller's
    /// condition, with the caller's mutex held since before this call); `wake` must wake it (lock
    /// that mutex, broadcast, unlock). Spurious returns happen: callers re-check their condition
    /// and ``hasPassed(_:)`` in a loop. `key` (the caller's condition lock) lets
    /// ``wakeWaiters(of:)`` find the wait.
    package func park(
        until deadline: UInt64?, key: ObjectIdentifier? = nil, wake: @escaping @Sendable () -> Void, _ block: () -> Void
    ) {
        park(until: deadline, advancingTo: deadline, key: key, wake: wake, block)
    }

    /// Wakes every thread parked with `key` (``park(until:key:wake:_:)``) and counts each
    /// participant among them as running from now on, before this call returns: the way to wake a
    /// waiter whose condition changed (a peer placed in a simulated field, a command aborted),
    /// so that time cannot jump to another deadline between the change and the moment the woken
    /// thread looks at it, as it could after a bare broadcast (the woken thread counts as waiting
    /// until it has taken its lock and this clock's again). Call it with no lock held that a
    /// waiter's `wake` takes.
    package func wakeWaiters(of key: ObjectIdentifier) {
        let wakes = locked { () -> [@Sendable () -> Void] in
            var wakes: [@Sendable () -> Void] = []
            var kept: [Waiter] = []
            for waiter in waiters {
                if waiter.key == key {
                    if waiter.participant { running += 1 }
                    wakes.append(waiter.wake)
                } else {
                    kept.append(waiter)
                }
            }
            guard !wakes.isEmpty else { return [] }
            waiters = kept
            changed()
            return wakes
        }
        for wake in wakes { wake() }
    }

    /// A poll step: like ``park(until:wake:_:)``, but only `bound` (the poll's overall deadline,
    /// nil for none) is a reason for time to advance; `deadline` (the next poll) ends the wait when
    /// time advances past it for another reason, and ``nudge()`` ends it at once.
    package func park(
        until deadline: UInt64?, advancingTo bound: UInt64?, key: ObjectIdentifier? = nil,
        wake: @escaping @Sendable () -> Void, _ block: () -> Void
    ) {
        let thread = UInt(pthread_self())
        let id = locked { () -> UInt64? in
            if closed { return nil }
            if let deadline, deadline <= nowNanoseconds { return nil }
            let participant = (depth[thread] ?? 0) > 0
            let id = nextID
            nextID += 1
            waiters.append(Waiter(id: id, deadline: deadline, hard: bound, participant: participant, key: key, wake: wake))
            if participant { running -= 1 }
            changed()
            return id
        }
        guard let id else { return }
        block()
        locked {
            // The keeper removes the waiters it wakes; a wake-up of the caller's own removes it here.
            if let index = waiters.firstIndex(where: { $0.id == id }) {
                if waiters[index].participant { running += 1 }
                waiters.remove(at: index)
                changed()
            }
        }
    }

    /// Sleeps the calling thread for `duration` of virtual time (a deadline; never call it from
    /// Swift's shared concurrency pool). Returns at once after ``close()``.
    package func sleepThread(_ duration: Duration) {
        let lock = ConditionLock()
        let deadline = deadline(after: duration)
        lock.lock()
        while !hasPassed(deadline) {
            park(until: deadline, wake: { lock.lock(); lock.broadcast(); lock.unlock() }) { lock.wait() }
        }
        lock.unlock()
    }

    /// The virtual deadline `duration` from now, in nanoseconds (saturating).
    package func deadline(after duration: Duration) -> UInt64 {
        locked {
            let (sum, overflow) = nowNanoseconds.addingReportingOverflow(Self.nanoseconds(duration))
            return overflow ? UInt64.max / 2 : sum
        }
    }

    /// Whether virtual time has reached `deadline`; after ``close()`` every deadline has passed.
    package func hasPassed(_ deadline: UInt64) -> Bool { locked { closed || nowNanoseconds >= deadline } }

    // MARK: Task sleeps (the session engine's clock)

    /// Suspends the calling task until `now >= deadline` on this clock (a hard deadline).
    /// - Throws: `CancellationError` when the task is cancelled first; returns at once after
    ///   ``close()``.
    public func sleep(until deadline: Duration) async throws {
        try await sleep(until: deadline, registering: nil, leaving: nil)
    }

    /// ``sleep(until:)`` with two hooks, each run with the mutex held: `registering` when the
    /// sleeper joins the list, `leaving` when it leaves it (woken, cancelled or closed).
    private func sleep(until deadline: Duration, registering: (() -> Void)?, leaving: (() -> Void)?) async throws {
        let target = Self.nanoseconds(deadline)
        let ticket = SleeperTicket()
        let completed = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let once = ResumeOnce(continuation)
                let registered: Bool = locked {
                    if closed || target <= nowNanoseconds { return false }
                    return ticket.state.withLock { state in
                        guard case .pending = state else { return false }
                        let id = nextID
                        nextID += 1
                        state = .registered(id)
                        sleepers.append(Sleeper(id: id, deadline: target, resume: { once.resume($0) }, leaving: leaving))
                        registering?()
                        changed()
                        return true
                    }
                }
                if !registered { once.resume(!ticket.isCancelled) }
            }
        } onCancel: {
            let resume = locked { () -> (@Sendable (Bool) -> Void)? in
                ticket.state.withLock { state -> (@Sendable (Bool) -> Void)? in
                    defer { state = .cancelled }
                    guard case .registered(let id) = state, let index = sleepers.firstIndex(where: { $0.id == id }) else { return nil }
                    let sleeper = sleepers.remove(at: index)
                    sleeper.leaving?()
                    changed()
                    return sleeper.resume
                }
            }
            resume?(false)
        }
        if !completed { throw CancellationError() }
    }

    // MARK: Activities (work on Swift tasks that time waits for)

    /// Work on Swift tasks that time must wait for, as it waits for a participant thread: a
    /// command's session engine, whose actor hops and event handling run between the reader
    /// commands the clock sees. While any of the activity's *flows* runs, time does not move on
    /// its own (each running flow is one ``VirtualTime/hold()``); a flow lets time move only by
    /// waiting where the clock sees it:
    /// - ``sleep(until:handingOver:)``: a task sleep; the flow's hold is given up when the sleeper
    ///   is registered and taken back, under the clock's lock, when it is woken (so the keeper
    ///   cannot advance again before the woken task has run);
    /// - ``handingOver(_:)``: blocking work on a thread that is a participant (a reader command
    ///   on an executor thread), which holds in the flow's place while it runs.
    ///
    /// A flow that starts (a task, an event handed to a consumer) takes a ``hold()``; one that
    /// ends gives it back with ``release()``. ``end()`` gives back whatever is left; after it,
    /// holds are no longer taken, so a late flow cannot keep time still.
    package final class Activity: @unchecked Sendable {
        package let time: VirtualTime
        // Guarded by the time's mutex.
        private var holding = 0
        private var ended = false

        fileprivate init(time: VirtualTime) { self.time = time }

        /// One more running flow (nothing after ``end()``).
        package func hold() { time.locked { take() } }

        /// One flow fewer; nothing when none holds.
        package func release() { time.locked { _ = giveBack() } }

        /// Gives back every hold and takes no more.
        package func end() {
            time.locked {
                time.holds = max(0, time.holds - holding)
                holding = 0
                ended = true
                time.changed()
            }
        }

        /// The holds this activity keeps now (for tests).
        package var holds: Int { time.locked { holding } }

        /// Sleeps the calling task until `deadline` on the activity's clock.
        ///
        /// With `handingOver`, the calling flow holds and gives its hold up while it sleeps: it
        /// holds again when the call returns, as before. Without it the caller is a flow that
        /// starts at the wake-up (a timer): it holds when the call returns, also by throwing, and
        /// must ``release()`` once its work is done.
        /// - Throws: `CancellationError` when the task is cancelled first.
        package func sleep(until deadline: Duration, handingOver: Bool) async throws {
            let gaveUp = Mutex(false)
            let registered = Mutex(false)
            do {
                try await time.sleep(
                    until: deadline,
                    registering: { [self] in
                        registered.withLock { $0 = true }
                        if handingOver { gaveUp.withLock { $0 = giveBack() } }
                    },
                    leaving: { [self] in
                        if !handingOver || gaveUp.withLock({ $0 }) { take() }
                    })
            } catch {
                if !handingOver && !registered.withLock({ $0 }) { hold() }
                throw error
            }
            if !handingOver && !registered.withLock({ $0 }) { hold() }
        }

        /// Runs `body` on the calling thread (never on Swift's shared pool) as a participant that
        /// holds in place of the calling flow: the flow's hold is given up once the thread
        /// participates and taken back before the thread stops participating, so time has no
        /// moment in between to move.
        package func handingOver<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
            try time.participate { () throws(E) -> R in
                let gaveUp = time.locked { giveBack() }
                defer { if gaveUp { hold() } }
                return try body()
            }
        }

        /// Mutex held.
        private func take() {
            guard !ended else { return }
            holding += 1
            time.holds += 1
            time.changed()
        }

        /// Mutex held; whether a hold was given back.
        private func giveBack() -> Bool {
            guard holding > 0 else { return false }
            holding -= 1
            time.holds = max(0, time.holds - 1)
            time.changed()
            return true
        }
    }

    /// Starts an ``Activity`` on this clock with one running flow (the caller's).
    package func beginActivity() -> Activity {
        let activity = Activity(time: self)
        activity.hold()
        return activity
    }

    // MARK: The keeper

    private func keep() {
        pthread_mutex_lock(mutex)
        var seen = generation
        var stalledSince: UInt64?
        while !closed {
            let idle = holds == 0 && running == 0
            let hard = earliestHardDeadline()
            if let hard, idle {
                // Everything waits: time jumps to the earliest deadline, poll steps included.
                advanceTo(min(hard, earliestDeadline() ?? hard))
                stalledSince = nil
                continue
            }
            if let hard, holds == 0, running > 0, generation == seen, let since = stalledSince,
                RealTime.monotonicNow() &- since >= Self.nanoseconds(stallLimit)
            {
                let stalled = running
                stalls += 1
                let target = min(hard, earliestDeadline() ?? hard)
                advanceTo(target)
                stalledSince = nil
                let line = "secbridge: virtual time \(name): \(stalled) participant(s) ran \(stallLimit) of real time without waiting; advanced to \(Duration.nanoseconds(Int64(clamping: target)))\n"
                var bytes = Array(line.utf8)
                _ = bytes.withUnsafeMutableBytes { write(2, $0.baseAddress, $0.count) }
                continue
            }
            if generation != seen || stalledSince == nil {
                seen = generation
                stalledSince = RealTime.monotonicNow()
            }
            if hard != nil && holds == 0 {
                var ts = RealTime.realDeadline(after: stallLimit)
                pthread_cond_timedwait(keeperCondition, mutex, &ts)
            } else {
                pthread_cond_wait(keeperCondition, mutex)
            }
        }
        pthread_mutex_unlock(mutex)
    }

    /// Sets the time to `target` (mutex held) and wakes what is due, with the mutex released while
    /// the wakes run.
    private func advanceTo(_ target: UInt64) {
        if target > nowNanoseconds {
            nowNanoseconds = target
            advances += 1
        }
        let due = takeDue()
        pthread_mutex_unlock(mutex)
        for wake in due { wake() }
        pthread_mutex_lock(mutex)
    }

    /// Removes the waits and sleepers due now and returns how to wake them (mutex held). A woken
    /// participant counts as running from here on, so the keeper does not advance again before it
    /// has looked at its condition.
    private func takeDue() -> [@Sendable () -> Void] {
        var wakes: [@Sendable () -> Void] = []
        var kept: [Waiter] = []
        for waiter in waiters {
            if let deadline = waiter.deadline, deadline <= nowNanoseconds {
                if waiter.participant { running += 1 }
                wakes.append(waiter.wake)
            } else {
                kept.append(waiter)
            }
        }
        waiters = kept
        let due = sleepers.filter { $0.deadline <= nowNanoseconds }.sorted { $0.deadline < $1.deadline }
        sleepers.removeAll { $0.deadline <= nowNanoseconds }
        for sleeper in due { sleeper.leaving?() }
        for resume in due.map(\.resume) { wakes.append({ resume(true) }) }
        changed()
        return wakes
    }

    private func earliestHardDeadline() -> UInt64? {
        let threads = waiters.lazy.compactMap(\.hard).min()
        let tasks = sleepers.lazy.map(\.deadline).min()
        switch (threads, tasks) {
        case (nil, nil): return nil
        case (let a?, nil), (nil, let a?): return a
        case (let a?, let b?): return min(a, b)
        }
    }

    private func earliestDeadline() -> UInt64? { waiters.lazy.compactMap(\.deadline).min() }

    private func enter() {
        let thread = UInt(pthread_self())
        locked {
            let current = depth[thread] ?? 0
            if current == 0 { running += 1 }
            depth[thread] = current + 1
            changed()
        }
    }

    private func leave() {
        let thread = UInt(pthread_self())
        locked {
            let current = depth[thread] ?? 0
            if current <= 1 {
                depth[thread] = nil
                if current == 1 { running -= 1 }
            } else {
                depth[thread] = current - 1
            }
            changed()
        }
    }

    /// Mutex held: the keeper (and ``waitUntilWaiting(_:)``) looks again.
    private func changed() {
        generation &+= 1
        pthread_cond_broadcast(keeperCondition)
    }

    private func locked<R>(_ body: () throws -> R) rethrows -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }

    static func nanoseconds(_ duration: Duration) -> UInt64 {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0, !(seconds == 0 && attoseconds <= 0) else { return 0 }
        let (product, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return UInt64.max / 2 }
        return min(UInt64.max / 2, product &+ UInt64(attoseconds / 1_000_000_000))
    }
}

/// The monotonic clock for the keeper's own real-time bound.
enum RealTime {
    static func monotonicNow() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
    }

    static func realDeadline(after duration: Duration) -> timespec {
        let target = monotonicNow() &+ VirtualTime.nanoseconds(duration)
        var result = timespec()
        result.tv_sec = Int(target / 1_000_000_000)
        result.tv_nsec = Int(target % 1_000_000_000)
        return result
    }
}

/// The time a bounded thread wait is measured on: a desk's ``VirtualTime``, or the monotonic clock.
package struct ThreadClock: Sendable {
    /// nil: CLOCK_MONOTONIC.
    package let virtualTime: VirtualTime?

    package init(_ virtualTime: VirtualTime?) { self.virtualTime = virtualTime }

    /// Now: the virtual time, or the monotonic clock since an arbitrary origin.
    package var now: Duration {
        if let virtualTime { return virtualTime.now }
        return .nanoseconds(Int64(clamping: RealTime.monotonicNow()))
    }

    /// Sleeps the calling thread (never on Swift's shared concurrency pool).
    package func sleep(_ duration: Duration) {
        if let virtualTime { virtualTime.sleepThread(duration) } else { PCSCCore.sleepThread(duration) }
    }
}

/// The clocks open in this process, by name (weakly held).
private final class Registry: Sendable {
    private struct Entry: @unchecked Sendable {
        let name: String
        weak var time: VirtualTime?
    }
    private let entries = Mutex<[Entry]>([])

    func add(_ time: VirtualTime) {
        entries.withLock { entries in
            entries.removeAll { $0.time == nil }
            entries.append(Entry(name: time.name, time: time))
        }
    }

    func remove(_ time: VirtualTime) {
        entries.withLock { entries in entries.removeAll { $0.time == nil || $0.time === time } }
    }

    func find(_ name: String) -> VirtualTime? {
        entries.withLock { entries in entries.first { $0.name == name }?.time }
    }
}

/// A task sleeper's registration, shared with its cancellation handler.
private final class SleeperTicket: Sendable {
    enum State { case pending, registered(UInt64), cancelled }
    let state = Mutex(State.pending)
    var isCancelled: Bool {
        state.withLock { state in
            if case .cancelled = state { return true }
            return false
        }
    }
}

/// Resumes a continuation at most once (a sleeper is resumed by the keeper, by cancellation or by
/// ``VirtualTime/close()``).
private final class ResumeOnce: Sendable {
    private let continuation: Mutex<CheckedContinuation<Bool, Never>?>
    init(_ continuation: CheckedContinuation<Bool, Never>) { self.continuation = Mutex(continuation) }
    func resume(_ value: Bool) {
        let taken = continuation.withLock { stored in
            defer { stored = nil }
            return stored
        }
        taken?.resume(returning: value)
    }
}
