import ISO7816
import PCSCCore

/// A reason a Type 2 Tag could not be read or written: a code, the page and data-area offset it
/// concerns, the bytes found there, and why (NFC Forum Type 2 Tag operation; docs/iso14443-t4t-ndef.md §6).
///
/// The reader's own failures (63 00, a truncated read) come as ``StorageCardError`` instead, naming
/// the Read Binary or Update Binary command and the page. Equal when the codes are equal (as
/// `TagFormatError`).
public struct Type2TagError: CodedError {
    /// The open set of ``Type2TagError`` codes; its static members name the known ones.
    public struct Code: ErrorCode {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The capability container's magic byte is not E1.
        public static let notNDEFFormatted = Code(rawValue: "notNDEFFormatted")
        /// The capability container's major version is not 1.
        public static let unsupportedVersion = Code(rawValue: "unsupportedVersion")
        /// The capability container's access byte refuses writing (write nibble not 0).
        public static let readOnly = Code(rawValue: "readOnly")
        /// The NDEF TLV does not fit in the data area.
        public static let doesNotFit = Code(rawValue: "doesNotFit")
        /// A TLV's length runs past the data area, or the data area ends inside a TLV header.
        public static let malformedTLV = Code(rawValue: "malformedTLV")
        /// No NDEF Message TLV (03) before the terminator or the end of the data area.
        public static let noNDEFTLV = Code(rawValue: "noNDEFTLV")
        /// The NDEF TLV's value is not a valid NDEF message.
        public static let invalidNDEF = Code(rawValue: "invalidNDEF")
        /// The data area reaches pages Read Binary / Update Binary cannot address (above FF).
        public static let pageOutOfRange = Code(rawValue: "pageOutOfRange")
        /// Reading back after a write gave other bytes than were written.
        public static let verifyMismatch = Code(rawValue: "verifyMismatch")
        /// The capability container claims a larger data area than the tag's model (GET_VERSION)
        /// has user memory: writing by the CC would overwrite lock and configuration pages.
        public static let capabilityContainerExceedsModel = Code(rawValue: "capabilityContainerExceedsModel")
        /// A static lock bit (page 2 bytes 2–3) protects a page the write needs.
        public static let locked = Code(rawValue: "locked")
    }

    public var code: Code
    /// The page (4 bytes each, from 0) concerned, if any.
    public var page: Int?
    /// The offset from the start of the data area (page 4 byte 0), if any.
    public var offset: Int?
    /// The bytes found (or, for `verifyMismatch`, read back), possibly empty.
    public var bytes: [UInt8]
    public var reason: String
    /// What to do next, in words; empty when there is nothing useful to say.
    public var remedy: String

    /// An error with its code, the page and the offset in it when the error is about a position, the
    /// bytes concerned, a reason, and what to do next (`remedy`, may be empty).
    public init(_ code: Code, page: Int? = nil, offset: Int? = nil, bytes: [UInt8] = [], _ reason: String, remedy: String = "") {
        self.code = code
        self.page = page
        self.offset = offset
        self.bytes = bytes
        self.reason = reason
        self.remedy = remedy
    }

    /// An error at data-area `offset`, with its page (4 + offset / 4).
    static func at(_ code: Code, offset: Int, bytes: [UInt8], _ reason: String, remedy: String = "") -> Type2TagError {
        Type2TagError(code, page: 4 + offset / 4, offset: offset, bytes: bytes, reason, remedy: remedy)
    }

    /// The reason in words first (never the code's name), then where and what was found, then
    /// what to do: `the … TLV at data offset 4 declares … (page 5, data offset 4: 03 FF 01 00); remedy`.
    public var description: String {
        var place: [String] = []
        if let page { place.append("page \(page)") }
        if let offset { place.append("data offset \(offset)") }
        var text = reason
        switch (place.isEmpty, bytes.isEmpty) {
        case (false, false): text += " (\(place.joined(separator: ", ")): \(bytes.hexString))"
        case (false, true): text += " (\(place.joined(separator: ", ")))"
        case (true, false): text += " (bytes \(bytes.hexString))"
        case (true, true): break
        }
        if !remedy.isEmpty { text += "; \(remedy)" }
        return text
    }
}

