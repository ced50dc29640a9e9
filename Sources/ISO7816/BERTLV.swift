/// A BER-TLV tag (ISO/IEC 7816-4 §5.2.2.1, after ISO/IEC 8825-1), 1 to 4 bytes.
///
/// `| class (b8-b7) | constructed (b6) | number (b5-b1) |` then, when b5-b1 are all 1, subsequent
/// bytes whose b8 says "another byte follows". The raw value keeps every byte big-endian:
/// tag 9F 81 6E is `0x9F816E`.
public struct BERTag: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    /// The tag bytes as one big-endian number (6F → 0x6F, 9F 81 6E → 0x9F816E).
    public let rawValue: UInt32

    public init(rawValue: UInt32) { self.rawValue = rawValue }
    /// The same as ``init(rawValue:)``: `BERTag(0x9F816E)` is the tag 9F 81 6E.
    public init(_ rawValue: UInt32) { self.rawValue = rawValue }

    /// The tag bytes, 1 to 4.
    public var bytes: [UInt8] {
        var out: [UInt8] = []
        var started = false
        for shift in stride(from: 24, through: 0, by: -8) {
            let b = UInt8(truncatingIfNeeded: rawValue >> UInt32(shift))
            if b != 0 || started || shift == 0 {
                out.append(b)
                started = true
            }
        }
        return out
    }

    /// The first tag byte.
    var firstByte: UInt8 {
        var v = rawValue
        while v > 0xFF { v >>= 8 }
        return UInt8(v)
    }

    /// Whether b6 of the first byte is set: the value is a sequence of BER-TLV objects.
    public var isConstructed: Bool { firstByte & 0x20 != 0 }

    /// The class from b8-b7 of the first byte.
    public var tagClass: TagClass { TagClass(rawValue: firstByte >> 6)! }

    /// The four tag classes of ISO/IEC 8825-1.
    public enum TagClass: UInt8, Sendable {
        /// b8-b7 of the first tag byte: 00 universal, 01 application, 10 context-specific, 11 private
        /// (ISO/IEC 8825-1 §8.1.2.2).
        case universal = 0, application = 1, contextSpecific = 2, `private` = 3
    }

    public var description: String { bytes.hexString }
}

/// A BER-TLV data object (ISO/IEC 7816-4 §5.2.2): `| tag (1-4) | length (1-5) | value |`.
///
/// Length: 00–7F in one byte; 81 XX; 82 XX XX; 83 XX XX XX; 84 XX XX XX XX. The indefinite form 80
/// and 85–FF are rejected (ISO/IEC 7816-4 allows neither). A constructed tag (b6 of its first byte)
/// has its value parsed into `children`; parsing fails if that value is not BER-TLV, unless
/// `ReadingOptions.keepsMalformedContent` keeps the object with its raw value and `contentError`.
///
/// Padding: ISO/IEC 7816-4 §5.2.2 lets bytes 00 and FF without meaning stand before, between and
/// after objects (erased or rewritten data). A sequence always skips 00 there (no tag starts with
/// 00). FF is ambiguous, since FF also starts a private-class constructed tag of two or more bytes
/// (FF 01 …); `ReadingOptions.ff` decides, and the default skips it as padding: card responses and
/// files padded with FF are common, private tags starting FF are rare (docs/iso7816-fcp.md §2).
/// A 00, or an FF read as padding, where one object is needed in `init(parsing:)` is rejected.
public struct BERTLV: Sendable, Hashable {
    /// The tag.
    public let tag: BERTag
    /// The value bytes (for a constructed object, the encoding of its children).
    public let value: [UInt8]
    /// The objects inside a constructed object, in order; empty for a primitive one, and for a
    /// constructed one whose value did not parse (then `contentError` says why).
    public let children: [BERTLV]
    /// Why the value of a constructed object is not BER-TLV, when `ReadingOptions` kept it raw;
    /// nil otherwise. Offsets count from the start of the input given to the parser.
    public let contentError: ISO7816Error?

