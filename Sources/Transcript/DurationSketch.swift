#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Exchange times in constant memory, for ``TranscriptStatistics``: the count, the total, the
/// shortest and the longest exactly; the median exactly for every time that is a whole number of
/// microseconds below 65.536 ms, and within 0.5 % otherwise.
///
/// A recorder writes offsets in milliseconds with three decimals (`+12.345ms`), so an exchange
/// time is a whole number of microseconds, and almost every one is below 65 ms: those are counted
/// per microsecond (65 536 counters, 512 KiB, allocated at the first one). Any other time goes
/// into a logarithmic histogram whose buckets are 1 % wide (bucket `b` holds the times `t` with
/// 1.01^b ≤ t < 1.01^(b+1) attoseconds, at most about 5 100 buckets up to a day), each bucket
/// keeping its shortest and longest time: the median reported from a bucket is exact when all
/// its times are equal, else the bucket's geometric middle, within 0.5 % of the true median.
/// Negative times (an answer written with an offset before its command's) have a histogram of
/// their own. Memory does not grow with the number of exchanges (a transcript of 5 M exchanges
/// held 80 MB of times before: 16 bytes each, and the array's spare capacity).
struct DurationSketch: Sendable, Equatable {
    private(set) var count = 0
    /// The sum, in attoseconds.
    private(set) var total: Int128 = 0
    private(set) var minimum: Int128 = 0
    private(set) var maximum: Int128 = 0
    /// Counts per whole microsecond, 0 ..< 65 536 µs.
    private var perMicrosecond: [Int] = []
    private var positive: [Int32: Bucket] = [:]
    /// By the bucket of the time's magnitude.
    private var negative: [Int32: Bucket] = [:]

    private struct Bucket: Sendable, Equatable {
        var count = 0
        var shortest: Int128
        var longest: Int128
    }

    private static let microsecond: Int128 = 1_000_000_000_000
    private static let exactLimit = 65_536
    private static let logGrowth = log(1.01)

    /// Adds one time.
    mutating func add(_ time: Duration) {
        let t = time.attoseconds
        if count == 0 {
            minimum = t
            maximum = t
        } else {
            minimum = min(minimum, t)
            maximum = max(maximum, t)
        }
        count += 1
        total += t
        if t >= 0, t % Self.microsecond == 0, t / Self.microsecond < Int128(Self.exactLimit) {
            if perMicrosecond.isEmpty { perMicrosecond = [Int](repeating: 0, count: Self.exactLimit) }
            perMicrosecond[Int(t / Self.microsecond)] += 1
        } else if t > 0 {
            Self.count(t, in: &positive)
        } else {
            Self.count(-t, in: &negative)
        }
    }

    private static func bucket(_ magnitude: Int128) -> Int32 {
        Int32(floor(log(Double(magnitude)) / logGrowth))
    }

    private static func count(_ magnitude: Int128, in buckets: inout [Int32: Bucket]) {
        let b = bucket(magnitude)
        if var existing = buckets[b] {
            existing.count += 1
            existing.shortest = min(existing.shortest, magnitude)
            existing.longest = max(existing.longest, magnitude)
            buckets[b] = existing
        } else {
            buckets[b] = Bucket(count: 1, shortest: magnitude, longest: magnitude)
        }
    }

    /// A bucket's time: exact when all its times are equal, else its geometric middle kept
    /// within its shortest and longest time.
    private static func representative(_ b: Int32, _ bucket: Bucket) -> Int128 {
        if bucket.shortest == bucket.longest { return bucket.shortest }
        let middle = Int128(exp((Double(b) + 0.5) * logGrowth))
        return min(max(middle, bucket.shortest), bucket.longest)
    }

    /// The time at rank `(count - 1) / 2` in ascending order (the lower middle for an even
    /// count), as the type's documentation says how exactly; nil without times.
    var median: Duration? {
        guard count > 0 else { return nil }
        var remaining = (count - 1) / 2
        // Negative times first, the largest magnitude first.
        for b in negative.keys.sorted(by: >) {
            let bucket = negative[b]!
            if remaining < bucket.count { return Duration(attoseconds: -Self.representative(b, bucket)) }
            remaining -= bucket.count
        }
        // Then the exact microseconds and the positive buckets, merged by their times.
        let buckets = positive.keys.sorted().map { ($0, positive[$0]!) }
        var next = 0
        func takeBuckets(below limit: Int128?) -> Duration? {
            while next < buckets.count, limit.map({ Self.representative(buckets[next].0, buckets[next].1) < $0 }) ?? true {
                let (b, bucket) = buckets[next]
                if remaining < bucket.count { return Duration(attoseconds: Self.representative(b, bucket)) }
                remaining -= bucket.count
                next += 1
            }
            return nil
        }
        for (micros, n) in perMicrosecond.enumerated() where n > 0 {
            let t = Int128(micros) * Self.microsecond
            if let found = takeBuckets(below: t) { return found }
            if remaining < n { return Duration(attoseconds: t) }
            remaining -= n
        }
        return takeBuckets(below: nil)
    }
}
