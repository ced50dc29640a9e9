import ISO7816
import SecbridgeTesting
import Testing
@testable import NFCTags

// MIFARE Classic access bits and the dump file layouts (docs/storage-card-dumps.md §1–§3).

@Suite struct StorageCardDumpTests {
    @Test func transportAccessBitsDecodeAsDataOpenAndTrailer001() throws {
        // FF 07 80: data blocks 000, trailer 001 (MF1S50yyX §8.7.1).
        let conditions = try #require(MifareAccessConditions(bytes: hex("FF 07 80 69")))
        #expect(conditions.groups == [0b000, 0b000, 0b000, 0b001])
        #expect(conditions.bytes == hex("FF 07 80"))
        #expect(conditions.keyBReadable)
        #expect(MifareAccessConditions.trailer(conditions.groups[3]).writeAccessBits == .keyA)
    }

    @Test func everyConsistentEncodingRoundTripsAndEveryOtherIsRefused() {
        // 4 groups × 3 bits: 4096 consistent encodings; of the 2^24 byte triples only they decode.
        var seen = Set<[UInt8]>()
        for value in 0..<4096 {
            let groups = (0..<4).map { UInt8((value >> ($0 * 3)) & 0x07) }
            let bytes = MifareAccessConditions(groups: groups).bytes
            #expect(MifareAccessConditions(bytes: bytes)?.groups == groups)
            seen.insert(bytes)
        }
        #expect(seen.count == 4096)
        // One bit flipped in any byte breaks the bit / inverted-bit pairing.
        for bit in 0..<24 {
            var bytes = hex("FF 07 80")
            bytes[bit / 8] ^= 1 << UInt8(bit % 8)
            #expect(MifareAccessConditions(bytes: bytes) == nil, "bit \(bit)")
        }
    }

    @Test func dataBlockAndTrailerTablesFollowTheDataSheet() {
        // MF1S50yyX §8.7.3 table 8: 100 read A|B, write B; 011 read B, write B; 111 never.
        #expect(MifareAccessConditions.dataBlock(0b100) == .init(read: .keyAOrB, write: .keyB))
        #expect(MifareAccessConditions.dataBlock(0b011) == .init(read: .keyB, write: .keyB))
        #expect(MifareAccessConditions.dataBlock(0b111) == .init(read: .never, write: .never))
        // §8.7.2 table 7: 011 lets key B write key A, the access bits and key B.
        let rules = MifareAccessConditions.trailer(0b011)
        #expect(rules.writeKeyA == .keyB && rules.writeAccessBits == .keyB && rules.writeKeyB == .keyB && rules.readKeyB == .never)
        // A 16-block sector of a 4K card: blocks 0–4 group 0, 5–9 group 1, 10–14 group 2, 15 trailer.
        #expect([0, 4, 5, 9, 10, 14, 15].map { MifareAccessConditions.group(ofOffset: $0, blocksInSector: 16) } == [0, 0, 1, 1, 2, 2, 3])
    }

    @Test func dumpSizesAreLibnfcs() throws {
        // nfc-mfclassic: 16 bytes per block; nfc-mfultralight: 4 bytes per page (docs/storage-card-dumps.md §1).
        #expect(try MifareClassicDump(kind: .mifareClassic1K, bytes: [UInt8](repeating: 0, count: 1024)).sectorCount == 16)
        #expect(try MifareClassicDump(kind: .mifareClassic4K, bytes: [UInt8](repeating: 0, count: 4096)).sectorCount == 40)
        #expect(try MifareClassicDump(kind: .mifareMini, bytes: [UInt8](repeating: 0, count: 320)).sectorCount == 5)
        #expect(throws: StorageDumpError(.wrongFileSize, "")) {
            try MifareClassicDump(kind: .mifareClassic1K, bytes: [UInt8](repeating: 0, count: 4096))
        }
        #expect(Type2TagLayout(product: .ntag213).pageCount == 45)
        #expect(Type2TagLayout(product: .ntag215).pageCount == 135)
        #expect(Type2TagLayout(product: .ntag216).pageCount == 231)
        #expect(Type2TagLayout(product: nil).pageCount == 16)
        #expect(Type2TagLayout(product: .ntag216).dynamicLockPage == 0xE2)
        do {
            _ = try Type2TagDump(layout: Type2TagLayout(product: .ntag215), bytes: [UInt8](repeating: 0, count: 180), file: "t.bin")
            Issue.record("a 180-byte file is not an NTAG215 dump")
        } catch {
            #expect(error.reason == "t.bin is 180 bytes (the size of a NTAG213 dump): a NTAG215 dump in libnfc's layout is 540 bytes (135 pages of 4)")
        }
    }

    @Test func ntag213DynamicLockBitsLockTwoPagesEach() {
        // 03 00 00 locks pages 16–19 (docs/storage-card-dumps.md §3); 00 00 3F only block-locking bits.
        let layout = Type2TagLayout(product: .ntag213)
        let locked = (16...39).filter { layout.isLocked(page: $0, lockBytes: [0, 0], dynamicLock: [0x03, 0x00, 0x00]) }
        #expect(locked == [16, 17, 18, 19])
        #expect((16...39).filter { layout.isLocked(page: $0, lockBytes: [0, 0], dynamicLock: [0x00, 0x00, 0x3F]) }.isEmpty)
        #expect((16...39).filter { layout.isLocked(page: $0, lockBytes: [0, 0], dynamicLock: [0x00, 0x08, 0x00]) } == [38, 39])
        // Static: lock byte 0 bit 3 locks the CC, bit 4 page 4; lock byte 1 bit 7 page 15.
        #expect(layout.isLocked(page: 3, lockBytes: [0x08, 0], dynamicLock: []))
        #expect(layout.isLocked(page: 4, lockBytes: [0x10, 0], dynamicLock: []))
        #expect(layout.isLocked(page: 15, lockBytes: [0, 0x80], dynamicLock: []))
        #expect(!layout.isLocked(page: 5, lockBytes: [0x10, 0], dynamicLock: []))
        // NTAG215: no page mapping in docs/, so any dynamic lock bit refuses every page from 16.
        let ntag215 = Type2TagLayout(product: .ntag215)
        #expect(ntag215.isLocked(page: 0x81, lockBytes: [0, 0], dynamicLock: [0x00, 0x80, 0x00]))
        #expect(!ntag215.isLocked(page: 0x81, lockBytes: [0, 0], dynamicLock: [0x00, 0x00, 0xFF]))
    }
}
