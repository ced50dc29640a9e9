import ISO7816

/// A problem with a storage-card dump file or with restoring it: the file's size, a refused
/// write (access conditions, lock bits, OTP rules) or a mismatch with the card
/// (docs/storage-card-dumps.md).
public struct StorageDumpError: CodedError {
    /// The open set of ``StorageDumpError`` codes; its static members name the known ones.
    public struct Code: ErrorCode {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The file's size is not the size of a dump of this card.
        public static let wrongFileSize = Code(rawValue: "wrongFileSize")
        /// The card's kind or model cannot be dumped or restored here.
        public static let unsupportedCard = Code(rawValue: "unsupportedCard")
        /// One or more writes are refused by the card's rules; nothing was written.
        public static let refused = Code(rawValue: "refused")
        /// A block or page cannot be read with the key held.
        public static let unreadable = Code(rawValue: "unreadable")
    }

    public var code: Code
    public var reason: String
    /// Each refused block or page in words, for ``Code/refused``.
    public var refusals: [String]

    /// An error with its code, a reason in words, and for ``Code/refused`` each refused block or page.
    public init(_ code: Code, _ reason: String, refusals: [String] = []) {
        self.code = code
        self.reason = reason
        self.refusals = refusals
    }

    /// The reason, then one refusal per line.
    public var description: String {
        ([reason] + refusals.map { "  " + $0 }).joined(separator: "\n")
    }
}

// MARK: - MIFARE Classic

/// A MIFARE Classic dump in libnfc's `.mfd` layout (libnfc `utils/nfc-mfclassic.c`,
/// `mifare_classic_tag`; docs/storage-card-dumps.md §1): every block, 16 bytes each, in block order,
/// nothing else — 320 bytes (Mini), 1024 (1K), 4096 (4K). Each sector trailer holds
/// `| key A (6) | access bits (3) | GPB (1) | key B (6) |` with the keys the reader knew and
/// 00 × 6 for a key it did not know.
public struct MifareClassicDump: Sendable, Hashable {
    /// The card kind the dump was read from (MIFARE Mini, Classic 1K or 4K), which fixes the block
    /// count (20, 64 or 256).
    public let kind: StorageCardKind
    /// Every block, 16 bytes each.
    public private(set) var blocks: [[UInt8]]

    /// - Throws: ``StorageDumpError`` `wrongFileSize` unless `bytes` is exactly the card's size,
    ///   `unsupportedCard` for a kind that is not MIFARE Classic.
    public init(kind: StorageCardKind, bytes: [UInt8], file: String = "the dump") throws(StorageDumpError) {
        guard let count = kind.classicBlockCount else {
            throw StorageDumpError(.unsupportedCard, "\(kind) is not a MIFARE Classic card")
        }
        guard bytes.count == count * 16 else {
            let others = [(StorageCardKind.mifareMini, 320), (.mifareClassic1K, 1024), (.mifareClassic4K, 4096)]
                .filter { $0.1 == bytes.count }.map { " (the size of a \($0.0) dump)" }.first ?? ""
            throw StorageDumpError(
                .wrongFileSize,
                "\(file) is \(bytes.count) bytes\(others): a \(kind) dump in libnfc's .mfd layout is \(count * 16) bytes (\(count) blocks of 16)")
        }
        self.kind = kind
        blocks = (0..<count).map { Array(bytes[$0 * 16..<$0 * 16 + 16]) }
    }

    /// The file's bytes.
    public var bytes: [UInt8] { blocks.flatMap { $0 } }

    /// The number of sectors (5, 16 or 40).
    public var sectorCount: Int { MifareClassicLayout.sector(ofBlock: blocks.count - 1) + 1 }

    /// The blocks of `sector`.
    public static func blocks(ofSector sector: Int) -> Range<Int> {
        let first = MifareClassicLayout.firstBlock(ofSector: sector)
        return first..<first + (sector < 32 ? 4 : 16)
    }

    /// The key of `keyType` in the trailer of `sector` (bytes 0–5 or 10–15).
    public func key(_ keyType: MifareKeyType, sector: Int) -> MifareKey {
        let trailer = blocks[Self.blocks(ofSector: sector).upperBound - 1]
        return try! MifareKey(bytes: Array(keyType == .a ? trailer[0..<6] : trailer[10..<16]))
    }

