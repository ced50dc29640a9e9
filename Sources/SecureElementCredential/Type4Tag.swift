import ISO7816

/// The capability container of an NFC Forum Type 4 Tag, mapping 1.0 or 2.0, file E103
/// (docs/iso14443-t4t-ndef.md §4), 15 bytes:
///
/// `| CCLEN (2) | version | MLe (2) | MLc (2) | 04 | 06 | file id (2) | max NDEF size (2) | read | write |`
///
/// It refuses what Android refuses: CCLEN < 000F, MLe < 000F, MLc < 0001, an NDEF file id of
/// E102, E103, 0000, 3F00, 3FFF or FFFF, a maximum size outside 0005…7FFF.
public struct Type4CapabilityContainer: Sendable, Hashable {
    /// Mapping version: 20 (2.0) or 10 (1.0).
    public var mappingVersion: UInt8
    /// The largest R-APDU data field READ BINARY may ask for.
    public var mle: UInt16
    /// The largest C-APDU data field UPDATE BINARY may carry.
    public var mlc: UInt16
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
    public init(parsing bytes: [UInt8]) throws(TagFormatError) {
        guard bytes.count >= 15 else {
            throw TagFormatError(.truncated, offset: bytes.count, "a mapping 2.0 capability container is 15 bytes; got \(bytes.count)")
        }
        func u16(_ i: Int) -> UInt16 { UInt16(bytes[i]) << 8 | UInt16(bytes[i + 1]) }
        let cclen = u16(0)
        guard cclen >= 0x000F else {
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
        try validate()
    }

    private func validate() throws(TagFormatError) {
        guard mappingVersion == 0x20 || mappingVersion == 0x10 else {
            throw TagFormatError(.valueOutOfRange, offset: 2, "mapping version \([mappingVersion].hexString) is not supported (10 or 20)")
        }
        guard mle >= 0x000F else { throw TagFormatError(.valueOutOfRange, offset: 3, "MLe is \(mle); Android needs at least 15") }
        guard mlc >= 0x0001 else { throw TagFormatError(.valueOutOfRange, offset: 5, "MLc is 0; it must be at least 1") }
        guard !Self.forbiddenFileIDs.contains(ndefFileID) else {
            throw TagFormatError(.valueOutOfRange, offset: 9, "NDEF file id \(String(ndefFileID, radix: 16, uppercase: true)) is reserved; Android rejects it")
        }
        guard (0x0005...0x7FFF).contains(maximumNDEFFileSize) else {
            throw TagFormatError(.valueOutOfRange, offset: 11, "the maximum NDEF file size must be 0005 … 7FFF; got \(maximumNDEFFileSize)")
        }
    }

    public var isReadOnly: Bool { writeAccess == 0xFF }

    /// The 15 bytes of file E103.
    public func serialized() -> [UInt8] {
        func be(_ v: UInt16) -> [UInt8] { [UInt8(v >> 8), UInt8(v & 0xFF)] }
        return be(0x000F) + [mappingVersion] + be(mle) + be(mlc) + [0x04, 0x06] + be(ndefFileID)
            + be(maximumNDEFFileSize) + [readAccess, writeAccess]
    }
}

/// An NFC Forum Type 4 Tag application (mapping 2.0) serving an NDEF message
/// (docs/iso14443-t4t-ndef.md §4–§5), the way Android's card-emulation code answers:
///
/// | Command | Answer |
/// |---|---|
/// | SELECT `00 A4 04 00 07 D2 76 00 00 85 01 01 [00]` | 90 00 (through the router) |
/// | SELECT file `00 A4 00 00/0C 02 E1 03` or the NDEF file | 90 00; 6A 82 unknown file; 67 00 Lc ≠ 2; 6B 00 other P2 |
/// | READ BINARY `00 B0 offset Le` | data 90 00, shortened at the end of the file; 6B 00 offset past the end, P1 bit 8, Le > MLe; 67 00 no Le; 69 86 no file selected |
/// | UPDATE BINARY `00 D6 offset Lc data` | 90 00; 69 86 no file, the CC or a read-only tag; 67 00 Lc > MLc or past the end; 6B 00 offset past the end |
/// | CLA ≠ 00 | 6E 00 |
/// | other INS | 6D 00 |
///
/// The NDEF file is `maximumNDEFFileSize` bytes: NLEN (2, big-endian) + the message, then zeros.
public final class Type4TagApplet: HostApplet {
    public let name: String
    public let aids: [AIDRegistration]
    public let capabilityContainer: Type4CapabilityContainer
    private var ndefFile: [UInt8]
    private var selectedFile: UInt16?

