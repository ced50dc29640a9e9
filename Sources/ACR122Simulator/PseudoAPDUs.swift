import ISO7816

/// The ACR122U MCU: pseudo-APDUs (ACR122U API v2.04; docs/acr122-pn532.md §2), the T=0 personality,
/// the escape path of the driver (§1, §5c) and card APDUs to the polled card.
extension DeviceState {
    func control(code: UInt32, _ command: [UInt8], world: FieldWorld, lock: ConditionLock<FieldWorld>) throws(IFDError) -> [UInt8] {
        if let answer = personality.driverAnswer(code: code) {
            return answer
        }
        switch (personality.driver, code) {
        case (.ccidEscapeDisabled, ACR122DriverConstants.ccidEscapeCode),
             (.acsDriver, ACR122DriverConstants.ccidEscapeCode):
            // libccid, and acsccid (its ifdDriverOptions default 0x0000): "ifd exchange (Escape
            // command) not allowed" → IFD_COMMUNICATION_ERROR.
            throw IFDError.communicationError
        case (.ccidEscapeEnabled, ACR122DriverConstants.ccidEscapeCode),
             (.acsDriver, ACR122DriverConstants.acsEscapeCode):
            return try pseudoAPDU(command, viaTransmit: false, world: world, lock: lock)
        default:
            throw IFDError.notSupported
        }
    }

    func transmit(_ command: [UInt8], world: FieldWorld, lock: ConditionLock<FieldWorld>) throws(IFDError) -> [UInt8] {
        guard atr != nil else { throw IFDError.noCard }
        if personality.pseudoCardATR != nil {
            return try pseudoCardTransmit(command, world: world, lock: lock)
        }
        resumePoweredSession(world: world)
        if case .initiator(let targets) = role, let first = targets.first, !stillPresent(first.peer, world: world) {
            throw IFDError.noCard
        }
        guard command.first == 0xFF else {
            return try cardAPDU(command, world: world, lock: lock)
        }
        return try pseudoAPDU(command, viaTransmit: true, world: world, lock: lock)
    }

    /// A card APDU to the card automatic polling activated (ACR122U API v2.04 §4: the reader
    /// forwards APDUs to an ISO 14443-4 card). A card without ISO-DEP gives 63 00.
    func cardAPDU(_ command: [UInt8], world: FieldWorld, lock: ConditionLock<FieldWorld>) throws(IFDError) -> [UInt8] {
        guard case .initiator(var targets) = role, !targets.isEmpty else { throw IFDError.noCard }
        guard targets[0].isoDEP else { return Self.failed }
        let outcome = exchange(with: &targets[0], command, world: world, lock: lock)
        if case .initiator = role { role = .initiator(targets) }
        switch outcome {
        case .answer(let response): return response
        case .status: return Self.failed
        case .mcuTimeout: return Self.failed
        case .driverTimeout: throw IFDError.communicationError
        // The card left during the exchange: the CCID slot reports an error for the block
        // (libccid's CmdXfrBlock fails), which pcscd turns into SCARD_E_NOT_TRANSACTED (U: no
        // byte log of an ACR122U losing a card mid-APDU was found).
        case .cardLost: throw IFDError.communicationError
        }
    }

