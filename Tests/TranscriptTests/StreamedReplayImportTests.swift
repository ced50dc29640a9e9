import Foundation
import ISO7816
import Testing

@testable import Transcript

/// The streamed replay (TranscriptReplayFile), the streamed pcsc-spy import and the payload arena
/// give what the in-memory paths give.
@Suite struct StreamedReplayImportTests {
    func write(_ text: String, _ name: String = "t.trn") throws -> String {
        let path = try makeTemporaryDirectory() + "/" + name
        try text.write(toFile: path, atomically: false, encoding: .utf8)
        return path
    }

    /// What identifies an exchange: its command's line and text and where its answer is.
    func summary(_ e: RecordedExchange) -> String {
        let outcome = switch e.outcome {
        case .answer(let b, let line): "answer \(line) \(b)"
        case .failure(let f, let line): "failure \(line) \(f.name)"
        case .none: "none"
        }
        return "\(e.line) \(e.commandText) \(outcome)"
    }

    @Test(arguments: fixtureFiles())
    func streamedExchangesEqualTheInMemoryOnes(_ path: String) throws {
        let whole = try Transcript(contentsOfFile: path)
        let file = try TranscriptReplayFile(contentsOfFile: path)
        var streamed: [String] = []
        try file.forEachRecordedExchange { streamed.append(summary($0)) }
        #expect(streamed == whole.recordedExchanges(channel: nil).map(summary))
        #expect(file.commandCount == whole.recordedExchanges(channel: nil).count)
        var terminal: [TerminalExchange] = []
        try file.forEachTerminalExchange { terminal.append($0) }
        #expect(terminal == TerminalReplay.exchanges(of: whole))
        #expect(file.header == whole.header)
        #expect(file.lastLine == whole.lastLineNumber)
        // The same refusal, or none, as the whole-transcript check.
        var expected: ReplayError?
        do { try LiveReplay.check(whole) } catch { expected = error }
        #expect(file.liveRefusal?.code == expected?.code && file.liveRefusal?.line == expected?.line)
    }

    @Test func interleavedChannelsComeOutInCommandOrder() throws {
        let path = try write(versionLine + """
            @a > 00 B0 00 00 01
            @b > 00 B0 00 00 02
            @b < 02 90 00
            @a < 01 90 00
            @b > 00 B0 00 00 03
            @b < 03 90 00
            @a > 00 B0 00 00 04

            """)
        let file = try TranscriptReplayFile(contentsOfFile: path)
        var lines: [Int] = []
        try file.forEachRecordedExchange { lines.append($0.line) }
        #expect(lines == [2, 3, 6, 8])
        #expect(file.unanswered == [8])
        #expect(throws: ReplayError.self) { try file.checkLive() }
        #expect(file.liveRefusal?.code == .noRecordedAnswer && file.liveRefusal?.line == 8)
    }

