import ISO7816

/// A failure at the ACR122U level: a status word from the reader's MCU, a refused escape command,
/// or a reply that is not what the pseudo-APDU calls for (ACR122U API v2.04; docs/acr122-pn532.md §1, §2).
///
/// PN532 errors (the status byte inside `D5 … 90 00`) are `PN532Error`, not this type.
public enum ACR122Error: Error, Sendable, Equatable, CustomStringConvertible {
    /// SW 63 00: the operation failed, or the PN532 did not answer in time.
    case operationFailed
    /// SW 6A 81: the function is not supported (e.g. Get ATS for a card that is not ISO 14443-4 A).
    case unsupported
    /// Any other status word.
    case unexpectedStatusWord(UInt16)
    /// libccid refused the escape command (`SCARD_E_NOT_TRANSACTED` on 0x42000001): docs/cases.md P09.
    case escapeCommandsNotEnabled
    /// No escape control code worked on a direct connection; `tried` lists the codes in order.
    case noEscapeCode(tried: [UInt32])
    /// A PN532 frame (`D4 cmd params`) longer than the ACR122U passes (254 bytes; Lc ≤ 255).
    case frameTooLong(length: Int)
    /// The reply does not have the layout this pseudo-APDU calls for.
    case malformedReply(PN53xParseError)
    /// The device answered the firmware-version pseudo-APDU, but not as an ACR122U.
    case notAnACR122(readerName: String, firmware: String)
    /// A T=0 unit kept answering `61 xx` to `FF C0 00 00 xx` beyond the bound.
    case tooManyGetResponses(limit: Int)
    /// The reader answered with no bytes at all, not even a status word. Some firmware answers a
    /// TgInitAsTarget this way while no terminal came (card emulation takes it as "no terminal yet").
    case emptyReply

    /// The exact text docs/cases.md P09 asks for.
    public static let escapeCommandsNotEnabledMessage =
        "escape commands are not enabled in the CCID driver: set ifdDriverOptions to 0x0001 in /etc/libccid_Info.plist and restart pcscd (`systemctl restart pcscd`)"

    public var description: String {
        switch self {
        case .operationFailed:
            return "the ACR122U answered 63 00: the operation failed or the PN532 did not answer in time"
        case .unsupported:
            return "the ACR122U answered 6A 81: function not supported for this card or reader"
        case .unexpectedStatusWord(let sw):
            return "the ACR122U answered with the unexpected status word \(HexBytes.format([UInt8(sw >> 8), UInt8(sw & 0xFF)]))"
        case .escapeCommandsNotEnabled:
            return Self.escapeCommandsNotEnabledMessage
        case .noEscapeCode(let tried):
            let codes = tried.map { "0x" + String($0, radix: 16, uppercase: true) }.joined(separator: ", ")
            return "the reader accepted none of the escape control codes (\(codes)): is this an ACR122U, and does its driver allow escape commands?"
        case .frameTooLong(let length):
            return "a PN532 frame of \(length) bytes exceeds the \(PN532HostFrame.maximumLength)-byte limit of the ACR122U (Lc at most 255, PN532 frame at most 254): split the data, e.g. with InDataExchange MI chaining"
        case .malformedReply(let error):
            return "malformed ACR122U reply: \(error)"
        case .notAnACR122(let name, let firmware):
            return "reader \"\(name)\" answered the firmware-version command with \"\(firmware)\", which is not an ACR122U"
        case .tooManyGetResponses(let limit):
            return "the reader kept answering 61 xx after \(limit) Get Response (FF C0) commands"
        case .emptyReply:
            return "the ACR122U answered with no bytes (not even a status word): run `secbridge reset`, and replug the reader if it persists"
        }
    }
}

/// A pseudo-APDU reply with a trailing status word: `| data | SW1 | SW2 |`.
///
/// Reader commands are not card APDUs: `checkedData()` maps only the ACR122U's own status words
/// (ACR122U API v2.04; docs/acr122-pn532.md §2). The firmware-version reply has no status word and must not be
/// parsed with this type.
public struct ACR122Reply: Sendable, Hashable, CustomStringConvertible {
    /// The bytes before the status word (e.g. the PN532 frame `D5 …` of a Direct Transmit).
    public var data: [UInt8]
    /// SW1-SW2, e.g. 0x9000.
    public var statusWord: UInt16

    /// A reply of `data` followed by the two bytes of `statusWord`.
    public init(data: [UInt8], statusWord: UInt16) {
        self.data = data
        self.statusWord = statusWord
    }

    /// - Throws: `PN53xParseError` `.truncated` when fewer than 2 bytes arrive.
    public init(parsing bytes: [UInt8]) throws(PN53xParseError) {
        guard bytes.count >= 2 else {
            throw PN53xParseError(.truncated, at: bytes.count, "a reply needs at least the 2 status-word bytes, got \(bytes.count)")
        }
        data = Array(bytes.dropLast(2))
        statusWord = UInt16(bytes[bytes.count - 2]) << 8 | UInt16(bytes[bytes.count - 1])
    }

    /// The reply's bytes: `| data | SW1 | SW2 |`.
    public func serialized() -> [UInt8] { data + [UInt8(statusWord >> 8), UInt8(statusWord & 0xFF)] }

