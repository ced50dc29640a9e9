import ISO7816
import SecbridgeTesting
import Testing

struct TLVVector: Sendable, CustomTestStringConvertible {
    let id: String
    let source: String
    let bytes: [UInt8]
    let tag: UInt32
    let length: Int
    let headerLength: Int
    var testDescription: String { "\(id) (\(source))" }
}

@Suite("BER-TLV")
struct BERTLVTests {
    static let p02FCP = "6F 15 81 02 02 00 82 01 01 83 02 44 02 86 08 FF 90 90 90 90 90 90 00"

    static let vectors: [TLVVector] = [
        TLVVector(
            id: "P07-three-byte-tag", source: "docs/cases.md P07, jPOS 410",
            bytes: [0x9F, 0x81, 0x6E, 0x01, 0x00], tag: 0x9F816E, length: 1, headerLength: 4),
        TLVVector(
            id: "P07-length-82-0B-1B", source: "docs/cases.md P07, PivApplet 45",
            bytes: [0x53, 0x82, 0x0B, 0x1B] + [UInt8](repeating: 0xC3, count: 2843), tag: 0x53, length: 2843, headerLength: 4),
        TLVVector(
            id: "P07-length-81-89", source: "docs/cases.md P07, GlobalPlatformPro 152",
            bytes: [0x6F, 0x81, 0x89]  // FCI template, 137 bytes
                + [0x84, 0x07, 0xA0, 0x00, 0x00, 0x00, 0x03, 0x10, 0x10]  // DF name
                + [0xA5, 0x7E, 0x50, 0x7C] + [UInt8](repeating: 0x41, count: 124),  // proprietary template holding a label
            tag: 0x6F, length: 137, headerLength: 3),
        TLVVector(
            id: "P03-length-81-A3", source: "docs/cases.md P03, proxmark3 171",
            bytes: [0x70, 0x81, 0xA3] + [0x57, 0x81, 0xA0] + [UInt8](repeating: 0x22, count: 160), tag: 0x70, length: 163, headerLength: 3),
        TLVVector(
            id: "P02-FCP", source: "docs/cases.md P02, IsoApplet 12",
            bytes: hex(p02FCP), tag: 0x6F, length: 0x15, headerLength: 2),
        TLVVector(
            id: "length-83", source: "ISO/IEC 7816-4 §5.2.2.2",
            bytes: [0x04, 0x83, 0x01, 0x00, 0x00] + [UInt8](repeating: 0, count: 65_536), tag: 0x04, length: 65_536, headerLength: 5),
    ]

    @Test("tag, length and value", arguments: vectors)
    func parses(_ v: TLVVector) throws {
        let tlv = try BERTLV(parsing: v.bytes)
        #expect(tlv.tag.rawValue == v.tag)
        #expect(tlv.value.count == v.length)
        #expect(tlv.value == Array(v.bytes[v.headerLength...]))
    }

    @Test("a 4-byte length field parses; serializing picks the shortest form")
    func longestLength() throws {
        let bytes: [UInt8] = [0x04, 0x84, 0x00, 0x00, 0x00, 0x02, 0xAB, 0xCD]  // 84 00 00 00 02: length 2
        let tlv = try BERTLV(parsing: bytes)
        #expect(tlv.value == [0xAB, 0xCD])
        #expect(tlv.serialized() == [0x04, 0x02, 0xAB, 0xCD])
    }

    @Test("P07: tag 9F 81 6E has three bytes, value 00")
    func threeByteTag() throws {
        let tlv = try BERTLV(parsing: [0x9F, 0x81, 0x6E, 0x01, 0x00])
        #expect(tlv.tag.bytes == [0x9F, 0x81, 0x6E])
        #expect(tlv.value == [0x00])
        #expect(!tlv.tag.isConstructed)
        #expect(tlv.tag.tagClass == .contextSpecific)
    }

    @Test("P07: the cursor moves past both length bytes of 82 0B 1B")
    func cursorAfterLength() throws {
        let first = [0x53, 0x82, 0x0B, 0x1B] + [UInt8](repeating: 0x01, count: 2843)
        let objects = try BERTLV.parseAll(first + [0x5C, 0x01, 0x7E])
        #expect(objects.count == 2)
        #expect(objects[0].value.count == 2843)
        #expect(objects[1].tag == BERTag(0x5C))
        #expect(objects[1].value == [0x7E])
    }

