/// An Answer-to-Reset (ISO/IEC 7816-3 §8.2), as a PC/SC reader reports it.
///
/// Byte layout:
/// ```
/// | TS | T0 | TA1 TB1 TC1 TD1 | TA2 TB2 TC2 TD2 | … | historical bytes (K) | TCK |
/// ```
/// T0 = Y1 (b8-b5: which of TA1…TD1 follow) and K (b4-b1: the number of historical bytes). Each TDi
/// gives Yi+1 (b8-b5) and a protocol T (b4-b1). TCK is present unless only T=0 is announced, and
/// makes the XOR of T0 … TCK zero. At most 33 bytes.
public struct ATR: Sendable, Hashable {
    /// The raw ATR.
    public let bytes: [UInt8]
    /// The coding convention announced by TS.
    public let convention: Convention
    /// T0.
    public let t0: UInt8
    /// The groups of interface bytes, group i holding TAi, TBi, TCi, TDi (i from 1).
    public let interfaceGroups: [InterfaceGroup]
    /// The historical bytes, K of them.
    public let historicalBytes: [UInt8]
    /// The check byte, present unless only T=0 is announced (or missing, see `checkByte`).
    public let tck: UInt8?
    /// What the check byte says.
    public let checkByte: CheckByte
    /// Whether the XOR of T0 … TCK is 0; true when only T=0 is announced (no TCK is needed),
    /// false when TCK is wrong or missing.
    public var isChecksumValid: Bool { checkByte == .valid || checkByte == .notRequired }

    /// The state of TCK (ISO/IEC 7816-3 §8.2.5). `expected` is the TCK that makes the XOR of
    /// T0 … TCK zero: the XOR of T0 … the last historical byte.
    public enum CheckByte: Sendable, Hashable {
        /// Only T=0 is announced: the ATR has no TCK.
        case notRequired
        /// TCK is present and right.
        case valid
        /// TCK is present and wrong.
        case invalid(expected: UInt8)
        /// A protocol other than T=0 is announced but the ATR ends after the historical bytes
        /// (only `readLeniently` gives this).
        case missing(expected: UInt8)
    }

    /// TS: how the card codes its bits (ISO/IEC 7816-3 §8.1).
    public enum Convention: UInt8, Sendable {
        /// TS = 3B.
        case direct = 0x3B
        /// TS = 3F (readers report the decoded byte 3F).
        case inverse = 0x3F
    }

    /// The interface bytes of one group i (ISO/IEC 7816-3 §8.2.3).
    public struct InterfaceGroup: Sendable, Hashable {
        /// The group number i, from 1.
        public let index: Int
        /// TAi, when present. TA1 codes Fi and Di (the clock rate conversion and the baud rate
        /// adjustment); TA2 the specific mode (ISO/IEC 7816-3 §8.3).
        public let ta: UInt8?
        /// TBi, when present (TB1 and TB2 are deprecated; for T=1, TBi with i > 2 codes BWI and CWI).
        public let tb: UInt8?
        /// TCi, when present (TC1: the extra guard time N; for T=1, TCi with i > 2 gives the error
        /// detection code).
        public let tc: UInt8?
        /// TDi, when present: the low nibble is a protocol type T, the high nibble says which of
        /// TA(i+1) … TD(i+1) follow.
        public let td: UInt8?
        /// Makes a group from its bytes; nil for a byte the ATR does not carry.
        public init(index: Int, ta: UInt8?, tb: UInt8?, tc: UInt8?, td: UInt8?) {
            self.index = index
            self.ta = ta
            self.tb = tb
            self.tc = tc
            self.td = td
        }

        /// The protocol TDi announces (its low nibble), if TDi is present.
        public var announcedProtocol: UInt8? { td.map { $0 & 0x0F } }
    }

    /// The longest ATR: TS and 32 more bytes.
    public static let maxLength = 33

