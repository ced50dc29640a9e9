import ISO7816
import NFCTags

/// Android's NFC stack reading an NFC Forum Type 4 Tag: NDEF detection and NDEF read as AOSP's
/// `system/nfc` does them (`src/nfc/tags/rw_t4t.cc`), release by release
/// (docs/terminal-models.md §1 lists each rule with the function it comes from).
///
/// The sequence (``Release/android15``; differences for ``Release/android11`` in the docs):
/// 1. SELECT the NDEF Tag Application by name, mapping 2.0/3.0 AID with Le:
///    `00 A4 04 00 07 D2 76 00 00 85 01 01 00`; any SW other than 90 00 → once more with the
///    mapping 1.0 AID and no Le `00 A4 04 00 07 D2 76 00 00 85 01 00` (`rw_t4t_sm_detect_ndef`).
/// 2. SELECT file E103: `00 A4 00 0C 02 E1 03` (P2 00 after the 1.0 fallback).
/// 3. READ BINARY `00 B0 00 00 0F`: at least 15 bytes + SW; TLV `04 06` (or `06 08`, mapping 3.0:
///    then `00 B0 00 09 08` reads the extended TLV); the CC checks of `rw_t4t_validate_cc_file`.
/// 4. SELECT the NDEF file; READ BINARY `00 B0 00 00 02` (4 for an extended TLV): exactly NLEN +
///    SW, NLEN ≤ max size − 2.
/// 5. READ BINARY from offset 2 in chunks of min(MLe, 647) bytes (`RW_T4T_MAX_DATA_PER_READ`: a
///    660-byte buffer less headers), Le 256 sent as FF; above 256 the Le is extended (`00 Lh Ll`).
///    Each answer must hold 1 … remaining bytes.
///
/// Any SW other than 90 00 after step 1 ends the read (`rw_t4t_handle_error`). An empty file
/// (NLEN 0) is read as an empty NDEF message, without step 5 (NFA skips the read).
///
/// With a message to write (``init(release:writing:)``), step 5 is the NDEF update of
/// `RW_T4tUpdateNDef` instead: refused for a read-only tag (write access FF) or a message larger
/// than the maximum size − 2; else UPDATE BINARY `00 D6 00 00 02 00 00` (NLEN 0000), the message
/// from offset 2 in chunks of min(MLc, 633, 255) bytes, then NLEN.
public struct AndroidType4Reader: TerminalProgram {
    /// Whose rules the model follows.
    public enum Release: String, Sendable, Hashable, CaseIterable {
        /// android-15.0.0_r23 (the same CC rules since Android 12): a mapping 2.0 CC's maximum
        /// NDEF size must be 0005…7FFF; read access 00 or 80…FE; mapping 3.0 understood.
        case android15 = "android-15"
        /// android-11.0.0_r1 (the same CC rules from Android 8 to 11): maximum size 0005…FFFE;
        /// read access exactly 00; the CC's major version must equal the application's; at most
        /// 255 bytes per READ BINARY.
        case android11 = "android-11"

        /// The AOSP tag whose source the rules come from.
        public var sourceTag: String {
            switch self {
            case .android15: "android-15.0.0_r23"
            case .android11: "android-11.0.0_r1"
            }
        }
    }

    /// The mapping 2.0/3.0 NDEF Tag Application AID `D2 76 00 00 85 01 01`.
    public static let aidV2: [UInt8] = [0xD2, 0x76, 0x00, 0x00, 0x85, 0x01, 0x01]
    /// The mapping 1.0 AID `D2 76 00 00 85 01 00`.
    public static let aidV1: [UInt8] = [0xD2, 0x76, 0x00, 0x00, 0x85, 0x01, 0x00]
    /// `RW_T4T_MAX_DATA_PER_READ`: GKI buffer 660 − NFC_HDR 8 − NCI data header 3 − SW 2.
    public static let maximumDataPerRead = 647

    /// Whose rules the reader applies: Android 12 and later (``Release/android15``) or Android 8–11
    /// (``Release/android11``) (docs/terminal-models.md §1).
    public let release: Release
    /// The NDEF message to write instead of reading, or nil.
    public let messageToWrite: [UInt8]?
    /// `RW_T4T_MAX_DATA_PER_WRITE`: GKI buffer 660 − NFC_HDR 8 − NCI offset 1 − NCI data header 3
    /// − the longest command header 15.
    public static let maximumDataPerWrite = 633
    private var written = 0

    private enum Stage {
        case selectApplication(version: UInt8)
        case selectCC
        case readCC
        case readExtendedTLV
        case selectNDEFFile
        case readNLEN
        case readNDEF
        case writeNLENZero
        case writeMessage
        case writeNLEN
    }

