import Foundation
import ISO7816
import NFCTags
import PN53x
import Testing

@testable import SecbridgeTools

/// `transcript show` (text and `--html`) prints what the library decoders read: NDEF records as
/// `NDEFMessage.lines` gives them (the lines `read` prints), refusals as `NDEFMessage(parsing:)` words them, PN532 frames
/// and ACR122U pseudo-APDUs as PN53x's summaries give them (issue 30 item 2).
@Suite struct TranscriptShowDecodersTests {
    struct NDEFCase: Sendable, CustomTestStringConvertible {
        var id: String
        var source: String
        /// The NDEF message read from the tag (the NLEN before it is added here).
        var message: String
        /// The line the viewer prints, written out so that a change in the decoder is seen here too.
        var line: String
        var testDescription: String { id }
    }

    static let ndefCases: [NDEFCase] = [
        NDEFCase(id: "UTF-16 text without a byte order mark",
                 source: "NFC Forum Text RTD 1.0, RFC 2781 §4.3; docs/iso14443-t4t-ndef.md §5",
                 message: "D1 01 07 54 82 65 6E 00 48 00 69",
                 line: "NDEF record 1: text \"Hi\" (en)"),
        NDEFCase(id: "UTF-16 text, little-endian with FF FE",
                 source: "RFC 2781 §4.3; docs/iso14443-t4t-ndef.md §5",
                 message: "D1 01 09 54 82 65 6E FF FE 48 00 69 00",
                 line: "NDEF record 1: text \"Hi\" (en)"),
        NDEFCase(id: "a record with an ID (IL 08)",
                 source: "NFC Forum NDEF 1.0; docs/iso14443-t4t-ndef.md §5 header bits",
                 message: "D9 01 0C 02 55 69 64 04 65 78 61 6D 70 6C 65 2E 63 6F 6D",
                 line: "NDEF record 1: URI https://example.com, ID \"id\""),
        NDEFCase(id: "the empty record",
                 source: "docs/iso14443-t4t-ndef.md §5",
                 message: "D0 00 00",
                 line: "NDEF record 1: empty record"),
        NDEFCase(id: "a chunked record: its two chunks joined (CF 20, then TNF 6)",
                 source: "NFC Forum NDEF 1.0 §3.2.4 (CF, TNF 6 unchanged); NDEFMessage(parsing:)",
                 message: "B1 01 03 54 02 65 6E 56 00 02 48 69",
                 line: "NDEF record 1: text \"Hi\" (en)"),
    ]

    /// The viewer's line for a message, from the decoder itself.
    static func decoded(_ message: [UInt8]) -> String {
        do {
            return try NDEFMessage(parsing: message).lines.joined(separator: "\n")
        } catch {
            return "NDEF message that does not decode: \(error)"
        }
    }

    /// A T4T read of `message` by the iOS order (NLEN and the message in one READ BINARY).
    static func transcript(_ message: [UInt8]) -> String {
        let nlen = [UInt8(message.count >> 8), UInt8(message.count & 0xFF)]
        let data = nlen + message
        return """
            # secbridge-transcript: 1
            # origin: recorded

            +1.000ms > 00 B0 00 00 \([UInt8(data.count)].hexString)
            +2.000ms < \((data + [0x90, 0x00]).hexString)

            """
    }

    @Test(arguments: ndefCases)
    func textShowsTheRecordAsTheDecoderReadsIt(_ c: NDEFCase) throws {
        let message = try HexBytes.parse(c.message)
        #expect(Self.decoded(message) == c.line, "the decoder itself reads \(c.id) so")
        let dir = try scratchDirectory("show-ndef")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Self.transcript(message).write(toFile: dir + "/t.trn", atomically: true, encoding: .utf8)
        let result = run(["transcript", "show", dir + "/t.trn"])
        #expect(result.status == 0, "\(result.err)")
        let lines = result.out.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        let ndef = lines.filter { $0.hasPrefix("NDEF ") }
        #expect(ndef == [c.line], "\(result.out)")
    }