    /// Parses an ATR strictly: the input is one whole ATR.
    /// - Parameters:
    ///   - bytes: the ATR from TS to TCK, 2…33 bytes.
    ///   - requireValidChecksum: when true (the default) a wrong TCK throws; when false it parses
    ///     and `checkByte` is `.invalid`.
    /// - Throws: `ISO7816Error` with code `invalidTS`, `truncated` (interface bytes, historical
    ///   bytes or TCK missing), `trailingBytes`, `oversize` (more than 33 bytes) or
    ///   `checksumMismatch`.
    public init(parsing bytes: [UInt8], requireValidChecksum: Bool = true) throws(ISO7816Error) {
        guard bytes.count <= Self.maxLength else {
            throw ISO7816Error(.oversize, offset: Self.maxLength, "an ATR is at most 33 bytes; got \(bytes.count)")
        }
        let reading = try Self.read(bytes, lenient: false)
        if requireValidChecksum, case .invalid(let expected) = reading.atr.checkByte, let tck = reading.atr.tck {
            throw ISO7816Error(
                .checksumMismatch, offset: reading.atr.bytes.count - 1,
                "TCK is \([tck].hexString) but the XOR of T0 … TCK is \([tck ^ expected].hexString), not 00; the expected TCK is \([expected].hexString)")
        }
        self = reading.atr
    }

    /// What `readLeniently` found: the ATR and what it let pass.
    public struct LenientReading: Sendable, Hashable {
        /// The ATR, without the bytes after it. Its `checkByte` may be `.invalid` or `.missing`.
        public let atr: ATR
        /// The bytes after a complete ATR (for example the SW 90 00 of a tool that printed the
        /// ATR with a status word), not part of `atr.bytes`.
        public let bytesAfter: [UInt8]
    }

    /// Reads an ATR as tools and logs give it, accepting what `init(parsing:)` refuses but a
    /// reader of the bytes can still make sense of: bytes after a complete ATR (returned in
    /// `bytesAfter`), a wrong TCK (`.invalid`), and a TCK missing where a protocol other than T=0
    /// is announced (`.missing`). The ATR's own structure must still be whole.
    /// - Parameter bytes: TS, then the ATR, then anything.
    /// - Throws: `ISO7816Error` with code `invalidTS`, `truncated` (interface or historical bytes
    ///   missing) or `oversize` (the ATR itself runs past 33 bytes).
    public static func readLeniently(_ bytes: [UInt8]) throws(ISO7816Error) -> LenientReading {
        try read(bytes, lenient: true)
    }

    private init(
        bytes: [UInt8], convention: Convention, groups: [InterfaceGroup], historical: [UInt8],
        tck: UInt8?, checkByte: CheckByte
    ) {
        self.bytes = bytes
        self.convention = convention
        self.t0 = bytes[1]
        self.interfaceGroups = groups
        self.historicalBytes = historical
        self.tck = tck
        self.checkByte = checkByte
    }

    /// The structure walk shared by both entry points; `lenient` as in `readLeniently`.
    private static func read(_ bytes: [UInt8], lenient: Bool) throws(ISO7816Error) -> LenientReading {
        guard let first = bytes.first else {
            throw ISO7816Error(.truncated, offset: 0, "an ATR starts with TS; the input is empty")
        }
        guard let convention = Convention(rawValue: first) else {
            throw ISO7816Error(
                .invalidTS, offset: 0,
                "TS is \([first].hexString); it must be 3B (direct convention) or 3F (inverse convention)")
        }
        guard bytes.count >= 2 else {
            throw ISO7816Error(.truncated, offset: 1, "an ATR needs T0 after TS; the input ended")
        }
        let t0 = bytes[1]
        let k = Int(t0 & 0x0F)
        var cursor = 2
        var y = t0 >> 4
        var groups: [InterfaceGroup] = []
        var needsTCK = false
        var index = 1
        // Each group consumes its TDi byte to continue; the bound on the ATR's length stops a
        // long input of TDi bytes that all announce another group.
        while true {
            var values: [UInt8?] = [nil, nil, nil, nil]
            for bit in 0..<4 where y & (1 << bit) != 0 {
                guard cursor < bytes.count else {
                    let name = ["TA", "TB", "TC", "TD"][bit]
                    throw ISO7816Error(
                        .truncated, offset: cursor,
                        "\(name)\(index) is announced; the ATR ended")
                }
                values[bit] = bytes[cursor]
                cursor += 1
            }
            guard cursor <= maxLength else {
                throw ISO7816Error(
                    .oversize, offset: maxLength, "the interface bytes run past 33 bytes, the longest ATR")
            }
            let group = InterfaceGroup(index: index, ta: values[0], tb: values[1], tc: values[2], td: values[3])
            groups.append(group)
            guard let td = group.td else { break }
            if td & 0x0F != 0 { needsTCK = true }
            y = td >> 4
            index += 1
        }
        // A group with no bytes at all (T0 announces nothing) is not kept.
        if let last = groups.last, last.ta == nil, last.tb == nil, last.tc == nil, last.td == nil {
            groups.removeLast()
        }
        guard bytes.count - cursor >= k else {
            throw ISO7816Error(
                .truncated, offset: bytes.count,
                "T0 announces \(k) historical bytes; only \(bytes.count - cursor) remain")
        }
        let historical = Array(bytes[cursor..<(cursor + k)])
        cursor += k
        var expected: UInt8 = 0
        for b in bytes[1..<cursor] { expected ^= b }
        var tck: UInt8? = nil
        var checkByte = CheckByte.notRequired
        if needsTCK {
            if cursor < bytes.count {
                tck = bytes[cursor]
                cursor += 1
                checkByte = tck == expected ? .valid : .invalid(expected: expected)
            } else if lenient {
                checkByte = .missing(expected: expected)
            } else {
                throw ISO7816Error(
                    .truncated, offset: cursor,
                    "a protocol other than T=0 is announced, so TCK must follow the historical bytes; the ATR ended")
            }
        }
        guard cursor <= maxLength else {
            throw ISO7816Error(
                .oversize, offset: maxLength, "T0 and TD announce an ATR of \(cursor) bytes; at most 33 are allowed")
        }
        guard lenient || cursor == bytes.count else {
            throw ISO7816Error(
                .trailingBytes, offset: cursor,
                "the ATR ends at byte \(cursor); \(bytes.count - cursor) more bytes follow")
        }
        let atr = ATR(
            bytes: Array(bytes[..<cursor]), convention: convention, groups: groups, historical: historical,
            tck: tck, checkByte: checkByte)
        return LenientReading(atr: atr, bytesAfter: Array(bytes[cursor...]))
    }