/// The capability container of a Type 2 Tag, page 3: `| E1 (NDEF magic) | version (major b7–b4,
/// minor b3–b0) | SIZE (data area bytes / 8) | access (read b7–b4, write b3–b0) |`
/// (NFC Forum Type 2 Tag operation §6.1; NXP NTAG213/215/216 data sheet §8.5.6).
///
/// NTAG213 `E1 10 12 00` (144 bytes), NTAG215 `E1 10 3E 00` (496), NTAG216 `E1 10 6D 00` (872).
public struct Type2CapabilityContainer: Sendable, Hashable {
    /// The four bytes as read.
    public let bytes: [UInt8]
    /// The version byte (10 = 1.0).
    public var version: UInt8 { bytes[1] }
    /// The SIZE byte.
    public var sizeByte: UInt8 { bytes[2] }
    /// The access byte: 00 read/write, 0F read-only.
    public var access: UInt8 { bytes[3] }
    /// The data area's size in bytes, SIZE × 8.
    public var dataAreaSize: Int { Int(bytes[2]) * 8 }
    /// Whether the write access nibble refuses writing (0F is read-only; any non-zero nibble is
    /// a proprietary or no-write condition).
    public var isReadOnly: Bool { bytes[3] & 0x0F != 0 }

    /// - Parameter bytes: page 3, 4 bytes.
    /// - Throws: ``Type2TagError`` `notNDEFFormatted` (magic not E1, or not 4 bytes) or
    ///   `unsupportedVersion` (major version not 1), both at page 3.
    public init(parsing bytes: [UInt8]) throws(Type2TagError) {
        guard bytes.count == 4 else {
            throw Type2TagError(.notNDEFFormatted, page: 3, bytes: bytes, "the capability container is 4 bytes; got \(bytes.count)")
        }
        guard bytes[0] == 0xE1 else {
            throw Type2TagError(.notNDEFFormatted, page: 3, bytes: bytes,
                                "not NDEF formatted: the capability container's magic byte is \([bytes[0]].hexString), not E1")
        }
        guard bytes[1] >> 4 == 1 else {
            throw Type2TagError(.unsupportedVersion, page: 3, bytes: bytes,
                                "the capability container declares mapping version \(bytes[1] >> 4).\(bytes[1] & 0x0F); only major version 1 is supported")
        }
        self.bytes = bytes
    }
}

/// One TLV block of a Type 2 Tag's data area, as the reader walked it.
///
/// `| T (1) | L (1, or FF + 2 bytes big-endian) | V (L bytes) |`; NULL (00) and Terminator (FE)
/// have neither L nor V (NFC Forum Type 2 Tag operation §2.3).
public struct Type2TLV: Sendable, Hashable {
    /// 00 NULL, 01 lock control, 02 memory control, 03 NDEF message, FD proprietary, FE terminator.
    public var tag: UInt8
    /// The offset of T from the start of the data area (page 4 byte 0).
    public var offset: Int
    /// L, the value's length in bytes (0 for NULL and Terminator).
    public var length: Int
    /// The offset of V from the start of the data area.
    public var valueOffset: Int

    /// The TLV's name in words.
    public var name: String {
        switch tag {
        case 0x00: "NULL TLV"
        case 0x01: "Lock Control TLV"
        case 0x02: "Memory Control TLV"
        case 0x03: "NDEF Message TLV"
        case 0xFD: "Proprietary TLV"
        case 0xFE: "Terminator TLV"
        default: "TLV \([tag].hexString)"
        }
    }
}

