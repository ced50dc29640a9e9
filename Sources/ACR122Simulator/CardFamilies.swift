import ISO7816

/// A passive target of another family than ISO/IEC 14443-A: a FeliCa card (212 or 424 kbit/s), an
/// ISO/IEC 14443-B card or a Topaz/Jewel tag, as InListPassiveTarget finds it (PN532 UM0701-02
/// §7.3.5, BrTy 01–04; docs/acr122-clones.md §4).
///
/// Discovery is modelled: InListPassiveTarget with the matching BrTy lists the target with its
/// target data, and the ACR122U's automatic polling reports it to PC/SC with ``pcscATR``, the ATR
/// an ACS reader builds for it. InDataExchange to a listed target reaches ``answer(_:)``: FeliCa
/// Request Response and Read Without Encryption, Topaz/Jewel RID and READ, and an ISO/IEC 14443-B
/// card's C-APDUs (docs/acr122-clones.md §4b); anything else stays mute.
public final class PassiveTargetPeer: FieldPeer {
    /// The family and the bytes it answers discovery with.
    public enum Technology: Sendable, Hashable {
        /// FeliCa (JIS X 6319-4): NFCID2 (IDm, 8 bytes), PAD (PMm, 8 bytes), system code (2 bytes).
        /// `highSpeed`: answers at 424 kbit/s (BrTy 02) instead of 212 kbit/s (BrTy 01).
        case felica(idm: [UInt8], pmm: [UInt8], systemCode: [UInt8], highSpeed: Bool)
        /// ISO/IEC 14443-B: ATQB (12 bytes: 50, PUPI(4), application data(4), protocol info(3))
        /// and the ATTRIB answer (its first byte MBLI/CID, then any higher-layer response).
        case typeB(atqb: [UInt8], attribResponse: [UInt8])
        /// Topaz/Jewel (NFC Forum Type 1): SENS_RES (2 bytes as the PN532 gives them) and JEWELID
        /// (4 bytes, UID0–UID3).
        case jewel(sensRes: [UInt8], jewelID: [UInt8])
    }

    /// The family and its discovery bytes.
    public let technology: Technology
    /// FeliCa: the 16-byte blocks of service 000B (an NFC Forum Type 3 Tag's NDEF service), block
    /// 0 first. Topaz/Jewel: the tag's memory, byte address 0 first (block 0 = UID, …).
    public let memory: [UInt8]
    /// Topaz/Jewel: HR0 HR1, the header ROM RID returns (`11 48` by default: HR0 1x marks an NFC
    /// Forum Type 1 Tag, x1 its static memory; the HR1 value is an assumption, (U)).
    public let headerROM: [UInt8]
    /// ISO/IEC 14443-B: the card's answer to each C-APDU (R-APDU with SW1 SW2); nil for a card
    /// without ISO-DEP, which stays mute.
    private let apduHandler: (@Sendable ([UInt8]) -> [UInt8])?

    /// A target of `technology`, to place in a ``SimulatedField``.
    /// - Parameters:
    ///   - technology: the card family: FeliCa (212 or 424 kbit/s), ISO/IEC 14443-B or Topaz/Jewel.
    ///   - memory: FeliCa: service 000B's blocks, 16 bytes each (a shorter last block is padded
    ///     with 00); Topaz/Jewel: the memory bytes.
    ///   - headerROM: Topaz/Jewel: HR0 HR1.
    ///   - apdu: ISO/IEC 14443-B: the card's application (C-APDU → R-APDU).
    public init(
        _ technology: Technology, memory: [UInt8] = [], headerROM: [UInt8] = [0x11, 0x48],
        apdu: (@Sendable ([UInt8]) -> [UInt8])? = nil
    ) {
        self.technology = technology
        if case .felica = technology, memory.count % 16 != 0 {
            self.memory = memory + [UInt8](repeating: 0, count: 16 - memory.count % 16)
        } else {
            self.memory = memory
        }
        self.headerROM = headerROM
        self.apduHandler = apdu
    }

    /// Whether InDataExchange carries C-APDUs to it (ISO-DEP, set up by the PN532 itself): an
    /// ISO/IEC 14443-B card with an application.
    var speaksISODEP: Bool {
        if case .typeB = technology { return apduHandler != nil }
        return false
    }

