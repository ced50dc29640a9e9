import ISO7816
import SecbridgeTesting
import Testing

struct ATRVector: Sendable, CustomTestStringConvertible {
    let id: String
    let source: String
    let atr: String
    var testDescription: String { "\(id) (\(source))" }
}

@Suite("ATR and historical bytes")
struct ATRTests {
    static let p05: [ATRVector] = [
        ATRVector(id: "P05-mifare-1k", source: "docs/cases.md P05, pyscard 18", atr: "3B 8F 80 01 80 4F 0C A0 00 00 03 06 03 00 01 00 00 00 00 6A"),
        ATRVector(id: "P05-ultralight", source: "docs/cases.md P05, nfc-pcsc 57", atr: "3B 8F 80 01 80 4F 0C A0 00 00 03 06 03 00 03 00 00 00 00 68"),
        ATRVector(id: "P05-14443-4-no-historical", source: "docs/cases.md P05, fortify 153", atr: "3B 80 80 01 01"),
        ATRVector(id: "P05-compact-tlv", source: "docs/cases.md P05, nfc-pcsc 104", atr: "3B 8E 80 01 80 31 80 66 B1 84 0C 01 6E 01 83 00 90 00 1C"),
    ]

    /// What all four ATRs of docs/cases.md P05 share: TS 3B, TD1 = 80, TD2 = 01, T=0 and T=1 announced, a valid TCK.
    @Test("P05 common structure", arguments: p05)
    func p05Common(_ v: ATRVector) throws {
        let bytes = hex(v.atr)
        let atr = try ATR(parsing: bytes)
        #expect(atr.convention == .direct)
        #expect(atr.t0 == bytes[1])
        #expect(atr.t0 >> 4 == 0x8)
        #expect(atr.interfaceGroups.count == 2)
        #expect(atr.interfaceGroups[0] == ATR.InterfaceGroup(index: 1, ta: nil, tb: nil, tc: nil, td: 0x80))
        #expect(atr.interfaceGroups[1] == ATR.InterfaceGroup(index: 2, ta: nil, tb: nil, tc: nil, td: 0x01))
        #expect(atr.protocols == [0, 1])
        #expect(atr.historicalBytes.count == Int(bytes[1] & 0x0F))
        #expect(atr.historicalBytes == Array(bytes[4..<(bytes.count - 1)]))
        #expect(atr.tck == bytes.last)
        #expect(atr.isChecksumValid)
        #expect(atr.checkByte == .valid)
        #expect(atr.serialized() == bytes)
    }

    @Test("P05 MIFARE Classic 1K: PC/SC part 3 storage card")
    func p05Mifare1K() throws {
        let atr = try ATR(parsing: hex("3B 8F 80 01 80 4F 0C A0 00 00 03 06 03 00 01 00 00 00 00 6A"))
        #expect(atr.tck == 0x6A)
        let hist = try atr.decodedHistoricalBytes()
        #expect(hist.categoryIndicator == 0x80)
        let card = try #require(hist.contactlessStorageCard)
        #expect(card.rid == [0xA0, 0x00, 0x00, 0x03, 0x06])
        #expect(card.rid == ContactlessStorageCard.pcscRID)
        #expect(card.standard == 0x03)
        #expect(card.standardText == "ISO/IEC 14443 A, part 3")
        #expect(card.cardName == 0x0001)
        #expect(card.cardNameText == "MIFARE Classic 1K")
        #expect(card.reserved == [0, 0, 0, 0])
        #expect(hist.objects.isEmpty)
        #expect(hist.statusWord == nil)
    }

    @Test("P05 MIFARE Ultralight")
    func p05Ultralight() throws {
        let atr = try ATR(parsing: hex("3B 8F 80 01 80 4F 0C A0 00 00 03 06 03 00 03 00 00 00 00 68"))
        #expect(atr.tck == 0x68)
        let card = try #require(try atr.decodedHistoricalBytes().contactlessStorageCard)
        #expect(card.standard == 0x03)
        #expect(card.cardName == 0x0003)
        #expect(card.cardNameText == "MIFARE Ultralight")
    }