    /// One pseudo-APDU `| FF | INS | P1 | P2 | Lc/Le | data |`.
    func pseudoAPDU(_ command: [UInt8], viaTransmit: Bool, world: FieldWorld, lock: ConditionLock<FieldWorld>) throws(IFDError) -> [UInt8] {
        guard command.count >= 5, command[0] == 0xFF else {
            // Shorter than a header with P3, or not CLA FF: the MCU rejects it (decision: 63 00).
            return Self.failed
        }
        let ins = command[1], p1 = command[2], p2 = command[3], p3 = command[4]
        let data = Array(command[5...])
        switch (ins, p1) {
        case (0x00, 0x00) where p2 == 0x00:
            // Direct Transmit: the MCU passes on the data the block carries and does not hold an
            // Lc larger than that against it (a real unit answered `FF 00 00 00 16 D4 42 1A 00`,
            // Lc 22 for 4 bytes, with `D5 43 01 90 00`; docs/acr122-pn532.md §2). An Lc smaller
            // than the data gives 63 00 (decision).
            guard Int(p3) >= data.count, !data.isEmpty else { return Self.failed }
            let reply = try directTransmit(data, world: world, lock: lock)
            if viaTransmit, personality.legacyT0Firmware, reply.count > 2 {
                return announceForGetResponse(reply)
            }
            return reply
        case (0xC0, 0x00) where p2 == 0x00 && data.isEmpty:
            return getResponse(le: p3)
        case (0x00, 0x48):
            // Firmware version: the ASCII string alone, no status word.
            return Array(personality.firmware.utf8)
        case (0x00, 0x40):
            guard p3 == 0x04, data.count == 4 else { return Self.failed }
            try waitOutLEDSequence(data, lock: lock)
            return ledAndBuzzer(p2)
        case (0x00, 0x50) where p2 == 0x00:
            return [0x90, piccParameter]
        case (0x00, 0x51) where p3 == 0x00 && data.isEmpty:
            piccParameter = p2
            // Polling again: the MCU's polling sets the CIU up as it does from power-up (decision).
            if p2 & 0x80 != 0 { idleRegisters = [:] }
            if p2 & 0x80 == 0, atr == nil, case .initiator = role {
                // Polling stopped: the MCU lets go of what it had polled.
                leaveRoles(world: world)
            }
            return personality.piccParameterAnswer == .parameterOnly ? [piccParameter] : [0x90, piccParameter]
        case (0x00, 0x41) where p3 == 0x00 && data.isEmpty:
            mcuTimeout = p2
            return Self.ok
        case (0x00, 0x52) where p3 == 0x00 && data.isEmpty:
            guard p2 == 0x00 || p2 == 0xFF else { return Self.failed }
            buzzerOnDetection = p2 == 0xFF
            return Self.ok
        case (0xCA, 0x00), (0xCA, 0x01):
            return getData(p1: p1, le: p3, hasData: !data.isEmpty, world: world)
        case (0x82, _):
            return loadKey(p1: p1, slot: p2, lc: p3, data: data)
        case (0x86, _):
            // General Authenticate: | FF | 86 | 00 | 00 | 05 | 01 | 00 | block | 60/61 | slot |.
            guard p1 == 0x00, p2 == 0x00, p3 == 0x05, data.count == 5, data[0] == 0x01, data[1] == 0x00 else {
                return Self.failed
            }
            return authenticate(block: data[2], keyType: data[3], slot: data[4], world: world)
        case (0x88, _):
            // Authentication (obsolete form): | FF | 88 | 00 | block | 60/61 | slot |.
            guard p1 == 0x00, data.count == 1 else { return Self.failed }
            return authenticate(block: p2, keyType: p3, slot: data[0], world: world)
        case (0xB0, _):
            guard p1 == 0x00, data.isEmpty else { return Self.failed }
            return readBinary(block: p2, le: p3, world: world)
        case (0xD6, _):
            guard p1 == 0x00, Int(p3) == data.count else { return Self.failed }
            return updateBinary(block: p2, data: data, world: world)
        case (0xD7, 0x00):
            return valueBlockOperation(block: p2, lc: p3, data: data, world: world)
        case (0xB1, 0x00):
            return readValueBlock(block: p2, le: p3, hasData: !data.isEmpty, world: world)
        default:
            return Self.notSupported
        }
    }

    /// A T=0 unit's answer to a Direct Transmit through SCardTransmit: `61 xx`, with xx the length
    /// of the whole answer `D5 cmd+1 … 90 00`, the chip's status word included, which waits for
    /// Get Response. libnfc's USB trace of a Touchatag (drivers/acr122_usb.c): GetFirmwareVersion
    /// `FF 00 00 00 02 D4 02` → `61 08`, then `FF C0 00 00 08` → `D5 03 32 01 04 07 90 00`, eight
    /// bytes with no second status word (docs/acr122-pn532.md §2). An answer longer than 255
    /// bytes is announced as `61 FF` (decision, (U)).
    func announceForGetResponse(_ reply: [UInt8]) -> [UInt8] {
        pendingGetResponse = reply
        return [0x61, UInt8(min(reply.count, 255))]
    }

    /// Get Response `FF C0 00 00 Le` on a T=0 unit: the answer ``announceForGetResponse(_:)``
    /// kept, as it is (its last bytes are the chip's 90 00; the MCU adds none). Unconfirmed (U),
    /// no byte log shows them: an Le smaller than the kept answer gives its first Le bytes and
    /// `61 rest`, the rest kept for the next Get Response; Le 00 or an Le larger than the answer
    /// gives the whole answer; nothing kept, or a unit that talks T=1, gives 6A 81 (not supported).
    func getResponse(le: UInt8) -> [UInt8] {
        guard personality.legacyT0Firmware, let pending = pendingGetResponse else { return Self.notSupported }
        let count = le == 0 ? pending.count : min(Int(le), pending.count)
        let rest = Array(pending.dropFirst(count))
        pendingGetResponse = rest.isEmpty ? nil : rest
        return Array(pending.prefix(count)) + (rest.isEmpty ? [] : [0x61, UInt8(min(rest.count, 255))])
    }

