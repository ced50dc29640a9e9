import ISO7816

// Storage cards with memory: NFC Forum Type 2 tags (NTAG213/215/216, MIFARE Ultralight) and
// MIFARE Classic (Mini, 1K, 4K). The memory models are pure values; ``ISO14443_3Tag`` keeps one
// behind its lock and the PN532 model (InDataExchange, InCommunicateThru) and the ACR122U
// pseudo-APDUs (FF 82 / FF 86 / FF 88 / FF B0 / FF D6) reach it through ``StorageCardMemory``.
//
// A second copy, on purpose: the MIFARE Classic sector/block arithmetic (``MIFAREClassicModel``),
// the NDEF Message TLV (``Type2TagMemory/ndefTLV(_:)``), the Type 2 lock bits
// (``Type2TagMemory/isLocked(page:)``) and the access conditions (``MIFAREAccessConditions``) also
// live in NFCTags (`MifareClassicLayout`, `Type2TagWriter`, `Type2TagLayout`,
// `MifareAccessConditions`), which the reader code, dumps and the transcript redactor use. The simulator does not
// import NFCTags: it is an oracle of the real card, written from the data sheets, so a mistake in
// the reader code cannot also creep into the card it is tested against.
// Tests/ACR122SimulatorTests/TagArithmeticCrossCheckTests.swift compares the two over every block
// of MIFARE Classic Mini/1K/4K, every access-bit encoding and rule, and a set of TLV and lock-byte
// vectors, so they cannot drift apart.

/// A problem with the description of a storage card (bad UID length, NDEF message too large, bad
/// key length); the reason says what to give instead.
public struct StorageCardError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong, e.g. "a Type 2 tag needs a 7-byte UID, got 4 bytes".
    public var reason: String

    /// An error with a reason that says what is wrong.
    public init(_ reason: String) {
        self.reason = reason
    }

    public var description: String { reason }
}

// MARK: - Type 2 Tag

/// The NFC Forum Type 2 tags the simulator models, with the memory figures of their data sheets.
///
/// | Model | Pages (4 bytes) | CC (page 3) | Data area | GET_VERSION |
/// |---|---|---|---|---|
/// | NTAG213 | 45 (00h–2Ch) | `E1 10 12 00` | 144 bytes | `00 04 04 02 01 00 0F 03` |
/// | NTAG215 | 135 (00h–86h) | `E1 10 3E 00` | 496 bytes | `00 04 04 02 01 00 11 03` |
/// | NTAG216 | 231 (00h–E6h) | `E1 10 6D 00` | 872 bytes | `00 04 04 02 01 00 13 03` |
/// | MIFARE Ultralight | 16 (00h–0Fh) | `E1 10 06 00` | 48 bytes | no answer |
///
/// Sources: NXP NTAG213/215/216 data sheet §8.5 (memory organisation), §10.1 (GET_VERSION);
/// NXP MF0ICU1 (MIFARE Ultralight) data sheet §7.5; docs/iso14443-t4t-ndef.md §6.
public enum Type2TagModel: String, Sendable, Hashable, CaseIterable {
    /// NTAG213 (45 pages), NTAG215 (135), NTAG216 (231), and the MIFARE Ultralight (16 pages, no
    /// GET_VERSION).
    case ntag213, ntag215, ntag216, ultralight

    /// The number of 4-byte pages, configuration pages included.
    public var pageCount: Int {
        switch self {
        case .ntag213: 45
        case .ntag215: 135
        case .ntag216: 231
        case .ultralight: 16
        }
    }

    /// The capability container of page 3: `E1` (NDEF magic), `10` (mapping 1.0), data area size
    /// / 8, `00` (read/write access).
    public var capabilityContainer: [UInt8] {
        switch self {
        case .ntag213: [0xE1, 0x10, 0x12, 0x00]
        case .ntag215: [0xE1, 0x10, 0x3E, 0x00]
        case .ntag216: [0xE1, 0x10, 0x6D, 0x00]
        case .ultralight: [0xE1, 0x10, 0x06, 0x00]
        }
    }

    /// The data area in bytes (CC byte 2 × 8), from page 4.
    public var dataAreaSize: Int { Int(capabilityContainer[2]) * 8 }

    /// The GET_VERSION (60h) answer: vendor 04 (NXP), type 04 (NTAG), subtype 02, major 01,
    /// minor 00, storage size 0F/11/13, protocol 03 (ISO/IEC 14443-3). Nil for the original
    /// MIFARE Ultralight, which does not know the command and stays silent.
    public var versionInfo: [UInt8]? {
        switch self {
        case .ntag213: [0x00, 0x04, 0x04, 0x02, 0x01, 0x00, 0x0F, 0x03]
        case .ntag215: [0x00, 0x04, 0x04, 0x02, 0x01, 0x00, 0x11, 0x03]
        case .ntag216: [0x00, 0x04, 0x04, 0x02, 0x01, 0x00, 0x13, 0x03]
        case .ultralight: nil
        }
    }

