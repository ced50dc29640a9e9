@testable import ACR122Simulator
import ISO7816
import NFCTags
import SecbridgeTesting
import Testing
import Transcript

/// One NDEF message for the NDEF Message TLV cross-check.
struct TLVCrossCheckVector: Sendable, CustomTestStringConvertible {
    var id: String
    var source: String
    var message: [UInt8]
    /// The TLV bytes, where the source gives them; nil when only the two copies are compared.
    var expected: String?
    var testDescription: String { id }
}

/// The simulator's storage-card arithmetic against NFCTags' (docs/iso14443-t4t-ndef.md §6).
///
/// ACR122Simulator keeps its own copy of the MIFARE Classic sector/block arithmetic, the NDEF
/// Message TLV and the Type 2 static lock bits on purpose: it is an oracle of the real card, and
/// must not be corrected by the code it checks. These tests compare the two copies over every
/// block and a set of vectors, so that neither can drift from the other unseen.
@Suite("The simulator's tag arithmetic agrees with NFCTags")
struct TagArithmeticCrossCheckTests {
    // MARK: MIFARE Classic

    @Test("MIFARE Classic: sector, first block and sector trailer of every block", arguments: MIFAREClassicModel.allCases)
    func mifareClassicLayout(_ model: MIFAREClassicModel) throws {
        #expect(StorageCardKind(cardName: model.cardName).classicBlockCount == model.blockCount)
        for block in 0..<model.blockCount {
            let sector = try #require(model.sector(ofBlock: block))
            #expect(MifareClassicLayout.sector(ofBlock: block) == sector, "block \(block)")
            #expect(MifareClassicLayout.firstBlock(ofSector: sector) == model.firstBlock(ofSector: sector), "block \(block)")
            #expect(MifareClassicLayout.isSectorTrailer(block) == (model.trailerBlock(ofSector: sector) == block), "block \(block)")
        }
        #expect(model.sector(ofBlock: model.blockCount) == nil)
        #expect(MifareClassicLayout.sector(ofBlock: model.blockCount - 1) == model.sectorCount - 1)
        for sector in 0..<model.sectorCount {
            #expect(MifareClassicLayout.firstBlock(ofSector: sector) == model.firstBlock(ofSector: sector), "sector \(sector)")
        }
    }

    @Test("the redactor masks the keys of exactly the simulator's sector trailers", arguments: MIFAREClassicModel.allCases)
    func redactorTrailers(_ model: MIFAREClassicModel) throws {
        let trailer = hex("A0 A1 A2 A3 A4 A5 FF 07 80 69 B0 B1 B2 B3 B4 B5")
        for block in 0..<model.blockCount {
            let sector = try #require(model.sector(ofBlock: block))
            let isTrailer = model.trailerBlock(ofSector: sector) == block
            let write = Redactor.default.redact([0xFF, 0xD6, 0x00, UInt8(block), 0x10] + trailer)
            #expect((write.bytes == nil) == isTrailer, "Update Binary of block \(block): keys masked only in a trailer")
            let read = [0xFF, 0xB0, 0x00, UInt8(block), 0x10] as [UInt8]
            let answer = Redactor.default.redact(response: trailer + [0x90, 0x00], answering: read)
            #expect((answer.bytes == nil) == isTrailer, "Read Binary of block \(block): key B masked only in a trailer")
        }
    }

    // MARK: Type 2 Tag

