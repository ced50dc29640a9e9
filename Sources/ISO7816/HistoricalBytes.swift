/// One COMPACT-TLV data object of the historical bytes (ISO/IEC 7816-4 §8.1.1.2):
/// `| tag (b8-b5) length (b4-b1) | value (length bytes) |`.
public struct CompactTLV: Sendable, Hashable {
    /// The tag number, 0…15 (the high nibble of the first byte): 1 country code, 2 issuer
    /// identification, 3 card service data, 4 initial access data, 5 card issuer's data,
    /// 6 pre-issuing data, 7 card capabilities, 8 status indicator, F application identifier.
    public let tag: UInt8
    /// The value, 0…15 bytes.
    public let value: [UInt8]

    /// An object with a tag number 0…15 and a value of at most 15 bytes; the caller keeps both in range.
    public init(tag: UInt8, value: [UInt8]) {
        self.tag = tag
        self.value = value
    }

    /// The first byte, tag and length: 73 for card capabilities of 3 bytes.
    public var tagLengthByte: UInt8 { tag << 4 | UInt8(truncatingIfNeeded: value.count) }

    /// The object as bytes.
    public func serialized() -> [UInt8] { [tagLengthByte] + value }
}

/// The PC/SC part 3 description of a contactless storage card, carried in the historical bytes as
/// `| 80 | 4F | 0C | RID (5) | SS | C0 C1 | 00 00 00 00 |` (PC/SC part 3 §3.1.3.2.3.2).
public struct ContactlessStorageCard: Sendable, Hashable {
    /// The registered application provider identifier, always A0 00 00 03 06 (PC/SC Workgroup).
    public let rid: [UInt8]
    /// SS, the standard byte: 03 means ISO/IEC 14443 A part 3.
    public let standard: UInt8
    /// C0 C1, the card name as a 16-bit value (0x0001 MIFARE Classic 1K).
    public let cardName: UInt16
    /// The four RFU bytes after the name.
    public let reserved: [UInt8]

    /// The PC/SC RID.
    public static let pcscRID: [UInt8] = [0xA0, 0x00, 0x00, 0x03, 0x06]

    /// Card names of the PC/SC part 3 supplement that this project meets (ACR122U API v2.04 §3).
    public static let cardNames: [UInt16: String] = [
        0x0001: "MIFARE Classic 1K",
        0x0002: "MIFARE Classic 4K",
        0x0003: "MIFARE Ultralight",
        0x0026: "MIFARE Mini",
        0xF004: "Topaz",
        0xF011: "FeliCa 212 kbit/s",
        0xF012: "FeliCa 424 kbit/s",
    ]

    /// The standard bytes known here.
    public static let standards: [UInt8: String] = [
        0x00: "no information given",
        0x03: "ISO/IEC 14443 A, part 3",
    ]

    /// The card name in words, or nil when not in `cardNames`.
    public var cardNameText: String? { Self.cardNames[cardName] }

    /// The standard in words, or nil when not in `standards`.
    public var standardText: String? { Self.standards[standard] }
}

/// The historical bytes of an ATR, decoded (ISO/IEC 7816-4 §8.1.1).
///
/// The category indicator (first byte) decides the layout:
/// - `00`: COMPACT-TLV objects, then a status indicator in the last 3 bytes `| LCS | SW1 | SW2 |`;
/// - `80`: COMPACT-TLV objects, a status indicator possibly among them (tag 8);
///   PC/SC part 3 storage cards use this category with the non-compact `4F 0C …` form, which is
///   recognised first;
/// - `10`: one byte of DIR data reference;
/// - anything else: proprietary, left undecoded.
public struct HistoricalBytes: Sendable, Hashable {
    /// The raw historical bytes.
    public let bytes: [UInt8]
    /// The category indicator, nil when there are no historical bytes.
    public var categoryIndicator: UInt8? { bytes.first }
    /// The COMPACT-TLV objects, in order (category 00 and 80).
    public let objects: [CompactTLV]
    /// The life-cycle status byte of the status indicator, if given.
    public let lifeCycleStatus: UInt8?
    /// The status word of the status indicator, if given.
    public let statusWord: StatusWord?
    /// Category 10: the DIR data reference.
    public let dirDataReference: UInt8?
    /// A PC/SC part 3 contactless storage card description, if this is one.
    public let contactlessStorageCard: ContactlessStorageCard?

