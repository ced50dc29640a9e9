/// The access conditions of one MIFARE Classic sector, decoded from bytes 6–8 of its trailer
/// (NXP MF1S50yyX §8.7; docs/storage-card-dumps.md §2).
///
/// Byte layout, with `~` an inverted bit and `Cn_g` bit n of access group g:
/// `| 6: ~C2_3 ~C2_2 ~C2_1 ~C2_0 ~C1_3 ~C1_2 ~C1_1 ~C1_0 | 7: C1_3 C1_2 C1_1 C1_0 ~C3_3 ~C3_2 ~C3_1 ~C3_0 |
/// 8: C3_3 C3_2 C3_1 C3_0 C2_3 C2_2 C2_1 C2_0 |`. Groups 0–2 are the data blocks (on a 16-block
/// sector of a 4K card: blocks 0–4, 5–9, 10–14), group 3 the trailer. Byte 9 is the general purpose
/// byte, not an access bit. The transport setting `FF 07 80` gives 000 for the data blocks and 001
/// for the trailer. Bits that do not match their inverted copy block the whole sector for good on a
/// real card, so ``init(bytes:)`` refuses them.
///
/// (The simulator keeps an independent copy, `MIFAREAccessConditions`; see ``MifareClassicLayout``.)
public struct MifareAccessConditions: Sendable, Hashable, CustomStringConvertible {
    /// C1 C2 C3 of groups 0…3, each as `C1<<2 | C2<<1 | C3`.
    public let groups: [UInt8]

    /// Who may do an operation.
    public enum Permission: Sendable, Hashable, CustomStringConvertible {
        /// `never`: no key allows it; `keyA`, `keyB`: only after authentication with that key; `keyAOrB`:
        /// after authentication with either (NXP MF1S50yyX §8.7, docs/storage-card-dumps.md §2).
        case never, keyA, keyB, keyAOrB

        /// Whether a sector authenticated with `keyType` may do it.
        public func allows(_ keyType: MifareKeyType) -> Bool {
            switch self {
            case .never: false
            case .keyA: keyType == .a
            case .keyB: keyType == .b
            case .keyAOrB: true
            }
        }

        /// "never", "key A", "key B", "key A or B".
        public var description: String {
            switch self {
            case .never: "never"
            case .keyA: "key A"
            case .keyB: "key B"
            case .keyAOrB: "key A or B"
            }
        }
    }

    /// What a data block's condition allows (read and write; value-block operations not covered).
    public struct DataRules: Sendable, Hashable {
        /// Who may read the block (READ, 30 xx).
        public var read: Permission
        /// Who may write the block (WRITE, A0 xx).
        public var write: Permission
    }

    /// What the trailer's condition allows for each part of the trailer.
    public struct TrailerRules: Sendable, Hashable {
        /// Who may write key A (trailer bytes 0–5; key A itself never reads back).
        public var writeKeyA: Permission
        /// Who may read the access bits and the general purpose byte (trailer bytes 6–9).
        public var readAccessBits: Permission
        /// Who may write the access bits and the general purpose byte (trailer bytes 6–9).
        public var writeAccessBits: Permission
        /// Who may read key B (trailer bytes 10–15); where key B is readable it serves as data, not as a key.
        public var readKeyB: Permission
        /// Who may write key B (trailer bytes 10–15).
        public var writeKeyB: Permission
    }

    /// Decodes bytes 6–8 of a trailer (byte 9, the general purpose byte, may follow and is ignored).
    /// - Returns: nil when fewer than 3 bytes are given or a bit does not match its inverted copy.
    public init?(bytes: [UInt8]) {
        guard bytes.count >= 3 else { return nil }
        let b6 = bytes[0], b7 = bytes[1], b8 = bytes[2]
        let c1 = b7 >> 4, c2 = b8 & 0x0F, c3 = b8 >> 4
        guard b6 & 0x0F == ~c1 & 0x0F, b6 >> 4 == ~c2 & 0x0F, b7 & 0x0F == ~c3 & 0x0F else { return nil }
        groups = (0..<4).map { g in ((c1 >> g) & 1) << 2 | ((c2 >> g) & 1) << 1 | ((c3 >> g) & 1) }
    }

    /// The conditions `groups` (four values 0…7) stand for.
    public init(groups: [UInt8]) {
        precondition(groups.count == 4 && groups.allSatisfy { $0 < 8 }, "four access groups of 3 bits")
        self.groups = groups
    }

