/// A shortest edit script between two sequences, found with Myers' O((N+M)·D) algorithm in linear
/// space (E. W. Myers, "An O(ND) Difference Algorithm and Its Variations", Algorithmica 1 (1986),
/// §3 for the greedy D-path search, §4b for the middle-snake refinement; docs/transcript-diff.md).
///
/// The sequences are given as keys (`[UInt64]`): two elements are equal when their keys are.
/// Time is O((N+M)·D) for N and M elements and D edits; space is O(D) for the two diagonal
/// vectors (grown as D grows, at most O(N+M)) plus O(D) for the result, never N×M.
struct MyersDiff {
    /// One region where the sequences differ: `a[left]` is replaced by `b[right]` (either range may
    /// be empty). Between two hunks, and before the first and after the last, the elements are equal
    /// one to one.
    struct Hunk: Equatable {
        var left: Range<Int>
        var right: Range<Int>
    }

    private let a: [UInt64]
    private let b: [UInt64]
    /// Forward and backward furthest-reaching x per diagonal, offset by `center`.
    private var forward: [Int]
    private var backward: [Int]
    private var center: Int
    private(set) var hunks: [Hunk] = []

    /// The hunks that turn `a` into `b`, in order; empty when the sequences are equal.
    static func hunks(_ a: [UInt64], _ b: [UInt64]) -> [Hunk] {
        var d = MyersDiff(a, b)
        d.compare(0, a.count, 0, b.count)
        return d.hunks
    }

    /// The hunks that turn `a[left]` into `b[right]`, in order, with indexes into the whole arrays.
    static func hunks(_ a: [UInt64], _ b: [UInt64], left: Range<Int>, right: Range<Int>) -> [Hunk] {
        var d = MyersDiff(a, b)
        d.compare(left.lowerBound, left.upperBound, right.lowerBound, right.upperBound)
        return d.hunks
    }

    private init(_ a: [UInt64], _ b: [UInt64]) {
        self.a = a
        self.b = b
        // The vectors grow with D (``reserveDiagonals(_:)``), not with N + M: two changes in a
        // million records need a few slots, not two vectors of N + M.
        center = 64
        forward = [Int](repeating: 0, count: 2 * center + 1)
        backward = [Int](repeating: 0, count: 2 * center + 1)
    }

    /// Makes room for diagonals −(d+1)…d+1, keeping each value at its diagonal.
    private mutating func reserveDiagonals(_ d: Int) {
        guard d + 1 >= center else { return }
        let grown = max(2 * center, d + 2)
        func recentered(_ v: [Int]) -> [Int] {
            var out = [Int](repeating: 0, count: 2 * grown + 1)
            for (i, value) in v.enumerated() { out[i - center + grown] = value }
            return out
        }
        forward = recentered(forward)
        backward = recentered(backward)
        center = grown
    }

    /// Appends an edit starting at (x, y) to the last hunk when it starts where that one ends.
    private mutating func record(x: Int, deleted: Int, y: Int, inserted: Int) {
        guard deleted > 0 || inserted > 0 else { return }
        if let last = hunks.last, last.left.upperBound == x, last.right.upperBound == y {
            hunks[hunks.count - 1] = Hunk(left: last.left.lowerBound..<(x + deleted), right: last.right.lowerBound..<(y + inserted))
        } else {
            hunks.append(Hunk(left: x..<(x + deleted), right: y..<(y + inserted)))
        }
    }

    /// The edit script of a[aLo..<aHi] against b[bLo..<bHi], appended to ``hunks`` in order.
    private mutating func compare(_ aLo: Int, _ aHi: Int, _ bLo: Int, _ bHi: Int) {
        var aLo = aLo, aHi = aHi, bLo = bLo, bHi = bHi
        // A common start and end are matched without search (each is part of some shortest script).
        while aLo < aHi, bLo < bHi, a[aLo] == b[bLo] { aLo += 1; bLo += 1 }
        while aLo < aHi, bLo < bHi, a[aHi - 1] == b[bHi - 1] { aHi -= 1; bHi -= 1 }
        if aLo == aHi || bLo == bHi {
            record(x: aLo, deleted: aHi - aLo, y: bLo, inserted: bHi - bLo)
            return
        }
        // Both sides are non-empty and differ at both ends, so D ≥ 2 and each half of the
        // middle snake's split has fewer edits: the recursion ends.
        let (x, y, u, v) = middleSnake(aLo, aHi, bLo, bHi)
        compare(aLo, x, bLo, y)
        compare(u, aHi, v, bHi)
    }

    /// The middle snake of Myers §4b: a diagonal run (x, y)→(u, v) that some shortest edit script
    /// of the sub-problem passes through, with ⌈D/2⌉ edits before it and ⌊D/2⌋ after it.
    /// Coordinates are absolute indexes into `a` and `b`.
    private mutating func middleSnake(_ aLo: Int, _ aHi: Int, _ bLo: Int, _ bHi: Int) -> (Int, Int, Int, Int) {
        let n = aHi - aLo, m = bHi - bLo
        let delta = n - m
        let odd = delta & 1 != 0
        let maxD = (n + m + 1) / 2
        // forward[c + k]: furthest x on diagonal k (x − y = k) from (0, 0).
        // backward[c + k]: furthest distance back from (n, m) on reverse diagonal k, where the
        // reverse diagonal k holds the points with (n − x) − (m − y) = k, i.e. forward diagonal delta − k.
        reserveDiagonals(0)
        forward[center + 1] = 0
        backward[center + 1] = 0
        for d in 0...maxD {
            reserveDiagonals(d)
            let c = center
            var k = -d
            while k <= d {
                var x = (k == -d || (k != d && forward[c + k - 1] < forward[c + k + 1]))
                    ? forward[c + k + 1] : forward[c + k - 1] + 1
                var y = x - k
                let startX = x, startY = y
                while x < n, y < m, a[aLo + x] == b[bLo + y] { x += 1; y += 1 }
                forward[c + k] = x
                let reverse = delta - k
                if odd, reverse >= -(d - 1), reverse <= d - 1, x + backward[c + reverse] >= n {
                    return (aLo + startX, bLo + startY, aLo + x, bLo + y)
                }
                k += 2
            }
            k = -d
            while k <= d {
                var x = (k == -d || (k != d && backward[c + k - 1] < backward[c + k + 1]))
                    ? backward[c + k + 1] : backward[c + k - 1] + 1
                var y = x - k
                let startX = x, startY = y
                while x < n, y < m, a[aHi - 1 - x] == b[bHi - 1 - y] { x += 1; y += 1 }
                backward[c + k] = x
                let ahead = delta - k
                if !odd, ahead >= -d, ahead <= d, x + forward[c + ahead] >= n {
                    // The reverse snake ran from (n − startX, m − startY) back to (n − x, m − y).
                    return (aLo + n - x, bLo + m - y, aLo + n - startX, bLo + m - startY)
                }
                k += 2
            }
        }
        preconditionFailure("Myers: no middle snake within ⌈(N+M)/2⌉ steps")  // unreachable: D ≤ N+M
    }
}