    /// How long the LED/buzzer sequence `T1 T2 Rep Link` runs: (T1 + T2) × 100 ms × Rep (ACR122U API
    /// v2.04, Bi-Color LED and Buzzer Control). The MCU answers when it ends (nfcpy's acr122.py
    /// waits "the total buzzer/flash duration" for the answer); that it runs even when P2 asks no
    /// LED to blink is an assumption (U).
    static func ledSequenceDuration(_ data: [UInt8]) -> Duration {
        guard data.count >= 3 else { return .zero }
        return .milliseconds(100 * (Int(data[0]) + Int(data[1])) * Int(data[2]))
    }

    /// Waits out the LED/buzzer sequence in simulated time, with the field unlocked. When the
    /// driver's timeout (libccid: 30 s) passes first, the call fails as on the unit.
    /// - Throws: ``IFDError/communicationError`` when the driver timeout passes first.
    func waitOutLEDSequence(_ data: [UInt8], lock: ConditionLock<FieldWorld>) throws(IFDError) {
        let duration = Self.ledSequenceDuration(data)
        guard duration > .zero else { return }
        let end = clock.deadline(after: duration)
        let driver = driverDeadline()
        while !end.hasPassed {
            if driver.hasPassed { throw IFDError.communicationError }
            lock.wait(until: Deadline.earliest(end, driver))
        }
    }

    /// LED/buzzer (`FF 00 40 P2 04 T1 T2 Rep Link` → `90 ss`). P2: bit 0 final red, bit 1 final
    /// green, bit 2 red mask, bit 3 green mask; a masked LED takes its final state, the other keeps
    /// its state. Blinking (bits 4–7) ends in the final state; the answer waits for the sequence's
    /// end (``waitOutLEDSequence(_:lock:)``).
    func ledAndBuzzer(_ p2: UInt8) -> [UInt8] {
        var state = led
        if p2 & 0x04 != 0 { state = (state & ~0x01) | (p2 & 0x01) }
        if p2 & 0x08 != 0 { state = (state & ~0x02) | (p2 & 0x02) }
        led = state
        return [0x90, state]
    }

    /// Get Data (PC/SC part 3): `FF CA 00 00 Le` → UID; `FF CA 01 00 Le` → ATS (6A 81 without ISO-DEP).
    func getData(p1: UInt8, le: UInt8, hasData: Bool, world: FieldWorld) -> [UInt8] {
        guard !hasData else { return Self.failed }
        guard case .initiator(let targets) = role, let target = targets.first,
              stillPresent(target.peer, world: world) else { return Self.failed }
        let value: [UInt8]
        switch (p1, target.peer) {
        case (0x00, .card(let c)): value = c.identity.uid
        case (0x00, .tag(let t)): value = t.identity.uid
        case (0x00, .other(let o)): value = o.identifier
        case (0x00, .emulation(let other, _)):
            guard case .target(let t) = other.role else { return Self.failed }
            value = t.uid
        case (0x01, .card(let c)): value = c.ats
        case (0x01, .emulation(let other, _)):
            guard case .target(let t) = other.role else { return Self.failed }
            value = t.ats
        default:
            return Self.notSupported
        }
        if le != 0, Int(le) < value.count { return [0x6C, UInt8(value.count)] }
        return value + Self.ok
    }

    // MARK: Storage cards (ACR122U API v2.04 §5; PC/SC part 3 §3.2.2.1)

    /// The tag the MCU talks to for storage-card pseudo-APDUs: the first selected target when it
    /// is an ISO 14443-3 tag still in the field (activated by automatic polling or by
    /// InListPassiveTarget), else nil.
    func polledTag(world: FieldWorld) -> ISO14443_3Tag? {
        guard case .initiator(let targets) = role, let target = targets.first(where: { !$0.deselected }),
              stillPresent(target.peer, world: world), case .tag(let tag) = target.peer else { return nil }
        return tag
    }

    /// One command on air to `tag` from this reader: the tag's answer, or, when the tag leaves the
    /// field during it (``ISO14443_3Tag/leave(duringCommand:)``), silence (``TagAnswer/mute``)
    /// with the tag removed from the field, as a removal by hand would.
    func onAir(_ tag: ISO14443_3Tag, _ command: [UInt8], world: FieldWorld) -> TagAnswer? {
        let answer = tag.transceive(command)
        guard answer == .left else { return answer }
        _ = world.removePeer(tag)
        return .mute
    }

