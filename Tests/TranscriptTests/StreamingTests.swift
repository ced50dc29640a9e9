import Foundation
import Testing

@testable import Transcript

/// The streaming reader (TranscriptFileReader), the file diff, the streamed redaction and the
/// compact payload form give what the in-memory paths give.
@Suite struct StreamingTests {
    func write(_ text: String, _ name: String = "t.trn") throws -> String {
        let path = try makeTemporaryDirectory() + "/" + name
        try text.write(toFile: path, atomically: false, encoding: .utf8)
        return path
    }

    func readAll(_ path: String) throws -> (TranscriptHeader, [(Int, TranscriptLine)]) {
        let reader = try TranscriptFileReader(contentsOfFile: path)
        var lines: [(Int, TranscriptLine)] = []
        while let next = try reader.next() { lines.append(next) }
        return (reader.header, lines)
    }

    /// Every payload kind, a wildcard, a redaction, a blank line and a comment, counted line by
    /// line as `transcript stats` streams them: the counts are the in-memory ones, and the ones
    /// worked out by hand (PN532 GetFirmwareVersion D4 02 → D5 03 32 01 06 07 for a PN532 v1.6,
    /// UM0701-02 §7.2.2; 6A 82 file not found, ISO/IEC 7816-4 §5.6).
    @Test func statisticsStreamedLineByLineEqualTheInMemoryCounts() throws {
        let text = """
            # secbridge-transcript: 1

            ; GetFirmwareVersion, a SELECT with a wildcard, an emulated and an initiator exchange
            +1.000ms ctl 0x42000001 > FF 00 00 00 02 D4 02
            +1.500ms ctl 0x42000001 < D5 03 32 01 06 07 90 00
            +2.000ms > 00 A4 04 00 02 3F ??
            +3.000ms < 6A 82
            tgt < 00 A4 04 00 07 D2 76 00 00 85 01 01 00
            tgt > 90 00
            ini > 00 20 00 81 02 [REDACTED 2]
            ini < 90 00

            """
        let reader = try TranscriptFileReader(contentsOfFile: try write(text))
        var streamed = TranscriptStatistics()
        try reader.forEachLine { _, line in
            streamed.add(line)
            return true
        }
        streamed.finish()
        #expect(streamed == TranscriptStatistics(try Transcript(parsing: text)))
        #expect(streamed.records == 8)
        #expect((streamed.controlCommands, streamed.transmitCommands) == (1, 1))
        #expect((streamed.targetCommands, streamed.initiatorCommands) == (1, 1))
        #expect((streamed.bytesSent, streamed.bytesReceived) == (7 + 7, 8 + 2))
        #expect((streamed.wildcardLines, streamed.redactedCommands) == (1, 1))
        #expect(streamed.statusWords == [.init(statusWord: 0x6A82, count: 1)])
        #expect(streamed.timedExchanges == 2)
        #expect(streamed.exchangeTimeRange == .microseconds(500)...(.microseconds(1000)))
        #expect(streamed.exchangeTimeTotal == .microseconds(1500))
        #expect(streamed.channels == [""])
    }

    @Test(arguments: fixtureFiles())
    func streamedFixtureEqualsTheInMemoryParse(_ path: String) throws {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let whole = try Transcript(parsing: text, fileName: path)
        let (header, lines) = try readAll(path)
        #expect(header == whole.header)
        #expect(lines.map(\.1) == whole.lines)
        #expect(lines.map(\.0) == whole.lines.indices.map(whole.lineNumber(ofBodyIndex:)))
    }

    @Test("the rejection vectors fail the same way streamed, line and column included", arguments: ParseErrorTests.vectors)
    func streamedRejections(_ v: ParseErrorTests.Vector) throws {
        let path = try write(v.text)
        do {
            _ = try readAll(path)
            Issue.record("accepted: \(v.id)")
        } catch let e as TranscriptParseError {
            #expect(e.code == v.code, "\(v.id): \(e)")
            #expect(e.line == v.line && e.column == v.column, "\(v.id): \(e)")
            #expect(e.file == path)
        }
    }

    @Test func lineLongerThanTheReadBufferIsRead() throws {
        // 400 000 bytes of payload: 1.2 MB of text on one line, more than the 1 MiB buffer.
        let payload = (0..<400_000).map { _ in "A5" }.joined(separator: " ")
        let path = try write(versionLine + "> " + payload + "\n< 90 00\n")
        let (_, lines) = try readAll(path)
        #expect(lines.count == 2)
        #expect(lines.first?.1.record?.entry.payload?.count == 400_000)
    }

