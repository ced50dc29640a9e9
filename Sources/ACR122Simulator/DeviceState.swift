import ISO7816

/// Something a reader activated: a card, a tag, or another reader's emulation.
enum ActivatedPeer {
    case card(ISO14443_4Card)
    case tag(ISO14443_3Tag)
    /// Another reader in TgInitAsTarget, with the activation number it had when found.
    case emulation(DeviceState, session: Int)
    /// A FeliCa, ISO/IEC 14443-B or Topaz/Jewel target found by automatic polling (CardFamilies.swift).
    case other(PassiveTargetPeer)

    func isSame(as other: ActivatedPeer) -> Bool {
        switch (self, other) {
        case (.card(let a), .card(let b)): a === b
        case (.tag(let a), .tag(let b)): a === b
        case (.emulation(let a, _), .emulation(let b, _)): a === b
        case (.other(let a), .other(let b)): a === b
        default: false
        }
    }

    func isPeer(_ peer: any FieldPeer) -> Bool {
        switch self {
        case .card(let c): c === peer
        case .tag(let t): t === peer
        case .other(let o): o === peer
        case .emulation: false
        }
    }
}

/// A target in the initiator's list (InListPassiveTarget's Tg).
struct ListedTarget {
    var number: UInt8
    var peer: ActivatedPeer
    /// RATS was sent and the ATS received: ISO-DEP is active.
    var isoDEP: Bool
    var deselected = false
    /// Host data collected from InDataExchange frames with MI set.
    var commandChain: [UInt8] = []
    /// The rest of an answer longer than one frame.
    var pendingAnswer: [UInt8] = []
    /// FSD, the largest frame the reader takes (PCB to CRC_A), from the FSDI of a raw RATS
    /// (ISO/IEC 14443-4 §5.1); 256 until one is seen.
    var frameSizeForReader = 256
    /// The last ISO-DEP block a raw exchange sent (PCB first, without CRC_A), sent again on a
    /// reader's R(NAK) or repeated R(ACK) (ISO/IEC 14443-4 §7.5.4).
    var lastBlock: [UInt8] = []
}

/// The emulation set up by TgInitAsTarget.
final class TargetState {
    enum Phase {
        case waiting
        case activatedByTerminal(ExternalTerminal)
        case activatedByReader(DeviceState)
        case released
    }

    let session: Int
    let modes: UInt8
    /// ATQA as libnfc prints it (MSB first); TgInitAsTarget carries it LSB first.
    let atqa: UInt16
    /// 08 + NFCID1t (the PN532 forces the first byte to 08).
    let uid: [UInt8]
    let sak: UInt8
    let historicalBytes: [UInt8]
    var phase: Phase = .waiting
    /// The initiator's first command (RATS) once activated.
    var initiatorCommand: [UInt8] = []
    /// TgInitAsTarget's mode byte for the activation: 08 (ISO/IEC 14443-4 PICC), 04 (NFC-DEP).
    var activatedMode: UInt8 = 0x08
    /// A C-APDU from a reader initiator not yet taken by TgGetData.
    var inbox: [UInt8]?
    /// The rest of a C-APDU longer than one TgGetData frame.
    var pendingCommand: [UInt8] = []
    /// The R-APDU the host gave with TgSetData, for a reader initiator.
    var outbox: [UInt8]?
    /// Data collected by TgSetMetaData (chaining) before TgSetData.
    var metaData: [UInt8] = []
    /// A reader initiator is waiting for the answer to a command the host took.
    var commandOutstanding = false
    /// The host runs ISO-DEP itself (SetParameters fISO14443-4_PICC, bit 5, off when TgInitAsTarget
    /// began, SEL_RES with the ISO/IEC 14443-4 bit): the reader's RATS reaches the host, which
    /// answers the ATS and every block with TgResponseToInitiator, as nfcpy's `listen_tta` does
    /// (docs/pn532-uart.md §10).
    var hostRunsISODEP = false
    /// The ATS the host answered the reader's RATS with (``hostRunsISODEP``).
    var hostATS: [UInt8]?
    /// The reader's block number for its next I-block (``hostRunsISODEP``; ISO/IEC 14443-4 §7.5.3).
    var readerBlockNumber: UInt8 = 0

    init(session: Int, modes: UInt8, atqa: UInt16, uid: [UInt8], sak: UInt8, historicalBytes: [UInt8]) {
        self.session = session
        self.modes = modes
        self.atqa = atqa
        self.uid = uid
        self.sak = sak
        self.historicalBytes = historicalBytes
    }

