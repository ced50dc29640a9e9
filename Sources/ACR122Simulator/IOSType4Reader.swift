import ISO7816
import NFCTags

/// An iPhone (Core NFC, NFCNDEFReaderSession) reading an NFC Forum Type 4 Tag, as public traces
/// show it (docs/terminal-models.md §2: the sources, and which parts are uncertain).
///
/// 1. Probes: SELECT the NDEF Tag Application `00 A4 04 00 07 D2 76 00 00 85 01 01 00`, then the
///    MIFARE DESFire GetVersion wrapped in ISO 7816 `90 60 00 00 00`, then SELECT by name of the
///    16-byte AID `A0 00 00 03 96 56 43 41 FF FF FF FF FF FF FF FF` (with Le). Any answer is
///    accepted (a Type 4 Tag answers 6A 81/6A 82/6D 00 to the last two).
/// 2. The NDEF read: SELECT the application again (90 00 needed), SELECT E103 (P2 0C), READ
///    BINARY `00 B0 00 00 0F`, SELECT the NDEF file, READ BINARY `00 B0 00 00 02` (NLEN).
/// 3. The file from offset 0: first NLEN bytes (capped at the chunk size, min(MLe, 255)), then the
///    rest up to offset NLEN + 2 in chunks: the NLEN field is read twice.
///
/// The CC checks are the ones every reader must make to find the file (CCLEN ≥ 000F, TLV
/// `04 06`, MLe ≥ 000F, read access 00, NLEN ≤ max size − 2); iOS's own limits are not public.
public struct IOSType4Reader: TerminalProgram {
    /// The probe C-APDUs sent before the NDEF read.
    public static let probes: [[UInt8]] = [
        [0x00, 0xA4, 0x04, 0x00, 0x07] + AndroidType4Reader.aidV2 + [0x00],
        [0x90, 0x60, 0x00, 0x00, 0x00],
        [0x00, 0xA4, 0x04, 0x00, 0x10, 0xA0, 0x00, 0x00, 0x03, 0x96, 0x56, 0x43, 0x41]
            + [UInt8](repeating: 0xFF, count: 8) + [0x00],
    ]

    private enum Stage { case probe(Int), selectApplication, selectCC, readCC, selectNDEFFile, readNLEN, readFile }

    private var stage = Stage.probe(0)
    private var fileID: [UInt8] = []
    private var chunk = 0
    private var maxSize = 0
    private var nlen = 0
    private var file: [UInt8] = []

    /// A reader that probes and reads as an iPhone does (docs/terminal-models.md §2).
    public init() {}

    public mutating func start() -> TerminalAction { .send(Self.probes[0]) }

    private var stageName: String {
        switch stage {
        case .probe: "probe"
        case .selectApplication: "SELECT NDEF Tag Application"
        case .selectCC: "SELECT capability container E103"
        case .readCC: "READ BINARY capability container"
        case .selectNDEFFile: "SELECT NDEF file"
        case .readNLEN: "READ BINARY NLEN"
        case .readFile: "READ BINARY NDEF file"
        }
    }

    private func fail(_ stage: String, _ reason: String) -> TerminalAction {
        .finish(.failed(stage: stage, reason: reason, report: nil))
    }

    public mutating func receive(_ response: [UInt8]) -> TerminalAction {
        if case .probe(let index) = stage {
            guard index + 1 < Self.probes.count else {
                stage = .selectApplication
                return .send(Self.probes[0])
            }
            stage = .probe(index + 1)
            return .send(Self.probes[index + 1])
        }
        guard let (data, sw) = splitResponse(response) else {
            return fail(stageName, "the R-APDU has \(response.count) byte(s), fewer than SW1 SW2")
        }
        guard sw.bytes == [0x90, 0x00] else { return fail(stageName, describeStatus(sw)) }
        switch stage {
        case .probe: return fail("probe", "unreachable")
        case .selectApplication:
            stage = .selectCC
            return .send([0x00, 0xA4, 0x00, 0x0C, 0x02, 0xE1, 0x03])
        case .selectCC:
            stage = .readCC
            return .send([0x00, 0xB0, 0x00, 0x00, 0x0F])
        case .readCC:
            return capabilityContainer(data)
        case .selectNDEFFile:
            stage = .readNLEN
            return .send([0x00, 0xB0, 0x00, 0x00, 0x02])
        case .readNLEN:
            guard data.count == 2 else { return fail(stageName, "the answer has \(data.count) data bytes, not 2") }
            nlen = Int(data[0]) << 8 | Int(data[1])
            guard nlen + 2 <= maxSize else {
                return fail(stageName, "NLEN \(nlen) + 2 is more than the maximum NDEF size \(maxSize)")
            }
            guard nlen > 0 else { return finish() }
            stage = .readFile
            return read(offset: 0, count: min(nlen, chunk))
        case .readFile:
            let wanted = nlen + 2 - file.count
            guard !data.isEmpty, data.count <= wanted else {
                return fail(stageName, "the answer has \(data.count) data bytes; 1…\(wanted) expected")
            }
            file += data
            guard file.count < nlen + 2 else { return finish() }
            return read(offset: file.count, count: min(chunk, nlen + 2 - file.count))
        }
    }

    private mutating func capabilityContainer(_ cc: [UInt8]) -> TerminalAction {
        let stage = "capability container check"
        guard cc.count >= 15 else { return fail(stage, "the CC answer has \(cc.count) data bytes, fewer than 15") }
        guard Int(cc[0]) << 8 | Int(cc[1]) >= 0x0F else { return fail(stage, "CCLEN is below 000F") }
        guard cc[7] == 0x04, cc[8] == 0x06 else { return fail(stage, "the CC's first TLV is \(cc[7...8].hexString), not 04 06") }
        let mle = Int(cc[3]) << 8 | Int(cc[4])
        guard mle >= 0x0F else { return fail(stage, "MLe \(hex16(mle)) is below 000F") }
        guard cc[13] == 0x00 else { return fail(stage, "read access \([cc[13]].hexString) is not 00") }
        chunk = min(mle, 0xFF)
        maxSize = Int(cc[11]) << 8 | Int(cc[12])
        fileID = [cc[9], cc[10]]
        self.stage = .selectNDEFFile
        return .send([0x00, 0xA4, 0x00, 0x0C, 0x02] + fileID)
    }

    private func read(offset: Int, count: Int) -> TerminalAction {
        .send([0x00, 0xB0, UInt8(offset >> 8), UInt8(offset & 0xFF), UInt8(count)])
    }

    private func finish() -> TerminalAction {
        switch TerminalReport.ndef(Array(file.dropFirst(2))) {
        case .success(let report): .finish(.completed(report))
        case .failure(let error): .finish(.failed(stage: "NDEF message", reason: "the message does not parse: \(error)", report: nil))
        }
    }
}