    /// How a sequence is read where ISO/IEC 7816-4 §5.2.2 leaves a choice (see the type's comment).
    public struct ReadingOptions: Sendable, Hashable {
        /// What an FF byte where an object may start is.
        public enum FF: Sendable, Hashable {
            /// Padding, skipped like 00 (the default).
            case padding
            /// The first byte of a private-class constructed tag (FF 01 …).
            case tag
        }

        /// What FF between objects is.
        public var ff: FF
        /// Whether a constructed object whose value is not BER-TLV is kept with its raw value and
        /// `contentError` set (true) or fails the whole parse (false, the default).
        public var keepsMalformedContent: Bool

        /// Options for reading: FF between objects is padding by default (ISO/IEC 7816-4 §5.2.2,
        /// docs/iso7816-fcp.md §2), and a constructed object with malformed content fails the parse.
        public init(ff: FF = .padding, keepsMalformedContent: Bool = false) {
            self.ff = ff
            self.keepsMalformedContent = keepsMalformedContent
        }

        /// FF is padding; a malformed constructed value fails the parse.
        public static let strict = ReadingOptions()
    }

    /// How deep constructed objects may nest before parsing gives up (a bound against a hostile input).
    public static let maxDepth = 16

    /// A primitive or constructed object from its value bytes.
    /// - Throws: `ISO7816Error` when `tag` is constructed and `value` does not parse as BER-TLV, or
    ///   when `value` is longer than 2³² − 1 bytes.
    public init(tag: BERTag, value: [UInt8]) throws(ISO7816Error) {
        guard UInt64(value.count) <= UInt64(UInt32.max) else {
            throw ISO7816Error(.valueOutOfRange, "a BER-TLV value is at most 4 294 967 295 bytes")
        }
        self.tag = tag
        self.value = value
        self.children = tag.isConstructed ? try BERTLV.parseSequence(value, from: 0, to: value.count, base: 0, depth: 1, options: .strict) : []
        self.contentError = nil
    }

    /// A constructed object from its children.
    public init(tag: BERTag, children: [BERTLV]) {
        var value: [UInt8] = []
        value.reserveCapacity(children.reduce(0) { $0 + $1.encodedLength })
        for child in children { child.append(to: &value) }
        self.tag = tag
        self.value = value
        self.children = children
        self.contentError = nil
    }

    private init(tag: BERTag, value: [UInt8], children: [BERTLV], contentError: ISO7816Error?) {
        self.tag = tag
        self.value = value
        self.children = children
        self.contentError = contentError
    }

    /// Parses exactly one object that fills `bytes`.
    /// - Throws: `ISO7816Error`: `truncated` (tag, length or value runs past the end),
    ///   `invalidTag` (a tag longer than 4 bytes, a first subsequent byte 80, or a 00/FF first byte),
    ///   `invalidLength` (80 indefinite form, 85–FF), `nestingTooDeep`, `trailingBytes`.
    public init(parsing bytes: [UInt8]) throws(ISO7816Error) {
        var cursor = 0
        let object = try BERTLV.readObject(bytes, at: &cursor, end: bytes.count, base: 0, depth: 0, options: .strict)
        guard cursor == bytes.count else {
            throw ISO7816Error(
                .trailingBytes, offset: cursor,
                "the BER-TLV object ends at byte \(cursor); \(bytes.count - cursor) more bytes follow (use BERTLV.parseAll for a sequence)")
        }
        self = object
    }

    /// Parses a sequence of objects that fills `bytes`, skipping padding between them: 00 always,
    /// FF unless `options.ff` is `.tag`.
    /// - Throws: the errors of `init(parsing:)` (except `trailingBytes`), offsets counted from the
    ///   start of `bytes`; with `options.keepsMalformedContent` only those of the top-level
    ///   objects' tags, lengths and value bounds.
    public static func parseAll(_ bytes: [UInt8], options: ReadingOptions = .strict) throws(ISO7816Error) -> [BERTLV] {
        try parseSequence(bytes, from: 0, to: bytes.count, base: 0, depth: 0, options: options)
    }

