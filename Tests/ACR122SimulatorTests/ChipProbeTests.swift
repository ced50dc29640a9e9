import ACR122Simulator
import ISO7816
import PN53x
import SecbridgeTesting
import Testing

/// What clients probe on the PN532 (docs/acr122-pn532.md §4b) and the MCU's answers around it
/// (§2, §3), byte for byte.
@Suite("PN532 answers a client probes")
struct ChipProbeTests {
    func send(_ reader: SimulatedACR122U, _ frame: String) throws -> String {
        text(try reader.control(code: 0x4200_0001, wrapped(frame)))
    }

    @Test("Diagnose 00 echoes libnfc's and nfcpy's line tests; ROM and RAM tests answer 00")
    func diagnose() throws {
        let reader = SimulatedACR122U(field: fastField())
        // libnfc pn53x_check_communication: 00 "libnfc" → 00 "libnfc".
        #expect(try send(reader, "D4 00 00 6C 69 62 6E 66 63") == "D5 01 00 6C 69 62 6E 66 63 90 00")
        // pn53x-diagnose: 00 06 "libnfc" comes back whole.
        #expect(try send(reader, "D4 00 00 06 6C 69 62 6E 66 63") == "D5 01 00 06 6C 69 62 6E 66 63 90 00")
        // nfcpy: 00 and the 251 bytes 00 … FA (tests/test_clf_acr122.py).
        let counting = (0...0xFA).map { UInt8($0) }
        let answer = try reader.control(code: 0x4200_0001, [0xFF, 0x00, 0x00, 0x00, 254, 0xD4, 0x00, 0x00] + counting)
        #expect(answer == [0xD5, 0x01, 0x00] + counting + [0x90, 0x00])
        #expect(try send(reader, "D4 00 01") == "D5 01 00 90 00")
        #expect(try send(reader, "D4 00 02") == "D5 01 00 90 00")
        #expect(try send(reader, "D4 00 07 00") == "D5 01 00 90 00")
        // ROM test with an InParam, echo back (05): the MCU answers 63 00.
        #expect(try send(reader, "D4 00 01 00") == "63 00")
        #expect(try send(reader, "D4 00 05") == "63 00")
        #expect(try send(reader, "D4 00") == "63 00")
    }

    @Test("Diagnose 06: 00 while the ISO-DEP card is there, 01 once it left, 27 without one")
    func cardPresence() throws {
        let field = fastField()
        let card = ISO14443_4Card(uid: hex("04 11 22 33"), ats: hex("05 78 80 70 02")) { _ in [0x90, 0x00] }
        field.place(card)
        let reader = SimulatedACR122U(field: field)
        #expect(try send(reader, "D4 00 06") == "D5 01 27 90 00")
        _ = try send(reader, "D4 4A 01 00")
        #expect(try send(reader, "D4 00 06") == "D5 01 00 90 00")
        field.remove(card)
        #expect(try send(reader, "D4 00 06") == "D5 01 01 90 00")
    }

    @Test("GetGeneralStatus ends with the SAM status 80, with a target and without (ACR122T API v2.02 §7.5)")
    func generalStatus() throws {
        let field = fastField()
        let reader = SimulatedACR122U(field: field)
        #expect(try send(reader, "D4 04") == "D5 05 00 00 00 80 90 00")
        field.place(ISO14443_3Tag(uid: hex("04 A1 B2 C3")))
        _ = try send(reader, "D4 4A 01 00")
        // Err 00, no external field, one target: Tg 1 at 106 kbit/s both ways, type 00.
        #expect(try send(reader, "D4 04") == "D5 05 00 00 01 01 00 00 00 80 90 00")
    }

    @Test("ReadRegister answers the values automatic polling left until the host writes them")
    func registersAfterPolling() throws {
        let reader = SimulatedACR122U(field: fastField())
        // The public ACR122U trace: 6305 07, 630D 07, 6338 15.
        #expect(try send(reader, "D4 06 63 05 63 0D 63 38") == "D5 07 07 07 15 90 00")
        // What libnfc's write-back reads at nfc_initiator_init: TxMode, RxMode (CRC on), Control, BitFraming.
        #expect(try send(reader, "D4 06 63 02 63 03 63 3C 63 3D") == "D5 07 80 80 10 00 90 00")
        #expect(try send(reader, "D4 08 63 02 00") == "D5 09 90 00")
        #expect(try send(reader, "D4 06 63 02 63 01") == "D5 07 00 00 90 00")
    }

