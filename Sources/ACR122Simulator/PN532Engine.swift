import ISO7816

/// The PN532 behind the MCU (PN532 UM0701-02 §7; docs/acr122-pn532.md §4, §5).
extension DeviceState {
    /// The result of an APDU exchange with an activated target.
    enum ExchangeOutcome {
        case answer([UInt8])
        /// A PN532 status error (e.g. 01 timeout, 14 MIFARE authentication).
        case status(UInt8)
        case mcuTimeout
        case driverTimeout
        /// The card left the field during the exchange (``ISO14443_4Card/leavesAfter``).
        case cardLost
    }

    func runChip(_ frame: [UInt8], world: FieldWorld, lock: ConditionLock<FieldWorld>) -> ChipOutcome {
        guard frame.count >= 2, frame[0] == 0xD4, frame.count <= frameLimit else { return .failed }
        let command = frame[1]
        let p = Array(frame[2...])
        func reply(_ data: [UInt8]) -> ChipOutcome { .frame([0xD5, command &+ 1] + data) }
        switch command {
        case 0x00: // Diagnose
            return diagnose(p, world: world).map(reply) ?? .failed
        case 0x02: // GetFirmwareVersion
            guard p.isEmpty else { return .failed }
            return reply(personality.pn532FirmwareVersion)
        case 0x04: // GetGeneralStatus
            guard p.isEmpty else { return .failed }
            return reply(generalStatus(world: world))
        case 0x06: // ReadRegister
            guard !p.isEmpty, p.count % 2 == 0 else { return .failed }
            var values: [UInt8] = []
            for i in stride(from: 0, to: p.count, by: 2) {
                values.append(registerValue(UInt16(p[i]) << 8 | UInt16(p[i + 1])))
            }
            return reply(values)
        case 0x08: // WriteRegister
            guard !p.isEmpty, p.count % 3 == 0 else { return .failed }
            for i in stride(from: 0, to: p.count, by: 3) {
                registers[UInt16(p[i]) << 8 | UInt16(p[i + 1])] = p[i + 2]
            }
            return reply([])
        case 0x12: // SetParameters
            guard p.count == 1 else { return .failed }
            flags = p[0]
            return reply([])
        case 0x14: // SAMConfiguration
            guard (1...3).contains(p.count), (0x01...0x04).contains(p[0]) else { return .failed }
            return reply([])
        case 0x32: // RFConfiguration
            return rfConfiguration(p, world: world).map(reply) ?? .failed
        case 0x4A:
            return inListPassiveTarget(p, world: world, lock: lock, reply: reply)
        case 0x60:
            return inAutoPoll(p, world: world, lock: lock, reply: reply)
        case 0x40:
            return inDataExchange(p, world: world, lock: lock, reply: reply)
        case 0x42:
            return reply(inCommunicateThru(p, world: world))
        case 0x44, 0x52, 0x54:
            guard p.count == 1 else { return .failed }
            return reply([deselectReleaseSelect(command, target: p[0], world: world)])
        case 0x8C:
            return tgInitAsTarget(p, world: world, lock: lock, reply: reply)
        case 0x86:
            guard p.isEmpty else { return .failed }
            return tgGetData(world: world, lock: lock, reply: reply)
        case 0x8E:
            return reply([tgSetData(p, world: world)])
        case 0x94: // TgSetMetaData: chaining before TgSetData.
            guard case .target(let t) = role, t.isActivated else { return reply([targetRoleError()]) }
            t.metaData += p
            return reply([0x00])
        case 0x8A: // TgGetTargetStatus: state (00 free, 01 activated, 02 released), BRit (106/106).
            guard p.isEmpty else { return .failed }
            guard case .target(let t) = role else { return reply([0x00, 0x00]) }
            switch t.phase {
            case .activatedByReader, .activatedByTerminal: return reply([0x01, 0x00])
            case .released: return reply([0x02, 0x00])
            case .waiting: return reply([0x00, 0x00])
            }
        case 0x88, 0x90:
            // TgGetInitiatorCommand / TgResponseToInitiator (UM0701-02 §7.3.15, §7.3.18): modelled
            // for a Type 4A emulation whose host runs ISO-DEP (the raw blocks, docs/pn532-uart.md
            // §10), as TgGetData / TgSetData carry them; otherwise not modelled.
            guard case .target(let t) = role, t.hostRunsISODEP else { return reply([targetRoleError()]) }
            if command == 0x88 {
                guard p.isEmpty else { return .failed }
                return tgGetData(world: world, lock: lock, reply: reply)
            }
            return reply([tgSetData(p, world: world)])
        default:
            // An unknown command: the PN532 answers a syntax error frame; the MCU reports 63 00 (U).
            return .failed
        }
    }

