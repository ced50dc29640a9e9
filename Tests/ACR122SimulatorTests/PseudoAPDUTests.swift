import ACR122Simulator
import ISO7816
import PN53x
import SecbridgeTesting
import Testing

/// One pseudo-APDU and the reply the ACR122U gives (ACR122U API v2.04; docs/acr122-pn532.md §2).
struct PseudoAPDUVector: Sendable, CustomTestStringConvertible {
    var id: String
    var source: String
    var command: String
    var reply: String
    var testDescription: String { id }
}

@Suite("ACR122U pseudo-APDUs, escape path, attributes")
struct PseudoAPDUTests {
    static let escapeVectors: [PseudoAPDUVector] = [
        .init(id: "firmware string, no SW", source: "docs/acr122-pn532.md §2", command: "FF 00 48 00 00",
              reply: "41 43 52 31 32 32 55 32 30 37"),
        .init(id: "LED 0F → 90 03", source: "docs/acr122-pn532.md §2", command: "FF 00 40 0F 04 00 00 00 00", reply: "90 03"),
        .init(id: "get PICC parameter default FF", source: "ACR122U API §6", command: "FF 00 50 00 00", reply: "90 FF"),
        .init(id: "set PICC parameter 7F", source: "ACR122U API §6", command: "FF 00 51 7F 00", reply: "90 7F"),
        .init(id: "MCU timeout 01", source: "ACR122U API §6", command: "FF 00 41 01 00", reply: "90 00"),
        .init(id: "buzzer on detection off", source: "ACR122U API §6", command: "FF 00 52 00 00", reply: "90 00"),
        .init(id: "GetFirmwareVersion through Direct Transmit", source: "UM0701-02 §7.2.2",
              command: "FF 00 00 00 02 D4 02", reply: "D5 03 32 01 06 07 90 00"),
        .init(id: "RF off", source: "docs/acr122-pn532.md §2", command: "FF 00 00 00 04 D4 32 01 00", reply: "D5 33 90 00"),
        .init(id: "GetGeneralStatus, no field, no target: SAM status 80", source: "ACR122T API v2.02 §7.5; docs/acr122-pn532.md §4b",
              command: "FF 00 00 00 02 D4 04", reply: "D5 05 00 00 00 80 90 00"),
        .init(id: "P08 InCommunicateThru without target → status 01", source: "docs/cases.md P08",
              command: "FF 00 00 00 04 D4 42 1A 00", reply: "D5 43 01 90 00"),
        .init(id: "P08 reader command wrapped in InDataExchange → 27", source: "docs/cases.md P08",
              command: "FF 00 00 00 08 D4 40 01 FF 00 48 00 00", reply: "D5 41 27 90 00"),
        .init(id: "TgGetData before activation → 25", source: "docs/acr122-pn532.md §5",
              command: "FF 00 00 00 02 D4 86", reply: "D5 87 25 90 00"),
        .init(id: "TgSetData before activation → 25", source: "docs/acr122-pn532.md §5",
              command: "FF 00 00 00 04 D4 8E 90 00", reply: "D5 8F 25 90 00"),
        .init(id: "Lc larger than the data on a command that takes none → the data is passed on (U)",
              source: "docs/acr122-pn532.md §2 (nfc-pcsc issue 59; no byte log of this case)",
              command: "FF 00 00 00 05 D4 02", reply: "D5 03 32 01 06 07 90 00"),
        .init(id: "Lc and no data at all → 63 00 (decision)", source: "docs/acr122-pn532.md §2",
              command: "FF 00 00 00 05", reply: "63 00"),
        .init(id: "Lc smaller than the data → 63 00 (decision)", source: "ACR122U API §4 status words",
              command: "FF 00 00 00 01 D4 02", reply: "63 00"),
        .init(id: "frame not starting D4 → 63 00", source: "ACR122U API §4", command: "FF 00 00 00 02 D5 02", reply: "63 00"),
        .init(id: "unknown PN532 command → 63 00", source: "UM0701-02 §6.2.1.4 syntax error", command: "FF 00 00 00 02 D4 FE", reply: "63 00"),
        .init(id: "unknown pseudo-APDU → 6A 81", source: "ACR122U API §4", command: "FF 00 99 00 00", reply: "6A 81"),
        .init(id: "Get Response on a T=1 unit → 6A 81", source: "docs/acr122-pn532.md §2", command: "FF C0 00 00 06", reply: "6A 81"),
        .init(id: "Get UID without a card → 63 00", source: "PC/SC part 3 §3.2.2.1.3", command: "FF CA 00 00 00", reply: "63 00"),
        .init(id: "TgInitAsTarget shorter than 0x27 → 63 00", source: "UM0701-02 §7.3.14",
              command: "FF 00 00 00 05 D4 8C 05 04 00", reply: "63 00"),
    ]

