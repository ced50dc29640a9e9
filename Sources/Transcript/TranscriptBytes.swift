/// The bytes of one transcript line: concrete bytes, wildcard bytes and redaction marks.
///
/// Text form (Fixtures/README.md, "Bytes"): items separated by one space, each item one of
/// - `HH`: one byte, two uppercase hexadecimal digits (`00`…`FF`);
/// - `??`: a wildcard byte, any value matches (expected data in hand-written transcripts);
/// - `[REDACTED n]`: `n` bytes (decimal, 1…65 548) removed by the redactor; the mark keeps the length.
///
/// `00 20 00 81 08 [REDACTED 8]` is a VERIFY whose PIN block was masked. A run of redacted bytes is
/// kept as written (`[REDACTED 4] [REDACTED 4]` stays two items) so that text round-trips exactly.
///
/// Stored compactly: the concrete bytes in one `[UInt8]`, plus a mask of the wildcard and redaction
/// items with the place each stands in (empty, and no allocation, for concrete bytes). A recorded
/// payload of n bytes costs one array of n bytes, not one 16-byte ``Item`` per byte.
public struct TranscriptBytes: Sendable, Hashable, CustomStringConvertible {
    /// One item of a byte sequence.
    public enum Item: Sendable, Hashable {
        /// A concrete byte.
        case byte(UInt8)
        /// `??`: any single byte.
        case wildcard
        /// `[REDACTED n]`: `count` bytes whose value was removed.
        case redacted(count: Int)
    }

    /// A wildcard or redaction item standing before `concrete[position]` (or at the end).
    struct Mask: Sendable, Hashable {
        var position: Int
        var item: Item
    }

    /// The largest count a redaction mark may carry: pcsc-lite's MAX_BUFFER_SIZE_EXTENDED (65 548).
    public static let maximumRedactedCount = 65_548

    /// The concrete bytes in order; wildcard and redaction items have no byte here.
    private(set) var concrete: [UInt8]
    /// The masked items in order; several may share a position.
    private(set) var masks: [Mask]

    /// Concrete bytes, no wildcard and no redaction.
    public init(_ bytes: [UInt8]) {
        concrete = bytes
        masks = []
    }

    /// Items as given. A `.redacted(count:)` outside 1…``maximumRedactedCount`` makes the line
    /// invalid: writers refuse it with ``TranscriptWriteError``.
    public init(items: [Item]) {
        concrete = []
        masks = []
        for item in items { append(item) }
    }

    /// Adds one item at the end.
    mutating func append(_ item: Item) {
        if case .byte(let b) = item {
            concrete.append(b)
        } else {
            masks.append(Mask(position: concrete.count, item: item))
        }
    }

    mutating func reserveCapacity(_ n: Int) { concrete.reserveCapacity(n) }

    /// The items in order (built on demand from the bytes and the mask).
    public var items: [Item] {
        get {
            if masks.isEmpty { return concrete.map(Item.byte) }
            var out: [Item] = []
            out.reserveCapacity(concrete.count + masks.count)
            forEachItem { out.append($0) }
            return out
        }
        set { self = TranscriptBytes(items: newValue) }
    }

    /// The number of items (a redaction mark is one item).
    public var itemCount: Int { concrete.count + masks.count }

    /// Calls `body` with each item in order.
    func forEachItem(_ body: (Item) throws -> Void) rethrows {
        var next = 0
        for mask in masks {
            while next < mask.position { try body(.byte(concrete[next])); next += 1 }
            try body(mask.item)
        }
        while next < concrete.count { try body(.byte(concrete[next])); next += 1 }
    }

    /// The number of bytes the sequence stands for (a redaction mark counts its length).
    public var count: Int {
        masks.reduce(concrete.count) { total, mask in
            if case .redacted(let n) = mask.item { return total + max(n, 0) }
            return total + 1
        }
    }

    /// The bytes, or nil when the sequence holds a wildcard or a redaction mark.
    public var bytes: [UInt8]? { masks.isEmpty ? concrete : nil }

    /// SW1-SW2 when the sequence is concrete and at least two bytes long (the last two), else nil;
    /// no copy of the bytes.
    public var trailingStatusWord: UInt16? {
        guard masks.isEmpty, concrete.count >= 2 else { return nil }
        return UInt16(concrete[concrete.count - 2]) << 8 | UInt16(concrete[concrete.count - 1])
    }

