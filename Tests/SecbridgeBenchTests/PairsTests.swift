@testable import secbridge_bench
import Testing

/// The arithmetic behind secbridge-bench's figures: medians, per-pair ratios, the alternating
/// order, instructions per unit from two run lengths, and the option parser.
@Suite struct PairsTests {
    @Test func medianOfAnOddCountIsTheMiddleValue() {
        #expect(median([3, 1, 2]) == 2)
        #expect(median([9]) == 9)
    }

    @Test func medianOfAnEvenCountIsTheMeanOfTheTwoMiddleValues() {
        #expect(median([4, 1, 3, 2]) == 2.5)
    }

    @Test func ratiosAreTakenWithinEachPair() {
        // Pair 2 ran on a machine twice as slow for both sides: its ratio is that of pair 1, while
        // the ratio of the two sides' medians (2/1.5) would not be.
        let paired = PairedRatios(a: [1.1, 2.2, 1.0], b: [1.0, 2.0, 1.0])
        #expect(paired.ratios.map { ($0 * 1000).rounded() } == [1100, 1100, 1000])
        #expect((paired.median * 1000).rounded() == 1100)
        #expect(paired.spread.lowerBound == 1.0 && paired.spread.upperBound == paired.ratios.max())
        #expect(paired.summary == "median 1.100 (pairs 1.000–1.100, 3 pairs)")
    }

    @Test func pairsAlternateWhichSideRunsFirst() {
        var order: [String] = []
        let (a, b) = alternating(pairs: 4, { pair in order.append("A\(pair)"); return pair }, { pair in order.append("B\(pair)"); return -pair })
        #expect(order == ["A0", "B0", "B1", "A1", "A2", "B2", "B3", "A3"])
        #expect(a == [0, 1, 2, 3])
        #expect(b == [0, -1, -2, -3])
    }

    @Test func instructionsPerUnitCancelTheFixedCost() {
        // 5 000 000 of start-up plus 1 700 per APDU: 1 000 and 2 000 APDUs.
        #expect(instructionsPerUnit(single: 5_000_000 + 1_700_000, double: 5_000_000 + 3_400_000, units: 1000) == 1700)
    }

    @Test func thousandsAreGrouped() {
        #expect(grouped(1_234_567) == "1 234 567")
        #expect(grouped(999) == "999")
        #expect(grouped(-420.4) == "−420")
    }

    @Test func optionsNameWhatWasWrong() throws {
        let parsed = try BenchOptions(["--check", "--only", "pcscd-rss,codec", "--rss-apdus", "1000000"], environment: [:])
        #expect(parsed.check)
        #expect(parsed.parts == ["codec", "pcscd-rss"])
        #expect(parsed["rss-apdus"] == 1_000_000)
        #expect(try BenchOptions(["transcripts", "5000"], environment: [:])["exchanges"] == 5000)
        #expect(try BenchOptions([], environment: [:])["stats-exchanges"] == 1_000_000)
        let scaled = try BenchOptions(["transcripts", "1000000", "--stats-exchanges", "5000000"], environment: [:])
        #expect(scaled["exchanges"] == 1_000_000 && scaled["stats-exchanges"] == 5_000_000 && scaled.parts == ["transcripts"])
        #expect(try BenchOptions([], environment: ["SECBRIDGE_BENCH_TURNS": "10"])["turns"] == 10)
        #expect(throws: UsageError.self) { try BenchOptions(["--only", "speed"], environment: [:]) }
        #expect(throws: UsageError.self) { try BenchOptions(["--apdus", "0"], environment: [:]) }
        #expect(throws: UsageError.self) { try BenchOptions(["--apdus"], environment: [:]) }
        #expect(throws: UsageError.self) { try BenchOptions(["5000"], environment: [:]) }
    }

    @Test func everyPartIsInTheHelp() {
        for part in allParts {
            #expect(helpText.contains("\n  \(part) "), "the help does not describe \(part)")
        }
        for option in BenchOptions.defaults.keys {
            #expect(helpText.contains("--\(option) N"), "the help does not describe --\(option)")
        }
    }
}
