/// An error from this module's codecs and transport: an open code, the offending offset and a reason.
///
/// Every parser in this module (hex text, command and response APDUs, ATRs, historical bytes,
/// BER-TLV, AIDs) and the card-APDU transport throw this one type. Two errors are equal when their
/// codes are equal; the offset and the reason are for people.
///
/// `offset` counts bytes from the start of the input given to the parser (Unicode scalars for hex
/// text); it is `nil` when the error is not about a position (a value out of range, a transport
/// decision).
public struct ISO7816Error: CodedError {
    /// What went wrong. Open: codes not listed here still fit.
    public struct Code: ErrorCode {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        // Hex text.
        /// A character that is neither a hex digit nor a separator.
        public static let invalidHexDigit = Code(rawValue: "invalidHexDigit")
        /// A group of hex digits with an odd count.
        public static let oddHexDigitCount = Code(rawValue: "oddHexDigitCount")

        // Shared by the byte parsers.
        /// The input ends before the structure it announces.
        public static let truncated = Code(rawValue: "truncated")
        /// Bytes follow the end of a complete structure.
        public static let trailingBytes = Code(rawValue: "trailingBytes")
        /// A value outside its allowed range (a field of a value built in code).
        public static let valueOutOfRange = Code(rawValue: "valueOutOfRange")

        // Command APDU.
        /// A short Lc of 00, which ISO/IEC 7816-4 §5.1 does not allow (docs/cases.md P03).
        public static let shortLcZero = Code(rawValue: "shortLcZero")
        /// An extended Lc of 00 00.
        public static let extendedLcZero = Code(rawValue: "extendedLcZero")
        /// Lc does not match the number of bytes that follow.
        public static let lcMismatch = Code(rawValue: "lcMismatch")
        /// More than 65 544 bytes: longer than any command APDU.
        public static let oversize = Code(rawValue: "oversize")

        // ATR and historical bytes.
        /// TS is neither 3B (direct convention) nor 3F (inverse convention).
        public static let invalidTS = Code(rawValue: "invalidTS")
        /// The check byte TCK does not make the XOR of T0 … TCK zero.
        public static let checksumMismatch = Code(rawValue: "checksumMismatch")
        /// A historical-bytes structure that does not follow ISO/IEC 7816-4 §8.1.1.
        public static let invalidHistoricalBytes = Code(rawValue: "invalidHistoricalBytes")

        // BER-TLV.
        /// A tag that ISO/IEC 7816-4 §5.2.2 does not allow.
        public static let invalidTag = Code(rawValue: "invalidTag")
        /// A length field ISO/IEC 7816-4 §5.2.2 does not allow (indefinite 80, or more than 4 length bytes).
        public static let invalidLength = Code(rawValue: "invalidLength")
        /// Constructed objects nested deeper than the parser's bound.
        public static let nestingTooDeep = Code(rawValue: "nestingTooDeep")

        // Transport.
        /// The response has fewer than 2 bytes, so no status word.
        public static let responseTooShort = Code(rawValue: "responseTooShort")
        /// The command cannot be sent with the card's and reader's capabilities.
        public static let commandTooLong = Code(rawValue: "commandTooLong")
        /// An extended-length APDU asked for on a T=0 channel.
        public static let extendedLengthOnT0 = Code(rawValue: "extendedLengthOnT0")
        /// The card kept answering 61 XX past the transport's GET RESPONSE cap.
        public static let getResponseLimit = Code(rawValue: "getResponseLimit")
        /// The card answered with no bytes at all (a "success" of length 0): a mute card.
        public static let noResponse = Code(rawValue: "noResponse")
    }

    /// What went wrong.
    public let code: Code
    /// Where in the input, when the error is about a position.
    public let offset: Int?
    /// What was wrong and what to do, in words.
    public let reason: String

    /// An error with its code, the offset of the offending byte in the input when there is one, and a
    /// reason that says what was wrong and what to do.
    public init(_ code: Code, offset: Int? = nil, _ reason: String) {
        self.code = code
        self.offset = offset
        self.reason = reason
    }

    public var description: String {
        if let offset { return "\(code) at offset \(offset): \(reason)" }
        return "\(code): \(reason)"
    }
}
