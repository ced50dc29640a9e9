import ISO7816
import Testing

struct HexVector: Sendable, CustomTestStringConvertible {
    let id: String
    let text: String
    let bytes: [UInt8]
    var testDescription: String { id }
}

struct HexRejection: Sendable, CustomTestStringConvertible {
    let id: String
    let text: String
    let code: ISO7816Error.Code
    let offset: Int
    var testDescription: String { id }
}

@Suite("Hex text")
struct HexBytesTests {
    // Source: the brief's accepted forms; bytes of the SELECT header (ISO/IEC 7816-4 §11.2.2).
    static let accepted: [HexVector] = [
        HexVector(id: "spaced", text: "00 A4 04 00", bytes: [0x00, 0xA4, 0x04, 0x00]),
        HexVector(id: "packed", text: "00A40400", bytes: [0x00, 0xA4, 0x04, 0x00]),
        HexVector(id: "0x-comma", text: "0x00,0xA4", bytes: [0x00, 0xA4]),
        HexVector(id: "0x-comma-space", text: "0x00, 0xa4, 0X04", bytes: [0x00, 0xA4, 0x04]),
        HexVector(id: "colons", text: "3B:80:80:01:01", bytes: [0x3B, 0x80, 0x80, 0x01, 0x01]),
        HexVector(id: "lowercase", text: "d2 76 00 00 85 01 01", bytes: [0xD2, 0x76, 0x00, 0x00, 0x85, 0x01, 0x01]),
        HexVector(id: "newlines-tabs", text: "90\n\t00 ", bytes: [0x90, 0x00]),
        HexVector(id: "empty", text: "", bytes: []),
        HexVector(id: "only-separators", text: " : , ", bytes: []),
    ]

    @Test("accepted forms", arguments: accepted)
    func parses(_ v: HexVector) throws {
        #expect(try HexBytes.parse(v.text) == v.bytes)
    }

    static let rejected: [HexRejection] = [
        // "0 A4": the group "0" has one digit, at character 0.
        HexRejection(id: "odd-group", text: "0 A4", code: .oddHexDigitCount, offset: 0),
        // "00A": three digits in one group starting at character 0.
        HexRejection(id: "odd-packed", text: "00A", code: .oddHexDigitCount, offset: 0),
        // "00 A40": the second group (from character 3) has 3 digits.
        HexRejection(id: "odd-second-group", text: "00 A40", code: .oddHexDigitCount, offset: 3),
        // "00 G1": G at character 3 is not hex.
        HexRejection(id: "non-hex", text: "00 G1", code: .invalidHexDigit, offset: 3),
        // "A4x0": x not right after a lone 0.
        HexRejection(id: "stray-x", text: "A4x0", code: .invalidHexDigit, offset: 2),
        // "00 é0": a non-ASCII character at scalar 3.
        HexRejection(id: "non-ascii", text: "00 é0", code: .invalidHexDigit, offset: 3),
    ]

    @Test("rejections name the code and the position", arguments: rejected)
    func rejects(_ v: HexRejection) {
        #expect {
            try HexBytes.parse(v.text)
        } throws: { error in
            guard let e = error as? ISO7816Error else { return false }
            return e.code == v.code && e.offset == v.offset
        }
    }

    @Test("format is uppercase with a space between bytes")
    func formats() {
        #expect([0x00, 0xA4, 0x04, 0x00, 0xFF, 0x0a].hexString == "00 A4 04 00 FF 0A")
        #expect([UInt8]().hexString == "")
        #expect(HexBytes.format([0x9F, 0x81, 0x6E]) == "9F 81 6E")
    }

    @Test("round trip over every byte value")
    func roundTrip() throws {
        let all = (0...255).map { UInt8($0) }
        #expect(try HexBytes.parse(all.hexString) == all)
    }
}
