import Synchronization

/// Counts the calls in progress through it on any thread, and once closed keeps new ones out and
/// waits, with a bound, for those in progress to return.
///
/// The process-wide gate of libpcsclite (`CallGate.pcscLite` in PCSC) is what the binaries close
/// before exit(3): libpcsclite 1.9.9's library destructor frees the client's context list when
/// exit runs it, and a call still inside pcsc-lite on another thread then dies of SIGSEGV
/// (docs/test-infrastructure.md, "pcsc-lite at exit").
///
/// Entering and leaving cost one atomic add and one atomic load each; the lock is taken only while
/// the gate is closed.
package final class CallGate: @unchecked Sendable {
    private let inProgress = Atomic<Int>(0)
    private let closed = Atomic<Bool>(false)
    /// Wakes ``close(waitingAtMost:beforeWaiting:)`` when the last call returns.
    private let drained = ConditionLock()

    package init() {}

    /// Counts a call in; false (the call must not start) once the gate is closed.
    package func enter() -> Bool {
        inProgress.wrappingAdd(1, ordering: .sequentiallyConsistent)
        guard !closed.load(ordering: .sequentiallyConsistent) else {
            leave()
            return false
        }
        return true
    }

    /// Counts a call out; the caller entered with ``enter()`` returning true.
    package func leave() {
        inProgress.wrappingSubtract(1, ordering: .sequentiallyConsistent)
        if closed.load(ordering: .sequentiallyConsistent) {
            drained.lock()
            drained.broadcast()
            drained.unlock()
        }
    }

    /// Runs `body` counted in. Once the gate is closed, `body` never runs: the calling thread waits
    /// for the process to end (the gate closes on the way out of the process, and a call begun
    /// then is what must not happen).
    @inline(__always)
    package func call<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        guard enter() else { parkForever() }
        defer { leave() }
        return try body()
    }

    /// How many calls are in progress now.
    package var callsInProgress: Int { inProgress.load(ordering: .sequentiallyConsistent) }

    /// Whether ``close(waitingAtMost:beforeWaiting:)`` has been called.
    package var isClosed: Bool { closed.load(ordering: .sequentiallyConsistent) }

    /// Closes the gate, then waits until no call is in progress, at most `bound`.
    /// - Parameter beforeWaiting: runs once, before the first wait, when a call is in progress
    ///   (tests order the call's return after it).
    /// - Returns: true when no call is in progress (none will start any more); false when calls
    ///   were still in progress after `bound` (a pcscd that stopped answering).
    @discardableResult
    package func close(waitingAtMost bound: Duration, beforeWaiting: (() -> Void)? = nil) -> Bool {
        closed.store(true, ordering: .sequentiallyConsistent)
        guard inProgress.load(ordering: .sequentiallyConsistent) != 0 else { return true }
        beforeWaiting?()
        let deadline = ContinuousClock.now + bound
        drained.lock()
        defer { drained.unlock() }
        while inProgress.load(ordering: .sequentiallyConsistent) != 0 {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return false }
            _ = drained.wait(timeout: left)
        }
        return true
    }

    private func parkForever() -> Never {
        drained.lock()
        while true { drained.wait() }
    }
}