    /// Reads every block of the card in `card` with `key` as key A or B, each sector's trailer
    /// first (its access bits say which blocks the key may read). Trailers get the keys as libnfc
    /// writes them: the key used in its slot; the other key where the card shows it (key B under
    /// trailer conditions 000, 010, 001 read with key A), else 00 × 6.
    /// - Parameters:
    ///   - kind: the card kind, from the ATR; a MIFARE Classic kind (Mini, 1K or 4K).
    ///   - keyType: whether the keys are key A or key B of their sectors.
    ///   - keyForSector: the key of each sector (one key for all, or a keys file's).
    ///   - card: the storage card to read, on a connection with the card.
    /// - Throws: ``StorageCardError`` (Load Keys, authentication, Read Binary), ``StorageDumpError``
    ///   `unreadable` (a block the access conditions keep from this key), the channel's errors.
    public static func read(
        kind: StorageCardKind, keyType: MifareKeyType, keyForSector: (Int) -> MifareKey, from card: StorageCard
    ) throws -> MifareClassicDump {
        guard let count = kind.classicBlockCount else {
            throw StorageDumpError(.unsupportedCard, "\(kind) is not a MIFARE Classic card")
        }
        var out = [[UInt8]](repeating: [UInt8](repeating: 0, count: 16), count: count)
        var loaded: MifareKey?
        for sector in 0...MifareClassicLayout.sector(ofBlock: count - 1) {
            let range = blocks(ofSector: sector)
            let key = try authenticate(sector: sector, keyType: keyType, keyForSector: keyForSector, loaded: &loaded, card: card)
            let trailerBlock = range.upperBound - 1
            var trailer = try readBlock(trailerBlock, sector: sector, keyType: keyType, card: card)
            guard let conditions = MifareAccessConditions(bytes: Array(trailer[6..<9])) else {
                throw StorageDumpError(.unreadable, "sector \(sector): the access bits read (\(Array(trailer[6..<9]).hexString)) are not consistent, so the sector cannot be read")
            }
            let rules = MifareAccessConditions.trailer(conditions.groups[3])
            let keyBKnown = keyType == .a && rules.readKeyB.allows(.a)
            trailer.replaceSubrange(0..<6, with: keyType == .a ? key.bytes : [UInt8](repeating: 0, count: 6))
            if !keyBKnown {
                trailer.replaceSubrange(10..<16, with: keyType == .b ? key.bytes : [UInt8](repeating: 0, count: 6))
            }
            out[trailerBlock] = trailer
            for block in range.dropLast() {
                let rule = conditions.dataRules(offset: block - range.lowerBound, blocksInSector: range.count)
                guard rule.read.allows(keyType) else {
                    let group = MifareAccessConditions.group(ofOffset: block - range.lowerBound, blocksInSector: range.count)
                    throw StorageDumpError(.unreadable, "block \(block) (sector \(sector)): its access conditions (C1C2C3 \(conditions.bits(group: group)), read: \(rule.read)) do not let key \(keyType) read it; try \(keyType == .a ? "--key-b" : "key A")")
                }
                out[block] = try readBlock(block, sector: sector, keyType: keyType, card: card)
            }
        }
        return try MifareClassicDump(kind: kind, bytes: out.flatMap { $0 })
    }

    /// Load Keys (only when the sector's key is not the one loaded last) and General Authenticate
    /// for the first block of `sector`; returns the key.
    private static func authenticate(
        sector: Int, keyType: MifareKeyType, keyForSector: (Int) -> MifareKey, loaded: inout MifareKey?, card: StorageCard
    ) throws -> MifareKey {
        let key = keyForSector(sector)
        if loaded != key {
            try card.loadKey(key, slot: 0)
            loaded = key
        }
        try card.authenticate(block: UInt8(MifareClassicLayout.firstBlock(ofSector: sector)), keyType: keyType, slot: 0)
        return key
    }

    private static func readBlock(_ block: Int, sector: Int, keyType: MifareKeyType, card: StorageCard) throws -> [UInt8] {
        do {
            return try card.readBinary(block: UInt8(block), length: 16)
        } catch var error as StorageCardError where error.code == .operationFailed && keyType == .b {
            error.reason = "the card refused the read after authenticating sector \(sector) with key B: when key B is readable (trailer conditions 000, 010, 001, such as the transport setting FF 07 80) it serves for nothing"
            error.remedy = "use key A (without --key-b)"
            throw error
        }
    }