    private struct CC {
        var cclen = 0, version: UInt8 = 0, mle = 0, mlc = 0
        var fileID: UInt16 = 0, maxSize = 0, read: UInt8 = 0, write: UInt8 = 0
        var nlenSize = 2
    }

    private var stage = Stage.selectApplication(version: 0x20)
    /// The mapping version of the application selected (T4T_MY_VERSION until the 1.0 fallback).
    private var version: UInt8
    private var cc = CC()
    private var nlen = 0
    private var message: [UInt8] = []
    private var maxReadSize = 0
    private var extendedLe = false
    private var lastCommand: [UInt8] = []

    /// A reader with `release`'s rules that reads the tag's NDEF message, or, with `message`, writes
    /// that NDEF message instead (as Android's NDEF write does).
    public init(release: Release = .android15, writing message: [UInt8]? = nil) {
        self.release = release
        messageToWrite = message
        version = release == .android15 ? 0x30 : 0x20
    }

    public mutating func start() -> TerminalAction {
        stage = .selectApplication(version: version)
        return send([0x00, 0xA4, 0x04, 0x00, 0x07] + Self.aidV2 + [0x00])
    }

    private mutating func send(_ command: [UInt8]) -> TerminalAction {
        lastCommand = command
        return .send(command)
    }

    private func fail(_ stage: String, _ reason: String) -> TerminalAction {
        .finish(.failed(stage: stage, reason: reason, report: nil))
    }

    private var stageName: String {
        switch stage {
        case .selectApplication(let v): v == 0x10 ? "SELECT NDEF Tag Application (mapping 1.0)" : "SELECT NDEF Tag Application"
        case .selectCC: "SELECT capability container E103"
        case .readCC: "READ BINARY capability container"
        case .readExtendedTLV: "READ BINARY extended NDEF File Control TLV"
        case .selectNDEFFile: "SELECT NDEF file"
        case .readNLEN: "READ BINARY NLEN"
        case .readNDEF: "READ BINARY NDEF message"
        case .writeNLENZero: "UPDATE BINARY NLEN 0000"
        case .writeMessage: "UPDATE BINARY NDEF message"
        case .writeNLEN: "UPDATE BINARY NLEN"
        }
    }

    private var selectFileP2: UInt8 { version == 0x10 ? 0x00 : 0x0C }

    public mutating func receive(_ response: [UInt8]) -> TerminalAction {
        // rw_t4t_data_cback: an R-APDU shorter than SW1 SW2 is a failure.
        guard let (data, sw) = splitResponse(response) else {
            return fail(stageName, "the R-APDU has \(response.count) byte(s), fewer than SW1 SW2 (rw_t4t_data_cback)")
        }
        guard sw.bytes == [0x90, 0x00] else {
            if case .selectApplication(let v) = stage, v != 0x10 {
                // rw_t4t_sm_detect_ndef: retry with mapping 1.0 after the 2.0/3.0 SELECT fails.
                version = 0x10
                stage = .selectApplication(version: 0x10)
                return send([0x00, 0xA4, 0x04, 0x00, 0x07] + Self.aidV1)
            }
            return fail(stageName, "\(describeStatus(sw)); Android ends the read on any status other than 90 00 (rw_t4t_handle_error)")
        }
        switch stage {
        case .selectApplication:
            stage = .selectCC
            return send([0x00, 0xA4, 0x00, selectFileP2, 0x02, 0xE1, 0x03])
        case .selectCC:
            stage = .readCC
            return send([0x00, 0xB0, 0x00, 0x00, 0x0F])
        case .readCC:
            return capabilityContainer(data)
        case .readExtendedTLV:
            guard data.count >= 8 else {
                return fail(stageName, "the extended TLV answer has \(data.count) bytes; Android needs 8")
            }
            cc.fileID = UInt16(data[0]) << 8 | UInt16(data[1])
            cc.maxSize = Int(data[2]) << 24 | Int(data[3]) << 16 | Int(data[4]) << 8 | Int(data[5])
            cc.read = data[6]
            cc.write = data[7]
            cc.nlenSize = 4
            return validateAndSelect()
        case .selectNDEFFile:
            stage = .readNLEN
            return send([0x00, 0xB0, 0x00, 0x00, UInt8(cc.nlenSize)])
        case .readNLEN:
            return nlenRead(data)
        case .readNDEF:
            return ndefChunk(data)
        case .writeNLENZero, .writeMessage:
            return writeNext()
        case .writeNLEN:
            let report = TerminalReport.ndef(messageToWrite ?? [])
            let summary = (try? report.get().summary).map { "wrote " + $0 } ?? "wrote \(written) bytes"
            return .finish(.completed(TerminalReport(summary: summary, ndefMessage: messageToWrite, items: (try? report.get().items) ?? [])))
        }
    }