    /// Bytes 6–8 that encode these conditions.
    public var bytes: [UInt8] {
        var c1: UInt8 = 0, c2: UInt8 = 0, c3: UInt8 = 0
        for (g, value) in groups.enumerated() {
            c1 |= ((value >> 2) & 1) << g
            c2 |= ((value >> 1) & 1) << g
            c3 |= (value & 1) << g
        }
        return [(~c2 & 0x0F) << 4 | (~c1 & 0x0F), c1 << 4 | (~c3 & 0x0F), c3 << 4 | c2]
    }

    /// The access group (0–3) of the block at `offset` in a sector of `blocksInSector` blocks (4 or 16).
    public static func group(ofOffset offset: Int, blocksInSector: Int) -> Int {
        if offset == blocksInSector - 1 { return 3 }
        return blocksInSector == 4 ? offset : offset / 5
    }

    /// A data block under condition `c` (MF1S50yyX §8.7.3, table 8).
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
    public static func dataBlock(_ c: UInt8) -> DataRules {
        switch c & 0x07 {
        case 0b000: DataRules(read: .keyAOrB, write: .keyAOrB)
        case 0b010: DataRules(read: .keyAOrB, write: .never)
        case 0b100, 0b110: DataRules(read: .keyAOrB, write: .keyB)
        case 0b001: DataRules(read: .keyAOrB, write: .never)
        case 0b011: DataRules(read: .keyB, write: .keyB)
        case 0b101: DataRules(read: .keyB, write: .never)
        default: DataRules(read: .never, write: .never)
        }
    }

    /// The sector trailer under condition `c` (MF1S50yyX §8.7.2, table 7). Key A never reads.
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
    public static func trailer(_ c: UInt8) -> TrailerRules {
        switch c & 0x07 {
        case 0b000: TrailerRules(writeKeyA: .keyA, readAccessBits: .keyA, writeAccessBits: .never, readKeyB: .keyA, writeKeyB: .keyA)
        case 0b010: TrailerRules(writeKeyA: .never, readAccessBits: .keyA, writeAccessBits: .never, readKeyB: .keyA, writeKeyB: .never)
        case 0b100: TrailerRules(writeKeyA: .keyB, readAccessBits: .keyAOrB, writeAccessBits: .never, readKeyB: .never, writeKeyB: .keyB)
        case 0b110: TrailerRules(writeKeyA: .never, readAccessBits: .keyAOrB, writeAccessBits: .never, readKeyB: .never, writeKeyB: .never)
        case 0b001: TrailerRules(writeKeyA: .keyA, readAccessBits: .keyA, writeAccessBits: .keyA, readKeyB: .keyA, writeKeyB: .keyA)
        case 0b011: TrailerRules(writeKeyA: .keyB, readAccessBits: .keyAOrB, writeAccessBits: .keyB, readKeyB: .never, writeKeyB: .keyB)
        case 0b101: TrailerRules(writeKeyA: .never, readAccessBits: .keyAOrB, writeAccessBits: .keyB, readKeyB: .never, writeKeyB: .never)
        default: TrailerRules(writeKeyA: .never, readAccessBits: .keyAOrB, writeAccessBits: .never, readKeyB: .never, writeKeyB: .never)
        }
    }

    /// Whether key B can be read (trailer condition 000, 010 or 001). Such a key B is data: it
    /// cannot serve to authenticate for reading or writing (MF1S50yyX §8.7.2).
    public var keyBReadable: Bool { [0b000, 0b010, 0b001].contains(groups[3]) }

    /// The rules for the data block at `offset` of a sector of `blocksInSector` blocks.
    public func dataRules(offset: Int, blocksInSector: Int) -> DataRules {
        Self.dataBlock(groups[Self.group(ofOffset: offset, blocksInSector: blocksInSector)])
    }

    /// C1 C2 C3 of `group` as three digits, e.g. "001".
    public func bits(group: Int) -> String {
        let c = groups[group]
        return "\(c >> 2 & 1)\(c >> 1 & 1)\(c & 1)"
    }

    /// `000 000 000 001`: C1C2C3 of the groups 0, 1, 2 and the trailer.
    public var description: String { (0..<4).map { bits(group: $0) }.joined(separator: " ") }
}