    @Test("pseudo-APDU through the escape code", arguments: escapeVectors)
    func escapeVector(_ vector: PseudoAPDUVector) throws {
        let reader = SimulatedACR122U(field: fastField())
        let reply = try reader.control(code: 0x4200_0001, hex(vector.command))
        #expect(text(reply) == text(hex(vector.reply)), "\(vector.source)")
    }

    @Test("firmware string through the client: ACR122U207, no status word")
    func firmwareThroughClient() throws {
        let reader = SimulatedACR122U(field: fastField())
        let link = try ACR122Link.open(channel: SimulatedReaderChannel(reader, protocol: .undefined), readerName: reader.name)
        #expect(link.firmware?.text == "ACR122U207")
        #expect(link.firmware?.isACR122U == true)
        #expect(try PN532(link: link).send(PN532.GetFirmwareVersion()) == PN532FirmwareVersion(ic: 0x32, version: 0x01, revision: 0x06, support: 0x07))
    }

    @Test("a configured firmware string is returned as is")
    func configuredFirmware() throws {
        let reader = SimulatedACR122U(field: fastField(), personality: ACR122Personality(firmware: "ACR122U215"))
        #expect(try reader.control(code: 0x4200_0001, hex("FF 00 48 00 00")) == Array("ACR122U215".utf8))
    }

    @Test("LED/buzzer through the client: 90 03 for P2 0F, then red off alone")
    func ledThroughClient() throws {
        let reader = SimulatedACR122U(field: fastField())
        let link = ACR122Link(channel: try SimulatedReaderChannel(reader, protocol: .undefined))
        #expect(try reader.control(code: 0x4200_0001, hex("FF 00 40 0F 04 00 00 00 00")) == hex("90 03"))
        // P2 04: red mask, final red 0 → green stays on.
        #expect(try reader.control(code: 0x4200_0001, hex("FF 00 40 04 04 00 00 00 00")) == hex("90 02"))
        #expect(try link.piccOperatingParameter() == .factoryDefault)
        #expect(reader.ledState == 0x02)
    }

    // MARK: P09 escape gating