/// Reads the NDEF message of an NFC Forum Type 2 Tag (MIFARE Ultralight, NTAG21x) through a
/// PC/SC part 3 reader's Read Binary pseudo-APDU (NFC Forum Type 2 Tag operation; NXP NTAG213/215/216
/// data sheet; ACR122U API v2.04 §5; docs/iso14443-t4t-ndef.md §6).
///
/// The sequence, byte for byte:
/// 1. `FF B0 00 03 04`: page 3, the capability container (4 bytes, so a transcript never holds a
///    16-byte answer to block 3, which the redactor treats as a MIFARE Classic sector trailer);
/// 2. `FF B0 00 <page> <Le>` from page 4 in 16-byte reads (Le = min(16, data area bytes left)),
///    only as far as the TLV walk needs, never past SIZE × 8 bytes;
/// 3. the TLV walk: 00 skipped, 01 / 02 / FD and unknown tags skipped by length, 03 read and decoded
///    with ``NDEFMessage``, FE before any 03 an error.
public enum Type2TagReader {
    /// What a read found.
    public struct Result: Sendable, Hashable {
        /// The capability container read from page 3.
        public var capabilityContainer: Type2CapabilityContainer
        /// The TLVs walked, up to and including the NDEF Message TLV.
        public var tlvs: [Type2TLV]
        /// The NDEF TLV's value (L bytes; empty for `03 00`).
        public var ndefBytes: [UInt8]
        /// The decoded message; nil when the NDEF TLV is empty (`03 00`, an initialised tag).
        public var message: NDEFMessage?
    }

    /// Reads page 3 and decodes it.
    /// - Throws: ``StorageCardError`` from Read Binary; ``Type2TagError`` `notNDEFFormatted`,
    ///   `unsupportedVersion`.
    public static func readCapabilityContainer(_ card: StorageCard) throws -> Type2CapabilityContainer {
        try Type2CapabilityContainer(parsing: card.readBinary(block: 3, length: 4))
    }

    /// Reads the tag.
    /// - Throws: ``StorageCardError`` for a failing or truncated Read Binary (naming the page);
    ///   ``Type2TagError`` `notNDEFFormatted`, `unsupportedVersion`, `malformedTLV`, `noNDEFTLV`,
    ///   `invalidNDEF`, `pageOutOfRange`; the channel's errors unchanged.
    public static func read(_ card: StorageCard) throws -> Result {
        let cc = try readCapabilityContainer(card)
        let area = DataArea(card: card, size: cc.dataAreaSize)
        var tlvs: [Type2TLV] = []
        var i = 0
        func tlvError(_ code: Type2TagError.Code, _ at: Int, _ reason: String) -> Type2TagError {
            .at(code, offset: at, bytes: Array(area.bytes[min(at, area.bytes.count)..<min(at + 4, area.bytes.count)]), reason)
        }
        // Bounded: every pass consumes at least one byte of a data area of at most 2040 bytes.
        while true {
            guard i < area.size else {
                throw Type2TagError(.noNDEFTLV, page: 4 + i / 4, offset: i,
                                    "the data area (\(area.size) bytes) ends without an NDEF Message TLV (03)")
            }
            try area.ensure(i + 1)
            let tag = area.bytes[i]
            if tag == 0x00 {
                tlvs.append(Type2TLV(tag: tag, offset: i, length: 0, valueOffset: i + 1))
                i += 1
                continue
            }
            if tag == 0xFE {
                throw tlvError(.noNDEFTLV, i, "a Terminator TLV (FE) at data offset \(i) comes before any NDEF Message TLV (03)")
            }
            guard i + 2 <= area.size else {
                throw tlvError(.malformedTLV, i, "the data area ends inside the length of the TLV \([tag].hexString) at data offset \(i)")
            }
            try area.ensure(i + 2)
            var length = Int(area.bytes[i + 1])
            var header = 2
            if length == 0xFF {
                guard i + 4 <= area.size else {
                    throw tlvError(.malformedTLV, i, "the data area ends inside the 3-byte length (FF + 2 bytes) of the TLV \([tag].hexString) at data offset \(i)")
                }
                try area.ensure(i + 4)
                length = Int(area.bytes[i + 2]) << 8 | Int(area.bytes[i + 3])
                header = 4
            }
            let tlv = Type2TLV(tag: tag, offset: i, length: length, valueOffset: i + header)
            let end = i + header + length
            guard end <= area.size else {
                throw tlvError(.malformedTLV, i, "the \(tlv.name) at data offset \(i) declares \(length) bytes, running to data offset \(end), past the data area of \(area.size) bytes (SIZE \([cc.sizeByte].hexString) × 8)")
            }
            tlvs.append(tlv)
            guard tag == 0x03 else {
                // 01 lock control, 02 memory control, FD proprietary, unknown tags: skipped by length.
                i = end
                continue
            }
            try area.ensure(end)
            let value = Array(area.bytes[tlv.valueOffset..<end])
            guard !value.isEmpty else {
                return Result(capabilityContainer: cc, tlvs: tlvs, ndefBytes: [], message: nil)
            }
            do {
                return Result(capabilityContainer: cc, tlvs: tlvs, ndefBytes: value, message: try NDEFMessage(parsing: value))
            } catch {
                let at = tlv.valueOffset + (error.offset ?? 0)
                throw Type2TagError.at(.invalidNDEF, offset: at, bytes: Array(value.prefix(16)),
                                       "the NDEF Message TLV at data offset \(i) (\(length) bytes) does not hold a valid NDEF message: \(error)")
            }
        }
    }

