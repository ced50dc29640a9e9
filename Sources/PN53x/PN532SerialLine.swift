#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import PCSCCore

/// The time base of a PN532 serial link: the monotonic clock for a real line, or a `VirtualTime`
/// (PCSCCore) for the in-memory line in tests, so that a 100 ms ACK bound or a 1 s response
/// bound passes without any wall-clock wait (docs/pn532-uart.md §4).
public struct PN532SerialClock: Sendable {
    /// The virtual time the deadlines count on, nil for CLOCK_MONOTONIC.
    public let virtualTime: VirtualTime?

    /// CLOCK_MONOTONIC.
    public static let monotonic = PN532SerialClock(virtualTime: nil)

    /// A clock on `virtualTime`, or on CLOCK_MONOTONIC for nil.
    public init(virtualTime: VirtualTime?) { self.virtualTime = virtualTime }

    /// The deadline `duration` from now.
    public func deadline(after duration: Duration) -> PN532SerialDeadline {
        if let virtualTime {
            return PN532SerialDeadline(nanoseconds: virtualTime.deadline(after: duration), virtualTime: virtualTime)
        }
        let (sum, overflow) = Self.monotonicNow().addingReportingOverflow(Self.nanoseconds(duration))
        return PN532SerialDeadline(nanoseconds: overflow ? UInt64.max / 2 : sum, virtualTime: nil)
    }

    /// Runs `body` with the calling thread a participant of the virtual time (nothing on the
    /// monotonic clock): time advances on its own only while it waits.
    public func participate<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        guard let virtualTime else { return try body() }
        return try virtualTime.participate(body)
    }

    /// Keeps virtual time still until ``release()``: for a hand-over to a thread that has not yet
    /// started running.
    func hold() { virtualTime?.hold() }
    func release() { virtualTime?.release() }

    static func monotonicNow() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
    }

    static func nanoseconds(_ duration: Duration) -> UInt64 {
        guard duration > .zero else { return 0 }
        let (seconds, attoseconds) = duration.components
        let (product, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return UInt64.max / 2 }
        return min(product &+ UInt64(attoseconds / 1_000_000_000), UInt64.max / 2)
    }
}

/// A point on a ``PN532SerialClock``.
public struct PN532SerialDeadline: Sendable {
    /// Nanoseconds on CLOCK_MONOTONIC, or on ``virtualTime``.
    public let nanoseconds: UInt64
    /// The virtual time, nil for CLOCK_MONOTONIC.
    public let virtualTime: VirtualTime?

    /// Whether the deadline has passed (always, after the virtual time was closed).
    public var hasPassed: Bool {
        if let virtualTime { return virtualTime.hasPassed(nanoseconds) }
        return PN532SerialClock.monotonicNow() >= nanoseconds
    }

    /// The real time left, zero once passed (for poll(2) on a tty; a virtual deadline has none).
    var remainingMilliseconds: Int32 {
        guard virtualTime == nil else { return 0 }
        let now = PN532SerialClock.monotonicNow()
        guard nanoseconds > now else { return 0 }
        return Int32(clamping: (nanoseconds - now + 999_999) / 1_000_000)
    }
}

/// A failure of the byte line under a PN532 serial link.
public enum PN532SerialLineError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The line was closed (the other end went away, or ``PN532InMemorySerialLine/close()``).
    case closed
    /// A system call on the tty failed: `operation`, errno.
    case system(operation: String, path: String, errno: Int32)

    public var description: String {
        switch self {
        case .closed: return "the serial line is closed"
        case .system(let operation, let path, let code):
            var hint = ""
            if code == ENOENT { hint = ": the device does not exist; is the USB-serial adapter plugged in?" }
            if code == EACCES { hint = ": permission denied; add the user to the dialout group (then log in again)" }
            return "\(operation) \(path) failed: \(String(cString: strerror(code)))\(hint)"
        }
    }
}