    /// The ATS the PN532 sends for this emulation: `TL 75 33 92 03 T1…Tk` (UM0701-02 §7.3.14;
    /// docs/acr122-pn532.md §4): FSCI 5 (64 bytes), 106/212/424 both ways, FWI 9, SFGI 2, CID and NAD.
    var ats: [UInt8] { [UInt8(5 + historicalBytes.count), 0x75, 0x33, 0x92, 0x03] + historicalBytes }

    var isActivated: Bool {
        switch phase {
        case .activatedByTerminal, .activatedByReader: true
        case .waiting, .released: false
        }
    }
}

/// The PN532's role.
enum ChipRole {
    case idle
    case initiator([ListedTarget])
    case target(TargetState)
}

/// What a PN532 command produced, before the ACR122U wraps it.
enum ChipOutcome {
    /// `D5 cmd+1 …`.
    case frame([UInt8])
    /// The chip did not answer in time or refused the frame: the MCU replies 63 00.
    case failed
    /// libccid's own timeout passed first: IFD_COMMUNICATION_ERROR.
    case driverTimeout
    /// The MCU answers with no bytes at all (``ACR122Personality/emptyAnswerWhileNoTerminal``).
    case empty
}

/// The mutable state of one simulated ACR122U, only touched with the field locked (hence
/// `@unchecked Sendable`: the field's lock is the synchronisation).
final class DeviceState: @unchecked Sendable {
    let name: String
    let personality: ACR122Personality
    /// The field's time base, read at each wait (the field's scale can change, see
    /// `SimulatedField.setClock(_:)`).
    let currentClock: @Sendable () -> SimulationClock
    var clock: SimulationClock { currentClock() }

    // ACR122U MCU
    var piccParameter: UInt8 = 0xFF
    var mcuTimeout: UInt8
    var buzzerOnDetection = true
    var led: UInt8 = 0
    var atr: [UInt8]?
    /// The card pcscd powered up (IFDHPowerICC), while its ATR stands.
    var poweredPeer: ActivatedPeer?
    /// pcscd still holds a card it powered on the unit this one replaced (a personality switch
    /// keeps pcscd's reader): the next presence poll reports no card, ending that session, as
    /// libccid's IFDHICCPresence does for a powered card it no longer finds active.
    var owesAbsentReport = false
    var negotiatedProtocol: UInt?
    /// The unit left its field for good (unplugged, or replaced by a personality switch): a
    /// command blocked in a wait ends at once, as a USB transfer fails when the device is gone.
    var isDetached = false
    /// The host aborted the command under way (a bare PN532's serial ACK, ``SimulatedPN532/abortCommand()``):
    /// a command blocked in a wait ends at once, its answer dropped. Cleared when the next command starts.
    var abortRequested = false
    /// The command the host sent that has not been answered yet (a TgInitAsTarget waiting for a
    /// terminal, an InDataExchange waiting for the target's answer), nil when none is under way.
    var commandInFlight: [UInt8]?
    /// A T=0 unit's Direct Transmit answer (`D5 cmd+1 … 90 00`, all of it) announced with `61 xx`
    /// and waiting for Get Response `FF C0 00 00 xx`; nil when none waits.
    var pendingGetResponse: [UInt8]?
    var lateRepliesArmed = 0
    var lateAnswer: [UInt8]?
    /// The reader's two volatile key slots for MIFARE Classic (Load Keys `FF 82 00 slot 06 key`,
    /// ACR122U API v2.04 §5.1); never logged.
    var loadedKeys: [[UInt8]?] = [nil, nil]

    // PN532
    var rfOn = false
    var flags: UInt8 = 0x14
    var registers: [UInt16: UInt8] = [:]
    /// The CIU values the chip holds once the host switched the field off with automatic polling
    /// off (``registersAfterRFOffWithoutPolling``); empty while polling runs. Host writes win.
    var idleRegisters: [UInt16: UInt8] = [:]
    var maxRetryATR: UInt8 = 0xFF
    var maxRetryPSL: UInt8 = 0x01
    var maxRetryPassive: UInt8 = 0xFF
    var maxRetryCOM: UInt8 = 0x00
    var lastError: UInt8 = 0
    var role: ChipRole = .idle
    var sessions = 0
    /// Cards and tags InDeselect put in HALT: the next InListPassiveTarget (REQA) does not find
    /// them until the RF field is switched off (docs/acr122-clones.md §1).
    var haltedPeers: [any FieldPeer] = []

