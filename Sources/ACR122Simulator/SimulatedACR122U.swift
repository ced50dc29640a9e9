import ISO7816

/// A simulated ACS ACR122U (USB 072F:2200, a PN532 behind an MCU) together with what its pcscd
/// driver (libccid or acsccid) shows pcscd: an ``IFDDevice``.
///
/// - Pseudo-APDUs (ACR122U API v2.04 §4–§6; docs/acr122-pn532.md §2) arrive through ``transmit(_:)``
///   with a card present, or through ``control(code:_:)`` with the escape code the personality's
///   driver accepts (§1, §5c).
/// - Direct Transmit (`FF 00 00 00 Lc D4 …`) reaches a model of the PN532 (UM0701-02 §7) in both
///   roles: initiator (InListPassiveTarget, InDataExchange, …) and target (TgInitAsTarget,
///   TgGetData, TgSetData, …), against the peers of its ``SimulatedField``.
/// - Card APDUs (CLA ≠ FF) go to the card found by automatic polling (PICC parameter bit 7).
///
/// Decisions where the documents leave room (each marked in the code):
/// - A malformed pseudo-APDU (Lc not matching the data, a PN532 frame not starting D4, a PN532
///   parameter syntax error, an unknown PN532 command) gets `63 00` (the operation failed); an
///   unknown pseudo-APDU (INS/P1/P2) gets `6A 81` (function not supported).
/// - When the MCU timeout (FF 00 41) passes before the PN532 answers (TgInitAsTarget without a
///   terminal, InListPassiveTarget with infinite retries, TgGetData with a silent initiator) the
///   reply is `63 00`, which the ACR122U API gives for "the chip did not answer". When libccid's
///   timeout (30 s) passes first, the call fails with ``IFDError/communicationError``.
///
/// Thread safety: every call may come from any thread; the state lives behind the field's lock,
/// which is released while a command blocks. pcscd makes one call at a time per reader.
public final class SimulatedACR122U: IFDDevice {
    /// The PC/SC reader name pcscd would give it.
    public let name: String
    /// How this unit and its driver behave: driver, firmware and quirks.
    public let personality: ACR122Personality
    /// The simulated RF field the reader's antenna is in, shared with the other readers and peers
    /// placed in it.
    public let field: SimulatedField
    let state: DeviceState

    /// - Parameters:
    ///   - field: the RF field it sits in (shared with other readers and peers).
    ///   - personality: driver and firmware behaviour.
    ///   - name: the reader name, default "ACS ACR122U PICC Interface 00 00".
    public init(
        field: SimulatedField = SimulatedField(), personality: ACR122Personality = .ccidEscapeEnabled,
        name: String = "ACS ACR122U PICC Interface 00 00"
    ) {
        self.name = name
        self.personality = personality
        self.field = field
        state = DeviceState(name: name, personality: personality, clock: { [weak field] in field?.clock ?? .realTime })
        field.lock.withLock { world in
            world.devices.append(state)
        }
    }

    deinit {
        detach()
    }

    /// Takes the reader out of its field (unplugged): peers it had activated are let go, a terminal
    /// talking to its emulation sees the target leave. Idempotent.
    public func detach() {
        field.lock.withLock { world in state.leaveField(world: world, lock: field.lock) }
    }

    // MARK: Fault injection and observation

    /// Makes the next `count` Direct Transmit commands answer late (docs/acr122-pn532.md §5b): the
    /// command fails as after libccid's timeout (``IFDError/communicationError``), and its answer
    /// is delivered as the answer to the next command, whose own answer waits for the one after.
    /// A GetFirmwareVersion (libnfc's resynchronisation probe) receives the waiting answer and its
    /// own answer is dropped, so the next command is back in step.
    public func injectLateReply(count: Int = 1) {
        field.lock.withLock { _ in state.lateRepliesArmed += max(0, count) }
    }

    /// Whether the unit left its field for good (``detach()``): a command that was blocked when it
    /// left ended then, and its answer is not the device's.
    public var isDetached: Bool { field.lock.withLock { _ in state.isDetached } }

    /// The LED state the last LED command left: bit 0 red, bit 1 green.
    public var ledState: UInt8 { field.lock.withLock { _ in state.led } }
    /// The PICC operating parameter (FF at power-up).
    public var piccOperatingParameter: UInt8 { field.lock.withLock { _ in state.piccParameter } }
    /// The MCU timeout byte (FF 00 41).
    public var mcuTimeout: UInt8 { field.lock.withLock { _ in state.mcuTimeout } }
    /// Whether the PN532's RF field is on.
    public var isRFFieldOn: Bool { field.lock.withLock { _ in state.rfOn } }
    /// The PN532 CIU register file value at `address` (e.g. 0x6302 TxMode).
    /// Registers the host has not written read as automatic polling left them (docs/acr122-pn532.md §4b).
    public func register(_ address: UInt16) -> UInt8 { field.lock.withLock { _ in state.registerValue(address) } }
    /// The field events this reader caused, oldest first.
    public var events: [FieldEvent] { field.events().filter { $0.reader == name } }