    /// The first direct child with this tag.
    public func child(_ tag: BERTag) -> BERTLV? {
        children.first { $0.tag == tag }
    }

    /// The first object with this tag, searching this object and its descendants depth-first.
    public func find(_ tag: BERTag) -> BERTLV? {
        if self.tag == tag { return self }
        for child in children {
            if let hit = child.find(tag) { return hit }
        }
        return nil
    }

    /// The number of bytes `serialized()` returns.
    public var encodedLength: Int {
        tag.bytes.count + BERTLV.lengthFieldSize(value.count) + value.count
    }

    /// The object as bytes, with the shortest length field.
    public func serialized() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(encodedLength)
        append(to: &out)
        return out
    }

    func append(to out: inout [UInt8]) {
        out.append(contentsOf: tag.bytes)
        BERTLV.appendLength(value.count, to: &out)
        out.append(contentsOf: value)
    }

    /// Appends a BER length field in the shortest form.
    public static func appendLength(_ length: Int, to out: inout [UInt8]) {
        switch length {
        case ..<0x80:
            out.append(UInt8(length))
        case ..<0x100:
            out.append(0x81)
            out.append(UInt8(length))
        case ..<0x1_0000:
            out.append(0x82)
            out.append(UInt8(truncatingIfNeeded: length >> 8))
            out.append(UInt8(truncatingIfNeeded: length))
        case ..<0x100_0000:
            out.append(0x83)
            out.append(UInt8(truncatingIfNeeded: length >> 16))
            out.append(UInt8(truncatingIfNeeded: length >> 8))
            out.append(UInt8(truncatingIfNeeded: length))
        default:
            out.append(0x84)
            out.append(UInt8(truncatingIfNeeded: length >> 24))
            out.append(UInt8(truncatingIfNeeded: length >> 16))
            out.append(UInt8(truncatingIfNeeded: length >> 8))
            out.append(UInt8(truncatingIfNeeded: length))
        }
    }

    static func lengthFieldSize(_ length: Int) -> Int {
        switch length {
        case ..<0x80: 1
        case ..<0x100: 2
        case ..<0x1_0000: 3
        case ..<0x100_0000: 4
        default: 5
        }
    }

    // MARK: Reading

    static func parseSequence(
        _ bytes: [UInt8], from start: Int, to end: Int, base: Int, depth: Int, options: ReadingOptions
    ) throws(ISO7816Error) -> [BERTLV] {
        var result: [BERTLV] = []
        var cursor = start
        // Each pass consumes at least one byte, so the loop ends within `end - start` passes.
        while cursor < end {
            let b = bytes[cursor]
            if b == 0x00 || (b == 0xFF && options.ff == .padding) {
                cursor += 1  // padding between objects, ISO/IEC 7816-4 §5.2.2
                continue
            }
            result.append(try readObject(bytes, at: &cursor, end: end, base: base, depth: depth, options: options))
        }
        return result
    }

    /// Reads one object at `cursor` (which moves past it). `base` is added to offsets in errors
    /// so that they count from the start of the caller's input.
    static func readObject(
        _ bytes: [UInt8], at cursor: inout Int, end: Int, base: Int, depth: Int, options: ReadingOptions
    ) throws(ISO7816Error) -> BERTLV {
        guard depth <= maxDepth else {
            throw ISO7816Error(
                .nestingTooDeep, offset: base + cursor,
                "constructed BER-TLV objects nest deeper than \(maxDepth) levels")
        }
        let objectStart = cursor
        // Tag.
        guard cursor < end else {
            throw ISO7816Error(.truncated, offset: base + cursor, "a BER-TLV tag was expected; the input ended")
        }
        let first = bytes[cursor]
        if first == 0x00 || (first == 0xFF && options.ff == .padding) {
            throw ISO7816Error(
                .invalidTag, offset: base + cursor,
                "\([first].hexString) is padding, not a tag (ISO/IEC 7816-4 §5.2.2)")
        }
        var tag = UInt32(first)
        cursor += 1
        if first & 0x1F == 0x1F {
            var subsequent = 0
            while true {
                guard cursor < end else {
                    throw ISO7816Error(
                        .truncated, offset: base + cursor,
                        "the tag starting at byte \(base + objectStart) announces another tag byte; the input ended")
                }
                let b = bytes[cursor]
                // ISO/IEC 7816-4 §5.2.2.1 also calls 00…1E invalid here (those numbers fit the
                // one-byte form), but EMV defines and cards send exactly such tags (9F02 amount,
                // 9F1A terminal country code, 9F1E IFD serial number): they are accepted on purpose,
                // for the payment-style applets this tool is used with. 80 (a padding bit pattern)
                // is refused.
                if subsequent == 0 && b == 0x80 {
                    throw ISO7816Error(
                        .invalidTag, offset: base + cursor,
                        "the first subsequent tag byte is 80: its bits 7-1 must not all be 0 (ISO/IEC 7816-4 §5.2.2.1)")
                }
                subsequent += 1
                guard subsequent <= 3 else {
                    throw ISO7816Error(
                        .invalidTag, offset: base + cursor,
                        "the tag starting at byte \(base + objectStart) is longer than 4 bytes")
                }
                tag = tag << 8 | UInt32(b)
                cursor += 1
                if b & 0x80 == 0 { break }
            }
        }
        // Length.
        guard cursor < end else {
            throw ISO7816Error(.truncated, offset: base + cursor, "a BER-TLV length was expected after tag \(BERTag(tag)); the input ended")
        }
        let l0 = bytes[cursor]
        var length: Int
        if l0 < 0x80 {
            length = Int(l0)
            cursor += 1
        } else if l0 == 0x80 {
            throw ISO7816Error(
                .invalidLength, offset: base + cursor,
                "length 80 is the indefinite form, which ISO/IEC 7816-4 data objects do not allow; write 81 XX for 128 to 255 bytes")
        } else {
            let n = Int(l0 & 0x7F)
            guard n <= 4 else {
                throw ISO7816Error(
                    .invalidLength, offset: base + cursor,
                    "length byte \([l0].hexString) announces \(n) length bytes; at most 4 (84 XX XX XX XX) are allowed")
            }
            guard end - cursor - 1 >= n else {
                throw ISO7816Error(
                    .truncated, offset: base + end,
                    "length byte \([l0].hexString) announces \(n) length bytes; only \(end - cursor - 1) remain")
            }
            length = 0
            for i in 1...n { length = length << 8 | Int(bytes[cursor + i]) }
            cursor += 1 + n
        }
        // Value: check the bound before touching memory.
        guard length <= end - cursor else {
            throw ISO7816Error(
                .truncated, offset: base + end,
                "tag \(BERTag(tag)) announces \(length) value bytes; only \(end - cursor) remain")
        }
        let valueStart = cursor
        let valueEnd = cursor + length
        cursor = valueEnd
        let bertag = BERTag(tag)
        var children: [BERTLV] = []
        var contentError: ISO7816Error? = nil
        if bertag.isConstructed {
            do {
                children = try parseSequence(bytes, from: valueStart, to: valueEnd, base: base, depth: depth + 1, options: options)
            } catch {
                guard options.keepsMalformedContent else { throw error }
                contentError = error
            }
        }
        return BERTLV(tag: bertag, value: Array(bytes[valueStart..<valueEnd]), children: children, contentError: contentError)
    }
}

extension BERTLV: CustomStringConvertible {
    public var description: String { serialized().hexString }
}
