import ISO7816
import SecbridgeTesting
import Testing

struct APDUVector: Sendable, CustomTestStringConvertible {
    let id: String
    let source: String
    let cla: UInt8, ins: UInt8, p1: UInt8, p2: UInt8
    let data: [UInt8]
    let ne: Int
    var extended = false
    let apduCase: String
    let encoding: String
    var testDescription: String { "\(id) (\(source))" }
}

struct APDURejection: Sendable, CustomTestStringConvertible {
    let id: String
    let bytes: [UInt8]
    let code: ISO7816Error.Code
    let offset: Int
    var testDescription: String { id }
}

@Suite("Command APDU")
struct CommandAPDUTests {
    static let vectors: [APDUVector] = [
        APDUVector(
            id: "case1", source: "ISO/IEC 7816-3 §12.1.2",
            cla: 0x00, ins: 0x70, p1: 0x00, p2: 0x00, data: [], ne: 0, apduCase: "1", encoding: "00 70 00 00"),
        APDUVector(
            id: "P01-read-binary-ne256", source: "docs/cases.md P01 (OpenSC 1731)",
            cla: 0x00, ins: 0xB0, p1: 0x00, p2: 0x00, data: [], ne: 256, apduCase: "2S", encoding: "00 B0 00 00 00"),
        APDUVector(
            id: "P03-read-record-case2S", source: "docs/cases.md P03 (proxmark3 171)",
            cla: 0x00, ins: 0xB2, p1: 0x01, p2: 0x14, data: [], ne: 256, apduCase: "2S", encoding: "00 B2 01 14 00"),
        APDUVector(
            id: "case2S-ne17", source: "ISO/IEC 7816-4 §5.1",
            cla: 0x00, ins: 0xC0, p1: 0x00, p2: 0x00, data: [], ne: 0x17, apduCase: "2S", encoding: "00 C0 00 00 17"),
        APDUVector(
            id: "P14-select-p2-0C-case3S", source: "docs/cases.md P14 (OpenSC 1230)",
            cla: 0x00, ins: 0xA4, p1: 0x04, p2: 0x0C, data: [0xD2, 0x76, 0x00, 0x01, 0x24, 0x01], ne: 0,
            apduCase: "3S", encoding: "00 A4 04 0C 06 D2 76 00 01 24 01"),
        APDUVector(
            id: "P02-select-case4S", source: "docs/cases.md P02 (IsoApplet 12)",
            cla: 0x00, ins: 0xA4, p1: 0x08, p2: 0x00, data: [0x50, 0x15, 0x44, 0x02], ne: 256,
            apduCase: "4S", encoding: "00 A4 08 00 04 50 15 44 02 00"),
        APDUVector(
            id: "case2E-ne65536", source: "docs/cases.md P01 (Ne model: 65536 as 00 00)",
            cla: 0x00, ins: 0xB0, p1: 0x00, p2: 0x00, data: [], ne: 65_536, apduCase: "2E", encoding: "00 B0 00 00 00 00 00"),
        APDUVector(
            id: "case2E-ne257", source: "ISO/IEC 7816-4 §5.1",
            cla: 0x00, ins: 0xB0, p1: 0x00, p2: 0x00, data: [], ne: 257, apduCase: "2E", encoding: "00 B0 00 00 00 01 01"),
        APDUVector(
            id: "case3E-forced", source: "ISO/IEC 7816-4 §5.1",
            cla: 0x80, ins: 0xE2, p1: 0x00, p2: 0x00, data: [0xAA, 0xBB], ne: 0, extended: true,
            apduCase: "3E", encoding: "80 E2 00 00 00 00 02 AA BB"),
        APDUVector(
            id: "case4E-forced-ne256", source: "ISO/IEC 7816-4 §5.1",
            cla: 0x00, ins: 0x2A, p1: 0x9E, p2: 0x9A, data: [0x01], ne: 256, extended: true,
            apduCase: "4E", encoding: "00 2A 9E 9A 00 00 01 01 01 00"),
        APDUVector(
            id: "case4E-ne65536", source: "docs/cases.md P01 (Ne model)",
            cla: 0x00, ins: 0x2A, p1: 0x9E, p2: 0x9A, data: [0x01, 0x02], ne: 65_536,
            apduCase: "4E", encoding: "00 2A 9E 9A 00 00 02 01 02 00 00"),
    ]

    @Test("encode each case", arguments: vectors)
    func encodes(_ v: APDUVector) throws {
        let apdu = try CommandAPDU(cla: v.cla, ins: v.ins, p1: v.p1, p2: v.p2, data: v.data, ne: v.ne, extended: v.extended)
        #expect(apdu.serialized() == hex(v.encoding))
        #expect(apdu.case.rawValue == v.apduCase)
        #expect(apdu.encodedLength == hex(v.encoding).count)
    }