    /// What ``plan(keyType:keyForSector:writeTrailers:on:)`` decided.
    public struct Plan: Sendable, Hashable {
        /// One Update Binary.
        public struct Write: Sendable, Hashable {
            /// The block number, 0-based across the card (sector trailers included).
            public var block: Int
            /// The 16 bytes to write.
            public var data: [UInt8]
        }
        /// The blocks to write, in order; each sector's trailer after its data blocks.
        public var writes: [Write] = []
        /// Blocks already holding the dump's bytes.
        public var unchanged: [Int] = []
        /// Sector trailers not written (no --write-trailers) whose bytes on the card differ from the dump's.
        public var trailersSkipped: [Int] = []
        /// Whether block 0 of the dump differs from the card's (a dump of another card).
        public var blockZeroDiffers = false

        mutating func add(_ block: Int, _ data: [UInt8]) { writes.append(Write(block: block, data: data)) }
    }

    /// Checks every block against the card before anything is written: for each sector the key
    /// authenticates, the trailer's access bits are read and decoded, each data block that differs
    /// from the card must be writable with the key held (MF1S50yyX §8.7.3), and a trailer is
    /// written only with `writeTrailers`, only when the dump's access bits are consistent
    /// (docs/storage-card-dumps.md §2) and the card's trailer conditions let the key held write key
    /// A, key B and (when they change) the access bits. Block 0, the manufacturer block, is never
    /// written.
    /// - Throws: ``StorageDumpError`` `refused` listing every refused block (nothing is written),
    ///   ``StorageCardError`` from the commands, the channel's errors.
    public func plan(
        keyType: MifareKeyType, keyForSector: (Int) -> MifareKey, writeTrailers: Bool, on card: StorageCard
    ) throws -> Plan {
        var plan = Plan()
        var refusals: [String] = []
        var loaded: MifareKey?
        for sector in 0..<sectorCount {
            let range = Self.blocks(ofSector: sector)
            let key = try Self.authenticate(sector: sector, keyType: keyType, keyForSector: keyForSector, loaded: &loaded, card: card)
            let trailerBlock = range.upperBound - 1
            let current = try Self.readBlock(trailerBlock, sector: sector, keyType: keyType, card: card)
            guard let conditions = MifareAccessConditions(bytes: Array(current[6..<9])) else {
                refusals.append("sector \(sector): the card's access bits \(Array(current[6..<9]).hexString) are not consistent; the sector cannot be written")
                continue
            }
            for block in range.dropLast() {
                let rule = conditions.dataRules(offset: block - range.lowerBound, blocksInSector: range.count)
                let onCard = rule.read.allows(keyType) ? try Self.readBlock(block, sector: sector, keyType: keyType, card: card) : nil
                if block == 0 {
                    plan.blockZeroDiffers = onCard != nil && onCard != blocks[0]
                    continue
                }
                if onCard == blocks[block] {
                    plan.unchanged.append(block)
                    continue
                }
                guard rule.write.allows(keyType) else {
                    let group = MifareAccessConditions.group(ofOffset: block - range.lowerBound, blocksInSector: range.count)
                    refusals.append("block \(block) (sector \(sector)): its access conditions (C1C2C3 \(conditions.bits(group: group)), write: \(rule.write)) do not let key \(keyType) write it")
                    continue
                }
                plan.add(block, blocks[block])
            }
            let wanted = blocks[trailerBlock]
            // What the card shows of its trailer: access bits and GPB always, key B when readable.
            let rules = MifareAccessConditions.trailer(conditions.groups[3])
            let bitsChange = Array(wanted[6..<10]) != Array(current[6..<10])
            let keysMatch = keyType == .a ? Array(wanted[0..<6]) == key.bytes : Array(wanted[10..<16]) == key.bytes
            let keyBShown = rules.readKeyB.allows(keyType)
            let otherMatches = keyType == .a ? (keyBShown && Array(wanted[10..<16]) == Array(current[10..<16])) : false
            if !bitsChange && keysMatch && otherMatches {
                plan.unchanged.append(trailerBlock)
                continue
            }
            guard writeTrailers else {
                plan.trailersSkipped.append(trailerBlock)
                continue
            }
            let label = "block \(trailerBlock) (sector \(sector) trailer)"
            guard MifareAccessConditions(bytes: Array(wanted[6..<9])) != nil else {
                refusals.append("\(label): the dump's access bits \(Array(wanted[6..<9]).hexString) are not consistent (each bit must be the inverse of its copy): writing them would block the sector for good")
                continue
            }
            var missing: [String] = []
            if !rules.writeKeyA.allows(keyType) { missing.append("key A (\(rules.writeKeyA) may write it)") }
            if !rules.writeKeyB.allows(keyType) { missing.append("key B (\(rules.writeKeyB) may write it)") }
            if bitsChange && !rules.writeAccessBits.allows(keyType) { missing.append("the access bits (\(rules.writeAccessBits) may write them)") }
            guard missing.isEmpty else {
                refusals.append("\(label): the card's trailer conditions (C1C2C3 \(conditions.bits(group: 3))) do not let key \(keyType) write \(missing.joined(separator: ", "))")
                continue
            }
            plan.add(trailerBlock, wanted)
        }
        if !refusals.isEmpty {
            throw StorageDumpError(.refused, "nothing was written: \(refusals.count) block\(refusals.count == 1 ? " is" : "s are") refused", refusals: refusals)
        }
        return plan
    }