    /// The data area, read lazily in 16-byte Read Binary commands from page 4.
    final class DataArea {
        let card: StorageCard
        /// SIZE × 8.
        let size: Int
        private(set) var bytes: [UInt8] = []
        init(card: StorageCard, size: Int) {
            self.card = card
            self.size = size
        }

        /// Reads until at least `count` bytes (≤ `size`) are here.
        func ensure(_ count: Int) throws {
            while bytes.count < min(count, size) {  // each pass adds 4…16 bytes or throws
                let page = 4 + bytes.count / 4
                guard page <= 0xFF else {
                    throw Type2TagError(.pageOutOfRange, page: page, offset: bytes.count,
                                        "the data area reaches page \(page), beyond the pages Read Binary (FF B0 00 <page>) can address (up to FF)")
                }
                let length = min(16, size - bytes.count)
                bytes += try card.readBinary(block: UInt8(page), length: length)
            }
        }
    }
}

/// A Type 2 Tag model known by its GET_VERSION answer, with the user memory of its data sheet
/// (NXP NTAG213/215/216 data sheet §8.5, §10.1): the pages an NDEF write may use. Past them lie the
/// dynamic lock bytes, CFG0, CFG1, PWD and PACK, which a write must never reach.
///
/// | Model | GET_VERSION | User memory | Bytes | CC |
/// |---|---|---|---|---|
/// | NTAG213 | `00 04 04 02 01 00 0F 03` | pages 4–27h | 144 | `E1 10 12 00` |
/// | NTAG215 | `00 04 04 02 01 00 11 03` | pages 4–81h | 504 | `E1 10 3E 00` |
/// | NTAG216 | `00 04 04 02 01 00 13 03` | pages 4–E1h | 888 | `E1 10 6D 00` |
public enum Type2TagProduct: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// The NXP NTAG21x models: NTAG213 (144 bytes of user memory), NTAG215 (504), NTAG216 (888),
    /// told apart by the storage size byte of their GET_VERSION answer (NTAG213/215/216 data sheet).
    case ntag213, ntag215, ntag216

    /// The model a GET_VERSION answer names: vendor 04 (NXP), type 04 (NTAG), subtype 02, storage
    /// size 0F / 11 / 13; nil for any other answer.
    public init?(version: [UInt8]) {
        guard version.count == 8, version[1] == 0x04, version[2] == 0x04, version[3] == 0x02 else { return nil }
        switch version[6] {
        case 0x0F: self = .ntag213
        case 0x11: self = .ntag215
        case 0x13: self = .ntag216
        default: return nil
        }
    }

    /// The last user memory page (the first is 4).
    public var lastUserPage: Int {
        switch self {
        case .ntag213: 0x27
        case .ntag215: 0x81
        case .ntag216: 0xE1
        }
    }

    /// The user memory in bytes, pages 4…``lastUserPage``: 144, 504, 888.
    public var userMemorySize: Int { (lastUserPage - 3) * 4 }

    /// "NTAG213".
    public var description: String {
        switch self {
        case .ntag213: "NTAG213"
        case .ntag215: "NTAG215"
        case .ntag216: "NTAG216"
        }
    }
}