    /// The status for a target command outside an activated target: 27 (not acceptable now) while
    /// the chip acts as initiator, else 25 (invalid state: not activated).
    func targetRoleError() -> UInt8 {
        if case .initiator(let targets) = role, !targets.isEmpty { return 0x27 }
        if case .target(let t) = role, case .released = t.phase { return 0x29 }
        return 0x25
    }

    /// `Err Field NbTg [Tg BrRx BrTx Type]… SAM` (UM0701-02 §7.2.3): each listed target at 106 kbit/s
    /// both ways (BrRx = BrTx = 00) with modulation type 00 (ISO/IEC 14443 or MIFARE); the SAM
    /// status byte is 80, as the ACR122's own examples show with and without a target
    /// (`D5 05 00 00 00 80`; docs/acr122-pn532.md §4b).
    func generalStatus(world: FieldWorld) -> [UInt8] {
        let externalField = world.peers.contains { $0 is ExternalTerminal }
            || world.devices.contains { $0 !== self && $0.rfOn }
        var bytes: [UInt8] = [lastError, externalField ? 0x01 : 0x00]
        if case .initiator(let targets) = role {
            let listed = targets.prefix(2)
            bytes.append(UInt8(listed.count))
            for t in listed { bytes += [t.number, 0x00, 0x00, 0x00] }
        } else {
            bytes.append(0x00)
        }
        bytes.append(Self.samStatus)
        return bytes
    }

    func rfConfiguration(_ p: [UInt8], world: FieldWorld) -> [UInt8]? {
        guard let item = p.first else { return nil }
        let data = Array(p.dropFirst())
        switch item {
        case 0x01:
            guard data.count == 1 else { return nil }
            let on = data[0] & 0x01 != 0
            if !on && piccParameter & 0x80 == 0 { idleRegisters = Self.registersAfterRFOffWithoutPolling }
            if on != rfOn {
                rfOn = on
                if !on { haltedPeers = [] }
                world.record(on ? .fieldOn : .fieldOff, reader: name)
                if !on, case .initiator = role { leaveRoles(world: world) }
            }
        case 0x02:
            guard data.count == 3 else { return nil }
        case 0x04:
            guard data.count == 1 else { return nil }
            maxRetryCOM = data[0]
        case 0x05:
            guard data.count == 3 else { return nil }
            (maxRetryATR, maxRetryPSL, maxRetryPassive) = (data[0], data[1], data[2])
        case 0x0A, 0x0B, 0x0C, 0x0D:
            // Analog settings: accepted and ignored.
            guard !data.isEmpty else { return nil }
        default:
            return nil
        }
        return []
    }

    // MARK: Initiator

