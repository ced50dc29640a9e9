import ISO7816

/// ATQA (SENS_RES), the 2-byte answer of an ISO/IEC 14443-3 Type A card to REQA/WUPA.
///
/// One value, converted at each codec, because the byte order differs (docs/acr122-pn532.md §4):
/// InListPassiveTarget reports it most significant byte first (`D5 4B 01 01 00 04 08 04 …` is ATQA
/// 0x0004), TgInitAsTarget takes it least significant byte first (ATQA 0x0004 is sent `04 00`). On
/// air the low byte goes first (ISO/IEC 14443-3 §6.4.2). MIFARE Classic 1K: 0x0004; DESFire: 0x0344.
public struct ATQA: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    /// From two bytes, most significant first (InListPassiveTarget order).
    public init(mostSignificantFirst bytes: (UInt8, UInt8)) {
        rawValue = UInt16(bytes.0) << 8 | UInt16(bytes.1)
    }

    /// From two bytes, least significant first (TgInitAsTarget and on-air order).
    public init(leastSignificantFirst bytes: (UInt8, UInt8)) {
        rawValue = UInt16(bytes.1) << 8 | UInt16(bytes.0)
    }

    /// Most significant byte first, as InListPassiveTarget reports it.
    public var mostSignificantFirst: [UInt8] { [UInt8(rawValue >> 8), UInt8(rawValue & 0xFF)] }

    /// Least significant byte first, as TgInitAsTarget takes it.
    public var leastSignificantFirst: [UInt8] { [UInt8(rawValue & 0xFF), UInt8(rawValue >> 8)] }

    /// Bits 8–7 of the low byte: UID size 0 single (4 bytes), 1 double (7), 2 triple (10).
    public var uidSizeCode: UInt8 { UInt8((rawValue >> 6) & 0x03) }

    /// Most significant byte first, as libnfc prints it, e.g. "00 04".
    public var description: String { HexBytes.format(mostSignificantFirst) }
}
