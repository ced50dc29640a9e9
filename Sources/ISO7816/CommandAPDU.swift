/// The seven command APDU cases of ISO/IEC 7816-3 §12.1.2 / ISO/IEC 7816-4 §5.1.
///
/// The case follows from Nc (data length), Ne (expected response length) and whether the length
/// fields are short (1 byte) or extended (3 bytes for Lc, 2 or 3 for Le).
public enum APDUCase: String, Sendable, Hashable, CaseIterable {
    /// `| CLA | INS | P1 | P2 |`: no data, no response data.
    case case1 = "1"
    /// `| header | Le |`: no data, Ne 1…256.
    case case2Short = "2S"
    /// `| header | Lc | data |`: Nc 1…255, no response data.
    case case3Short = "3S"
    /// `| header | Lc | data | Le |`: Nc 1…255, Ne 1…256.
    case case4Short = "4S"
    /// `| header | 00 | Le1 Le2 |`: no data, Ne 1…65 536.
    case case2Extended = "2E"
    /// `| header | 00 | Lc1 Lc2 | data |`: Nc 1…65 535, no response data.
    case case3Extended = "3E"
    /// `| header | 00 | Lc1 Lc2 | data | Le1 Le2 |`: Nc 1…65 535, Ne 1…65 536.
    case case4Extended = "4E"

    /// Whether the case uses extended length fields.
    public var isExtended: Bool {
        switch self {
        case .case2Extended, .case3Extended, .case4Extended: true
        default: false
        }
    }
}

/// A command APDU (ISO/IEC 7816-4 §5.1), modelled by its header, its data (Nc bytes) and Ne.
///
/// Byte layouts:
/// ```
/// short:    | CLA | INS | P1 | P2 | [Lc (1)] | [data] | [Le (1)] |
/// extended: | CLA | INS | P1 | P2 | 00 | [Lc (2)] | [data] | [Le (2)] |
/// ```
/// Ne runs 0…65 536: 0 means no Le field; a short Le of 00 means 256, an extended Le of 00 00 means
/// 65 536. Nc runs 0…65 535; a present Lc is never 0. Short lengths are used whenever Nc ≤ 255 and
/// Ne ≤ 256 unless extended length is forced; case 1 has no length fields at all.
public struct CommandAPDU: Sendable, Hashable {
    /// The class byte.
    public let cla: UInt8
    /// The instruction byte.
    public let ins: UInt8
    /// Parameter 1.
    public let p1: UInt8
    /// Parameter 2.
    public let p2: UInt8
    /// The command data field; its count is Nc (0…65 535).
    public let data: [UInt8]
    /// The maximum number of response data bytes expected, 0…65 536 (0: no Le field).
    public let ne: Int
    /// Whether the length fields are extended. Always false for case 1.
    public let isExtended: Bool

    /// The largest Nc: an extended Lc is 2 bytes.
    public static let maxNc = 65_535
    /// The largest Ne: an extended Le of 00 00.
    public static let maxNe = 65_536
    /// The longest possible encoding: case 4E with Nc = 65 535.
    public static let maxEncodedLength = 4 + 3 + 65_535 + 2

    /// Builds a command APDU from its fields.
    /// - Parameters:
    ///   - cla: the class byte.
    ///   - ins: the instruction byte.
    ///   - p1: parameter 1.
    ///   - p2: parameter 2.
    ///   - data: the command data, 0…65 535 bytes (Nc).
    ///   - ne: the expected response length in bytes, 0…65 536; 0 sends no Le.
    ///   - extended: force extended length fields even when short ones would do (ignored for case 1).
    /// - Throws: `ISO7816Error` with code `valueOutOfRange` when Nc or Ne is out of range.
    public init(
        cla: UInt8, ins: UInt8, p1: UInt8, p2: UInt8,
        data: [UInt8] = [], ne: Int = 0, extended: Bool = false
    ) throws(ISO7816Error) {
        guard data.count <= Self.maxNc else {
            throw ISO7816Error(
                .valueOutOfRange,
                "the command data is \(data.count) bytes; an APDU carries at most 65535 (use command chaining for more)")
        }
        guard ne >= 0, ne <= Self.maxNe else {
            throw ISO7816Error(.valueOutOfRange, "Ne is \(ne); it must be 0 (no Le) through 65536")
        }
        self.cla = cla
        self.ins = ins
        self.p1 = p1
        self.p2 = p2
        self.data = data
        self.ne = ne
        let isCase1 = data.isEmpty && ne == 0
        self.isExtended = !isCase1 && (extended || data.count > 255 || ne > 256)
    }