/// A byte stream a PN532 frame travels on: a tty (``PN532TTY``) or one end of a
/// ``PN532InMemorySerialLine``.
public protocol PN532ByteStream: AnyObject, Sendable {
    /// Writes every byte.
    /// - Throws: ``PN532SerialLineError``.
    func write(_ bytes: [UInt8]) throws(PN532SerialLineError)
    /// Waits until at least one byte has arrived or `deadline` passes (nil: until bytes arrive or
    /// the line closes) and returns at most `maximumCount` bytes; empty once the deadline passed.
    /// A tty blocks the calling thread: never call it on Swift's shared concurrency pool.
    /// - Throws: ``PN532SerialLineError``.
    func read(maximumCount: Int, until deadline: PN532SerialDeadline?) throws(PN532SerialLineError) -> [UInt8]
    /// Drops bytes that arrived and were not read (libnfc does so before each command).
    func discardInput()
}

/// Two byte queues between a host end and a device end, in memory, on a ``PN532SerialClock``
/// (docs/pn532-uart.md §5): the serial line of tests.
///
/// On a virtual clock a read that waits parks on the clock, and a write that wakes a parked reader
/// holds the clock until the reader runs again, so time does not jump to a deadline between the
/// write and the read that the write satisfies.
public final class PN532InMemorySerialLine: Sendable {
    /// The host's end: what it writes the device reads.
    public let host: End
    /// The device's end.
    public let device: End
    private let shared: Shared

    /// A line on `clock`.
    public init(clock: PN532SerialClock = .monotonic) {
        shared = Shared(clock: clock)
        host = End(shared: shared, side: 0)
        device = End(shared: shared, side: 1)
    }

    /// Closes both ends: waiting reads and later calls throw ``PN532SerialLineError/closed``
    /// (as they do once the line's virtual time is closed).
    public func close() {
        shared.lock.lock()
        shared.closed = true
        shared.lock.broadcast()
        shared.lock.unlock()
        shared.wakeParked()
    }

    final class Shared: @unchecked Sendable {
        let clock: PN532SerialClock
        let lock = ConditionLock()
        // Guarded by `lock`: the bytes waiting for side 0 (host) and side 1 (device).
        var inbox: [[UInt8]] = [[], []]
        var parked = [false, false]
        var holds = [0, 0]
        var closed = false

        init(clock: PN532SerialClock) { self.clock = clock }

        /// Wakes a reader parked on the virtual time (lock not held).
        func wakeParked() {
            lock.lock()
            lock.broadcast()
            lock.unlock()
        }
    }

    /// One end of the line.
    public final class End: PN532ByteStream, @unchecked Sendable {
        private let shared: Shared
        private let side: Int

        init(shared: Shared, side: Int) {
            self.shared = shared
            self.side = side
        }

        public func write(_ bytes: [UInt8]) throws(PN532SerialLineError) {
            let other = 1 - side
            shared.lock.lock()
            defer { shared.lock.unlock() }
            guard !shared.closed else { throw .closed }
            guard !bytes.isEmpty else { return }
            shared.inbox[other] += bytes
            if shared.parked[other] && shared.holds[other] == 0 && shared.clock.virtualTime != nil {
                shared.clock.hold()
                shared.holds[other] += 1
            }
            shared.lock.broadcast()
        }

        public func read(maximumCount: Int, until deadline: PN532SerialDeadline?) throws(PN532SerialLineError) -> [UInt8] {
            shared.lock.lock()
            defer { shared.lock.unlock() }
            while true {
                if !shared.inbox[side].isEmpty {
                    let count = min(max(1, maximumCount), shared.inbox[side].count)
                    let bytes = Array(shared.inbox[side].prefix(count))
                    shared.inbox[side].removeFirst(count)
                    return bytes
                }
                // A closed virtual time ends every park at once: without this a read with no
                // deadline would spin.
                if shared.closed || shared.clock.virtualTime?.isClosed == true { throw .closed }
                if let deadline, deadline.hasPassed { return [] }
                shared.parked[side] = true
                if let virtualTime = shared.clock.virtualTime {
                    let lock = shared.lock
                    virtualTime.park(until: deadline?.nanoseconds, wake: { lock.lock(); lock.broadcast(); lock.unlock() }) {
                        lock.wait()
                    }
                } else if let deadline {
                    _ = shared.lock.wait(timeout: .milliseconds(Int64(max(1, deadline.remainingMilliseconds))))
                } else {
                    shared.lock.wait()
                }
                shared.parked[side] = false
                while shared.holds[side] > 0 {
                    shared.holds[side] -= 1
                    shared.clock.release()
                }
            }
        }

        public func discardInput() {
            shared.lock.lock()
            shared.inbox[side].removeAll()
            shared.lock.unlock()
        }
    }
}