    /// The target's answer to the data of an InDataExchange (PN532 UM0701-02 §7.3.8), nil when it
    /// stays mute (the PN532 then reports status 01, a timeout):
    /// - FeliCa (JIS X 6319-4; the frame carries its own length byte, as libnfc sends it):
    ///   Request Response `0A 04 IDm` → `0B 05 IDm 00` (mode 0); Read Without Encryption
    ///   `LEN 06 IDm NS SC(2, LSB first)… NB BlockList` → `LEN 07 IDm 00 00 NB Data(16 × NB)`, or
    ///   `LEN 07 IDm FF A8` for a block beyond the memory, `FF A6` for a service other than 000B
    ///   (status flag values (U)). A frame whose LEN is wrong, or for another IDm, gets no answer.
    /// - Topaz/Jewel (NFC Forum Type 1 Tag, as the PN532 carries it): RID `78 …` → HR0 HR1
    ///   JEWELID; READ `01 ADD` → the byte at ADD (libnfc's jewel.h layouts).
    /// - ISO/IEC 14443-B: the C-APDU to the application, its R-APDU back.
    public func answer(_ frame: [UInt8]) -> [UInt8]? {
        switch technology {
        case .felica(let idm, _, _, _): return felicaAnswer(frame, idm: idm)
        case .jewel(_, let jewelID):
            guard let command = frame.first else { return nil }
            switch command {
            case 0x78: return headerROM + jewelID
            case 0x01:
                guard frame.count == 2, Int(frame[1]) < memory.count else { return nil }
                return [memory[Int(frame[1])]]
            default: return nil
            }
        case .typeB: return apduHandler?(frame)
        }
    }

    /// FeliCa Request Response (04) and Read Without Encryption (06) on service 000B.
    private func felicaAnswer(_ frame: [UInt8], idm: [UInt8]) -> [UInt8]? {
        guard frame.count >= 10, Int(frame[0]) == frame.count, Array(frame[2..<10]) == idm else { return nil }
        func framed(_ body: [UInt8]) -> [UInt8] { [UInt8(body.count + 1)] + body }
        switch frame[1] {
        case 0x04:
            guard frame.count == 10 else { return nil }
            return framed([0x05] + idm + [0x00])
        case 0x06:
            var index = 10
            guard index < frame.count else { return nil }
            let serviceCount = Int(frame[index])
            index += 1
            guard serviceCount >= 1, frame.count >= index + 2 * serviceCount + 1 else { return nil }
            let services = (0..<serviceCount).map { UInt16(frame[index + 2 * $0]) | UInt16(frame[index + 2 * $0 + 1]) << 8 }
            index += 2 * serviceCount
            let blockCount = Int(frame[index])
            index += 1
            var data: [UInt8] = []
            var error: UInt8?
            for _ in 0..<blockCount {
                guard index < frame.count else { return nil }
                let element = frame[index]
                let number: Int
                if element & 0x80 != 0 {
                    guard index + 1 < frame.count else { return nil }
                    number = Int(frame[index + 1])
                    index += 2
                } else {
                    guard index + 2 < frame.count else { return nil }
                    number = Int(frame[index + 1]) | Int(frame[index + 2]) << 8
                    index += 3
                }
                let service = Int(element & 0x0F)
                if error != nil { continue }
                if service >= services.count || services[service] != 0x000B {
                    error = 0xA6
                } else if number >= memory.count / 16 {
                    error = 0xA8
                } else {
                    data += memory[(number * 16)..<(number * 16 + 16)]
                }
            }
            guard index == frame.count else { return nil }
            if let error { return framed([0x07] + idm + [0xFF, error]) }
            return framed([0x07] + idm + [0x00, 0x00, UInt8(blockCount)] + data)
        default:
            return nil
        }
    }

    /// What Get Data `FF CA 00 00` returns for it: the IDm (FeliCa), the PUPI (ISO/IEC 14443-B),
    /// the JEWELID (Topaz/Jewel).
    public var identifier: [UInt8] {
        switch technology {
        case .felica(let idm, _, _, _): idm
        case .typeB(let atqb, _): Array(atqb.dropFirst().prefix(4))
        case .jewel(_, let id): id
        }
    }

    /// "FeliCa 212 kbit/s card IDm", "ISO 14443-B card PUPI" or "Topaz/Jewel tag JEWELID".
    public var peerDescription: String {
        switch technology {
        case .felica(let idm, _, _, let fast): "FeliCa \(fast ? 424 : 212) kbit/s card \(idm.hexString)"
        case .typeB(let atqb, _): "ISO 14443-B card \(Array(atqb.dropFirst().prefix(4)).hexString)"
        case .jewel(_, let id): "Topaz/Jewel tag \(id.hexString)"
        }
    }

    /// The InListPassiveTarget target data for `brty` (without Tg), or nil when this target does
    /// not answer that modulation or the initiator data:
    /// - BrTy 01/02 with the polling payload `00 SC SC RC TSN` (UM0701-02 §7.3.5): `POL_RES length,
    ///   01, NFCID2(8), PAD(8) [, system code(2) when RC is 01]`; a system code other than FF FF or
    ///   the card's own gets no answer.
    /// - BrTy 03 with `AFI [method]`: `ATQB(12), ATTRIB_RES length, ATTRIB_RES`.
    /// - BrTy 04 (no initiator data): `SENS_RES(2), JEWELID(4)`.
    public func targetData(brty: UInt8, initiatorData: [UInt8]) -> [UInt8]? {
        switch (technology, brty) {
        case (.felica(let idm, let pmm, let systemCode, let fast), 0x01), (.felica(let idm, let pmm, let systemCode, let fast), 0x02):
            guard fast == (brty == 0x02), initiatorData.count == 5, initiatorData[0] == 0x00 else { return nil }
            let asked = Array(initiatorData[1...2])
            guard asked == [0xFF, 0xFF] || asked == systemCode else { return nil }
            let withCode = initiatorData[3] == 0x01
            var response: [UInt8] = [0x01] + idm + pmm
            if withCode { response += systemCode }
            return [UInt8(response.count + 1)] + response
        case (.typeB(let atqb, let attrib), 0x03):
            guard (1...2).contains(initiatorData.count) else { return nil }
            let afi = initiatorData[0]
            let cardAFI = atqb.count > 5 ? atqb[5] : 0x00
            guard afi == 0x00 || afi == cardAFI else { return nil }
            return atqb + [UInt8(attrib.count)] + attrib
        case (.jewel(let sensRes, let id), 0x04):
            guard initiatorData.isEmpty else { return nil }
            return sensRes + id
        default:
            return nil
        }
    }

