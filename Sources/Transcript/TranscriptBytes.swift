/// The bytes of one transcript line: concrete bytes, wildcard bytes and redaction marks.
///
/// Text form (Fixtures/README.md, "Bytes"): items separated by one space, each item one of
/// - `HH`: one byte, two uppercase hexadecimal digits (`00`…`FF`);
/// - `??`: a wildcard byte, any value matches (expected data in hand-written transcripts);
/// - `[REDACTED n]`: `n` bytes (decimal, 1…65 548) removed by the redactor; the mark keeps the length.
///
/// `00 20 00 81 08 [REDACTED 8]` is a VERIFY whose PIN block was masked. A run of redacted bytes is
/// kept as written (`[REDACTED 4] [REDACTED 4]` stays two items) so that text round-trips exactly.
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

    /// The largest count a redaction mark may carry: pcsc-lite's MAX_BUFFER_SIZE_EXTENDED (65 548).
    public static let maximumRedactedCount = 65_548

    /// The items in order.
    public var items: [Item]

    /// Concrete bytes, no wildcard and no redaction.
    public init(_ bytes: [UInt8]) {
        items = bytes.map(Item.byte)
    }

    /// Items as given. A `.redacted(count:)` outside 1…``maximumRedactedCount`` makes the line
    /// invalid: writers refuse it with ``TranscriptWriteError``.
    public init(items: [Item]) {
        self.items = items
    }

    /// The number of bytes the sequence stands for (a redaction mark counts its length).
    public var count: Int {
        items.reduce(0) { total, item in
            if case .redacted(let n) = item { return total + max(n, 0) }
            return total + 1
        }
    }

    /// The bytes, or nil when the sequence holds a wildcard or a redaction mark.
    public var bytes: [UInt8]? {
        var result: [UInt8] = []
        result.reserveCapacity(items.count)
        for item in items {
            guard case .byte(let b) = item else { return nil }
            result.append(b)
        }
        return result
    }

    /// True when every item is a concrete byte.
    public var isConcrete: Bool { bytes != nil }

    /// True when the sequence holds at least one `[REDACTED n]` mark.
    public var containsRedaction: Bool {
        items.contains { if case .redacted = $0 { true } else { false } }
    }

    /// True when the sequence holds at least one `??` byte.
    public var containsWildcard: Bool { items.contains(.wildcard) }

    /// Whether `actual` fits this pattern: same length, concrete bytes equal, wildcard and
    /// redacted bytes match anything.
    public func matches(_ actual: [UInt8]) -> Bool {
        firstMismatch(in: actual) == nil
    }

    /// The offset of the first byte of `actual` that does not fit, `actual.count` or the pattern's
    /// length when one is a proper prefix of the other, or nil when `actual` matches.
    public func firstMismatch(in actual: [UInt8]) -> Int? {
        var index = 0
        for item in items {
            switch item {
            case .byte(let expected):
                guard index < actual.count else { return index }
                if actual[index] != expected { return index }
                index += 1
            case .wildcard:
                guard index < actual.count else { return index }
                index += 1
            case .redacted(let n):
                let n = max(n, 0)
                guard actual.count - index >= n else { return actual.count }
                index += n
            }
        }
        return index == actual.count ? nil : index
    }

    /// The text form, e.g. `00 20 00 81 08 [REDACTED 8]`; empty for no bytes.
    public var description: String {
        var out = ""
        out.reserveCapacity(items.count * 3)
        for (i, item) in items.enumerated() {
            if i > 0 { out.append(" ") }
            switch item {
            case .byte(let b): HexText.appendByte(b, to: &out)
            case .wildcard: out.append("??")
            case .redacted(let n): out.append("[REDACTED \(n)]")
            }
        }
        return out
    }
}

/// Uppercase hex text with a space between bytes, the project's form (docs/house-style.md).
enum HexText {
    private static let digits: [Character] = Array("0123456789ABCDEF")

    static func appendByte(_ b: UInt8, to out: inout String) {
        out.append(digits[Int(b >> 4)])
        out.append(digits[Int(b & 0x0F)])
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

    static func isLowercaseHexDigit(_ c: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(c)
    }
}
