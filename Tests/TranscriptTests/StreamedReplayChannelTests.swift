import Foundation
import ISO7816
import Testing

@testable import Transcript

/// A ReplayChannel made from a file (``ReplayChannel/init(file:transmissionProtocol:makeError:)``,
/// the card `replay --against simulated` places) plays as the one made from the parsed transcript,
/// and holds a bounded number of exchanges however long the file is.
@Suite struct StreamedReplayChannelTests {
    func write(_ text: String) throws -> String {
        let path = try makeTemporaryDirectory() + "/t.trn"
        try text.write(toFile: path, atomically: false, encoding: .utf8)
        return path
    }

    /// What one call did: the answer, or the error's kind and line.
    func outcome(_ body: () throws -> [UInt8]) -> String {
        do {
            return "answer \(try body())"
        } catch let error as ReplayError {
            return "\(error.code.rawValue) \(error.line)"
        } catch let error as ReplayedFailure {
            return "failure \(error.transcriptFailure.name) \(error.line)"
        } catch {
            return "other \(error)"
        }
    }

    /// Each recorded command sent as recorded (masked bytes as 00), one wrong command first and
    /// one more command than recorded at the end, on both channels: the same outcomes.
    @Test(arguments: fixtureFiles())
    func aFileChannelPlaysAsTheInMemoryOne(_ path: String) throws {
        let whole = try Transcript(contentsOfFile: path)
        let memory = ReplayChannel(whole)
        let file = try ReplayChannel(file: TranscriptReplayFile(contentsOfFile: path))
        #expect(file.transmissionProtocol == memory.transmissionProtocol)
        #expect(file.remainingExchanges == memory.remainingExchanges)
        func send(_ kind: RecordedExchange.Kind, _ command: [UInt8]) -> (String, String) {
            switch kind {
            case .transmit: (outcome { try memory.transmit(command) }, outcome { try file.transmit(command) })
            case .control(let code): (outcome { try memory.control(code: code, command) }, outcome { try file.control(code: code, command) })
            }
        }
        var first = true
        for e in whole.recordedExchanges(channel: nil) {
            if first {
                let wrong = send(e.kind, [0x00, 0x01, 0x02, 0x03, 0x04])
                #expect(wrong.0 == wrong.1, "a wrong first command, \(path)")
                first = false
            }
            let bytes = e.command.items.map { if case .byte(let b) = $0 { b } else { UInt8(0) } }
            let (a, b) = send(e.kind, bytes)
            #expect(a == b, "line \(e.line) of \(path)")
            #expect(file.remainingExchanges == memory.remainingExchanges)
        }
        let extra = send(.transmit, [0x00, 0xB0, 0x00, 0x00, 0x00])
        #expect(extra.0 == extra.1)
        #expect(outcome { try memory.finish(); return [] } == outcome { try file.finish(); return [] })
    }

    @Test func aHostThatStopsEarlyIsToldTheFirstLineNeverSent() throws {
        let path = try write(versionLine + """
            > 00 B0 00 00 01
            < 01 90 00
            > 00 B0 00 00 02
            < 02 90 00

            """)
        let channel = try ReplayChannel(file: TranscriptReplayFile(contentsOfFile: path))
        #expect(try channel.transmit([0x00, 0xB0, 0x00, 0x00, 0x01]) == [0x01, 0x90, 0x00])
        #expect(channel.remainingExchanges == 1)
        do {
            try channel.finish()
            Issue.record("a left-out exchange went unnoticed")
        } catch {
            #expect(error.code == .leftover && error.line == 4)
            #expect(error.reason.contains("1 recorded exchange(s)"))
        }
    }

    /// The card `replay --against simulated` places takes the command's check of the file when
    /// the file is unchanged (seen here through a second name of it: the first check's path is
    /// kept), and checks it again once it changed.
    @Test func aFileCheckedInThisProcessIsNotReadAgainUntilItChanges() throws {
        let path = try write(versionLine + "> 00 B0 00 00 01\n< 01 90 00\n")
        let other = path + ".link"
        #expect(link(path, other) == 0)  // before the check: a new link changes the status change time
        let first = try TranscriptReplayFile(contentsOfFile: path)
        let reused = try TranscriptReplayFile.checked(contentsOfFile: other)
        #expect(reused.fileName == path && reused.commandCount == 1)
        #expect(try TranscriptReplayFile.checked(contentsOfFile: other, channelID: "x").fileName == other, "another channel, another check")
        let handle = try #require(FileHandle(forWritingAtPath: path))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data("> 00 B0 00 00 02\n< 02 90 00\n".utf8))
        try handle.close()
        let changed = try TranscriptReplayFile.checked(contentsOfFile: other)
        #expect(changed.fileName == other && changed.commandCount == 2)
        #expect(first.commandCount == 1)
    }

    /// 20 000 exchanges on one channel: the stream never holds more than the exchange the host is
    /// at. With a second channel whose command waits for its answer while the first channel has
    /// 1 000 exchanges, it holds those 1 000 and the waiting one, no more.
    @Test func theStreamHoldsOnlyTheExchangesWaitingForAnAnswer() throws {
        var text = versionLine
        for n in 0..<20_000 { text += "> 00 B0 00 00 \(String(format: "%02X", n & 0xFF))\n< \(String(format: "%02X", n & 0xFF)) 90 00\n" }
        let long = try write(text)
        let channel = try ReplayChannel(file: TranscriptReplayFile(contentsOfFile: long))
        for n in 0..<20_000 {
            #expect(try channel.transmit([0x00, 0xB0, 0x00, 0x00, UInt8(n & 0xFF)]) == [UInt8(n & 0xFF), 0x90, 0x00])
        }
        try channel.finish()
        #expect(try #require(channel.stream).maximumHeld == 1)

        var waiting = versionLine + "@b > 00 C0 00 00 00\n"
        for n in 0..<1_000 { waiting += "@a > 00 B0 00 00 \(String(format: "%02X", n & 0xFF))\n@a < 90 00\n" }
        waiting += "@b < 61 00\n"
        for _ in 0..<5_000 { waiting += "@a > 00 B0 00 00 00\n@a < 90 00\n" }
        let file = try TranscriptReplayFile(contentsOfFile: try write(waiting))
        let stream = try RecordedExchangeStream(file)
        var count = 0
        while let e = try stream.next() {
            if count == 0 { #expect(e.line == 2, "the waiting command comes first, in command order") }
            count += 1
        }
        #expect(count == 6_001)
        #expect(stream.maximumHeld == 1_001)
    }
}