    /// InListPassiveTarget `MaxTg BrTy [InitiatorData]` → `NbTg [Tg SENS_RES SEL_RES len NFCID1 [ATS]]…`
    /// (UM0701-02 §7.3.5). SENS_RES goes most significant byte first. Blocks for
    /// (MxRtyPassiveActivation + 1) attempts, or until a target or the MCU timeout with FF.
    func inListPassiveTarget(
        _ p: [UInt8], world: FieldWorld, lock: ConditionLock<FieldWorld>, reply: ([UInt8]) -> ChipOutcome
    ) -> ChipOutcome {
        guard p.count >= 2, p[0] == 1 || p[0] == 2 else { return .failed }
        let maxTargets = Int(p[0])
        let typeA = p[1] == 0x00
        let uid = typeA ? Array(p.dropFirst(2)) : []
        guard !typeA || [0, 4, 7, 10].contains(uid.count) else { return .failed }
        startPolling(world: world)
        var limit: Deadline?
        if maxRetryPassive != 0xFF {
            let attempts = Int(maxRetryPassive) + 1
            limit = clock.deadline(after: personality.passiveActivationAttempt * attempts)
        }
        if (0x01...0x04).contains(p[1]) {
            // FeliCa 212/424, ISO/IEC 14443-B, Topaz/Jewel (CardFamilies.swift).
            return inListOtherFamily(
                maxTargets: maxTargets, brty: p[1], initiatorData: Array(p.dropFirst(2)), limit: limit,
                world: world, lock: lock, reply: reply)
        }
        var found: [ActivatedPeer] = []
        let outcome = wait(lock: lock, limit: limit) {
            guard typeA else { return false }
            found = candidates(world: world, uid: uid).filter { !isHalted($0) }
            return !found.isEmpty
        }
        switch outcome {
        case .satisfied: break
        case .limit: return reply([0x00])
        case .mcuTimeout: return .failed
        case .driverTimeout: return .driverTimeout
        }
        var targets: [ListedTarget] = []
        for (index, peer) in found.prefix(maxTargets).enumerated() {
            targets.append(activate(peer, number: UInt8(index + 1), world: world))
        }
        role = .initiator(targets)
        lock.broadcast()
        // An emulation whose host runs ISO-DEP: the ATS is the host's answer to the RATS.
        for target in targets where target.isoDEP {
            guard case .emulation(let other, _) = target.peer, case .target(let t) = other.role, t.hostRunsISODEP else { continue }
            let atsOutcome = wait(lock: lock) { t.outbox != nil || !t.isActivated }
            switch atsOutcome {
            case .satisfied:
                guard let ats = t.outbox else { return reply([0x00]) }
                t.outbox = nil
                t.hostATS = ats
            case .limit: return reply([0x00])
            case .mcuTimeout: return .failed
            case .driverTimeout: return .driverTimeout
            }
        }
        return reply([UInt8(targets.count)] + targets.flatMap(targetDescription))
    }

    /// `Tg SENS_RES(2, MSB first) SEL_RES NFCIDLength NFCID1 [ATS incl. TL]`.
    func targetDescription(_ target: ListedTarget) -> [UInt8] {
        let identity: TypeAIdentity
        var ats: [UInt8]?
        switch target.peer {
        case .card(let c):
            identity = c.identity
            ats = c.ats
        case .tag(let t):
            identity = t.identity
        case .other:
            return []
        case .emulation(let other, _):
            guard case .target(let t) = other.role else { return [] }
            identity = TypeAIdentity(uid: t.uid, atqa: t.atqa, sak: t.sak)
            ats = t.hostATS ?? t.ats
        }
        var bytes: [UInt8] = [target.number] + sensRes(identity.atqa) + [identity.sak, UInt8(identity.uid.count)] + identity.uid
        if target.isoDEP, let ats { bytes += ats }
        return bytes
    }

    /// InDataExchange `Tg data` → `Status data` (UM0701-02 §7.3.8), with MI chaining both ways.
    func inDataExchange(
        _ p: [UInt8], world: FieldWorld, lock: ConditionLock<FieldWorld>, reply: ([UInt8]) -> ChipOutcome
    ) -> ChipOutcome {
        guard let tg = p.first else { return .failed }
        let number = tg & 0x3F
        let more = tg & 0x40 != 0
        guard case .initiator(var targets) = role,
              let index = targets.firstIndex(where: { $0.number == number && !$0.deselected }) else {
            return reply([0x27])
        }
        var data = Array(p.dropFirst())
        // The rest of a long answer: sent when the host asks again with no data.
        if data.isEmpty, !more, !targets[index].pendingAnswer.isEmpty {
            let out = chunk(&targets[index].pendingAnswer)
            role = .initiator(targets)
            return reply(out)
        }
        if more {
            targets[index].commandChain += data
            role = .initiator(targets)
            return reply([0x00])
        }
        data = targets[index].commandChain + data
        targets[index].commandChain = []
        let outcome = exchange(with: &targets[index], data, world: world, lock: lock)
        var result: ChipOutcome
        switch outcome {
        case .answer(let answer):
            targets[index].pendingAnswer = answer
            result = reply(chunk(&targets[index].pendingAnswer))
        case .status(let status):
            lastError = status
            result = reply([status])
        case .mcuTimeout:
            result = .failed
        case .driverTimeout:
            result = .driverTimeout
        case .cardLost:
            // The target left mid-exchange: the PN532 times out waiting for it (status 01).
            lastError = 0x01
            result = reply([0x01])
        }
        if case .initiator = role { role = .initiator(targets) }
        return result
    }

    /// Takes one frame's worth of `pending`: `status data`, status 40 (MI) when more remains.
    func chunk(_ pending: inout [UInt8]) -> [UInt8] {
        let part = Array(pending.prefix(Self.frameDataLimit))
        pending.removeFirst(part.count)
        return [pending.isEmpty ? 0x00 : 0x40] + part
    }

