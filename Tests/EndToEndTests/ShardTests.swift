import PCSCSandbox
import Testing

/// The vpcd port parts of side-by-side test processes (scripts/test.sh's shards).
@Suite struct ShardTests {
    @Test func eachShardHasItsOwnPartOfThePortRangeAndNoPairStraddlesTwo() {
        let whole = FreePort.range
        #expect(FreePort.shardRange(nil) == whole)
        let parts = (0..<5).map { FreePort.shardRange("\($0)/5") }
        // 0x9000…0xEFFE holds 24 575 ports: 4 914 per part of 5, even, from 0x9000 on.
        #expect(parts[0] == 0x9000...0xA330)
        #expect(parts[1] == 0xA332...0xB662)
        for (earlier, later) in zip(parts, parts.dropFirst()) {
            // A pair is (port, port + 1): the last pair of a part ends below the next part.
            #expect(earlier.upperBound + 1 < later.lowerBound)
        }
        #expect(parts[4].upperBound + 1 <= 0xEFFF)
        for malformed in ["", "5/5", "-1/5", "1/0", "a/b", "1/65", "1/2/3"] {
            #expect(FreePort.shardRange(malformed) == whole, "\(malformed)")
        }
    }
}