    /// Unchecked memberwise init for values already validated.
    @inline(__always)
    init(uncheckedCLA cla: UInt8, ins: UInt8, p1: UInt8, p2: UInt8, data: [UInt8], ne: Int, isExtended: Bool) {
        self.cla = cla
        self.ins = ins
        self.p1 = p1
        self.p2 = p2
        self.data = data
        self.ne = ne
        self.isExtended = isExtended
    }

    /// Nc, the number of command data bytes.
    public var nc: Int { data.count }

    /// The header `| CLA | INS | P1 | P2 |`.
    public var header: [UInt8] { [cla, ins, p1, p2] }

    /// The ISO/IEC 7816-3 §12.1.2 case of this command.
    public var `case`: APDUCase {
        switch (data.isEmpty, ne == 0) {
        case (true, true): .case1
        case (true, false): isExtended ? .case2Extended : .case2Short
        case (false, true): isExtended ? .case3Extended : .case3Short
        case (false, false): isExtended ? .case4Extended : .case4Short
        }
    }

    /// Whether CLA is FF, the class PC/SC readers use for their own pseudo-APDUs (PC/SC part 3,
    /// ACR122U API v2.04 §4–§6): these are not card APDUs.
    public var isReaderPseudoAPDU: Bool { cla == 0xFF }

    /// Ne of `bytes` when they are a well-formed short command APDU (case 1, 2S, 3S or 4S: 4 bytes,
    /// header + Le, header + Lc + data, header + Lc + data + Le), found without copying the data;
    /// nil for anything else (an extended APDU, or bytes that `init(parsing:)` refuses).
    ///
    /// The encoding of a short APDU is canonical: `CommandAPDU(parsing: bytes).serialized()` gives
    /// `bytes` back, so a caller may send `bytes` as they are. Ne is 0 without Le, and a Le of 00
    /// means 256 (ISO/IEC 7816-4 §5.1).
    /// - Parameter bytes: the encoded command.
    public static func shortNe(ofEncoded bytes: [UInt8]) -> Int? {
        let count = bytes.count
        if count == 4 { return 0 }
        guard count >= 5 else { return nil }
        let b1 = Int(bytes[4])
        if count == 5 { return b1 == 0 ? 256 : b1 }
        guard b1 != 0 else { return nil }
        if count == 5 + b1 { return 0 }
        if count == 6 + b1 {
            let le = Int(bytes[5 + b1])
            return le == 0 ? 256 : le
        }
        return nil
    }

    /// Checks that `bytes` parse as a command APDU, as `init(parsing:)` does, without making one: a
    /// short APDU is checked in place (``shortNe(ofEncoded:)``), anything else is parsed.
    /// - Parameter bytes: the encoded command.
    /// - Throws: the `ISO7816Error` of `init(parsing:)`.
    public static func validate(_ bytes: [UInt8]) throws(ISO7816Error) {
        if shortNe(ofEncoded: bytes) != nil { return }
        _ = try CommandAPDU(parsing: bytes)
    }

    /// The number of bytes `serialized()` returns.
    public var encodedLength: Int {
        let nc = data.count
        if isExtended {
            return 4 + 1 + (nc > 0 ? 2 + nc : 0) + (ne > 0 ? 2 : 0)
        }
        return 4 + (nc > 0 ? 1 + nc : 0) + (ne > 0 ? 1 : 0)
    }

    /// A copy with another Ne (and the length form that Ne needs).
    /// - Throws: `ISO7816Error` `valueOutOfRange` when `ne` is outside 0…65 536.
    public func with(ne: Int) throws(ISO7816Error) -> CommandAPDU {
        try CommandAPDU(cla: cla, ins: ins, p1: p1, p2: p2, data: data, ne: ne, extended: isExtended)
    }