    /// Sends one command to an activated target and waits for its answer.
    func exchange(
        with target: inout ListedTarget, _ command: [UInt8], world: FieldWorld, lock: ConditionLock<FieldWorld>
    ) -> ExchangeOutcome {
        guard stillPresent(target.peer, world: world) else { return .status(0x01) }
        switch target.peer {
        case .card(let card):
            guard target.isoDEP else { return .status(0x01) }
            guard let answer = card.answer(command) else {
                world.removePeer(card)
                return .cardLost
            }
            return .answer(answer)
        case .tag(let tag):
            guard let answer = onAir(tag, command, world: world) else { return .status(mifareAuthentication(tag, command)) }
            return Self.outcome(of: answer)
        case .other(let other):
            // FeliCa, Topaz/Jewel and ISO/IEC 14443-B commands (CardFamilies.swift); mute: timeout.
            guard let answer = other.answer(command) else { return .status(0x01) }
            return .answer(answer)
        case .emulation(let other, _):
            guard target.isoDEP, case .target(let t) = other.role else { return .status(0x01) }
            if t.hostRunsISODEP {
                // The chip's ISO-DEP as initiator: one I-block without CID or NAD (ISO/IEC 14443-4 §7.1).
                t.inbox = [0x02 | t.readerBlockNumber] + command
            } else {
                t.inbox = command
            }
            t.outbox = nil
            t.pendingCommand = []
            lock.broadcast()
            let outcome = wait(lock: lock) {
                t.outbox != nil || !self.stillPresent(target.peer, world: world)
            }
            switch outcome {
            case .satisfied:
                guard let answer = t.outbox else { return .status(0x01) }
                t.outbox = nil
                t.commandOutstanding = false
                guard t.hostRunsISODEP else { return .answer(answer) }
                // The host's block: an I-block of this block number carries the R-APDU; anything
                // else (chaining, S(WTX)) is not modelled and reads as a protocol error (status 29
                // would be a release; 13 is "invalid received frame" as for a bad block).
                guard let pcb = answer.first, pcb & 0xE2 == 0x02, pcb & 0x1C == 0, pcb & 0x01 == t.readerBlockNumber else {
                    return .status(0x13)
                }
                t.readerBlockNumber ^= 1
                return .answer(Array(answer.dropFirst()))
            case .limit, .mcuTimeout: return .mcuTimeout
            case .driverTimeout: return .driverTimeout
            }
        }
    }

    /// How the PN532 reports a storage card's answer inside InDataExchange (UM0701-02 §7.3.8):
    /// data → status 00 + data; the 4-bit ACK → status 00 without data; a 4-bit NAK → status 13
    /// (decision, after libnfc's mifare.c, which reads a NAK as "Invalid received frame",
    /// EINVRXFRAM 13h; the manual names no code for it); a failed MIFARE authentication → 14;
    /// no answer → 01 (timeout).
    static func outcome(of answer: TagAnswer) -> ExchangeOutcome {
        switch answer {
        case .data(let data): .answer(data)
        case .ack: .answer([])
        case .nak: .status(0x13)
        case .mute: .status(0x01)
        case .authenticationFailed: .status(0x14)
        case .left: .cardLost
        }
    }

