import ISO7816
import SecbridgeTesting
import Testing
@testable import NFCTags

/// One NDEF vector: a message and its bytes.
struct NDEFVector: Sendable, CustomTestStringConvertible {
    var id: String
    var source: String
    var records: [NDEFRecord]
    var bytes: String
    var testDescription: String { id }
}

let ndefVectors: [NDEFVector] = [
    NDEFVector(id: "uri https://example.com", source: "docs/iso14443-t4t-ndef.md §5", records: [.uri("https://example.com")],
               bytes: "D1 01 0C 55 04 65 78 61 6D 70 6C 65 2E 63 6F 6D"),
    NDEFVector(id: "text Hello (en)", source: "docs/iso14443-t4t-ndef.md §5", records: [NDEFRecord(tnf: .wellKnown, type: [0x54], payload: [0x02, 0x65, 0x6E, 0x48, 0x65, 0x6C, 0x6C, 0x6F])],
               bytes: "D1 01 08 54 02 65 6E 48 65 6C 6C 6F"),
    NDEFVector(id: "empty record", source: "docs/iso14443-t4t-ndef.md §5", records: [.empty], bytes: "D0 00 00"),
    NDEFVector(id: "two records, MB on the first and ME on the last", source: "docs/iso14443-t4t-ndef.md §5 header bits",
               records: [.uri("tel:123"), .empty], bytes: "91 01 04 55 05 31 32 33 50 00 00"),
    NDEFVector(id: "record with an ID (IL 08)", source: "docs/iso14443-t4t-ndef.md §5 header bits",
               records: [NDEFRecord(tnf: .mimeMedia, type: Array("a/b".utf8), id: [0x01], payload: [0x68, 0x69])],
               bytes: "DA 03 02 01 61 2F 62 01 68 69"),
]

@Suite("NDEF records and messages (docs/iso14443-t4t-ndef.md §5)")
struct NDEFTests {
    @Test("encode", arguments: ndefVectors)
    func encode(_ v: NDEFVector) throws {
        #expect(try NDEFMessage(records: v.records).serialized().hexString == v.bytes)
    }

    @Test("decode and round trip", arguments: ndefVectors)
    func decode(_ v: NDEFVector) throws {
        let message = try NDEFMessage(parsing: hex(v.bytes))
        #expect(message.records == v.records)
        #expect(message.serialized().hexString == v.bytes)
    }

    @Test("drip-feed: every proper prefix is rejected", arguments: ndefVectors)
    func dripFeed(_ v: NDEFVector) throws {
        let bytes = hex(v.bytes)
        for length in 0..<bytes.count {
            #expect(throws: TagFormatError.self) { try NDEFMessage(parsing: Array(bytes.prefix(length))) }
        }
        _ = try NDEFMessage(parsing: bytes)
    }

    @Test("rejections", arguments: [
        ("11 01 01 55 00", TagFormatError.Code.messageBegin),   // MB missing on the first record
        ("D1 01 01 55 00 D0 00 00", .trailingBytes),          // a record after ME
        ("91 01 01 55 00 D0 00 00", .messageBegin),            // MB on the second record
        ("F1 01 01 55 00", .chunked),                          // CF set
        ("D6 00 00", .invalidTNF),                             // TNF 6 outside a chunk
        ("D0 00 01 00", .invalidTNF),                          // empty record with a payload
        ("91 01 01 55 00", .truncated),                        // ends before ME
    ])
    func rejections(_ text: String, _ code: TagFormatError.Code) {
        #expect(throws: TagFormatError(code, "")) { try NDEFMessage(parsing: hex(text)) }
    }

    @Test("URI and text payloads decode back")
    func values() throws {
        #expect(try NDEFRecord.uri("https://example.com").uriValue() == "https://example.com")
        #expect(NDEFRecord.uri("urn:nfc:sn:1").payload.first == 0x23)
        #expect(NDEFRecord.uri("https://www.example.com").payload.first == 0x02, "the longest prefix wins")
        #expect(NDEFRecord.uri("weird:x").payload.first == 0x00)
        #expect(try NDEFRecord.text("Hello", language: "en").payload.hexString == "02 65 6E 48 65 6C 6C 6F")
        let text = try #require(try NDEFRecord.text("Hello", language: "en").textValue())
        #expect(text.text == "Hello" && text.language == "en")
        #expect(throws: TagFormatError(.invalidPayload, "")) { try NDEFRecord(tnf: .wellKnown, type: [0x55], payload: [0x24]).uriValue() }
    }

