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