    /// Writes `plan` (sector by sector: authenticate, then Update Binary of each block, the
    /// trailer last).
    /// - Returns: the blocks written.
    /// - Throws: ``StorageCardError`` naming the block, the channel's errors.
    @discardableResult
    public static func execute(
        _ plan: Plan, keyType: MifareKeyType, keyForSector: (Int) -> MifareKey, on card: StorageCard
    ) throws -> [Int] {
        var written: [Int] = []
        var sector: Int?
        var loaded: MifareKey?
        for write in plan.writes {
            let block = write.block
            let s = MifareClassicLayout.sector(ofBlock: block)
            if s != sector {
                _ = try authenticate(sector: s, keyType: keyType, keyForSector: keyForSector, loaded: &loaded, card: card)
                sector = s
            }
            try card.updateBinary(block: UInt8(block), data: write.data)
            written.append(block)
        }
        return written
    }
}

// MARK: - Type 2 Tags

/// The page layout a Type 2 Tag dump and restore need: how many pages, which are configuration
/// (NXP NTAG213/215/216 data sheet §8.5; NXP MF0ICU1 §7.5; docs/storage-card-dumps.md §3).
///
/// | Model | Pages | Dump bytes | User pages | Dynamic lock | CFG0, CFG1 | PWD, PACK |
/// |---|---|---|---|---|---|---|
/// | MIFARE Ultralight | 16 | 64 | 4–0Fh | – | – | – |
/// | NTAG213 | 45 | 180 | 4–27h | 28h | 29h, 2Ah | 2Bh, 2Ch |
/// | NTAG215 | 135 | 540 | 4–81h | 82h | 83h, 84h | 85h, 86h |
/// | NTAG216 | 231 | 924 | 4–E1h | E2h | E3h, E4h | E5h, E6h |
public struct Type2TagLayout: Sendable, Hashable, CustomStringConvertible {
    /// The NTAG model; nil for a MIFARE Ultralight (no GET_VERSION).
    public let product: Type2TagProduct?

    /// The layout of `product`'s memory; nil for a MIFARE Ultralight (16 pages).
    public init(product: Type2TagProduct?) { self.product = product }

    /// 16 for an Ultralight; 45, 135, 231 for NTAG213/215/216.
    public var pageCount: Int { product.map { $0.lastUserPage + 6 } ?? 16 }
    /// The last user memory page.
    public var lastUserPage: Int { product?.lastUserPage ?? 15 }
    /// The page of the dynamic lock bytes (NTAG only).
    public var dynamicLockPage: Int? { product.map { $0.lastUserPage + 1 } }

    public var description: String { product?.description ?? "MIFARE Ultralight" }