    /// `RW_T4tUpdateNDef`: the checks, then NLEN 0000.
    private mutating func startWrite(_ message: [UInt8]) -> TerminalAction {
        let stage = "NDEF update"
        guard cc.write != 0xFF else { return fail(stage, "the NDEF file is read-only (write access FF)") }
        guard message.count + cc.nlenSize <= cc.maxSize else {
            return fail(stage, "the message (\(message.count) bytes) plus NLEN is more than the maximum NDEF size \(cc.maxSize)")
        }
        guard cc.nlenSize + message.count <= 0x7FFF else {
            return fail(stage, "the message reaches past offset 7FFF, which needs UpdateBinary with an ODO (D7), not modelled here")
        }
        self.stage = .writeNLENZero
        return send([0x00, 0xD6, 0x00, 0x00, UInt8(cc.nlenSize)] + [UInt8](repeating: 0, count: cc.nlenSize))
    }

    /// `rw_t4t_update_file` until the message is written, then `rw_t4t_update_nlen`.
    private mutating func writeNext() -> TerminalAction {
        let message = messageToWrite ?? []
        guard written < message.count else {
            stage = .writeNLEN
            let nlen = (0..<cc.nlenSize).reversed().map { UInt8((message.count >> (8 * $0)) & 0xFF) }
            return send([0x00, 0xD6, 0x00, 0x00, UInt8(cc.nlenSize)] + nlen)
        }
        stage = .writeMessage
        let length = min(message.count - written, min(cc.mlc, Self.maximumDataPerWrite), 0xFF)
        let offset = cc.nlenSize + written
        let chunk = Array(message[written..<written + length])
        written += length
        return send([0x00, 0xD6, UInt8(offset >> 8), UInt8(offset & 0xFF), UInt8(length)] + chunk)
    }

    private mutating func capabilityContainer(_ data: [UInt8]) -> TerminalAction {
        guard data.count >= 15 else {
            return fail(stageName, "the CC answer has \(data.count) data bytes; Android needs at least 15 (T4T_CC_FILE_MIN_LEN)")
        }
        cc.cclen = Int(data[0]) << 8 | Int(data[1])
        cc.version = data[2]
        cc.mle = Int(data[3]) << 8 | Int(data[4])
        cc.mlc = Int(data[5]) << 8 | Int(data[6])
        let (type, length) = (data[7], data[8])
        if type == 0x04, length == 0x06 {
            cc.fileID = UInt16(data[9]) << 8 | UInt16(data[10])
            cc.maxSize = Int(data[11]) << 8 | Int(data[12])
            cc.read = data[13]
            cc.write = data[14]
            cc.nlenSize = 2
            return validateAndSelect()
        }
        if release == .android15, type == 0x06, length == 0x08 {
            stage = .readExtendedTLV
            return send([0x00, 0xB0, 0x00, 0x09, 0x08])
        }
        let known = release == .android15 ? "04 06 (NDEF File Control) or 06 08 (extended, mapping 3.0)" : "04 06 (NDEF File Control)"
        return fail(stageName, "the CC's first TLV is \([type, length].hexString), not \(known)")
    }