    /// The first of the NTAG configuration pages (dynamic lock bytes, CFG0, CFG1, PWD, PACK: the
    /// last five pages), nil for Ultralight.
    public var dynamicLockPage: Int? { self == .ultralight ? nil : pageCount - 5 }

    /// The product name, e.g. "NTAG213".
    public var productName: String {
        switch self {
        case .ntag213: "NTAG213"
        case .ntag215: "NTAG215"
        case .ntag216: "NTAG216"
        case .ultralight: "MIFARE Ultralight"
        }
    }
}

/// What a storage card answered on air.
enum TagAnswer: Equatable {
    /// A data frame (READ: 16 bytes; GET_VERSION: 8 bytes).
    case data([UInt8])
    /// The 4-bit ACK (Ah).
    case ack
    /// A 4-bit NAK (0h invalid argument/address, 1h/5h CRC/parity, 4h/… other).
    case nak(UInt8)
    /// No answer at all.
    case mute
    /// A MIFARE Classic authentication failed (wrong key, wrong UID, no such block).
    case authenticationFailed
    /// The tag left the field during the command (``ISO14443_3Tag/leave(duringCommand:)``):
    /// nothing was done, nothing answered. ``DeviceState/onAir(_:_:world:)`` removes it from the
    /// field and reports silence.
    case left
}

/// The memory of an NFC Forum Type 2 tag, and what READ / WRITE / GET_VERSION do to it.
///
/// Layout (NTAG213/215/216 data sheet §8.5; docs/iso14443-t4t-ndef.md §6):
/// `| page 0: UID0 UID1 UID2 BCC0 | page 1: UID3 UID4 UID5 UID6 | page 2: BCC1 INT LOCK0 LOCK1 |
/// page 3: CC | page 4…: data area (TLVs) | NTAG: dynamic lock, CFG0, CFG1, PWD, PACK |`,
/// BCC0 = 88h ⊕ UID0 ⊕ UID1 ⊕ UID2, BCC1 = UID3 ⊕ UID4 ⊕ UID5 ⊕ UID6.
public struct Type2TagMemory: Sendable, Hashable {
    /// The model (page count, CC, GET_VERSION).
    public let model: Type2TagModel
    /// Every byte of the memory, page after page (4 × ``Type2TagModel/pageCount`` bytes).
    public private(set) var bytes: [UInt8]

    /// The internal byte of page 2 (NTAG21x data sheet §8.5.1: 48h).
    static let internalByte: UInt8 = 0x48

    /// A tag straight from the factory with an NDEF message (or an empty NDEF tag).
    ///
    /// - Parameters:
    ///   - model: NTAG213/215/216 or Ultralight.
    ///   - uid: exactly 7 bytes (ISO/IEC 14443-3 double size UID; UID0 04h for NXP).
    ///   - ndefMessage: the NDEF message bytes (records, not the TLV); nil or [] gives an empty
    ///     NDEF tag `03 00 FE`. Written as `03 len msg FE` (len one byte below 255, else `FF hi lo`).
    /// - Throws: ``StorageCardError`` when the UID is not 7 bytes or the TLV does not fit the data area.
    public init(model: Type2TagModel, uid: [UInt8], ndefMessage: [UInt8]? = nil) throws(StorageCardError) {
        guard uid.count == 7 else {
            throw StorageCardError("a Type 2 tag needs a 7-byte UID, got \(uid.count) bytes")
        }
        let tlv = Self.ndefTLV(ndefMessage ?? [])
        guard tlv.count <= model.dataAreaSize else {
            throw StorageCardError("the NDEF TLV (\(tlv.count) bytes) does not fit the \(model.dataAreaSize)-byte data area of \(model.productName)")
        }
        self.model = model
        var memory = [UInt8](repeating: 0, count: model.pageCount * 4)
        let bcc0 = 0x88 ^ uid[0] ^ uid[1] ^ uid[2]
        let bcc1 = uid[3] ^ uid[4] ^ uid[5] ^ uid[6]
        memory.replaceSubrange(0..<12, with: [uid[0], uid[1], uid[2], bcc0, uid[3], uid[4], uid[5], uid[6],
                                              bcc1, Self.internalByte, 0x00, 0x00])
        memory.replaceSubrange(12..<16, with: model.capabilityContainer)
        memory.replaceSubrange(16..<16 + tlv.count, with: tlv)
        if let lockPage = model.dynamicLockPage {
            // Dynamic lock bytes 00 00 00, RFUI BDh; CFG0: MIRROR 04, RFUI, MIRROR_PAGE 00,
            // AUTH0 FFh (no password protection); CFG1: ACCESS 00, RFUI 05, RFUI, RFUI. PWD and
            // PACK read as 00h (data sheet §8.5.7).
            let configuration: [UInt8] = [0x00, 0x00, 0x00, 0xBD, 0x04, 0x00, 0x00, 0xFF, 0x00, 0x05, 0x00, 0x00]
            memory.replaceSubrange(lockPage * 4..<lockPage * 4 + 12, with: configuration)
        }
        bytes = memory
    }

