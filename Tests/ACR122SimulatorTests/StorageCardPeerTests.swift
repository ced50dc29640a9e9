import ACR122Simulator
import ISO7816
import PN53x
import SecbridgeTesting
import Testing

/// One Type 2 tag model and the figures its data sheet gives.
struct Type2ModelVector: Sendable, CustomTestStringConvertible {
    var id: String
    var source: String
    var model: Type2TagModel
    var pages: Int
    var capabilityContainer: String
    /// The GET_VERSION answer as InDataExchange reports it (`D5 41 status …`).
    var getVersionReply: String
    var testDescription: String { id }
}

/// One UID and its check bytes BCC0 / BCC1.
struct BCCVector: Sendable, CustomTestStringConvertible {
    var id: String
    var source: String
    var uid: String
    var page0: String
    var page1: String
    var bcc1: UInt8
    var testDescription: String { id }
}

/// One WRITE and what the tag does with it.
struct Type2WriteVector: Sendable, CustomTestStringConvertible {
    var id: String
    var source: String
    /// The WRITE command inside InDataExchange (`A2 page d0 d1 d2 d3`).
    var command: String
    /// `D5 41 …` without 90 00.
    var reply: String
    var page: Int
    /// The page afterwards.
    var after: String
    var testDescription: String { id }
}

/// One command sequence through SCardTransmit (pseudo-APDUs) and the expected replies.
struct PseudoAPDUStep: Sendable {
    var command: String
    var reply: String
}

@Suite("Storage-card peers: Type 2 tags and MIFARE Classic with memory")
struct StorageCardPeerTests {
    static let uid7 = "04 A1 B2 C3 D4 E5 F6"

    // MARK: Vectors

    static let models: [Type2ModelVector] = [
        .init(id: "NTAG213", source: "NTAG213/215/216 data sheet §8.5.6, §10.1; docs/iso14443-t4t-ndef.md §6",
              model: .ntag213, pages: 45, capabilityContainer: "E1 10 12 00",
              getVersionReply: "D5 41 00 00 04 04 02 01 00 0F 03"),
        .init(id: "NTAG215", source: "NTAG213/215/216 data sheet §8.5.6, §10.1",
              model: .ntag215, pages: 135, capabilityContainer: "E1 10 3E 00",
              getVersionReply: "D5 41 00 00 04 04 02 01 00 11 03"),
        .init(id: "NTAG216", source: "NTAG213/215/216 data sheet §8.5.6, §10.1",
              model: .ntag216, pages: 231, capabilityContainer: "E1 10 6D 00",
              getVersionReply: "D5 41 00 00 04 04 02 01 00 13 03"),
        .init(id: "MIFARE Ultralight: no GET_VERSION → status 01", source: "MF0ICU1 data sheet §7.5; brief",
              model: .ultralight, pages: 16, capabilityContainer: "E1 10 06 00",
              getVersionReply: "D5 41 01"),
    ]

    static let bccVectors: [BCCVector] = [
        .init(id: "04 A1 B2 C3 D4 E5 F6", source: "BCC0 = 88 ⊕ UID0 ⊕ UID1 ⊕ UID2, BCC1 = UID3 ⊕ … ⊕ UID6 (NTAG21x §8.5.1)",
              uid: "04 A1 B2 C3 D4 E5 F6", page0: "04 A1 B2 9F", page1: "C3 D4 E5 F6", bcc1: 0x04),
        .init(id: "04 E1 41 12 4A 2B 80", source: "NTAG21x §8.5.1, computed by hand",
              uid: "04 E1 41 12 4A 2B 80", page0: "04 E1 41 2C", page1: "12 4A 2B 80", bcc1: 0xF3),
    ]