    /// Decodes historical bytes.
    /// - Parameter bytes: the historical bytes, 0…15.
    /// - Throws: `ISO7816Error` `invalidHistoricalBytes` (or `truncated`) when a category 00, 10 or 80
    ///   layout is broken; the offset counts from the first historical byte. Proprietary categories
    ///   never throw.
    public init(parsing bytes: [UInt8]) throws(ISO7816Error) {
        self.bytes = bytes
        var objects: [CompactTLV] = []
        var lcs: UInt8? = nil
        var sw: StatusWord? = nil
        var dir: UInt8? = nil
        var storage: ContactlessStorageCard? = nil
        switch bytes.first {
        case nil:
            break
        case 0x80 where bytes.count >= 3 && bytes[1] == 0x4F && bytes[2] == 0x0C:
            guard bytes.count == 15 else {
                throw ISO7816Error(
                    .invalidHistoricalBytes, offset: min(bytes.count, 15),
                    "a PC/SC part 3 storage card description (80 4F 0C) is 15 bytes; got \(bytes.count)")
            }
            storage = ContactlessStorageCard(
                rid: Array(bytes[3..<8]), standard: bytes[8],
                cardName: UInt16(bytes[9]) << 8 | UInt16(bytes[10]), reserved: Array(bytes[11..<15]))
        case 0x80:
            objects = try Self.readCompactTLV(bytes, from: 1, to: bytes.count)
            if let status = objects.first(where: { $0.tag == 8 }) {
                switch status.value.count {
                case 1: lcs = status.value[0]
                case 2: sw = StatusWord(sw1: status.value[0], sw2: status.value[1])
                case 3:
                    lcs = status.value[0]
                    sw = StatusWord(sw1: status.value[1], sw2: status.value[2])
                default:
                    throw ISO7816Error(
                        .invalidHistoricalBytes, offset: nil,
                        "a status indicator (tag 8) holds 1 to 3 bytes; got \(status.value.count)")
                }
            }
        case 0x00:
            guard bytes.count >= 4 else {
                throw ISO7816Error(
                    .truncated, offset: bytes.count,
                    "category 00 ends with a 3-byte status indicator (LCS SW1 SW2); only \(bytes.count - 1) bytes follow the category")
            }
            objects = try Self.readCompactTLV(bytes, from: 1, to: bytes.count - 3)
            lcs = bytes[bytes.count - 3]
            sw = StatusWord(sw1: bytes[bytes.count - 2], sw2: bytes[bytes.count - 1])
        case 0x10:
            guard bytes.count == 2 else {
                throw ISO7816Error(
                    .invalidHistoricalBytes, offset: min(bytes.count, 2),
                    "category 10 is followed by exactly one DIR data reference byte; got \(bytes.count - 1)")
            }
            dir = bytes[1]
        default:
            break  // proprietary
        }
        self.objects = objects
        self.lifeCycleStatus = lcs
        self.statusWord = sw
        self.dirDataReference = dir
        self.contactlessStorageCard = storage
    }

    /// The first COMPACT-TLV object with this tag number.
    public func object(tag: UInt8) -> CompactTLV? { objects.first { $0.tag == tag } }

    /// The card capabilities (tag 7), if present.
    public var cardCapabilities: CardCapabilities? {
        object(tag: 7).map { CardCapabilities(compactTLVValue: $0.value) }
    }

    static func readCompactTLV(_ bytes: [UInt8], from start: Int, to end: Int) throws(ISO7816Error) -> [CompactTLV] {
        var result: [CompactTLV] = []
        var cursor = start
        while cursor < end {  // each pass consumes at least one byte
            let tl = bytes[cursor]
            let length = Int(tl & 0x0F)
            guard end - cursor - 1 >= length else {
                throw ISO7816Error(
                    .truncated, offset: end,
                    "COMPACT-TLV \([tl].hexString) at byte \(cursor) announces \(length) bytes; only \(end - cursor - 1) remain")
            }
            result.append(CompactTLV(tag: tl >> 4, value: Array(bytes[(cursor + 1)..<(cursor + 1 + length)])))
            cursor += 1 + length
        }
        return result
    }
}

/// What a card says it can do with command lengths, from the third software function table of
/// the card capabilities (COMPACT-TLV tag 7, ISO/IEC 7816-4 §8.1.1.2.7, table 87).
///
/// Third byte: b8 command chaining, b7 extended Lc and Le fields, b6 extended length information
/// in EF.ATR/INFO, b5-b4 logical channel assignment, b3-b1 maximum number of logical channels.
/// docs/cases.md P06: `73 C0 21 C0` → chaining and extended; `73 C8 40 00` → neither.
public struct CardCapabilities: Sendable, Hashable {
    /// Whether the card accepts command chaining (CLA b5 = 1 on all but the last block).
    public var supportsCommandChaining: Bool
    /// Whether the card accepts extended Lc and Le fields.
    public var supportsExtendedLength: Bool

    /// Capabilities as given, e.g. from the card capabilities object (tag 7) of the historical bytes,
    /// ISO/IEC 7816-4 §8.1.1.2.7.
    public init(supportsCommandChaining: Bool, supportsExtendedLength: Bool) {
        self.supportsCommandChaining = supportsCommandChaining
        self.supportsExtendedLength = supportsExtendedLength
    }

    /// Reads the value of COMPACT-TLV tag 7 (1 to 3 bytes); without a third byte neither is
    /// supported.
    public init(compactTLVValue value: [UInt8]) {
        let third: UInt8 = value.count >= 3 ? value[2] : 0
        self.supportsCommandChaining = third & 0x80 != 0
        self.supportsExtendedLength = third & 0x40 != 0
    }

    /// Neither chaining nor extended length: what to assume when the card says nothing.
    public static let shortOnly = CardCapabilities(supportsCommandChaining: false, supportsExtendedLength: false)
}
