/// The alignment `transcript diff` runs on the records of two transcripts: exchanges paired by their
/// commands first, Myers' search (`MyersDiff`) only for the stretches the pairing leaves, each
/// search with a cost bound (docs/transcript-diff.md §2a).
///
/// Records are given as 64-bit digests of their compared text, with a bit per record saying whether
/// it answers the record before it (an `<` after a `>` on the same channel, a `!` after a command,
/// …). Walking both sides in step:
///
/// - equal digests are equal records;
/// - two answers that differ, where the records before them are the same command, are one changed
///   exchange: a 1:1 hunk, found without any search (the *pairing*);
/// - anything else starts an unpaired stretch. It reaches back over the changed exchanges just
///   paired (at most ``backup`` of them, so that an exchange inserted among repeated commands is
///   found as one insertion rather than as a run of changed answers), and forward to the nearest
///   point where the sides agree again: the start of two equal records (or the end of both), found
///   by Myers' greedy forward search with at most ``searchBound`` edits; failing that, the start of
///   two paired exchanges (four records, equal or paired) reached from the failing point the same
///   way. The stretch is then aligned exactly by `MyersDiff`, and the walk goes on after it.
///   Where neither search ends within the bound, the next ``searchBound`` records of each side are
///   replaced one by one (what a shortest script gives for records that have nothing in common).
///
/// Time is linear in the records: each search costs at most about ``searchBound``² steps, a
/// stretch at most the square of its length (a few hundred records at most), and the walk is one
/// pass. Space is the hunks and two vectors of 2·``searchBound`` + 3 entries.
struct RecordAlignment {
    /// The most edits a resynchronising search tries before it gives up.
    static let searchBound = 64
    /// The most changed exchanges, just paired, an unpaired stretch reaches back over.
    static let backup = 8

    /// One bit per record.
    struct Bits {
        private(set) var words: [UInt64] = []
        private(set) var count = 0
        init() {}
        init(_ values: [Bool]) { for v in values { append(v) } }
        mutating func append(_ value: Bool) {
            if count & 63 == 0 { words.append(0) }
            if value { words[count >> 6] |= 1 << UInt64(count & 63) }
            count += 1
        }
        subscript(index: Int) -> Bool { words[index >> 6] & (1 << UInt64(index & 63)) != 0 }
    }

    private let a: [UInt64], b: [UInt64]
    private let answersA: Bits, answersB: Bits
    private(set) var hunks: [MyersDiff.Hunk] = []
    /// Steps taken by the searches and the stretch alignments (diagonals visited, records compared,
    /// a stretch's length times its edits): what the cost bound bounds.
    private(set) var work = 0
    private var vector: [Int]
    /// The changed exchanges paired since the last equal answer, not yet emitted (answer places).
    private var pending: [(Int, Int)] = []

    /// The hunks that turn `a` into `b`, in order, adjacent ones merged, and the work it took.
    /// `answersA[x]` says whether record `x` of `a` answers record `x − 1`; likewise for `b`.
    static func align(_ a: [UInt64], _ b: [UInt64], answersA: Bits, answersB: Bits) -> (hunks: [MyersDiff.Hunk], work: Int) {
        var alignment = RecordAlignment(a: a, b: b, answersA: answersA, answersB: answersB)
        alignment.run()
        return (alignment.hunks, alignment.work)
    }

    private init(a: [UInt64], b: [UInt64], answersA: Bits, answersB: Bits) {
        self.a = a
        self.b = b
        self.answersA = answersA
        self.answersB = answersB
        vector = [Int](repeating: 0, count: 2 * Self.searchBound + 3)
    }

    /// Answers at x and y that differ, after the same command.
    private func paired(_ x: Int, _ y: Int) -> Bool {
        x > 0 && y > 0 && answersA[x] && answersB[y] && a[x - 1] == b[y - 1]
    }