    /// UTF-16 text payloads (status bit 7; NFC Forum Text RTD 1.0, the byte order of RFC 2781 §4.3).
    @Test("UTF-16 text records decode, with or without a byte order mark", arguments: [
        ("82 65 6E 00 48 00 69", "Hi", "en"),            // no BOM: big-endian
        ("82 65 6E FE FF 00 48 00 69", "Hi", "en"),      // FE FF: big-endian, the BOM is not text
        ("82 65 6E FF FE 48 00 69 00", "Hi", "en"),      // FF FE: little-endian
        ("82 64 65 D8 3D DE 00", "\u{1F600}", "de"),     // a surrogate pair
        ("80", "", ""),                                  // no language, no text
    ])
    func utf16Text(_ payload: String, _ text: String, _ language: String) throws {
        let value = try #require(try NDEFRecord(tnf: .wellKnown, type: [0x54], payload: hex(payload)).textValue())
        #expect(value.text == text && value.language == language)
    }

    @Test("text payloads that do not decode are refused with the offset of the field", arguments: [
        ("82 65 6E 00 48 00", 3),      // UTF-16 of an odd number of bytes
        ("82 65 6E DC 00", 3),         // an unpaired low surrogate
        ("02 65 6E C3", 3),            // UTF-8 cut inside a character
        ("05 65 6E", 0),               // a language longer than the payload
    ])
    func undecodableText(_ payload: String, _ offset: Int) {
        #expect {
            _ = try NDEFRecord(tnf: .wellKnown, type: [0x54], payload: hex(payload)).textValue()
        } throws: { error in
            (error as? TagFormatError)?.code == .invalidPayload && (error as? TagFormatError)?.offset == offset
        }
    }

    @Test("summary: what the decoders read, the ID named", arguments: [
        ("D1 01 0C 55 04 65 78 61 6D 70 6C 65 2E 63 6F 6D", "URI https://example.com"),
        ("D1 01 07 54 82 65 6E 00 48 00 69", "text \"Hi\" (en)"),
        ("D9 01 08 02 54 69 64 02 65 6E 48 65 6C 6C 6F", "text \"Hello\" (en), ID \"id\""),
        ("DA 03 02 01 61 2F 62 01 68 69", "MIME \"a/b\": \"hi\", ID 01"),
        ("D0 00 00", "empty record"),
        ("D1 01 06 54 82 65 6E 00 48 00", "text record that does not decode: the text record is UTF-16 (status bit 7) but its text is 3 bytes, an odd number"),
    ])
    func summary(_ bytes: String, _ expected: String) throws {
        #expect(try NDEFMessage(parsing: hex(bytes)).records[0].summary == expected)
    }

    @Test("a long payload uses a 4-byte length (SR clear)")
    func longRecord() throws {
        let record = NDEFRecord(tnf: .mimeMedia, type: [0x61], payload: [UInt8](repeating: 0x41, count: 300))
        let bytes = try NDEFMessage(records: [record]).serialized()
        #expect(Array(bytes.prefix(7)).hexString == "C2 01 00 00 01 2C 61")
        #expect(try NDEFMessage(parsing: bytes).records == [record])
    }
}

@Suite("Type 4 Tag capability container (docs/iso14443-t4t-ndef.md §4)")
struct Type4CapabilityContainerTests {
    @Test("the capability container of the worked example, byte for byte, and its round trip")
    func capabilityContainer() throws {
        let cc = try Type4CapabilityContainer(readOnly: false)
        #expect(cc.serialized().hexString == "00 0F 20 00 7F 00 7F 04 06 E1 04 04 00 00 00")
        #expect(try Type4CapabilityContainer(parsing: cc.serialized()) == cc)
        let bytes = cc.serialized()
        for length in 0..<bytes.count {
            #expect(throws: TagFormatError.self) { try Type4CapabilityContainer(parsing: Array(bytes.prefix(length))) }
        }
    }

    @Test("capability containers Android rejects are refused", arguments: [
        "00 0E 20 00 7F 00 7F 04 06 E1 04 04 00 00 00",  // CCLEN 14
        "00 0F 20 00 0E 00 7F 04 06 E1 04 04 00 00 00",  // MLe 14
        "00 0F 20 00 7F 00 00 04 06 E1 04 04 00 00 00",  // MLc 0
        "00 0F 20 00 7F 00 7F 04 06 E1 03 04 00 00 00",  // NDEF file id E103
        "00 0F 20 00 7F 00 7F 04 06 3F 00 04 00 00 00",  // NDEF file id 3F00
        "00 0F 20 00 7F 00 7F 04 06 E1 04 FF FE 00 00",  // max size FFFE (libnfc's example)
        "00 0F 20 00 7F 00 7F 04 06 E1 04 00 04 00 00",  // max size 0004
        "00 0F 30 00 7F 00 7F 04 06 E1 04 04 00 00 00",  // mapping 3.0 (not supported here)
    ])
    func androidRejections(_ text: String) {
        #expect(throws: TagFormatError.self) { try Type4CapabilityContainer(parsing: hex(text)) }
    }
}
