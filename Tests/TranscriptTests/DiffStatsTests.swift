import Foundation
import ISO7816
import Testing

@testable import Transcript

/// A session shaped after Fixtures/README.md example 1 (docs/cases.md P02, P05, P14).
let diffBase = """
    # secbridge-transcript: 1
    # tool: secbridge 0.1.0
    # origin: recorded
    # date: 2025-02-03T10:00:00Z
    # reader: Example CCID Reader 00 00
    # protocol: T=0

    +0.000ms event card-inserted atr="3B 8E 80 01 80 31 80 66 B1 84 0C 01 6E 01 83 00 90 00 1C"
    +5.210ms > 00 A4 04 00 06 D2 76 00 01 24 01 00 ; SELECT the OpenPGP application
    +9.870ms < 90 00
    +10.120ms > 00 20 00 81 06 [REDACTED 6]
    +61.400ms < 90 00
    +62.000ms > 00 A4 08 00 04 50 15 44 02
    +63.100ms < 61 17
    +70.000ms > 00 B0 00 00 00
    +70.500ms ! SCARD_W_REMOVED_CARD 0x80100069 "The smart card has been removed."

    """

@Suite struct DiffStatsTests {
    func parse(_ text: String) throws -> Transcript { try Transcript(parsing: text, fileName: "t.trn") }

    @Test func sameExchangesAtOtherTimesAndDatesAreEqual() throws {
        let other = diffBase.replacingOccurrences(of: "+9.870ms", with: "+12.000ms")
            .replacingOccurrences(of: "2025-02-03T10:00:00Z", with: "2025-03-01T08:00:00Z")
            .replacingOccurrences(of: " ; SELECT the OpenPGP application", with: "")
        #expect(TranscriptDiff.compare(try parse(diffBase), try parse(other)).isEmpty)
        let timed = TranscriptDiff.compare(try parse(diffBase), try parse(other), options: TranscriptDiffOptions(compareTiming: true))
        #expect(timed.map(\.kind) == [.changed])
        #expect(timed.first?.leftLine == 10)
    }

    @Test func changedAnswerNamesTheFirstDifferentByte() throws {
        let other = diffBase.replacingOccurrences(of: "+63.100ms < 61 17", with: "+63.100ms < 6A 82")
        let d = TranscriptDiff.compare(try parse(diffBase), try parse(other))
        #expect(d == [TranscriptDifference(kind: .changed, leftLine: 14, rightLine: 14, left: "< 61 17", right: "< 6A 82", firstDifferentByte: 0)])
    }

    @Test func addedRemovedAndHeaderDifferences() throws {
        let other = diffBase.replacingOccurrences(of: "# protocol: T=0\n", with: "# protocol: T=1\n# driver: ccid 1.5.2\n")
            .replacingOccurrences(of: "+10.120ms > 00 20 00 81 06 [REDACTED 6]\n+61.400ms < 90 00\n", with: "")
            + "+71.000ms event card-removed\n"
        let d = TranscriptDiff.compare(try parse(diffBase), try parse(other))
        #expect(d.map(\.kind) == [.headerChanged, .headerAdded, .removed, .removed, .added])
        #expect(d[0].left == "protocol: T=0" && d[0].right == "protocol: T=1")
        #expect(d[2].left == "> 00 20 00 81 06 [REDACTED 6]" && d[2].leftLine == 11)
        #expect(d[4].right == "event card-removed")
    }

    @Test func statisticsCountAndTime() throws {
        let s = TranscriptStatistics(try parse(diffBase))
        #expect(s.records == 9)
        #expect(s.transmitCommands == 4)
        #expect(s.failures == 1)
        #expect(s.unanswered == 0)
        #expect(s.redactedCommands == 1)
        #expect(s.bytesSent == 12 + 11 + 9 + 5)
        #expect(s.bytesReceived == 6)
        #expect(s.events.map(\.kind) == ["card-inserted"])
        #expect(s.statusWords == [.init(statusWord: 0x9000, count: 2), .init(statusWord: 0x6117, count: 1)])
        #expect(s.span == .microseconds(70_500))
        // SELECT 4.660 ms, VERIFY 51.280 ms, SELECT by path 1.100 ms, READ BINARY 0.500 ms.
        #expect(s.timedExchanges == 4)
        #expect(s.exchangeTimeTotal == .microseconds(4660 + 51_280 + 1100 + 500))
        #expect(s.exchangeTimeMedian == .microseconds(1100))
        #expect(s.exchangeTimeRange == .microseconds(500)...(.microseconds(51_280)))
    }

    @Test func unansweredCommandAtTheEndIsCounted() throws {
        let s = TranscriptStatistics(try parse(versionLine + "> 00 84 00 00 08\n"))
        #expect(s.unanswered == 1)
        #expect(s.timedExchanges == 0)
        #expect(s.span == nil)
    }
}