    private mutating func emit(_ left: Range<Int>, _ right: Range<Int>) {
        guard !left.isEmpty || !right.isEmpty else { return }
        if let last = hunks.last, last.left.upperBound == left.lowerBound, last.right.upperBound == right.lowerBound {
            hunks[hunks.count - 1] = MyersDiff.Hunk(left: last.left.lowerBound..<left.upperBound, right: last.right.lowerBound..<right.upperBound)
        } else {
            hunks.append(MyersDiff.Hunk(left: left, right: right))
        }
    }

    private mutating func flush() {
        for (x, y) in pending { emit(x..<(x + 1), y..<(y + 1)) }
        pending.removeAll(keepingCapacity: true)
    }

    private mutating func run() {
        let n = a.count, m = b.count
        var i = 0, j = 0
        while i < n || j < m {
            if i < n, j < m {
                work += 1
                if a[i] == b[j] {
                    if answersA[i] { flush() }
                    i += 1; j += 1
                    continue
                }
                if paired(i, j) {
                    if pending.count == Self.backup { emit(pending[0].0..<(pending[0].0 + 1), pending[0].1..<(pending[0].1 + 1)); pending.removeFirst() }
                    pending.append((i, j))
                    i += 1; j += 1
                    continue
                }
            }
            // An unpaired stretch: from the command of the oldest pending pair (or here) …
            let (s, t) = pending.first.map { ($0.0 - 1, $0.1 - 1) } ?? (i, j)
            // … to where the sides agree again.
            if let (x, y) = resync(from: s, t, minimum: 2, paired: false) ?? resync(from: i, j, minimum: 4, paired: true) {
                pending.removeAll(keepingCapacity: true)
                let stretch = MyersDiff.hunks(a, b, left: s..<x, right: t..<y)
                work += ((x - s) + (y - t)) * max(1, stretch.reduce(0) { $0 + $1.left.count + $1.right.count })
                for h in stretch { emit(h.left, h.right) }
                i = x; j = y
            } else {
                flush()
                if i == n || j == m {
                    emit(i..<n, j..<m)
                    i = n; j = m
                } else {
                    let k = Self.searchBound
                    emit(i..<min(n, i + k), j..<min(m, j + k))
                    i = min(n, i + k); j = min(m, j + k)
                }
            }
        }
        flush()
    }

    /// Myers' greedy forward search (§3 of the paper) from (s, t), at most ``searchBound`` edits:
    /// the start of the first snake found of at least `minimum` records, or of one that ends at
    /// (n, m). With `paired`, paired answers extend a snake as equal records do. Nil past the bound.
    private mutating func resync(from s: Int, _ t: Int, minimum: Int, paired usePairs: Bool) -> (Int, Int)? {
        let n = a.count - s, m = b.count - t
        let bound = Self.searchBound, c = bound + 1
        let invalid = Int.min / 2
        for index in vector.indices { vector[index] = invalid }
        for d in 0...bound {
            var k = -d
            while k <= d {
                work += 1
                var x: Int
                if d == 0 {
                    x = 0
                } else {
                    // One step right from diagonal k − 1 or down from k + 1, whichever stays in the
                    // grid and reaches further.
                    let right = k > -d && vector[c + k - 1] != invalid ? vector[c + k - 1] + 1 : invalid
                    let down = k < d && vector[c + k + 1] != invalid ? vector[c + k + 1] : invalid
                    let rightFits = right != invalid && right <= n && right - k <= m
                    let downFits = down != invalid && down <= n && down - k >= 0 && down - k <= m
                    x = rightFits && downFits ? max(right, down) : rightFits ? right : downFits ? down : invalid
                }
                if x == invalid { vector[c + k] = invalid; k += 2; continue }
                let startX = x, startY = x - k
                var y = startY
                while x - startX < minimum, x < n, y < m {
                    work += 1
                    let ax = s + x, by = t + y
                    guard a[ax] == b[by] || (usePairs && paired(ax, by)) else { break }
                    x += 1; y += 1
                }
                if x - startX >= minimum || (x == n && y == m) { return (s + startX, t + startY) }
                vector[c + k] = x
                k += 2
            }
        }
        return nil
    }
}
