import ACR122Simulator
import ISO7816
import SecbridgeTesting
import Testing

/// MIFARE Classic value blocks through the ACR122U's pseudo-APDUs FF D7 / FF B1 (ACR122U API v2.04
/// §5.5–§5.7) and on air C1/C0/C2/B0 (MF1S50YYX_V1 §10; docs/acr122-clones.md §5).
@Suite("MIFARE Classic value blocks")
struct ValueBlockTests {
    /// A Classic 1K with the transport keys, connected, key A loaded and sector 1 authenticated.
    static func authenticatedCard() throws -> SimulatedACR122U {
        let field = fastField()
        field.place(try ISO14443_3Tag(classic: .classic1K, uid: hex("04 A1 B2 C3")))
        let reader = SimulatedACR122U(field: field)
        _ = try reader.powerUp()
        #expect(text(try reader.transmit(hex("FF 82 00 00 06 FF FF FF FF FF FF"))) == "90 00")
        #expect(text(try reader.transmit(hex("FF 86 00 00 05 01 00 04 60 00"))) == "90 00")
        return reader
    }

    @Test("store, read, increment, decrement and restore, with the value-block layout on the card")
    func valueOperations() throws {
        let reader = try Self.authenticatedCard()
        // Store 100 (00 00 00 64, MSB first) in block 4.
        #expect(text(try reader.transmit(hex("FF D7 00 04 05 00 00 00 00 64"))) == "90 00")
        // On the card: value LSB first three times (the middle inverted), address 04 four times.
        #expect(text(try reader.transmit(hex("FF B0 00 04 10"))) == "64 00 00 00 9B FF FF FF 64 00 00 00 04 FB 04 FB 90 00")
        #expect(text(try reader.transmit(hex("FF B1 00 04 04"))) == "00 00 00 64 90 00")
        #expect(text(try reader.transmit(hex("FF D7 00 04 05 01 00 00 01 05"))) == "90 00")
        #expect(text(try reader.transmit(hex("FF B1 00 04 04"))) == "00 00 01 69 90 00")
        #expect(text(try reader.transmit(hex("FF D7 00 04 05 02 00 00 02 00"))) == "90 00")
        #expect(text(try reader.transmit(hex("FF B1 00 04 04"))) == "FF FF FF 69 90 00")
        // Restore block 4 into block 5: the value and block 4's address byte.
        #expect(text(try reader.transmit(hex("FF D7 00 04 02 03 05"))) == "90 00")
        #expect(text(try reader.transmit(hex("FF B0 00 05 10"))) == "69 FF FF FF 96 00 00 00 69 FF FF FF 04 FB 04 FB 90 00")
    }

    @Test("refusals: a block not in value-block format, overflow, a trailer, no authentication")
    func refusals() throws {
        let reader = try Self.authenticatedCard()
        // Block 6 is all zeros: no value block.
        #expect(text(try reader.transmit(hex("FF B1 00 06 04"))) == "63 00")
        #expect(text(try reader.transmit(hex("FF D7 00 06 05 01 00 00 00 01"))) == "63 00")
        // 7FFFFFFF + 1 overflows; the card NAKs and drops the authentication.
        #expect(text(try reader.transmit(hex("FF 86 00 00 05 01 00 04 60 00"))) == "90 00")
        #expect(text(try reader.transmit(hex("FF D7 00 04 05 00 7F FF FF FF"))) == "90 00")
        #expect(text(try reader.transmit(hex("FF D7 00 04 05 01 00 00 00 01"))) == "63 00")
        #expect(text(try reader.transmit(hex("FF B1 00 04 04"))) == "63 00")
        #expect(text(try reader.transmit(hex("FF 86 00 00 05 01 00 04 60 00"))) == "90 00")
        #expect(text(try reader.transmit(hex("FF B1 00 04 04"))) == "7F FF FF FF 90 00")
        // The trailer (block 7) is never a value block; a bad op byte or Lc fails.
        #expect(text(try reader.transmit(hex("FF D7 00 07 05 00 00 00 00 01"))) == "63 00")
        #expect(text(try reader.transmit(hex("FF 86 00 00 05 01 00 04 60 00"))) == "90 00")
        #expect(text(try reader.transmit(hex("FF D7 00 04 05 07 00 00 00 01"))) == "63 00")
        #expect(text(try reader.transmit(hex("FF D7 00 04 04 01 00 00 00"))) == "63 00")
    }

