#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

// Threads and waits built on POSIX directly, so that the PC/SC layer does not pull Foundation into
// the `secbridge` binary (its start-up time is a requirement: within 1.5× of `pcsc_scan -r`).

/// Starts a detached POSIX thread that runs `body`. (`name` documents the thread's role;
/// pthread_setname_np needs _GNU_SOURCE, which Glibc's Swift module does not define.)
func startThread(name: String, _ body: @escaping @Sendable () -> Void) {
    final class Box { let body: @Sendable () -> Void; init(_ body: @escaping @Sendable () -> Void) { self.body = body } }
    let box = Unmanaged.passRetained(Box(body)).toOpaque()
    var thread = pthread_t()
    let result = pthread_create(&thread, nil, { argument in
        let box = Unmanaged<Box>.fromOpaque(argument!).takeRetainedValue()
        box.body()
        return nil
    }, box)
    precondition(result == 0, "pthread_create failed with \(result): the process is out of threads")
    pthread_detach(thread)
}

/// Sleeps the calling thread (never call it from Swift's shared concurrency pool).
func sleepThread(_ duration: Duration) {
    let (seconds, attoseconds) = duration.components
    guard seconds > 0 || attoseconds > 0 else { return }
    var request = timespec(tv_sec: Int(seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
    var remaining = timespec()
    while nanosleep(&request, &remaining) == -1 && errno == EINTR { request = remaining }
}

/// A mutex with a condition variable (pthread), for queues that a thread waits on.
final class ConditionLock: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    init() {
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(condition, nil)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    func lock() { pthread_mutex_lock(mutex) }
    func unlock() { pthread_mutex_unlock(mutex) }
    /// Waits for a signal; the lock must be held.
    func wait() { pthread_cond_wait(condition, mutex) }
    func signal() { pthread_cond_signal(condition) }
}