    @Test("P02: the FCP's children")
    func p02Children() throws {
        let fcp = try BERTLV(parsing: hex(Self.p02FCP))
        #expect(fcp.tag == BERTag(0x6F))
        #expect(fcp.tag.isConstructed)
        #expect(fcp.children.map(\.tag.rawValue) == [0x81, 0x82, 0x83, 0x86])
        #expect(fcp.child(BERTag(0x81))?.value == [0x02, 0x00])
        #expect(fcp.child(BERTag(0x82))?.value == [0x01])
        #expect(fcp.child(BERTag(0x83))?.value == [0x44, 0x02])
        #expect(fcp.child(BERTag(0x86))?.value == [0xFF, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x00])
        #expect(fcp.find(BERTag(0x83))?.value == [0x44, 0x02])
    }

    @Test("round trip", arguments: vectors)
    func roundTrip(_ v: TLVVector) throws {
        #expect(try BERTLV(parsing: v.bytes).serialized() == v.bytes)
    }

    @Test("building from children encodes the same bytes as P02's FCP")
    func build() throws {
        let fcp = BERTLV(tag: BERTag(0x6F), children: [
            try BERTLV(tag: BERTag(0x81), value: [0x02, 0x00]),
            try BERTLV(tag: BERTag(0x82), value: [0x01]),
            try BERTLV(tag: BERTag(0x83), value: [0x44, 0x02]),
            try BERTLV(tag: BERTag(0x86), value: [0xFF, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x00]),
        ])
        #expect(fcp.serialized() == hex(Self.p02FCP))
        // Lengths pick the shortest form.
        #expect(try BERTLV(tag: BERTag(0x70), value: [UInt8](repeating: 0, count: 163)).serialized().prefix(3) == [0x70, 0x81, 0xA3])
        #expect(try BERTLV(tag: BERTag(0x53), value: [UInt8](repeating: 0, count: 2843)).serialized().prefix(4) == [0x53, 0x82, 0x0B, 0x1B])
    }

    @Test("drip-feed: every proper prefix is rejected", arguments: vectors.filter { $0.bytes.count < 400 })
    func dripFeed(_ v: TLVVector) throws {
        for n in 0..<v.bytes.count {
            #expect(throws: ISO7816Error.self, "prefix of \(n) bytes") { try BERTLV(parsing: Array(v.bytes[0..<n])) }
        }
        _ = try BERTLV(parsing: v.bytes)
    }

    @Test("padding 00 and FF between objects is skipped in a sequence")
    func padding() throws {
        let objects = try BERTLV.parseAll([0x00, 0x5C, 0x01, 0x7E, 0xFF, 0xFF, 0x53, 0x00, 0x00])
        #expect(objects.map(\.tag.rawValue) == [0x5C, 0x53])
    }

    @Test("00 is skipped between objects whatever FF is")
    func zeroPaddingAlwaysSkipped() throws {
        let bytes: [UInt8] = [0x00, 0x5C, 0x01, 0x7E, 0x00, 0x00]
        #expect(try BERTLV.parseAll(bytes).map(\.tag.rawValue) == [0x5C])
        #expect(try BERTLV.parseAll(bytes, options: .init(ff: .tag)).map(\.tag.rawValue) == [0x5C])
    }