    /// The pages a lock bit protects, given page 2's lock bytes and (NTAG) the dynamic lock page:
    /// LOCK0 bit 3 → page 3, bits 4–7 → pages 4–7; LOCK1 bits 0–7 → pages 8–15 (NTAG21x §8.5.2,
    /// MF0ICU1 §7.5.2). NTAG213 dynamic lock byte 0 bits 0–7 lock pages 16–31 two by two, byte 1
    /// bits 0–3 pages 32–39 (NTAG21x §8.5.3). On an NTAG215/216 any bit set in dynamic lock bytes 0–1 counts as
    /// locking every page from 16 (their mapping is not in docs/, so this side errs on refusing).
    public func isLocked(page: Int, lockBytes: [UInt8], dynamicLock: [UInt8]) -> Bool {
        switch page {
        case 3: return lockBytes[0] & 0x08 != 0
        case 4...7: return lockBytes[0] & (1 << UInt8(page)) != 0
        case 8...15: return lockBytes[1] & (1 << UInt8(page - 8)) != 0
        case 16...lastUserPage where dynamicLock.count >= 2:
            if product == .ntag213 {
                let bit = (page - 16) / 2
                return bit < 8 ? dynamicLock[0] & (1 << UInt8(bit)) != 0 : dynamicLock[1] & (1 << UInt8(bit - 8)) != 0
            }
            return dynamicLock[0] != 0 || dynamicLock[1] != 0
        default: return false
        }
    }
}

/// A Type 2 Tag dump in libnfc's layout (`utils/nfc-mfultralight.c`; docs/storage-card-dumps.md
/// §1): every page, 4 bytes each, from page 0, nothing else — 64 bytes (Ultralight), 180 / 540 /
/// 924 (NTAG213/215/216). PWD and PACK always read as 00 (NTAG21x §8.5.7), so a dump never holds
/// the password.
public struct Type2TagDump: Sendable, Hashable {
    /// The tag's memory layout (its product), which fixes the page count.
    public let layout: Type2TagLayout
    /// Every page, 4 bytes each.
    public let pages: [[UInt8]]

    /// - Throws: ``StorageDumpError`` `wrongFileSize` unless `bytes` is the model's size.
    public init(layout: Type2TagLayout, bytes: [UInt8], file: String = "the dump") throws(StorageDumpError) {
        guard bytes.count == layout.pageCount * 4 else {
            let others = [Type2TagLayout(product: nil)] + Type2TagProduct.allCases.map { Type2TagLayout(product: $0) }
            let named = others.first { $0.pageCount * 4 == bytes.count }.map { " (the size of a \($0) dump)" } ?? ""
            throw StorageDumpError(
                .wrongFileSize,
                "\(file) is \(bytes.count) bytes\(named): a \(layout) dump in libnfc's layout is \(layout.pageCount * 4) bytes (\(layout.pageCount) pages of 4)")
        }
        self.layout = layout
        pages = (0..<layout.pageCount).map { Array(bytes[$0 * 4..<$0 * 4 + 4]) }
    }

    /// The file's bytes.
    public var bytes: [UInt8] { pages.flatMap { $0 } }

    /// Reads every page, four at a time (`FF B0 00 <page> 10`; the last read asks only for the
    /// pages left).
    /// - Throws: ``StorageCardError`` from Read Binary; the channel's errors.
    public static func read(layout: Type2TagLayout, from card: StorageCard) throws -> Type2TagDump {
        var bytes: [UInt8] = []
        var page = 0
        while page < layout.pageCount {
            let count = min(4, layout.pageCount - page)
            bytes += try card.readBinary(block: UInt8(page), length: count * 4)
            page += count
        }
        return try Type2TagDump(layout: layout, bytes: bytes)
    }

    /// What ``plan(onCard:lockBytes:configuration:)`` decided.
    public struct Plan: Sendable, Hashable {
        /// (page, 4 bytes) to write, in order: data pages, configuration, then the lock bytes.
        public var pages: [Int] = []
        /// The 4 bytes for each of ``pages``, in the same order.
        public var data: [[UInt8]] = []
        /// Pages already holding the dump's bytes.
        public var unchanged: [Int] = []
        /// Pages the tool never writes whose bytes differ from the dump (UID pages, PWD, PACK).
        public var neverWritten: [Int] = []
        /// Lock pages (2, dynamic lock) that differ and were not written (no `lockBytes`).
        public var locksSkipped: [Int] = []
    }