    // MARK: IFDDevice

    /// What the next presence poll would report, without ending a lost power session as the
    /// poll does (``isCardPresent()``): for the control socket's `status`, which must not take
    /// pcscd's one "absent" away.
    public var cardWouldBeReportedPresent: Bool {
        field.lock.withLock { world in
            guard !state.owesAbsentReport else { return false }
            guard state.atr != nil, !state.holdsPoweredCard(world: world) else { return state.presentCard(world: world) != nil }
            return state.canResumePoweredSession(world: world) && state.piccParameter & 0x80 != 0
        }
    }

    /// Takes `old`'s place behind the same PC/SC reader (a personality switch: pcscd is not told).
    /// When pcscd holds a card `old` powered up, this unit's next presence poll reports no card, so
    /// pcscd ends that session and powers up what is in the field then; pcsc-lite powers a card up
    /// only on an absent → present change of IFDHICCPresence (eventhandler.c), and its
    /// SCardTransmit marks the reader empty on IFD_ICC_NOT_PRESENT without that poll seeing it
    /// (docs/acr122-pn532.md §8). Call before `old` leaves the field.
    public func takeOverPCSCSession(from old: SimulatedACR122U) {
        field.lock.withLock { _ in
            state.owesAbsentReport = old.state.atr != nil || old.state.owesAbsentReport
        }
    }

    public func isCardPresent() -> Bool {
        field.lock.withLock { world in state.reportsPresence(world: world) }
    }

    public func powerUp() throws(IFDError) -> [UInt8] {
        try field.lock.withLock { world throws(IFDError) in
            try state.powerUp(world: world, lock: field.lock)
        }
    }

    public func powerDown() {
        field.lock.withLock { world in
            state.powerDown(world: world)
            field.lock.broadcast()
        }
    }

    public func setProtocol(_ protocolValue: UInt) throws(IFDError) {
        try field.lock.withLock { _ throws(IFDError) in
            guard state.atr != nil else { throw IFDError.noCard }
            let offered = personality.legacyT0Firmware ? ACR122DriverConstants.protocolT0 : ACR122DriverConstants.protocolT1
            guard protocolValue & offered != 0 else { throw IFDError.protocolNotSupported }
            state.negotiatedProtocol = offered
        }
    }

    public func transmit(_ command: [UInt8]) throws(IFDError) -> [UInt8] {
        try field.lock.withLock { world throws(IFDError) in
            state.commandInFlight = command
            defer {
                state.commandInFlight = nil
                field.lock.broadcast()
            }
            return try state.transmit(command, world: world, lock: field.lock)
        }
    }

    public func control(code: UInt32, _ command: [UInt8]) throws(IFDError) -> [UInt8] {
        try field.lock.withLock { world throws(IFDError) in
            state.commandInFlight = command
            defer {
                state.commandInFlight = nil
                field.lock.broadcast()
            }
            return try state.control(code: code, command, world: world, lock: field.lock)
        }
    }

    /// The command (APDU, pseudo-APDU or escape command) the host sent that has not been answered
    /// yet, nil when none is under way: a test waits for a TgInitAsTarget (`FF 00 00 00 Lc D4 8C …`)
    /// to block before it unplugs the reader.
    public var commandInFlight: [UInt8]? { field.lock.withLock { _ in state.commandInFlight } }

    public func attribute(_ tag: UInt32) -> [UInt8]? {
        field.lock.withLock { world in
            if let value = personality.driverAttribute(tag) { return value }
            switch tag {
            case ACR122DriverConstants.attrICCInterfaceStatus:
                return [state.presentCard(world: world) == nil ? 0 : 1]
            case ACR122DriverConstants.attrATRString, ACR122DriverConstants.tagIFDATR:
                return state.atr
            case ACR122DriverConstants.attrICCPresence:
                return [state.reportsPresence(world: world) ? 2 : 0]
            case ACR122DriverConstants.tagIFDSlotsNumber:
                return [1]
            case ACR122DriverConstants.tagIFDSimultaneousAccess:
                return [16]
            default:
                return nil
            }
        }
    }

    static func littleEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value & 0xFF), UInt8((value >> 8) & 0xFF), UInt8((value >> 16) & 0xFF), UInt8(value >> 24)]
    }
}
