import PCSC

/// Runs async work from the CLI's synchronous command code and waits for it, at most `timeout`.
///
/// The command code runs on the main thread (or a test's executor thread), never on Swift's shared
/// pool, so blocking it here is allowed; the async work itself runs on the pool, and its blocking
/// device calls on the executors of the layers below.
/// - Parameter waits: counts each time the waiting thread went to sleep (tests read it: once per
///   call at most, for work that finishes after the wait began).
/// - Throws: what `body` throws, or a failure naming `what` when the bound passes first.
package func awaitResult<T: Sendable>(
    _ what: String, timeout: Duration, waits: WaitCount? = nil, _ body: @escaping @Sendable () async throws -> T
) throws -> T {
    let box = ResultBox<T>()
    let done = ConditionLock()
    let task = Task {
        let result: Result<T, any Error>
        do { result = .success(try await body()) } catch { result = .failure(error) }
        box.lock.withLock { box.result = result }
        done.lock()
        done.signal()
        done.unlock()
    }
    // Woken by the task's signal; the deadline bounds the wait (no polling).
    let deadline = ContinuousClock.now + timeout
    done.lock()
    defer { done.unlock() }
    while true {
        if let result = box.lock.withLock({ box.result }) { return try result.get() }
        let left = deadline - ContinuousClock.now
        if left <= .zero {
            task.cancel()
            throw CLIError.failure("\(what) did not finish within \(timeout); the reader may be blocked (run `secbridge readers` to check)")
        }
        waits?.add()
        _ = done.wait(timeout: left)
    }
}

/// A counter of waits, safe to share between threads.
package final class WaitCount: @unchecked Sendable {
    private let lock = ConsoleLock()
    private var count = 0
    package init() {}
    package func add() { lock.withLock { count += 1 } }
    package var value: Int { lock.withLock { count } }
}

/// A result handed from a task to a waiting thread.
package final class ResultBox<T: Sendable>: @unchecked Sendable {
    package init() {}
    package let lock = ConsoleLock()
    package var result: Result<T, any Error>?
}
