import ACR122Simulator
import ISO7816
import SecbridgeTesting
import Testing

/// FeliCa, ISO/IEC 14443-B and Topaz/Jewel targets in InListPassiveTarget (PN532 UM0701-02
/// §7.3.5) and the ATRs an ACS reader builds for them (docs/acr122-clones.md §4).
@Suite("Other card families: FeliCa, ISO 14443-B, Topaz/Jewel")
struct CardFamilyTests {
    static let idm = hex("01 01 05 01 86 04 02 02")
    static let pmm = hex("03 01 4B 02 4F 49 93 FF")
    /// The ATQB of ACS's ST19XRC8E example (ACR122L user manual §6.1).
    static let atqb = hex("50 12 23 45 56 12 53 54 4E 33 81 C3")

    /// A reader whose InListPassiveTarget gives up after 3 attempts (MxRtyPassiveActivation 02).
    static func boundedReader(_ field: SimulatedField) throws -> SimulatedACR122U {
        let reader = SimulatedACR122U(field: field)
        #expect(text(try reader.control(code: 0x4200_0001, wrapped("D4 32 05 FF 01 02"))) == "D5 33 90 00")
        return reader
    }

    @Test("FeliCa 212 kbit/s: POL_RES with the system code when the request code asks for it")
    func felica() throws {
        let field = fastField()
        field.place(PassiveTargetPeer(.felica(idm: Self.idm, pmm: Self.pmm, systemCode: hex("12 FC"), highSpeed: false)))
        let reader = try Self.boundedReader(field)
        #expect(text(try reader.control(code: 0x4200_0001, wrapped("D4 4A 01 01 00 FF FF 01 00")))
            == "D5 4B 01 01 14 01 01 01 05 01 86 04 02 02 03 01 4B 02 4F 49 93 FF 12 FC 90 00")
        #expect(text(try reader.control(code: 0x4200_0001, wrapped("D4 4A 01 01 00 12 FC 00 00")))
            == "D5 4B 01 01 12 01 01 01 05 01 86 04 02 02 03 01 4B 02 4F 49 93 FF 90 00")
        // Another system code, or 424 kbit/s: no answer.
        #expect(text(try reader.control(code: 0x4200_0001, wrapped("D4 4A 01 01 00 88 B4 00 00"))) == "D5 4B 00 90 00")
        #expect(text(try reader.control(code: 0x4200_0001, wrapped("D4 4A 01 02 00 FF FF 00 00"))) == "D5 4B 00 90 00")
        // Type A polling does not find it.
        #expect(text(try reader.control(code: 0x4200_0001, wrapped("D4 4A 01 00"))) == "D5 4B 00 90 00")
    }

    @Test("ISO 14443-B: ATQB and the ATTRIB answer; the ATR is ACS's example byte for byte")
    func typeB() throws {
        let field = fastField()
        let card = PassiveTargetPeer(.typeB(atqb: Self.atqb, attribResponse: [0x00]))
        field.place(card)
        let reader = try Self.boundedReader(field)
        #expect(text(try reader.control(code: 0x4200_0001, wrapped("D4 4A 01 03 00")))
            == "D5 4B 01 01 50 12 23 45 56 12 53 54 4E 33 81 C3 01 00 90 00")
        #expect(text(card.pcscATR) == "3B 8C 80 01 50 12 23 45 56 12 53 54 4E 33 81 C3 55")
    }

    @Test("Topaz/Jewel: SENS_RES and JEWELID; storage-card ATRs with ACS's card names")
    func jewelAndATRs() throws {
        let field = fastField()
        let tag = PassiveTargetPeer(.jewel(sensRes: hex("0C 00"), jewelID: hex("B5 7A 2C 00")))
        field.place(tag)
        let reader = try Self.boundedReader(field)
        #expect(text(try reader.control(code: 0x4200_0001, wrapped("D4 4A 01 04"))) == "D5 4B 01 01 0C 00 B5 7A 2C 00 90 00")
        #expect(text(tag.pcscATR) == "3B 8F 80 01 80 4F 0C A0 00 00 03 06 03 F0 04 00 00 00 00 9F")
        let felica212 = PassiveTargetPeer(.felica(idm: Self.idm, pmm: Self.pmm, systemCode: hex("12 FC"), highSpeed: false))
        let felica424 = PassiveTargetPeer(.felica(idm: Self.idm, pmm: Self.pmm, systemCode: hex("12 FC"), highSpeed: true))
        #expect(text(felica212.pcscATR) == "3B 8F 80 01 80 4F 0C A0 00 00 03 06 11 F0 11 00 00 00 00 98")
        #expect(text(felica424.pcscATR) == "3B 8F 80 01 80 4F 0C A0 00 00 03 06 11 F0 12 00 00 00 00 9B")
    }

    @Test("automatic polling reports them to PC/SC with ACS's ATRs; Get Data gives IDm, PUPI, JEWELID")
    func pcscSide() throws {
        let field = fastField()
        let felica = PassiveTargetPeer(.felica(idm: Self.idm, pmm: Self.pmm, systemCode: hex("12 FC"), highSpeed: false))
        field.place(felica)
        let reader = SimulatedACR122U(field: field)
        #expect(reader.isCardPresent())
        #expect(text(try reader.powerUp()) == "3B 8F 80 01 80 4F 0C A0 00 00 03 06 11 F0 11 00 00 00 00 98")
        #expect(text(try reader.transmit(hex("FF CA 00 00 00"))) == "01 01 05 01 86 04 02 02 90 00")
        // No APDU exchange with them is modelled: 63 00.
        #expect(text(try reader.transmit(hex("00 A4 04 00 00"))) == "63 00")
        reader.powerDown()
        // PICC operating parameter without the FeliCa 212 bit (3): not polled.
        #expect(text(try reader.control(code: 0x4200_0001, hex("FF 00 51 F7 00"))) == "90 F7")
        #expect(!reader.isCardPresent())
        field.remove(felica)
        let typeB = PassiveTargetPeer(.typeB(atqb: Self.atqb, attribResponse: [0x00]))
        field.place(typeB)
        #expect(reader.isCardPresent())
        #expect(text(try reader.powerUp()) == "3B 8C 80 01 50 12 23 45 56 12 53 54 4E 33 81 C3 55")
        #expect(text(try reader.transmit(hex("FF CA 00 00 00"))) == "12 23 45 56 90 00")
    }

    /// An NFC Forum Type 3 Tag attribute block (version 1.0, Nbr 4, Nbw 1, Nmaxb 13, RW, Ln 0,
    /// checksum 0023), block 0 of service 000B.
    static let attributeBlock = hex("10 04 01 00 0D 00 00 00 00 00 01 00 00 00 00 23")

    @Test("FeliCa through InDataExchange: Request Response and Read Without Encryption, LEN included")
    func felicaExchanges() throws {
        let field = fastField()
        field.place(PassiveTargetPeer(
            .felica(idm: Self.idm, pmm: Self.pmm, systemCode: hex("12 FC"), highSpeed: false), memory: Self.attributeBlock))
        let reader = try Self.boundedReader(field)
        #expect(text(try reader.control(code: 0x4200_0001, wrapped("D4 4A 01 01 00 FF FF 00 00"))).hasPrefix("D5 4B 01 01 12 01"))
        // libnfc's presence check: Request Response, 11 bytes back (pn53x.c).
        #expect(text(try reader.control(code: 0x4200_0001, wrapped("D4 40 01 0A 04 01 01 05 01 86 04 02 02")))
            == "D5 41 00 0B 05 01 01 05 01 86 04 02 02 00 90 00")
        // nfc-read-forum-tag3's Check of block 0: one service (0B 00), one block (80 00).
        #expect(text(try reader.control(code: 0x4200_0001, wrapped("D4 40 01 10 06 01 01 05 01 86 04 02 02 01 0B 00 01 80 00")))
            == "D5 41 00 1D 07 01 01 05 01 86 04 02 02 00 00 01 10 04 01 00 0D 00 00 00 00 00 01 00 00 00 00 23 90 00")
        // A block beyond the memory, another service: status flags FF A8, FF A6.
        #expect(text(try reader.control(code: 0x4200_0001, wrapped("D4 40 01 10 06 01 01 05 01 86 04 02 02 01 0B 00 01 80 05")))
            == "D5 41 00 0C 07 01 01 05 01 86 04 02 02 FF A8 90 00")
        #expect(text(try reader.control(code: 0x4200_0001, wrapped("D4 40 01 10 06 01 01 05 01 86 04 02 02 01 09 10 01 80 00")))
            == "D5 41 00 0C 07 01 01 05 01 86 04 02 02 FF A6 90 00")
        // Another IDm, or a LEN that does not match the frame: no answer (status 01, timeout).
        #expect(text(try reader.control(code: 0x4200_0001, wrapped("D4 40 01 0A 04 01 01 05 01 86 04 02 03"))) == "D5 41 01 90 00")
        #expect(text(try reader.control(code: 0x4200_0001, wrapped("D4 40 01 0B 04 01 01 05 01 86 04 02 02"))) == "D5 41 01 90 00")
    }

    @Test("Topaz/Jewel through InDataExchange: RID gives HR0 HR1 and JEWELID, READ one byte")
    func jewelExchanges() throws {
        let field = fastField()
        field.place(PassiveTargetPeer(
            .jewel(sensRes: hex("0C 00"), jewelID: hex("B5 7A 2C 00")), memory: hex("B5 7A 2C 00 00 00 00 00 E1 10 0E 00")))
        let reader = try Self.boundedReader(field)
        #expect(text(try reader.control(code: 0x4200_0001, wrapped("D4 4A 01 04"))) == "D5 4B 01 01 0C 00 B5 7A 2C 00 90 00")
        #expect(text(try reader.control(code: 0x4200_0001, wrapped("D4 40 01 78 00 00 00 00 00 00"))) == "D5 41 00 11 48 B5 7A 2C 00 90 00")
        #expect(text(try reader.control(code: 0x4200_0001, wrapped("D4 40 01 01 08"))) == "D5 41 00 E1 90 00")
        // Beyond the memory, or RALL (not modelled): mute.
        #expect(text(try reader.control(code: 0x4200_0001, wrapped("D4 40 01 01 7F"))) == "D5 41 01 90 00")
        #expect(text(try reader.control(code: 0x4200_0001, wrapped("D4 40 01 00 00 00"))) == "D5 41 01 90 00")
    }

    @Test("ISO 14443-B: C-APDUs through InDataExchange and through SCardTransmit reach its application")
    func typeBExchanges() throws {
        let field = fastField()
        let card = PassiveTargetPeer(.typeB(atqb: Self.atqb, attribResponse: [0x00]), apdu: { command in
            command == hex("00 A4 04 00 07 D2 76 00 00 85 01 01 00") ? [0x90, 0x00] : [0x6A, 0x82]
        })
        field.place(card)
        let reader = try Self.boundedReader(field)
        #expect(text(try reader.control(code: 0x4200_0001, wrapped("D4 4A 01 03 00"))).hasPrefix("D5 4B 01 01 50 12 23 45 56"))
        #expect(text(try reader.control(code: 0x4200_0001, wrapped("D4 40 01 00 A4 04 00 07 D2 76 00 00 85 01 01 00")))
            == "D5 41 00 90 00 90 00")
        #expect(text(try reader.control(code: 0x4200_0001, wrapped("D4 40 01 00 A4 04 00 02 3F 00"))) == "D5 41 00 6A 82 90 00")
        // Through PC/SC: automatic polling reports it, the MCU forwards the APDU.
        #expect(text(try reader.control(code: 0x4200_0001, hex("FF 00 51 FF 00"))) == "90 FF")
        #expect(text(try reader.powerUp()) == "3B 8C 80 01 50 12 23 45 56 12 53 54 4E 33 81 C3 55")
        #expect(text(try reader.transmit(hex("00 A4 04 00 07 D2 76 00 00 85 01 01 00"))) == "90 00")
        reader.powerDown()
        // A Type B card without an application stays mute: status 01 (timeout).
        field.remove(card)
        field.place(PassiveTargetPeer(.typeB(atqb: Self.atqb, attribResponse: [0x00])))
        _ = try reader.control(code: 0x4200_0001, wrapped("D4 4A 01 03 00"))
        #expect(text(try reader.control(code: 0x4200_0001, wrapped("D4 40 01 00 A4 04 00 00"))) == "D5 41 01 90 00")
    }
}
