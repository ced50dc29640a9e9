import ISO7816
import SecbridgeTesting
import Testing

struct SelectVector: Sendable, CustomTestStringConvertible {
    let id: String
    let source: String
    let requested: String
    let responseData: String
    let expected: SelectedAIDMatch
    var testDescription: String { "\(id) (\(source))" }
}

@Suite("SELECT by AID")
struct SelectTests {
    @Test("P14: application SELECT is 00 A4 04 00 Lc AID 00")
    func command() throws {
        let select = CommandAPDU.select(aid: try AID(hex: "D2 76 00 01 24 01"))
        #expect(select.serialized() == hex("00 A4 04 00 06 D2 76 00 01 24 01 00"))
        #expect(select.ne == 256)
        #expect(select.case == .case4Short)
        let piv = CommandAPDU.select(aid: try AID(hex: "A0 00 00 03 08 00 00 10 00"))
        #expect(piv.serialized() == hex("00 A4 04 00 09 A0 00 00 03 08 00 00 10 00 00"))
    }

    static let vectors: [SelectVector] = [
        SelectVector(
            id: "P14-PIV-PIX-only", source: "docs/cases.md P14, OpenSC 1230",
            requested: "A0 00 00 03 08 00 00 10 00",
            responseData: "61 11 4F 06 00 00 10 00 01 00 79 07 4F 05 A0 00 00 03 08",
            expected: .pixOnly([0x00, 0x00, 0x10, 0x00, 0x01, 0x00])),
        SelectVector(
            id: "P14-no-data", source: "docs/cases.md P14 (reply 90 00 only)",
            requested: "D2 76 00 01 24 01", responseData: "", expected: .notReported),
        SelectVector(
            id: "FCI-exact", source: "ISO/IEC 7816-4 §7.4.1 (FCI 6F / DF name 84)",
            requested: "D2 76 00 01 24 01", responseData: "6F 08 84 06 D2 76 00 01 24 01",
            expected: .exact),
        SelectVector(
            id: "FCI-extends-partial-AID", source: "ISO/IEC 7816-4 §11.2.2 (selection by partial DF name)",
            requested: "D2 76 00 01 24", responseData: "6F 09 84 07 D2 76 00 01 24 01 02",
            expected: .extendsRequest(try! AID(hex: "D2 76 00 01 24 01 02"))),
        SelectVector(
            id: "FCI-without-DF-name", source: "ISO/IEC 7816-4 §7.4.1",
            requested: "D2 76 00 01 24 01", responseData: "6F 03 82 01 38", expected: .notReported),
    ]

    @Test("returned AID accepted", arguments: vectors)
    func accepted(_ v: SelectVector) throws {
        let aid = try AID(hex: v.requested)
        #expect(try checkSelectedAID(requested: aid, responseData: hex(v.responseData)) == v.expected)
    }

    @Test("a different AID is reported as a mismatch")
    func mismatch() throws {
        let requested = try AID(hex: "D2 76 00 01 24 01")
        let data = hex("6F 08 84 06 A0 00 00 00 03 10")
        #expect(throws: SelectedAIDMismatchError(requested: requested, returned: hex("A0 00 00 00 03 10"))) {
            try checkSelectedAID(requested: requested, responseData: data)
        }
        // A PIX that does not continue the requested AID.
        let piv = try AID(hex: "A0 00 00 03 08 00 00 10 00")
        #expect(throws: SelectedAIDMismatchError.self) {
            try checkSelectedAID(requested: piv, responseData: hex("61 08 4F 06 00 00 20 00 01 00"))
        }
    }

    @Test("AID length bounds: 5 to 16 bytes")
    func aidBounds() throws {
        #expect(throws: ISO7816Error(.valueOutOfRange, "")) { try AID([1, 2, 3, 4]) }
        #expect(throws: ISO7816Error(.valueOutOfRange, "")) { try AID([UInt8](repeating: 0, count: 17)) }
        let aid = try AID(hex: "A0 00 00 03 08 00 00 10 00")
        #expect(Array(aid.rid) == [0xA0, 0x00, 0x00, 0x03, 0x08])
        #expect(Array(aid.pix) == [0x00, 0x00, 0x10, 0x00])
    }
}