    @Test("parse each case", arguments: vectors)
    func parses(_ v: APDUVector) throws {
        let apdu = try CommandAPDU(parsing: hex(v.encoding))
        #expect(apdu.cla == v.cla)
        #expect(apdu.ins == v.ins)
        #expect(apdu.p1 == v.p1)
        #expect(apdu.p2 == v.p2)
        #expect(apdu.data == v.data)
        #expect(apdu.ne == v.ne)
        #expect(apdu.case.rawValue == v.apduCase)
        #expect(apdu.serialized() == hex(v.encoding))
    }

    @Test("extended case with 300 data bytes (P06 payload)")
    func extendedLarge() throws {
        let payload = (0..<300).map { UInt8(truncatingIfNeeded: $0) }
        let apdu = try CommandAPDU(cla: 0x00, ins: 0xDA, p1: 0x01, p2: 0x02, data: payload, ne: 0)
        #expect(apdu.case == .case3Extended)
        let bytes = apdu.serialized()
        #expect(Array(bytes[0..<7]) == [0x00, 0xDA, 0x01, 0x02, 0x00, 0x01, 0x2C])
        #expect(bytes.count == 307)
        #expect(try CommandAPDU(parsing: bytes) == apdu)
    }

    @Test("round trip over lengths at the short/extended edges")
    func roundTrip() throws {
        for nc in [0, 1, 254, 255, 256, 1000, 65_535] {
            for ne in [0, 1, 255, 256, 257, 65_535, 65_536] {
                let data = [UInt8](repeating: 0x5A, count: nc)
                let apdu = try CommandAPDU(cla: 0x00, ins: 0xD6, p1: 0, p2: 0, data: data, ne: ne)
                let parsed = try CommandAPDU(parsing: apdu.serialized())
                #expect(parsed == apdu, "Nc \(nc) Ne \(ne)")
                #expect(apdu.isExtended == (nc > 255 || ne > 256), "Nc \(nc) Ne \(ne)")
            }
        }
    }

    /// Drip-feed: an APDU is not self-delimiting (its length comes from the transport), so a
    /// proper prefix may be a valid shorter APDU. Each prefix must either be rejected or parse as
    /// a different command whose own encoding is exactly that prefix; never as the original.
    @Test("drip-feed: every proper prefix is rejected or a different command", arguments: vectors)
    func dripFeed(_ v: APDUVector) throws {
        let whole = hex(v.encoding)
        let original = try CommandAPDU(parsing: whole)
        for n in 0..<whole.count {
            let prefix = Array(whole[0..<n])
            if let parsed = try? CommandAPDU(parsing: prefix) {
                #expect(parsed != original)
                #expect(parsed.serialized() == prefix)
            }
        }
    }

    static let rejections: [APDURejection] = [
        APDURejection(
            id: "empty", bytes: [],
            code: .truncated, offset: 0),
        APDURejection(
            id: "3-byte header",
            bytes: [0x00, 0xA4, 0x04],  // CLA INS P1, no P2
            code: .truncated, offset: 3),
        APDURejection(
            id: "P03-spurious-Lc-00",
            bytes: [
                0x00, 0xB2, 0x01, 0x14,  // READ RECORD header
                0x00,  // a short Lc of 00: never valid
                0x00,  // Le
            ],
            code: .shortLcZero, offset: 4),
        APDURejection(
            id: "short-Lc-more-than-data",
            bytes: [
                0x00, 0xA4, 0x04, 0x00,  // SELECT header
                0x07,  // Lc = 7
                0xD2, 0x76, 0x00,  // only 3 data bytes
            ],
            code: .truncated, offset: 8),
        APDURejection(
            id: "short-trailing-bytes",
            bytes: [
                0x00, 0xA4, 0x04, 0x00,  // header
                0x01, 0x3F,  // Lc 1, data 3F
                0x00,  // Le
                0x00, 0x00,  // two bytes too many
            ],
            code: .trailingBytes, offset: 7),
        APDURejection(
            id: "extended-Lc-00-00",
            bytes: [
                0x00, 0xD6, 0x00, 0x00,  // header
                0x00, 0x00, 0x00,  // extended marker then Lc 00 00
                0x01,  // a stray byte
            ],
            code: .extendedLcZero, offset: 5),
        APDURejection(
            id: "extended-Lc-more-than-data",
            bytes: [
                0x00, 0xD6, 0x00, 0x00,  // header
                0x00, 0x01, 0x00,  // extended Lc = 256
                0x01, 0x02,  // only 2 data bytes
            ],
            code: .truncated, offset: 9),
        APDURejection(
            id: "extended-one-byte-Le",
            bytes: [
                0x00, 0xD6, 0x00, 0x00,  // header
                0x00, 0x00, 0x01,  // extended Lc = 1
                0xAA,  // data
                0x00,  // a 1-byte Le in an extended command
            ],
            code: .lcMismatch, offset: 8),
        APDURejection(
            id: "extended-trailing-bytes",
            bytes: [
                0x00, 0xD6, 0x00, 0x00,  // header
                0x00, 0x00, 0x01,  // extended Lc = 1
                0xAA,  // data
                0x00, 0x00,  // extended Le (65536)
                0x00,  // one too many
            ],
            code: .trailingBytes, offset: 10),
    ]

