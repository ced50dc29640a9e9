#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

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
/// Stored compactly: the concrete bytes as a view into a shared, immutable byte chunk
/// (`ByteChunk`), and one reference in all. The wildcard and redaction items, with the place each
/// stands in, are kept by a chunk of the payload's own; a concrete payload has none and its chunk
/// (usually shared with many others) keeps an empty list, so no payload stores a list of its own.
/// A recorded payload of n bytes costs n bytes of a chunk, not one 16-byte ``Item`` per byte; the
/// parser fills one chunk with many payloads (`PayloadArena`), so a line read and dropped
/// allocates nothing.
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

    /// The chunk holding the concrete bytes at `start..<start + length` (and the masks, for a
    /// payload that has some); nil for no bytes and no masks.
    private let chunk: ByteChunk?
    private let start: Int
    private let length: Int
    /// The masked items in order; several may share a position. Empty for concrete bytes.
    var masks: [Mask] { chunk?.masks ?? [] }
    /// True when there is at least one mask (no copy of the list).
    private var hasMasks: Bool { chunk?.hasMasks ?? false }

    /// Concrete bytes, no wildcard and no redaction.
    public init(_ bytes: [UInt8]) {
        self.init(copying: bytes, masks: [])
    }

    /// Items as given. A `.redacted(count:)` outside 1…``maximumRedactedCount`` makes the line
    /// invalid: writers refuse it with ``TranscriptWriteError``.
    public init(items: [Item]) {
        var concrete: [UInt8] = []
        var masks: [Mask] = []
        for item in items {
            if case .byte(let b) = item {
                concrete.append(b)
            } else {
                masks.append(Mask(position: concrete.count, item: item))
            }
        }
        self.init(copying: concrete, masks: masks)
    }

    /// The bytes of `concrete` copied into a chunk of their own, with `masks`.
    init(copying concrete: [UInt8], masks: [Mask]) {
        if concrete.isEmpty && masks.isEmpty {
            chunk = nil
        } else {
            let c = ByteChunk.make(capacity: concrete.count, masks: masks)
            concrete.withUnsafeBufferPointer { c.append($0) }
            chunk = c
        }
        start = 0
        length = concrete.count
    }

    /// A view of `length` bytes of `chunk` from `start` (bytes the chunk will never change).
    init(chunk: ByteChunk, start: Int, length: Int) {
        self.chunk = length == 0 && !chunk.hasMasks ? nil : chunk
        self.start = start
        self.length = length
    }

    /// Calls `body` with the concrete bytes (valid only inside `body`).
    @inline(__always)
    func withConcreteBytes<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        guard let chunk, length > 0 else { return try body(UnsafeBufferPointer(start: nil, count: 0)) }
        return try withExtendedLifetime(chunk) {
            try body(UnsafeBufferPointer(start: chunk.bytes + start, count: length))
        }
    }

    /// The concrete bytes in order, copied; wildcard and redaction items have no byte here.
    var concrete: [UInt8] { withConcreteBytes { Array($0) } }

    /// The items in order (built on demand from the bytes and the mask).
    public var items: [Item] {
        get {
            var out: [Item] = []
            out.reserveCapacity(length + masks.count)
            forEachItem { out.append($0) }
            return out
        }
        set { self = TranscriptBytes(items: newValue) }
    }

    /// The number of items (a redaction mark is one item).
    public var itemCount: Int { hasMasks ? length + masks.count : length }

    /// Calls `body` with each item in order.
    func forEachItem(_ body: (Item) throws -> Void) rethrows {
        try withConcreteBytes { concrete in
            var next = 0
            for mask in masks {
                while next < mask.position { try body(.byte(concrete[next])); next += 1 }
                try body(mask.item)
            }
            while next < concrete.count { try body(.byte(concrete[next])); next += 1 }
        }
    }

    /// The number of bytes the sequence stands for (a redaction mark counts its length).
    public var count: Int {
        if !hasMasks { return length }
        return masks.reduce(length) { total, mask in
            if case .redacted(let n) = mask.item { return total + max(n, 0) }
            return total + 1
        }
    }

    /// The bytes, or nil when the sequence holds a wildcard or a redaction mark.
    public var bytes: [UInt8]? { hasMasks ? nil : concrete }

    /// The first item, or nil for no bytes; no copy.
    public var firstItem: Item? {
        if hasMasks, let first = masks.first, first.position == 0 { return first.item }
        guard length > 0, let chunk else { return nil }
        return withExtendedLifetime(chunk) { .byte(chunk.bytes[start]) }
    }

    /// SW1-SW2 when the sequence is concrete and at least two bytes long (the last two), else nil;
    /// no copy of the bytes.
    public var trailingStatusWord: UInt16? {
        guard length >= 2, let chunk, !chunk.hasMasks else { return nil }
        return withExtendedLifetime(chunk) {
            UInt16(chunk.bytes[start + length - 2]) << 8 | UInt16(chunk.bytes[start + length - 1])
        }
    }

    /// True when every item is a concrete byte.
    public var isConcrete: Bool { !hasMasks }

    /// True when the sequence holds at least one `[REDACTED n]` mark.
    public var containsRedaction: Bool {
        hasMasks && masks.contains { if case .redacted = $0.item { true } else { false } }
    }

    /// True when the sequence holds at least one `??` byte.
    public var containsWildcard: Bool { hasMasks && masks.contains { $0.item == .wildcard } }

    /// Whether `actual` fits this pattern: same length, concrete bytes equal, wildcard and
    /// redacted bytes match anything.
    public func matches(_ actual: [UInt8]) -> Bool {
        firstMismatch(in: actual) == nil
    }

    /// The offset of the first byte of `actual` that does not fit, `actual.count` or the pattern's
    /// length when one is a proper prefix of the other, or nil when `actual` matches.
    public func firstMismatch(in actual: [UInt8]) -> Int? {
        if !hasMasks {
            return withConcreteBytes { concrete in
                let n = min(concrete.count, actual.count)
                for i in 0..<n where actual[i] != concrete[i] { return i }
                return concrete.count == actual.count ? nil : n
            }
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

    public static func == (a: Self, b: Self) -> Bool {
        guard a.length == b.length, a.hasMasks == b.hasMasks, !a.hasMasks || a.masks == b.masks else { return false }
        if a.length == 0 || (a.chunk === b.chunk && a.start == b.start) { return true }
        return a.withConcreteBytes { x in
            b.withConcreteBytes { y in memcmp(x.baseAddress!, y.baseAddress!, x.count) == 0 }
        }
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(length)
        withConcreteBytes { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        if hasMasks { hasher.combine(masks) } else { hasher.combine(0) }
    }

    /// The text form, e.g. `00 20 00 81 08 [REDACTED 8]`; empty for no bytes.
    public var description: String {
        var out: [UInt8] = []
        appendText(to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends the text form as UTF-8 to `out`.
    func appendText(to out: inout [UInt8]) {
        out.reserveCapacity(out.count + 3 * length + (hasMasks ? 16 * masks.count : 0))
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

/// A fixed-size byte buffer filled from the front and shared by the ``TranscriptBytes`` that view
/// it: the bytes below ``used`` never change (which makes sharing it between threads safe), the
/// bytes above it are free room.
///
/// A chunk of one payload's own may also hold that payload's wildcard and redaction items
/// (``masks``); a chunk shared by many payloads holds none, so they are all concrete.
final class ByteChunk: @unchecked Sendable {
    let bytes: UnsafeMutablePointer<UInt8>
    let capacity: Int
    /// Bytes in use, from the start.
    var used = 0
    /// The masked items of the one payload this chunk holds; empty for a shared chunk.
    let masks: [TranscriptBytes.Mask]
    /// `!masks.isEmpty`, kept so that a concrete payload's check reads one byte.
    let hasMasks: Bool

    private init(capacity: Int, masks: [TranscriptBytes.Mask]) {
        self.capacity = capacity
        self.masks = masks
        hasMasks = !masks.isEmpty
        bytes = .allocate(capacity: max(capacity, 1))
    }

    deinit { bytes.deallocate() }

    static func make(capacity: Int, masks: [TranscriptBytes.Mask] = []) -> ByteChunk {
        ByteChunk(capacity: capacity, masks: masks)
    }

    /// Appends `source` (the room must be there).
    func append(_ source: UnsafeBufferPointer<UInt8>) {
        guard let base = source.baseAddress, !source.isEmpty else { return }
        precondition(used + source.count <= capacity)
        (bytes + used).update(from: base, count: source.count)
        used += source.count
    }
}

/// Where the parser puts the payload bytes it decodes: one chunk of 64 KiB (larger for a longer
/// payload) holding many payloads. A full chunk that no payload views any more is reused; one
/// still viewed is left to its views and a new one taken. Reading a file line by line and
/// dropping each line thus allocates no memory per line, and a transcript kept whole costs its
/// bytes plus one chunk header per 64 KiB.
final class PayloadArena {
    static let chunkSize = 64 * 1024
    private var chunk = ByteChunk.make(capacity: PayloadArena.chunkSize)

    /// Room for up to `count` bytes at the end of the current chunk: the chunk and the place the
    /// bytes go. Nothing is in use until ``commit(_:count:)``.
    @inline(__always)
    func room(for count: Int) -> ByteChunk {
        if chunk.capacity - chunk.used < count {
            if isKnownUniquelyReferenced(&chunk), chunk.capacity >= count {
                chunk.used = 0
            } else {
                chunk = ByteChunk.make(capacity: max(Self.chunkSize, count))
            }
        }
        return chunk
    }

    /// Marks `count` bytes written at `chunk.bytes + chunk.used` as used: a view of them.
    @inline(__always)
    func commit(_ chunk: ByteChunk, count: Int) -> TranscriptBytes {
        let start = chunk.used
        chunk.used += count
        return TranscriptBytes(chunk: chunk, start: start, length: count)
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

    /// The byte two uppercase hex digits stand for, with bit 8 set, indexed by the digits as one
    /// little-endian 16-bit value (the first digit in the low byte); 0 where either byte is not an
    /// uppercase hex digit. 65 536 entries (128 KiB), written once, when first used, and only read
    /// after. The table comes from `calloc`, whose zero pages of a block this large the kernel
    /// maps only when touched: the 256 entries written lie in 12 KiB, the rest never becomes
    /// resident.
    nonisolated(unsafe) static let pairTable: UnsafePointer<UInt16> = {
        let table: UnsafeMutablePointer<UInt16>
        if let memory = calloc(1 << 16, MemoryLayout<UInt16>.stride) {
            table = memory.bindMemory(to: UInt16.self, capacity: 1 << 16)
        } else {  // Swift's own allocation, zeroed by hand (and, like any, fatal when it fails)
            table = .allocate(capacity: 1 << 16)
            table.initialize(repeating: 0, count: 1 << 16)
        }
        let digits = Array("0123456789ABCDEF".utf8)
        for (hi, first) in digits.enumerated() {
            for (lo, second) in digits.enumerated() {
                table[Int(first) | Int(second) << 8] = 0x100 | UInt16(hi << 4 | lo)
            }
        }
        return UnsafePointer(table)
    }()

    static func isLowercaseHexDigit(_ c: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(c)
    }
}
