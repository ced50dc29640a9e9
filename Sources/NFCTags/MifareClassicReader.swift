import ISO7816

/// Reads MIFARE Classic blocks (1K, 4K, Mini) with one key through a PC/SC part 3 reader
/// (ACR122U API v2.04 §5; NXP MF1S50yyX / MF1S70yyX data sheets; docs/iso14443-t4t-ndef.md §6).
///
/// The sequence, byte for byte:
/// 1. Load Keys `FF 82 00 00 06 <key>` (volatile memory, slot 00);
/// 2. for each sector that holds a requested block, once: General Authenticate
///    `FF 86 00 00 05 01 00 <first block of the sector> <60 A | 61 B> 00`;
/// 3. Read Binary `FF B0 00 <block> 10` for each requested block of that sector, in order.
///
/// Sectors 0–31 have 4 blocks, sectors 32–39 of a 4K card 16 (``MifareClassicLayout``). In a sector
/// trailer read, key A always reads as zeros (the card never reveals it); key B reads as zeros or
/// as its value, depending on the access bits. The key is never shown in errors or descriptions.
public enum MifareClassicReader {
    /// One block read.
    public struct Block: Sendable, Hashable {
        /// The block number, 0…255.
        public var number: Int
        /// The sector it belongs to.
        public var sector: Int
        /// The 16 bytes read.
        public var data: [UInt8]
        /// Whether it is the sector trailer `| key A (6) | access bits (3) | GPB | key B (6) |`.
        public var isSectorTrailer: Bool { MifareClassicLayout.isSectorTrailer(number) }
    }

    /// Reads `blocks` (in ascending order, each once) with `key` as key A or B.
    /// - Parameters:
    ///   - blocks: block numbers; they must lie on the card (`kind.classicBlockCount`).
    ///   - key: the 6-byte key, loaded into the reader's volatile key slot.
    ///   - keyType: whether `key` is key A or key B of each sector.
    ///   - kind: the card kind, from the ATR (``StorageCard/kind(atr:)``); a MIFARE Classic kind.
    ///   - card: the storage card to read, on a connection with the card.
    /// - Throws: ``StorageCardError`` `invalidArgument` (no blocks, a block beyond the card, not a
    ///   MIFARE Classic kind), `authenticationFailed` ("authentication failed for sector N with
    ///   key A: wrong key or access conditions"), and the other codes of Load Keys and Read Binary;
    ///   the channel's errors unchanged.
    public static func read(
        blocks: [Int], key: MifareKey, keyType: MifareKeyType, kind: StorageCardKind, from card: StorageCard
    ) throws -> [Block] {
        try read(blocks: blocks, key: key, keyType: keyType, kind: kind, from: card) { _ in }
    }

    /// As ``read(blocks:key:keyType:kind:from:)``, handing each block to `each` as soon as it is
    /// read, so that a caller keeps what was read before an error (a card taken away mid-read).
    @discardableResult
    public static func read(
        blocks: [Int], key: MifareKey, keyType: MifareKeyType, kind: StorageCardKind, from card: StorageCard,
        each: (Block) -> Void
    ) throws -> [Block] {
        guard let blockCount = kind.classicBlockCount else {
            throw StorageCardError(.invalidArgument, operation: "MIFARE Classic read", command: [],
                                   reason: "the card is a \(kind), not MIFARE Classic")
        }
        let wanted = Array(Set(blocks)).sorted()
        guard !wanted.isEmpty else {
            throw StorageCardError(.invalidArgument, operation: "MIFARE Classic read", command: [],
                                   reason: "no blocks to read; give at least one block number")
        }
        if let outside = wanted.first(where: { $0 < 0 || $0 >= blockCount }) {
            throw StorageCardError(.invalidArgument, operation: "MIFARE Classic read", command: [],
                                   reason: "block \(outside) is not on a \(kind), which has blocks 0–\(blockCount - 1)",
                                   remedy: "give blocks 0–\(blockCount - 1) with --blocks")
        }
        try card.loadKey(key, slot: 0)
        var result: [Block] = []
        var authenticated: Int? = nil
        for block in wanted {
            let sector = MifareClassicLayout.sector(ofBlock: block)
            if authenticated != sector {
                try card.authenticate(block: UInt8(MifareClassicLayout.firstBlock(ofSector: sector)), keyType: keyType, slot: 0)
                authenticated = sector
            }
            let data: [UInt8]
            do {
                data = try card.readBinary(block: UInt8(block), length: 16)
            } catch var error as StorageCardError where error.code == .operationFailed && keyType == .b {
                // Authentication with key B succeeded, the read did not: under the transport access
                // conditions FF 07 80 key B is readable, and a readable key B may not serve to read or
                // write (MF1S50yyX §8.7.2). The access bits themselves cannot be read without access.
                error.reason = "the card refused the read after authenticating with key B: with the transport access conditions (FF 07 80) key B may not read"
                error.remedy = "try key A (without --key-b)"
                throw error
            }
            result.append(Block(number: block, sector: sector, data: data))
            each(result[result.count - 1])
        }
        return result
    }

    /// Parses `N` or `N-M` (inclusive) into block numbers, e.g. "4-7" → 4, 5, 6, 7.
    /// - Throws: ``StorageCardError`` `invalidArgument` for text that is not a block or a range
    ///   N ≤ M of numbers 0…255.
    public static func blocks(parsing text: String) throws(StorageCardError) -> [Int] {
        // Decimal digits only (no sign, no spaces inside): "+5" and "4-+7" are refused.
        let parts = text.split(separator: "-", omittingEmptySubsequences: false).map { part -> Int? in
            let digits = part.trimmingPrefix(" ")
            guard !digits.isEmpty, digits.count <= 3, digits.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
            return Int(digits)
        }
        func bad() -> StorageCardError {
            StorageCardError(.invalidArgument, operation: "block range", command: [],
                             reason: "'\(text)' is not a block number or a range N-M of block numbers 0–255 (e.g. 4 or 4-7)")
        }
        switch parts.count {
        case 1:
            guard let n = parts[0], (0...255).contains(n) else { throw bad() }
            return [n]
        case 2:
            guard let n = parts[0], let m = parts[1], (0...255).contains(n), (0...255).contains(m) else { throw bad() }
            guard n <= m else {
                throw StorageCardError(.invalidArgument, operation: "block range", command: [],
                                       reason: "'\(text)' is a reversed range: the first block comes first (\(m)-\(n))")
            }
            return Array(n...m)
        default:
            throw bad()
        }
    }
}