/// What GET_VERSION (``StorageCard/type2Version()``) told about a Type 2 Tag.
public enum Type2TagIdentification: Sendable, Hashable {
    /// The 8 bytes of the answer, e.g. `00 04 04 02 01 00 0F 03`.
    case version([UInt8])
    /// No answer, and why (the tag or the reader refused).
    case refused(String)

    /// The model, when the answer names one this code knows.
    public var product: Type2TagProduct? {
        if case .version(let bytes) = self { return Type2TagProduct(version: bytes) }
        return nil
    }

    /// The answer's bytes, if any.
    public var version: [UInt8]? {
        if case .version(let bytes) = self { return bytes }
        return nil
    }

    /// A note for output when the model is not known, else nil: `the reader did not carry
    /// GET_VERSION (…): the model is not known; going by the capability container`.
    public var note: String? {
        switch self {
        case .version(let bytes) where Type2TagProduct(version: bytes) == nil:
            "GET_VERSION answered \(bytes.hexString), which names no NTAG213/215/216: the model is not known; going by the capability container"
        case .version: nil
        case .refused(let why): "\(why): the model is not known; going by the capability container"
        }
    }
}

/// Where a write that failed part-way left the tag (NFC Forum Type 2 Tag operation: the first page
/// is written last, so a tag is never left with a half-written message).
public enum Type2TagWriteState: Sendable, Hashable, CustomStringConvertible {
    /// The first write (page 4 as an empty NDEF message) did not complete: the tag holds what it
    /// held before.
    case untouched
    /// Page 4 holds an empty NDEF message (`03 00 FE`); later pages may hold parts of the new one.
    case emptyMessage
    /// The last write (page 4 with the message's start) failed: the tag holds the empty NDEF
    /// message, or the new one if the write reached it.
    case emptyOrNewMessage
    /// Every page was written; reading back to verify failed.
    case writtenNotVerified

    public var description: String {
        switch self {
        case .untouched: "the tag holds what it held before (the first write, page 4, did not complete)"
        case .emptyMessage: "the tag now holds an empty NDEF message (03 00 FE on page 4), not the old one and not a half-written one"
        case .emptyOrNewMessage: "the tag holds an empty NDEF message (03 00 FE on page 4), or the new message if the last write reached it; check with `secbridge read`"
        case .writtenNotVerified: "every page was written but reading back to verify failed; check the tag with `secbridge read`"
        }
    }
}

/// A write that failed after it began: the page, where it left the tag, and the underlying error
/// (``StorageCardError`` or the channel's).
public struct Type2TagWriteFailure: Error, CustomStringConvertible {
    /// The page whose Update Binary failed.
    public var page: Int
    /// What the tag holds now.
    public var state: Type2TagWriteState
    /// The ``StorageCardError`` (e.g. `63 00`) or the channel's error (e.g. the card removed).
    public var underlying: any Error

    /// - Parameters: as the properties.
    public init(page: Int, state: Type2TagWriteState, underlying: any Error) {
        self.page = page
        self.state = state
        self.underlying = underlying
    }

    /// `writing page 6 failed: <error>; the tag now holds an empty NDEF message …`
    /// (`reading back page 4 failed: …` for ``Type2TagWriteState/writtenNotVerified``).
    public var description: String {
        "\(state == .writtenNotVerified ? "reading back" : "writing") page \(page) failed: \(underlying); \(state)"
    }
}

