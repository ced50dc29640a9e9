import Testing

@testable import Transcript

/// The pairing of exchanges by command and the bounded searches of `RecordAlignment`
/// (docs/transcript-diff.md §2a). Records are symbols: a command digest, then (when the exchange
/// has one) its answer's digest with the answer bit set.
@Suite struct RecordAlignmentTests {
    typealias Hunk = MyersDiff.Hunk

    /// Digests and answer bits of exchanges (command, answer or nil).
    func records(_ exchanges: [(UInt64, UInt64?)]) -> ([UInt64], RecordAlignment.Bits) {
        var digests: [UInt64] = [], answers: [Bool] = []
        for (command, answer) in exchanges {
            digests.append(command); answers.append(false)
            if let answer { digests.append(answer); answers.append(true) }
        }
        return (digests, RecordAlignment.Bits(answers))
    }

    func align(_ left: [(UInt64, UInt64?)], _ right: [(UInt64, UInt64?)]) -> (hunks: [Hunk], work: Int) {
        let (a, ba) = records(left), (b, bb) = records(right)
        let result = RecordAlignment.align(a, b, answersA: ba, answersB: bb)
        #expect(MyersDiffTests().apply(result.hunks, a, b) == b)
        return result
    }

    /// Command 1000 + k, answer 2000 + k (left) or 3000 + k (right, "fresh" answers).
    func reads(_ count: Int, answers base: UInt64 = 2000) -> [(UInt64, UInt64?)] {
        (0..<count).map { (1000 + UInt64($0), base + UInt64($0)) }
    }

    @Test func aChangedAnswerInALongRunIsOneOneToOneHunkFoundInOnePass() {
        var right = reads(20_000)
        right[12_345].1 = 9
        let r = align(reads(20_000), right)
        #expect(r.hunks == [Hunk(left: 24_691..<24_692, right: 24_691..<24_692)])
        // One step per record: no search ran.
        #expect(r.work == 40_000)
    }

    @Test func everyAnswerChangedIsPairedWithoutSearch() {
        let r = align(reads(10_000), reads(10_000, answers: 3000))
        #expect(r.hunks == (0..<10_000).map { Hunk(left: (2 * $0 + 1)..<(2 * $0 + 2), right: (2 * $0 + 1)..<(2 * $0 + 2)) })
        #expect(r.work == 20_000)
    }

    @Test func anExchangeInsertedAmongRepeatedCommandsIsOneInsertion() {
        // GET CHALLENGE three times; the right file has one more in the middle. Pairing alone
        // would report two changed answers and an insertion at the end. As in the plain Myers
        // script, the common start (1, 11, 1) is matched, so the insertion reads `< 12`, `> 1`.
        let left: [(UInt64, UInt64?)] = [(1, 11), (1, 13), (1, 14)]
        let right: [(UInt64, UInt64?)] = [(1, 11), (1, 12), (1, 13), (1, 14)]
        #expect(align(left, right).hunks == [Hunk(left: 3..<3, right: 3..<5)])
        #expect(MyersDiff.hunks(records(left).0, records(right).0) == [Hunk(left: 3..<3, right: 3..<5)])
    }

    @Test func anInsertionAmongChangedAnswersKeepsThePairing() {
        // Every answer differs; the right side has an extra exchange (7, 8) after exchange 499.
        var right = reads(1000, answers: 3000)
        right.insert((7, 8), at: 500)
        let r = align(reads(1000), right)
        var expected: [Hunk] = (0..<499).map { Hunk(left: (2 * $0 + 1)..<(2 * $0 + 2), right: (2 * $0 + 1)..<(2 * $0 + 2)) }
        expected.append(Hunk(left: 999..<1000, right: 999..<1002))
        expected += (500..<1000).map { Hunk(left: (2 * $0 + 1)..<(2 * $0 + 2), right: (2 * $0 + 3)..<(2 * $0 + 4)) }
        #expect(r.hunks == expected)
        #expect(r.work < 10 * 4002)
    }

    @Test func aDeletionBetweenChangedAnswers() {
        // The right side lacks exchange 500; the answers of 499 and 501 differ.
        var right = reads(1000)
        right[499].1 = 5
        right[501].1 = 6
        right.remove(at: 500)
        #expect(align(reads(1000), right).hunks == [
            Hunk(left: 999..<1002, right: 999..<1000), Hunk(left: 1003..<1004, right: 1001..<1002),
        ])
    }

    @Test func aRemovedAnswerAndACommandWithoutOne() {
        // Exchange 3 has no answer on the right; exchange 5 none on the left.
        var left = reads(8), right = reads(8)
        right[3].1 = nil
        left[5].1 = nil
        #expect(align(left, right).hunks == [Hunk(left: 7..<8, right: 7..<7), Hunk(left: 11..<11, right: 10..<11)])
    }

    @Test func theCostBoundHoldsWhenNothingIsInCommon() {
        // No record in common: each search gives up after 64 edits and 64 records of each side
        // are replaced one by one, which, merged, is the shortest script's single hunk.
        func disjoint(_ n: Int) -> (hunks: [Hunk], work: Int) {
            align((0..<n).map { (UInt64($0), 50_000 + UInt64($0)) }, (0..<n).map { (100_000 + UInt64($0), 150_000 + UInt64($0)) })
        }
        let small = disjoint(5_000), large = disjoint(10_000)
        #expect(small.hunks == [Hunk(left: 0..<10_000, right: 0..<10_000)])
        #expect(large.hunks == [Hunk(left: 0..<20_000, right: 0..<20_000)])
        // Linear: twice the records, at most about twice the work, and a fixed amount per record
        // (a quadratic search would take 20 000² = 4·10⁸ steps).
        #expect(large.work <= 2 * small.work + 10_000)
        #expect(large.work <= 100 * 40_000)
    }

    @Test func scriptIsValidOnRandomExchanges() {
        var rng = SplitMix(seed: 32)
        for _ in 0..<300 {
            func random() -> [(UInt64, UInt64?)] {
                (0..<Int(rng.next() % 40)).map { _ in (rng.next() % 3, rng.next() % 4 == 0 ? nil : 10 + rng.next() % 3) }
            }
            let left = random(), right = random()
            let hunks = align(left, right).hunks
            for (h, next) in zip(hunks, hunks.dropFirst()) {
                #expect(next.left.lowerBound > h.left.upperBound || next.right.lowerBound > h.right.upperBound)
            }
        }
    }

    @Test func everyAnswerChangedInTranscriptsIsOneChangePerExchange() {
        let left = MyersDiffTests.exchanges(3_000, notFound: [])
        let right = MyersDiffTests.exchanges(3_000, notFound: Set(0..<3_000))
        let d = TranscriptDiff.compare(left, right)
        #expect(d.count == 3_000)
        #expect(d.allSatisfy { $0.kind == .changed && $0.right == "< 6A 82" })
        #expect(d[1] == TranscriptDifference(kind: .changed, leftLine: left.lineNumber(ofBodyIndex: 3), rightLine: left.lineNumber(ofBodyIndex: 3),
                                             left: "< 00 01 90 00", right: "< 6A 82", firstDifferentByte: 0))
    }
}
