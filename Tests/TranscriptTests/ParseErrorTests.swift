import Testing
@testable import Transcript

@Suite("Transcript parse errors name file:line:column")
struct ParseErrorTests {
    struct Vector: Sendable, CustomStringConvertible {
        var id: String
        var text: String
        var code: TranscriptParseError.Code
        var line: Int
        var column: Int
        var description: String { id }
    }

    static let h = versionLine
    static let vectors: [Vector] = [
        Vector(id: "empty file", text: "", code: .notATranscript, line: 1, column: 1),
        Vector(id: "another format", text: "hello\n", code: .notATranscript, line: 1, column: 1),
        Vector(id: "newer version", text: "# secbridge-transcript: 2\n", code: .unsupportedVersion, line: 1, column: 25),
        // "> 00 A4 " is 8 bytes: G1 starts at column 9.
        Vector(id: "bad hex digit", text: h + "> 00 A4 G1 00\n", code: .badHex, line: 2, column: 9),
        Vector(id: "lowercase hex", text: h + "> 00 a4\n", code: .badHex, line: 2, column: 6),
        Vector(id: "three hex digits", text: h + "> 00 A40\n", code: .badHex, line: 2, column: 6),
        Vector(id: "zero-length redaction", text: h + "> 00 20 00 81 08 [REDACTED 0]\n", code: .badHex, line: 2, column: 18),
        Vector(id: "redaction mark misspelt", text: h + "> 00 20 00 81 08 [MASKED 8]\n", code: .badHex, line: 2, column: 18),
        Vector(id: "unknown line kind", text: h + "apdu > 00\n", code: .unknownLineKind, line: 2, column: 1),
        Vector(id: "unknown event kind", text: h + "event card-exploded\n", code: .unknownEventKind, line: 2, column: 7),
        Vector(id: "tgt without direction", text: h + "tgt 00 A4\n", code: .unknownLineKind, line: 2, column: 5),
        Vector(id: "last line cut short", text: h + "> 00 A4", code: .truncated, line: 2, column: 8),
        Vector(id: "first line cut short", text: "# secbridge-tr", code: .truncated, line: 1, column: 15),
        Vector(id: "carriage return", text: h + "> 00\r\n", code: .invalidCharacter, line: 2, column: 5),
        Vector(id: "tab", text: h + ">\t00\n", code: .invalidCharacter, line: 2, column: 2),
        Vector(id: "trailing space", text: h + "> 00 \n", code: .badSpacing, line: 2, column: 5),
        Vector(id: "two spaces", text: h + ">  00\n", code: .badSpacing, line: 2, column: 3),
        Vector(id: "answer without command", text: h + "< 90 00\n", code: .badSequence, line: 2, column: 1),
        Vector(id: "command left unanswered", text: h + "> 00 A4 04 00\n> 00 B0 00 00 00\n", code: .badSequence, line: 3, column: 1),
        Vector(id: "control answer with another code",
               text: h + "ctl 0x42000001 > FF 00 48 00 00\nctl 0x42000DAC < 90 00\n", code: .badSequence, line: 3, column: 1),
        Vector(id: "transmit answer to a control command",
               text: h + "ctl 0x42000001 > FF 00 48 00 00\n< 90 00\n", code: .badSequence, line: 3, column: 1),
        Vector(id: "target answer without C-APDU", text: h + "tgt > 90 00\n", code: .badSequence, line: 2, column: 1),
        Vector(id: "reader without id", text: h + "reader name=\"x\"\n", code: .badSequence, line: 2, column: 1),
        Vector(id: "reader declared twice", text: h + "@r0 reader\n@r0 reader\n", code: .badSequence, line: 3, column: 1),
        Vector(id: "header after body", text: h + "> 00\n< 90 00\n# tool: x\n", code: .misplacedHeader, line: 4, column: 1),
        Vector(id: "duplicate header key", text: h + "# tool: a\n# tool: b\n", code: .badHeader, line: 3, column: 3),
        Vector(id: "version key repeated", text: h + "# secbridge-transcript: 1\n", code: .badHeader, line: 2, column: 3),
        Vector(id: "unknown origin", text: h + "# origin: live\n", code: .badHeader, line: 2, column: 11),
        Vector(id: "unknown protocol", text: h + "# protocol: T=2\n", code: .badHeader, line: 2, column: 13),
        // "# atr: 3B 8" : the bad item starts at column 11.
        Vector(id: "bad header ATR", text: h + "# atr: 3B 8\n", code: .badHeader, line: 2, column: 11),
        Vector(id: "header without value", text: h + "# tool:\n", code: .badHeader, line: 2, column: 7),
        Vector(id: "header key uppercase", text: h + "# Tool: x\n", code: .badHeader, line: 2, column: 3),
        Vector(id: "missing unit", text: h + "+12.345 > 00\n", code: .badOffset, line: 2, column: 8),
        Vector(id: "leading zero", text: h + "+012ms > 00\n", code: .badOffset, line: 2, column: 2),
        Vector(id: "point without digits", text: h + "+12.ms > 00\n", code: .badOffset, line: 2, column: 1),
        Vector(id: "ten fraction digits", text: h + "+0.0000000001s > 00\n", code: .badOffset, line: 2, column: 1),
        Vector(id: "bad channel id", text: h + "@r/0 > 00\n", code: .badChannel, line: 2, column: 1),
        Vector(id: "control code without 0x", text: h + "ctl 42000001 > FF\n", code: .badControlCode, line: 2, column: 5),
        Vector(id: "failure without name", text: h + "> 00\n! 0x8010000C\n", code: .badFailure, line: 3, column: 3),
        Vector(id: "failure code lowercase", text: h + "> 00\n! SCARD_E_TIMEOUT 0x8010000a\n", code: .badFailure, line: 3, column: 19),
        // "event card-inserted atr=" is 24 bytes: the opening quote is column 25.
        Vector(id: "unterminated quote", text: h + "event card-inserted atr=\"3B 80\n", code: .badAttribute, line: 2, column: 25),
        Vector(id: "unquoted attribute", text: h + "event card-inserted atr=3B\n", code: .badAttribute, line: 2, column: 25),
        Vector(id: "unknown escape", text: h + "event x-note text=\"a\\nb\"\n", code: .badAttribute, line: 2, column: 21),
        Vector(id: "attribute twice", text: h + "event card-inserted atr=\"3B\" atr=\"3B\"\n", code: .badAttribute, line: 2, column: 30),
        Vector(id: "attribute ATR not hex", text: h + "event card-inserted atr=\"3B 8O\"\n", code: .badAttribute, line: 2, column: 29),
        Vector(id: "empty note", text: h + "> 00 ;\n", code: .badNote, line: 2, column: 6),
        Vector(id: "comment without space", text: h + ";note\n", code: .badNote, line: 2, column: 2),
        // A bad character is the error named even where the parse fails first or succeeds: the
        // parser checks characters after reading a line (TranscriptLineParser.accept).
        Vector(id: "control character after bad hex", text: h + "> G1 00\u{01}\n", code: .invalidCharacter, line: 2, column: 8),
        Vector(id: "control character after a bad offset", text: h + "+01ms > 00\u{7F}\n", code: .invalidCharacter, line: 2, column: 11),
        Vector(id: "control character in a note", text: h + "> 00 ; a\u{01}b\n", code: .invalidCharacter, line: 2, column: 9),
        Vector(id: "control character before a pairing error", text: h + "< 90 00 ; \u{01}x\n", code: .invalidCharacter, line: 2, column: 11),
        Vector(id: "trailing space after a note", text: h + "> 00 ; a \n", code: .badSpacing, line: 2, column: 9),
        Vector(id: "trailing space after a bad item", text: h + "> 00 0 \n", code: .badSpacing, line: 2, column: 7),
        Vector(id: "spaces only", text: h + "   \n", code: .badSpacing, line: 2, column: 3),
    ]

