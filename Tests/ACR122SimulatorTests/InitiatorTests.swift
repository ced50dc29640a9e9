import ACR122Simulator
import ISO7816
import PN53x
import SecbridgeTesting
import Testing

@Suite("PN532 initiator role against placed peers")
struct InitiatorTests {
    @Test("InListPassiveTarget reply bytes for a DESFire-like card, then an APDU through InDataExchange")
    func listAndExchange() throws {
        let field = fastField()
        let card = ISO14443_4Card(uid: hex("04 A1 B2 C3 D4 E5 F6"), atqa: 0x0344, ats: hex("06 75 77 81 02 80")) { apdu in
            apdu == hex("00 A4 04 00 07 D2 76 00 00 85 01 01 00") ? [0x90, 0x00] : [0x6A, 0x82]
        }
        field.place(card)
        let reader = SimulatedACR122U(field: field)
        // SENS_RES most significant byte first; the ATS with its TL.
        #expect(text(try reader.control(code: 0x4200_0001, wrapped("D4 4A 01 00")))
            == "D5 4B 01 01 03 44 20 07 04 A1 B2 C3 D4 E5 F6 06 75 77 81 02 80 90 00")
        let pn532 = try directPN532(reader)
        let target = try #require(try pn532.pollISO14443A())
        #expect(target.uid == hex("04 A1 B2 C3 D4 E5 F6"))
        #expect(target.atqa == ATQA(rawValue: 0x0344))
        #expect(target.ats == hex("06 75 77 81 02 80"))
        #expect(try pn532.exchangeAPDU(hex("00 A4 04 00 07 D2 76 00 00 85 01 01 00")) == hex("90 00"))
        #expect(try pn532.exchangeAPDU(hex("00 A4 04 00 02 3F 00")) == hex("6A 82"))
        #expect(card.receivedAPDUs.count == 2)
        try pn532.release()
        #expect(text(try reader.control(code: 0x4200_0001, wrapped("D4 40 01 00 B0 00 00 00"))) == "D5 41 27 90 00")
    }

    @Test("with a card connected (T=1), PN532 commands go through SCardTransmit as libnfc sends them")
    func pn532OverTransmit() throws {
        let field = fastField()
        field.place(ISO14443_4Card(uid: hex("04 11 22 33")) { _ in [0x90, 0x00] })
        let reader = SimulatedACR122U(field: field)
        let pn532 = PN532(link: ACR122Link(channel: try SimulatedReaderChannel(reader, protocol: .t1)))
        let target = try #require(try pn532.pollISO14443A())
        #expect(target.uid == hex("04 11 22 33"))
        #expect(try pn532.exchangeAPDU(hex("00 A4 04 00 00")) == hex("90 00"))
        #expect(try reader.transmit(hex("FF CA 00 00 00")) == hex("04 11 22 33 90 00"))
    }

    @Test("long answers and commands are chained with MI (frame cap 251 data bytes)")
    func chaining() throws {
        let field = fastField()
        let long = (0..<300).map { UInt8($0 & 0xFF) } + [0x90, 0x00]
        let card = ISO14443_4Card(uid: hex("04 11 22 33")) { apdu in apdu.count > 5 ? [0x90, 0x00] : long }
        field.place(card)
        let reader = SimulatedACR122U(field: field)
        let pn532 = try directPN532(reader)
        _ = try #require(try pn532.pollISO14443A())
        // The raw first frame: status 40 (MI) and 251 bytes.
        let first = try reader.control(code: 0x4200_0001, wrapped("D4 40 01 00 B0 00 00 00"))
        #expect(Array(first.prefix(3)) == hex("D5 41 40"))
        #expect(first.count == 3 + 251 + 2)
        let second = try reader.control(code: 0x4200_0001, wrapped("D4 40 01"))
        #expect(Array(second.prefix(3)) == hex("D5 41 00"))
        #expect(Array(first[3..<254]) + Array(second[3..<(second.count - 2)]) == long)
        // Through the client both ways.
        #expect(try pn532.exchangeAPDU(hex("00 B0 00 00 00")) == long)
        let bigCommand = [0x00, 0xD6, 0x00, 0x00, 0xFF] + [UInt8](repeating: 0xAB, count: 255)
        #expect(try pn532.exchangeAPDU(bigCommand) == hex("90 00"))
        #expect(card.receivedAPDUs.last == bigCommand)
    }

    @Test("no card and finite retries: NbTg 00; an ISO 14443-3 tag answers InDataExchange with status 01")
    func tagsAndNothing() throws {
        let field = fastField()
        let reader = SimulatedACR122U(field: field)
        let pn532 = try directPN532(reader)
        #expect(try pn532.pollISO14443A(passiveActivationRetries: 0x01) == nil)
        field.place(ISO14443_3Tag(uid: hex("01 02 03 04")))
        #expect(text(try reader.control(code: 0x4200_0001, wrapped("D4 4A 01 00"))) == "D5 4B 01 01 00 04 08 04 01 02 03 04 90 00")
        #expect(throws: PN532Error.chipError(PN532Status(rawValue: 0x01), command: .inDataExchange)) {
            try pn532.exchangeAPDU(hex("00 A4 04 00 00"))
        }
        // docs/cases.md P08 row 3: MIFARE authentication with key A to block 0 succeeds.
        #expect(text(try reader.control(code: 0x4200_0001, hex("FF 00 00 00 0F D4 40 01 60 00 A0 A1 A2 A3 A4 A5 01 02 03 04")))
            == "D5 41 00 90 00")
    }

    @Test("InListPassiveTarget with infinite retries and no card: 63 00 when the MCU timeout passes")
    func infiniteRetriesMCUTimeout() throws {
        let reader = SimulatedACR122U(field: fastField())
        #expect(try reader.control(code: 0x4200_0001, wrapped("D4 32 05 00 01 FF")) == hex("D5 33 90 00"))
        #expect(try reader.control(code: 0x4200_0001, wrapped("D4 4A 01 00")) == hex("63 00"))
        // With no MCU timeout, libccid's 30 s timeout ends the call: 0x80100016.
        #expect(try reader.control(code: 0x4200_0001, hex("FF 00 41 FF 00")) == hex("90 00"))
        #expect(throws: IFDError.communicationError) { try reader.control(code: 0x4200_0001, wrapped("D4 4A 01 00")) }
    }

    @Test("late reply: the answer to command N arrives as the answer to N+1; the client resynchronises")
    func lateReply() throws {
        let reader = SimulatedACR122U(field: fastField())
        let pn532 = try directPN532(reader)
        // A first escape command succeeds, so the link reads a later 0x80100016 as a timeout, not as the refusal of docs/cases.md P09.
        _ = try pn532.send(PN532.GetFirmwareVersion())
        reader.injectLateReply()
        #expect(throws: PCSCError.notTransacted) {
            try pn532.send(PN532.RFConfiguration(.rfField(on: true)))
        }
        #expect(throws: PN532Error.desynchronized(sent: .tgGetTargetStatus, received: hex("D5 33"))) {
            try pn532.send(PN532.TgGetTargetStatus())
        }
        let status = try pn532.send(PN532.TgGetTargetStatus())
        #expect(status.state == 0x00 && status.bitRates == 0x00)
        #expect(reader.isRFFieldOn)
    }

    @Test("registers and parameters: WriteRegister then ReadRegister, SetParameters, SAMConfiguration")
    func registers() throws {
        let reader = SimulatedACR122U(field: fastField())
        let pn532 = try directPN532(reader)
        try pn532.send(PN532.WriteRegister([.init(address: 0x6305, value: 0x04), .init(address: 0x633D, value: 0x07)]))
        // 6302 (TxMode), not written, reads 80 as automatic polling left it (docs/acr122-pn532.md §4b).
        #expect(try pn532.send(PN532.ReadRegister([0x6305, 0x633D, 0x6302])) == [0x04, 0x07, 0x80])
        #expect(reader.register(0x6305) == 0x04)
        try pn532.send(PN532.SetParameters([.automaticRATS, .iso14443_4PICC]))
        try pn532.send(PN532.SAMConfiguration(mode: .normal, timeoutIn50Milliseconds: 0x14, useIRQ: true))
        #expect(try reader.control(code: 0x4200_0001, wrapped("D4 06 63")) == hex("63 00"))
    }
}
