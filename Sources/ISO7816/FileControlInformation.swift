/// The meanings of the common data objects in file control information: the FCP template 62,
/// the FMD template 64 and the FCI template 6F that SELECT returns (ISO/IEC 7816-4 §7.4.3,
/// summarised in docs/iso7816-fcp.md §1).
///
/// Context-specific tags (80, 82, 8A, A5, …) mean what this table says only directly inside one
/// of these templates; elsewhere (inside A5, in an EMV record) the same tag means something else,
/// so `meaning(of:inside:)` says nothing there.
public enum FileControlInformation {
    /// The three templates: 62 FCP, 64 FMD, 6F FCI.
    public static let templateNames: [UInt32: String] = [
        0x62: "FCP template (file control parameters)",
        0x64: "FMD template (file management data)",
        0x6F: "FCI template (file control information)",
    ]

    /// What `object` means where it stands: a template's name at the top level (`parent` nil), a
    /// parameter's meaning directly inside a template; nil anywhere else and for tags not known here.
    public static func meaning(of object: BERTLV, inside parent: BERTag?) -> String? {
        guard let parent else { return templateNames[object.tag.rawValue] }
        guard templateNames[parent.rawValue] != nil else { return nil }
        let value = object.value
        switch object.tag.rawValue {
        case 0x80: return "file size (data bytes, without structural information)" + sizeText(value)
        case 0x81: return "total file size (with structural information)" + sizeText(value)
        case 0x82: return "file descriptor: " + fileDescriptor(value)
        case 0x83: return "file identifier" + (value == [0x3F, 0x00] ? " (the MF)" : "")
        case 0x84: return "DF name (AID)"
        case 0x85: return "proprietary information (primitive)"
        case 0xA5: return "proprietary information (constructed)"
        case 0x86: return "security attributes (proprietary format)"
        case 0x88: return shortEFIdentifier(value)
        case 0x8A: return value.count == 1 ? "life cycle status: " + lifeCycleStatus(value[0]) : "life cycle status (1 byte expected)"
        case 0x8B: return "security attributes (referencing the expanded format)"
        case 0x8C: return "security attributes (compact format)"
        case 0xAB: return "security attributes (expanded format)"
        default: return nil
        }
    }

    /// ": 512 bytes" from a big-endian size of 1 to 8 bytes; "" otherwise.
    static func sizeText(_ value: [UInt8]) -> String {
        guard (1...8).contains(value.count) else { return "" }
        var size: UInt64 = 0
        for b in value { size = size << 8 | UInt64(b) }
        return ": \(size) \(size == 1 ? "byte" : "bytes")"
    }

    /// The value of tag 82: `| file descriptor byte | data coding byte | max record size (1 or 2) |
    /// number of records (1 or 2) |`, all but the first optional. Lengths 1 to 6: 3 gives a 1-byte
    /// record size, 4 a 2-byte one, 5 and 6 a 2-byte size and a 1- or 2-byte number of records.
    ///
    /// File descriptor byte: b8 = 1 proprietary; b7 shareable; b6-b4 000 working EF, 001 internal
    /// EF, 010-110 proprietary EF, 111 DF (38) or, with b3-b1 001 / 010, a BER-TLV (39) or
    /// SIMPLE-TLV (3A) EF; b3-b1 for an EF: 000 no information, 001 transparent, 010 linear fixed,
    /// 011 linear fixed TLV, 100 linear variable, 101 linear variable TLV, 110 cyclic, 111 cyclic TLV.
    public static func fileDescriptor(_ value: [UInt8]) -> String {
        guard let fdb = value.first else { return "empty" }
        var parts: [String]
        if fdb & 0x80 != 0 {
            parts = ["proprietary descriptor byte \([fdb].hexString)"]
        } else {
            parts = [fdb & 0x40 != 0 ? "shareable" : "not shareable"]
            let kind = (fdb >> 3) & 0x07
            let structure = fdb & 0x07
            switch (kind, structure) {
            case (7, 0): parts.append("DF")
            case (7, 1): parts.append("EF of BER-TLV structure")
            case (7, 2): parts.append("EF of SIMPLE-TLV structure")
            case (7, _): parts.append("reserved descriptor \([fdb].hexString)")
            default:
                parts.append(kind == 0 ? "working EF" : kind == 1 ? "internal EF" : "proprietary EF type \(kind)")
                parts.append([
                    "no structure information", "transparent", "linear fixed", "linear fixed, TLV records",
                    "linear variable", "linear variable, TLV records", "cyclic", "cyclic, TLV records",
                ][Int(structure)])
            }
        }
        var text = parts.joined(separator: ", ")
        if value.count >= 2 { text += "; data coding byte \([value[1]].hexString)" }
        func number(_ bytes: ArraySlice<UInt8>) -> Int { bytes.reduce(0) { $0 << 8 | Int($1) } }
        switch value.count {
        case 1, 2: break
        case 3: text += "; max record size \(value[2])"
        case 4: text += "; max record size \(number(value[2..<4]))"
        case 5, 6:
            let records = number(value[4...])
            text += "; max record size \(number(value[2..<4])); \(records) \(records == 1 ? "record" : "records")"
        default: text += "; \(value.count) bytes, at most 6 expected"
        }
        return text
    }

    /// The value of tag 88: empty means the EF has no short EF identifier; one byte carries it in
    /// b8-b4 (b3-b1 000).
    static func shortEFIdentifier(_ value: [UInt8]) -> String {
        switch value.count {
        case 0: return "short EF identifier: none (the EF cannot be referenced by one)"
        case 1:
            let sfi = value[0] >> 3
            return "short EF identifier \(sfi)" + (value[0] & 0x07 == 0 ? "" : " (bits 3-1 are not 000)")
        default: return "short EF identifier (1 byte expected)"
        }
    }

    /// The life cycle status byte (ISO/IEC 7816-4 §7.4.10): 00 no information, 01 creation,
    /// 03 initialisation, 05 and 07 operational activated, 04 and 06 operational deactivated,
    /// 0C-0F termination, 02 and 08-0B reserved, 10-FF proprietary.
    public static func lifeCycleStatus(_ lcs: UInt8) -> String {
        switch lcs {
        case 0x00: "00 (no information given)"
        case 0x01: "01 (creation state)"
        case 0x03: "03 (initialisation state)"
        case 0x05, 0x07: "\([lcs].hexString) (operational state, activated)"
        case 0x04, 0x06: "\([lcs].hexString) (operational state, deactivated)"
        case 0x0C...0x0F: "\([lcs].hexString) (termination state)"
        case 0x10...: "\([lcs].hexString) (proprietary)"
        default: "\([lcs].hexString) (reserved)"
        }
    }
}