    @Test(arguments: ndefCases)
    func htmlShowsTheRecordAsTheDecoderReadsIt(_ c: NDEFCase) throws {
        let message = try HexBytes.parse(c.message)
        let dir = try scratchDirectory("show-ndef-html")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Self.transcript(message).write(toFile: dir + "/t.trn", atomically: true, encoding: .utf8)
        let result = run(["transcript", "show", "--html", dir + "/t.html", dir + "/t.trn"])
        #expect(result.status == 0, "\(result.err)")
        let html = try String(contentsOfFile: dir + "/t.html", encoding: .utf8)
        let escaped = c.line.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "\"", with: "&quot;")
        #expect(html.contains("<div class=\"d\">\(escaped)</div>"), "\(html)")
        #expect(html.components(separatedBy: "<div class=\"d\">NDEF ").count == 2, "one NDEF line")
    }

    /// A Smart Poster (the Smart Poster RTD 1.0 layout: U, T, act, s, t, an icon): the viewer prints
    /// the lines `read` prints, from `NDEFMessage.lines`, the parts indented under the record.
    @Test func aSmartPosterIsShownAsReadShowsIt() throws {
        let message = try HexBytes.parse("D1 02 4A 53 70 91 01 0C 55 04 65 78 61 6D 70 6C 65 2E 63 6F 6D"
            + " 11 01 0A 54 02 65 6E 45 78 61 6D 70 6C 65 11 03 01 61 63 74 00 11 01 04 73 00 00 04 00"
            + " 11 01 09 74 74 65 78 74 2F 68 74 6D 6C 52 09 04 69 6D 61 67 65 2F 70 6E 67 89 50 4E 47")
        let expected = [
            "NDEF record 1: smart poster https://example.com", "  URI https://example.com", "  title \"Example\" (en)",
            "  action 00: do the action (open, call, send)", "  size 1024 bytes", "  type \"text/html\"",
            "  icon \"image/png\", 4 bytes",
        ]
        #expect(try NDEFMessage(parsing: message).lines == expected)
        let dir = try scratchDirectory("show-smart-poster")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Self.transcript(message).write(toFile: dir + "/t.trn", atomically: true, encoding: .utf8)
        let result = run(["transcript", "show", dir + "/t.trn"])
        #expect(result.status == 0, "\(result.err)")
        let lines = result.out.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        let first = try #require(lines.firstIndex(of: expected[0]), "\(result.out)")
        #expect(Array(lines[first..<min(lines.count, first + expected.count)]) == expected.map { $0.trimmingCharacters(in: .whitespaces) }, "\(result.out)")
    }

    /// `transcript show` of a recorded transcript holding `exchanges` (its lines), in a scratch
    /// directory named after `name`.
    static func show(_ name: String, _ exchanges: String) throws -> (status: Int32, out: String, err: String) {
        let dir = try scratchDirectory(name)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try ("# secbridge-transcript: 1\n# origin: recorded\n\n" + exchanges + "\n")
            .write(toFile: dir + "/t.trn", atomically: true, encoding: .utf8)
        return run(["transcript", "show", dir + "/t.trn"])
    }

    /// PN532 answers and pseudo-APDUs, each line as PN53x's summary gives it.
    @Test func pn532AndPseudoAPDULinesAreTheLibrarySummaries() throws {
        // InDataExchange to target 1 with SELECT E103, answered 90 00 by the card; InCommunicateThru
        // timing out (status 01, UM0701-02 §7.1); a Get Data whose Le the ACR122U API does not allow.
        let result = try Self.show("show-pn532", """
            +1.000ms > FF 00 00 00 0A D4 40 01 00 A4 00 0C 02 E1 03
            +2.000ms < D5 41 00 90 00 90 00
            +3.000ms > FF 00 00 00 04 D4 42 30 04
            +4.000ms < D5 43 01 90 00
            +5.000ms > FF 00 00 00 09 D4 42 30 04
            """)
        #expect(result.status == 0, "\(result.err)")
        let exchange = try ACR122Command(parsing: HexBytes.parse("FF 00 00 00 0A D4 40 01 00 A4 00 0C 02 E1 03"))
        #expect(exchange.summary == "ACR122U direct transmit: PN532 InDataExchange target 1: SELECT by file identifier (case 3S, Nc 2, Ne 0)")
        #expect(try PN532ChipFrame(parsing: HexBytes.parse("D5 41 00 90 00")).summary
                == ["PN532 InDataExchange answer, status 00 (success)", "card: SW 90 00: normal processing, no further qualification"])
        #expect(result.out.contains("""
                    ACR122U direct transmit: PN532 InDataExchange target 1: SELECT by file identifier (case 3S, Nc 2, Ne 0)
            """), "\(result.out)")
        #expect(result.out.contains("""
                    PN532 InDataExchange answer, status 00 (success)
                    card: SW 90 00: normal processing, no further qualification
                    reader: SW 90 00: normal processing, no further qualification
            """), "\(result.out)")
        #expect(result.out.contains("        PN532 InCommunicateThru answer, status 01 (timeout: the target did not answer)\n"), "\(result.out)")
        #expect(result.out.contains("        ACR122U pseudo-APDU that does not parse: Lc says 9 bytes but 4 follow\n"), "\(result.out)")
    }

    /// A T=0 unit's exchange as libnfc's Touchatag trace shows it (drivers/acr122_usb.c;
    /// docs/acr122-pn532.md §2): the PN532 answer that Get Response fetches is decoded as the
    /// Direct Transmit's would be.
    @Test func aPN532AnswerFetchedByGetResponseIsDecoded() throws {
        let result = try Self.show("show-t0", """
            +1.000ms > FF 00 00 00 02 D4 02
            +2.000ms < 61 08
            +3.000ms > FF C0 00 00 08
            +4.000ms < D5 03 32 01 04 07 90 00
            """)
        #expect(result.status == 0, "\(result.err)")
        let chip = try PN532ChipFrame(parsing: HexBytes.parse("D5 03 32 01 04 07")).summary
        #expect(!chip.isEmpty)
        let expected = (["+4.000ms < D5 03 32 01 04 07 90 00"] + chip + ["reader: SW 90 00: normal processing, no further qualification"])
        let lines = result.out.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        let first = try #require(lines.firstIndex(of: expected[0]), "\(result.out)")
        #expect(Array(lines[first..<min(lines.count, first + expected.count)]) == expected, "\(result.out)")
    }
}