    /// Checks every page against `current` (the tag's pages, read first) before anything is written
    /// (NTAG21x §8.5, §10.4; MF0ICU1 §7.5; docs/storage-card-dumps.md §3):
    /// - pages 0–1 and page 2 bytes 0–1 (UID, check bytes, internal byte) are never written;
    /// - lock bytes (page 2 bytes 2–3; NTAG dynamic lock page) only with `lockBytes`, and only
    ///   setting bits (a lock bit cannot be cleared);
    /// - page 3 (capability container) is OTP: its bits may only be set;
    /// - a page a lock bit protects is refused;
    /// - NTAG CFG0/CFG1 only with `configuration`; PWD and PACK never (they read as 00).
    /// - Throws: ``StorageDumpError`` `refused` listing every refused page (nothing is written).
    public func plan(onCard current: Type2TagDump, lockBytes: Bool, configuration: Bool) throws(StorageDumpError) -> Plan {
        var plan = Plan()
        var refusals: [String] = []
        var late: [(Int, [UInt8])] = []
        let locks = Array(current.pages[2][2..<4])
        let dynamic = layout.dynamicLockPage.map { current.pages[$0] } ?? []
        func onlySets(_ old: [UInt8], _ new: [UInt8]) -> Bool { zip(old, new).allSatisfy { $0 & ~$1 == 0 } }
        for page in 0..<layout.pageCount {
            let want = pages[page], have = current.pages[page]
            if want == have {
                plan.unchanged.append(page)
                continue
            }
            switch page {
            case 0, 1:
                plan.neverWritten.append(page)
            case 2:
                if Array(want[0..<2]) != Array(have[0..<2]) { plan.neverWritten.append(page) }
                guard Array(want[2..<4]) != Array(have[2..<4]) else { continue }
                guard lockBytes else { plan.locksSkipped.append(page); continue }
                guard onlySets(Array(have[2..<4]), Array(want[2..<4])) else {
                    refusals.append("page 2: the dump's lock bytes \(Array(want[2..<4]).hexString) would clear lock bits set on the tag (\(Array(have[2..<4]).hexString)); a lock bit cannot be cleared")
                    continue
                }
                late.append((page, Array(have[0..<2]) + Array(want[2..<4])))
            case 3:
                if layout.isLocked(page: 3, lockBytes: locks, dynamicLock: dynamic) {
                    refusals.append("page 3 (capability container): locked by lock bit L-CC (page 2 byte 2 bit 3)")
                } else if !onlySets(have, want) {
                    refusals.append("page 3 (capability container): one-time programmable, bits can only be set; the dump's \(want.hexString) would clear bits of the tag's \(have.hexString)")
                } else {
                    plan.pages.append(page)
                    plan.data.append(want)
                }
            case _ where page == layout.dynamicLockPage:
                guard lockBytes else { plan.locksSkipped.append(page); continue }
                guard onlySets(Array(have[0..<3]), Array(want[0..<3])) else {
                    refusals.append("page \(page) (dynamic lock bytes): the dump's \(Array(want[0..<3]).hexString) would clear lock bits set on the tag (\(Array(have[0..<3]).hexString)); a lock bit cannot be cleared")
                    continue
                }
                late.append((page, Array(want[0..<3]) + [have[3]]))
            case _ where page > layout.lastUserPage + 3:
                plan.neverWritten.append(page)
            case _ where page > layout.lastUserPage:
                guard configuration else {
                    refusals.append("page \(page) (\(page == layout.lastUserPage + 2 ? "CFG0" : "CFG1")): configuration differs from the tag's (\(have.hexString) on the tag, \(want.hexString) in the dump); add --config to write it")
                    continue
                }
                plan.pages.append(page)
                plan.data.append(want)
            default:
                if layout.isLocked(page: page, lockBytes: locks, dynamicLock: dynamic) {
                    refusals.append("page \(page): locked (\(page < 16 ? "static lock bits, page 2 bytes 2–3: \(locks.hexString)" : "dynamic lock bytes, page \(layout.dynamicLockPage ?? 0): \(Array(dynamic.prefix(3)).hexString)")); a locked page cannot be written")
                } else {
                    plan.pages.append(page)
                    plan.data.append(want)
                }
            }
        }
        if !refusals.isEmpty {
            throw StorageDumpError(.refused, "nothing was written: \(refusals.count) page\(refusals.count == 1 ? " is" : "s are") refused", refusals: refusals)
        }
        for (page, data) in late {
            plan.pages.append(page)
            plan.data.append(data)
        }
        return plan
    }

    /// Writes `plan` with Update Binary, one page at a time.
    /// - Throws: ``StorageCardError`` naming the page, the channel's errors.
    public static func execute(_ plan: Plan, on card: StorageCard) throws {
        for (page, data) in zip(plan.pages, plan.data) {
            try card.updateBinary(block: UInt8(page), data: data)
        }
    }
}
