import ISO7816
import SecbridgeTesting
import Testing
@testable import NFCTags

/// Smart Posters, external and MIME payloads, chunked records (docs/iso14443-t4t-ndef.md §5), and
/// the mapping 1.0 file SELECTs of the reader (docs/terminal-models.md §1).
@Suite struct NDEFDecodingTests {
    /// A Smart Poster laid out as the Smart Poster RTD 1.0 describes it: the "Sp" record's payload
    /// is a message of a URI record, a title, "act", "s", "t" and an icon.
    static let smartPoster = "D1 02 4A 53 70"
        + " 91 01 0C 55 04 65 78 61 6D 70 6C 65 2E 63 6F 6D"  // MB, U: 04 "example.com"
        + " 11 01 0A 54 02 65 6E 45 78 61 6D 70 6C 65"  // T: "Example" (en)
        + " 11 03 01 61 63 74 00"  // act: 00
        + " 11 01 04 73 00 00 04 00"  // s: 1024
        + " 11 01 09 74 74 65 78 74 2F 68 74 6D 6C"  // t: "text/html"
        + " 52 09 04 69 6D 61 67 65 2F 70 6E 67 89 50 4E 47"  // ME, MIME image/png, 4 bytes

    @Test func aSmartPosterPrintsEachOfItsParts() throws {
        let message = try NDEFMessage(parsing: hex(Self.smartPoster))
        #expect(message.lines == [
            "NDEF record 1: smart poster https://example.com",
            "  URI https://example.com",
            "  title \"Example\" (en)",
            "  action 00: do the action (open, call, send)",
            "  size 1024 bytes",
            "  type \"text/html\"",
            "  icon \"image/png\", 4 bytes",
        ])
        let poster = try #require(try message.records[0].smartPosterValue())
        #expect(poster.titles.map(\.language) == ["en"])
        #expect(poster.size == 1024 && poster.action == 0)
    }

    @Test func aSmartPosterWithTwoTitlesAndNoURIWarns() throws {
        // Titles "Hi" (en) and "Salut" (fr), no URI record.
        let nested = "91 01 05 54 02 65 6E 48 69" + " 51 01 08 54 02 66 72 53 61 6C 75 74"
        let record = NDEFRecord(tnf: .wellKnown, type: Array("Sp".utf8), payload: hex(nested))
        #expect(record.summary == "smart poster without a URI record")
        #expect(record.details == [
            "warning: 0 URI records; a Smart Poster holds exactly one (Smart Poster RTD 1.0)",
            "title \"Hi\" (en)", "title \"Salut\" (fr)",
        ])
        let badAction = NDEFRecord(tnf: .wellKnown, type: Array("Sp".utf8), payload: hex("D1 03 02 61 63 74 00 01"))
        #expect(badAction.summary == "smart poster record that does not decode: a Smart Poster's action record holds 1 byte; this one holds 2")
        #expect(badAction.details.isEmpty)
    }

    @Test("external and MIME payloads: text when they are text, hex otherwise", arguments: [
        // An Android Application Record: type "android.com:pkg", payload "com.example.app".
        ("D4 0F 0F 61 6E 64 72 6F 69 64 2E 63 6F 6D 3A 70 6B 67 63 6F 6D 2E 65 78 61 6D 70 6C 65 2E 61 70 70",
         "Android application \"com.example.app\""),
        ("D4 05 02 61 2E 62 3A 63 6F 6B", "external type \"a.b:c\": \"ok\""),
        ("D4 05 02 61 2E 62 3A 63 00 FF", "external type \"a.b:c\": 00 FF"),
        ("D2 0A 04 74 65 78 74 2F 70 6C 61 69 6E 61 0A 22 62", "MIME \"text/plain\": \"a\\n\\\"b\""),
        ("D2 09 04 69 6D 61 67 65 2F 70 6E 67 89 50 4E 47", "MIME \"image/png\": 89 50 4E 47"),
        ("D2 03 01 61 2F 62 07", "MIME \"a/b\": 07"),  // BEL is a control character
        ("D5 00 02 01 02", "TNF 5, type \"\", 2-byte payload 01 02"),
    ])
    func payloadsAsTextOrHex(_ bytes: String, _ expected: String) throws {
        #expect(try NDEFMessage(parsing: hex(bytes)).records[0].summary == expected)
    }

    @Test func chunkedRecordsAreJoined() throws {
        // MIME text/plain in three chunks: "Hel" (CF), "l" (CF, TNF 6), "o" (TNF 6, ME).
        let message = try NDEFMessage(parsing: hex("B2 0A 03 74 65 78 74 2F 70 6C 61 69 6E 48 65 6C  36 00 01 6C  56 00 01 6F"))
        #expect(message.records == [NDEFRecord(tnf: .mimeMedia, type: Array("text/plain".utf8), payload: Array("Hello".utf8))])
        // A chunked record between two empty ones, its first chunk with an ID (IL).
        let three = try NDEFMessage(parsing: hex("90 00 00  39 01 01 01 54 41 02  16 00 02 65 6E  50 00 00"))
        #expect(three.records.count == 3)
        #expect(three.records[1].id == [0x41] && three.records[1].payload == [0x02, 0x65, 0x6E])
    }

    @Test("malformed chains are refused with their reason", arguments: [
        ("B2 03 01 61 2F 62 48  52 00 01 6C", TagFormatError.Code.chunked, 7),  // later chunk TNF 2
        ("B2 03 01 61 2F 62 48  56 01 01 55 6C", .chunked, 7),  // later chunk with a TYPE
        ("B2 03 01 61 2F 62 48  5E 00 01 01 6C", .chunked, 7),  // later chunk with an ID (IL)
        ("F2 03 01 61 2F 62 48", .chunked, 0),  // CF and ME together
        ("B2 03 01 61 2F 62 48", .truncated, 7),  // the chain never ends
        ("B6 00 01 48  56 00 01 6C", .invalidTNF, 0),  // a chain starting with TNF 6
    ])
    func malformedChains(_ bytes: String, _ code: TagFormatError.Code, _ offset: Int) {
        #expect {
            _ = try NDEFMessage(parsing: hex(bytes))
        } throws: { error in
            (error as? TagFormatError)?.code == code && (error as? TagFormatError)?.offset == offset
        }
    }

    @Test func payloadsOverTenMebibytesAreRefusedBeforeCopying() throws {
        // A single record declaring 10 MiB + 1 (00 A0 00 01), nothing behind it.
        #expect(throws: TagFormatError(.tooLarge, "")) { try NDEFMessage(parsing: hex("C5 00 00 A0 00 01")) }
        // Two chunks: 10 MiB, then 1 more byte declared: refused at the chain's start.
        let first = hex("A5 00 00 A0 00 00") + [UInt8](repeating: 0x41, count: NDEFMessage.maximumPayloadSize)
        #expect {
            _ = try NDEFMessage(parsing: first + hex("56 00 01 42"))
        } throws: { error in
            (error as? TagFormatError)?.code == .tooLarge && (error as? TagFormatError)?.offset == 0
        }
    }

    /// A strict mapping 1.0 tag: only the 1.0 AID, file SELECTs with P2 00 only (6A 86 for 0C).
    @Test func aMappingOneTagIsSelectedWithP2Zero() async throws {
        let cc = hex("00 0F 10 00 7F 00 7F 04 06 E1 04 00 40 00 00")
        let file = hex("00 10 D1 01 0C 55 04 65 78 61 6D 70 6C 65 2E 63 6F 6D")
        var selected: [UInt8]?
        var sent: [[UInt8]] = []
        let result = try await Type4TagReader.read { command in
            sent.append(command)
            switch (command[1], command[2], command[3]) {
            case (0xA4, 0x04, _):
                return Array(command[5..<12]) == hex("D2 76 00 00 85 01 00") && command.count == 12 ? [0x90, 0x00] : [0x6A, 0x82]
            case (0xA4, 0x00, 0x00):
                selected = Array(command[5..<7])
                return [0x90, 0x00]
            case (0xA4, _, _): return [0x6A, 0x86]
            case (0xB0, _, _):
                let data = selected == [0xE1, 0x03] ? cc : file
                let offset = Int(command[2]) << 8 | Int(command[3])
                return Array(data[offset..<min(data.count, offset + Int(command[4]))]) + [0x90, 0x00]
            default: return [0x6D, 0x00]
            }
        }
        #expect(result.message.lines == ["NDEF record 1: URI https://example.com"])
        #expect(sent.map(\.hexString) == [
            "00 A4 04 00 07 D2 76 00 00 85 01 01 00", "00 A4 04 00 07 D2 76 00 00 85 01 00",
            "00 A4 00 00 02 E1 03", "00 B0 00 00 0F", "00 A4 00 00 02 E1 04", "00 B0 00 00 02", "00 B0 00 02 10",
        ])
    }
}
