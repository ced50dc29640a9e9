#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

// Threads and waits built on POSIX directly, so that the PC/SC layer does not pull Foundation into
// the `secbridge` binary. This is the package's one thread starter and its one condition lock.

/// Starts a detached POSIX thread that runs `body`, named `name`.
///
/// The name (at most 15 bytes; longer names are cut) is what `/proc/PID/task/TID/comm`, `top -H`,
/// `ps -L` and debuggers show. It is set by the new thread itself, by writing
/// `/proc/thread-self/comm` (Linux 3.17 and later): `pthread_setname_np` needs `_GNU_SOURCE`,
/// which Glibc's Swift module does not define.
/// - Returns: false when `pthread_create` failed (the process is out of threads); `body` then never
///   runs.
@discardableResult
package func startThread(name: String, _ body: @escaping @Sendable () -> Void) -> Bool {
    final class Box {
        let name: String
        let body: @Sendable () -> Void
        init(_ name: String, _ body: @escaping @Sendable () -> Void) { (self.name, self.body) = (name, body) }
    }
    let box = Unmanaged.passRetained(Box(name, body)).toOpaque()
    var thread = pthread_t()
    let result = pthread_create(&thread, nil, { argument in
        let box = Unmanaged<Box>.fromOpaque(argument!).takeRetainedValue()
        nameCurrentThread(box.name)
        box.body()
        return nil
    }, box)
    guard result == 0 else {
        Unmanaged<AnyObject>.fromOpaque(box).release()
        return false
    }
    pthread_detach(thread)
    return true
}

/// Names the calling thread (at most 15 bytes), as ``startThread(name:_:)`` does.
package func nameCurrentThread(_ name: String) {
    let descriptor = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
    guard descriptor >= 0 else { return }
    defer { close(descriptor) }
    let bytes = Array(name.utf8.prefix(15))
    _ = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
}

/// Sleeps the calling thread (never call it from Swift's shared concurrency pool).
package func sleepThread(_ duration: Duration) {
    let (seconds, attoseconds) = duration.components
    guard seconds > 0 || attoseconds > 0 else { return }
    var request = timespec(tv_sec: Int(seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
    var remaining = timespec()
    while nanosleep(&request, &remaining) == -1 && errno == EINTR { request = remaining }
}

/// A mutex with a condition variable (pthread, CLOCK_MONOTONIC), for queues and flags that a
/// thread waits on. The package's one condition lock outside the simulator (whose own wraps the
/// field's state, see ACR122Simulator).
package final class ConditionLock: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    package init() {
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    package func lock() { pthread_mutex_lock(mutex) }
    package func unlock() { pthread_mutex_unlock(mutex) }
    /// Waits for a signal; the lock must be held.
    package func wait() { pthread_cond_wait(condition, mutex) }
    package func signal() { pthread_cond_signal(condition) }
    /// Wakes every waiter.
    package func broadcast() { pthread_cond_broadcast(condition) }

    /// Waits for a signal for at most `timeout`; the lock must be held.
    /// - Returns: false when the timeout passed first (callers re-check their condition either way).
    package func wait(timeout: Duration) -> Bool {
        var deadline = timespec()
        clock_gettime(CLOCK_MONOTONIC, &deadline)
        let (seconds, attoseconds) = max(timeout, .zero).components
        let nanoseconds = Int(deadline.tv_nsec) + Int(attoseconds / 1_000_000_000)
        deadline.tv_sec += Int(seconds) + nanoseconds / 1_000_000_000
        deadline.tv_nsec = nanoseconds % 1_000_000_000
        return pthread_cond_timedwait(condition, mutex, &deadline) != ETIMEDOUT
    }
}