    @Test("P05 ISO 14443-4 card without historical bytes")
    func p05NoHistorical() throws {
        let atr = try ATR(parsing: hex("3B 80 80 01 01"))
        #expect(atr.t0 == 0x80)
        #expect(atr.historicalBytes.isEmpty)
        #expect(atr.tck == 0x01)
        let hist = try atr.decodedHistoricalBytes()
        #expect(hist.categoryIndicator == nil)
        #expect(hist.objects.isEmpty)
        #expect(hist.contactlessStorageCard == nil)
        #expect(atr.cardCapabilities == nil)
    }

    @Test("P05 compact-TLV: 31 → 80, 6x pre-issuing (6 bytes), 83 → LCS 00 SW 90 00")
    func p05CompactTLV() throws {
        let atr = try ATR(parsing: hex("3B 8E 80 01 80 31 80 66 B1 84 0C 01 6E 01 83 00 90 00 1C"))
        #expect(atr.tck == 0x1C)
        #expect(atr.historicalBytes.count == 14)
        let hist = try atr.decodedHistoricalBytes()
        #expect(hist.categoryIndicator == 0x80)
        #expect(hist.contactlessStorageCard == nil)
        #expect(hist.objects == [
            CompactTLV(tag: 3, value: [0x80]),
            CompactTLV(tag: 6, value: [0xB1, 0x84, 0x0C, 0x01, 0x6E, 0x01]),
            CompactTLV(tag: 8, value: [0x00, 0x90, 0x00]),
        ])
        #expect(hist.object(tag: 3)?.value == [0x80])
        #expect(hist.lifeCycleStatus == 0x00)
        #expect(hist.statusWord == .success)
        #expect(hist.cardCapabilities == nil)
        #expect(hist.objects.map { $0.serialized() }.reduce([], +) == Array(atr.historicalBytes[1...]))
    }

    @Test("P06 card capabilities 73 C0 21 C0: chaining and extended Lc/Le, from a full ATR")
    func p06Capable() throws {
        // TA1 13, TB1 00, TC1 00, TD1 81 (T=1, TD2 follows), TD2 31 (TA3 TB3 follow, T=1),
        // TA3 FE (IFSC 254), TB3 15; 13 historical bytes 80 73 C0 21 C0 + "WYubiKey"; TCK 40.
        let atr = try ATR(parsing: hex("3B FD 13 00 00 81 31 FE 15 80 73 C0 21 C0 57 59 75 62 69 4B 65 79 40"))
        #expect(atr.interfaceGroups == [
            ATR.InterfaceGroup(index: 1, ta: 0x13, tb: 0x00, tc: 0x00, td: 0x81),
            ATR.InterfaceGroup(index: 2, ta: nil, tb: nil, tc: nil, td: 0x31),
            ATR.InterfaceGroup(index: 3, ta: 0xFE, tb: 0x15, tc: nil, td: nil),
        ])
        #expect(atr.protocols == [1])
        #expect(atr.tck == 0x40)
        let caps = try #require(atr.cardCapabilities)
        #expect(caps.supportsCommandChaining)
        #expect(caps.supportsExtendedLength)
        #expect(CardCapabilities(compactTLVValue: [0xC0, 0x21, 0xC0]) == caps)
    }

    @Test("P06 card capabilities 73 C8 40 00: neither")
    func p06Neither() throws {
        let hist = try HistoricalBytes(parsing: [0x80, 0x73, 0xC8, 0x40, 0x00])
        let caps = try #require(hist.cardCapabilities)
        #expect(!caps.supportsCommandChaining)
        #expect(!caps.supportsExtendedLength)
        #expect(caps == .shortOnly)
    }

    @Test("T=0-only ATR has no TCK")
    func t0Only() throws {
        // T0 = 02: no interface bytes, 2 historical bytes; only T=0, so no TCK.
        let atr = try ATR(parsing: [0x3B, 0x02, 0x14, 0x50])
        #expect(atr.interfaceGroups.isEmpty)
        #expect(atr.protocols == [0])
        #expect(atr.historicalBytes == [0x14, 0x50])
        #expect(atr.tck == nil)
        #expect(atr.isChecksumValid)
    }

    @Test("inverse convention TS 3F")
    func inverse() throws {
        let atr = try ATR(parsing: [0x3F, 0x00])
        #expect(atr.convention == .inverse)
        #expect(atr.historicalBytes.isEmpty)
    }

    @Test("drip-feed: every proper prefix is rejected", arguments: p05)
    func dripFeed(_ v: ATRVector) throws {
        let whole = hex(v.atr)
        for n in 0..<whole.count {
            #expect(throws: ISO7816Error.self, "prefix of \(n) bytes") { try ATR(parsing: Array(whole[0..<n])) }
        }
        _ = try ATR(parsing: whole)
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
            id: "bad TS",
            bytes: [
                0x3A,  // TS: neither 3B nor 3F
                0x00,  // T0
            ],
            code: .invalidTS, offset: 0),
        Rejection(
            id: "TCK wrong",
            bytes: [
                0x3B,  // TS
                0x80,  // T0: TD1 follows, no historical bytes
                0x80,  // TD1: TD2 follows, T=0
                0x01,  // TD2: T=1, so TCK is needed
                0x00,  // TCK: should be 01
            ],
            code: .checksumMismatch, offset: 4),
        Rejection(
            id: "TCK missing",
            bytes: [
                0x3B,  // TS
                0x80,  // T0: TD1 follows
                0x80,  // TD1
                0x01,  // TD2: T=1 announced; TCK absent
            ],
            code: .truncated, offset: 4),
        Rejection(
            id: "interface byte missing",
            bytes: [
                0x3B,  // TS
                0xF0,  // T0: TA1 TB1 TC1 TD1 follow
                0x13,  // TA1
                0x00,  // TB1; TC1 and TD1 missing
            ],
            code: .truncated, offset: 4),
        Rejection(
            id: "historical bytes missing",
            bytes: [
                0x3B,  // TS
                0x03,  // T0: 3 historical bytes
                0x14, 0x50,  // only 2
            ],
            code: .truncated, offset: 4),
        Rejection(
            id: "trailing byte after a T=0-only ATR",
            bytes: [
                0x3B,  // TS
                0x01,  // T0: 1 historical byte, T=0 only
                0x80,  // historical byte
                0x80,  // not a TCK: T=0 only has none
            ],
            code: .trailingBytes, offset: 3),
        Rejection(
            id: "longer than 33 bytes",
            bytes: [0x3B, 0x0F] + [UInt8](repeating: 0, count: 32),  // 34 bytes
            code: .oversize, offset: 33),
    ]

    @Test("rejections with a comment per byte", arguments: rejections)
    func rejects(_ v: Rejection) {
        #expect {
            try ATR(parsing: v.bytes)
        } throws: { error in
            guard let e = error as? ISO7816Error else { return false }
            return e.code == v.code && e.offset == v.offset
        }
    }

    @Test("a wrong TCK parses when not required, flagged invalid")
    func lenientChecksum() throws {
        let atr = try ATR(parsing: [0x3B, 0x80, 0x80, 0x01, 0x00], requireValidChecksum: false)
        #expect(!atr.isChecksumValid)
    }

    @Test("lenient: the SW 90 00 after a complete ATR is returned apart, the ATR decodes")
    func lenientBytesAfter() throws {
        // docs/cases.md P05 MIFARE Classic 1K ATR as a tool printed it, with the SW of the exchange.
        let atr = hex("3B 8F 80 01 80 4F 0C A0 00 00 03 06 03 00 01 00 00 00 00 6A")
        let reading = try ATR.readLeniently(atr + [0x90, 0x00])
        #expect(reading.atr.bytes == atr)
        #expect(reading.bytesAfter == [0x90, 0x00])
        #expect(reading.atr.checkByte == .valid)
        #expect(try reading.atr.decodedHistoricalBytes().contactlessStorageCard?.cardName == 0x0001)
        // A T=0-only ATR has no TCK: everything after its historical bytes is "after".
        let t0 = try ATR.readLeniently([0x3B, 0x02, 0x14, 0x50, 0x90, 0x00])
        #expect(t0.atr.bytes == [0x3B, 0x02, 0x14, 0x50])
        #expect(t0.atr.checkByte == .notRequired)
        #expect(t0.bytesAfter == [0x90, 0x00])
        // More than 33 bytes in all is fine when the ATR itself is shorter.
        let long = try ATR.readLeniently([0x3B, 0x0F] + [UInt8](repeating: 0, count: 32))
        #expect(long.atr.bytes.count == 17)
        #expect(long.bytesAfter.count == 17)
        // Strict parsing still refuses both.
        #expect(throws: ISO7816Error(.trailingBytes, "")) { try ATR(parsing: atr + [0x90, 0x00]) }
    }

    @Test("lenient: a wrong TCK names the expected one; strict parsing refuses it")
    func lenientWrongTCK() throws {
        let bytes = hex("3B 8F 80 01 80 4F 0C A0 00 00 03 06 03 00 01 00 00 00 00 6B")
        let reading = try ATR.readLeniently(bytes)
        #expect(reading.atr.checkByte == .invalid(expected: 0x6A))
        #expect(reading.atr.tck == 0x6B)
        #expect(!reading.atr.isChecksumValid)
        #expect(reading.bytesAfter.isEmpty)
        #expect {
            try ATR(parsing: bytes)
        } throws: { error in
            (error as? ISO7816Error)?.reason.hasSuffix("the expected TCK is 6A") == true
        }
    }

    @Test("lenient: a missing TCK is reported with the expected value", arguments: p05)
    func lenientMissingTCK(_ v: ATRVector) throws {
        let whole = hex(v.atr)
        let reading = try ATR.readLeniently(Array(whole.dropLast()))
        #expect(reading.atr.checkByte == .missing(expected: whole.last!))
        #expect(reading.atr.tck == nil)
        #expect(!reading.atr.isChecksumValid)
        #expect(reading.atr.historicalBytes == Array(whole[4..<(whole.count - 1)]))
        // Shorter prefixes lack interface or historical bytes: still refused.
        for n in 0..<(whole.count - 1) {
            #expect(throws: ISO7816Error.self, "prefix of \(n) bytes") { try ATR.readLeniently(Array(whole[0..<n])) }
        }
    }

    @Test("lenient: malformed historical bytes leave the ATR readable")
    func lenientMalformedHistorical() throws {
        // Category 80 with card capabilities 73 announcing 3 bytes, only 2 present; TCK 17.
        let reading = try ATR.readLeniently(hex("3B 84 80 01 80 73 C0 21 17"))
        #expect(reading.atr.checkByte == .valid)
        #expect(reading.atr.historicalBytes == [0x80, 0x73, 0xC0, 0x21])
        #expect(throws: ISO7816Error(.truncated, "")) { try reading.atr.decodedHistoricalBytes() }
    }

    @Test("contactless ATR builder (PC/SC part 3)")
    func contactlessBuilder() throws {
        #expect(try ATR.contactless(historicalBytes: []).bytes == hex("3B 80 80 01 01"))
        #expect(try ATR.contactless(historicalBytes: [0x80]).bytes == hex("3B 81 80 01 80 80"))
        let compact = hex("80 31 80 66 B1 84 0C 01 6E 01 83 00 90 00")
        #expect(try ATR.contactless(historicalBytes: compact).bytes == hex(Self.p05[3].atr))
        #expect(throws: ISO7816Error(.valueOutOfRange, "")) {
            try ATR.contactless(historicalBytes: [UInt8](repeating: 0, count: 16))
        }
    }

    @Test("historical bytes categories 00 and 10")
    func categories() throws {
        // Category 00: compact-TLV 31 C0, then LCS 07, SW 90 00 as the last 3 bytes.
        let h00 = try HistoricalBytes(parsing: [0x00, 0x31, 0xC0, 0x07, 0x90, 0x00])
        #expect(h00.objects == [CompactTLV(tag: 3, value: [0xC0])])
        #expect(h00.lifeCycleStatus == 0x07)
        #expect(h00.statusWord == .success)
        // Category 10: one DIR data reference byte.
        let h10 = try HistoricalBytes(parsing: [0x10, 0x42])
        #expect(h10.dirDataReference == 0x42)
        // Category 00 without room for the status indicator.
        #expect(throws: ISO7816Error(.truncated, "")) { try HistoricalBytes(parsing: [0x00, 0x90, 0x00]) }
        // Compact-TLV 73 announcing 3 bytes with only 2 present.
        #expect(throws: ISO7816Error(.truncated, "")) { try HistoricalBytes(parsing: [0x80, 0x73, 0xC0, 0x21]) }
        // Proprietary category: kept raw, never an error.
        let proprietary = try HistoricalBytes(parsing: [0x4A, 0x43, 0x4F, 0x50])
        #expect(proprietary.objects.isEmpty)
    }
}
