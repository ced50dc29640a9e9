import Foundation
import ISO7816
import SecbridgeTesting
import Testing
@testable import Transcript

@Suite("Writing and recording")
struct WriterTests {
    static let header = TranscriptHeader(tool: "secbridge 0.1.0", origin: .recorded, reader: "ACS ACR122U PICC Interface 00 00")

    @Test("the streaming writer puts each line in the file before append returns")
    func flushPerLine() throws {
        let dir = try makeTemporaryDirectory()
        let path = dir + "/live.transcript"
        let writer = try TranscriptWriter(creatingFileAt: path, header: Self.header)
        var expected = versionLine + "# tool: secbridge 0.1.0\n# origin: recorded\n# reader: ACS ACR122U PICC Interface 00 00\n"
        #expect(try fileText(path) == expected)
        let lines: [TranscriptLine] = [
            .comment("P10 start"),
            .record(TranscriptRecord(.control(code: 0x4200_0001, .outgoing, TranscriptBytes(hex("FF 00 00 00 02 D4 86"))),
                                     offset: TranscriptOffset(elapsed: .milliseconds(1)))),
            .record(TranscriptRecord(.control(code: 0x4200_0001, .incoming, TranscriptBytes(hex("D5 87 00 00 A4 04 00 90 00"))),
                                     offset: TranscriptOffset(elapsed: .milliseconds(2)))),
            .record(TranscriptRecord(.target(.incoming, TranscriptBytes(hex("00 A4 04 00"))), offset: TranscriptOffset(elapsed: .milliseconds(2)))),
            .record(TranscriptRecord(.event(TranscriptEvent(.fieldOff)), offset: TranscriptOffset(elapsed: .milliseconds(3)))),
        ]
        for line in lines {
            try writer.append(line)
            expected += line.serialized() + "\n"
            // Read back through a separate file descriptor, as a process after a crash would.
            #expect(try fileText(path) == expected)
            #expect(try Transcript(contentsOfFile: path).lines.last == line)
        }
        try writer.close()
        try writer.close()
        #expect(throws: TranscriptWriteError(code: .closed, path: "", reason: "")) {
            try writer.append(.blank)
        }
        #expect(try fileText(path) == expected)
    }

    @Test("the writer refuses an existing file unless told to replace it")
    func existingFile() throws {
        let dir = try makeTemporaryDirectory()
        let path = dir + "/keep.transcript"
        try "precious\n".write(toFile: path, atomically: false, encoding: .utf8)
        #expect(throws: TranscriptWriteError(code: .cannotCreate, path: "", reason: "")) {
            try TranscriptWriter(creatingFileAt: path, header: Self.header)
        }
        #expect(try fileText(path) == "precious\n")
        let w = try TranscriptWriter(creatingFileAt: path, header: TranscriptHeader(), replacingExisting: true)
        try w.close()
        #expect(try fileText(path) == versionLine)
    }

    @Test("a line that would not parse back is refused and nothing is written")
    func invalidLines() throws {
        let dir = try makeTemporaryDirectory()
        let path = dir + "/strict.transcript"
        let writer = try TranscriptWriter(creatingFileAt: path, header: TranscriptHeader())
        let bad: [TranscriptLine] = [
            .record(TranscriptRecord(.transmit(.incoming, TranscriptBytes(hex("90 00"))))),  // answer without command
            .comment("two\nlines"),
            .comment("trailing "),
            .record(TranscriptRecord(.transmit(.outgoing, TranscriptBytes(items: [.redacted(count: 0)])))),
            .record(TranscriptRecord(.event(TranscriptEvent(TranscriptEventKind(rawValue: "card-exploded"))))),
            .record(TranscriptRecord(.failure(TranscriptFailure(name: "no spaces allowed")))),
            .record(TranscriptRecord(.transmit(.outgoing, TranscriptBytes([0x00])), channel: "r 0")),
            .record(TranscriptRecord(.transmit(.outgoing, TranscriptBytes([0x00])), offset: TranscriptOffset(mantissa: 1, fractionDigits: 12, unit: .seconds))),
        ]
        for line in bad {
            #expect(throws: TranscriptWriteError(code: .invalidLine, path: "", reason: ""), "\(line)") {
                try writer.append(line)
            }
        }
        #expect(try fileText(path) == versionLine)
        #expect(throws: TranscriptWriteError(code: .invalidLine, path: "", reason: "")) {
            try TranscriptWriter(creatingFileAt: dir + "/h.transcript", header: TranscriptHeader(fields: [.init(key: "Bad Key", value: "x")]))
        }
        #expect(!FileManager.default.fileExists(atPath: dir + "/h.transcript"))
    }

    @Test("atomic save writes the whole file")
    func atomicSave() throws {
        let dir = try makeTemporaryDirectory()
        let text = try readmeTranscripts()[1].text
        let t = try Transcript(parsing: text, fileName: "example1")
        try t.write(toFile: dir + "/saved.transcript")
        #expect(try fileText(dir + "/saved.transcript") == text)
        // Saving again replaces the file.
        try Transcript(header: Self.header).write(toFile: dir + "/saved.transcript")
        #expect(try Transcript(contentsOfFile: dir + "/saved.transcript").header == Self.header)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir) == ["saved.transcript"])
    }

    @Test("atomic save to a path that is a directory fails and leaves nothing behind")
    func atomicSaveOntoDirectory() throws {
        let dir = try makeTemporaryDirectory()
        try FileManager.default.createDirectory(atPath: dir + "/taken", withIntermediateDirectories: false)
        do {
            try Transcript(header: Self.header).write(toFile: dir + "/taken")
            Issue.record("wrote over a directory")
        } catch {
            #expect(error.code == .cannotRename, "\(error)")
            #expect(error.reason.contains("a directory has that name"))
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir) == ["taken"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir + "/taken").isEmpty)
    }

    @Test("atomic save into a directory that cannot take files fails with no partial file")
    func atomicSaveUnwritableDirectory() throws {
        let dir = try makeTemporaryDirectory()
        // The tests may run as root, which ignores permission bits: use a parent that is a regular
        // file (ENOTDIR) and one that does not exist (ENOENT); both refuse the temporary file.
        try "x".write(toFile: dir + "/plain", atomically: false, encoding: .utf8)
        for path in [dir + "/plain/t.transcript", dir + "/missing/t.transcript"] {
            do {
                try Transcript(header: Self.header).write(toFile: path)
                Issue.record("wrote \(path)")
            } catch {
                #expect(error.code == .cannotCreate, "\(error)")
            }
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir) == ["plain"])
        #expect(try fileText(dir + "/plain") == "x")
    }

    @Test("an invalid transcript is refused before anything is written")
    func atomicSaveInvalid() throws {
        let dir = try makeTemporaryDirectory()
        let t = Transcript(lines: [.record(TranscriptRecord(.transmit(.incoming, TranscriptBytes(hex("90 00")))))])
        #expect(throws: TranscriptWriteError(code: .invalidLine, path: "", reason: "")) {
            try t.write(toFile: dir + "/x.transcript")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir).isEmpty)
    }

    // MARK: Recording

    @Test("a recording channel writes command, answer and failure lines with clock offsets and redaction")
    func recordingChannel() throws {
        let clock = VirtualClock()
        let card = ScriptedChannel([
            hex("00 A4 04 00 06 D2 76 00 01 24 01 00"): .bytes(hex("90 00")),
            hex("00 20 00 81 06 31 32 33 34 35 36"): .bytes(hex("63 C2")),
            hex("FF 00 48 00 00"): .bytes(Array("ACR122U207".utf8)),
            hex("00 B0 00 00 00"): .error(TestCardError(name: "SCARD_W_REMOVED_CARD", code: 0x8010_0069)),
        ], protocol: .t0)
        card.onCall = { clock.advance(by: .microseconds(1500)) }
        let buffer = try TranscriptBuffer(header: TranscriptHeader(origin: .recorded, transmissionProtocol: .t0), fileName: "rec")
        let recorder = TranscriptRecorder(sink: buffer, clock: clock.read)
        let channel = RecordingChannel(wrapping: card, recorder: recorder)
        #expect(channel.transmissionProtocol == .t0)

        #expect(try channel.transmit(hex("00 A4 04 00 06 D2 76 00 01 24 01 00")) == hex("90 00"))
        clock.advance(by: .microseconds(250))
        #expect(try channel.transmit(hex("00 20 00 81 06 31 32 33 34 35 36")) == hex("63 C2"))
        #expect(try channel.control(code: 0x4200_0001, hex("FF 00 48 00 00")) == Array("ACR122U207".utf8))
        #expect(throws: TestCardError.self) { try channel.transmit(hex("00 B0 00 00 00")) }
        try channel.recordEvent(.cardRemoved)

        #expect(buffer.transcript.serialized() == """
            # secbridge-transcript: 1
            # origin: recorded
            # protocol: T=0
            +0.000ms > 00 A4 04 00 06 D2 76 00 01 24 01 00
            +1.500ms < 90 00
            +1.750ms > 00 20 00 81 06 [REDACTED 6]
            +3.250ms < 63 C2
            +3.250ms ctl 0x42000001 > FF 00 48 00 00
            +4.750ms ctl 0x42000001 < 41 43 52 31 32 32 55 32 30 37
            +4.750ms > 00 B0 00 00 00
            +6.250ms ! SCARD_W_REMOVED_CARD 0x80100069
            +6.250ms event card-removed

            """)
        // What was recorded replays to the same answers.
        let replay = ReplayChannel(buffer.transcript)
        #expect(try replay.transmit(hex("00 A4 04 00 06 D2 76 00 01 24 01 00")) == hex("90 00"))
        #expect(try replay.transmit(hex("00 20 00 81 06 39 39 39 39 39 39")) == hex("63 C2"))
    }

    @Test("the command line is in the file while the device is still working on it")
    func commandWrittenFirst() throws {
        let dir = try makeTemporaryDirectory()
        let path = dir + "/crash.transcript"
        let writer = try TranscriptWriter(creatingFileAt: path, header: TranscriptHeader())
        let recorder = TranscriptRecorder(sink: writer, clock: VirtualClock().read)
        let card = ScriptedChannel([hex("FF 00 00 00 02 D4 86"): .bytes(hex("D5 87 25 90 00"))])
        var seenDuringCall = ""
        card.onCall = { seenDuringCall = (try? fileText(path)) ?? "" }
        let channel = RecordingChannel(wrapping: card, recorder: recorder, channelID: "r0")
        _ = try channel.control(code: 0x4200_0001, hex("FF 00 00 00 02 D4 86"))
        #expect(seenDuringCall == versionLine + "+0.000ms @r0 ctl 0x42000001 > FF 00 00 00 02 D4 86\n")
        // A file cut there (a crash) still parses; replay names the unanswered command.
        let cut = try Transcript(parsing: seenDuringCall, fileName: "crash.transcript")
        #expect(throws: ReplayError(code: .noRecordedAnswer, file: "", line: 0, reason: "")) {
            try ReplayChannel(cut).control(code: 0x4200_0001, hex("FF 00 00 00 02 D4 86"))
        }
    }

    @Test("errors without a transcript form are written with their type name and description")
    func plainErrors() throws {
        struct ReaderUnplugged: Error, CustomStringConvertible {
            var description: String { "reader \"ACR122U\" unplugged\nreplug it" }
        }
        let f = TranscriptRecorder.defaultFailureDescription(ReaderUnplugged())
        #expect(f == TranscriptFailure(name: "ReaderUnplugged", message: "reader \"ACR122U\" unplugged replug it"))
        #expect(TranscriptRecord(.failure(f)).serialized() == #"! ReaderUnplugged "reader \"ACR122U\" unplugged replug it""#)
        // A replayed failure records as the line it came from.
        let replayed = ReplayedFailure(transcriptFailure: TranscriptFailure(name: "SCARD_E_TIMEOUT", code: 0x8010_000A), file: "f", line: 3)
        #expect(TranscriptRecorder.defaultFailureDescription(replayed) == replayed.transcriptFailure)
    }
}