    init(name: String, personality: ACR122Personality, clock: @escaping @Sendable () -> SimulationClock) {
        self.name = name
        self.personality = personality
        self.currentClock = clock
        mcuTimeout = personality.initialMCUTimeout
    }

    static let ok: [UInt8] = [0x90, 0x00]
    static let failed: [UInt8] = [0x63, 0x00]
    static let notSupported: [UInt8] = [0x6A, 0x81]
    /// The most data bytes after `D5 cmd+1 status` in one frame (254-byte frames through the ACR122U).
    static let frameDataLimit = 251
    /// The largest `D4 cmd params` frame the ACR122U passes on.
    static let hostFrameLimit = 254
    /// The largest `D4 cmd params` frame the chip takes: ``hostFrameLimit`` behind the ACR122U's
    /// MCU, 265 on a bare PN532's serial line (an extended frame, docs/pn532-uart.md §1).
    var frameLimit = DeviceState.hostFrameLimit

    /// Leaves the field for good (unplugged): a blocked command ends, activated peers are let go,
    /// the ATR is dropped. Field lock held. Idempotent.
    func leaveField(world: FieldWorld, lock: ConditionLock<FieldWorld>) {
        isDetached = true
        lock.broadcast()
        guard let index = world.devices.firstIndex(where: { $0 === self }) else { return }
        leaveRoles(world: world)
        atr = nil
        world.devices.remove(at: index)
        lock.broadcast()
    }

    // MARK: Deadlines

    /// The MCU timeout as a deadline, nil when the MCU waits for the chip (00 or FF).
    func mcuDeadline() -> Deadline? {
        guard mcuTimeout != 0x00, mcuTimeout != 0xFF else { return nil }
        return clock.deadline(after: .seconds(5 * Int(mcuTimeout)))
    }

    func driverDeadline() -> Deadline {
        clock.deadline(after: personality.driverTimeout)
    }

    enum WaitResult { case satisfied, limit, mcuTimeout, driverTimeout }

    /// Waits (releasing the field lock) until `condition` holds or a deadline passes. Bounded: every
    /// iteration either returns or waits on a deadline that is at most the driver timeout away.
    /// A unit detached meanwhile (``isDetached``) ends the wait as ``WaitResult/driverTimeout``: the
    /// command fails, and the driver answers IFD_NO_SUCH_DEVICE for it (IFDHandler.swift), as
    /// libccid does when the USB transfer under way fails because the device went away.
    /// - Parameter wake: a deadline at which `condition` may start to hold without a broadcast (a
    ///   phone back in the field at a set time); the wait re-checks it then and goes on.
    func wait(
        lock: ConditionLock<FieldWorld>, limit: Deadline? = nil, wake: () -> Deadline? = { nil }, _ condition: () -> Bool
    ) -> WaitResult {
        let mcu = mcuDeadline()
        let driver = driverDeadline()
        while true {
            if isDetached || abortRequested { return .driverTimeout }
            if condition() { return .satisfied }
            if let limit, limit.hasPassed { return .limit }
            if let mcu, mcu.hasPassed { return .mcuTimeout }
            if driver.hasPassed { return .driverTimeout }
            let next = Deadline.earliest(Deadline.earliest(limit, mcu), Deadline.earliest(driver, wake()))
            lock.wait(until: next)
        }
    }

    // MARK: Presence, power

    /// The card automatic polling would report: needs PICC parameter bit 7, and the chip not
    /// acting as a target.
    func presentCard(world: FieldWorld) -> ActivatedPeer? {
        guard piccParameter & 0x80 != 0, personality.reportsCardsToPCSC else { return nil }
        if case .target = role { return nil }
        if case .initiator(let targets) = role, let first = targets.first, stillPresent(first.peer, world: world) {
            return first.peer
        }
        return candidates(world: world, uid: []).first ?? polledOtherFamily(world: world)
    }

    /// Presence as the driver reports it to pcscd's poll (IFDHICCPresence), kept consistent with
    /// what a transmit finds (docs/acr122-pn532.md §8):
    /// - the card pcscd powered is still the chip's first initiator target: present;
    /// - it is still in the field but the chip let it go and holds no other role (InRelease from
    ///   `reset` or the end of a PN532 session, RF off): present, and the next transmit
    ///   activates it again (``resumePoweredSession(world:)``), as the MCU reaches the card;
    /// - it left the field (taken away, maybe swapped for another between two polls), or the chip
    ///   now serves another target or acts as a target itself: absent once, and its power session
    ///   ends, as a removal; the next poll reports what is in the field, which pcscd powers up
    ///   afresh (pcsc-lite eventhandler.c: only an absent → present change powers a card up).
    /// Without that, pcscd would see "present" for ever while every transmit answered "no card".
    func reportsCardPresent(world: FieldWorld) -> Bool {
        if atr != nil && !holdsPoweredCard(world: world) {
            guard canResumePoweredSession(world: world) else {
                powerDown(world: world)
                return false
            }
            return piccParameter & 0x80 != 0
        }
        return presentCard(world: world) != nil
    }