    @Test("FF starts a private-class constructed tag when asked; padding by default")
    func ffAsTag() throws {
        let bytes: [UInt8] = [
            0xFF, 0x01,  // private class, constructed, tag number 1
            0x03,  // length
            0x5A, 0x01, 0x42,  // child
        ]
        let asTag = try BERTLV.parseAll(bytes, options: .init(ff: .tag))
        #expect(asTag.count == 1)
        #expect(asTag[0].tag == BERTag(0xFF01))
        #expect(asTag[0].tag.tagClass == .private)
        #expect(asTag[0].tag.isConstructed)
        #expect(asTag[0].children.map(\.value) == [[0x42]])
        // By default FF is padding: 01 03 … is then read, a primitive tag 01 of 3 bytes.
        let asPadding = try BERTLV.parseAll(bytes)
        #expect(asPadding.map(\.tag.rawValue) == [0x01])
        #expect(asPadding[0].value == [0x5A, 0x01, 0x42])
        // FF padding at the end fails when FF is a tag: FF FF announces more tag bytes.
        #expect(throws: ISO7816Error(.truncated, "")) {
            try BERTLV.parseAll([0x5C, 0x01, 0x7E, 0xFF, 0xFF], options: .init(ff: .tag))
        }
    }

    @Test("a constructed value that is not BER-TLV is kept raw with the reason when asked")
    func malformedContentKept() throws {
        let keep = BERTLV.ReadingOptions(keepsMalformedContent: true)
        // FCI template 6F holding a proprietary template A5 whose DF name 84 announces 5 bytes, 2 present.
        let bytes: [UInt8] = [0x6F, 0x06, 0xA5, 0x04, 0x84, 0x05, 0xA0, 0x00]
        let objects = try BERTLV.parseAll(bytes, options: keep)
        #expect(objects.count == 1)
        #expect(objects[0].contentError == nil)
        let a5 = try #require(objects[0].child(BERTag(0xA5)))
        #expect(a5.value == [0x84, 0x05, 0xA0, 0x00])
        #expect(a5.children.isEmpty)
        #expect(a5.contentError?.code == .truncated)
        #expect(a5.contentError?.offset == 8)
        // Without the option the same bytes fail, as before.
        #expect(throws: ISO7816Error(.truncated, "")) { try BERTLV.parseAll(bytes) }
        // The top-level object's own header errors still fail.
        #expect(throws: ISO7816Error(.invalidLength, "")) { try BERTLV.parseAll([0x61, 0x80, 0x4F, 0x0B], options: keep) }
    }

    struct Rejection: Sendable, CustomTestStringConvertible {
        let id: String
        let bytes: [UInt8]
        let code: ISO7816Error.Code
        let offset: Int
        var testDescription: String { id }
    }

    static let rejections: [Rejection] = [
        Rejection(
            id: "P07-indefinite-length",
            bytes: [
                0x61,  // application property template
                0x80,  // indefinite length: not allowed (correct: 81 80)
                0x4F, 0x0B,  // content starts
            ] + [UInt8](repeating: 0xA0, count: 124),
            code: .invalidLength, offset: 1),
        Rejection(
            id: "P07-0x4A-length-bytes",
            bytes: [
                0x53,  // tag
                0xCA,  // long form claiming 0x4A length bytes
                0xFF, 0xFF, 0xFF, 0xFF,  // would be a huge length
            ],
            code: .invalidLength, offset: 1),
        Rejection(
            id: "length-past-buffer",
            bytes: [
                0x53,  // tag
                0x84, 0xFF, 0xFF, 0xFF, 0xFF,  // 4 GiB announced
                0x01, 0x02,  // 2 bytes present
            ],
            code: .truncated, offset: 8),
        Rejection(
            id: "length-bytes-missing",
            bytes: [
                0x53,  // tag
                0x82, 0x0B,  // two length bytes announced, one present
            ],
            code: .truncated, offset: 3),
        Rejection(
            id: "five-byte-tag",
            bytes: [
                0x9F,  // first tag byte: more follow
                0x81, 0x81, 0x81,  // three subsequent bytes that all say "more"
                0x01,  // a fourth subsequent byte: tag too long
                0x00,
            ],
            code: .invalidTag, offset: 4),
        Rejection(
            id: "first-subsequent-tag-byte-80",
            bytes: [
                0x9F,  // first tag byte: more follow
                0x80,  // bits 7-1 all 0: not allowed
                0x01, 0x01, 0x00,
            ],
            code: .invalidTag, offset: 1),
        Rejection(
            id: "bad-child-in-constructed",
            bytes: [
                0x6F, 0x04,  // FCI template, 4 bytes
                0x84, 0x05,  // DF name announcing 5 bytes
                0xA0, 0x00,  // only 2 remain in the parent
            ],
            code: .truncated, offset: 6),
        Rejection(
            id: "trailing-bytes",
            bytes: [
                0x5C, 0x01, 0x7E,  // one complete object
                0x53,  // a second tag: use parseAll for sequences
            ],
            code: .trailingBytes, offset: 3),
        Rejection(
            id: "padding-where-a-tag-is-needed",
            bytes: [0xFF],  // padding, not a tag
            code: .invalidTag, offset: 0),
    ]

    @Test("rejections with a comment per byte", arguments: rejections)
    func rejects(_ v: Rejection) {
        #expect {
            try BERTLV(parsing: v.bytes)
        } throws: { error in
            guard let e = error as? ISO7816Error else { return false }
            return e.code == v.code && e.offset == v.offset
        }
    }

    @Test("deep nesting is bounded")
    func nesting() {
        // 40 levels of constructed tag 30 around nothing.
        var bytes: [UInt8] = []
        for _ in 0..<40 { bytes = [0x30, UInt8(bytes.count)] + bytes }
        #expect(throws: ISO7816Error(.nestingTooDeep, "")) { try BERTLV(parsing: bytes) }
    }
}