    @Test("rejection vectors", arguments: vectors)
    func rejects(_ v: Vector) {
        do {
            let t = try Transcript(parsing: v.text, fileName: "bad.transcript")
            Issue.record("parsed: \(t)")
        } catch {
            #expect(error.code == v.code, "\(error)")
            #expect(error.file == "bad.transcript")
            #expect(error.line == v.line, "\(error)")
            #expect(error.column == v.column, "\(error)")
            #expect(error.description.hasPrefix("bad.transcript:\(v.line):\(v.column): "))
        }
    }

    @Test("messages say what to write instead (the texts quoted in Fixtures/README.md)")
    func messages() {
        func message(_ text: String) -> String {
            do {
                _ = try Transcript(parsing: text, fileName: "session.transcript")
                return "parsed"
            } catch {
                return error.description
            }
        }
        #expect(message(Self.h + "> 00 A4 G1 00\n")
            == "session.transcript:2:9: 'G1' is not a byte: write two uppercase hex digits, ?? (any byte) or [REDACTED n]")
        #expect(message(Self.h + "apdu > 00\n")
            == "session.transcript:2:1: unknown line kind 'apdu': expected >, <, !, ctl, tgt, ini, event or reader (comments start with ';')")
        #expect(message(Self.h + "> 00 A4")
            == "session.transcript:2:8: the last line does not end with a newline: the file looks cut short; complete it or remove the partial line")
        #expect(message(Self.h + "> 00 a4\n") == "session.transcript:2:6: 'a4' is lowercase: write hex in uppercase, 'A4'")
        #expect(message(Self.h + "> 00 A4 04 00\n> 00 B0 00 00 00\n")
            == "session.transcript:3:1: the command at line 2 has no answer: write its '<' or '!' line before the next command")
    }

    @Test("an unreadable file is an error naming the path")
    func unreadableFile() {
        #expect(throws: TranscriptParseError.self) {
            try Transcript(contentsOfFile: "/nonexistent/dir/x.transcript")
        }
    }

    @Test("a file that is not UTF-8 is rejected with its line")
    func notUTF8() throws {
        let dir = try makeTemporaryDirectory()
        let path = dir + "/latin1.transcript"
        var bytes = Array((versionLine + "; caf").utf8)
        bytes += [0xE9, 0x0A]
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        do {
            _ = try Transcript(contentsOfFile: path)
            Issue.record("parsed")
        } catch {
            #expect(error.code == .invalidCharacter, "\(error)")
            #expect(error.line == 2)
            #expect(error.column == 6)
        }
    }
}

import Foundation

extension ParseErrorTests {
    @Test("a path that is not a regular file is refused without blocking")
    func notARegularFile() throws {
        let dir = try makeTemporaryDirectory()
        #expect(throws: TranscriptParseError(code: .unreadable, file: "", line: 0, column: 0, reason: "")) {
            try Transcript(contentsOfFile: dir)
        }
        let fifo = dir + "/fifo"
        #expect(mkfifo(fifo, 0o600) == 0)
        do {
            _ = try Transcript(contentsOfFile: fifo)
            Issue.record("read a FIFO")
        } catch {
            #expect(error.code == .unreadable)
            #expect(error.reason.contains("not a regular file"))
        }
    }
}