    /// InCommunicateThru `raw` → `Status data` (UM0701-02 §7.3.9) to the first selected target.
    /// An ISO/IEC 14443-4 card activated with a raw RATS answers ISO-DEP blocks
    /// (``rawISODEPBlock(_:hostGetsCRC:world:)``); a FeliCa or Topaz/Jewel target answers as
    /// through InDataExchange; otherwise only a Type 2 tag with memory answers (READ, WRITE,
    /// GET_VERSION).
    ///
    /// A tag's 4-bit answer (the ACK Ah of a WRITE, a NAK) is not a frame with a CRC_A, so with
    /// the chip checking CRCs (RxCRCEn, RxMode 6303h bit 7, set) the PN532 reports it as a CRC
    /// error, status 02: `D4 42 A2 05 …` → `D5 43 02` (nfcpy's pn53x driver clears RxCRCEn for
    /// Type 2 tags for that reason; docs/acr122-pn532.md §4b, "4-bit answers"). With RxCRCEn
    /// cleared the four bits come as one data byte, `D5 43 00 0A`, and Control (633Ch) bits 2–0,
    /// RxLastBits, read 4, which is how libnfc's `pn53x_initiator_transceive_bits` counts the
    /// bits; a whole-byte answer leaves RxLastBits 0.
    /// A MIFARE Classic card stays mute (01): the PN532 runs Crypto1 only inside InDataExchange.
    /// Every other target, and no target, gives 01 as before.
    ///
    /// CRC handling follows the CIU registers the host writes (TxMode 6302h / RxMode 6303h bit 7,
    /// TxCRCEn / RxCRCEn: what libnfc's `chips/pn53x.c` writes for NP_HANDLE_CRC;
    /// docs/storage-card-dumps.md §4): with TxCRCEn cleared the host sends the CRC_A itself as the
    /// last two bytes (checked and removed; a wrong one leaves the tag mute, as a tag ignores a
    /// frame with a bad CRC), with RxCRCEn cleared the tag's data answer comes with its CRC_A.
    /// Until the host writes a register the value automatic polling left holds: CRC on
    /// (``registersAfterAutomaticPolling``).
    func inCommunicateThru(_ raw: [UInt8], world: FieldWorld) -> [UInt8] {
        let hostSendsCRC = registerValue(0x6302) & 0x80 == 0
        let hostGetsCRC = registerValue(0x6303) & 0x80 == 0
        if let answer = rawAnticollision(raw, hostSendsCRC: hostSendsCRC, hostGetsCRC: hostGetsCRC, world: world) {
            return answer
        }
        var frame = raw
        if hostSendsCRC {
            guard frame.count >= 3, Array(frame.suffix(2)) == Self.crcA(Array(frame.dropLast(2))) else {
                lastError = 0x01
                return [0x01]
            }
            frame.removeLast(2)
        }
        // An ISO/IEC 14443-4 card after a raw RATS: the host runs ISO-DEP itself (nfcpy's Type 4A
        // reader; PN532RawISODEP.swift).
        if let answer = rawISODEPBlock(frame, hostGetsCRC: hostGetsCRC, world: world) {
            return answer
        }
        // A FeliCa or Topaz/Jewel target: the frame as InDataExchange carries it (libnfc sends
        // FeliCa commands this way with easy framing off, nfc-read-forum-tag3; CardFamilies.swift).
        if !frame.isEmpty, case .initiator(let targets) = role,
           let target = targets.first(where: { !$0.deselected }), stillPresent(target.peer, world: world),
           case .other(let other) = target.peer {
            guard let answer = other.answer(frame) else {
                lastError = 0x01
                return [0x01]
            }
            lastError = 0x00
            return [0x00] + answer.prefix(Self.frameDataLimit)
        }
        guard !frame.isEmpty, case .initiator(let targets) = role,
              let target = targets.first(where: { !$0.deselected }), stillPresent(target.peer, world: world),
              case .tag(let tag) = target.peer, !tag.isClassic, let answer = onAir(tag, frame, world: world) else {
            lastError = 0x01
            return [0x01]
        }
        switch answer {
        case .ack, .nak:
            setRxLastBits(4)
            guard hostGetsCRC else {
                lastError = 0x02
                return [0x02]
            }
            lastError = 0x00
            if case .nak(let code) = answer { return [0x00, code & 0x0F] }
            return [0x00, 0x0A]
        default:
            setRxLastBits(0)
        }
        switch Self.outcome(of: answer) {
        case .answer(let data):
            lastError = 0x00
            let onAir = hostGetsCRC && !data.isEmpty ? data + Self.crcA(data) : data
            return [0x00] + onAir.prefix(Self.frameDataLimit)
        case .status(let status):
            lastError = status
            return [status]
        case .mcuTimeout, .driverTimeout, .cardLost:
            return [0x01]
        }
    }

    /// Control (633Ch) bits 2–0, RxLastBits: the valid bits of the last byte received, 0 for a
    /// whole byte (libnfc: Control is 633Ch in chips/pn53x-internal.h,
    /// the RxLastBits mask 07h in chips/pn53x.h; it reads them after InCommunicateThru).
    func setRxLastBits(_ bits: UInt8) {
        registers[0x633C] = (registerValue(0x633C) & 0xF8) | (bits & 0x07)
    }