    /// Load Keys `| FF | 82 | 00 | slot 00/01 | 06 | key (6) |` → 90 00, kept in the reader's
    /// volatile slot (ACR122U API v2.04 §5.1); another P1, slot or Lc → 63 00. No card is needed.
    func loadKey(p1: UInt8, slot: UInt8, lc: UInt8, data: [UInt8]) -> [UInt8] {
        guard p1 == 0x00, slot <= 0x01, lc == 0x06, data.count == 6 else { return Self.failed }
        loadedKeys[Int(slot)] = data
        return Self.ok
    }

    /// Authentication of `block` with the key in `slot` as key A (60) or key B (61) (ACR122U API
    /// v2.04 §5.2): the MCU sends `60|61 block key UID(last 4 bytes)`; 90 00 on success, 63 00
    /// for an empty slot, a bad key type, no tag, a tag that is no MIFARE Classic card, or a
    /// wrong key. A tag without memory accepts as ``ISO14443_3Tag/mifareKey`` says.
    func authenticate(block: UInt8, keyType: UInt8, slot: UInt8, world: FieldWorld) -> [UInt8] {
        guard keyType == 0x60 || keyType == 0x61, slot <= 0x01, let key = loadedKeys[Int(slot)],
              let tag = polledTag(world: world) else { return Self.failed }
        let command = [keyType, block] + key + Array(tag.identity.uid.suffix(4))
        guard let answer = onAir(tag, command, world: world) else {
            return mifareAuthentication(tag, command) == 0x00 ? Self.ok : Self.failed
        }
        return answer == .ack ? Self.ok : Self.failed
    }

    /// Read Binary `| FF | B0 | 00 | block/page | Le |` (ACR122U API v2.04 §5.3): the MCU sends
    /// READ `30 block`. Type 2 tag: Le 4, 8, 12 or 16 → the first Le bytes of the four pages;
    /// MIFARE Classic: Le 16, only in the sector authenticated last and as the access bits allow.
    /// Anything else (no tag with memory, another Le, a NAK) → 63 00.
    func readBinary(block: UInt8, le: UInt8, world: FieldWorld) -> [UInt8] {
        guard let tag = polledTag(world: world) else { return Self.failed }
        let length = Int(le)
        switch tag.memory {
        case .none: return Self.failed
        case .type2: guard length % 4 == 0, (4...16).contains(length) else { return Self.failed }
        case .classic: guard length == 16 else { return Self.failed }
        }
        guard case .data(let bytes)? = onAir(tag, [0x30, block], world: world), bytes.count >= length else { return Self.failed }
        return Array(bytes.prefix(length)) + Self.ok
    }

    /// Update Binary `| FF | D6 | 00 | block/page | Lc | data |` (ACR122U API v2.04 §5.4): Type 2
    /// tag: Lc 4, WRITE `A2 page data`; MIFARE Classic: Lc 16, WRITE `A0 block data` after an
    /// authentication of that sector. 90 00 on the ACK, 63 00 otherwise.
    func updateBinary(block: UInt8, data: [UInt8], world: FieldWorld) -> [UInt8] {
        guard let tag = polledTag(world: world) else { return Self.failed }
        let command: [UInt8]
        switch tag.memory {
        case .none: return Self.failed
        case .type2:
            guard data.count == 4 else { return Self.failed }
            command = [0xA2, block] + data
        case .classic:
            guard data.count == 16 else { return Self.failed }
            command = [0xA0, block] + data
        }
        return onAir(tag, command, world: world) == .ack ? Self.ok : Self.failed
    }

    /// Direct Transmit: the PN532 frame `D4 cmd params` → `D5 cmd+1 … 90 00`, or 63 00; with the
    /// late-reply fault applied.
    func directTransmit(_ frame: [UInt8], world: FieldWorld, lock: ConditionLock<FieldWorld>) throws(IFDError) -> [UInt8] {
        let own: [UInt8]
        switch runChip(frame, world: world, lock: lock) {
        case .frame(let reply): own = reply + Self.ok
        case .failed: own = Self.failed
        case .empty: own = []
        case .driverTimeout: throw IFDError.communicationError
        }
        if let waiting = lateAnswer {
            let isFirmwareProbe = frame.count >= 2 && frame[0] == 0xD4 && frame[1] == 0x02
            lateAnswer = isFirmwareProbe ? nil : own
            return waiting
        }
        if lateRepliesArmed > 0 {
            lateRepliesArmed -= 1
            lateAnswer = own
            throw IFDError.communicationError
        }
        return own
    }
}
