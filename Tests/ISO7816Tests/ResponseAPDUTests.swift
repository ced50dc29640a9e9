import ISO7816
import SecbridgeTesting
import Testing

struct SWVector: Sendable, CustomTestStringConvertible {
    let sw: UInt16
    let category: StatusWord.Category
    let meaningContains: String
    var testDescription: String { StatusWord(sw).bytes.hexString }
}

@Suite("Response APDU and status word")
struct ResponseAPDUTests {
    static let meanings: [SWVector] = [
        // Source: ISO/IEC 7816-4 §5.6, tables 5 and 6.
        SWVector(sw: 0x9000, category: .normal, meaningContains: "normal processing"),
        SWVector(sw: 0x6117, category: .normal, meaningContains: "23 more response bytes"),
        SWVector(sw: 0x6100, category: .normal, meaningContains: "256 more response bytes"),
        SWVector(sw: 0x6281, category: .warning, meaningContains: "corrupted"),
        SWVector(sw: 0x63C2, category: .warning, meaningContains: "counter value 2"),
        SWVector(sw: 0x6700, category: .checkingError, meaningContains: "wrong length"),
        SWVector(sw: 0x6982, category: .checkingError, meaningContains: "security status not satisfied"),
        SWVector(sw: 0x6985, category: .checkingError, meaningContains: "conditions of use not satisfied"),
        SWVector(sw: 0x6986, category: .checkingError, meaningContains: "no current EF"),
        SWVector(sw: 0x6A80, category: .checkingError, meaningContains: "command data field"),
        SWVector(sw: 0x6A81, category: .checkingError, meaningContains: "function not supported"),
        SWVector(sw: 0x6A82, category: .checkingError, meaningContains: "file or application not found"),
        SWVector(sw: 0x6A86, category: .checkingError, meaningContains: "incorrect parameters P1-P2"),
        SWVector(sw: 0x6B00, category: .checkingError, meaningContains: "wrong parameters P1-P2"),
        SWVector(sw: 0x6C10, category: .checkingError, meaningContains: "exactly 16 bytes"),
        SWVector(sw: 0x6D00, category: .checkingError, meaningContains: "instruction code not supported"),
        SWVector(sw: 0x6E00, category: .checkingError, meaningContains: "class not supported"),
        SWVector(sw: 0x6F00, category: .checkingError, meaningContains: "no precise diagnosis"),
        SWVector(sw: 0x6A99, category: .checkingError, meaningContains: "no meaning in ISO/IEC 7816-4"),
        SWVector(sw: 0x9100, category: .proprietary, meaningContains: "proprietary"),
    ]

    @Test("meanings from the table", arguments: meanings)
    func meaning(_ v: SWVector) {
        let sw = StatusWord(v.sw)
        #expect(sw.category == v.category)
        #expect(sw.meaning.contains(v.meaningContains), "\(sw.meaning)")
        #expect(sw.value == v.sw)
        #expect(sw.sw1 == UInt8(v.sw >> 8) && sw.sw2 == UInt8(v.sw & 0xFF))
    }

    @Test("the table has the ~40 ISO entries, each pattern matching its own value")
    func tableShape() {
        #expect(StatusWord.meanings.count >= 40)
        for entry in StatusWord.meanings {
            #expect(entry.value & entry.mask == entry.value, "\(entry.pattern)")
        }
    }

    @Test("P01: 256 data bytes + 90 00 parse, serialize back")
    func parse() throws {
        let bytes = [UInt8](repeating: 0xA5, count: 256) + [0x90, 0x00]
        let response = try ResponseAPDU(parsing: bytes)
        #expect(response.data.count == 256)
        #expect(response.statusWord == .success)
        #expect(response.serialized() == bytes)
    }

    @Test("drip-feed: fewer than 2 bytes is rejected; every longer prefix splits as data + SW")
    func dripFeed() throws {
        let whole = hex("6F 15 81 02 02 00 82 01 01 83 02 44 02 86 08 FF 90 90 90 90 90 90 00 90 00")
        for n in 0..<2 {
            #expect(throws: ISO7816Error(.responseTooShort, "")) { try ResponseAPDU(parsing: Array(whole[0..<n])) }
        }
        let parsed = try ResponseAPDU(parsing: whole)
        #expect(parsed.data.count == 23)
        #expect(parsed.statusWord == .success)
    }

    @Test("checked(): success and 61 XX pass, errors and warnings throw")
    func checked() throws {
        try ResponseAPDU(data: [1], statusWord: .success).checked()
        try ResponseAPDU(statusWord: StatusWord(0x6110)).checked()
        #expect(throws: CheckedResponseError(response: ResponseAPDU(statusWord: .fileNotFound))) {
            try ResponseAPDU(statusWord: .fileNotFound).checked()
        }
        #expect(throws: CheckedResponseError.self) { try ResponseAPDU(statusWord: StatusWord(0x6282)).checked() }
        try ResponseAPDU(statusWord: StatusWord(0x6282)).checked(accepting: [StatusWord(0x6282)])
        do {
            try ResponseAPDU(statusWord: .wrongLength).checked()
        } catch {
            #expect(error.description == "the card answered 67 00: wrong length (Lc or Le not accepted)")
        }
    }
}