/// Writes an NDEF message to an NFC Forum Type 2 Tag through a PC/SC part 3 reader's Update Binary
/// pseudo-APDU (NFC Forum Type 2 Tag operation; NXP NTAG213/215/216 data sheet; ACR122U API v2.04 §5).
///
/// Every check comes before the first write (``prepare(message:card:identification:)``), in this order:
/// 1. `FF 00 00 00 03 D4 42 60`: GET_VERSION through Direct Transmit, for the model and its user
///    memory (``Type2TagProduct``); a tag or reader that does not answer is noted and the CC used;
/// 2. `FF B0 00 03 04`: the capability container; refuses a tag that is not NDEF formatted, is
///    read-only, whose CC claims more than its model has, or too small for the message;
/// 3. `FF B0 00 02 04`: page 2, the static lock bytes (byte 2 bits 4–7 lock pages 4–7, byte 3
///    bits 0–7 pages 8–15; NTAG data sheet §8.5.2); refuses when a page the message needs is locked.
///
/// Then (``execute(_:on:)``), so that an interruption leaves a valid tag: page 4 as an empty NDEF
/// message `03 00 FE 00`; pages 5, 6, … of `03 <length> <message> FE` (length 1 byte, or `FF` + 2
/// bytes for 255 bytes and more) padded with 00 to a whole page; page 4 with the message's start;
/// then Read Binary from page 4 to verify every byte written.
public enum Type2TagWriter {
    /// What a write did.
    public struct Result: Sendable, Hashable {
        /// The capability container the tag holds after the write (page 3).
        public var capabilityContainer: Type2CapabilityContainer
        /// The bytes written from page 4, padding included (a multiple of 4).
        public var written: [UInt8]
        /// The pages written, from 4.
        public var pages: ClosedRange<Int>
    }

    /// A write with every check done and nothing written yet.
    public struct Plan: Sendable, Hashable {
        /// The capability container the tag will hold (page 3).
        public var capabilityContainer: Type2CapabilityContainer
        /// What the tag was found to be (its product), which fixes its memory size.
        public var identification: Type2TagIdentification
        /// Page 2 bytes 2–3, the static lock bytes (both 00 on a tag with nothing locked).
        public var lockBytes: [UInt8]
        /// `03 L <message> FE` padded with 00 to whole pages.
        public var data: [UInt8]
        /// The pages to write, from 4.
        public var pages: ClosedRange<Int>
        /// The bytes the message may use: the CC's data area, within the model's user memory.
        public var capacity: Int
    }

    /// The NDEF Message TLV and a Terminator TLV: `03 L <message> FE` for messages of 0–254
    /// bytes, `03 FF L1 L2 <message> FE` for 255–65 534 bytes (NFC Forum Type 2 Tag operation §2.3).
    /// Not padded.
    public static func tlvBytes(for message: NDEFMessage) -> [UInt8] {
        tlvBytes(ndef: message.serialized())
    }

    /// The TLVs of raw NDEF bytes (see ``tlvBytes(for:)``).
    public static func tlvBytes(ndef: [UInt8]) -> [UInt8] {
        let n = ndef.count
        let header: [UInt8] = n < 0xFF ? [0x03, UInt8(n)] : [0x03, 0xFF, UInt8((n >> 8) & 0xFF), UInt8(n & 0xFF)]
        return header + ndef + [0xFE]
    }

    /// The pages a static lock bit protects among `pages` (only 4–15 have static lock bits):
    /// LOCK0 (page 2 byte 2) bits 4–7 → pages 4–7, LOCK1 (byte 3) bits 0–7 → pages 8–15.
    public static func lockedPages(lockBytes: [UInt8], in pages: ClosedRange<Int>) -> [Int] {
        guard lockBytes.count == 2 else { return [] }
        return pages.filter { page in
            switch page {
            case 4...7: lockBytes[0] & (1 << UInt8(page)) != 0
            case 8...15: lockBytes[1] & (1 << UInt8(page - 8)) != 0
            default: false
            }
        }
    }

