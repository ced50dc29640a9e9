/// One PC/SC part 10 feature: its tag and the control code that invokes it.
///
/// Wire layout of one entry of the CM_IOCTL_GET_FEATURE_REQUEST answer (PC/SC part 10 §2.2):
///
///     | tag (1) | length (1) = 04 | control code (4, big-endian) |
public struct PCSCFeature: Sendable, Hashable, CustomStringConvertible {
    /// The feature tag, e.g. 0x13 FEATURE_CCID_ESC_COMMAND.
    public var tag: UInt8
    /// The control code to pass to SCardControl for this feature.
    public var controlCode: UInt32

    /// FEATURE_CCID_ESC_COMMAND (0x13): the code for the reader's escape command. libccid lists it
    /// only when escape commands are enabled in its Info.plist (`ifdDriverOptions` bit 0x01); ACS's
    /// acsccid always lists it (docs/acr122-pn532.md §1).
    public static let ccidEscapeCommandTag: UInt8 = 0x13
    /// FEATURE_IFD_PIN_PROPERTIES (0x0A).
    public static let ifdPinPropertiesTag: UInt8 = 0x0A
    /// FEATURE_GET_TLV_PROPERTIES (0x12).
    public static let getTLVPropertiesTag: UInt8 = 0x12

    /// A feature from its tag and control code (e.g. 0x13, 0x42000001).
    public init(tag: UInt8, controlCode: UInt32) {
        self.tag = tag
        self.controlCode = controlCode
    }

    /// The six wire bytes.
    public func serialized() -> [UInt8] {
        [tag, 0x04,
         UInt8(truncatingIfNeeded: controlCode >> 24), UInt8(truncatingIfNeeded: controlCode >> 16),
         UInt8(truncatingIfNeeded: controlCode >> 8), UInt8(truncatingIfNeeded: controlCode)]
    }

    /// "tag 13 → 0x42000001".
    public var description: String {
        "tag \(hex8(tag)) → 0x\(hex32(controlCode))"
    }
}

/// The TLV list a driver returns for CM_IOCTL_GET_FEATURE_REQUEST (PC/SC part 10 §2.2): zero or
/// more ``PCSCFeature`` entries, concatenated. An empty answer is a valid, empty list.
///
/// This is the one codec of the list; the PC/SC clients, the ACR122U layer and the simulator all
/// use it.
public struct PCSCFeatureList: Sendable, Hashable {
    /// The entries, in the driver's order.
    public var features: [PCSCFeature]

    /// A list of `features`, e.g. to build a driver's answer (``serialized()``).
    public init(_ features: [PCSCFeature]) { self.features = features }

    /// Parses the concatenated TLVs; the whole input must parse.
    /// - Throws: ``FeatureListError`` `.truncated` when an entry is cut short (the offset of the
    ///   entry's first missing byte), `.lengthMismatch` when a length byte is not 4 (its offset).
    public init(parsing bytes: [UInt8]) throws(FeatureListError) {
        var features: [PCSCFeature] = []
        var offset = 0
        while offset < bytes.count {
            let tag = bytes[offset]
            guard offset + 1 < bytes.count else {
                throw FeatureListError(.truncated, at: offset + 1, "feature \(hex8(tag)) has no length byte")
            }
            let length = Int(bytes[offset + 1])
            guard length == 4 else {
                throw FeatureListError(
                    .lengthMismatch, at: offset + 1,
                    "feature \(hex8(tag)) has length \(length); PC/SC part 10 control codes are 4 bytes")
            }
            guard offset + 6 <= bytes.count else {
                throw FeatureListError(
                    .truncated, at: offset + 2,
                    "the 4-byte control code of feature \(hex8(tag)) has \(bytes.count - offset - 2) bytes")
            }
            let code = bytes[offset + 2..<offset + 6].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            features.append(PCSCFeature(tag: tag, controlCode: code))
            offset += 6
        }
        self.features = features
    }

    /// The wire bytes: every entry's six bytes, in order.
    public func serialized() -> [UInt8] { features.flatMap { $0.serialized() } }

    /// The control code listed for `tag`, if any.
    public func controlCode(for tag: UInt8) -> UInt32? {
        features.first { $0.tag == tag }?.controlCode
    }

    /// The escape code (FEATURE_CCID_ESC_COMMAND, tag 0x13), if the driver lists one.
    public var escapeCommandCode: UInt32? { controlCode(for: PCSCFeature.ccidEscapeCommandTag) }
}

/// A malformed CM_IOCTL_GET_FEATURE_REQUEST answer: an open code, the offending offset and a reason.
/// Equality compares the code and the offset, not the reason's wording.
public struct FeatureListError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of fault, an open set of values.
    public struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }
        /// An entry ends before its length byte or its 4-byte control code.
        public static let truncated = Code(rawValue: "truncated")
        /// A length byte other than 4.
        public static let lengthMismatch = Code(rawValue: "length-mismatch")
    }

    /// What kind of fault.
    public var code: Code
    /// The offset of the offending byte in the answer.
    public var offset: Int
    /// What is wrong, naming the feature tag and the byte counts.
    public var reason: String

    /// An error of `code` at byte `offset`.
    public init(_ code: Code, at offset: Int, _ reason: String) {
        self.code = code
        self.offset = offset
        self.reason = reason
    }

    /// Equal when code and offset are (the reason's wording is for people).
    public static func == (a: Self, b: Self) -> Bool { a.code == b.code && a.offset == b.offset }
    /// Hashes code and offset, consistent with `==`.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(code)
        hasher.combine(offset)
    }

    /// "malformed feature list at byte 1: feature 19 has length 2; …".
    public var description: String { "malformed feature list at byte \(offset): \(reason)" }
}
