/// The status word SW1-SW2 that ends every response APDU (ISO/IEC 7816-4 §5.1.3, §5.6).
///
/// A status word is a value, not an error: 6A 82 is a perfectly good answer to a SELECT of an
/// absent application. Use `ResponseAPDU.checked()` where anything but success should throw.
public struct StatusWord: Sendable, Hashable, CustomStringConvertible {
    /// SW1, the first status byte.
    public let sw1: UInt8
    /// SW2, the second status byte.
    public let sw2: UInt8

    /// The status word `sw1` `sw2`, e.g. `StatusWord(sw1: 0x6A, sw2: 0x82)`: file or application not
    /// found (ISO/IEC 7816-4 §5.6).
    public init(sw1: UInt8, sw2: UInt8) {
        self.sw1 = sw1
        self.sw2 = sw2
    }

    /// Builds a status word from its 16-bit value, SW1 in the high byte (0x9000 → 90 00).
    public init(_ value: UInt16) {
        self.sw1 = UInt8(truncatingIfNeeded: value >> 8)
        self.sw2 = UInt8(truncatingIfNeeded: value)
    }

    /// SW1-SW2 as one 16-bit value, SW1 in the high byte.
    public var value: UInt16 { UInt16(sw1) << 8 | UInt16(sw2) }

    /// The two bytes `| SW1 | SW2 |`.
    public var bytes: [UInt8] { [sw1, sw2] }

    /// 90 00: normal processing, no further qualification.
    public static let success = StatusWord(0x9000)
    /// 6A 82: file or application not found.
    public static let fileNotFound = StatusWord(0x6A82)
    /// 6D 00: instruction code not supported or invalid.
    public static let insNotSupported = StatusWord(0x6D00)
    /// 6E 00: class not supported.
    public static let claNotSupported = StatusWord(0x6E00)
    /// 67 00: wrong length.
    public static let wrongLength = StatusWord(0x6700)
    /// 69 82: security status not satisfied.
    public static let securityStatusNotSatisfied = StatusWord(0x6982)
    /// 69 85: conditions of use not satisfied.
    public static let conditionsNotSatisfied = StatusWord(0x6985)

    /// Whether this is 90 00.
    public var isSuccess: Bool { sw1 == 0x90 && sw2 == 0x00 }

    /// For 61 XX: the number of bytes still available (XX = 00 means 256 or more); nil otherwise.
    public var bytesAvailable: Int? { sw1 == 0x61 ? (sw2 == 0 ? 256 : Int(sw2)) : nil }

    /// For 6C XX: the exact Ne the card wants (XX = 00 means 256); nil otherwise.
    public var correctLe: Int? { sw1 == 0x6C ? (sw2 == 0 ? 256 : Int(sw2)) : nil }

    /// The ISO/IEC 7816-4 §5.6 group of this status word, by SW1.
    public var category: Category {
        switch sw1 {
        case 0x90, 0x61: .normal
        case 0x62, 0x63: .warning
        case 0x64, 0x65, 0x66: .executionError
        case 0x67...0x6F: .checkingError
        case 0x91...0x9F: .proprietary
        default: .invalid
        }
    }

    /// The groups of status words, ISO/IEC 7816-4 §5.6 (table 5).
    public enum Category: String, Sendable, Hashable {
        /// 90 00 and 61 XX.
        case normal = "normal processing"
        /// 62 XX and 63 XX.
        case warning = "warning processing"
        /// 64 XX, 65 XX and 66 XX.
        case executionError = "execution error"
        /// 67 XX to 6F XX.
        case checkingError = "checking error"
        /// 91 XX to 9F XX: left to the application (e.g. DESFire native status codes).
        case proprietary = "proprietary"
        /// Any other SW1: not a status word ISO/IEC 7816-4 allows.
        case invalid = "not a valid SW1"
    }

    /// The meaning in words, from `StatusWord.meanings`, e.g. "wrong length (67 00)".
    ///
    /// Patterns with a variable part fill it in: 61 17 reads "23 more response bytes available …".
    /// A status word not in the table gives its category.
    public var meaning: String {
        guard let entry = StatusWord.meaningEntry(for: self) else {
            return "\(category.rawValue), no meaning in ISO/IEC 7816-4 for this value"
        }
        switch entry.variable {
        case .none:
            return entry.meaning
        case .count256:
            let n = sw2 == 0 ? 256 : Int(sw2)
            return entry.meaning.replacing("{n}", with: String(n))
        case .lowNibble:
            return entry.meaning.replacing("{n}", with: String(sw2 & 0x0F))
        }
    }

    public var description: String { "\(bytes.hexString) (\(meaning))" }

    /// One row of the status word table: a value and a mask; a status word matches when
    /// `sw.value & mask == value`.
    public struct Meaning: Sendable {
        /// The pattern, as it reads in the standard: "61 XX", "63 CX", "6A 82".
        public let pattern: String
        /// The pattern's fixed bits.
        public let value: UInt16
        /// Which bits of the status word are fixed.
        public let mask: UInt16
        /// What the status word means; `{n}` marks the variable part.
        public let meaning: String
        let variable: Variable

