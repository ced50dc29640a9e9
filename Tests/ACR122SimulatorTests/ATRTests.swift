import ACR122Simulator
import ISO7816
import SecbridgeTesting
import Testing

/// A peer and the ATR the ACR122U synthesises for it (docs/acr122-pn532.md §3; docs/cases.md P05).
struct ATRVector: Sendable, CustomTestStringConvertible {
    enum Peer: Sendable {
        case tag(sak: UInt8)
        case card(ats: String)
    }
    var id: String
    var source: String
    var peer: Peer
    var wholeATS = false
    var atr: String
    var testDescription: String { id }
}

@Suite("P05 ATRs synthesised by the simulated ACR122U")
struct ATRTests {
    static let vectors: [ATRVector] = [
        .init(id: "P05 MIFARE Classic 1K", source: "docs/cases.md P05 row 1", peer: .tag(sak: 0x08),
              atr: "3B 8F 80 01 80 4F 0C A0 00 00 03 06 03 00 01 00 00 00 00 6A"),
        .init(id: "P05 MIFARE Ultralight", source: "docs/cases.md P05 row 2", peer: .tag(sak: 0x00),
              atr: "3B 8F 80 01 80 4F 0C A0 00 00 03 06 03 00 03 00 00 00 00 68"),
        .init(id: "P05 ISO 14443-4 without historical bytes", source: "docs/cases.md P05 row 3",
              peer: .card(ats: "05 78 80 70 02"), atr: "3B 80 80 01 01"),
        .init(id: "DESFire, historical byte 80", source: "docs/acr122-pn532.md §3 (pcsc_scan log)",
              peer: .card(ats: "06 75 77 81 02 80"), atr: "3B 81 80 01 80 80"),
        .init(id: "DESFire, whole-ATS personality", source: "docs/acr122-pn532.md §3 (ACR122T manual, U)",
              peer: .card(ats: "06 75 77 81 02 80"), wholeATS: true, atr: "3B 86 80 01 06 75 77 81 02 80 00"),
        .init(id: "PN532 emulation ATS, no historical bytes", source: "docs/acr122-pn532.md §3",
              peer: .card(ats: "05 75 33 92 03"), atr: "3B 80 80 01 01"),
    ]

    @Test("ATR per peer", arguments: vectors)
    func atr(_ vector: ATRVector) throws {
        let field = fastField()
        switch vector.peer {
        case .tag(let sak): field.place(ISO14443_3Tag(uid: hex("01 02 03 04"), sak: sak))
        case .card(let ats): field.place(ISO14443_4Card(uid: hex("04 11 22 33"), ats: hex(ats)) { _ in [0x90, 0x00] })
        }
        let personality = ACR122Personality(atrHistoricalBytes: vector.wholeATS ? .wholeATS : .atsHistoricalBytes)
        let reader = SimulatedACR122U(field: field, personality: personality)
        let atr = try reader.powerUp()
        #expect(text(atr) == text(hex(vector.atr)), "\(vector.source)")
        // TD1 = 80, TD2 = 01: TCK present and valid.
        let parsed = try ATR(parsing: atr)
        #expect(parsed.isChecksumValid)
        #expect(reader.attribute(0x0009_0303) == atr)
    }
}