    /// Every check, nothing written: GET_VERSION (unless `identification` is given), the CC,
    /// a read of the last page the message needs (`FF B0 00 <page> 04`: a tag has it, whatever its
    /// CC claims), the static lock bytes.
    /// - Throws: ``Type2TagError`` `notNDEFFormatted`, `unsupportedVersion`, `readOnly`,
    ///   `capabilityContainerExceedsModel` (naming what the CC claims and what the model has),
    ///   `doesNotFit` (the bytes needed and available), `pageOutOfRange` (beyond FF, or a last page
    ///   the tag does not have), `locked` (the page and the
    ///   lock bytes); ``StorageCardError`` from Read Binary; the channel's errors unchanged.
    public static func prepare(
        message: NDEFMessage, card: StorageCard, identification: Type2TagIdentification? = nil
    ) throws -> Plan {
        let identification = try identification ?? card.type2Version()
        let cc = try Type2TagReader.readCapabilityContainer(card)
        guard !cc.isReadOnly else {
            throw Type2TagError(.readOnly, page: 3, bytes: cc.bytes,
                                "the tag is read-only: its capability container's access byte is \([cc.access].hexString) (00 is read/write); nothing was written",
                                remedy: "use another tag")
        }
        var capacity = cc.dataAreaSize
        if let product = identification.product, let version = identification.version {
            guard cc.dataAreaSize <= product.userMemorySize else {
                throw Type2TagError(
                    .capabilityContainerExceedsModel, page: 3, bytes: cc.bytes,
                    "the capability container claims a data area of \(cc.dataAreaSize) bytes (SIZE \([cc.sizeByte].hexString) × 8), but the tag is an \(product) (GET_VERSION \(version.hexString)) with \(product.userMemorySize) bytes of user memory (pages 4–\(product.lastUserPage)); writing by the CC could overwrite its lock and configuration pages, so nothing was written",
                    remedy: "the capability container is one-time programmable and cannot be corrected: use another tag")
            }
            capacity = min(capacity, product.userMemorySize)
        }
        let ndef = message.serialized()
        let tlv = tlvBytes(ndef: ndef)
        guard tlv.count <= capacity else {
            throw Type2TagError(.doesNotFit, page: 3, bytes: cc.bytes,
                                "the message needs \(tlv.count) bytes (\(ndef.count) bytes of NDEF, \(tlv.count - ndef.count - 1)-byte TLV header, 1-byte terminator) but the tag's data area has \(capacity) bytes (SIZE \([cc.sizeByte].hexString) × 8); nothing was written",
                                remedy: "write a shorter URI or text, or use a larger tag such as an NTAG215 (496 bytes) or NTAG216 (872 bytes)")
        }
        var data = tlv
        while data.count % 4 != 0 { data.append(0x00) }
        let lastPage = 4 + data.count / 4 - 1
        guard lastPage <= 0xFF else {
            throw Type2TagError(.pageOutOfRange, page: lastPage,
                                "the message reaches page \(lastPage), beyond the pages Update Binary (FF D6 00 <page>) can address (up to FF); nothing was written",
                                remedy: "write a shorter URI or text")
        }
        // The last page the message needs must exist: a capability container can claim more than
        // the tag holds (it is one-time programmable and may be wrong), and a tag answers a READ
        // beyond its memory with a NAK (NXP MF0ICU1 and NTAG21x data sheets, READ): Read Binary 63 00.
        do {
            _ = try card.readBinary(block: UInt8(lastPage), length: 4)
        } catch let error as StorageCardError where error.code == .operationFailed {
            throw Type2TagError(.pageOutOfRange, page: lastPage,
                                "the message needs pages 4–\(lastPage), but the tag does not answer a read of page \(lastPage) (\(error.response.map(\.hexString) ?? "no answer")): its capability container (\(cc.bytes.hexString), \(cc.dataAreaSize) data bytes) claims more than it holds; nothing was written",
                                remedy: "write a shorter URI or text, or use a larger tag such as an NTAG215 (496 bytes) or NTAG216 (872 bytes)")
        }
        let page2 = try card.readBinary(block: 2, length: 4)
        let lockBytes = Array(page2[2..<4])
        let locked = lockedPages(lockBytes: lockBytes, in: 4...lastPage)
        if let first = locked.first {
            let list = locked.count == 1 ? "page \(first) is" : "pages \(locked.map(String.init).joined(separator: ", ")) are"
            throw Type2TagError(.locked, page: 2, bytes: page2,
                                "\(list) locked by the static lock bits (page 2 bytes 2–3: \(lockBytes.hexString)) and the message needs pages 4–\(lastPage); nothing was written",
                                remedy: "lock bits cannot be cleared: use another tag")
        }
        return Plan(capabilityContainer: cc, identification: identification, lockBytes: lockBytes, data: data,
                    pages: 4...lastPage, capacity: capacity)
    }