    /// CRC_A of ISO/IEC 14443-3 Annex B: initial value 6363h, polynomial x^16 + x^12 + x^5 + 1
    /// processed least significant bit first, sent low byte first (`00 00` → `A0 1E`).
    static func crcA(_ bytes: [UInt8]) -> [UInt8] {
        var crc: UInt16 = 0x6363
        for byte in bytes {
            var b = byte ^ UInt8(crc & 0xFF)
            b ^= b << 4
            crc = (crc >> 8) ^ (UInt16(b) << 8) ^ (UInt16(b) << 3) ^ (UInt16(b) >> 4)
        }
        return [UInt8(crc & 0xFF), UInt8(crc >> 8)]
    }

    /// MIFARE Classic authentication `60/61 block key(6) UID(4)`: 00 when the UID matches and the
    /// key is accepted, 14 otherwise; any other command to a tag stays unanswered (01).
    func mifareAuthentication(_ tag: ISO14443_3Tag, _ command: [UInt8]) -> UInt8 {
        guard command.count == 12, command[0] == 0x60 || command[0] == 0x61 else { return 0x01 }
        let key = Array(command[2..<8])
        let uid = Array(command[8..<12])
        guard uid == Array(tag.identity.uid.suffix(4)) || uid == Array(tag.identity.uid.prefix(4)) else { return 0x14 }
        if let expected = tag.mifareKey, expected != key { return 0x14 }
        return 0x00
    }

    /// InDeselect (44), InRelease (52), InSelect (54) for `target` (0 = all) → status.
    ///
    /// InRelease while the chip is a target (waiting, activated or released) ends the target role:
    /// the emulation stops and no initiator sees it any more. libnfc relies on this to leave target
    /// mode (pn53x_idle sends InRelease 00 for a device in target mode; docs/acr122-pn532.md §5e).
    func deselectReleaseSelect(_ command: UInt8, target: UInt8, world: FieldWorld) -> UInt8 {
        if command == 0x52, case .target = role {
            leaveRoles(world: world)
            return 0x00
        }
        guard case .initiator(var targets) = role else { return target == 0 ? 0x00 : 0x27 }
        let indices = targets.indices.filter { target == 0 || targets[$0].number == target }
        guard !indices.isEmpty || target == 0 else { return 0x27 }
        switch command {
        case 0x44:
            if personality.ignoresInDeselect { return 0x00 }
            for i in indices {
                halt(targets[i].peer)
                targets[i].deselected = true
                releasePeer(targets[i].peer, world: world)
            }
            role = .initiator(targets)
        case 0x52:
            for i in indices { releasePeer(targets[i].peer, world: world) }
            targets.removeAll { target == 0 || $0.number == target }
            role = targets.isEmpty ? .idle : .initiator(targets)
        default:
            for i in indices {
                guard stillPresent(targets[i].peer, world: world) else { return 0x01 }
                if case .emulation = targets[i].peer, targets[i].deselected { return 0x01 }
                targets[i].deselected = false
            }
            role = .initiator(targets)
        }
        return 0x00
    }

    // MARK: Target

