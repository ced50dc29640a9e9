/// Hex text ⇄ bytes, as the CLI, transcripts and tests write them: the package's one hex
/// implementation.
///
/// The house form is uppercase with a space between bytes: `00 A4 04 00`. (The transcript
/// grammar's strict reader and streaming writer, Transcript's `HexText`, and the simulator's
/// control protocol keep their own digit loops on purpose: a file format's parser must not accept
/// what `parse(_:)` is lenient about, and the simulator is an independent oracle.)
public enum HexBytes {
    /// Parses hex text into bytes.
    ///
    /// Accepted: `00 A4 04 00`, `00A40400`, `0x00,0xA4`, `00:A4`, upper or lower case, with spaces,
    /// tabs, newlines, colons, commas, hyphens or underscores as separators. Each group of digits
    /// between separators (after an optional `0x`/`0X` prefix) must have an even count, so `0 A4`
    /// is an error rather than a silent regrouping. Empty text gives no bytes.
    /// - Parameter text: the hex text.
    /// - Returns: the bytes, in order.
    /// - Throws: `ISO7816Error` with code `invalidHexDigit` (offset = the offending character) or
    ///   `oddHexDigitCount` (offset = the first digit of the odd group). Offsets count Unicode
    ///   scalars from 0.
    public static func parse(_ text: String) throws(ISO7816Error) -> [UInt8] {
        var result: [UInt8] = []
        result.reserveCapacity(text.utf8.count / 2)
        var position = 0
        var groupStart = -1  // offset of the first digit of the current group, -1 outside a group
        var groupDigits = 0
        var pendingHigh: UInt8 = 0
        var previous: Unicode.Scalar? = nil  // previous scalar, to spot `0x`

        func endGroup() throws(ISO7816Error) {
            if groupDigits % 2 != 0 {
                throw ISO7816Error(
                    .oddHexDigitCount, offset: groupStart,
                    "the group of hex digits starting at character \(groupStart) has \(groupDigits) digits; each byte needs two digits (write 0A, not A)")
            }
            groupStart = -1
            groupDigits = 0
        }

        for scalar in text.unicodeScalars {
            defer {
                previous = scalar
                position += 1
            }
            switch scalar {
            case " ", "\t", "\n", "\r", ":", ",", "-", "_", ";":
                try endGroup()
                continue
            case "x", "X":
                // A `0x` prefix: the group so far must be exactly the single digit 0.
                if groupDigits == 1, previous == "0", pendingHigh == 0 {
                    groupDigits = 0
                    groupStart = -1
                    continue
                }
                throw ISO7816Error(
                    .invalidHexDigit, offset: position,
                    "'\(scalar)' at character \(position) is not a hex digit; 'x' is allowed only in a 0x prefix")
            default:
                break
            }
            let nibble: UInt8
            switch scalar.value {
            case 0x30...0x39: nibble = UInt8(scalar.value - 0x30)
            case 0x41...0x46: nibble = UInt8(scalar.value - 0x41 + 10)
            case 0x61...0x66: nibble = UInt8(scalar.value - 0x61 + 10)
            default:
                throw ISO7816Error(
                    .invalidHexDigit, offset: position,
                    "'\(scalar)' at character \(position) is not a hex digit (0-9, A-F) or a separator (space, colon, comma)")
            }
            if groupDigits == 0 { groupStart = position }
            if groupDigits % 2 == 0 {
                pendingHigh = nibble
            } else {
                result.append(pendingHigh << 4 | nibble)
            }
            groupDigits += 1
        }
        try endGroup()
        return result
    }

    /// Formats bytes as uppercase hex with a space between bytes (`00 A4 04 00`); empty gives "".
    public static func format<Bytes: Sequence>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
        var utf8: [UInt8] = []
        utf8.reserveCapacity(bytes.underestimatedCount * 3)
        for byte in bytes {
            if !utf8.isEmpty { utf8.append(0x20) }
            utf8.append(hexDigit(byte >> 4))
            utf8.append(hexDigit(byte & 0x0F))
        }
        return String(decoding: utf8, as: UTF8.self)
    }

    /// One byte as two uppercase hex digits, e.g. `0A`.
    public static func format(_ byte: UInt8) -> String { format(CollectionOfOne(byte)) }

    /// Formats bytes as uppercase hex without separators (`00A40400`), the form of the CLI's JSON.
    public static func compact<Bytes: Sequence>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
        var utf8: [UInt8] = []
        utf8.reserveCapacity(bytes.underestimatedCount * 2)
        for byte in bytes {
            utf8.append(hexDigit(byte >> 4))
            utf8.append(hexDigit(byte & 0x0F))
        }
        return String(decoding: utf8, as: UTF8.self)
    }

    @inline(__always)
    static func hexDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? 0x30 + nibble : 0x41 + nibble - 10
    }
}

extension Sequence where Element == UInt8 {
    /// The bytes as uppercase hex with a space between bytes, e.g. `00 A4 04 00`.
    public var hexString: String { HexBytes.format(self) }
}
