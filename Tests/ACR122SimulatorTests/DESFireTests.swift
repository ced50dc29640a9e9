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
}