    /// The ATR an ACS reader builds for this target (ACS's ACR122L user manual §6.1, the format of
    /// ACR122U API v2.04 §3): a storage-card ATR `3B 8F 80 01 80 4F 0C A0 00 00 03 06 SS C0 C1
    /// 00 00 00 00 TCK` for FeliCa (SS 11, card name F0 11 at 212 kbit/s, F0 12 at 424) and
    /// Topaz/Jewel (SS 03, card name F0 04); for an ISO/IEC 14443-B card `3B 8C 80 01` + the
    /// ATQB's 12 bytes + TCK (the manual's ST19XRC8E example).
    public var pcscATR: [UInt8] {
        func atr(_ historical: [UInt8]) -> [UInt8] {
            var bytes: [UInt8] = [0x3B, 0x80 | UInt8(historical.count), 0x80, 0x01] + historical
            bytes.append(bytes.dropFirst().reduce(0, ^))
            return bytes
        }
        func storage(standard: UInt8, name: [UInt8]) -> [UInt8] {
            atr([0x80, 0x4F, 0x0C, 0xA0, 0x00, 0x00, 0x03, 0x06, standard] + name + [0x00, 0x00, 0x00, 0x00])
        }
        switch technology {
        case .felica(_, _, _, let fast): return storage(standard: 0x11, name: [0xF0, fast ? 0x12 : 0x11])
        case .jewel: return storage(standard: 0x03, name: [0xF0, 0x04])
        case .typeB(let atqb, _): return atr(Array(atqb.prefix(12)))
        }
    }
}

extension DeviceState {
    /// The target of another family automatic polling reports when no ISO/IEC 14443-A card
    /// answers (PICC operating parameter bit 7 with the family's bit: 1 Type B, 2 Topaz, 3 FeliCa
    /// 212, 4 FeliCa 424; ACR122U API v2.04 §6.3), or nil.
    func polledOtherFamily(world: FieldWorld) -> ActivatedPeer? {
        for peer in world.peers {
            guard let target = peer as? PassiveTargetPeer else { continue }
            let bit: UInt8
            switch target.technology {
            case .typeB: bit = 0x02
            case .jewel: bit = 0x04
            case .felica(_, _, _, let fast): bit = fast ? 0x10 : 0x08
            }
            if piccParameter & bit != 0 { return .other(target) }
        }
        return nil
    }

    /// InListPassiveTarget for BrTy 01–04 (`MaxTg BrTy InitiatorData`): the ``PassiveTargetPeer``s
    /// that answer, at most MaxTg, as `NbTg [Tg TargetData]…`; polls until one answers or `limit`
    /// (no target: NbTg 00) or the MCU timeout passes. The targets listed are the ones
    /// InDataExchange then reaches (``PassiveTargetPeer/answer(_:)``).
    func inListOtherFamily(
        maxTargets: Int, brty: UInt8, initiatorData: [UInt8], limit: Deadline?, world: FieldWorld,
        lock: ConditionLock<FieldWorld>, reply: ([UInt8]) -> ChipOutcome
    ) -> ChipOutcome {
        var answers: [(peer: PassiveTargetPeer, data: [UInt8])] = []
        let outcome = wait(lock: lock, limit: limit) {
            answers = world.peers.compactMap { peer in
                (peer as? PassiveTargetPeer).flatMap { target in
                    target.targetData(brty: brty, initiatorData: initiatorData).map { (target, $0) }
                }
            }
            return !answers.isEmpty
        }
        switch outcome {
        case .satisfied: break
        case .limit: return reply([0x00])
        case .mcuTimeout: return .failed
        case .driverTimeout: return .driverTimeout
        }
        var bytes: [UInt8] = []
        var listed: [ListedTarget] = []
        for (index, answer) in answers.prefix(maxTargets).enumerated() {
            var target = activate(.other(answer.peer), number: UInt8(index + 1), world: world)
            target.isoDEP = answer.peer.speaksISODEP
            listed.append(target)
            bytes += [UInt8(index + 1)] + answer.data
        }
        role = .initiator(listed)
        lock.broadcast()
        return reply([UInt8(min(answers.count, maxTargets))] + bytes)
    }
}