    /// libfreefare's value-block tests (test/test_mifare_classic.c: increment, decrement, restore),
    /// with the commands libfreefare/mifare_classic.c builds (`mifare_classic_init_value` a WRITE
    /// A0 of the value-block layout, `increment` C1 / `decrement` C0 with the amount LSB first,
    /// `restore` C2 with four zero bytes, `transfer` B0, `read_value` a READ 30) as libnfc's
    /// acr122_pcsc driver sends them on a T=1 connection: Direct Transmit of InDataExchange
    /// `D4 40 01 …` through SCardTransmit. Each value command and TRANSFER answers `D5 41 00 90 00`
    /// (status 00, no data: the card's silence after the operand is its success, MF1S50YYX_V1
    /// §10; libfreefare takes no data or 0A from TRANSFER); a READ gives the 16 block bytes.
    @Test("libfreefare's value-block sequence through Direct Transmit InDataExchange: the block bytes after each TRANSFER")
    func libfreefareValueBlockSequence() throws {
        let field = fastField()
        field.place(try ISO14443_3Tag(classic: .classic1K, uid: hex("04 A1 B2 C3")))
        let reader = SimulatedACR122U(field: field)
        _ = try reader.powerUp()
        func exchange(_ frame: String) throws -> String { text(try reader.transmit(wrapped(frame))) }
        let done = "D5 41 00 90 00"
        func read(_ block: String) throws -> String {
            let answer = try exchange("D4 40 01 30 \(block)")
            #expect(answer.hasPrefix("D5 41 00 ") && answer.hasSuffix(" 90 00"), "\(answer)")
            return String(answer.dropFirst(9).dropLast(6))
        }
        #expect(try exchange("D4 4A 01 00") == "D5 4B 01 01 00 04 08 04 04 A1 B2 C3 90 00")
        #expect(try exchange("D4 40 01 60 04 FF FF FF FF FF FF 04 A1 B2 C3") == done)
        // Increment: init_value(1000, adr 00), +1, +10.
        #expect(try exchange("D4 40 01 A0 04 E8 03 00 00 17 FC FF FF E8 03 00 00 00 FF 00 FF") == done)
        #expect(try read("04") == "E8 03 00 00 17 FC FF FF E8 03 00 00 00 FF 00 FF")
        #expect(try exchange("D4 40 01 C1 04 01 00 00 00") == done)
        // INCREMENT alone changes nothing on the card: the result waits in the transfer buffer.
        #expect(try read("04") == "E8 03 00 00 17 FC FF FF E8 03 00 00 00 FF 00 FF")
        #expect(try exchange("D4 40 01 C1 04 01 00 00 00") == done)
        #expect(try exchange("D4 40 01 B0 04") == done)
        #expect(try read("04") == "E9 03 00 00 16 FC FF FF E9 03 00 00 00 FF 00 FF")  // 1001
        #expect(try exchange("D4 40 01 C1 04 0A 00 00 00") == done)
        #expect(try exchange("D4 40 01 B0 04") == done)
        #expect(try read("04") == "F3 03 00 00 0C FC FF FF F3 03 00 00 00 FF 00 FF")  // 1011
        // Decrement: init_value(1000), −1, −1000.
        #expect(try exchange("D4 40 01 A0 04 E8 03 00 00 17 FC FF FF E8 03 00 00 00 FF 00 FF") == done)
        #expect(try exchange("D4 40 01 C0 04 01 00 00 00") == done)
        #expect(try exchange("D4 40 01 B0 04") == done)
        #expect(try read("04") == "E7 03 00 00 18 FC FF FF E7 03 00 00 00 FF 00 FF")  // 999
        #expect(try exchange("D4 40 01 C0 04 E8 03 00 00") == done)
        #expect(try exchange("D4 40 01 B0 04") == done)
        #expect(try read("04") == "FF FF FF FF 00 00 00 00 FF FF FF FF 00 FF 00 FF")  // −1
        // Restore: block 4 holds libfreefare's sample, block 5 its "nul" block; RESTORE 4,
        // TRANSFER 5, and block 5 reads as the sample, address bytes included.
        #expect(try exchange("D4 40 01 A0 04 E8 03 00 00 17 FC FF FF E8 03 00 00 00 FF 00 FF") == done)
        #expect(try exchange("D4 40 01 A0 05 00 00 00 00 FF FF FF FF 00 00 00 00 00 FF 00 FF") == done)
        #expect(try exchange("D4 40 01 C2 04 00 00 00 00") == done)
        #expect(try exchange("D4 40 01 B0 05") == done)
        #expect(try read("05") == "E8 03 00 00 17 FC FF FF E8 03 00 00 00 FF 00 FF")
        // ACS's ACR122S/ACR122L manuals: value 101 in block 5 with address 05, RESTORE 05 sent
        // without an operand, TRANSFER 06; block 6 then reads `… 05 FA 05 FA`, the source's address.
        #expect(try exchange("D4 40 01 A0 05 65 00 00 00 9A FF FF FF 65 00 00 00 05 FA 05 FA") == done)
        #expect(try exchange("D4 40 01 C2 05") == done)
        #expect(try exchange("D4 40 01 B0 06") == done)
        #expect(try read("06") == "65 00 00 00 9A FF FF FF 65 00 00 00 05 FA 05 FA")
        // The pseudo-APDU Read Value Block sees the same value (MSB first): 101.
        #expect(text(try reader.transmit(hex("FF 82 00 00 06 FF FF FF FF FF FF"))) == "90 00")
        #expect(text(try reader.transmit(hex("FF 86 00 00 05 01 00 06 60 00"))) == "90 00")
        #expect(text(try reader.transmit(hex("FF B1 00 06 04"))) == "00 00 00 65 90 00")
    }

    @Test("MIFAREClassicMemory.value(ofBlock:) reads only the value-block layout")
    func layout() {
        let block = MIFAREClassicMemory.valueBlock(-1, address: 0x09)
        #expect(text(block) == "FF FF FF FF 00 00 00 00 FF FF FF FF 09 F6 09 F6")
        #expect(MIFAREClassicMemory.value(ofBlock: block)?.value == -1)
        var broken = block
        broken[13] = 0x09
        #expect(MIFAREClassicMemory.value(ofBlock: broken) == nil)
    }
}
