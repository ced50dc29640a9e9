import ISO7816

/// What a client probes on the PN532 before and while it polls: Diagnose, the CIU registers' values
/// when the host has not written them, and InAutoPoll (UM0701-02 §7.2.1, §7.2.4, §7.3.13;
/// docs/acr122-pn532.md §4b).
extension DeviceState {
    /// GetGeneralStatus's last byte, the SAM status: 80 on an ACR122, with a target and without
    /// (ACR122T API v2.02 §7.5 and ACS's AET62 manual §8.5 show `D5 05 00 00 00 80` for no target;
    /// docs/acr122-pn532.md §4b).
    static let samStatus: UInt8 = 0x80

    /// CIU register values (PN532 addresses 63xxh) of an ACR122U whose MCU has been polling for
    /// ISO/IEC 14443-A cards since power-up, as ReadRegister returns them before the host writes
    /// them (docs/acr122-pn532.md §4b):
    ///
    /// | Register | Address | Value | Meaning |
    /// |---|---|---|---|
    /// | TxMode | 6302 | 80 | TxCRCEn, 106 kbit/s, Type A framing |
    /// | RxMode | 6303 | 80 | RxCRCEn, 106 kbit/s, Type A framing |
    /// | TxAuto | 6305 | 07 | InitialRFOn, Tx2RFAutoEn, Tx1RFAutoEn |
    /// | ManualRCV | 630D | 07 | parity handled by the chip (bit 4 clear) |
    /// | Status2 | 6338 | 15 | MFCrypto1On clear |
    /// | Control | 633C | 10 | Initiator |
    /// | BitFraming | 633D | 00 | whole bytes |
    ///
    /// Every other register reads 00 (decision: no public dump of the whole CIU was found).
    static let registersAfterAutomaticPolling: [UInt16: UInt8] = [
        0x6302: 0x80, 0x6303: 0x80, 0x6305: 0x07, 0x630D: 0x07, 0x6338: 0x15, 0x633C: 0x10, 0x633D: 0x00,
    ]

    /// CIU register values read right after the host switched the RF field off
    /// (`D4 32 01 00`) on a unit whose automatic polling it had stopped first (`FF 00 51 00 00`,
    /// as libnfc's acr122_usb driver does when it opens the reader): libnfc issue 691's byte log
    /// of an ACR122U (PN532 v1.6) reads `D4 06 63 38 63 3D` → `D5 07 00 00` right after the RF
    /// off, and `D4 06 63 05` → `D5 07 00` a little later (docs/acr122-pn532.md §4b):
    ///
    /// | Register | Address | Value |
    /// |---|---|---|
    /// | TxAuto | 6305 | 00 |
    /// | Status2 | 6338 | 00 |
    /// | BitFraming | 633D | 00 |
    ///
    /// Which of the two steps clears them is not in the log: the simulator ties them to an RF off
    /// while polling is off, and drops them when polling is switched on again (decision, U).
    static let registersAfterRFOffWithoutPolling: [UInt16: UInt8] = [0x6305: 0x00, 0x6338: 0x00, 0x633D: 0x00]

    /// What ReadRegister returns for `address`: the last value written, else the value after an RF
    /// off without polling (``registersAfterRFOffWithoutPolling``) once there was one, else the
    /// value after automatic polling (``registersAfterAutomaticPolling``).
    func registerValue(_ address: UInt16) -> UInt8 {
        registers[address] ?? idleRegisters[address] ?? Self.registersAfterAutomaticPolling[address] ?? 0x00
    }

    /// Diagnose `NumTst InParam` → `OutParam` (UM0701-02 §7.2.1), or nil for a syntax error (the MCU
    /// then answers 63 00):
    /// - 00 communication line test: the PN532 sends NumTst and InParam back unchanged (libnfc's
    ///   `pn53x_check_communication` sends `00 "libnfc"` and expects `00 "libnfc"`; nfcpy sends 00
    ///   followed by 251 counting bytes).
    /// - 01 ROM test, 02 RAM test: no InParam; `00` (the check passed).
    /// - 06 ISO/IEC 14443-4 card presence: no InParam; a status byte: 00 the selected ISO-DEP
    ///   target answered, 01 (timeout) it is gone, 27 (not acceptable) no ISO-DEP target is
    ///   selected (decision: the manual names no code for that case).
    /// - 07 self antenna test: InParam one threshold byte; `00` (antenna present).
    /// - 04 polling test to a FeliCa target and 05 echo back (the chip answers no further
    ///   commands) are not modelled: nil.
    func diagnose(_ p: [UInt8], world: FieldWorld) -> [UInt8]? {
        guard let test = p.first else { return nil }
        let input = Array(p.dropFirst())
        switch test {
        case 0x00:
            return [0x00] + input
        case 0x01, 0x02:
            guard input.isEmpty else { return nil }
            return [0x00]
        case 0x06:
            guard input.isEmpty else { return nil }
            let status = cardPresence(world: world)
            lastError = status
            return [status]
        case 0x07:
            guard input.count == 1 else { return nil }
            return [0x00]
        default:
            return nil
        }
    }