    /// The command as bytes, ISO/IEC 7816-4 §5.1.
    public func serialized() -> [UInt8] {
        let length = encodedLength
        let nc = data.count
        // One allocation of the exact size, filled in place (this is on the hot path).
        return [UInt8](unsafeUninitializedCapacity: length) { buffer, initialized in
            buffer[0] = cla
            buffer[1] = ins
            buffer[2] = p1
            buffer[3] = p2
            var i = 4
            if isExtended {
                buffer[i] = 0x00
                i += 1
                if nc > 0 {
                    buffer[i] = UInt8(truncatingIfNeeded: nc >> 8)
                    buffer[i + 1] = UInt8(truncatingIfNeeded: nc)
                    i += 2
                }
            } else if nc > 0 {
                buffer[i] = UInt8(truncatingIfNeeded: nc)
                i += 1
            }
            if nc > 0 {
                data.withUnsafeBufferPointer { source in
                    _ = UnsafeMutableBufferPointer(rebasing: buffer[i..<(i + nc)]).initialize(fromContentsOf: source)
                }
                i += nc
            }
            if ne > 0 {
                if isExtended {
                    // 65 536 encodes as 00 00.
                    buffer[i] = UInt8(truncatingIfNeeded: ne >> 8)
                    buffer[i + 1] = UInt8(truncatingIfNeeded: ne)
                    i += 2
                } else {
                    // 256 encodes as 00.
                    buffer[i] = UInt8(truncatingIfNeeded: ne)
                    i += 1
                }
            }
            initialized = i
        }
    }

    /// The command as the C-TPDU sent on T=0 (ISO/IEC 7816-3 §12.2).
    ///
    /// `| CLA | INS | P1 | P2 | P3 | [data] |` where P3 is:
    /// - case 1: 00;
    /// - case 2S: Le (00 = 256);
    /// - case 3S: Lc;
    /// - case 4S: Lc, and **Le is not sent**: the card answers 61 XX and the response comes with
    ///   GET RESPONSE (`ISO7816Transport` does this).
    /// - Throws: `ISO7816Error` `extendedLengthOnT0` for the extended cases, which T=0 cannot carry
    ///   without ENVELOPE; the transport chooses chaining or refuses before sending.
    public func serializedForT0() throws(ISO7816Error) -> [UInt8] {
        switch self.case {
        case .case1:
            return [cla, ins, p1, p2, 0x00]
        case .case2Short, .case3Short:
            return serialized()
        case .case4Short:
            var out: [UInt8] = []
            out.reserveCapacity(5 + data.count)
            out.append(contentsOf: [cla, ins, p1, p2, UInt8(truncatingIfNeeded: data.count)])
            out.append(contentsOf: data)
            return out
        case .case2Extended, .case3Extended, .case4Extended:
            throw ISO7816Error(
                .extendedLengthOnT0,
                "a case \(self.case.rawValue) APDU cannot be sent on T=0; use short APDUs (chaining for Nc > 255)")
        }
    }