    /// libnfc issue 691: nfc-relay-picc's target init on an ACR122U that libnfc's acr122_usb
    /// driver opened (polling off with FF 00 51 00 00), byte for byte as the log shows it.
    @Test("ReadRegister right after RF off on a unit with polling off: 6338 633D 00 00, 6305 00 (libnfc issue 691)")
    func registersAfterRFOffWithoutPolling() throws {
        let reader = SimulatedACR122U(field: fastField())
        #expect(text(try reader.control(code: 0x4200_0001, hex("FF 00 51 00 00"))) == "90 00")
        #expect(try send(reader, "D4 02") == "D5 03 32 01 06 07 90 00")
        #expect(try send(reader, "D4 12 14") == "D5 13 90 00")
        #expect(try send(reader, "D4 32 01 00") == "D5 33 90 00")
        #expect(try send(reader, "D4 06 63 38 63 3D") == "D5 07 00 00 90 00")
        #expect(try send(reader, "D4 12 10") == "D5 13 90 00")
        #expect(try send(reader, "D4 12 30") == "D5 13 90 00")
        #expect(try send(reader, "D4 06 63 05") == "D5 07 00 90 00")
        // A host write still wins; the registers the log does not show keep the polling values.
        #expect(try send(reader, "D4 08 63 05 04") == "D5 09 90 00")
        #expect(try send(reader, "D4 06 63 05 63 0D 63 02") == "D5 07 04 07 80 90 00")
        // Polling on again: the values automatic polling leaves (decision).
        #expect(text(try reader.control(code: 0x4200_0001, hex("FF 00 51 FF 00"))) == "90 FF")
        #expect(try send(reader, "D4 06 63 38") == "D5 07 15 90 00")
    }

    @Test("RF off while automatic polling runs keeps the polling values (decision: no log shows that case)")
    func rfOffWhilePolling() throws {
        let reader = SimulatedACR122U(field: fastField())
        #expect(try send(reader, "D4 32 01 00") == "D5 33 90 00")
        #expect(try send(reader, "D4 06 63 05 63 0D 63 38") == "D5 07 07 07 15 90 00")
    }