    /// The data when the status word is 90 00.
    /// - Throws: `ACR122Error.operationFailed` (63 00), `.unsupported` (6A 81),
    ///   `.unexpectedStatusWord` otherwise.
    public func checkedData() throws(ACR122Error) -> [UInt8] {
        switch statusWord {
        case 0x9000: return data
        case 0x6300: throw .operationFailed
        case 0x6A81: throw .unsupported
        default: throw .unexpectedStatusWord(statusWord)
        }
    }

    public var description: String { HexBytes.format(serialized()) }
}

/// The answer to `FF 00 48 00 00`: printable ASCII, no status word, e.g. "ACR122U207" (ACR122U API
/// v2.04 §6.1; docs/acr122-pn532.md §2).
///
/// The product is the text before the trailing digits, the version the trailing digits: "ACR122U207"
/// is product "ACR122U", version 2.07. A 90 00 after the text (as a Get Response on a T=0 unit may
/// add) is removed: 0x90 is not ASCII, so it cannot be part of the string.
public struct ACR122FirmwareVersion: Sendable, Hashable, CustomStringConvertible {
    /// The whole string, e.g. "ACR122U207".
    public let text: String
    /// The text before the trailing digits, e.g. "ACR122U".
    public let product: String
    /// The first version digit, e.g. 2; nil when the string ends without digits.
    public let major: Int?
    /// The remaining version digits, e.g. 7 for "207"; nil with fewer than two digits.
    public let minor: Int?

    /// - Throws: `PN53xParseError` `.truncated` for an empty reply, `.invalidValue` for a byte that is
    ///   not printable ASCII (for example a status word such as 63 00).
    public init(parsing bytes: [UInt8]) throws(PN53xParseError) {
        var text = bytes
        if text.count >= 2, text[text.count - 2] == 0x90, text[text.count - 1] == 0x00 { text.removeLast(2) }
        guard !text.isEmpty else {
            throw PN53xParseError(.truncated, at: 0, "the firmware-version reply is empty")
        }
        for (offset, byte) in text.enumerated() where !(0x20...0x7E).contains(byte) {
            throw PN53xParseError(
                .invalidValue, at: offset,
                "the firmware-version reply must be printable ASCII, found \(HexBytes.format(byte)) in \(HexBytes.format(bytes))")
        }
        let string = String(decoding: text, as: UTF8.self)
        let digits = String(string.reversed().prefix { $0.isASCII && $0.isNumber }.reversed())
        self.text = string
        self.product = String(string.dropLast(digits.count))
        self.major = digits.first.flatMap { Int(String($0)) }
        self.minor = digits.count >= 2 ? Int(digits.dropFirst()) : nil
    }

    /// The ASCII bytes, as the reader sends them (no status word).
    public func serialized() -> [UInt8] { Array(text.utf8) }

    /// True when the string names an ACR122U, as libnfc checks (it looks for "ACR122U").
    public var isACR122U: Bool { text.uppercased().contains("ACR122U") }

    /// "2.07" for "ACR122U207"; nil without version digits.
    public var version: String? {
        guard let major else { return nil }
        guard let minor else { return "\(major)" }
        return "\(major)." + (minor < 10 ? "0\(minor)" : "\(minor)")
    }

    public var description: String { text }
}

/// The LEDs' state the LED/buzzer pseudo-APDU reports: `90 ss`, ss bit 0 red, bit 1 green
/// (ACR122U API v2.04 §6.2).
public struct ACR122LEDState: OptionSet, Sendable, Hashable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Bit 0 of the LED reply `90 ss`: the red LED is on (ACR122U API v2.04; docs/acr122-pn532.md §2).
    public static let red = ACR122LEDState(rawValue: 0x01)
    /// Bit 1 of the LED reply `90 ss`: the green LED is on.
    public static let green = ACR122LEDState(rawValue: 0x02)

    /// Parses `90 ss`.
    /// - Throws: `ACR122Error.operationFailed` for 63 00, `.malformedReply` for anything else that
    ///   is not two bytes starting 90.
    public init(parsingReply bytes: [UInt8]) throws(ACR122Error) {
        self.init(rawValue: try Self.statusByte(in: bytes, command: "LED/buzzer"))
    }

    /// The byte after 90 in a `90 xx` reply.
    static func statusByte(in bytes: [UInt8], command: String) throws(ACR122Error) -> UInt8 {
        if bytes == [0x63, 0x00] { throw .operationFailed }
        if bytes == [0x6A, 0x81] { throw .unsupported }
        guard bytes.count == 2 else {
            throw .malformedReply(PN53xParseError(
                bytes.count < 2 ? .truncated : .trailingBytes, at: min(bytes.count, 2),
                "the \(command) reply must be 2 bytes (90 xx), got \(HexBytes.format(bytes))"))
        }
        guard bytes[0] == 0x90 else {
            throw .malformedReply(PN53xParseError(
                .unexpectedByte, at: 0, "the \(command) reply must start with 90, got \(HexBytes.format(bytes))"))
        }
        return bytes[1]
    }
}

extension ACR122PICCOperatingParameter {
    /// Parses the reply to get/set PICC operating parameter: `90 pp`, or `pp` alone, which some units
    /// send (U) (ACR122U API v2.04 §6.4; docs/acr122-pn532.md §2).
    /// - Throws: `ACR122Error.operationFailed` for 63 00, `.malformedReply` otherwise.
    public init(parsingReply bytes: [UInt8]) throws(ACR122Error) {
        if bytes.count == 1 {
            self.init(rawValue: bytes[0])
        } else {
            self.init(rawValue: try ACR122LEDState.statusByte(in: bytes, command: "PICC operating parameter"))
        }
    }
}
