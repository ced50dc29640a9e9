/// A dedicated thread that runs blocking work (PC/SC calls) for async callers.
///
/// PC/SC functions block the calling thread for an IPC round trip or, for SCardGetStatusChange and
/// reader escape commands, for seconds. Running them on Swift's shared concurrency pool would starve
/// it, so async code hands them to an executor: ``run(_:)`` enqueues the closure on this thread and
/// suspends the caller until it finishes. Jobs run one at a time, in order.
///
/// The thread ends when ``shutdown()`` is called or the executor is deinitialized after its queue
/// drains.
public final class BlockingExecutor: Sendable {
    /// The job queue, guarded by its condition's lock.
    private final class Queue: @unchecked Sendable {
        let condition = ConditionLock()
        var jobs: [@Sendable () -> Void] = []
        var stopped = false
    }
    private let queue = Queue()
    /// The thread's name, as given to ``init(name:)``: it names the executor in ``ExecutorStoppedError``.
    public let name: String
    private let activity: VirtualTime.Activity?

    /// Starts the thread.
    /// - Parameter name: the thread's name (at most 15 bytes are kept), shown in
    ///   `/proc/PID/task/*/comm`, by `top -H` and by debuggers.
    public init(name: String) {
        self.name = name
        activity = nil
        start()
    }

    /// An executor whose every ``run(_:)`` job holds in place of the calling flow of `activity`
    /// (`VirtualTime.Activity.handingOver(_:)`): on a desk on virtual time, time moves only
    /// while the job waits on the clock (a reader command), not between jobs while the caller's
    /// task runs. nil: `init(name:)`.
    package init(name: String, activity: VirtualTime.Activity?) {
        self.name = name
        self.activity = activity
        start()
    }

    private func start() {
        let started = startThread(name: name) { [queue] in
            while true {
                queue.condition.lock()
                while queue.jobs.isEmpty && !queue.stopped { queue.condition.wait() }
                let job = queue.jobs.isEmpty ? nil : queue.jobs.removeFirst()
                queue.condition.unlock()
                guard let job else { return }  // stopped and drained
                job()
            }
        }
        // Without its thread no job would ever run: every later `run(_:)` would hang.
        precondition(started, "pthread_create failed for \(name): the process is out of threads")
    }

    deinit { shutdown() }

    /// Stops the thread after the jobs already queued; later ``run(_:)`` calls throw.
    public func shutdown() {
        queue.condition.lock()
        queue.stopped = true
        queue.condition.signal()
        queue.condition.unlock()
    }

    /// Runs `body` on this executor's thread and returns its result.
    /// - Throws: what `body` throws, or ``ExecutorStoppedError`` after ``shutdown()``.
    public func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, Error>) in
            let activity = self.activity
            let accepted = enqueue {
                let result = Result { () throws -> T in
                    if let activity { return try activity.handingOver { () throws -> T in try body() } }
                    return try body()
                }
                continuation.resume(with: result)
            }
            if !accepted { continuation.resume(throwing: ExecutorStoppedError(name: name)) }
        }
    }

    /// Enqueues a job without waiting. Returns false when the executor has been shut down.
    @discardableResult
    public func enqueue(_ job: @escaping @Sendable () -> Void) -> Bool {
        queue.condition.lock()
        defer { queue.condition.unlock() }
        if queue.stopped { return false }
        queue.jobs.append(job)
        queue.condition.signal()
        return true
    }
}

/// Thrown by ``BlockingExecutor/run(_:)`` after the executor was shut down.
public struct ExecutorStoppedError: Error, CustomStringConvertible {
    /// The name of the executor that was shut down (``BlockingExecutor/name``).
    public let name: String
    public var description: String { "the executor '\(name)' has been shut down; create a new one" }
}
