import ISO7816

/// A payment-style terminal doing the EMV contactless entry point and the reading of the
/// application's records (docs/terminal-models.md §3): SELECT PPSE, choose the AID by priority,
/// SELECT it, GET PROCESSING OPTIONS with the PDOL data, READ RECORD for each AFL entry. It checks
/// the structure only: no cryptogram, no card authentication.
public struct PaymentTerminal: TerminalProgram {
    /// "2PAY.SYS.DDF01", the PPSE (EMV Contactless Book B §3.3).
    public static let ppse: [UInt8] = Array("2PAY.SYS.DDF01".utf8)

    /// The terminal's own data objects, for the PDOL (EMV Book 3 Annex A): TTQ `9F66`, amount
    /// authorised `9F02` (1.00), other amount `9F03`, country `9F1A` (0250), currency `5F2A`
    /// (0978), date `9A` (2026-01-01), type `9C` (00, a purchase), unpredictable number `9F37`.
    /// Test values; anything else the PDOL asks for is sent as zeros.
    public static let terminalData: [UInt32: [UInt8]] = [
        0x9F66: [0x36, 0x00, 0x40, 0x00], 0x9F02: [0x00, 0x00, 0x00, 0x00, 0x01, 0x00],
        0x9F03: [0x00, 0x00, 0x00, 0x00, 0x00, 0x00], 0x9F1A: [0x02, 0x50], 0x5F2A: [0x09, 0x78],
        0x9A: [0x26, 0x01, 0x01], 0x9C: [0x00], 0x9F37: [0x11, 0x22, 0x33, 0x44],
    ]

    private enum Stage { case selectPPSE, selectApplication, gpo, readRecord }

    private struct Candidate { var aid: [UInt8]; var label: String?; var priority: Int?; var order: Int }

    private var stage = Stage.selectPPSE
    private var chosen: Candidate?
    private var aip: [UInt8] = []
    private var records: [(sfi: UInt8, record: UInt8)] = []
    private var nextRecord = 0
    private var items: [String] = []

    /// A terminal with its test data objects (docs/terminal-models.md §3).
    public init() {}

    public mutating func start() -> TerminalAction {
        .send([0x00, 0xA4, 0x04, 0x00, UInt8(Self.ppse.count)] + Self.ppse + [0x00])
    }

    private var stageName: String {
        switch stage {
        case .selectPPSE: "SELECT PPSE"
        case .selectApplication: "SELECT application"
        case .gpo: "GET PROCESSING OPTIONS"
        case .readRecord: "READ RECORD"
        }
    }

    private func fail(_ reason: String) -> TerminalAction {
        .finish(.failed(stage: stageName, reason: reason, report: items.isEmpty ? nil : TerminalReport(summary: "partial", items: items)))
    }

    private static func tlvs(_ data: [UInt8]) -> [BERTLV]? { try? BERTLV.parseAll(data) }

    public mutating func receive(_ response: [UInt8]) -> TerminalAction {
        guard let (data, sw) = splitResponse(response) else { return fail("the R-APDU is shorter than SW1 SW2") }
        guard sw.bytes == [0x90, 0x00] else { return fail(describeStatus(sw)) }
        switch stage {
        case .selectPPSE: return choose(data)
        case .selectApplication: return selected(data)
        case .gpo: return processingOptions(data)
        case .readRecord:
            guard let objects = Self.tlvs(data), let template = objects.first, template.tag == BERTag(0x70) else {
                return fail("the record is not a record template 70")
            }
            let (sfi, number) = records[nextRecord]
            items.append("record \(sfi)/\(number): " + template.children.map(\.tag.description).joined(separator: " "))
            nextRecord += 1
            return nextRecord < records.count ? readRecord() : finish()
        }
    }