    @Test("InAutoPoll as nfc-poll sends it reports an NTAG as type 10 and a DESFire as type 20 with its ATS")
    func autoPoll() throws {
        let field = fastField()
        let reader = SimulatedACR122U(field: field)
        // nothing in the field: 1 round, period 1, one type → NbTg 00 after 150 ms (simulated).
        #expect(try send(reader, "D4 60 01 01 10") == "D5 61 00 90 00")
        let tag = try ISO14443_3Tag(type2: .ntag213, uid: hex("04 A1 B2 C3 D4 E5 F6"))
        field.place(tag)
        // libnfc's nfc-poll: 20 rounds, period 2, types 20 10 03 11 12 04 03.
        #expect(try send(reader, "D4 60 14 02 20 10 03 11 12 04 03")
            == "D5 61 01 10 0C 01 00 44 00 07 04 A1 B2 C3 D4 E5 F6 90 00")
        // The tag is now target 1: a READ of page 0 through InDataExchange (nfc-poll's presence check).
        #expect(try send(reader, "D4 40 01 30 00").hasPrefix("D5 41 00 04 A1 B2"))
        field.remove(tag)
        field.place(ISO14443_4Card(uid: hex("04 11 22 33 44 55 66"), atqa: 0x0344, ats: hex("06 75 77 81 02 80")) { _ in [0x90, 0x00] })
        #expect(try send(reader, "D4 60 14 02 20 10 03 11 12 04 03")
            == "D5 61 01 20 12 01 03 44 20 07 04 11 22 33 44 55 66 06 75 77 81 02 80 90 00")
        // MIFARE type only: the same card without RATS, so no ATS.
        #expect(try send(reader, "D4 60 01 01 10") == "D5 61 01 10 0C 01 03 44 20 07 04 11 22 33 44 55 66 90 00")
        // PollNr 00, a period outside 01–0F, no type: 63 00.
        #expect(try send(reader, "D4 60 00 01 10") == "63 00")
        #expect(try send(reader, "D4 60 01 10 10") == "63 00")
        #expect(try send(reader, "D4 60 01 01") == "63 00")
    }

    @Test("raw anticollision as nfc-anticol sends it: REQA in 7 bits, two cascade levels, SAK with CRC_A, then RATS")
    func rawAnticollision() throws {
        let field = fastField()
        field.place(try ISO14443_3Tag(type2: .ntag213, uid: hex("04 A1 B2 C3 D4 E5 F6")))
        let reader = SimulatedACR122U(field: field)
        // CRC handling off both ways, 7 bits in the last byte (TxLastBits).
        #expect(try send(reader, "D4 08 63 02 00 63 03 00 63 3D 07") == "D5 09 90 00")
        #expect(try send(reader, "D4 42 26") == "D5 43 00 44 00 90 00")  // ATQA 0044, LSB first
        #expect(try send(reader, "D4 08 63 3D 00") == "D5 09 90 00")
        // Level 1: CT 88 and the first three UID bytes, BCC 9F; SAK 04 (UID not complete) + CRC_A.
        #expect(try send(reader, "D4 42 93 20") == "D5 43 00 88 04 A1 B2 9F 90 00")
        #expect(try send(reader, "D4 42 93 70 88 04 A1 B2 9F AE 4B") == "D5 43 00 04 DA 17 90 00")
        // Level 2: the last four bytes, BCC 04; SAK 00 + CRC_A FE 51.
        #expect(try send(reader, "D4 42 95 20") == "D5 43 00 C3 D4 E5 F6 04 90 00")
        #expect(try send(reader, "D4 42 95 70 C3 D4 E5 F6 04 9E 03") == "D5 43 00 00 FE 51 90 00")
        // A SELECT with a wrong CRC_A leaves the tag mute.
        #expect(try send(reader, "D4 42 95 70 C3 D4 E5 F6 04 00 00") == "D5 43 01 90 00")
        // A REQA sent as whole bytes is no REQA: the tag (now selected) does not know 26.
        #expect(try send(reader, "D4 42 26") == "D5 43 01 90 00")

        let cardField = fastField()
        cardField.place(ISO14443_4Card(uid: hex("04 A1 B2 C3"), ats: hex("05 78 80 70 02")) { _ in [0x90, 0x00] })
        let cardReader = SimulatedACR122U(field: cardField)
        _ = try send(cardReader, "D4 08 63 02 00 63 03 00")
        #expect(try send(cardReader, "D4 42 93 20") == "D5 43 00 04 A1 B2 C3 D4 90 00")
        // SAK 20 + CRC_A; then RATS E0 50 + CRC_A → the ATS with its CRC_A.
        // (CRC_A values per ISO/IEC 14443-3 Annex B, worked out independently of the simulator.)
        #expect(try send(cardReader, "D4 42 93 70 04 A1 B2 C3 D4 9B 05") == "D5 43 00 20 FC 70 90 00")
        #expect(try send(cardReader, "D4 42 E0 50 BC A5") == "D5 43 00 05 78 80 70 02 A5 46 90 00")
    }

    @Test("Direct Transmit with an Lc larger than its data passes the data on (nfc-pcsc issue 59)")
    func directTransmitLongLc() throws {
        let field = fastField()
        field.place(ISO14443_3Tag(uid: hex("04 A1 B2 C3 D4 E5 F6"), atqa: 0x0044, sak: 0x00))
        let reader = SimulatedACR122U(field: field)
        _ = try send(reader, "D4 4A 01 00")
        // 1A 00 (an Ultralight C authentication) through InCommunicateThru to a tag that does not
        // know it: no answer, status 01, as in the byte log.
        #expect(text(try reader.control(code: 0x4200_0001, hex("FF 00 00 00 16 D4 42 1A 00"))) == "D5 43 01 90 00")
        // An Lc smaller than the data: 63 00.
        #expect(text(try reader.control(code: 0x4200_0001, hex("FF 00 00 00 01 D4 02"))) == "63 00")
    }

    @Test("a tag whose SAK the reader has no name for shows FF SAK in the part 3 ATR", arguments: [
        (UInt8(0x88), "3B 8F 80 01 80 4F 0C A0 00 00 03 06 03 FF 88 00 00 00 00 1C"),
        (UInt8(0x28), "3B 8F 80 01 80 4F 0C A0 00 00 03 06 03 FF 28 00 00 00 00 BC"),
        (UInt8(0x08), "3B 8F 80 01 80 4F 0C A0 00 00 03 06 03 00 01 00 00 00 00 6A"),
        (UInt8(0x00), "3B 8F 80 01 80 4F 0C A0 00 00 03 06 03 00 03 00 00 00 00 68"),
    ])
    func undefinedSAK(_ sak: UInt8, _ atr: String) throws {
        // The expected ATRs are pcsc-tools' smartcard_list.txt entries (docs/acr122-pn532.md §3).
        let field = fastField()
        field.place(ISO14443_3Tag(uid: hex("04 A1 B2 C3"), sak: sak))
        let reader = SimulatedACR122U(field: field)
        #expect(text(try reader.powerUp()) == atr)
    }
}