    /// `03 len msg FE`: the NDEF message TLV with its terminator (NFC Forum Type 2 Tag §2.3;
    /// docs/iso14443-t4t-ndef.md §6). Length one byte below 255, else `FF` and two bytes big-endian.
    /// (The simulator's own copy of NFCTags' `Type2TagWriter.tlvBytes`; see the note at the top of this file.)
    public static func ndefTLV(_ message: [UInt8]) -> [UInt8] {
        let length: [UInt8] = message.count < 0xFF
            ? [UInt8(message.count)]
            : [0xFF, UInt8((message.count >> 8) & 0xFF), UInt8(message.count & 0xFF)]
        return [0x03] + length + message + [0xFE]
    }

    /// Page `page` (4 bytes), or nil beyond the memory.
    public func page(_ page: Int) -> [UInt8]? {
        guard page >= 0, page < model.pageCount else { return nil }
        return Array(bytes[page * 4..<page * 4 + 4])
    }

    /// READ `30 page` → 16 bytes: pages page…page+3, rolling over from the last page to page 0
    /// (NTAG21x data sheet §10.2, MF0ICU1 §9.2); NAK 0h for an address beyond the memory.
    /// PWD and PACK (an NTAG's last two pages) always read as 00h (NTAG21x data sheet §8.5.7).
    func read(page: Int) -> TagAnswer {
        guard page >= 0, page < model.pageCount else { return .nak(0x0) }
        var out: [UInt8] = []
        for i in 0..<4 {
            let n = (page + i) % model.pageCount
            let secret = model.dynamicLockPage != nil && n >= model.pageCount - 2
            out += secret ? [0, 0, 0, 0] : self.page(n) ?? []
        }
        return .data(out)
    }

    /// Whether a lock bit protects `page`: static lock bits for pages 3–15 (LOCK0 bits 3–7 lock
    /// pages 3–7, LOCK1 bits 0–7 pages 8–15; NTAG21x data sheet §8.5.2); on an NTAG213 the dynamic
    /// lock bits for pages 16–39 (page 28h byte 0 bits 0–7 lock pages 16–31 two at a time, byte 1
    /// bits 0–3 pages 32–39; NTAG21x §8.5.3, docs/storage-card-dumps.md §3). Block-locking bits,
    /// and the dynamic lock bits of an NTAG215/216, are kept in memory but not enforced. (The
    /// simulator's own copy of NFCTags' `Type2TagLayout.isLocked`; see the note at the top of this file.)
    func isLocked(page: Int) -> Bool {
        let lock0 = bytes[10], lock1 = bytes[11]
        switch page {
        case 3...7: return lock0 & (1 << UInt8(page)) != 0
        case 8...15: return lock1 & (1 << UInt8(page - 8)) != 0
        case 16...39 where model == .ntag213:
            let dynamic = 40 * 4, bit = (page - 16) / 2
            return bit < 8 ? bytes[dynamic] & (1 << UInt8(bit)) != 0 : bytes[dynamic + 1] & (1 << UInt8(bit - 8)) != 0
        default: return false
        }
    }

    /// WRITE `A2 page d0 d1 d2 d3` → ACK, or NAK 0h: pages 0–1 (UID) and addresses beyond the
    /// memory are refused; on page 2 only the lock bytes are OR-ed in (bytes 0–1 are kept); the
    /// capability container (page 3) is one-time programmable: its bits are OR-ed; on an NTAG the
    /// dynamic lock bytes (bytes 0–2 of the dynamic lock page) are OR-ed too, byte 3 (RFUI) kept;
    /// a page a lock bit protects is refused (NTAG21x data sheet §10.4, §8.5.2, §8.5.3, §8.5.6).
    mutating func write(page: Int, _ data: [UInt8]) -> TagAnswer {
        guard data.count == 4, page >= 2, page < model.pageCount, !isLocked(page: page) else { return .nak(0x0) }
        let base = page * 4
        switch page {
        case 2:
            bytes[base + 2] |= data[2]
            bytes[base + 3] |= data[3]
        case 3:
            for i in 0..<4 { bytes[base + i] |= data[i] }
        case model.dynamicLockPage:
            for i in 0..<3 { bytes[base + i] |= data[i] }
        default:
            bytes.replaceSubrange(base..<base + 4, with: data)
        }
        return .ack
    }

