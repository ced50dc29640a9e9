import ACR122Simulator
import ISO7816
import PCSCCore
import PN53x
import SecbridgeTesting
import Testing

/// The clone and the Touchatag-era unit (docs/acr122-clones.md §1, §2), byte for byte against the
/// genuine personality.
@Suite("Clones and Touchatag-era units")
struct UnitVariantTests {
    /// The MIFARE Classic 1K of nfc-tools/mfoc issue #80: UID 77 E5 EB 59, SAK 08.
    static func mfoc80Card() -> ISO14443_3Tag { ISO14443_3Tag(uid: hex("77 E5 EB 59"), atqa: 0x0004, sak: 0x08) }

    @Test("a clone never reports the card to PC/SC, but InListPassiveTarget finds it, SENS_RES LSB first")
    func cloneHidesTheCardFromPCSC() throws {
        let field = fastField()
        field.place(Self.mfoc80Card())
        let clone = SimulatedACR122U(field: field, personality: .clone)
        #expect(!clone.isCardPresent())
        #expect(throws: IFDError.noCard) { try clone.powerUp() }
        #expect(clone.attribute(ACR122DriverConstants.attrICCPresence) == [0])
        // mfoc #80's nfc-list: "ATQA (SENS_RES): 04 00".
        #expect(text(try clone.control(code: 0x4200_0001, wrapped("D4 4A 01 00"))) == "D5 4B 01 01 04 00 08 04 77 E5 EB 59 90 00")
        #expect(text(try clone.control(code: 0x4200_0001, hex("FF 00 48 00 00"))) == text(Array("ACR122U214".utf8)))
        // libccid's SCARD_ATTR_VENDOR_NAME is the USB iManufacturer string with its NUL.
        #expect(clone.attribute(ACR122DriverConstants.attrVendorName) == Array("RFCARD".utf8) + [0])
    }

    @Test("the genuine unit reports the same card, SENS_RES most significant byte first")
    func genuineReportsTheCard() throws {
        let field = fastField()
        field.place(Self.mfoc80Card())
        let genuine = SimulatedACR122U(field: field)
        #expect(genuine.isCardPresent())
        #expect(text(try genuine.powerUp()) == "3B 8F 80 01 80 4F 0C A0 00 00 03 06 03 00 01 00 00 00 00 6A")
        genuine.powerDown()
        #expect(text(try genuine.control(code: 0x4200_0001, wrapped("D4 4A 01 00"))) == "D5 4B 01 01 00 04 08 04 77 E5 EB 59 90 00")
        #expect(genuine.attribute(ACR122DriverConstants.attrVendorName) == Array("ACS".utf8) + [0])
    }

    @Test("InDeselect halts the card on a genuine unit until the RF field goes off; a clone lists it again")
    func deselectHaltsOrNot() throws {
        for (personality, listedAgain) in [(ACR122Personality.ccidEscapeEnabled, false), (.clone, true)] {
            let field = fastField()
            field.place(Self.mfoc80Card())
            let reader = SimulatedACR122U(field: field, personality: personality)
            // Bounded polling: MxRtyPassiveActivation 02.
            #expect(text(try reader.control(code: 0x4200_0001, wrapped("D4 32 05 FF 01 02"))) == "D5 33 90 00")
            let first = try reader.control(code: 0x4200_0001, wrapped("D4 4A 01 00"))
            #expect(first[2] == 0x01)
            #expect(text(try reader.control(code: 0x4200_0001, wrapped("D4 44 01"))) == "D5 45 00 90 00")
            let second = try reader.control(code: 0x4200_0001, wrapped("D4 4A 01 00"))
            #expect(second == (listedAgain ? first : hex("D5 4B 00 90 00")), "\(personality.firmware)")
            // RF off and on: the halted card answers REQA again.
            _ = try reader.control(code: 0x4200_0001, wrapped("D4 32 01 00"))
            _ = try reader.control(code: 0x4200_0001, wrapped("D4 32 01 01"))
            #expect(try reader.control(code: 0x4200_0001, wrapped("D4 4A 01 00")) == first)
        }
    }