    /// True when every item is a concrete byte.
    public var isConcrete: Bool { masks.isEmpty }

    /// True when the sequence holds at least one `[REDACTED n]` mark.
    public var containsRedaction: Bool {
        masks.contains { if case .redacted = $0.item { true } else { false } }
    }

    /// True when the sequence holds at least one `??` byte.
    public var containsWildcard: Bool { masks.contains { $0.item == .wildcard } }

    /// Whether `actual` fits this pattern: same length, concrete bytes equal, wildcard and
    /// redacted bytes match anything.
    public func matches(_ actual: [UInt8]) -> Bool {
        firstMismatch(in: actual) == nil
    }

    /// The offset of the first byte of `actual` that does not fit, `actual.count` or the pattern's
    /// length when one is a proper prefix of the other, or nil when `actual` matches.
    public func firstMismatch(in actual: [UInt8]) -> Int? {
        if masks.isEmpty {
            let n = min(concrete.count, actual.count)
            for i in 0..<n where actual[i] != concrete[i] { return i }
            return concrete.count == actual.count ? nil : n
        }
        var index = 0
        var mismatch: Int?
        forEachItem { item in
            guard mismatch == nil else { return }
            switch item {
            case .byte(let expected):
                if index >= actual.count || actual[index] != expected { mismatch = index; return }
                index += 1
            case .wildcard:
                if index >= actual.count { mismatch = index; return }
                index += 1
            case .redacted(let n):
                let n = max(n, 0)
                if actual.count - index < n { mismatch = actual.count; return }
                index += n
            }
        }
        if let mismatch { return mismatch }
        return index == actual.count ? nil : index
    }

    /// The text form, e.g. `00 20 00 81 08 [REDACTED 8]`; empty for no bytes.
    public var description: String {
        var out: [UInt8] = []
        appendText(to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends the text form as UTF-8 to `out`.
    func appendText(to out: inout [UInt8]) {
        out.reserveCapacity(out.count + 3 * concrete.count + 16 * masks.count)
        var first = true
        forEachItem { item in
            if !first { out.append(UInt8(ascii: " ")) }
            first = false
            switch item {
            case .byte(let b): HexText.appendByte(b, to: &out)
            case .wildcard: out.append(UInt8(ascii: "?")); out.append(UInt8(ascii: "?"))
            case .redacted(let n): out += Array("[REDACTED \(n)]".utf8)
            }
        }
    }
}

/// Uppercase hex text with a space between bytes, the project's form (docs/house-style.md).
enum HexText {
    private static let digits: [Character] = Array("0123456789ABCDEF")

    static func appendByte(_ b: UInt8, to out: inout String) {
        out.append(digits[Int(b >> 4)])
        out.append(digits[Int(b & 0x0F)])
    }

    private static let asciiDigits: [UInt8] = Array("0123456789ABCDEF".utf8)

    static func appendByte(_ b: UInt8, to out: inout [UInt8]) {
        out.append(asciiDigits[Int(b >> 4)])
        out.append(asciiDigits[Int(b & 0x0F)])
    }

    static func string(_ bytes: [UInt8]) -> String {
        TranscriptBytes(bytes).description
    }

    /// `0x` and eight uppercase hex digits, e.g. `0x42000001`.
    static func code(_ value: UInt32) -> String {
        var out = "0x"
        for shift in stride(from: 24, through: 0, by: -8) {
            appendByte(UInt8(truncatingIfNeeded: value >> UInt32(shift)), to: &out)
        }
        return out
    }

    /// The value of an uppercase hex digit, or nil.
    static func value(ofUppercaseDigit c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// ``value(ofUppercaseDigit:)`` without the optional: 0xFF when `c` is not an uppercase hex
    /// digit, so that `hi | lo < 0x10` checks two digits at once.
    @inline(__always)
    static func digitOrFF(_ c: UInt8) -> UInt8 {
        let d = c &- UInt8(ascii: "0")
        if d < 10 { return d }
        let e = c &- UInt8(ascii: "A")
        return e < 6 ? e + 10 : 0xFF
    }

    static func isLowercaseHexDigit(_ c: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(c)
    }
}