    /// One command on air: READ 30, WRITE A2, COMPATIBILITY_WRITE A0, GET_VERSION 60. Anything
    /// else (or a wrong length) gets NAK 0h; GET_VERSION to an Ultralight gets no answer.
    ///
    /// COMPATIBILITY_WRITE `A0 page` + 16 bytes (the PN532 sends both parts in one InDataExchange,
    /// as for MIFARE Classic) writes the first 4 bytes to the page under the rules of WRITE
    /// (NTAG21x data sheet §10.5, MF0ICU1 §9.4); libnfc's nfc-mfultralight writes with it.
    mutating func transceive(_ command: [UInt8]) -> TagAnswer {
        guard let code = command.first else { return .mute }
        switch code {
        case 0x30:
            guard command.count == 2 else { return .nak(0x0) }
            return read(page: Int(command[1]))
        case 0xA2:
            guard command.count == 6 else { return .nak(0x0) }
            return write(page: Int(command[1]), Array(command[2..<6]))
        case 0xA0:
            guard command.count == 18 else { return .nak(0x0) }
            return write(page: Int(command[1]), Array(command[2..<6]))
        case 0x60:
            guard let version = model.versionInfo else { return .mute }
            guard command.count == 1 else { return .nak(0x0) }
            return .data(version)
        default:
            return .nak(0x0)
        }
    }
}

// MARK: - MIFARE Classic

/// The MIFARE Classic cards the simulator models.
///
/// | Model | Sectors × blocks | Blocks | SAK | ATQA (4-byte UID / 7-byte UID) | ATR name C0 C1 |
/// |---|---|---|---|---|---|
/// | Mini | 5 × 4 | 20 | 09 | 0004 / 0044 | 00 26 |
/// | 1K | 16 × 4 | 64 | 08 | 0004 / 0044 | 00 01 |
/// | 4K | 32 × 4 + 8 × 16 | 256 | 18 | 0002 / 0042 | 00 02 |
///
/// Sources: NXP MF1S50YYX_V1 (MIFARE Classic EV1 1K) §8.6, MF1S70YYX_V1 (4K) §8.6; NXP AN10833
/// (MIFARE type identification); PC/SC part 3 supplemental document (card names).
public enum MIFAREClassicModel: String, Sendable, Hashable, CaseIterable {
    /// MIFARE Mini (5 sectors, 20 blocks), Classic 1K (16 sectors, 64 blocks), Classic 4K (40
    /// sectors, 256 blocks).
    case mini, classic1K = "classic1k", classic4K = "classic4k"

    /// The number of sectors.
    public var sectorCount: Int {
        switch self {
        case .mini: 5
        case .classic1K: 16
        case .classic4K: 40
        }
    }

    /// The number of 16-byte blocks.
    public var blockCount: Int {
        switch self {
        case .mini: 20
        case .classic1K: 64
        case .classic4K: 256
        }
    }

    /// SAK (SEL_RES).
    public var sak: UInt8 {
        switch self {
        case .mini: 0x09
        case .classic1K: 0x08
        case .classic4K: 0x18
        }
    }

    /// ATQA, most significant byte first, for a UID of `uidLength` bytes.
    public func atqa(uidLength: Int) -> UInt16 {
        let base: UInt16 = self == .classic4K ? 0x0002 : 0x0004
        return uidLength == 4 ? base : base | 0x0040
    }

    /// The PC/SC part 3 card name bytes C0 C1 of the storage-card ATR.
    public var cardName: UInt16 {
        switch self {
        case .mini: 0x0026
        case .classic1K: 0x0001
        case .classic4K: 0x0002
        }
    }

    /// The sector of `block` (4K: blocks 128–255 are sectors 32–39 of 16 blocks), nil beyond the card.
    /// (The simulator's own copy of NFCTags' `MifareClassicLayout`; see the note at the top of this file.)
    public func sector(ofBlock block: Int) -> Int? {
        guard block >= 0, block < blockCount else { return nil }
        return block < 128 ? block / 4 : 32 + (block - 128) / 16
    }

    /// The first block of `sector`.
    public func firstBlock(ofSector sector: Int) -> Int {
        sector < 32 ? sector * 4 : 128 + (sector - 32) * 16
    }

    /// The number of blocks of `sector` (4 or 16).
    public func blocksInSector(_ sector: Int) -> Int { sector < 32 ? 4 : 16 }

    /// The sector trailer (the last block) of `sector`.
    public func trailerBlock(ofSector sector: Int) -> Int {
        firstBlock(ofSector: sector) + blocksInSector(sector) - 1
    }

    /// The product name, e.g. "MIFARE Classic 1K".
    public var productName: String {
        switch self {
        case .mini: "MIFARE Mini"
        case .classic1K: "MIFARE Classic 1K"
        case .classic4K: "MIFARE Classic 4K"
        }
    }
}

