import ISO7816
import PCSCCore

/// A malformed ACR122U pseudo-APDU, ACR122U reply or PN532 frame.
///
/// The code is open (unknown codes still fit); equality compares the code only, so tests and callers
/// can match on the kind of failure without depending on the wording of the reason.
public struct PN53xParseError: CodedError {
    /// The kind of parse failure. Open: new codes can be added without breaking callers.
    public struct Code: ErrorCode {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The input ended before a field the layout requires.
        public static let truncated = Code(rawValue: "truncated")
        /// Bytes follow the end of the structure.
        public static let trailingBytes = Code(rawValue: "trailingBytes")
        /// A fixed byte (CLA FF, TFI D4/D5, a constant P1/P2) has the wrong value.
        public static let unexpectedByte = Code(rawValue: "unexpectedByte")
        /// A length field (Lc, a TLV length, a PN532 NbTg) disagrees with the data.
        public static let lengthMismatch = Code(rawValue: "lengthMismatch")
        /// A field has a value outside its allowed range.
        public static let invalidValue = Code(rawValue: "invalidValue")
        /// The pseudo-APDU is well formed but not one this library knows.
        public static let unknownCommand = Code(rawValue: "unknownCommand")
    }

    /// What went wrong.
    public let code: Code
    /// The offset, in bytes from the start of the parsed input, of the offending byte.
    public let offset: Int
    /// A sentence naming what was wrong and, where it helps, what to do.
    public let reason: String

    /// An error with its code, the offset of the offending byte, and a reason that says what was wrong.
    public init(_ code: Code, at offset: Int, _ reason: String) {
        self.code = code
        self.offset = offset
        self.reason = reason
    }

    public var description: String { "\(code) at offset \(offset): \(reason)" }
}

/// A forward-only reader over a byte array for the parsers of this module.
///
/// `read*` consumes bytes; every failure is a `PN53xParseError` naming the field and its offset.
struct PN53xByteReader {
    let bytes: [UInt8]
    private(set) var offset = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var remaining: Int { bytes.count - offset }
    var isAtEnd: Bool { offset >= bytes.count }

    mutating func readByte(_ field: String) throws(PN53xParseError) -> UInt8 {
        guard offset < bytes.count else {
            throw PN53xParseError(.truncated, at: offset, "\(field) is missing: the input ends after \(bytes.count) bytes")
        }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func readBytes(_ count: Int, _ field: String) throws(PN53xParseError) -> [UInt8] {
        guard count <= remaining else {
            throw PN53xParseError(
                .truncated, at: offset,
                "\(field) needs \(count) bytes but only \(remaining) remain")
        }
        defer { offset += count }
        return Array(bytes[offset..<offset + count])
    }

    mutating func readRest() -> [UInt8] {
        defer { offset = bytes.count }
        return Array(bytes[offset...])
    }

    mutating func expectByte(_ expected: UInt8, _ field: String) throws(PN53xParseError) {
        let at = offset
        let byte = try readByte(field)
        guard byte == expected else {
            throw PN53xParseError(
                .unexpectedByte, at: at,
                "\(field) must be \(HexBytes.format(expected)), found \(HexBytes.format(byte))")
        }
    }

    func expectEnd(_ structure: String) throws(PN53xParseError) {
        guard isAtEnd else {
            throw PN53xParseError(
                .trailingBytes, at: offset,
                "\(remaining) unexpected bytes after the \(structure): \(HexBytes.format(bytes[offset...]))")
        }
    }
}