    /// TgInitAsTarget `Mode SENS_RES(2, LSB first) NFCID1t(3) SEL_RES FeliCa(18) NFCID3t(10) LenGt
    /// Gt LenTk Tk` → `Mode InitiatorCommand` (UM0701-02 §7.3.14). Blocks until a terminal (or another
    /// reader) activates the emulation, or the MCU timeout (→ 63 00).
    func tgInitAsTarget(
        _ p: [UInt8], world: FieldWorld, lock: ConditionLock<FieldWorld>, reply: ([UInt8]) -> ChipOutcome
    ) -> ChipOutcome {
        guard p.count >= 37 else { return .failed }
        let lengthGt = Int(p[35])
        guard lengthGt <= 47, p.count >= 37 + lengthGt else { return .failed }
        let lengthTk = Int(p[36 + lengthGt])
        guard lengthTk <= 48, p.count == 37 + lengthGt + lengthTk else { return .failed }
        let modes = p[0]
        let atqa = UInt16(p[2]) << 8 | UInt16(p[1])
        let uid: [UInt8] = [0x08] + p[3..<6]
        let sak = p[6]
        let historical = Array(p[(37 + lengthGt)...])
        leaveRoles(world: world)
        sessions += 1
        let t = TargetState(session: sessions, modes: modes, atqa: atqa, uid: uid, sak: sak, historicalBytes: historical)
        // SetParameters bit 5 (fISO14443-4_PICC) off and mode PICC only (bit 2) not asked: the chip
        // leaves ISO-DEP to the host (nfcpy's listen_tta, mode 01; libnfc sets both for an ISO/IEC
        // 14443-4 target, pn53x_target_init). PICC only without the flag keeps ISO-DEP in the chip
        // (decision: a target that may only be a PICC is one the firmware runs).
        t.hostRunsISODEP = flags & 0x20 == 0 && modes & 0x04 == 0 && sak & 0x20 != 0
        role = .target(t)
        lock.broadcast()
        // A phone that left and stays away a while (PhoneBehaviour.returnAfter) wakes the wait when it is back.
        let wake = { world.peers.compactMap { ($0 as? ExternalTerminal)?.returnDeadline }.min() }
        let outcome = wait(lock: lock, wake: wake) {
            if t.isActivated { return true }
            guard case .target(let current) = self.role, current === t else { return false }
            // Each terminal decides whether this target is one it activates (ISO-DEP or NFC-DEP).
            for terminal in world.peers.compactMap({ $0 as? ExternalTerminal }) where terminal.wantsActivation {
                guard let activation = terminal.activate(modes: modes, sak: sak, ats: t.ats) else { continue }
                t.initiatorCommand = activation.initiatorCommand
                t.activatedMode = activation.mode
                t.phase = .activatedByTerminal(terminal)
                world.record(.targetActivated(mode: activation.mode, initiatorCommand: t.initiatorCommand), reader: self.name)
                return true
            }
            return false
        }
        switch outcome {
        case .satisfied:
            // Mode 08: 106 kbit/s, ISO/IEC 14443-4 PICC, Type A framing; then the RATS. Mode 04:
            // DEP, passive, 106 kbit/s; then ATR_REQ (docs/terminal-models.md §6.3).
            return reply([t.activatedMode] + t.initiatorCommand)
        case .limit, .mcuTimeout, .driverTimeout:
            if case .target(let current) = role, current === t, !t.isActivated {
                role = .idle
            }
            if outcome == .driverTimeout { return .driverTimeout }
            return personality.emptyAnswerWhileNoTerminal ? .empty : .failed
        }
    }

    /// TgGetData → `Status C-APDU` (UM0701-02 §7.3.16): 25 before activation, 29 once released.
    func tgGetData(world: FieldWorld, lock: ConditionLock<FieldWorld>, reply: ([UInt8]) -> ChipOutcome) -> ChipOutcome {
        guard case .target(let t) = role, t.isActivated || isReleased(t) else { return reply([targetRoleError()]) }
        if !t.pendingCommand.isEmpty { return reply(chunk(&t.pendingCommand)) }
        switch t.phase {
        case .waiting: return reply([0x25])
        case .released: return reply([0x29])
        case .activatedByTerminal(let terminal):
            switch terminal.nextCommand(clock: clock) {
            case .command(let apdu):
                t.pendingCommand = apdu
                return reply(chunk(&t.pendingCommand))
            case .released:
                t.phase = .released
                world.record(.targetReleased, reader: name)
                return reply([0x29])
            case .awaitingResponse: return reply([0x27])
            case .notActivated: return reply([0x25])
            }
        case .activatedByReader:
            let outcome = wait(lock: lock) { t.inbox != nil || !t.isActivated }
            switch outcome {
            case .satisfied:
                guard let apdu = t.inbox else { return reply([0x29]) }
                t.inbox = nil
                t.commandOutstanding = true
                t.pendingCommand = apdu
                return reply(chunk(&t.pendingCommand))
            case .limit, .mcuTimeout: return .failed
            case .driverTimeout: return .driverTimeout
            }
        }
    }

    func isReleased(_ t: TargetState) -> Bool {
        if case .released = t.phase { return true }
        return false
    }

    /// TgSetData `R-APDU` → `Status` (UM0701-02 §7.3.17).
    func tgSetData(_ p: [UInt8], world: FieldWorld) -> UInt8 {
        guard case .target(let t) = role else { return targetRoleError() }
        let response = t.metaData + p
        t.metaData = []
        switch t.phase {
        case .waiting: return 0x25
        case .released: return 0x29
        case .activatedByTerminal(let terminal):
            let status = terminal.deliver(response)
            if status == 0x29 {
                // The phone gave up waiting for this answer and released the target.
                t.phase = .released
                world.record(.targetReleased, reader: name)
            }
            return status
        case .activatedByReader:
            guard t.commandOutstanding else { return 0x27 }
            t.outbox = response
            t.commandOutstanding = false
            return 0x00
        }
    }
}
