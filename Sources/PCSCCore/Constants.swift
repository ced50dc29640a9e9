/// PC/SC constants, declared once here in pure Swift so that every layer can use them without
/// linking pcsc-lite.
///
/// Some of them pcsc-lite defines with function-like or expression macros, which the Clang importer
/// skips. `PCSCTests/ConstantsTests` checks every value against the header's own definition
/// (directly, or through the accessors in the C shim).
public enum PCSCConstants {
    /// `SCARD_CTL_CODE(code)`: the control code pcsc-lite gives a reader-specific IOCTL, 0x42000000 + code
    /// (pcsc-lite `reader.h`). Windows numbers the same IOCTLs differently (0x00310000 + code × 4);
    /// this is pcsc-lite's numbering, the one SCardControl on Linux expects.
    public static func controlCode(_ code: UInt32) -> UInt32 { 0x4200_0000 &+ code }

    /// `CM_IOCTL_GET_FEATURE_REQUEST` = SCARD_CTL_CODE(3400) = 0x42000D48: asks a reader for its
    /// PC/SC part 10 feature TLVs (PC/SC part 10 §2.2).
    public static let getFeatureRequest: UInt32 = 0x4200_0D48

    /// `MAX_BUFFER_SIZE`: the largest short APDU exchange pcsc-lite handles, 264 bytes.
    public static let maxBufferSize = 264

    /// `MAX_BUFFER_SIZE_EXTENDED` = 4 + 3 + 65536 + 3 + 2 = 65548 bytes: the largest buffer pcsc-lite
    /// transfers (extended APDU header, Lc, data, Le and SW).
    public static let maxBufferSizeExtended = 65548

    /// `SCARD_AUTOALLOCATE` = (DWORD)(-1).
    public static let autoAllocate = UInt.max
}

/// A reader attribute for SCardGetAttrib: `SCARD_ATTR_VALUE(class, tag)` = class << 16 | tag.
///
/// Source: pcsc-lite `reader.h`; PC/SC part 3 §3.1.
public struct PCSCAttribute: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// `SCARD_ATTR_VENDOR_NAME` (0x00010100): the reader vendor's name, ASCII.
    public static let vendorName = PCSCAttribute(rawValue: 0x0001_0100)
    /// `SCARD_ATTR_VENDOR_IFD_VERSION` (0x00010102): the driver's version, a 4-byte DWORD.
    public static let vendorIFDVersion = PCSCAttribute(rawValue: 0x0001_0102)
    /// `SCARD_ATTR_ATR_STRING` (0x00090303): the ATR of the card in the reader.
    public static let atrString = PCSCAttribute(rawValue: 0x0009_0303)
    /// `SCARD_ATTR_MAXINPUT` (0x0007A007): the largest command the reader accepts, in bytes (libccid:
    /// the CCID descriptor's dwMaxCCIDMessageLength − 10; 261 bytes means short APDUs only).
    public static let maxInput = PCSCAttribute(rawValue: 0x0007_A007)
    /// 0x00075343, in PC/SC part 3's vendor-defined class 7 ("SC"): the path of the control
    /// socket of a secbridge simulated ACR122U (Sources/SimulatedACR122IFD), NUL-terminated. Only
    /// the simulator answers it; a real reader's driver refuses the tag (IFD_ERROR_TAG).
    public static let simulatorControlSocket = PCSCAttribute(rawValue: 0x0007_5343)
    /// `SCARD_ATTR_DEVICE_FRIENDLY_NAME` (0x7FFF0003): the reader's name, ASCII.
    public static let deviceFriendlyName = PCSCAttribute(rawValue: 0x7FFF_0003)

    public var description: String {
        switch self {
        case .vendorName: "SCARD_ATTR_VENDOR_NAME"
        case .vendorIFDVersion: "SCARD_ATTR_VENDOR_IFD_VERSION"
        case .atrString: "SCARD_ATTR_ATR_STRING"
        case .maxInput: "SCARD_ATTR_MAXINPUT"
        case .deviceFriendlyName: "SCARD_ATTR_DEVICE_FRIENDLY_NAME"
        default: "SCARD_ATTR 0x" + hex32(rawValue)
        }
    }
}