    /// The directory of the PPSE's FCI: `6F` → `A5` → `BF0C` → `61` entries (`4F` AID, `50`
    /// label, `87` priority); the lowest non-zero priority first, then unprioritised ones, ties
    /// in directory order (Book B §3.3.3).
    private mutating func choose(_ data: [UInt8]) -> TerminalAction {
        guard let fci = Self.tlvs(data)?.first, fci.tag == BERTag(0x6F),
              let directory = fci.child(BERTag(0xA5))?.child(BERTag(0xBF0C))
        else { return fail("the answer is not an FCI 6F with A5 → BF0C (the PPSE directory)") }
        var candidates: [Candidate] = []
        for (order, entry) in directory.children.enumerated() where entry.tag == BERTag(0x61) {
            guard let aid = entry.child(BERTag(0x4F))?.value, (5...16).contains(aid.count) else { continue }
            let label = entry.child(BERTag(0x50)).map { String(decoding: $0.value, as: UTF8.self) }
            let priority = entry.child(BERTag(0x87))?.value.first.map { Int($0 & 0x0F) }
            candidates.append(Candidate(aid: aid, label: label, priority: priority == 0 ? nil : priority, order: order))
        }
        guard let best = candidates.min(by: { ($0.priority ?? 16, $0.order) < ($1.priority ?? 16, $1.order) }) else {
            return fail("the PPSE directory holds no entry 61 with an AID 4F")
        }
        chosen = best
        items.append("AID \(best.aid.hexString)" + (best.label.map { " (\($0))" } ?? "") + (best.priority.map { ", priority \($0)" } ?? "")
            + " of \(candidates.count) in the PPSE")
        stage = .selectApplication
        return .send([0x00, 0xA4, 0x04, 0x00, UInt8(best.aid.count)] + best.aid + [0x00])
    }

    /// The application's FCI; GET PROCESSING OPTIONS with the PDOL's data in template 83.
    private mutating func selected(_ data: [UInt8]) -> TerminalAction {
        guard let fci = Self.tlvs(data)?.first, fci.tag == BERTag(0x6F) else { return fail("the answer is not an FCI 6F") }
        var pdolData: [UInt8] = []
        if let pdol = fci.find(BERTag(0x9F38))?.value {
            guard let entries = Self.dataObjectList(pdol) else { return fail("the PDOL 9F38 is not a list of tag, length pairs") }
            for (tag, length) in entries {
                let value = Self.terminalData[tag] ?? []
                pdolData += value.count == length ? value : [UInt8](repeating: 0, count: length)
            }
        }
        guard pdolData.count <= 250 else { return fail("the PDOL asks for \(pdolData.count) bytes, more than a short C-APDU carries") }
        stage = .gpo
        let template = [0x83, UInt8(pdolData.count)] + pdolData
        return .send([0x80, 0xA8, 0x00, 0x00, UInt8(template.count)] + template + [0x00])
    }

    /// A data object list (EMV Book 3 §5.4): tag (BER, 1–3 bytes), length (1 byte), repeated;
    /// nil when it ends inside an entry.
    public static func dataObjectList(_ bytes: [UInt8]) -> [(tag: UInt32, length: Int)]? {
        var out: [(tag: UInt32, length: Int)] = []
        var i = 0
        while i < bytes.count {
            var tag = UInt32(bytes[i])
            if bytes[i] & 0x1F == 0x1F {
                repeat {
                    i += 1
                    guard i < bytes.count else { return nil }
                    tag = tag << 8 | UInt32(bytes[i])
                } while bytes[i] & 0x80 != 0
            }
            i += 1
            guard i < bytes.count else { return nil }
            out.append((tag, Int(bytes[i])))
            i += 1
        }
        return out
    }

    /// Format 1 `80 AIP AFL` or format 2 `77 … 82 AIP … 94 AFL` (Book 3 §6.5.8.4).
    private mutating func processingOptions(_ data: [UInt8]) -> TerminalAction {
        guard let template = Self.tlvs(data)?.first else { return fail("the answer is not BER-TLV") }
        var afl: [UInt8]
        switch template.tag {
        case BERTag(0x80):
            guard template.value.count >= 2 else { return fail("format 1 holds no AIP") }
            aip = Array(template.value.prefix(2))
            afl = Array(template.value.dropFirst(2))
        case BERTag(0x77):
            guard let a = template.child(BERTag(0x82))?.value, let f = template.child(BERTag(0x94))?.value else {
                return fail("format 2 lacks the AIP 82 or the AFL 94")
            }
            aip = a
            afl = f
        default:
            return fail("the answer is neither format 1 (80) nor format 2 (77)")
        }
        guard !afl.isEmpty, afl.count % 4 == 0 else { return fail("the AFL has \(afl.count) bytes, not a multiple of 4") }
        for entry in stride(from: 0, to: afl.count, by: 4) {
            let sfi = afl[entry] >> 3
            let (first, last) = (afl[entry + 1], afl[entry + 2])
            guard (1...30).contains(sfi), first >= 1, last >= first else {
                return fail("AFL entry \(afl[entry..<entry + 4].hexString) is not SFI 1…30 with records first ≤ last")
            }
            for record in first...last { records.append((sfi, record)) }
        }
        items.append("AIP \(aip.hexString), AFL \(afl.hexString)")
        stage = .readRecord
        return readRecord()
    }

    private func readRecord() -> TerminalAction {
        let (sfi, record) = records[nextRecord]
        return .send([0x00, 0xB2, record, sfi << 3 | 0x04, 0x00])
    }