    @Test("rejections with a comment per byte", arguments: rejections)
    func rejects(_ v: APDURejection) {
        #expect {
            try CommandAPDU(parsing: v.bytes)
        } throws: { error in
            guard let e = error as? ISO7816Error else { return false }
            return e.code == v.code && e.offset == v.offset
        }
    }

    @Test("oversize: one byte longer than the longest case 4E")
    func oversize() {
        let bytes = [UInt8](repeating: 0, count: CommandAPDU.maxEncodedLength + 1)
        #expect(throws: ISO7816Error(.oversize, "")) { try CommandAPDU(parsing: bytes) }
    }

    @Test("field validation: Nc and Ne out of range")
    func fieldRanges() {
        #expect(throws: ISO7816Error(.valueOutOfRange, "")) {
            try CommandAPDU(cla: 0, ins: 0xB0, p1: 0, p2: 0, ne: 65_537)
        }
        #expect(throws: ISO7816Error(.valueOutOfRange, "")) {
            try CommandAPDU(cla: 0, ins: 0xB0, p1: 0, p2: 0, ne: -1)
        }
        #expect(throws: ISO7816Error(.valueOutOfRange, "")) {
            try CommandAPDU(cla: 0, ins: 0xD6, p1: 0, p2: 0, data: [UInt8](repeating: 0, count: 65_536))
        }
    }

    struct T0Vector: Sendable, CustomTestStringConvertible {
        let id: String
        let apdu: String
        let tpdu: String
        var testDescription: String { id }
    }

    static let t0Vectors: [T0Vector] = [
        // ISO/IEC 7816-3 §12.2.2: case 1 gets P3 = 00.
        T0Vector(id: "case1-P3-00", apdu: "00 70 00 00", tpdu: "00 70 00 00 00"),
        // Case 2S: P3 = Le.
        T0Vector(id: "P01-case2S", apdu: "00 B0 00 00 00", tpdu: "00 B0 00 00 00"),
        // Case 3S unchanged.
        T0Vector(id: "case3S", apdu: "00 A4 04 0C 06 D2 76 00 01 24 01", tpdu: "00 A4 04 0C 06 D2 76 00 01 24 01"),
        // docs/cases.md P02: case 4S loses Le.
        T0Vector(id: "P02-case4S-no-Le", apdu: "00 A4 08 00 04 50 15 44 02 00", tpdu: "00 A4 08 00 04 50 15 44 02"),
    ]

    @Test("T=0 mapping", arguments: t0Vectors)
    func t0Mapping(_ v: T0Vector) throws {
        #expect(try CommandAPDU(parsing: hex(v.apdu)).serializedForT0() == hex(v.tpdu))
    }

    @Test("T=0 mapping refuses extended cases")
    func t0Extended() throws {
        let apdu = try CommandAPDU(parsing: hex("00 B0 00 00 00 00 00"))
        #expect(throws: ISO7816Error(.extendedLengthOnT0, "")) { try apdu.serializedForT0() }
    }

    @Test("case names are the ISO short names")
    func caseNames() {
        #expect(APDUCase.allCases.map(\.rawValue) == ["1", "2S", "3S", "4S", "2E", "3E", "4E"])
    }
}

/// `CommandAPDU.summary`, the lines every view prints for a command (ISO/IEC 7816-4 §11).
@Suite("CommandAPDU.summary (ISO/IEC 7816-4 §11, docs/iso14443-t4t-ndef.md §4)")
struct CommandAPDUSummaryTests {
    @Test(arguments: [
        // Android's T4T read, docs/iso14443-t4t-ndef.md §4.
        ("00 A4 04 00 07 D2 76 00 00 85 01 01 00",
         ["SELECT by DF name (AID) (case 4S, Nc 7, Ne 256)", "AID D2 76 00 00 85 01 01: NFC Forum Type 4 Tag application v2"]),
        ("00 A4 00 0C 02 E1 03", ["SELECT by file identifier (case 3S, Nc 2, Ne 0)"]),
        ("00 B0 00 02 10", ["READ BINARY (case 2S, Nc 0, Ne 16)", "offset 2"]),
        ("00 D6 01 00 01 00", ["UPDATE BINARY (case 3S, Nc 1, Ne 0)", "offset 256"]),
        // P1 bit 8 set: a short EF identifier in P1, not an offset (§11.3.3).
        ("00 B0 81 00 04", ["READ BINARY (case 2S, Nc 0, Ne 4)"]),
        ("80 50 00 00 08 01 02 03 04 05 06 07 08 00", ["INITIALIZE UPDATE (GlobalPlatform) (case 4S, Nc 8, Ne 256)"]),
        ("00 12 00 00", ["INS 12 (case 1, Nc 0, Ne 0)"]),
    ])
    func summary(_ hex: String, _ lines: [String]) throws {
        #expect(try CommandAPDU(parsing: HexBytes.parse(hex)).summary == lines)
    }
}
