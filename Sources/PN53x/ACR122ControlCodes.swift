/// SCardControl codes that reach an ACR122U, as pcsc-lite numbers them.
///
/// pcsc-lite defines `SCARD_CTL_CODE(n)` as `0x42000000 + n` (pcsc-lite src/PCSC/reader.h). Which
/// escape code a reader accepts depends on its driver (docs/acr122-pn532.md §1):
///
/// | Driver | Escape code | Gate |
/// |---|---|---|
/// | CCID (libccid) | `ccidEscape` 0x42000001 | only with `ifdDriverOptions` bit 0x01 |
/// | ACS acsccid | `acsccidEscape` 0x42000DAC | none |
public enum ACR122ControlCode {
    /// `SCARD_CTL_CODE(1)`: the CCID driver's escape command (libccid `IOCTL_CCID_ESCAPE`).
    public static let ccidEscape: UInt32 = 0x4200_0001
    /// `SCARD_CTL_CODE(3500)`: the escape command of ACS's own acsccid driver.
    public static let acsccidEscape: UInt32 = 0x4200_0DAC
    /// `CM_IOCTL_GET_FEATURE_REQUEST` = `SCARD_CTL_CODE(3400)` (PC/SC part 10 §2.2): returns the
    /// features a driver offers as TLVs, see `CCIDFeatureList`.
    public static let getFeatureRequest: UInt32 = 0x4200_0D48
    /// The escape codes to try, in order, when the feature request does not name one.
    public static let fallbackEscapeCodes: [UInt32] = [ccidEscape, acsccidEscape]

    /// `SCARD_CTL_CODE(n)` as pcsc-lite defines it: `0x42000000 + n`.
    public static func scardCtlCode(_ function: UInt32) -> UInt32 { 0x4200_0000 &+ function }
}

/// PC/SC error codes this layer recognises in errors thrown by a `CardChannel`.
public enum ACR122PCSCCode {
    /// `SCARD_E_NOT_TRANSACTED`: what libccid returns for a refused (or timed-out) escape command.
    public static let notTransacted: UInt32 = 0x8010_0016
    /// `SCARD_E_UNSUPPORTED_FEATURE` on pcsc-lite: an unknown control code.
    public static let unsupportedFeature: UInt32 = 0x8010_001F
}

/// An error thrown by a `CardChannel` that carries a PC/SC return code.
///
/// The PC/SC error type lives in another module, which this one does not depend on. The integrator
/// makes that type conform (`extension PCSCError: PCSCErrorCodeProviding { var pcscCode: UInt32 { … } }`)
/// so that this layer can recognise `SCARD_E_NOT_TRANSACTED` on an escape command (docs/cases.md P09).
/// Errors that do not conform are passed through unchanged.
public protocol PCSCErrorCodeProviding: Error {
    /// The PC/SC return code, e.g. 0x80100016 for `SCARD_E_NOT_TRANSACTED`.
    var pcscCode: UInt32 { get }
}

/// One entry of the `CM_IOCTL_GET_FEATURE_REQUEST` answer: a feature tag and its control code.
///
/// Wire layout (PC/SC part 10 §2.2): `| tag | length = 04 | control code, 4 bytes big-endian |`.
public struct CCIDFeature: Sendable, Hashable, CustomStringConvertible {
    /// `FEATURE_CCID_ESC_COMMAND`: the tag whose control code carries escape commands.
    public static let ccidEscapeCommandTag: UInt8 = 0x13

    /// The feature tag, e.g. 0x13 `FEATURE_CCID_ESC_COMMAND`.
    public var tag: UInt8
    /// The control code to pass to SCardControl for this feature.
    public var controlCode: UInt32

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

    public var description: String {
        "tag \(PN53xHex.format(tag)) → 0x\(String(controlCode, radix: 16, uppercase: true))"
    }
}

/// The TLV list a driver returns for `CM_IOCTL_GET_FEATURE_REQUEST` (PC/SC part 10 §2.2).
///
/// libccid lists `FEATURE_CCID_ESC_COMMAND` (0x13) only when escape commands are enabled (value
/// 0x42000001); acsccid always lists it (0x42000DAC) (docs/acr122-pn532.md §1). An empty answer is a
/// valid, empty list.
public struct CCIDFeatureList: Sendable, Hashable {
    public var features: [CCIDFeature]

    public init(_ features: [CCIDFeature]) { self.features = features }

    /// Parses the concatenated TLVs.
    /// - Throws: `PN53xParseError` `.truncated` when a TLV is cut short, `.lengthMismatch` when a
    ///   length byte is not 4.
    public init(parsing bytes: [UInt8]) throws(PN53xParseError) {
        var reader = PN53xByteReader(bytes)
        var features: [CCIDFeature] = []
        while !reader.isAtEnd {
            let tag = try reader.readByte("feature tag")
            let lengthOffset = reader.offset
            let length = try reader.readByte("feature length")
            guard length == 4 else {
                throw PN53xParseError(
                    .lengthMismatch, at: lengthOffset,
                    "feature \(PN53xHex.format(tag)) has length \(length); PC/SC part 10 control codes are 4 bytes")
            }
            let value = try reader.readBytes(4, "control code of feature \(PN53xHex.format(tag))")
            let code = value.reduce(UInt32(0)) { ($0 << 8) | UInt32($1) }
            features.append(CCIDFeature(tag: tag, controlCode: code))
        }
        self.features = features
    }

    public func serialized() -> [UInt8] { features.flatMap { $0.serialized() } }

    /// The control code listed for `tag`, if any.
    public func controlCode(for tag: UInt8) -> UInt32? {
        features.first { $0.tag == tag }?.controlCode
    }

    /// The escape code (`FEATURE_CCID_ESC_COMMAND`, tag 0x13), if the driver lists one.
    public var escapeCommandCode: UInt32? { controlCode(for: CCIDFeature.ccidEscapeCommandTag) }
}