    static let tlvVectors: [TLVCrossCheckVector] = {
        func filler(_ count: Int) -> [UInt8] { (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 1) } }
        var vectors = [
            TLVCrossCheckVector(
                id: "URI https://example.com", source: "docs/iso14443-t4t-ndef.md §5–§6",
                message: hex("D1 01 0C 55 04 65 78 61 6D 70 6C 65 2E 63 6F 6D"),
                expected: "03 10 D1 01 0C 55 04 65 78 61 6D 70 6C 65 2E 63 6F 6D FE"),
            TLVCrossCheckVector(id: "empty message", source: "NFC Forum Type 2 Tag operation §2.3", message: [], expected: "03 00 FE"),
        ]
        // Around the 1-byte / 3-byte length boundary (FE is the last 1-byte length), and the NTAG
        // data areas (144, 496, 872 bytes).
        for count in [1, 2, 139, 253, 254, 255, 256, 300, 491, 867, 1000, 0x1234, 0xFFFE] {
            vectors.append(TLVCrossCheckVector(id: "\(count) bytes", source: "NFC Forum Type 2 Tag operation §2.3", message: filler(count)))
        }
        return vectors
    }()

    @Test("NDEF Message TLV and Terminator: the same bytes", arguments: tlvVectors)
    func ndefTLV(_ v: TLVCrossCheckVector) {
        let simulator = Type2TagMemory.ndefTLV(v.message)
        #expect(Type2TagWriter.tlvBytes(ndef: v.message) == simulator)
        if let expected = v.expected { #expect(simulator.hexString == expected) }
    }

    @Test("Type 2 static lock bits: every value of each lock byte, pages 4–30")
    func staticLockBits() throws {
        let uid = hex("04 A1 B2 C3 D4 E5 F6")
        var pairs: [(UInt8, UInt8)] = []
        for value in 0...255 {
            let b = UInt8(value)
            pairs += [(b, 0x00), (b, 0xFF), (0x00, b), (0xFF, b)]
        }
        let pages = 4...30
        for (lock0, lock1) in pairs {
            var memory = try Type2TagMemory(model: .ntag216, uid: uid)
            #expect(memory.write(page: 2, [0x00, 0x00, lock0, lock1]) == .ack)
            // The pages whose WRITE the simulated tag refuses, against the pages the writer refuses to use.
            let refused = pages.filter { page in
                var copy = memory
                return copy.write(page: page, [0x01, 0x02, 0x03, 0x04]) != .ack
            }
            #expect(Type2TagWriter.lockedPages(lockBytes: [lock0, lock1], in: pages) == refused,
                    "lock bytes \([lock0, lock1].hexString)")
        }
    }

    @Test("MIFARE Classic access bits: every byte triple 00…FF for bytes 7 and 8 with each byte 6, and every rule")
    func accessConditions() {
        func same(_ a: MIFAREAccessConditions.Permission, _ b: MifareAccessConditions.Permission) -> Bool {
            a.allows(keyB: false) == b.allows(.a) && a.allows(keyB: true) == b.allows(.b)
        }
        for b7 in 0...255 {
            for b8 in 0...255 {
                // Byte 6 as the consistent value and one wrong value.
                let c1 = UInt8(b7) >> 4, c2 = UInt8(b8) & 0x0F
                let good = (~c2 & 0x0F) << 4 | (~c1 & 0x0F)
                for b6 in [good, good ^ 0x01] {
                    let bytes = [b6, UInt8(b7), UInt8(b8)]
                    #expect(MIFAREAccessConditions(bytes: bytes)?.groups == MifareAccessConditions(bytes: bytes)?.groups)
                }
            }
        }
        for c in UInt8(0)..<8 {
            let simulated = MIFAREAccessConditions.dataBlock(c), ours = MifareAccessConditions.dataBlock(c)
            #expect(same(simulated.read, ours.read) && same(simulated.write, ours.write), "data \(c)")
            let t = MIFAREAccessConditions.trailer(c), u = MifareAccessConditions.trailer(c)
            #expect(same(t.writeKeyA, u.writeKeyA) && same(t.readAccessBits, u.readAccessBits) && same(t.writeAccessBits, u.writeAccessBits)
                && same(t.readKeyB, u.readKeyB) && same(t.writeKeyB, u.writeKeyB), "trailer \(c)")
        }
    }

    @Test("NTAG213 lock bits, static and dynamic: every value of each lock byte, pages 3–39, the simulated tag against write-dump's layout")
    func ntag213LockBits() throws {
        let uid = hex("04 A1 B2 C3 D4 E5 F6")
        let layout = Type2TagLayout(product: .ntag213)
        var vectors: [(staticLock: [UInt8], dynamicLock: [UInt8])] = []
        for value in 0...255 {
            let b = UInt8(value)
            vectors += [([b, 0x00], [0, 0, 0]), ([0x00, b], [0, 0, 0]), ([0, 0], [b, 0x00, 0x00]), ([0, 0], [0x00, b, 0x00])]
        }
        for (staticLock, dynamicLock) in vectors {
            var memory = try Type2TagMemory(model: .ntag213, uid: uid)
            #expect(memory.write(page: 2, [0x00, 0x00] + staticLock) == .ack)
            #expect(memory.write(page: 0x28, dynamicLock + [0x00]) == .ack)
            let refused = (3...39).filter { page in
                var copy = memory
                // FF × 4 on page 3 (OTP: bits OR-ed) is accepted unless the page is locked.
                return copy.write(page: page, [0xFF, 0xFF, 0xFF, 0xFF]) != .ack
            }
            let locked = (3...39).filter { layout.isLocked(page: $0, lockBytes: staticLock, dynamicLock: dynamicLock) }
            #expect(locked == refused, "lock bytes \(staticLock.hexString), dynamic \(dynamicLock.hexString)")
        }
    }

    @Test("Type 2 capability containers and GET_VERSION models", arguments: Type2TagModel.allCases)
    func capabilityContainers(_ model: Type2TagModel) throws {
        let cc = try Type2CapabilityContainer(parsing: model.capabilityContainer)
        #expect(cc.dataAreaSize == model.dataAreaSize)
        #expect(!cc.isReadOnly)
        guard let version = model.versionInfo else {
            #expect(model == .ultralight)
            return
        }
        let product = try #require(Type2TagProduct(version: version))
        #expect(product.rawValue == model.rawValue)
        // The user memory ends just before the dynamic lock bytes, and holds the CC's data area.
        #expect(product.lastUserPage == model.dynamicLockPage.map { $0 - 1 })
        #expect(cc.dataAreaSize <= product.userMemorySize)
    }
}
