import ISO7816
import NFCTags
import PN53x

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
    /// The applet's name, for messages.
    public let name: String
    /// D2 76 00 00 85 01 01, the NDEF Tag Application (NFC Forum Type 4 Tag 2.0 §5.4.2).
    public let aids: [AIDRegistration]
    /// The CC file (E1 03) it serves (NFC Forum Type 4 Tag 2.0 §5.1).
    public let capabilityContainer: Type4CapabilityContainer

    /// The largest MLe a tag emulated on a PN532 can serve: 250 bytes. One TgSetData frame carries
    /// at most 252 R-APDU bytes (the ACR122's 254-byte PN532 frame less D5 and the answer code:
    /// PN532 User Manual UM0701-02, TgSetData; docs/acr122-pn532.md §4), and a READ BINARY of MLe bytes
    /// needs MLe + SW1 SW2. A larger answer goes out as 250 bytes + `61 XX`, which Android's
    /// `rw_t4t.cc` and iOS treat as a failed read (they accept only 90 00); docs/terminal-models.md §1.
    public static let maximumReadLength = PN532HostFrame.maximumParameterLength - 2

    /// The loader's reason for refusing an MLe above ``maximumReadLength``.
    static func mleTooLarge(_ mle: Int) -> String {
        "MLe \(mle) (\(String(format: "%04X", mle))) is more than a PN532 can answer in one TgSetData frame: at most \(maximumReadLength) data bytes + SW1 SW2 (252 bytes, PN532 UM0701-02 TgSetData; docs/acr122-pn532.md §4); a phone reading \(mle) bytes at once gets 61 XX and stops. Use an mle of 15 to \(maximumReadLength)"
    }
    private var ndefFile: [UInt8]
    private var selectedFile: UInt16?

    /// - Parameters:
    ///   - name: the applet's name in messages.
    ///   - message: the NDEF message; nil for an empty tag (NLEN 0000).
    ///   - capabilityContainer: defaults to the worked example's (MLe = MLc = 007F, file E104,
    ///     0400 bytes), grown to fit the message.
    ///   - readOnly: for the default container only: write access FF (UPDATE BINARY answers 69 86)
    ///     when true, 00 (writable) when false (NFC Forum Type 4 Tag 2.0 §5.1). A given container
    ///     keeps its own write-access byte.
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

    /// Selecting the application: 90 00, no file selected.
    public func select(_ command: CommandAPDU) -> ResponseAPDU {
        selectedFile = nil
        return ResponseAPDU(statusWord: .success)
    }

    /// Forgets the selected file.
    public func deselect() { selectedFile = nil }

    private static func sw(_ value: UInt16) -> ResponseAPDU { ResponseAPDU(statusWord: StatusWord(value)) }

    /// SELECT of E1 03 / E1 04, READ BINARY and (when writable) UPDATE BINARY (NFC Forum Type 4 Tag 2.0 §5.4); other commands 6D 00.
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