    @Test("P09 ccidEscapeDisabled: 0x42000001 → communication error (0x80100016), no tag 13")
    func p09Disabled() throws {
        let reader = SimulatedACR122U(field: fastField(), personality: .ccidEscapeDisabled)
        #expect(throws: IFDError.communicationError) { try reader.control(code: 0x4200_0001, hex("FF 00 48 00 00")) }
        #expect(try reader.control(code: 0x4200_0D48, []) == hex("12 04 42 33 00 12"))  // FEATURE_GET_TLV_PROPERTIES only
        #expect(throws: IFDError.notSupported) { try reader.control(code: 0x4200_0DAC, hex("FF 00 48 00 00")) }
        // The client says exactly what to do.
        let channel = try SimulatedReaderChannel(reader, protocol: .undefined)
        #expect(throws: ACR122Error.escapeCommandsNotEnabled) {
            _ = try ACR122Link.open(channel: channel, readerName: reader.name)
        }
        #expect(ACR122Error.escapeCommandsNotEnabled.description.contains("ifdDriverOptions"))
    }

    @Test("P09 ccidEscapeEnabled: feature TLVs 12 04 42 33 00 12 13 04 42 00 00 01, 0x42000DAC unsupported (0x8010001F)")
    func p09Enabled() throws {
        let reader = SimulatedACR122U(field: fastField(), personality: .ccidEscapeEnabled)
        #expect(text(try reader.control(code: 0x4200_0D48, [])) == "12 04 42 33 00 12 13 04 42 00 00 01")
        #expect(throws: IFDError.notSupported) { try reader.control(code: 0x4200_0DAC, hex("FF 00 48 00 00")) }
        let channel = try SimulatedReaderChannel(reader, protocol: .undefined)
        #expect(ACR122Link.discoverEscapeCodes(on: channel) == [0x4200_0001, 0x4200_0DAC])
        #expect(try ACR122Link.open(channel: channel, readerName: reader.name).escapeCode == 0x4200_0001)
    }

    @Test("P09 acsDriver: 0x42000DAC works and is listed; 0x42000001 refused as ifdDriverOptions 0x0000 does")
    func p09ACS() throws {
        let reader = SimulatedACR122U(field: fastField(), personality: .acsDriver)
        #expect(text(try reader.control(code: 0x4200_0D48, [])) == "11 04 42 33 00 11 12 04 42 33 00 12 13 04 42 00 0D AC")
        #expect(throws: IFDError.communicationError) { try reader.control(code: 0x4200_0001, hex("FF 00 48 00 00")) }
        let link = try ACR122Link.open(channel: SimulatedReaderChannel(reader, protocol: .undefined), readerName: reader.name)
        #expect(link.escapeCode == 0x4200_0DAC)
        #expect(link.firmware?.text == "ACR122U207")
    }

    @Test("unknown control codes → notSupported (SCARD_E_UNSUPPORTED_FEATURE)", arguments: [
        ACR122Personality.ccidEscapeDisabled, .ccidEscapeEnabled, .acsDriver,
    ])
    func unknownControlCode(_ personality: ACR122Personality) {
        let reader = SimulatedACR122U(field: fastField(), personality: personality)
        #expect(throws: IFDError.notSupported) { try reader.control(code: 0x4200_0002, []) }
    }

    // MARK: Attributes, presence, protocols

    @Test("SCARD_ATTR_MAXINPUT = 271 − 10 = 261 (libccid ifdhandler.c), vendor ACS")
    func attributes() {
        let reader = SimulatedACR122U(field: fastField())
        #expect(reader.attribute(0x0007_A007) == [0x05, 0x01, 0x00, 0x00])
        #expect(reader.attribute(0x0001_0100) == Array("ACS".utf8) + [0])
        #expect(reader.attribute(0x0009_0303) == nil)
        #expect(reader.attribute(0x1234_5678) == nil)
    }

    @Test("no card: not present, power up and transmit fail with noCard (SCARD_E_NO_SMARTCARD)")
    func noCard() {
        let reader = SimulatedACR122U(field: fastField())
        #expect(!reader.isCardPresent())
        #expect(throws: IFDError.noCard) { try reader.powerUp() }
        #expect(throws: IFDError.noCard) { try reader.transmit(hex("FF 00 48 00 00")) }
        #expect(throws: PCSCError.noSmartcard) { _ = try SimulatedReaderChannel(reader, protocol: .t1) }
    }

    @Test("PICC automatic polling off (FF 00 51 7F 00): a card in the field is not reported")
    func pollingOff() throws {
        let field = fastField()
        let reader = SimulatedACR122U(field: field)
        field.place(ISO14443_4Card(uid: hex("04 11 22 33")) { _ in [0x90, 0x00] })
        #expect(reader.isCardPresent())
        #expect(try reader.control(code: 0x4200_0001, hex("FF 00 51 7F 00")) == hex("90 7F"))
        #expect(!reader.isCardPresent())
        #expect(throws: IFDError.noCard) { try reader.powerUp() }
        #expect(reader.attribute(0x0009_0300) == [0])
        #expect(try reader.control(code: 0x4200_0001, hex("FF 00 51 FF 00")) == hex("90 FF"))
        #expect(reader.isCardPresent())
    }

    /// The order-dependent LibnfcToolsTests failure: pcscd powered a tag on reader A, the tag left
    /// and A's personality was switched; pcscd's SCardTransmit got IFD_ICC_NOT_PRESENT and marked
    /// the reader empty, but its poll thread never saw "absent", so the next tag was never powered
    /// up (docs/acr122-pn532.md §8).
    @Test("a unit replacing one pcscd had powered a card on reports no card once, then the new tag")
    func replacementEndsPCSCDsPowerSession() throws {
        let field = fastField()
        let first = ISO14443_3Tag(uid: hex("04 A1 B2 C3 D4 E5 F6"), atqa: 0x0044, sak: 0x00)
        field.place(first)
        let old = SimulatedACR122U(field: field)
        #expect(old.isCardPresent())
        _ = try old.powerUp()
        field.remove(first)
        let fresh = SimulatedACR122U(field: field, personality: .legacyT0Firmware)
        fresh.takeOverPCSCSession(from: old)
        old.detach()
        field.place(ISO14443_3Tag(uid: hex("04 11 22 33 44 55 66"), atqa: 0x0044, sak: 0x00))
        #expect(throws: IFDError.noCard) { try fresh.transmit(hex("FF CA 00 00 00")) }
        #expect(!fresh.cardWouldBeReportedPresent)
        #expect(!fresh.isCardPresent())
        #expect(fresh.isCardPresent())
        #expect(try fresh.powerUp() == hex("3B 8F 80 01 80 4F 0C A0 00 00 03 06 03 00 03 00 00 00 00 68"))
        // Replacing a unit pcscd had powered nothing on: the tag is reported at the first poll.
        let idle = SimulatedACR122U(field: field, name: "ACS ACR122U PICC Interface 01 00")
        let next = SimulatedACR122U(field: field, name: "ACS ACR122U PICC Interface 01 00")
        next.takeOverPCSCSession(from: idle)
        idle.detach()
        #expect(next.isCardPresent())
    }

    @Test("protocol negotiation: T=1 for contactless cards; the legacy personality offers T=0 only")
    func protocols() throws {
        let field = fastField()
        field.place(ISO14443_4Card(uid: hex("04 11 22 33")) { _ in [0x90, 0x00] })
        let modern = SimulatedACR122U(field: field)
        _ = try modern.powerUp()
        #expect(throws: IFDError.protocolNotSupported) { try modern.setProtocol(1) }
        try modern.setProtocol(2)
        try modern.setProtocol(3)
        let legacy = SimulatedACR122U(field: field, personality: .legacyT0Firmware, name: "ACS ACR 38U-CCID 01 00")
        _ = try legacy.powerUp()
        #expect(throws: IFDError.protocolNotSupported) { try legacy.setProtocol(2) }
        try legacy.setProtocol(1)
    }

    @Test("T=0 personality: a Direct Transmit answer comes as 61 xx, xx counting the chip's 90 00, and is fetched with FF C0 00 00 xx")
    func legacyT0() throws {
        let field = fastField()
        field.place(ISO14443_3Tag(uid: hex("01 02 03 04")))
        let reader = SimulatedACR122U(field: field, personality: .legacyT0Firmware)
        _ = try reader.powerUp()
        try reader.setProtocol(1)
        // libnfc's Touchatag trace (drivers/acr122_usb.c): 61 08, then eight bytes, the chip's
        // 90 00 last and no status word of the Get Response's own.
        #expect(try reader.transmit(wrapped("D4 02")) == hex("61 08"))
        #expect(try reader.transmit(hex("FF C0 00 00 08")) == hex("D5 03 32 01 06 07 90 00"))
        // Nothing left to fetch (U): 6A 81.
        #expect(try reader.transmit(hex("FF C0 00 00 08")) == hex("6A 81"))
        // A smaller Le (U): the first Le bytes and 61 rest; the rest comes with the next one.
        #expect(try reader.transmit(wrapped("D4 02")) == hex("61 08"))
        #expect(try reader.transmit(hex("FF C0 00 00 05")) == hex("D5 03 32 01 06 61 03"))
        #expect(try reader.transmit(hex("FF C0 00 00 03")) == hex("07 90 00"))
        // A larger Le, or Le 00 (U): the whole answer.
        #expect(try reader.transmit(wrapped("D4 02")) == hex("61 08"))
        #expect(try reader.transmit(hex("FF C0 00 00 20")) == hex("D5 03 32 01 06 07 90 00"))
        #expect(try reader.transmit(wrapped("D4 02")) == hex("61 08"))
        #expect(try reader.transmit(hex("FF C0 00 00 00")) == hex("D5 03 32 01 06 07 90 00"))
        // A failure is not announced: 63 00 comes at once (acr122_pcsc reads 63 as an error).
        #expect(try reader.transmit(hex("FF 00 00 00 01 D4 02")) == hex("63 00"))
        // The firmware string still has no status word.
        #expect(try reader.transmit(hex("FF 00 48 00 00")) == Array("ACR122U103".utf8))
        // Through the client, which follows 61 xx itself.
        let pn532 = PN532(link: ACR122Link(channel: try SimulatedReaderChannel(reader, protocol: .t0)))
        #expect(try pn532.send(PN532.GetFirmwareVersion()).version == 0x01)
    }

    @Test("Get UID / Get ATS: UID 90 00; ATS of an ISO 14443-4 card; 6A 81 for a MIFARE tag")
    func getData() throws {
        let field = fastField()
        let card = ISO14443_4Card(uid: hex("04 A1 B2 C3 D4 E5 F6"), atqa: 0x0344, ats: hex("06 75 77 81 02 80")) { _ in [0x90, 0x00] }
        field.place(card)
        let reader = SimulatedACR122U(field: field)
        let channel = try SimulatedReaderChannel(reader, protocol: .t1)
        #expect(try channel.transmit(hex("FF CA 00 00 00")) == hex("04 A1 B2 C3 D4 E5 F6 90 00"))
        #expect(try channel.transmit(hex("FF CA 01 00 00")) == hex("06 75 77 81 02 80 90 00"))
        #expect(try channel.transmit(hex("FF CA 00 00 04")) == hex("6C 07"))
        field.remove(card)
        field.place(ISO14443_3Tag(uid: hex("01 02 03 04")))
        let tagChannel = try SimulatedReaderChannel(SimulatedACR122U(field: field, name: "second"), protocol: .t1)
        #expect(try tagChannel.transmit(hex("FF CA 00 00 00")) == hex("01 02 03 04 90 00"))
        #expect(try tagChannel.transmit(hex("FF CA 01 00 00")) == hex("6A 81"))
        // A card APDU to a tag without ISO-DEP: the operation fails.
        #expect(try tagChannel.transmit(hex("00 A4 04 00 00")) == hex("63 00"))
    }

    @Test("card APDUs go to the polled ISO 14443-4 card (automatic polling, T=1)")
    func cardAPDUs() throws {
        let field = fastField()
        let card = ISO14443_4Card(uid: hex("04 11 22 33")) { apdu in apdu.first == 0x00 ? [0x6A, 0x82] : [0x6E, 0x00] }
        field.place(card)
        let reader = SimulatedACR122U(field: field)
        let channel = try SimulatedReaderChannel(reader, protocol: .t1)
        #expect(try channel.transmit(hex("00 A4 04 00 07 A0 00 00 00 04 10 10 00")) == hex("6A 82"))
        #expect(card.receivedAPDUs == [hex("00 A4 04 00 07 A0 00 00 00 04 10 10 00")])
        field.remove(card)
        #expect(throws: PCSCError.noSmartcard) { try channel.transmit(hex("00 A4 04 00 00")) }
    }
}
