import Testing
@testable import Transcript

/// The exchange-time sketch of `transcript stats`: what it keeps exactly and how close its median
/// is otherwise (DurationSketch's documentation).
@Suite struct DurationSketchTests {
    /// The median by sorting, as the statistics computed it before the sketch.
    static func sortedMedian(_ times: [Duration]) -> Duration {
        times.sorted()[(times.count - 1) / 2]
    }

    @Test func wholeMicrosecondsBelow65msGiveTheExactMedianCountTotalAndRange() {
        var sketch = DurationSketch()
        var times: [Duration] = []
        // A deterministic spread over 0…65 535 µs (a linear congruential sequence).
        var x: UInt64 = 12_345
        for _ in 0..<10_001 {
            x = x &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let t = Duration.microseconds(Int64(x >> 48))
            times.append(t)
            sketch.add(t)
        }
        #expect(sketch.count == 10_001)
        #expect(sketch.median == Self.sortedMedian(times))
        #expect(Duration(attoseconds: sketch.total) == times.reduce(.zero, +))
        #expect(Duration(attoseconds: sketch.minimum) == times.min())
        #expect(Duration(attoseconds: sketch.maximum) == times.max())
    }

    @Test func theLowerMiddleOfAnEvenCount() {
        var sketch = DurationSketch()
        for t in [4660, 51_280, 1100, 500] { sketch.add(.microseconds(t)) }
        #expect(sketch.median == .microseconds(1100))
    }

    @Test func longOrFractionalTimesGiveAMedianWithinHalfAPercent() {
        var sketch = DurationSketch()
        var times: [Duration] = []
        // 0.1 µs steps (not whole microseconds) and times of seconds: the histogram's part.
        for i in 0..<2_001 {
            let t = Duration.nanoseconds(100 * Int64(i) + 70_000_050) + .seconds(i % 3)
            times.append(t)
            sketch.add(t)
        }
        let exact = Self.sortedMedian(times)
        let median = try! #require(sketch.median)
        let error = abs(Double((median - exact).attoseconds)) / Double(exact.attoseconds)
        #expect(error <= 0.005, "median \(median), exact \(exact)")
    }

    @Test func equalTimesInOneBucketAreReportedExactly() {
        var sketch = DurationSketch()
        for _ in 0..<5 { sketch.add(.milliseconds(100)) }  // above 65.536 ms: the histogram
        sketch.add(.microseconds(10))
        #expect(sketch.median == .milliseconds(100))
    }

    @Test func negativeTimesComeFirstAndMixWithTheRest() {
        var sketch = DurationSketch()
        let times: [Duration] = [.microseconds(-300), .microseconds(-20), .microseconds(5), .microseconds(7), .microseconds(9)]
        for t in times { sketch.add(t) }
        #expect(sketch.median == .microseconds(5))
        #expect(Duration(attoseconds: sketch.minimum) == .microseconds(-300))
        var small = DurationSketch()
        for t in [Duration.microseconds(-300), .microseconds(-20), .microseconds(5)] { small.add(t) }
        #expect(small.median == .microseconds(-20))
    }

    @Test func exactAndHistogramTimesAreMergedInOrder() {
        // 10 µs, 20.5 µs (histogram), 30 µs: the median is the histogram's time.
        var sketch = DurationSketch()
        for t in [Duration.microseconds(10), .nanoseconds(20_500), .microseconds(30)] { sketch.add(t) }
        #expect(sketch.median == .nanoseconds(20_500))
        #expect(DurationSketch().median == nil)
    }
}