    /// `rw_t4t_validate_cc_file`, then SELECT the NDEF file.
    private mutating func validateAndSelect() -> TerminalAction {
        let stage = "capability container check"
        guard cc.cclen >= 0x0F else { return fail(stage, "CCLEN \(hex16(cc.cclen)) is below 000F") }
        switch release {
        case .android15:
            guard cc.version >> 4 <= version >> 4 else {
                return fail(stage, "the CC's mapping version \([cc.version].hexString) is newer than the application selected (\([version].hexString))")
            }
        case .android11:
            guard cc.version >> 4 == version >> 4 else {
                return fail(stage, "the CC's mapping version \([cc.version].hexString) does not match the application selected (\([version].hexString))")
            }
        }
        guard cc.mle >= 0x0F else { return fail(stage, "MLe \(hex16(cc.mle)) is below 000F") }
        guard cc.mlc >= 0x01 else { return fail(stage, "MLc 0000 is below 0001") }
        let reserved: Set<UInt16> = [0xE103, 0xE102, 0x3F00, 0x3FFF, 0xFFFF]
        if reserved.contains(cc.fileID) || (cc.fileID == 0x0000 && (cc.version == 0x20 || cc.version == 0x30)) {
            return fail(stage, "NDEF file id \(hex16(Int(cc.fileID))) is reserved (E102, E103, 3F00, 3FFF, FFFF, and 0000 for mapping 2.0/3.0)")
        }
        switch release {
        case .android15:
            if cc.version == 0x20, !(0x0005...0x7FFF).contains(cc.maxSize) {
                return fail(stage, "maximum NDEF size \(hex16(cc.maxSize)) is outside 0005…7FFF for mapping 2.0 (reserved since Android 12; Android 8–11 accept up to FFFE)")
            }
            if cc.version == 0x30, cc.maxSize < 7 || cc.maxSize == 0xFFFF_FFFF {
                return fail(stage, "maximum NDEF size \(cc.maxSize) is reserved for mapping 3.0 (below 7 or FFFFFFFF)")
            }
            if (cc.read > 0x00 && cc.read < 0x80) || cc.read == 0xFF {
                return fail(stage, "read access \([cc.read].hexString) is not 00 or 80…FE")
            }
        case .android11:
            if cc.maxSize < 0x0005 || cc.maxSize == 0xFFFF {
                return fail(stage, "maximum NDEF size \(hex16(cc.maxSize)) is below 0005 or FFFF")
            }
            if cc.read != 0x00 { return fail(stage, "read access \([cc.read].hexString) is not 00") }
        }
        if cc.write > 0x00 && cc.write < 0x80 {
            return fail(stage, "write access \([cc.write].hexString) is not 00 or 80…FF")
        }
        self.stage = .selectNDEFFile
        return send([0x00, 0xA4, 0x00, selectFileP2, 0x02, UInt8(cc.fileID >> 8), UInt8(cc.fileID & 0xFF)])
    }

    private mutating func nlenRead(_ data: [UInt8]) -> TerminalAction {
        guard data.count == cc.nlenSize else {
            return fail(stageName, "the answer has \(data.count) data bytes; Android needs exactly \(cc.nlenSize)")
        }
        nlen = data.reduce(0) { $0 << 8 | Int($1) }
        guard nlen <= cc.maxSize - cc.nlenSize else {
            return fail(stageName, "NLEN \(nlen) + \(cc.nlenSize) is more than the maximum NDEF size \(cc.maxSize)")
        }
        switch release {
        case .android15:
            maxReadSize = min(cc.mle, Self.maximumDataPerRead)
            extendedLe = maxReadSize > 256
        case .android11:
            maxReadSize = min(cc.mle, Self.maximumDataPerRead, 0xFF)
        }
        if let message = messageToWrite { return startWrite(message) }
        guard nlen > 0 else { return finish() }
        stage = .readNDEF
        return readNext()
    }

    /// `rw_t4t_read_file` for the rest of the message.
    private mutating func readNext() -> TerminalAction {
        let offset = cc.nlenSize + message.count
        let remaining = nlen - message.count
        guard offset + remaining <= 0x7FFF else {
            return fail(stageName, "the NDEF file reaches past offset 7FFF, which needs ReadBinary with an ODO (B1), not modelled here")
        }
        var length = min(remaining, maxReadSize)
        let header: [UInt8] = [0x00, 0xB0, UInt8(offset >> 8), UInt8(offset & 0xFF)]
        if extendedLe { return send(header + [0x00, UInt8(length >> 8), UInt8(length & 0xFF)]) }
        if length == 256 { length = 255 }
        return send(header + [UInt8(length)])
    }

    private mutating func ndefChunk(_ data: [UInt8]) -> TerminalAction {
        let remaining = nlen - message.count
        guard !data.isEmpty, data.count <= remaining else {
            if data.isEmpty, release == .android15, cc.version == 0x20, extendedLe {
                // rw_t4t_sm_read_ndef: an empty answer to an extended Le → short Le, once.
                extendedLe = false
                return send(Array(lastCommand.prefix(4)) + [UInt8(min(remaining, maxReadSize, 0xFF))])
            }
            return fail(stageName, "the answer has \(data.count) data bytes; Android needs 1…\(remaining) (the rest of NLEN)")
        }
        message += data
        return message.count < nlen ? readNext() : finish()
    }

    private func finish() -> TerminalAction {
        switch TerminalReport.ndef(message) {
        case .success(let report): .finish(.completed(report))
        case .failure(let error): .finish(.failed(stage: "NDEF message", reason: "the message does not parse: \(error)", report: nil))
        }
    }
}

/// 4 hex digits, e.g. "7FFF".
func hex16(_ value: Int) -> String {
    let digits = String(value, radix: 16, uppercase: true)
    return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
}