/// The access conditions of one sector: three bits C1 C2 C3 for each of the four access groups
/// (data blocks 0, 1, 2 — on a 16-block sector of a 4K card: blocks 0–4, 5–9, 10–14 — and the
/// sector trailer, group 3).
///
/// Byte layout in the trailer, bytes 6–8 (MF1S50YYX_V1 §8.7.1), with `~` an inverted bit:
/// `| 6: ~C2₃ ~C2₂ ~C2₁ ~C2₀ ~C1₃ ~C1₂ ~C1₁ ~C1₀ | 7: C1₃ C1₂ C1₁ C1₀ ~C3₃ ~C3₂ ~C3₁ ~C3₀ |
/// 8: C3₃ C3₂ C3₁ C3₀ C2₃ C2₂ C2₁ C2₀ |`; byte 9 is the general purpose (user) byte. The transport
/// setting `FF 07 80` gives 000 for the data blocks and 001 for the trailer.
public struct MIFAREAccessConditions: Sendable, Hashable {
    /// C1 C2 C3 of group 0…3 as a 3-bit number `C1<<2 | C2<<1 | C3`.
    public var groups: [UInt8]

    /// Decodes bytes 6–8 of a trailer; nil when an inverted bit does not match (a format the card
    /// would treat as a blocked sector).
    public init?(bytes: [UInt8]) {
        guard bytes.count >= 3 else { return nil }
        let b6 = bytes[0], b7 = bytes[1], b8 = bytes[2]
        let c1 = b7 >> 4, c2 = b8 & 0x0F, c3 = b8 >> 4
        guard ~b6 & 0x0F == c1, (~b6 >> 4) & 0x0F == c2, ~b7 & 0x0F == c3 else { return nil }
        groups = (0..<4).map { i in
            let bit: (UInt8) -> UInt8 = { ($0 >> UInt8(i)) & 1 }
            return bit(c1) << 2 | bit(c2) << 1 | bit(c3)
        }
    }

    /// Which key an operation needs.
    public enum Permission: Sendable, Hashable {
        /// `never`: no key allows it; `keyA`, `keyB`: only after authentication with that key; `keyAOrB`:
        /// after authentication with either (NXP MF1S50YYX_V1 §8.7).
        case never, keyA, keyB, keyAOrB

        func allows(keyB: Bool) -> Bool {
            switch self {
            case .never: false
            case .keyA: !keyB
            case .keyB: keyB
            case .keyAOrB: true
            }
        }
    }

    /// Read and write of a data block under condition `c` (MF1S50YYX_V1 §8.7.3, table 8; the
    /// increment/decrement columns of value blocks are not modelled).
    ///
    /// | C1C2C3 | read | write |
    /// |---|---|---|
    /// | 000 | A\|B | A\|B |
    /// | 010 | A\|B | never |
    /// | 100 | A\|B | B |
    /// | 110 | A\|B | B |
    /// | 001 | A\|B | never |
    /// | 011 | B | B |
    /// | 101 | B | never |
    /// | 111 | never | never |
    public static func dataBlock(_ c: UInt8) -> (read: Permission, write: Permission) {
        switch c & 0x07 {
        case 0b000: (.keyAOrB, .keyAOrB)
        case 0b010: (.keyAOrB, .never)
        case 0b100: (.keyAOrB, .keyB)
        case 0b110: (.keyAOrB, .keyB)
        case 0b001: (.keyAOrB, .never)
        case 0b011: (.keyB, .keyB)
        case 0b101: (.keyB, .never)
        default: (.never, .never)
        }
    }

    /// The sector trailer under condition `c` (MF1S50YYX_V1 §8.7.2, table 7). Key A is never
    /// readable. In the conditions 000, 010 and 001 key B is readable and then cannot serve for
    /// authentication (an access after a key B authentication is refused).
    ///
    /// | C1C2C3 | write key A | read access bits | write access bits | read key B | write key B |
    /// |---|---|---|---|---|---|
    /// | 000 | A | A | never | A | A |
    /// | 010 | never | A | never | A | never |
    /// | 100 | B | A\|B | never | never | B |
    /// | 110 | never | A\|B | never | never | never |
    /// | 001 | A | A | A | A | A |
    /// | 011 | B | A\|B | B | never | B |
    /// | 101 | never | A\|B | B | never | never |
    /// | 111 | never | A\|B | never | never | never |
    public static func trailer(_ c: UInt8) -> (writeKeyA: Permission, readAccessBits: Permission,
                                                writeAccessBits: Permission, readKeyB: Permission,
                                                writeKeyB: Permission) {
        switch c & 0x07 {
        case 0b000: (.keyA, .keyA, .never, .keyA, .keyA)
        case 0b010: (.never, .keyA, .never, .keyA, .never)
        case 0b100: (.keyB, .keyAOrB, .never, .never, .keyB)
        case 0b110: (.never, .keyAOrB, .never, .never, .never)
        case 0b001: (.keyA, .keyA, .keyA, .keyA, .keyA)
        case 0b011: (.keyB, .keyAOrB, .keyB, .never, .keyB)
        case 0b101: (.never, .keyAOrB, .keyB, .never, .never)
        default: (.never, .keyAOrB, .never, .never, .never)
        }
    }