    /// Diagnose 06's status for the first selected target.
    func cardPresence(world: FieldWorld) -> UInt8 {
        guard case .initiator(let targets) = role, let target = targets.first(where: { !$0.deselected }),
              target.isoDEP else { return 0x27 }
        return stillPresent(target.peer, world: world) ? 0x00 : 0x01
    }

    /// InAutoPoll `PollNr Period Type1…TypeN` → `NbTg [Type AutoPollTargetDataLength TargetData]…`
    /// (UM0701-02 §7.3.13). PollNr 01–FE rounds (FF: until a target or the MCU timeout), Period
    /// 01–0F in units of 150 ms, 1 to 15 target types. One round tries every type in the order
    /// given, each for one period; the first type that finds a target ends the command with that
    /// target as Tg 1 (one target: decision, the chip may report two).
    ///
    /// Types that find a simulated peer: 20 (ISO/IEC 14443-4 Type A: a peer whose SAK announces
    /// ISO-DEP; RATS is sent and the ATS reported), 10 (MIFARE: any Type A peer, no RATS) and 00
    /// (generic passive 106 kbit/s: any Type A peer, RATS as SetParameters' AutomaticRATS says).
    /// TargetData is InListPassiveTarget's `Tg SENS_RES SEL_RES NFCIDLength NFCID1 [ATS]`. Type B,
    /// FeliCa, Jewel and DEP types find nothing here. No target within the rounds → `00`.
    func inAutoPoll(
        _ p: [UInt8], world: FieldWorld, lock: ConditionLock<FieldWorld>, reply: ([UInt8]) -> ChipOutcome
    ) -> ChipOutcome {
        guard p.count >= 3, p.count <= 17, p[0] != 0x00, (0x01...0x0F).contains(p[1]) else { return .failed }
        let rounds = Int(p[0]), period = Int(p[1])
        let types = Array(p[2...])
        startPolling(world: world)
        var limit: Deadline?
        if rounds != 0xFF {
            limit = clock.deadline(after: .milliseconds(150) * (rounds * types.count * period))
        }
        var match: (type: UInt8, peer: ActivatedPeer)?
        let outcome = wait(lock: lock, limit: limit) {
            match = autoPollMatch(types: types, world: world)
            return match != nil
        }
        switch outcome {
        case .satisfied: break
        case .limit: return reply([0x00])
        case .mcuTimeout: return .failed
        case .driverTimeout: return .driverTimeout
        }
        guard let match else { return reply([0x00]) }
        let savedFlags = flags
        switch match.type {
        case 0x20: flags |= 0x10
        case 0x10: flags &= ~0x10
        default: break
        }
        let target = activate(match.peer, number: 1, world: world)
        flags = savedFlags
        role = .initiator([target])
        lock.broadcast()
        let data = targetDescription(target)
        return reply([0x01, match.type, UInt8(data.count)] + data)
    }

    /// Before InListPassiveTarget or InAutoPoll: the chip leaves its roles and switches the RF field on.
    func startPolling(world: FieldWorld) {
        leaveRoles(world: world)
        if !rfOn {
            rfOn = true
            world.record(.fieldOn, reader: name)
        }
    }

    /// The first of `types` that finds a peer in the field, with that peer.
    func autoPollMatch(types: [UInt8], world: FieldWorld) -> (type: UInt8, peer: ActivatedPeer)? {
        let found = candidates(world: world, uid: [])
        for type in types {
            switch type {
            case 0x20:
                if let peer = found.first(where: isISODEPCapable) { return (type, peer) }
            case 0x00, 0x10:
                if let peer = found.first { return (type, peer) }
            default:
                continue
            }
        }
        return nil
    }
}
