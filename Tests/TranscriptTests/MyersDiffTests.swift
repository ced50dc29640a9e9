import Testing

@testable import Transcript

/// Myers' linear-space diff (docs/transcript-diff.md) and the transcript diff built on it.
@Suite struct MyersDiffTests {
    /// The edit script applied to `a` gives `b`, and equal elements are matched between hunks.
    func apply(_ hunks: [MyersDiff.Hunk], _ a: [UInt64], _ b: [UInt64]) -> [UInt64] {
        var out: [UInt64] = []
        var i = 0
        for h in hunks {
            out += a[i..<h.left.lowerBound]
            out += b[h.right]
            i = h.left.upperBound
        }
        return out + a[i...]
    }

    /// The length of a longest common subsequence, by the quadratic table (small inputs only).
    func lcsLength(_ a: [UInt64], _ b: [UInt64]) -> Int {
        var row = [Int](repeating: 0, count: b.count + 1)
        for x in a {
            var diagonal = 0
            for (j, y) in b.enumerated() {
                let above = row[j + 1]
                row[j + 1] = x == y ? diagonal + 1 : max(row[j + 1], row[j])
                diagonal = above
            }
        }
        return row[b.count]
    }

    @Test func scriptIsValidAndShortestOnRandomSequences() {
        var rng = SplitMix(seed: 16)
        for _ in 0..<400 {
            let a = (0..<Int(rng.next() % 30)).map { _ in rng.next() % 4 }
            let b = (0..<Int(rng.next() % 30)).map { _ in rng.next() % 4 }
            let hunks = MyersDiff.hunks(a, b)
            #expect(apply(hunks, a, b) == b)
            let edits = hunks.reduce(0) { $0 + $1.left.count + $1.right.count }
            #expect(edits == a.count + b.count - 2 * lcsLength(a, b), "a \(a) b \(b)")
            // Hunks are separated by at least one matched element.
            for (h, next) in zip(hunks, hunks.dropFirst()) {
                #expect(next.left.lowerBound > h.left.upperBound && next.right.lowerBound > h.right.upperBound)
            }
        }
    }

    @Test func scriptIsShortestWhenDExceedsTheFirstVectorSize() {
        // D up to several hundred: the diagonal vectors start with 64 slots each side and grow.
        var rng = SplitMix(seed: 1986)
        for _ in 0..<20 {
            let a = (0..<(200 + Int(rng.next() % 200))).map { _ in rng.next() % 3 }
            let b = (0..<(200 + Int(rng.next() % 200))).map { _ in rng.next() % 3 }
            let hunks = MyersDiff.hunks(a, b)
            #expect(apply(hunks, a, b) == b)
            #expect(hunks.reduce(0) { $0 + $1.left.count + $1.right.count } == a.count + b.count - 2 * lcsLength(a, b))
        }
        let disjoint = MyersDiff.hunks((0..<500).map { _ in 1 }, (0..<700).map { _ in 2 })
        #expect(disjoint == [MyersDiff.Hunk(left: 0..<500, right: 0..<700)])
    }

    @Test func knownExampleFromThePaper() {
        // Myers 1986, Fig. 1: A = ABCABBA, B = CBABAC, D = 5.
        let a = "ABCABBA".unicodeScalars.map { UInt64($0.value) }, b = "CBABAC".unicodeScalars.map { UInt64($0.value) }
        let hunks = MyersDiff.hunks(a, b)
        #expect(hunks.reduce(0) { $0 + $1.left.count + $1.right.count } == 5)
        #expect(apply(hunks, a, b) == b)
    }

    @Test func emptyAndEqualSequences() {
        #expect(MyersDiff.hunks([], []).isEmpty)
        #expect(MyersDiff.hunks([1, 2, 3], [1, 2, 3]).isEmpty)
        #expect(MyersDiff.hunks([], [7, 8]) == [MyersDiff.Hunk(left: 0..<0, right: 0..<2)])
        #expect(MyersDiff.hunks([7, 8], []) == [MyersDiff.Hunk(left: 0..<2, right: 0..<0)])
    }

    /// 100 000 SELECT/answer exchanges; `changed` lists the exchanges whose answer is 6A 82.
    static func exchanges(_ count: Int, notFound changed: Set<Int>) -> Transcript {
        var t = Transcript(header: TranscriptHeader(tool: "test", origin: .simulated))
        t.lines.reserveCapacity(2 * count)
        for n in 0..<count {
            let p1 = UInt8(truncatingIfNeeded: n >> 8), p2 = UInt8(truncatingIfNeeded: n)
            t.lines.append(.record(TranscriptRecord(.transmit(.outgoing, TranscriptBytes([0x00, 0xB0, p1, p2, 0x02])))))
            let answer: [UInt8] = changed.contains(n) ? [0x6A, 0x82] : [p1, p2, 0x90, 0x00]
            t.lines.append(.record(TranscriptRecord(.transmit(.incoming, TranscriptBytes(answer)))))
        }
        return t
    }

    @Test func twoChangedAnswersIn100kExchangesAreTwoChanges() {
        let left = Self.exchanges(100_000, notFound: [])
        let right = Self.exchanges(100_000, notFound: [0, 99_999])
        let d = TranscriptDiff.compare(left, right)
        #expect(d.count == 2)
        #expect(d.map(\.kind) == [.changed, .changed])
        // The first answer is body line 2, the last one body line 200 000.
        #expect(d.first?.leftLine == left.lineNumber(ofBodyIndex: 1))
        #expect(d.first?.left == "< 00 00 90 00" && d.first?.right == "< 6A 82")
        #expect(d.last?.leftLine == left.lineNumber(ofBodyIndex: 199_999))
        #expect(d.last?.left == "< 86 9F 90 00" && d.last?.firstDifferentByte == 0)
    }
}

/// A small deterministic generator (SplitMix64), so a failing case can be repeated.
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