    /// Whether key B is readable (trailer condition 000, 010 or 001), which disables key B.
    public var keyBReadable: Bool { [0b000, 0b010, 0b001].contains(groups[3]) }
}

/// The memory of a MIFARE Classic card, its authentication state, and what AUTH / READ / WRITE
/// do (MF1S50YYX_V1 / MF1S70YYX_V1 §8–§10).
///
/// Block 0 (manufacturer block, read-only): 4-byte UID: `UID0–3 BCC SAK ATQA(2, LSB first)
/// 00×8`, BCC = UID0 ⊕ … ⊕ UID3; 7-byte UID: `UID0–6 SAK ATQA(2, LSB first) 00×6`. Every sector
/// trailer: `| key A (6) | access bits (3) | user byte (1) | key B (6) |`, default
/// `FF FF FF FF FF FF FF 07 80 69 FF FF FF FF FF FF`. The card remembers the sector authenticated
/// last and the key used; every READ/WRITE outside it, or not allowed by the access conditions,
/// gets a NAK and drops the authentication (the card halts, as after a failed authentication).
public struct MIFAREClassicMemory: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The card's model, which fixes its sectors and blocks.
    public let model: MIFAREClassicModel
    /// The UID, 4 or 7 bytes (block 0 starts with it).
    public let uid: [UInt8]
    /// Every byte of the card, block after block (16 × ``MIFAREClassicModel/blockCount`` bytes).
    public private(set) var bytes: [UInt8]
    /// The sector authenticated last and whether key B was used; nil when not authenticated.
    public private(set) var authenticated: (sector: Int, keyB: Bool)? {
        get { authenticatedSector.map { ($0, authenticatedWithKeyB) } }
        set {
            authenticatedSector = newValue?.sector
            authenticatedWithKeyB = newValue?.keyB ?? false
        }
    }
    private var authenticatedSector: Int?
    private var authenticatedWithKeyB = false
    /// The card's transfer buffer after INCREMENT, DECREMENT or RESTORE: the value block TRANSFER
    /// writes (ValueBlocks.swift); nil when empty.
    var transferBuffer: [UInt8]?

    /// The transport configuration of a trailer's bytes 6–9: `FF 07 80 69`.
    public static let transportAccessBits: [UInt8] = [0xFF, 0x07, 0x80, 0x69]
    /// The transport key: `FF FF FF FF FF FF`.
    public static let transportKey: [UInt8] = [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]

    /// A card with every data block zero and every trailer `keyA | FF 07 80 69 | keyB`.
    ///
    /// - Parameters:
    ///   - model: Mini, 1K or 4K.
    ///   - uid: 4 or 7 bytes.
    ///   - keyA: 6 bytes, default the transport key FF×6.
    ///   - keyB: 6 bytes, default the transport key FF×6.
    /// - Throws: ``StorageCardError`` for a UID that is not 4 or 7 bytes or a key that is not 6.
    public init(model: MIFAREClassicModel, uid: [UInt8], keyA: [UInt8] = transportKey,
                keyB: [UInt8] = transportKey) throws(StorageCardError) {
        guard uid.count == 4 || uid.count == 7 else {
            throw StorageCardError("a MIFARE Classic card needs a 4- or 7-byte UID, got \(uid.count) bytes")
        }
        guard keyA.count == 6, keyB.count == 6 else {
            throw StorageCardError("MIFARE Classic keys are 6 bytes")
        }
        self.model = model
        self.uid = uid
        var memory = [UInt8](repeating: 0, count: model.blockCount * 16)
        let atqa = model.atqa(uidLength: uid.count)
        let atqaLSBFirst: [UInt8] = [UInt8(atqa & 0xFF), UInt8(atqa >> 8)]
        let block0: [UInt8] = uid.count == 4
            ? uid + [uid[0] ^ uid[1] ^ uid[2] ^ uid[3], model.sak] + atqaLSBFirst
            : uid + [model.sak] + atqaLSBFirst
        memory.replaceSubrange(0..<block0.count, with: block0)
        for sector in 0..<model.sectorCount {
            let base = model.trailerBlock(ofSector: sector) * 16
            memory.replaceSubrange(base..<base + 16, with: keyA + Self.transportAccessBits + keyB)
        }
        bytes = memory
    }

    /// Block `block` as stored (keys included), or nil beyond the card.
    public func block(_ block: Int) -> [UInt8]? {
        guard block >= 0, block < model.blockCount else { return nil }
        return Array(bytes[block * 16..<block * 16 + 16])
    }

    /// The memory as the tag-memory view shows it: every trailer's key A and key B as 00 bytes,
    /// so keys never leave the simulator in text.
    public var bytesWithKeysMasked: [UInt8] {
        var out = bytes
        for sector in 0..<model.sectorCount {
            let base = model.trailerBlock(ofSector: sector) * 16
            out.replaceSubrange(base..<base + 6, with: [UInt8](repeating: 0, count: 6))
            out.replaceSubrange(base + 10..<base + 16, with: [UInt8](repeating: 0, count: 6))
        }
        return out
    }

    /// The model, UID and authentication state; never the keys.
    public var description: String {
        let state = authenticated.map { "authenticated sector \($0.sector) with key \($0.keyB ? "B" : "A")" } ?? "not authenticated"
        return "\(model.productName) \(uid.hexString), \(state)"
    }

    /// As ``description``: keys stay out of debug output too.
    public var debugDescription: String { description }

    /// The access conditions of `sector` (decoded from its trailer); nil when the stored bits are
    /// inconsistent (never the case: writes of such bits are refused).
    func accessConditions(ofSector sector: Int) -> MIFAREAccessConditions? {
        let base = model.trailerBlock(ofSector: sector) * 16
        return MIFAREAccessConditions(bytes: Array(bytes[base + 6..<base + 9]))
    }

    /// The access group (0–3) of `block` within its sector.
    func accessGroup(ofBlock block: Int, sector: Int) -> Int {
        let offset = block - model.firstBlock(ofSector: sector)
        if offset == model.blocksInSector(sector) - 1 { return 3 }
        return model.blocksInSector(sector) == 4 ? offset : offset / 5
    }

    /// Forgets the authentication (a new activation, a HALT).
    mutating func resetAuthentication() {
        authenticated = nil
        transferBuffer = nil
    }

    /// Replaces `block`'s 16 bytes (TRANSFER, ValueBlocks.swift).
    mutating func overwrite(block: Int, with data: [UInt8]) {
        bytes.replaceSubrange(block * 16..<block * 16 + 16, with: data)
    }

    /// AUTH `60|61 block key(6) uid(4)`: the key compared with key A (60) or key B (61) of the
    /// block's sector; the UID must be the card's (its last 4 bytes, or its first 4, as readers
    /// differ for 7-byte UIDs). Success authenticates that sector; failure drops any
    /// authentication (MF1S50YYX_V1 §10.1).
    mutating func authenticate(_ command: [UInt8]) -> TagAnswer {
        guard command.count == 12, command[0] == 0x60 || command[0] == 0x61 else { return .nak(0x0) }
        let useKeyB = command[0] == 0x61
        let block = Int(command[1])
        let key = Array(command[2..<8])
        let uidBytes = Array(command[8..<12])
        guard let sector = model.sector(ofBlock: block),
              uidBytes == Array(uid.suffix(4)) || uidBytes == Array(uid.prefix(4)) else {
            authenticated = nil
            return .authenticationFailed
        }
        let trailer = model.trailerBlock(ofSector: sector) * 16
        let stored = useKeyB ? Array(bytes[trailer + 10..<trailer + 16]) : Array(bytes[trailer..<trailer + 6])
        guard stored == key else {
            authenticated = nil
            return .authenticationFailed
        }
        authenticated = (sector, useKeyB)
        return .ack
    }

    /// The sector and key an access to `block` may use, or nil (not authenticated, another
    /// sector, or key B disabled because it is readable).
    func session(for block: Int) -> (sector: Int, keyB: Bool, conditions: MIFAREAccessConditions)? {
        guard let sector = model.sector(ofBlock: block), let current = authenticated, current.sector == sector,
              let conditions = accessConditions(ofSector: sector) else { return nil }
        if current.keyB, conditions.keyBReadable { return nil }
        return (sector, current.keyB, conditions)
    }

    /// READ `30 block` → 16 bytes. A trailer reads with key A as 00s, the access bits (and user
    /// byte) as 00s when not readable, key B as 00s when not readable (MF1S50YYX_V1 §8.7.2).
    mutating func read(block: Int) -> TagAnswer {
        guard let (sector, keyB, conditions) = session(for: block) else {
            authenticated = nil
            return .nak(0x4)
        }
        let group = accessGroup(ofBlock: block, sector: sector)
        let stored = self.block(block) ?? []
        guard group == 3 else {
            guard MIFAREAccessConditions.dataBlock(conditions.groups[group]).read.allows(keyB: keyB) else {
                authenticated = nil
                return .nak(0x4)
            }
            return .data(stored)
        }
        let rules = MIFAREAccessConditions.trailer(conditions.groups[3])
        var out = [UInt8](repeating: 0, count: 16)
        if rules.readAccessBits.allows(keyB: keyB) { out.replaceSubrange(6..<10, with: stored[6..<10]) }
        if rules.readKeyB.allows(keyB: keyB) { out.replaceSubrange(10..<16, with: stored[10..<16]) }
        return .data(out)
    }

    /// WRITE `A0 block` + 16 bytes (the PN532 sends both parts in one InDataExchange) → ACK or
    /// NAK. Block 0 is never writable. A trailer write changes key A, the access bits with the
    /// user byte, and key B each only where the conditions allow it with the key used, and keeps
    /// the rest (decision: the data sheet leaves the partial case open); it is refused when no
    /// part may be written, or when the new access bits are inconsistent (decision: a real card
    /// would block the sector for good, which a test bench gains nothing from).
    mutating func write(block: Int, _ data: [UInt8]) -> TagAnswer {
        guard data.count == 16, block != 0, let (sector, keyB, conditions) = session(for: block) else {
            authenticated = nil
            return .nak(0x4)
        }
        let group = accessGroup(ofBlock: block, sector: sector)
        let base = block * 16
        guard group == 3 else {
            guard MIFAREAccessConditions.dataBlock(conditions.groups[group]).write.allows(keyB: keyB) else {
                authenticated = nil
                return .nak(0x4)
            }
            bytes.replaceSubrange(base..<base + 16, with: data)
            return .ack
        }
        let rules = MIFAREAccessConditions.trailer(conditions.groups[3])
        let writeA = rules.writeKeyA.allows(keyB: keyB)
        let writeBits = rules.writeAccessBits.allows(keyB: keyB)
        let writeB = rules.writeKeyB.allows(keyB: keyB)
        guard writeA || writeBits || writeB,
              !writeBits || MIFAREAccessConditions(bytes: Array(data[6..<9])) != nil else {
            authenticated = nil
            return .nak(0x4)
        }
        if writeA { bytes.replaceSubrange(base..<base + 6, with: data[0..<6]) }
        if writeBits { bytes.replaceSubrange(base + 6..<base + 10, with: data[6..<10]) }
        if writeB { bytes.replaceSubrange(base + 10..<base + 16, with: data[10..<16]) }
        return .ack
    }

    /// One command inside InDataExchange: AUTH 60/61, READ 30, WRITE A0 (+16 bytes), the value-block
    /// commands C0, C1, C2 (+4 bytes; C2 also without them) and B0 (ValueBlocks.swift); anything else gets a NAK.
    mutating func transceive(_ command: [UInt8]) -> TagAnswer {
        guard let code = command.first else { return .mute }
        switch code {
        case 0x60, 0x61:
            return authenticate(command)
        case 0x30:
            guard command.count == 2 else { return .nak(0x0) }
            return read(block: Int(command[1]))
        case 0xA0:
            guard command.count == 18 else { return .nak(0x0) }
            return write(block: Int(command[1]), Array(command[2..<18]))
        case 0xC0, 0xC1, 0xC2:
            return valueCommand(command)
        case 0xB0:
            return transfer(command)
        default:
            authenticated = nil
            return .nak(0x4)
        }
    }
}