    private func finish() -> TerminalAction {
        let aid = chosen.map { $0.aid.hexString } ?? "?"
        return .finish(.completed(TerminalReport(summary: "payment application \(aid): \(records.count) record(s) read", items: items)))
    }
}

/// An access-control reader (docs/terminal-models.md §4): SELECT the application (its FCI, when
/// the answer has data, parsed as BER-TLV: a 6F template, DF name 84 = the AID), GET CHALLENGE
/// (8 bytes), INTERNAL AUTHENTICATE over the terminal's challenge (the card proves itself: any
/// data and 90 00), EXTERNAL AUTHENTICATE (the terminal proves itself: 90 00 grants). The data sent
/// is fixed: a declarative credential answers by rule and computes no cryptogram.
public struct AccessControlReader: TerminalProgram {
    /// The application's AID.
    public let aid: [UInt8]
    /// The terminal's challenge in INTERNAL AUTHENTICATE (test value).
    public static let terminalChallenge: [UInt8] = [0xA1, 0xA2, 0xA3, 0xA4, 0xA5, 0xA6, 0xA7, 0xA8]

    private enum Stage { case select, challenge, internalAuthenticate, externalAuthenticate }
    private var stage = Stage.select
    private var cardChallenge: [UInt8] = []
    private var items: [String] = []

    /// - Parameter aid: default the example badge's `F0 53 42 41 44 47 45`.
    public init(aid: [UInt8] = [0xF0, 0x53, 0x42, 0x41, 0x44, 0x47, 0x45]) { self.aid = aid }

    public mutating func start() -> TerminalAction {
        .send([0x00, 0xA4, 0x04, 0x00, UInt8(aid.count)] + aid + [0x00])
    }

    private var stageName: String {
        switch stage {
        case .select: "SELECT application"
        case .challenge: "GET CHALLENGE"
        case .internalAuthenticate: "INTERNAL AUTHENTICATE"
        case .externalAuthenticate: "EXTERNAL AUTHENTICATE"
        }
    }

    public mutating func receive(_ response: [UInt8]) -> TerminalAction {
        guard let (data, sw) = splitResponse(response) else {
            return .finish(.failed(stage: stageName, reason: "the R-APDU is shorter than SW1 SW2", report: nil))
        }
        guard sw.bytes == [0x90, 0x00] else {
            let denied = stage == .externalAuthenticate ? "access denied: " : ""
            return .finish(.failed(stage: stageName, reason: denied + describeStatus(sw), report: nil))
        }
        switch stage {
        case .select:
            // The answer's data, when there is any, is an FCI (ISO/IEC 7816-4 §11.1): parsed as
            // BER-TLV the way a reader does, one 6F template whose DF name 84, if present, is the
            // AID selected.
            if !data.isEmpty {
                guard let fci = try? BERTLV(parsing: data), fci.tag == BERTag(0x6F) else {
                    return .finish(.failed(stage: stageName, reason: "the SELECT answer's data \(data.hexString) is not one well-formed FCI template 6F (BER-TLV, ISO/IEC 7816-4 §11.1)", report: nil))
                }
                if let name = fci.child(BERTag(0x84)), name.value != aid {
                    return .finish(.failed(stage: stageName, reason: "the FCI's DF name 84 is \(name.value.hexString), not the AID selected \(aid.hexString)", report: nil))
                }
                items.append("FCI \(data.hexString)")
            }
            stage = .challenge
            return .send([0x00, 0x84, 0x00, 0x00, 0x08])
        case .challenge:
            guard data.count == 8 else {
                return .finish(.failed(stage: stageName, reason: "the challenge has \(data.count) bytes, not 8", report: nil))
            }
            cardChallenge = data
            items.append("card challenge \(data.hexString)")
            stage = .internalAuthenticate
            return .send([0x00, 0x88, 0x00, 0x00, 0x08] + Self.terminalChallenge + [0x00])
        case .internalAuthenticate:
            guard !data.isEmpty else {
                return .finish(.failed(stage: stageName, reason: "the card sent no authentication data", report: nil))
            }
            items.append("card authentication data \(data.hexString)")
            stage = .externalAuthenticate
            // The terminal's answer over the card's challenge: a fixed transform (no key here).
            return .send([0x00, 0x82, 0x00, 0x00, 0x08] + cardChallenge.map { $0 ^ 0x5A })
        case .externalAuthenticate:
            items.append("access granted")
            return .finish(.completed(TerminalReport(summary: "access granted by application \(aid.hexString)", items: items)))
        }
    }
}