    @Test func anUnansweredCommandBeforeARedactedOneIsTheRefusal() throws {
        let path = try write(versionLine + """
            @a > 00 B0 00 00 01
            @b > 00 20 00 81 08 [REDACTED 8]
            @b < 90 00

            """)
        let whole = try Transcript(contentsOfFile: path)
        let file = try TranscriptReplayFile(contentsOfFile: path)
        #expect(file.liveRefusal?.code == .noRecordedAnswer && file.liveRefusal?.line == 2)
        #expect(throws: ReplayError.self) { try LiveReplay.check(whole) }
        do { try LiveReplay.check(whole) } catch { #expect(error.code == .noRecordedAnswer && error.line == 2) }
    }

    @Test func aStreamedLiveReplayMatchesAndStopsAtTheFirstDifference() throws {
        let path = try write(versionLine + """
            > 00 A4 04 00 02 3F 00
            < 90 00
            > 00 B0 00 00 02
            < 01 02 90 00

            """)
        let file = try TranscriptReplayFile(contentsOfFile: path)
        let good = ScriptedChannel([[0x00, 0xA4, 0x04, 0x00, 0x02, 0x3F, 0x00]: .bytes([0x90, 0x00]),
                                    [0x00, 0xB0, 0x00, 0x00, 0x02]: .bytes([0x01, 0x02, 0x90, 0x00])])
        #expect(try LiveReplay.run(file, on: good) == 2)
        let bad = ScriptedChannel([[0x00, 0xA4, 0x04, 0x00, 0x02, 0x3F, 0x00]: .bytes([0x90, 0x00]),
                                   [0x00, 0xB0, 0x00, 0x00, 0x02]: .bytes([0x01, 0x03, 0x90, 0x00])])
        do {
            try LiveReplay.run(file, on: bad)
            Issue.record("a different answer matched")
        } catch {
            #expect(error.code == .mismatch && error.line == 5)
        }
    }

    @Test func aStreamedTerminalReplayFindsNoCommands() throws {
        let path = try write(versionLine + "; nothing\n")
        let file = try TranscriptReplayFile(contentsOfFile: path)
        do {
            try TerminalReplay.run(file) { $0 }
            Issue.record("an empty transcript replayed")
        } catch {
            #expect(error.code == .endOfTranscript && error.line == 2)
        }
    }

    // MARK: pcsc-spy import

    @Test(arguments: ["nfc-list.log", "two-threads.log", "two-threads-2.2.log", "two-threads-d-colour.log", "two-threads-t.log"])
    func streamedSpyImportWritesWhatTheInMemoryImportGives(_ name: String) throws {
        let options = SpyImportOptions(tool: "test", date: "2026-12-01T00:00:00Z")
        let whole = try SpyLogImporter.importLog(contentsOfFile: spyLogPath(name), options: options)
        let output = try makeTemporaryDirectory() + "/out.trn"
        let statistics = try SpyLogImporter.importLog(contentsOfFile: spyLogPath(name), writingTo: output, options: options)
        #expect(try String(contentsOfFile: output, encoding: .utf8) == whole.serialized())
        #expect(statistics == TranscriptStatistics(whole))
        #expect(try SpyLogImporter.importLog(spyLog(name), fileName: spyLogPath(name), options: options) == whole)
    }

    @Test func aLogThatCannotBeImportedWritesNothing() throws {
        let directory = try makeTemporaryDirectory()
        let log = directory + "/bad.log"
        try "SCardTransmit\n this is not pcsc-spy\n".write(toFile: log, atomically: false, encoding: .utf8)
        #expect(throws: SpyImportError.self) {
            _ = try SpyLogImporter.importLog(contentsOfFile: log, writingTo: directory + "/out.trn")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["bad.log"])
    }

    // MARK: Payload arena

    @Test func linesKeptFromAStreamedReadStayIntactWhileChunksAreReused() throws {
        // Enough payload bytes for many 64 KiB chunks; every 97th line is kept, the rest dropped.
        var text = versionLine
        for n in 0..<20_000 {
            let b = (0..<(n % 40 + 1)).map { i in String(format: "%02X", (n &+ i) & 0xFF) }.joined(separator: " ")
            text += "> \(b)\n< 90 00\n"
        }
        let path = try write(text)
        let whole = try Transcript(parsing: text, fileName: path)
        let reader = try TranscriptFileReader(contentsOfFile: path)
        var kept: [(Int, TranscriptLine)] = []
        var index = 0
        while let (number, line) = try reader.next() {
            if index % 97 == 0 { kept.append((number, line)) }
            index += 1
        }
        #expect(kept.count == (whole.lines.count + 96) / 97)
        for (number, line) in kept {
            #expect(line == whole.lines[number - 2])
            #expect(line.serialized() == whole.lines[number - 2].serialized())
        }
    }

    @Test func equalBytesAreEqualWhereverTheyAreStored() {
        let a = TranscriptBytes([0x00, 0xA4, 0x04, 0x00])
        let arena = PayloadArena()
        let chunk = arena.room(for: 4)
        let place = chunk.bytes + chunk.used
        for (i, b) in [UInt8](arrayLiteral: 0x00, 0xA4, 0x04, 0x00).enumerated() { place[i] = b }
        let b = arena.commit(chunk, count: 4)
        #expect(a == b && a.hashValue == b.hashValue)
        #expect(b.bytes == [0x00, 0xA4, 0x04, 0x00] && b.firstItem == .byte(0x00) && b.trailingStatusWord == 0x0400)
        #expect(TranscriptBytes([]) == TranscriptBytes(items: []) && TranscriptBytes([]).firstItem == nil)
        #expect(TranscriptBytes(items: [.wildcard, .byte(1)]).firstItem == .wildcard)
    }
}