    /// - Parameters:
    ///   - message: the NDEF message; nil for an empty tag (NLEN 0000).
    ///   - capabilityContainer: defaults to the worked example's (MLe = MLc = 007F, file E104,
    ///     0400 bytes), grown to fit the message.
    /// - Throws: `TagFormatError` `valueOutOfRange` when the message does not fit 7FFF − 2 bytes or
    ///   the given container's size.
    public init(
        name: String = "NFC Forum Type 4 Tag", message: NDEFMessage?,
        capabilityContainer: Type4CapabilityContainer? = nil, readOnly: Bool = true
    ) throws(TagFormatError) {
        let bytes = message?.serialized() ?? []
        var cc: Type4CapabilityContainer
        if let capabilityContainer { cc = capabilityContainer } else { cc = try Type4CapabilityContainer(readOnly: readOnly) }
        if capabilityContainer == nil, bytes.count + 2 > Int(cc.maximumNDEFFileSize) {
            guard bytes.count + 2 <= 0x7FFF else {
                throw TagFormatError(.valueOutOfRange, "the NDEF message is \(bytes.count) bytes; a Type 4 Tag holds at most 32765")
            }
            cc.maximumNDEFFileSize = UInt16(bytes.count + 2)
        }
        guard bytes.count + 2 <= Int(cc.maximumNDEFFileSize) else {
            throw TagFormatError(
                .valueOutOfRange, "the NDEF message (\(bytes.count) bytes + 2 for NLEN) does not fit the NDEF file of \(cc.maximumNDEFFileSize) bytes")
        }
        self.name = name
        self.capabilityContainer = cc
        self.aids = [AIDRegistration(unchecked: Type4CapabilityContainer.applicationAID)]
        var file = [UInt8(bytes.count >> 8), UInt8(bytes.count & 0xFF)] + bytes
        file += [UInt8](repeating: 0, count: Int(cc.maximumNDEFFileSize) - file.count)
        self.ndefFile = file
    }

    /// The NDEF file as it stands (NLEN + message + padding).
    public var ndefFileContents: [UInt8] { ndefFile }

    /// The message the NDEF file holds now (after any UPDATE BINARY); nil when NLEN is 0000.
    /// - Throws: `TagFormatError` when NLEN runs past the file or the message does not parse.
    public func currentMessage() throws(TagFormatError) -> NDEFMessage? {
        let nlen = Int(ndefFile[0]) << 8 | Int(ndefFile[1])
        if nlen == 0 { return nil }
        guard nlen + 2 <= ndefFile.count else {
            throw TagFormatError(.truncated, offset: 0, "NLEN \(nlen) runs past the NDEF file of \(ndefFile.count) bytes")
        }
        return try NDEFMessage(parsing: Array(ndefFile[2..<(2 + nlen)]))
    }

    public func select(_ command: CommandAPDU) -> ResponseAPDU {
        selectedFile = nil
        return ResponseAPDU(statusWord: .success)
    }

    public func deselect() { selectedFile = nil }

    private static func sw(_ value: UInt16) -> ResponseAPDU { ResponseAPDU(statusWord: StatusWord(value)) }

    public func process(_ command: CommandAPDU) -> ResponseAPDU {
        guard command.cla == 0x00 else { return Self.sw(0x6E00) }
        switch command.ins {
        case 0xA4: return selectFile(command)
        case 0xB0: return readBinary(command)
        case 0xD6: return updateBinary(command)
        default: return Self.sw(0x6D00)
        }
    }

    private func selectFile(_ command: CommandAPDU) -> ResponseAPDU {
        guard command.p1 == 0x00 else { return Self.sw(0x6B00) }
        guard command.p2 == 0x00 || command.p2 == 0x0C else { return Self.sw(0x6B00) }
        guard command.nc == 2 else { return Self.sw(0x6700) }
        let id = UInt16(command.data[0]) << 8 | UInt16(command.data[1])
        guard id == Type4CapabilityContainer.fileID || id == capabilityContainer.ndefFileID else { return Self.sw(0x6A82) }
        selectedFile = id
        return Self.sw(0x9000)
    }

    private func contents(of file: UInt16) -> [UInt8] {
        file == Type4CapabilityContainer.fileID ? capabilityContainer.serialized() : ndefFile
    }

    private func readBinary(_ command: CommandAPDU) -> ResponseAPDU {
        guard let file = selectedFile else { return Self.sw(0x6986) }
        guard command.p1 & 0x80 == 0 else { return Self.sw(0x6B00) }
        guard command.ne > 0 else { return Self.sw(0x6700) }
        guard command.ne <= Int(capabilityContainer.mle) else { return Self.sw(0x6B00) }
        let data = contents(of: file)
        let offset = Int(command.p1) << 8 | Int(command.p2)
        guard offset <= data.count else { return Self.sw(0x6B00) }
        let end = min(data.count, offset + command.ne)
        return ResponseAPDU(data: Array(data[offset..<end]), statusWord: .success)
    }

    private func updateBinary(_ command: CommandAPDU) -> ResponseAPDU {
        guard let file = selectedFile, file != Type4CapabilityContainer.fileID, !capabilityContainer.isReadOnly else {
            return Self.sw(0x6986)
        }
        guard command.p1 & 0x80 == 0 else { return Self.sw(0x6B00) }
        guard command.nc > 0, command.nc <= Int(capabilityContainer.mlc) else { return Self.sw(0x6700) }
        let offset = Int(command.p1) << 8 | Int(command.p2)
        guard offset <= ndefFile.count else { return Self.sw(0x6B00) }
        guard offset + command.nc <= ndefFile.count else { return Self.sw(0x6700) }
        ndefFile.replaceSubrange(offset..<(offset + command.nc), with: command.data)
        return Self.sw(0x9000)
    }
}