/// How a connection shares the reader (SCARD_SHARE_*).
public enum ShareMode: UInt, Sendable, CaseIterable {
    /// SCARD_SHARE_EXCLUSIVE: no other connection to this card.
    case exclusive = 1
    /// SCARD_SHARE_SHARED: other programs may use the card between transactions.
    case shared = 2
    /// SCARD_SHARE_DIRECT: a connection to the reader itself, with or without a card; only
    /// SCardControl reaches the device, and the active protocol is 0.
    case direct = 3
}

/// Protocols a connection accepts, or the one it uses (SCARD_PROTOCOL_*).
public struct ProtocolSet: OptionSet, Sendable, Hashable {
    public let rawValue: UInt
    public init(rawValue: UInt) { self.rawValue = rawValue }
    /// SCARD_PROTOCOL_T0 (1).
    public static let t0 = ProtocolSet(rawValue: 1)
    /// SCARD_PROTOCOL_T1 (2).
    public static let t1 = ProtocolSet(rawValue: 2)
    /// SCARD_PROTOCOL_RAW (4).
    public static let raw = ProtocolSet(rawValue: 4)
    /// SCARD_PROTOCOL_ANY = T0 | T1.
    public static let any: ProtocolSet = [.t0, .t1]
    /// SCARD_PROTOCOL_UNDEFINED (0): what a DIRECT connection with no card reports.
    public static let undefined: ProtocolSet = []

    /// An active protocol in the terms of `CardChannel`: T=1, T=0, RAW, or undefined (0).
    public var transmissionProtocol: TransmissionProtocol {
        if contains(.t1) { return .t1 }
        if contains(.t0) { return .t0 }
        if contains(.raw) { return .raw }
        return .undefined
    }
}

/// What happens to the card when a connection ends or reconnects (SCARD_*_CARD).
public enum Disposition: UInt, Sendable, CaseIterable {
    /// SCARD_LEAVE_CARD: leave the card as it is.
    case leave = 0
    /// SCARD_RESET_CARD: warm reset.
    case reset = 1
    /// SCARD_UNPOWER_CARD: power the card down.
    case unpower = 2
    /// SCARD_EJECT_CARD: eject (no effect on most readers).
    case eject = 3
}

/// The card state that SCardStatus reports (SCARD_ABSENT … SCARD_SPECIFIC), a bit field in pcsc-lite.
public struct CardState: OptionSet, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: UInt
    public init(rawValue: UInt) { self.rawValue = rawValue }
    /// SCARD_UNKNOWN (0x01): the reader does not know the card's state (pcsc-lite `pcsclite.h`).
    public static let unknown = CardState(rawValue: 0x01)
    /// SCARD_ABSENT (0x02): there is no card in the reader.
    public static let absent = CardState(rawValue: 0x02)
    /// SCARD_PRESENT (0x04): a card is in the reader but not in position for use.
    public static let present = CardState(rawValue: 0x04)
    /// SCARD_SWALLOWED (0x08): the card is in position but not powered.
    public static let swallowed = CardState(rawValue: 0x08)
    /// SCARD_POWERED (0x10): the card is powered, but the reader knows nothing of its mode.
    public static let powered = CardState(rawValue: 0x10)
    /// SCARD_NEGOTIABLE (0x20): the card was reset and waits for protocol (PTS) negotiation.
    public static let negotiable = CardState(rawValue: 0x20)
    /// SCARD_SPECIFIC (0x40): the card was reset and a protocol is established; the usual state of a
    /// card one is connected to.
    public static let specific = CardState(rawValue: 0x40)

    static let names: [(CardState, String)] = [
        (.unknown, "unknown"), (.absent, "absent"), (.present, "present"), (.swallowed, "swallowed"),
        (.powered, "powered"), (.negotiable, "negotiable"), (.specific, "specific"),
    ]
    public var description: String {
        let parts = Self.names.filter { contains($0.0) }.map(\.1)
        return parts.isEmpty ? "none" : parts.joined(separator: ",")
    }
}