    @Test func headerOnlyFileHasNoBodyLines() throws {
        let path = try write(versionLine + "# tool: test\n")
        let (header, lines) = try readAll(path)
        #expect(header.tool == "test")
        #expect(lines.isEmpty)
    }

    @Test func fileDiffEqualsTheInMemoryDiff() throws {
        let other = diffBase.replacingOccurrences(of: "+63.100ms < 61 17", with: "+63.100ms < 6A 82")
            .replacingOccurrences(of: "# protocol: T=0\n", with: "# protocol: T=1\n")
            + "+71.000ms event card-removed\n"
        let left = try write(diffBase, "left.trn"), right = try write(other, "right.trn")
        let streamed = try TranscriptDiff.compare(contentsOfFile: left, right)
        let inMemory = TranscriptDiff.compare(try Transcript(contentsOfFile: left), try Transcript(contentsOfFile: right))
        #expect(streamed == inMemory)
        #expect(streamed.map(\.kind) == [.headerChanged, .changed, .added])
    }

    @Test func streamedRedactionEqualsTheWholeTranscriptRedaction() throws {
        let text = versionLine + """
            > 00 20 00 81 08 31 32 33 34 35 36 37 38
            < 90 00
            > 00 A4 04 00 02 3F 00
            < 90 00

            """
        let t = try Transcript(parsing: text)
        var stream = Redactor.default.stream()
        #expect(t.lines.map { stream.redact($0) } == Redactor.default.redact(t).lines)
        #expect(Redactor.default.redact(t).lines.first?.record?.entry.payload?.description == "00 20 00 81 08 [REDACTED 8]")
    }

    @Test func fileReplacementWritesOnlyOnCommit() throws {
        let path = try makeTemporaryDirectory() + "/out.trn"
        do {
            let file = try TranscriptFileReplacement(replacing: path, header: TranscriptHeader(tool: "test"))
            try file.append(.record(TranscriptRecord(.transmit(.outgoing, TranscriptBytes([0x00, 0xB0, 0x00, 0x00, 0x02])))))
            // Dropped without commit.
        }
        #expect(!FileManager.default.fileExists(atPath: path))
        let file = try TranscriptFileReplacement(replacing: path, header: TranscriptHeader(tool: "test"))
        try file.append(.record(TranscriptRecord(.transmit(.outgoing, TranscriptBytes([0x00, 0xB0, 0x00, 0x00, 0x02])))))
        #expect(throws: TranscriptWriteError.self) {
            try file.append(.record(TranscriptRecord(.transmit(.outgoing, TranscriptBytes([0x00])))))  // two commands in a row
        }
        try file.append(.record(TranscriptRecord(.transmit(.incoming, TranscriptBytes([0x90, 0x00])))))
        try file.commit()
        #expect(try fileText(path) == versionLine + "# tool: test\n> 00 B0 00 00 02\n< 90 00\n")
        #expect(try FileManager.default.contentsOfDirectory(atPath: (path as NSString).deletingLastPathComponent) == ["out.trn"])
    }

    @Test func compactBytesKeepItemsInOrder() {
        let items: [TranscriptBytes.Item] = [.wildcard, .byte(0x00), .redacted(count: 4), .redacted(count: 4), .byte(0xA4), .wildcard]
        let b = TranscriptBytes(items: items)
        #expect(b.items == items)
        #expect(b.itemCount == 6)
        #expect(b.count == 1 + 1 + 4 + 4 + 1 + 1)
        #expect(b.description == "?? 00 [REDACTED 4] [REDACTED 4] A4 ??")
        #expect(b.bytes == nil && b.containsWildcard && b.containsRedaction)
        #expect(b.matches([0x11, 0x00, 1, 2, 3, 4, 5, 6, 7, 8, 0xA4, 0x22]))
        #expect(b.firstMismatch(in: [0x11, 0x01]) == 1)
        #expect(b.firstMismatch(in: [0x11, 0x00, 1, 2, 3, 4, 5, 6, 7, 8, 0xA5, 0x22]) == 10)
        #expect(b == TranscriptBytes(items: items) && b != TranscriptBytes(items: Array(items.dropLast())))
        let concrete = TranscriptBytes([0x90, 0x00])
        #expect(concrete.bytes == [0x90, 0x00] && concrete.masks.isEmpty && concrete.items == [.byte(0x90), .byte(0x00)])
        #expect(concrete.firstMismatch(in: [0x90]) == 1 && concrete.firstMismatch(in: [0x90, 0x00]) == nil)
    }
}