// MARK: - On the tag

/// The memory of an ISO 14443-3 tag: none (anticollision and a MIFARE authentication only, the
/// behaviour of ``ISO14443_3Tag/init(uid:atqa:sak:cardName:mifareKey:)``), a Type 2 tag, or a
/// MIFARE Classic card.
public enum StorageCardMemory: Sendable, Hashable, CustomStringConvertible {
    /// No memory: the tag answers anticollision and a MIFARE authentication only.
    case none
    /// A Type 2 Tag's pages.
    case type2(Type2TagMemory)
    /// A MIFARE Classic card's sectors, keys and access conditions.
    case classic(MIFAREClassicMemory)

    /// The type and, for MIFARE Classic, the authentication state; never keys or memory bytes.
    public var description: String {
        switch self {
        case .none: "no memory"
        case .type2(let m): "\(m.model.productName), \(m.model.pageCount) pages"
        case .classic(let m): m.description
        }
    }

    /// The type name used by the control socket: ntag213, ntag215, ntag216, ultralight, mini,
    /// classic1k, classic4k; "plain" for none.
    public var typeName: String {
        switch self {
        case .none: "plain"
        case .type2(let m): m.model.rawValue
        case .classic(let m): m.model.rawValue
        }
    }

    /// The unit of the memory in bytes: 4 (pages) or 16 (blocks); 0 for none.
    public var unitSize: Int {
        switch self {
        case .none: 0
        case .type2: 4
        case .classic: 16
        }
    }
}