    /// Writes a prepared plan (page 4 empty first, pages 5… , page 4 last) and reads it back.
    /// - Throws: ``Type2TagWriteFailure`` when an Update Binary or the read-back fails (saying what
    ///   the tag holds now, with the ``StorageCardError`` or channel error under it);
    ///   ``Type2TagError`` `verifyMismatch` (naming the page, the bytes written and read).
    @discardableResult
    public static func execute(_ plan: Plan, on card: StorageCard) throws -> Result {
        let data = plan.data
        let lastPage = plan.pages.upperBound
        func page(_ n: Int) -> [UInt8] { Array(data[((n - 4) * 4)..<((n - 4) * 4 + 4)]) }
        var state = Type2TagWriteState.untouched
        var current = 4
        do {
            if lastPage > 4 {
                try card.updateBinary(block: 4, data: [0x03, 0x00, 0xFE, 0x00])
                state = .emptyMessage
                for n in 5...lastPage {
                    current = n
                    try card.updateBinary(block: UInt8(n), data: page(n))
                }
                state = .emptyOrNewMessage
            }
            current = 4
            try card.updateBinary(block: 4, data: page(4))
        } catch {
            throw Type2TagWriteFailure(page: current, state: state, underlying: error)
        }
        var readBack: [UInt8] = []
        while readBack.count < data.count {  // each pass adds 4…16 bytes or throws
            let page = 4 + readBack.count / 4
            do {
                readBack += try card.readBinary(block: UInt8(page), length: min(16, data.count - readBack.count))
            } catch {
                throw Type2TagWriteFailure(page: page, state: .writtenNotVerified, underlying: error)
            }
        }
        if let first = zip(data, readBack).enumerated().first(where: { $0.element.0 != $0.element.1 })?.offset {
            let pageStart = first - first % 4
            throw Type2TagError.at(.verifyMismatch, offset: first, bytes: Array(readBack[pageStart..<(pageStart + 4)]),
                                   "reading back after the write gave other bytes at data offset \(first): wrote \(data[pageStart..<(pageStart + 4)].hexString), read back the bytes shown",
                                   remedy: "the tag may be locked there or was moved during the write; keep it still on the reader and write again")
        }
        return Result(capabilityContainer: plan.capabilityContainer, written: data, pages: plan.pages)
    }

    /// Checks (``prepare(message:card:identification:)``), writes (``execute(_:on:)``) and reads back `message`.
    /// - Throws: as ``prepare(message:card:identification:)`` and ``execute(_:on:)``.
    @discardableResult
    public static func write(message: NDEFMessage, to card: StorageCard) throws -> Result {
        try execute(prepare(message: message, card: card), on: card)
    }

    /// Writes one URI record (``NDEFRecord/uri(_:)``), e.g. `https://example.com` →
    /// `03 10 D1 01 0C 55 04 65 78 61 6D 70 6C 65 2E 63 6F 6D FE`.
    /// - Throws: as ``write(message:to:)``.
    @discardableResult
    public static func writeURI(_ uri: String, to card: StorageCard) throws -> Result {
        try write(message: NDEFMessage(records: [.uri(uri)]), to: card)
    }

    /// Writes one UTF-8 text record (``NDEFRecord/text(_:language:)``).
    /// - Throws: `TagFormatError` `valueOutOfRange` for a language code over 63 bytes; as
    ///   ``write(message:to:)``.
    @discardableResult
    public static func writeText(_ text: String, language: String = "en", to card: StorageCard) throws -> Result {
        try write(message: NDEFMessage(records: [NDEFRecord.text(text, language: language)]), to: card)
    }
}
