import ACR122Simulator
import ISO7816
import PN53x
import SecbridgeTesting
import Testing

/// A DESFire EV1 answering GetVersion natively (inside InDataExchange) and wrapped in ISO 7816
/// (CLA 90, through SCardTransmit), with the bytes of a recorded EV1 4K (docs/acr122-clones.md §6).
@Suite("DESFire EV1 native commands")
struct DESFireTests {
    @Test("wrapped GetVersion through the PC/SC path: three frames, 91 AF, 91 AF, 91 00")
    func wrappedGetVersion() throws {
        let field = fastField()
        field.place(DESFireEV1Applet.card())
        let reader = SimulatedACR122U(field: field)
        #expect(text(try reader.powerUp()) == "3B 81 80 01 80 80")
        #expect(text(try reader.transmit(hex("90 60 00 00 00"))) == "04 01 01 01 00 18 05 91 AF")
        #expect(text(try reader.transmit(hex("90 AF 00 00 00"))) == "04 01 01 01 04 18 05 91 AF")
        #expect(text(try reader.transmit(hex("90 AF 00 00 00"))) == "04 1F 5B 92 DA 2C 80 BA 34 98 BA D0 29 12 91 00")
        // A continuation with nothing pending, and an unknown command: illegal command code.
        #expect(text(try reader.transmit(hex("90 AF 00 00 00"))) == "91 1C")
        #expect(text(try reader.transmit(hex("90 5A 00 00 03 00 00 00 00"))) == "91 00")
        #expect(text(try reader.transmit(hex("90 5A 00 00 03 AA AA AA 00"))) == "91 A0")
        #expect(text(try reader.transmit(hex("00 A4 04 00 07 D2 76 00 00 85 01 01 00"))) == "6A 82")
        // DESFire's own ISO AID (libfreefare's connect; also the T4T mapping 1.0 AID): 90 00. No
        // CC file on this card (U): 6A 82; other ISO commands 6D 00 (U).
        #expect(text(try reader.transmit(hex("00 A4 04 00 07 D2 76 00 00 85 01 00"))) == "90 00")
        #expect(text(try reader.transmit(hex("00 A4 00 0C 02 E1 03"))) == "6A 82")
        #expect(text(try reader.transmit(hex("00 B0 00 00 0F"))) == "6D 00")
    }

    @Test("native GetVersion inside InDataExchange: the status byte first")
    func nativeGetVersion() throws {
        let field = fastField()
        field.place(DESFireEV1Applet.card())
        let reader = SimulatedACR122U(field: field)
        #expect(text(try reader.control(code: 0x4200_0001, wrapped("D4 4A 01 00")))
            == "D5 4B 01 01 03 44 20 07 04 1F 5B 92 DA 2C 80 06 75 77 81 02 80 90 00")
        #expect(text(try reader.control(code: 0x4200_0001, wrapped("D4 40 01 60"))) == "D5 41 00 AF 04 01 01 01 00 18 05 90 00")
        #expect(text(try reader.control(code: 0x4200_0001, wrapped("D4 40 01 AF"))) == "D5 41 00 AF 04 01 01 01 04 18 05 90 00")
        #expect(text(try reader.control(code: 0x4200_0001, wrapped("D4 40 01 AF")))
            == "D5 41 00 00 04 1F 5B 92 DA 2C 80 BA 34 98 BA D0 29 12 90 00")
        #expect(text(try reader.control(code: 0x4200_0001, wrapped("D4 40 01 6A"))) == "D5 41 00 00 90 00")
    }

    /// libfreefare's `mifare_desfire_connect` then `mifare_desfire_get_version`
    /// (libfreefare/mifare_desfire.c) as libnfc's acr122 driver carries them: InListPassiveTarget
    /// with the UID, the ISO SELECT of DESFire's AID `D2 76 00 00 85 01 00` (no Le; libfreefare
    /// wants exactly 90 00, as the EV1 of chemicstry/eacs-tag-auth answers it), then GetVersion
    /// wrapped (`90 60 00 00 00`, `90 AF 00 00 00` twice) inside InDataExchange, each answer
    /// `D5 41 00 … 91 st` with the MCU's 90 00 (docs/acr122-clones.md §6).
    @Test("libfreefare's connect and GetVersion through Direct Transmit: SELECT D2 76 00 00 85 01 00 → 90 00, then 90 60 / 90 AF inside InDataExchange")
    func libfreefareConnectAndGetVersion() throws {
        let field = fastField()
        field.place(DESFireEV1Applet.card())
        let reader = SimulatedACR122U(field: field)
        func exchange(_ frame: String) throws -> String { text(try reader.control(code: 0x4200_0001, wrapped(frame))) }
        #expect(try exchange("D4 4A 01 00 04 1F 5B 92 DA 2C 80") == "D5 4B 01 01 03 44 20 07 04 1F 5B 92 DA 2C 80 06 75 77 81 02 80 90 00")
        #expect(try exchange("D4 40 01 00 A4 04 00 07 D2 76 00 00 85 01 00") == "D5 41 00 90 00 90 00")
        #expect(try exchange("D4 40 01 90 60 00 00 00") == "D5 41 00 04 01 01 01 00 18 05 91 AF 90 00")
        #expect(try exchange("D4 40 01 90 AF 00 00 00") == "D5 41 00 04 01 01 01 04 18 05 91 AF 90 00")
        #expect(try exchange("D4 40 01 90 AF 00 00 00") == "D5 41 00 04 1F 5B 92 DA 2C 80 BA 34 98 BA D0 29 12 91 00 90 00")
        // mifare_desfire_select_application(PICC level): 90 5A 00 00 03 00 00 00 00 → 91 00.
        #expect(try exchange("D4 40 01 90 5A 00 00 03 00 00 00 00") == "D5 41 00 91 00 90 00")
        // With Le 00 (eacs-tag-auth's form) the SELECT answers the same; another AID does not.
        #expect(try exchange("D4 40 01 00 A4 04 00 07 D2 76 00 00 85 01 00 00") == "D5 41 00 90 00 90 00")
        #expect(try exchange("D4 40 01 00 A4 04 00 07 D2 76 00 00 85 01 01 00") == "D5 41 00 6A 82 90 00")
        // The SELECT ends a GetVersion half done: AF continues nothing afterwards (1C).
        #expect(try exchange("D4 40 01 90 60 00 00 00") == "D5 41 00 04 01 01 01 00 18 05 91 AF 90 00")
        #expect(try exchange("D4 40 01 00 A4 04 00 07 D2 76 00 00 85 01 00") == "D5 41 00 90 00 90 00")
        #expect(try exchange("D4 40 01 90 AF 00 00 00") == "D5 41 00 91 1C 90 00")
    }
}