    /// Whether the powered card is still the chip's first initiator target, in the field.
    func holdsPoweredCard(world: FieldWorld) -> Bool {
        guard let powered = poweredPeer, case .initiator(let targets) = role, let first = targets.first else { return false }
        return first.peer.isSame(as: powered) && stillPresent(first.peer, world: world)
    }

    /// Whether the powered card is in the field while the chip holds no role: a transmit reaches it.
    func canResumePoweredSession(world: FieldWorld) -> Bool {
        guard let powered = poweredPeer, case .idle = role else { return false }
        return stillPresent(powered, world: world)
    }

    /// Activates the powered card again as target 1 when the chip let it go and it is still in
    /// the field (``canResumePoweredSession(world:)``); the card's own session (an ISO-DEP
    /// selection, a MIFARE authentication) starts afresh, as after any activation.
    func resumePoweredSession(world: FieldWorld) {
        guard canResumePoweredSession(world: world), let powered = poweredPeer else { return }
        var target = activate(powered, number: 1, world: world)
        target.isoDEP = target.isoDEP || isISODEPCapable(powered)
        role = .initiator([target])
        rfOn = true
    }

    /// Peers InListPassiveTarget could activate: cards and tags in the field, and other readers
    /// waiting in TgInitAsTarget.
    func candidates(world: FieldWorld, uid: [UInt8]) -> [ActivatedPeer] {
        var found: [ActivatedPeer] = []
        for peer in world.peers {
            if let card = peer as? ISO14443_4Card, uid.isEmpty || card.identity.uid == uid {
                found.append(.card(card))
            } else if let tag = peer as? ISO14443_3Tag, uid.isEmpty || tag.identity.uid == uid {
                found.append(.tag(tag))
            }
        }
        for other in world.devices where other !== self {
            if case .target(let t) = other.role, case .waiting = t.phase, uid.isEmpty || t.uid == uid {
                found.append(.emulation(other, session: t.session))
            }
        }
        return found
    }

    func stillPresent(_ peer: ActivatedPeer, world: FieldWorld) -> Bool {
        switch peer {
        case .card(let c): return world.peers.contains { $0 === c }
        case .tag(let t): return world.peers.contains { $0 === t }
        case .other(let o): return world.peers.contains { $0 === o }
        case .emulation(let other, let session):
            guard world.devices.contains(where: { $0 === other }), case .target(let t) = other.role,
                  t.session == session else { return false }
            if case .activatedByReader(let by) = t.phase { return by === self }
            if case .waiting = t.phase { return true }
            return false
        }
    }

    func powerUp(world: FieldWorld, lock: ConditionLock<FieldWorld>) throws(IFDError) -> [UInt8] {
        if let pseudo = powerUpPseudoCard() { return pseudo }
        guard let peer = presentCard(world: world) else { throw IFDError.noCard }
        var target = activate(peer, number: 1, world: world)
        target.isoDEP = target.isoDEP || isISODEPCapable(peer)
        role = .initiator([target])
        rfOn = true
        let built = Self.atr(for: peer, personality: personality)
        atr = built
        poweredPeer = peer
        negotiatedProtocol = nil
        pendingGetResponse = nil
        lock.broadcast()
        return built
    }

    func powerDown(world: FieldWorld) {
        atr = nil
        poweredPeer = nil
        negotiatedProtocol = nil
        pendingGetResponse = nil
        // A pseudo-card is no target of the PN532: what the chip listed stays listed.
        if personality.pseudoCardATR != nil { return }
        if case .initiator(let targets) = role {
            for t in targets { releasePeer(t.peer, world: world) }
            role = .idle
        }
    }

    func isISODEPCapable(_ peer: ActivatedPeer) -> Bool {
        switch peer {
        case .card(let c): c.identity.sak & 0x20 != 0
        case .tag: false
        case .other(let target): target.speaksISODEP
        case .emulation(let other, _):
            if case .target(let t) = other.role { t.sak & 0x20 != 0 } else { false }
        }
    }

