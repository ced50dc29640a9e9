// Paired A/B rounds: the two sides of a comparison run back to back, in an order that alternates
// from pair to pair (A B, B A, A B, …), and the ratio is taken within each pair. On this shared
// machine a slower stretch then hits both halves of one pair instead of one side of the comparison,
// and the spread of the per-pair ratios shows how far one figure can be trusted.

/// The median of `values`: the middle value, or the mean of the two middle values of an even count.
/// - Precondition: `values` is not empty.
func median(_ values: [Double]) -> Double {
    precondition(!values.isEmpty, "the median of no values")
    let sorted = values.sorted()
    let middle = sorted.count / 2
    return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}

/// The per-pair ratios A/B of one comparison and their summary.
struct PairedRatios: Equatable {
    /// A/B of each pair, in the order the pairs ran.
    var ratios: [Double]

    /// Ratios of `a[i] / b[i]`.
    /// - Precondition: `a` and `b` have the same, non-zero count.
    init(a: [Double], b: [Double]) {
        precondition(a.count == b.count && !a.isEmpty, "paired figures need one A and one B per pair")
        ratios = zip(a, b).map { $0 / $1 }
    }

    /// The median of the per-pair ratios.
    var median: Double { secbridge_bench.median(ratios) }
    /// The smallest and the largest per-pair ratio.
    var spread: ClosedRange<Double> { ratios.min()!...ratios.max()! }

    /// `median 1.02 (pairs 0.98–1.07, 5 pairs)`.
    var summary: String {
        "median \(format(median, 3)) (pairs \(format(spread.lowerBound, 3))–\(format(spread.upperBound, 3)), \(ratios.count) pairs)"
    }
}

/// Runs `pairs` pairs of `a` and `b`, A first in even pairs and B first in odd ones, and returns
/// each side's results in pair order. The pair index is passed to both.
func alternating<A, B, E: Error>(
    pairs: Int, _ a: (Int) throws(E) -> A, _ b: (Int) throws(E) -> B
) throws(E) -> (a: [A], b: [B]) {
    var resultsA: [A] = [], resultsB: [B] = []
    for pair in 0..<pairs {
        if pair % 2 == 0 {
            resultsA.append(try a(pair))
            resultsB.append(try b(pair))
        } else {
            resultsB.append(try b(pair))
            resultsA.append(try a(pair))
        }
    }
    return (resultsA, resultsB)
}

/// Instructions per unit from two runs of one program that differ only in how many units they do
/// (`n` and `2n`): (I(2n) − I(n)) / n. Start-up, set-up and exit cost the same in both runs and
/// cancel out.
func instructionsPerUnit(single: UInt64, double: UInt64, units n: Int) -> Double {
    precondition(n > 0, "a run of no units")
    return (Double(double) - Double(single)) / Double(n)
}