    @Test("a Touchatag-era unit shows a pseudo-card 3B 00 (T=0) with no tag, and pseudo-APDUs go through it")
    func touchatagPseudoCard() throws {
        let field = fastField()
        let unit = SimulatedACR122U(field: field, personality: .touchatag)
        #expect(unit.isCardPresent())
        #expect(unit.attribute(ACR122DriverConstants.attrICCPresence) == [2])
        #expect(try unit.powerUp() == [0x3B, 0x00])
        #expect(throws: IFDError.protocolNotSupported) { try unit.setProtocol(ACR122DriverConstants.protocolT1) }
        try unit.setProtocol(ACR122DriverConstants.protocolT0)
        #expect(try unit.transmit(hex("FF 00 48 00 00")) == Array("ACR122U102".utf8))
        // GetFirmwareVersion through the pseudo-card, as libnfc's Touchatag trace shows it
        // (drivers/acr122_usb.c): 61 08, then Get Response FF C0 00 00 08 (T=0).
        #expect(text(try unit.transmit(wrapped("D4 02"))) == "61 08")
        #expect(text(try unit.transmit(hex("FF C0 00 00 08"))) == "D5 03 32 01 04 07 90 00")
        // No card behind the pseudo-card.
        #expect(text(try unit.transmit(hex("00 A4 04 00 00"))) == "63 00")
    }

    @Test("a tag on a Touchatag-era unit is reached only through the PN532; the pseudo-card stays")
    func touchatagTagThroughPN532() throws {
        let field = fastField()
        field.place(Self.mfoc80Card())
        let unit = SimulatedACR122U(field: field, personality: .touchatag)
        #expect(try unit.powerUp() == [0x3B, 0x00])
        try unit.setProtocol(ACR122DriverConstants.protocolT0)
        let pn532 = PN532(link: ACR122Link(channel: try SimulatedReaderChannel(unit, protocol: .t0)))
        let target = try #require(try pn532.pollISO14443A())
        #expect(target.uid == hex("77 E5 EB 59"))
        unit.powerDown()
        #expect(try unit.powerUp() == [0x3B, 0x00])
        #expect(unit.isCardPresent())
    }

    @Test("PseudoCardATR, ReaderState.hasCard and ACR122Unit.classify")
    func classification() {
        #expect(PseudoCardATR.isPseudoCard([0x3B, 0x00]))
        #expect(!PseudoCardATR.isPseudoCard(hex("3B 8F 80 01 80 4F 0C A0 00 00 03 06 03 00 01 00 00 00 00 6A")))
        var state = ReaderState(readerName: "ACS ACR 38U-CCID 00 00")
        state.eventState = ReaderStateFlags.present.rawValue
        state.atr = [0x3B, 0x00]
        #expect(!state.hasCard)
        state.atr = hex("3B 80 80 01 01")
        #expect(state.hasCard)
        #expect(ACR122Unit.classify(vendorName: "ACS", atr: []) == .genuine)
        #expect(ACR122Unit.classify(vendorName: nil, atr: []) == .genuine)
        #expect(ACR122Unit.classify(vendorName: "Advanced Card Systems Ltd.", atr: []) == .genuine)
        #expect(ACR122Unit.classify(vendorName: "RFCARD\0", atr: []) == .clone(vendorName: "RFCARD"))
        #expect(ACR122Unit.classify(vendorName: "ACS", atr: [0x3B, 0x00]) == .pseudoCard(atr: [0x3B, 0x00]))
        #expect(ACR122Unit.classify(vendorName: "RFCARD", atr: []).reachesCardsOnlyThroughPN532)
        #expect(!ACR122Unit.genuine.reachesCardsOnlyThroughPN532)
    }
}
