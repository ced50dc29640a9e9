import ISO7816

/// The capability container of an NFC Forum Type 4 Tag, mapping 1.0 or 2.0, file E103
/// (docs/iso14443-t4t-ndef.md §4), 15 bytes:
///
/// `| CCLEN (2) | version | MLe (2) | MLc (2) | 04 | 06 | file id (2) | max NDEF size (2) | read | write |`
///
/// By default it refuses what Android 12 and later refuse (``Rules/android``): CCLEN < 000F,
/// MLe < 000F, MLc < 0001, an NDEF file id of E102, E103, 0000, 3F00, 3FFF or FFFF, a maximum size
/// outside 0005…7FFF (docs/terminal-models.md §1).
public struct Type4CapabilityContainer: Sendable, Hashable {
    /// Which values a parsed container may hold (docs/terminal-models.md §1).
    public enum Rules: String, Sendable, Hashable {
        /// Android 12 to 15 (AOSP android-15.0.0_r23 `rw_t4t_validate_cc_file`): maximum NDEF size
        /// 0005…7FFF for mapping 2.0.
        case android
        /// Android 8 to 11 (android-11.0.0_r1): the same, but a maximum size up to FFFE, as
        /// libnfc's nfc-emulate-forum-tag4 declares.
        case lenient
        /// Only the layout (15 bytes, CCLEN 000F, TLV `04 06`): for a credential that models a tag
        /// readers refuse.
        case layoutOnly
    }

    /// Mapping version: 20 (2.0) or 10 (1.0).
    public var mappingVersion: UInt8
    /// The largest R-APDU data field READ BINARY may ask for.
    public var mle: UInt16
    /// The largest C-APDU data field UPDATE BINARY may carry.
    public var mlc: UInt16
    /// The NDEF file's identifier, e.g. E104 (the file the NDEF File Control TLV names).
    public var ndefFileID: UInt16
    /// The NDEF file's size in bytes, NLEN included.
    public var maximumNDEFFileSize: UInt16
    /// 00: read access granted.
    public var readAccess: UInt8
    /// 00: read/write; FF: read-only.
    public var writeAccess: UInt8

    /// The NDEF Tag Application AID, mapping 2.0: `D2 76 00 00 85 01 01`.
    public static let applicationAID: [UInt8] = [0xD2, 0x76, 0x00, 0x00, 0x85, 0x01, 0x01]
    /// The capability container's file id, E103.
    public static let fileID: UInt16 = 0xE103
    static let forbiddenFileIDs: Set<UInt16> = [0xE102, 0xE103, 0x0000, 0x3F00, 0x3FFF, 0xFFFF]

    /// - Throws: `TagFormatError` `valueOutOfRange` for a field Android rejects.
    public init(
        mappingVersion: UInt8 = 0x20, mle: UInt16 = 0x007F, mlc: UInt16 = 0x007F, ndefFileID: UInt16 = 0xE104,
        maximumNDEFFileSize: UInt16 = 0x0400, readOnly: Bool = false
    ) throws(TagFormatError) {
        self.mappingVersion = mappingVersion
        self.mle = mle
        self.mlc = mlc
        self.ndefFileID = ndefFileID
        self.maximumNDEFFileSize = maximumNDEFFileSize
        self.readAccess = 0x00
        self.writeAccess = readOnly ? 0xFF : 0x00
        try validate()
    }

    /// Parses the 15 bytes of file E103.
    /// - Throws: `TagFormatError` `truncated`, `trailingBytes`, `valueOutOfRange` (a field Android
    ///   rejects, a mapping version other than 1.0/2.0, a first TLV other than `04 06`).
    public init(parsing bytes: [UInt8], rules: Rules = .android) throws(TagFormatError) {
        guard bytes.count >= 15 else {
            throw TagFormatError(.truncated, offset: bytes.count, "a mapping 2.0 capability container is 15 bytes; got \(bytes.count)")
        }
        func u16(_ i: Int) -> UInt16 { UInt16(bytes[i]) << 8 | UInt16(bytes[i + 1]) }
        let cclen = u16(0)
        guard cclen >= 0x000F || rules == .layoutOnly else {
            throw TagFormatError(.valueOutOfRange, offset: 0, "CCLEN is \(cclen); Android needs at least 15 (00 0F)")
        }
        guard bytes.count == 15, cclen == 0x000F else {
            throw TagFormatError(.trailingBytes, offset: 15, "only the 15-byte mapping 1.0/2.0 container is supported; CCLEN \(cclen), \(bytes.count) bytes")
        }
        guard bytes[7] == 0x04, bytes[8] == 0x06 else {
            throw TagFormatError(.valueOutOfRange, offset: 7, "the NDEF File Control TLV must be 04 06; got \(bytes[7...8].hexString)")
        }
        mappingVersion = bytes[2]
        mle = u16(3)
        mlc = u16(5)
        ndefFileID = u16(9)
        maximumNDEFFileSize = u16(11)
        readAccess = bytes[13]
        writeAccess = bytes[14]
        if rules != .layoutOnly { try validate(maximumSize: rules == .lenient ? 0xFFFE : 0x7FFF) }
    }

    private func validate(maximumSize: UInt16 = 0x7FFF) throws(TagFormatError) {
        guard mappingVersion == 0x20 || mappingVersion == 0x10 else {
            throw TagFormatError(.valueOutOfRange, offset: 2, "mapping version \([mappingVersion].hexString) is not supported (10 or 20)")
        }
        guard mle >= 0x000F else { throw TagFormatError(.valueOutOfRange, offset: 3, "MLe is \(mle); Android needs at least 15") }
        guard mlc >= 0x0001 else { throw TagFormatError(.valueOutOfRange, offset: 5, "MLc is 0; it must be at least 1") }
        guard !Self.forbiddenFileIDs.contains(ndefFileID) else {
            throw TagFormatError(.valueOutOfRange, offset: 9, "NDEF file id \(String(ndefFileID, radix: 16, uppercase: true)) is reserved; Android rejects it")
        }
        guard (0x0005...maximumSize).contains(maximumNDEFFileSize) else {
            let hint = maximumSize == 0x7FFF ? " (Android 12 and later refuse more; Android 8–11 accept up to FFFE)" : ""
            throw TagFormatError(
                .valueOutOfRange, offset: 11,
                "the maximum NDEF file size must be 0005 … \(String(maximumSize, radix: 16, uppercase: true)); got \(String(format4: maximumNDEFFileSize))\(hint)")
        }
    }

    /// Whether the NDEF file's write access byte is FF (no write access; 00 grants it).
    public var isReadOnly: Bool { writeAccess == 0xFF }

    /// The 15 bytes of file E103.
    public func serialized() -> [UInt8] {
        func be(_ v: UInt16) -> [UInt8] { [UInt8(v >> 8), UInt8(v & 0xFF)] }
        return be(0x000F) + [mappingVersion] + be(mle) + be(mlc) + [0x04, 0x06] + be(ndefFileID)
            + be(maximumNDEFFileSize) + [readAccess, writeAccess]
    }
}

extension String {
    /// 4 uppercase hex digits.
    init(format4 value: UInt16) {
        let digits = String(value, radix: 16, uppercase: true)
        self = String(repeating: "0", count: 4 - digits.count) + digits
    }
}