    /// The ATR of docs/acr122-pn532.md §3 / PC/SC part 3.
    static func atr(for peer: ActivatedPeer, personality: ACR122Personality) -> [UInt8] {
        func contactless(_ historical: [UInt8]) -> [UInt8] {
            var bytes: [UInt8] = [0x3B, 0x80 | UInt8(historical.count), 0x80, 0x01] + historical
            var tck: UInt8 = 0
            for b in bytes[1...] { tck ^= b }
            bytes.append(tck)
            return bytes
        }
        func iso4(ats: [UInt8], historical: [UInt8]) -> [UInt8] {
            switch personality.atrHistoricalBytes {
            case .atsHistoricalBytes: contactless(Array(historical.prefix(15)))
            case .wholeATS: contactless(Array(ats.prefix(15)))
            }
        }
        switch peer {
        case .card(let card):
            return iso4(ats: card.ats, historical: card.historicalBytes)
        case .emulation(let other, _):
            guard case .target(let t) = other.role else { return contactless([]) }
            return iso4(ats: t.ats, historical: t.historicalBytes)
        case .other(let target):
            return target.pcscATR
        case .tag(let tag):
            // 80 4F 0C: category, application identifier TLV of 12 bytes: RID A0 00 00 03 06,
            // SS 03 (ISO 14443A part 3), name C0 C1, 4 RFU bytes.
            return contactless([
                0x80, 0x4F, 0x0C, 0xA0, 0x00, 0x00, 0x03, 0x06, 0x03,
                UInt8(tag.cardName >> 8), UInt8(tag.cardName & 0xFF), 0x00, 0x00, 0x00, 0x00,
            ])
        }
    }

    // MARK: Activation

    /// Activates a peer as target `number` (ISO/IEC 14443-3, then RATS when AutomaticRATS is set
    /// and the SAK announces ISO/IEC 14443-4).
    func activate(_ peer: ActivatedPeer, number: UInt8, world: FieldWorld) -> ListedTarget {
        let sendsRATS = flags & 0x10 != 0 && isISODEPCapable(peer)
        switch peer {
        case .card(let card):
            world.record(.cardActivated(uid: card.identity.uid), reader: name)
        case .tag(let tag):
            tag.resetSession()
            world.record(.cardActivated(uid: tag.identity.uid), reader: name)
        case .other(let target):
            world.record(.cardActivated(uid: target.identifier), reader: name)
        case .emulation(let other, _):
            if case .target(let t) = other.role {
                world.record(.cardActivated(uid: t.uid), reader: name)
                if sendsRATS {
                    t.phase = .activatedByReader(self)
                    t.initiatorCommand = [0xE0, 0x80]
                    if t.hostRunsISODEP {
                        // Mode 00: 106 kbit/s, passive, no ISO-DEP by the chip; the host answers the
                        // RATS (TgResponseToInitiator), which the reader waits for.
                        t.activatedMode = 0x00
                        t.commandOutstanding = true
                        t.outbox = nil
                        t.hostATS = nil
                        t.readerBlockNumber = 0
                    }
                    world.record(.targetActivated(mode: t.activatedMode, initiatorCommand: t.initiatorCommand), reader: other.name)
                }
            }
        }
        return ListedTarget(number: number, peer: peer, isoDEP: sendsRATS)
    }

    /// Lets go of an activated peer: a reader's emulation activated by this reader is released.
    func releasePeer(_ peer: ActivatedPeer, world: FieldWorld) {
        guard case .emulation(let other, let session) = peer, case .target(let t) = other.role,
              t.session == session, case .activatedByReader(let by) = t.phase, by === self else { return }
        t.phase = .released
        world.record(.targetReleased, reader: other.name)
    }

    /// Leaves both roles (new TgInitAsTarget, detach, RF reset): peers are let go, a terminal
    /// talking to this emulation sees the target leave.
    func leaveRoles(world: FieldWorld) {
        switch role {
        case .idle: break
        case .initiator(let targets):
            for t in targets { releasePeer(t.peer, world: world) }
        case .target(let t):
            if case .activatedByTerminal(let terminal) = t.phase { terminal.targetLeft() }
            t.phase = .released
        }
        role = .idle
    }

    /// A peer left the field.
    func peerRemoved(_ peer: any FieldPeer, world: FieldWorld) {
        haltedPeers.removeAll { $0 === peer }
        if case .target(let t) = role, case .activatedByTerminal(let terminal) = t.phase, terminal === peer {
            terminal.targetLeft()
            t.phase = .released
            world.record(.targetReleased, reader: name)
        }
    }
}