    static let writeVectors: [Type2WriteVector] = [
        .init(id: "page 4 (data) is written", source: "NTAG21x §10.4",
              command: "A2 04 01 02 03 04", reply: "D5 41 00", page: 4, after: "01 02 03 04"),
        .init(id: "page 0 (UID) → NAK → status 13 (decision)", source: "NTAG21x §10.4; libnfc EINVRXFRAM",
              command: "A2 00 01 02 03 04", reply: "D5 41 13", page: 0, after: "04 A1 B2 9F"),
        .init(id: "page 1 (UID) → NAK", source: "NTAG21x §10.4",
              command: "A2 01 01 02 03 04", reply: "D5 41 13", page: 1, after: "C3 D4 E5 F6"),
        .init(id: "page 2: only the lock bytes, OR-ed", source: "NTAG21x §8.5.2",
              command: "A2 02 11 22 0F 00", reply: "D5 41 00", page: 2, after: "04 48 0F 00"),
        .init(id: "page 3 (CC) is OTP: OR-ed", source: "NTAG21x §8.5.6",
              command: "A2 03 00 00 00 0F", reply: "D5 41 00", page: 3, after: "E1 10 12 0F"),
        .init(id: "page 2D beyond NTAG213 memory → NAK", source: "NTAG21x §10.4",
              command: "A2 2D 01 02 03 04", reply: "D5 41 13", page: 4, after: "03 00 FE 00"),
        .init(id: "WRITE with 3 data bytes → NAK", source: "NTAG21x §10.4 (length)",
              command: "A2 04 01 02 03", reply: "D5 41 13", page: 4, after: "03 00 FE 00"),
    ]

    // MARK: Helpers

    /// A reader in a fast field with `tag` placed, listed with InListPassiveTarget (target 1).
    static func listed(_ tag: ISO14443_3Tag) throws -> SimulatedACR122U {
        let field = fastField()
        field.place(tag)
        let reader = SimulatedACR122U(field: field)
        let listing = try reader.control(code: 0x4200_0001, wrapped("D4 4A 01 00"))
        #expect(listing.starts(with: hex("D5 4B 01 01")))
        return reader
    }

    /// InDataExchange to target 1 through the escape path; the reply without 90 00.
    static func exchange(_ reader: SimulatedACR122U, _ command: String) throws -> String {
        let reply = try reader.control(code: 0x4200_0001, wrapped("D4 40 01 " + command))
        #expect(reply.suffix(2) == [0x90, 0x00])
        return text(Array(reply.dropLast(2)))
    }

    /// A card connection (automatic polling, T=1) to a reader with `tag` placed.
    static func connected(_ tag: ISO14443_3Tag) throws -> (SimulatedACR122U, SimulatedReaderChannel) {
        let field = fastField()
        field.place(tag)
        let reader = SimulatedACR122U(field: field)
        return (reader, try SimulatedReaderChannel(reader, protocol: .t1))
    }

    // MARK: Type 2

    @Test("capability container, page count and GET_VERSION per model", arguments: models)
    func model(_ vector: Type2ModelVector) throws {
        let tag = try ISO14443_3Tag(type2: vector.model, uid: hex(Self.uid7))
        guard case .type2(let memory) = tag.memory else {
            Issue.record("not a Type 2 tag")
            return
        }
        #expect(memory.bytes.count == vector.pages * 4, "\(vector.source)")
        #expect(memory.page(3) == hex(vector.capabilityContainer), "\(vector.source)")
        #expect(memory.page(4) == hex("03 00 FE 00"), "empty NDEF tag")
        #expect(memory.page(vector.pages) == nil)
        #expect(tag.identity.sak == 0x00 && tag.identity.atqa == 0x0044)
        let reader = try Self.listed(tag)
        #expect(try Self.exchange(reader, "60") == vector.getVersionReply, "\(vector.source)")
    }

    @Test("pages 0–2: UID, BCC0, BCC1, internal byte 48, lock bytes 00 00", arguments: bccVectors)
    func bcc(_ vector: BCCVector) throws {
        let memory = try Type2TagMemory(model: .ntag213, uid: hex(vector.uid))
        #expect(memory.page(0) == hex(vector.page0), "\(vector.source)")
        #expect(memory.page(1) == hex(vector.page1), "\(vector.source)")
        #expect(memory.page(2) == [vector.bcc1, 0x48, 0x00, 0x00], "\(vector.source)")
    }

    @Test("storage ATRs: Ultralight/NTAG name 00 03 (TCK 68), MIFARE Classic 1K 00 01 (TCK 6A), 4K 00 02, Mini 00 26")
    func storageATRs() throws {
        let cases: [(ISO14443_3Tag, String)] = [
            (try ISO14443_3Tag(type2: .ntag213, uid: hex(Self.uid7)), "3B 8F 80 01 80 4F 0C A0 00 00 03 06 03 00 03 00 00 00 00 68"),
            (try ISO14443_3Tag(type2: .ultralight, uid: hex(Self.uid7)), "3B 8F 80 01 80 4F 0C A0 00 00 03 06 03 00 03 00 00 00 00 68"),
            (try ISO14443_3Tag(classic: .classic1K, uid: hex("01 02 03 04")), "3B 8F 80 01 80 4F 0C A0 00 00 03 06 03 00 01 00 00 00 00 6A"),
            (try ISO14443_3Tag(classic: .classic4K, uid: hex("01 02 03 04")), "3B 8F 80 01 80 4F 0C A0 00 00 03 06 03 00 02 00 00 00 00 69"),
            (try ISO14443_3Tag(classic: .mini, uid: hex("01 02 03 04")), "3B 8F 80 01 80 4F 0C A0 00 00 03 06 03 00 26 00 00 00 00 4D"),
        ]
        for (tag, atr) in cases {
            let field = fastField()
            field.place(tag)
            #expect(text(try SimulatedACR122U(field: field).powerUp()) == atr, "\(tag.peerDescription)")
        }
    }