    /// The raw ATR.
    public func serialized() -> [UInt8] { bytes }

    /// The protocols announced by the TDi bytes, in order and without repeats; [0] (T=0) when
    /// there is no TD1. T=15 (global interface bytes) is not a protocol and is left out.
    public var protocols: [UInt8] {
        var result: [UInt8] = []
        for group in interfaceGroups {
            if let t = group.announcedProtocol, t != 15, !result.contains(t) { result.append(t) }
        }
        return result.isEmpty ? [0] : result
    }

    /// The historical bytes decoded (ISO/IEC 7816-4 §8.1.1, PC/SC part 3 §3.1.3.2.3).
    /// - Throws: the errors of `HistoricalBytes.init(parsing:)`.
    public func decodedHistoricalBytes() throws(ISO7816Error) -> HistoricalBytes {
        try HistoricalBytes(parsing: historicalBytes)
    }

    /// The card capabilities from the historical bytes' compact-TLV tag 73, if present and decodable.
    public var cardCapabilities: CardCapabilities? {
        (try? decodedHistoricalBytes())?.cardCapabilities
    }

    /// Builds the ATR a PC/SC reader synthesises for a contactless ISO/IEC 14443-4 card
    /// (PC/SC part 3 §3.1.3.2.3): `3B 8N 80 01 <N historical bytes> TCK`.
    ///
    /// TD1 = 80 (TD2 follows, T=0), TD2 = 01 (T=1), TCK = XOR of T0 … the last historical byte.
    /// No historical bytes give `3B 80 80 01 01`; one byte 80 gives `3B 81 80 01 80 80`.
    /// - Parameter historicalBytes: 0…15 bytes (for Type A, the ATS's T1…Tk).
    /// - Throws: `ISO7816Error` `valueOutOfRange` for more than 15 bytes.
    public static func contactless(historicalBytes: [UInt8]) throws(ISO7816Error) -> ATR {
        guard historicalBytes.count <= 15 else {
            throw ISO7816Error(
                .valueOutOfRange,
                "an ATR carries at most 15 historical bytes; got \(historicalBytes.count)")
        }
        var out: [UInt8] = [0x3B, 0x80 | UInt8(historicalBytes.count), 0x80, 0x01]
        out.append(contentsOf: historicalBytes)
        var x: UInt8 = 0
        for b in out[1...] { x ^= b }
        out.append(x)
        return try ATR(parsing: out)
    }
}

extension ATR: CustomStringConvertible {
    public var description: String { bytes.hexString }
}