    /// Parses a command APDU from its bytes, ISO/IEC 7816-3 §12.1.3 / ISO/IEC 7816-4 §5.1.
    ///
    /// The case is decided by the length L of the input and byte 5 (B1):
    /// L = 4 → 1; L = 5 → 2S; B1 ≠ 00 → 3S (L = 5 + B1) or 4S (L = 6 + B1);
    /// B1 = 00 and L = 7 → 2E; B1 = 00 and L > 7 → 3E or 4E with Lc = B2 B3.
    /// - Parameter bytes: the whole command, 4…65 544 bytes.
    /// - Throws: `ISO7816Error` with code
    ///   - `truncated` (fewer than 4 bytes, or fewer than Lc announces),
    ///   - `shortLcZero` (a 6-byte command with B1 = 00: a short Lc is never 00, docs/cases.md P03),
    ///   - `extendedLcZero` (an extended Lc of 00 00),
    ///   - `lcMismatch` (Lc leaves 1 or 2 bytes that are not a valid Le form),
    ///   - `trailingBytes` (more bytes than Lc and Le account for),
    ///   - `oversize` (more than 65 544 bytes).
    public init(parsing bytes: [UInt8]) throws(ISO7816Error) {
        let count = bytes.count
        guard count >= 4 else {
            throw ISO7816Error(
                .truncated, offset: count,
                "a command APDU needs at least the 4 header bytes CLA INS P1 P2; got \(count)")
        }
        guard count <= Self.maxEncodedLength else {
            throw ISO7816Error(
                .oversize, offset: Self.maxEncodedLength,
                "a command APDU is at most 65544 bytes; got \(count)")
        }
        let cla = bytes[0], ins = bytes[1], p1 = bytes[2], p2 = bytes[3]
        if count == 4 {
            self.init(uncheckedCLA: cla, ins: ins, p1: p1, p2: p2, data: [], ne: 0, isExtended: false)
            return
        }
        let b1 = Int(bytes[4])
        if count == 5 {
            // Case 2S: the single byte is Le.
            self.init(uncheckedCLA: cla, ins: ins, p1: p1, p2: p2, data: [], ne: b1 == 0 ? 256 : b1, isExtended: false)
            return
        }
        if b1 != 0 {
            // Short Lc.
            let dataEnd = 5 + b1
            if count == dataEnd {
                self.init(uncheckedCLA: cla, ins: ins, p1: p1, p2: p2, data: Array(bytes[5..<dataEnd]), ne: 0, isExtended: false)
                return
            }
            if count == dataEnd + 1 {
                let le = Int(bytes[dataEnd])
                self.init(
                    uncheckedCLA: cla, ins: ins, p1: p1, p2: p2, data: Array(bytes[5..<dataEnd]),
                    ne: le == 0 ? 256 : le, isExtended: false)
                return
            }
            if count < dataEnd {
                throw ISO7816Error(
                    .truncated, offset: count,
                    "Lc is \(b1) but only \(count - 5) data bytes follow")
            }
            throw ISO7816Error(
                .trailingBytes, offset: dataEnd + 1,
                "Lc is \(b1), so the command ends at byte \(dataEnd + 1) (with Le); \(count - dataEnd - 1) more bytes follow")
        }
        // B1 = 00: extended length, or an invalid short Lc of 00.
        if count == 6 {
            throw ISO7816Error(
                .shortLcZero, offset: 4,
                "byte 5 is 00 in a 6-byte command: a short Lc of 00 is not allowed; a case 2S command is the header plus Le only (e.g. 00 B2 01 14 00)")
        }
        let b23 = Int(bytes[5]) << 8 | Int(bytes[6])
        if count == 7 {
            // Case 2E: 00 Le1 Le2.
            self.init(uncheckedCLA: cla, ins: ins, p1: p1, p2: p2, data: [], ne: b23 == 0 ? 65_536 : b23, isExtended: true)
            return
        }
        guard b23 != 0 else {
            throw ISO7816Error(
                .extendedLcZero, offset: 5,
                "the extended Lc is 00 00; a present Lc is never 0")
        }
        let dataEnd = 7 + b23
        if count == dataEnd {
            self.init(uncheckedCLA: cla, ins: ins, p1: p1, p2: p2, data: Array(bytes[7..<dataEnd]), ne: 0, isExtended: true)
            return
        }
        if count == dataEnd + 2 {
            let le = Int(bytes[dataEnd]) << 8 | Int(bytes[dataEnd + 1])
            self.init(
                uncheckedCLA: cla, ins: ins, p1: p1, p2: p2, data: Array(bytes[7..<dataEnd]),
                ne: le == 0 ? 65_536 : le, isExtended: true)
            return
        }
        if count < dataEnd {
            throw ISO7816Error(
                .truncated, offset: count,
                "the extended Lc is \(b23) but only \(count - 7) data bytes follow")
        }
        if count == dataEnd + 1 {
            throw ISO7816Error(
                .lcMismatch, offset: dataEnd,
                "the extended Lc is \(b23), leaving 1 byte; an extended Le is 2 bytes")
        }
        throw ISO7816Error(
            .trailingBytes, offset: dataEnd + 2,
            "the extended Lc is \(b23), so the command ends at byte \(dataEnd + 2) (with Le); \(count - dataEnd - 2) more bytes follow")
    }
}

extension CommandAPDU: CustomStringConvertible {
    /// The command as uppercase hex with spaces.
    public var description: String { serialized().hexString }
}