    @Test("NDEF content: 03 len msg FE from page 4; FF + 2 bytes from 255 bytes on; too large is refused")
    func ndefContent() throws {
        // https://example.com as a URI record (docs/iso14443-t4t-ndef.md §5).
        let uri = hex("D1 01 0C 55 04 65 78 61 6D 70 6C 65 2E 63 6F 6D")
        let tag = try ISO14443_3Tag(type2: .ntag213, uid: hex(Self.uid7), ndefMessage: uri)
        let reader = try Self.listed(tag)
        #expect(try Self.exchange(reader, "30 04") == "D5 41 00 03 10 D1 01 0C 55 04 65 78 61 6D 70 6C 65 2E 63")
        #expect(try Self.exchange(reader, "30 08") == "D5 41 00 6F 6D FE 00 00 00 00 00 00 00 00 00 00 00 00 00")
        #expect(Type2TagMemory.ndefTLV([UInt8](repeating: 0xAA, count: 254)).prefix(2) == [0x03, 0xFE])
        #expect(Type2TagMemory.ndefTLV([UInt8](repeating: 0xAA, count: 255)).prefix(4) == [0x03, 0xFF, 0x00, 0xFF])
        #expect(Type2TagMemory.ndefTLV([UInt8](repeating: 0xAA, count: 300)).count == 300 + 5)
        let long = try Type2TagMemory(model: .ntag215, uid: hex(Self.uid7), ndefMessage: [UInt8](repeating: 0xAA, count: 300))
        #expect(long.page(4) == [0x03, 0xFF, 0x01, 0x2C])
        #expect(throws: StorageCardError.self) {
            try ISO14443_3Tag(type2: .ntag213, uid: hex(Self.uid7), ndefMessage: [UInt8](repeating: 0, count: 142))
        }
        #expect(throws: StorageCardError.self) { try ISO14443_3Tag(type2: .ntag213, uid: hex("01 02 03 04")) }
    }

    @Test("READ wraps at the end of memory (NTAG213 2C → 2C 00 01 02; Ultralight 0E → 0E 0F 00 01); beyond → status 13")
    func readWrapAround() throws {
        let reader = try Self.listed(try ISO14443_3Tag(type2: .ntag213, uid: hex(Self.uid7)))
        // Page 2C is PACK (00 00 00 00), then pages 00, 01, 02.
        #expect(try Self.exchange(reader, "30 2C") == "D5 41 00 00 00 00 00 04 A1 B2 9F C3 D4 E5 F6 04 48 00 00")
        #expect(try Self.exchange(reader, "30 2D") == "D5 41 13")
        #expect(try Self.exchange(reader, "30") == "D5 41 13")
        let ultralight = try Self.listed(try ISO14443_3Tag(type2: .ultralight, uid: hex(Self.uid7)))
        #expect(try Self.exchange(ultralight, "30 0E") == "D5 41 00 00 00 00 00 00 00 00 00 04 A1 B2 9F C3 D4 E5 F6")
        #expect(try Self.exchange(ultralight, "30 10") == "D5 41 13")
    }

    @Test("WRITE rules on an NTAG213 through InDataExchange", arguments: writeVectors)
    func write(_ vector: Type2WriteVector) throws {
        let tag = try ISO14443_3Tag(type2: .ntag213, uid: hex(Self.uid7))
        let reader = try Self.listed(tag)
        #expect(try Self.exchange(reader, vector.command) == vector.reply, "\(vector.source)")
        guard case .type2(let memory) = tag.memory else { return }
        #expect(memory.page(vector.page) == hex(vector.after), "\(vector.source)")
    }

    @Test("static lock bits: page 4 locked by LOCK0 bit 4 refuses WRITE; the CC stays OTP")
    func staticLock() throws {
        let tag = try ISO14443_3Tag(type2: .ntag213, uid: hex(Self.uid7))
        let reader = try Self.listed(tag)
        #expect(try Self.exchange(reader, "A2 04 AA BB CC DD") == "D5 41 00")
        #expect(try Self.exchange(reader, "A2 02 00 00 10 00") == "D5 41 00")
        #expect(try Self.exchange(reader, "A2 04 11 22 33 44") == "D5 41 13")
        #expect(try Self.exchange(reader, "A2 05 11 22 33 44") == "D5 41 00")
        #expect(try Self.exchange(reader, "30 04").hasPrefix("D5 41 00 AA BB CC DD 11 22 33 44"))
    }

    @Test("InCommunicateThru reaches a Type 2 tag; its 4-bit ACK/NAK is a CRC error (02) with RxCRCEn set, one byte with RxLastBits 4 without (docs/acr122-pn532.md §4b, unconfirmed); a Classic card stays mute")
    func communicateThru() throws {
        let tag = try ISO14443_3Tag(type2: .ntag216, uid: hex(Self.uid7))
        let reader = try Self.listed(tag)
        #expect(text(try reader.control(code: 0x4200_0001, wrapped("D4 42 60"))) == "D5 43 00 00 04 04 02 01 00 13 03 90 00")
        // RxCRCEn as automatic polling left it (6303 80): the nibble fails the chip's CRC check
        // (nfcpy src/nfc/clf/pn53x.py `_tt2_send_cmd_recv_rsp`).
        #expect(text(try reader.control(code: 0x4200_0001, wrapped("D4 42 A2 05 01 02 03 04"))) == "D5 43 02 90 00")
        #expect(text(try reader.control(code: 0x4200_0001, wrapped("D4 04"))).hasPrefix("D5 05 02 "), "GetGeneralStatus's Err is the last error")
        #expect(text(try reader.control(code: 0x4200_0001, wrapped("D4 42 A2 00 01 02 03 04"))) == "D5 43 02 90 00")
        // nfcpy's sense_tta for a Type 2 tag: RxMode FF → 7F (tests/test_clf_pn532.py); 80 → 00 here.
        #expect(text(try reader.control(code: 0x4200_0001, wrapped("D4 08 63 03 00"))) == "D5 09 90 00")
        #expect(text(try reader.control(code: 0x4200_0001, wrapped("D4 42 A2 06 01 02 03 04"))) == "D5 43 00 0A 90 00")
        // libnfc's pn53x_initiator_transceive_bits: Control (633C) bits 2–0 = 4 valid bits.
        #expect(text(try reader.control(code: 0x4200_0001, wrapped("D4 06 63 3C"))) == "D5 07 14 90 00")
        #expect(text(try reader.control(code: 0x4200_0001, wrapped("D4 42 A2 00 01 02 03 04"))) == "D5 43 00 00 90 00", "NAK 0h: page 0 is not writable")
        // A whole-byte answer (READ, 16 bytes and the CRC_A with RxCRCEn cleared) sets RxLastBits back to 0.
        let read = text(try reader.control(code: 0x4200_0001, wrapped("D4 42 30 06")))
        #expect(read.hasPrefix("D5 43 00 01 02 03 04 ") && read.hasSuffix(" 90 00") && read.split(separator: " ").count == 2 + 1 + 16 + 2 + 2)
        #expect(text(try reader.control(code: 0x4200_0001, wrapped("D4 06 63 3C"))) == "D5 07 10 90 00")
        guard case .type2(let memory) = tag.memory else { Issue.record("not a Type 2 tag"); return }
        #expect(memory.page(5) == hex("01 02 03 04") && memory.page(6) == hex("01 02 03 04"), "both WRITEs were done: the ACK was sent")
        let classic = try Self.listed(try ISO14443_3Tag(classic: .classic1K, uid: hex("01 02 03 04")))
        #expect(text(try classic.control(code: 0x4200_0001, wrapped("D4 42 30 04"))) == "D5 43 01 90 00")
    }

    @Test("Type 2 through SCardTransmit: FF B0 (Le 4…16, multiple of 4), FF D6 (Lc 4), failures 63 00, FF CA 01 → 6A 81")
    func type2PseudoAPDUs() throws {
        let tag = try ISO14443_3Tag(type2: .ntag213, uid: hex(Self.uid7))
        let (_, channel) = try Self.connected(tag)
        let steps: [PseudoAPDUStep] = [
            .init(command: "FF CA 00 00 00", reply: "04 A1 B2 C3 D4 E5 F6 90 00"),
            .init(command: "FF CA 01 00 00", reply: "6A 81"),
            .init(command: "FF B0 00 03 04", reply: "E1 10 12 00 90 00"),
            .init(command: "FF B0 00 00 10", reply: "04 A1 B2 9F C3 D4 E5 F6 04 48 00 00 E1 10 12 00 90 00"),
            .init(command: "FF B0 00 04 08", reply: "03 00 FE 00 00 00 00 00 90 00"),
            .init(command: "FF B0 00 04 05", reply: "63 00"),
            .init(command: "FF B0 00 04 14", reply: "63 00"),
            .init(command: "FF B0 00 04 00", reply: "63 00"),
            .init(command: "FF B0 00 2D 10", reply: "63 00"),
            .init(command: "FF D6 00 04 04 03 0B D1 01", reply: "90 00"),
            .init(command: "FF B0 00 04 04", reply: "03 0B D1 01 90 00"),
            .init(command: "FF D6 00 01 04 00 00 00 00", reply: "63 00"),
            .init(command: "FF D6 00 05 10 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00", reply: "63 00"),
            .init(command: "FF D6 00 05 04 00 00 00", reply: "63 00"),
            .init(command: "FF B0 00 04 04 00", reply: "63 00"),
            // A Classic authentication to a Type 2 tag: the tag NAKs it.
            .init(command: "FF 82 00 00 06 FF FF FF FF FF FF", reply: "90 00"),
            .init(command: "FF 86 00 00 05 01 00 04 60 00", reply: "63 00"),
        ]
        for step in steps {
            #expect(text(try channel.transmit(hex(step.command))) == text(hex(step.reply)), "\(step.command)")
        }
    }

    // MARK: MIFARE Classic

    @Test("access bits FF 07 80: data blocks 000, trailer 001; inverted-bit mismatch is refused")
    func accessBits() {
        #expect(MIFAREAccessConditions(bytes: hex("FF 07 80"))?.groups == [0, 0, 0, 1])
        // 78 77 88: C1 = 0111, C2 = 1000, C3 = 1000 → data blocks 100, trailer 011 (key B writes).
        #expect(MIFAREAccessConditions(bytes: hex("78 77 88"))?.groups == [0b100, 0b100, 0b100, 0b011])
        #expect(MIFAREAccessConditions(bytes: hex("FF 07 81")) == nil)
        #expect(MIFAREAccessConditions(bytes: hex("FF 07")) == nil)
    }

    @Test("Classic 1K layout: block 0 UID BCC SAK ATQA; every trailer FF×6 FF 07 80 69 FF×6; 4K has 40 sectors, 256 blocks")
    func classicLayout() throws {
        let memory = try MIFAREClassicMemory(model: .classic1K, uid: hex("DE AD BE EF"))
        #expect(memory.block(0) == hex("DE AD BE EF 22 08 04 00 00 00 00 00 00 00 00 00"))
        for sector in 0..<16 {
            #expect(memory.block(sector * 4 + 3) == hex("FF FF FF FF FF FF FF 07 80 69 FF FF FF FF FF FF"))
        }
        #expect(memory.block(64) == nil)
        let big = try MIFAREClassicMemory(model: .classic4K, uid: hex("DE AD BE EF"))
        #expect(big.bytes.count == 4096)
        #expect(MIFAREClassicModel.classic4K.sector(ofBlock: 255) == 39)
        #expect(MIFAREClassicModel.classic4K.trailerBlock(ofSector: 32) == 143)
        #expect(big.block(143) == hex("FF FF FF FF FF FF FF 07 80 69 FF FF FF FF FF FF"))
        #expect(MIFAREClassicModel.mini.blockCount == 20)
        #expect(throws: StorageCardError.self) { try MIFAREClassicMemory(model: .classic1K, uid: hex("01 02 03")) }
        #expect(throws: StorageCardError.self) { try MIFAREClassicMemory(model: .classic1K, uid: hex("01 02 03 04"), keyA: [1]) }
    }

    @Test("Classic through SCardTransmit: FF 82 / FF 86 / FF B0 / FF D6, wrong key, no auth, other sector, key A as 00s")
    func classicPseudoAPDUs() throws {
        let tag = try ISO14443_3Tag(classic: .classic1K, uid: hex("01 02 03 04"), keyA: hex("A0 A1 A2 A3 A4 A5"),
                                    keyB: hex("B0 B1 B2 B3 B4 B5"))
        let (_, channel) = try Self.connected(tag)
        let steps: [PseudoAPDUStep] = [
            .init(command: "FF CA 01 00 00", reply: "6A 81"),
            // Read without authentication.
            .init(command: "FF B0 00 04 10", reply: "63 00"),
            // Load Keys: slot 00/01, Lc 06; others 63 00.
            .init(command: "FF 82 00 00 06 A0 A1 A2 A3 A4 A5", reply: "90 00"),
            .init(command: "FF 82 00 01 06 00 00 00 00 00 00", reply: "90 00"),
            .init(command: "FF 82 00 02 06 A0 A1 A2 A3 A4 A5", reply: "63 00"),
            .init(command: "FF 82 20 00 06 A0 A1 A2 A3 A4 A5", reply: "63 00"),
            .init(command: "FF 82 00 00 05 A0 A1 A2 A3 A4", reply: "63 00"),
            // Wrong key (slot 01 holds 00×6).
            .init(command: "FF 86 00 00 05 01 00 04 60 01", reply: "63 00"),
            .init(command: "FF B0 00 04 10", reply: "63 00"),
            // Key A from slot 00.
            .init(command: "FF 86 00 00 05 01 00 04 60 00", reply: "90 00"),
            .init(command: "FF B0 00 04 10", reply: "00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 90 00"),
            .init(command: "FF D6 00 05 10 00 11 22 33 44 55 66 77 88 99 AA BB CC DD EE FF", reply: "90 00"),
            .init(command: "FF B0 00 05 10", reply: "00 11 22 33 44 55 66 77 88 99 AA BB CC DD EE FF 90 00"),
            // Le other than 16.
            .init(command: "FF B0 00 05 04", reply: "63 00"),
            // Trailer with key A: key A as 00s; access bits; key B readable under condition 001.
            .init(command: "FF B0 00 07 10", reply: "00 00 00 00 00 00 FF 07 80 69 B0 B1 B2 B3 B4 B5 90 00"),
            // Another sector without re-authentication: refused, and the authentication is gone.
            .init(command: "FF B0 00 08 10", reply: "63 00"),
            .init(command: "FF B0 00 05 10", reply: "63 00"),
            // Obsolete FF 88 form.
            .init(command: "FF 88 00 05 60 00", reply: "90 00"),
            .init(command: "FF B0 00 06 10", reply: "00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 90 00"),
            // Block 0 (manufacturer block) is read-only.
            .init(command: "FF 86 00 00 05 01 00 00 60 00", reply: "90 00"),
            .init(command: "FF B0 00 00 10", reply: "01 02 03 04 04 08 04 00 00 00 00 00 00 00 00 00 90 00"),
            .init(command: "FF D6 00 00 10 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00", reply: "63 00"),
            // Key B is readable under the transport condition, so it cannot serve for access.
            .init(command: "FF 82 00 01 06 B0 B1 B2 B3 B4 B5", reply: "90 00"),
            .init(command: "FF 86 00 00 05 01 00 04 61 01", reply: "90 00"),
            .init(command: "FF B0 00 04 10", reply: "63 00"),
            // Bad forms.
            .init(command: "FF 86 00 00 05 01 00 04 62 00", reply: "63 00"),
            .init(command: "FF 86 00 00 04 01 00 04 60", reply: "63 00"),
            .init(command: "FF 86 00 00 05 01 00 40 60 00", reply: "63 00"),
            .init(command: "FF D6 00 05 10 00", reply: "63 00"),
            .init(command: "FF B0 01 04 10", reply: "63 00"),
        ]
        for step in steps {
            #expect(text(try channel.transmit(hex(step.command))) == text(hex(step.reply)), "\(step.command)")
        }
        #expect(!tag.memory.description.contains("A0 A1 A2"), "keys stay out of the text")
        #expect(!tag.displayBytes.contains(0xA0), "tag memory display masks the keys")
    }

    @Test("Classic trailer write: new access bits make sector 1 key-B-only (011/100); key A then reads but cannot write")
    func trailerWrite() throws {
        let tag = try ISO14443_3Tag(classic: .classic1K, uid: hex("01 02 03 04"))
        let (_, channel) = try Self.connected(tag)
        func send(_ command: String) throws -> String { text(try channel.transmit(hex(command))) }
        #expect(try send("FF 82 00 00 06 FF FF FF FF FF FF") == "90 00")
        #expect(try send("FF 86 00 00 05 01 00 07 60 00") == "90 00")
        // Inconsistent access bits are refused (decision), and the authentication is dropped.
        #expect(try send("FF D6 00 07 10 FF FF FF FF FF FF FF 07 81 69 FF FF FF FF FF FF") == "63 00")
        #expect(try send("FF 86 00 00 05 01 00 07 60 00") == "90 00")
        // Data blocks 100 (read A|B, write B), trailer 011: C1 = 0111, C2 = 1000, C3 = 1000 →
        // byte 6 ~C2 ~C1 = 78, byte 7 C1 ~C3 = 77, byte 8 C3 C2 = 88 (MF1S50YYX_V1 §8.7.1).
        #expect(try send("FF D6 00 07 10 FF FF FF FF FF FF 78 77 88 69 B0 B1 B2 B3 B4 B5") == "90 00")
        #expect(try send("FF 86 00 00 05 01 00 04 60 00") == "90 00")
        #expect(try send("FF B0 00 04 10") == "00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 90 00")
        #expect(try send("FF D6 00 04 10 01 01 01 01 01 01 01 01 01 01 01 01 01 01 01 01") == "63 00")
        // Trailer 011 read with key A: access bits readable, key B not.
        #expect(try send("FF 86 00 00 05 01 00 07 60 00") == "90 00")
        #expect(try send("FF B0 00 07 10") == "00 00 00 00 00 00 78 77 88 69 00 00 00 00 00 00 90 00")
        // Key B writes.
        #expect(try send("FF 82 00 01 06 B0 B1 B2 B3 B4 B5") == "90 00")
        #expect(try send("FF 86 00 00 05 01 00 04 61 01") == "90 00")
        #expect(try send("FF D6 00 04 10 01 01 01 01 01 01 01 01 01 01 01 01 01 01 01 01") == "90 00")
        #expect(try send("FF B0 00 04 10") == "01 01 01 01 01 01 01 01 01 01 01 01 01 01 01 01 90 00")
    }

    @Test("Classic through PN532 InDataExchange: auth 00 / 14, READ, WRITE, NAK 13, key A as 00s")
    func classicInDataExchange() throws {
        let tag = try ISO14443_3Tag(classic: .classic1K, uid: hex("01 02 03 04"))
        let reader = try Self.listed(tag)
        let key = "FF FF FF FF FF FF"
        #expect(try Self.exchange(reader, "30 04") == "D5 41 13")
        #expect(try Self.exchange(reader, "60 04 00 00 00 00 00 00 01 02 03 04") == "D5 41 14")
        #expect(try Self.exchange(reader, "60 04 \(key) 09 09 09 09") == "D5 41 14")
        #expect(try Self.exchange(reader, "60 04 \(key) 01 02 03 04") == "D5 41 00")
        #expect(try Self.exchange(reader, "A0 04 00 11 22 33 44 55 66 77 88 99 AA BB CC DD EE FF") == "D5 41 00")
        #expect(try Self.exchange(reader, "30 04") == "D5 41 00 00 11 22 33 44 55 66 77 88 99 AA BB CC DD EE FF")
        #expect(try Self.exchange(reader, "30 07") == "D5 41 00 00 00 00 00 00 00 FF 07 80 69 FF FF FF FF FF FF")
        #expect(try Self.exchange(reader, "A0 04 00") == "D5 41 13")
        #expect(try Self.exchange(reader, "60 00 \(key) 01 02 03 04") == "D5 41 00")
        #expect(try Self.exchange(reader, "30 04") == "D5 41 13")
        #expect(try Self.exchange(reader, "61 3F \(key) 01 02 03 04") == "D5 41 00")
        #expect(try Self.exchange(reader, "30 3C") == "D5 41 13", "key B readable → key B cannot serve")
        #expect(try Self.exchange(reader, "") == "D5 41 01")
        // The pseudo-APDUs work after InListPassiveTarget on the escape path too.
        #expect(text(try reader.control(code: 0x4200_0001, hex("FF 82 00 00 06 FF FF FF FF FF FF"))) == "90 00")
        #expect(text(try reader.control(code: 0x4200_0001, hex("FF 86 00 00 05 01 00 04 60 00"))) == "90 00")
        #expect(text(try reader.control(code: 0x4200_0001, hex("FF B0 00 04 10")))
            == "00 11 22 33 44 55 66 77 88 99 AA BB CC DD EE FF 90 00")
        // Through the PN53x client.
        let pn532 = try directPN532(reader)
        #expect(throws: PN532Error.chipError(PN532Status(rawValue: 0x13), command: .inDataExchange)) {
            try pn532.exchangeAPDU(hex("00 A4 04 00 00"))
        }
    }

    @Test("4K: a 16-block sector is one authentication unit; blocks 128–142 data, 143 trailer")
    func classic4KBigSector() throws {
        let tag = try ISO14443_3Tag(classic: .classic4K, uid: hex("01 02 03 04"))
        let reader = try Self.listed(tag)
        #expect(try Self.exchange(reader, "60 80 FF FF FF FF FF FF 01 02 03 04") == "D5 41 00")
        #expect(try Self.exchange(reader, "A0 8E 01 02 03 04 05 06 07 08 09 0A 0B 0C 0D 0E 0F 10") == "D5 41 00")
        #expect(try Self.exchange(reader, "30 8F") == "D5 41 00 00 00 00 00 00 00 FF 07 80 69 FF FF FF FF FF FF")
        #expect(try Self.exchange(reader, "30 90") == "D5 41 13")
        #expect(tag.identity.sak == 0x18 && tag.identity.atqa == 0x0002)
    }

    @Test("a new activation forgets the authentication")
    func reactivation() throws {
        let tag = try ISO14443_3Tag(classic: .classic1K, uid: hex("01 02 03 04"))
        let reader = try Self.listed(tag)
        #expect(try Self.exchange(reader, "60 04 FF FF FF FF FF FF 01 02 03 04") == "D5 41 00")
        #expect(text(try reader.control(code: 0x4200_0001, wrapped("D4 4A 01 00"))).hasPrefix("D5 4B 01"))
        #expect(try Self.exchange(reader, "30 04") == "D5 41 13")
    }

    @Test("the plain tag keeps today's behaviour: any key authenticates, other commands stay mute")
    func plainTag() throws {
        let reader = try Self.listed(ISO14443_3Tag(uid: hex("01 02 03 04")))
        #expect(try Self.exchange(reader, "60 00 A0 A1 A2 A3 A4 A5 01 02 03 04") == "D5 41 00")
        #expect(try Self.exchange(reader, "30 04") == "D5 41 01")
        #expect(text(try reader.control(code: 0x4200_0001, hex("FF B0 00 04 10"))) == "63 00")
        let keyed = try Self.listed(ISO14443_3Tag(uid: hex("01 02 03 04"), mifareKey: hex("A0 A1 A2 A3 A4 A5")))
        #expect(text(try keyed.control(code: 0x4200_0001, hex("FF 82 00 00 06 A0 A1 A2 A3 A4 A5"))) == "90 00")
        #expect(text(try keyed.control(code: 0x4200_0001, hex("FF 86 00 00 05 01 00 04 60 00"))) == "90 00")
        #expect(text(try keyed.control(code: 0x4200_0001, hex("FF 82 00 00 06 00 00 00 00 00 00"))) == "90 00")
        #expect(text(try keyed.control(code: 0x4200_0001, hex("FF 86 00 00 05 01 00 04 60 00"))) == "63 00")
    }

    @Test("without a tag the storage pseudo-APDUs fail with 63 00; short or odd commands never crash")
    func noTagAndOddInput() throws {
        let reader = SimulatedACR122U(field: fastField())
        for command in ["FF 86 00 00 05 01 00 04 60 00", "FF B0 00 04 10", "FF D6 00 04 04 00 00 00 00", "FF 88 00 04 60",
                        "FF 82 00 00 06 00"] {
            #expect(text(try reader.control(code: 0x4200_0001, hex(command))) == "63 00", "\(command)")
        }
        let tagReader = try Self.listed(try ISO14443_3Tag(type2: .ntag213, uid: hex(Self.uid7)))
        for command in ["A2", "A2 04", "A2 FF 00 00 00 00", "30 FF", "60 00", "30 04 00", "FE"] {
            #expect(try Self.exchange(tagReader, command) == "D5 41 13", "\(command)")
        }
        let classicReader = try Self.listed(try ISO14443_3Tag(classic: .mini, uid: hex("01 02 03 04")))
        for command in ["60", "60 04", "61 FF FF FF FF FF FF FF 01 02 03 04", "A0", "30", "C0 04 00 00 00 00"] {
            let reply = try Self.exchange(classicReader, command)
            #expect(reply == "D5 41 13" || reply == "D5 41 14", "\(command)")
        }
    }
}