        enum Variable: Sendable { case none, count256, lowNibble }

        init(_ pattern: String, _ value: UInt16, _ meaning: String) {
            self.pattern = pattern
            self.value = value
            self.mask = 0xFFFF
            self.meaning = meaning
            self.variable = .none
        }

        init(_ pattern: String, _ value: UInt16, mask: UInt16, _ meaning: String, _ variable: Variable) {
            self.pattern = pattern
            self.value = value
            self.mask = mask
            self.meaning = meaning
            self.variable = variable
        }
    }

    /// The status words of ISO/IEC 7816-4 §5.6 (tables 5 and 6), in our own words. Checked in
    /// order; exact values come before the masks that would also match them.
    public static let meanings: [Meaning] = [
        Meaning("90 00", 0x9000, "normal processing, no further qualification"),
        Meaning("61 XX", 0x6100, mask: 0xFF00, "{n} more response bytes available; fetch them with GET RESPONSE (00 means 256 or more)", .count256),
        Meaning("62 00", 0x6200, "warning, non-volatile memory unchanged: no information given"),
        Meaning("62 81", 0x6281, "warning: part of the returned data may be corrupted"),
        Meaning("62 82", 0x6282, "warning: end of file or record reached before Ne bytes were read"),
        Meaning("62 83", 0x6283, "warning: the selected file is deactivated"),
        Meaning("62 84", 0x6284, "warning: the file control information is not formatted as ISO/IEC 7816-4 §7.4 describes"),
        Meaning("62 85", 0x6285, "warning: the selected file is in termination state"),
        Meaning("62 86", 0x6286, "warning: no input data available from a sensor on the card"),
        Meaning("63 00", 0x6300, "warning, non-volatile memory changed: no information given"),
        Meaning("63 81", 0x6381, "warning: the file was filled up by the last write"),
        Meaning("63 CX", 0x63C0, mask: 0xFFF0, "warning: counter value {n} (often the verification tries left)", .lowNibble),
        Meaning("64 00", 0x6400, "execution error, non-volatile memory unchanged: no information given"),
        Meaning("64 01", 0x6401, "execution error: immediate response required by the card"),
        Meaning("65 00", 0x6500, "execution error, non-volatile memory changed: no information given"),
        Meaning("65 81", 0x6581, "execution error: memory failure"),
        Meaning("66 00", 0x6600, "execution error: security-related issue"),
        Meaning("67 00", 0x6700, "wrong length (Lc or Le not accepted)"),
        Meaning("68 00", 0x6800, "functions in CLA not supported: no information given"),
        Meaning("68 81", 0x6881, "logical channel not supported"),
        Meaning("68 82", 0x6882, "secure messaging not supported"),
        Meaning("68 83", 0x6883, "the last command of the chain was expected"),
        Meaning("68 84", 0x6884, "command chaining not supported"),
        Meaning("69 00", 0x6900, "command not allowed: no information given"),
        Meaning("69 81", 0x6981, "command incompatible with the file structure"),
        Meaning("69 82", 0x6982, "security status not satisfied"),
        Meaning("69 83", 0x6983, "authentication method blocked"),
        Meaning("69 84", 0x6984, "reference data not usable"),
        Meaning("69 85", 0x6985, "conditions of use not satisfied"),
        Meaning("69 86", 0x6986, "command not allowed: no current EF"),
        Meaning("69 87", 0x6987, "expected secure messaging data objects missing"),
        Meaning("69 88", 0x6988, "incorrect secure messaging data objects"),
        Meaning("6A 00", 0x6A00, "wrong parameters P1-P2: no information given"),
        Meaning("6A 80", 0x6A80, "incorrect parameters in the command data field"),
        Meaning("6A 81", 0x6A81, "function not supported"),
        Meaning("6A 82", 0x6A82, "file or application not found"),
        Meaning("6A 83", 0x6A83, "record not found"),
        Meaning("6A 84", 0x6A84, "not enough memory space in the file"),
        Meaning("6A 85", 0x6A85, "Nc inconsistent with the TLV structure"),
        Meaning("6A 86", 0x6A86, "incorrect parameters P1-P2"),
        Meaning("6A 87", 0x6A87, "Nc inconsistent with parameters P1-P2"),
        Meaning("6A 88", 0x6A88, "referenced data or reference data not found"),
        Meaning("6A 89", 0x6A89, "file already exists"),
        Meaning("6A 8A", 0x6A8A, "DF name already exists"),
        Meaning("6B 00", 0x6B00, "wrong parameters P1-P2 (e.g. an offset outside the EF)"),
        Meaning("6C XX", 0x6C00, mask: 0xFF00, "wrong Le: the card has exactly {n} bytes; send again with Le = that (00 means 256)", .count256),
        Meaning("6D 00", 0x6D00, "instruction code not supported or invalid"),
        Meaning("6E 00", 0x6E00, "class not supported"),
        Meaning("6F 00", 0x6F00, "no precise diagnosis"),
    ]

    static func meaningEntry(for sw: StatusWord) -> Meaning? {
        let v = sw.value
        for entry in meanings where v & entry.mask == entry.value {
            return entry
        }
        return nil
    }
}
