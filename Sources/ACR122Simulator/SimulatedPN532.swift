import ISO7816

/// A bare PN532 (a breakout board on a serial line, no ACR122U MCU in front of it) in a
/// ``SimulatedField``: the same chip model the simulated ACR122U drives with Direct Transmit
/// (PN532 UM0701-02 §7; PN532Engine.swift), reached frame by frame (docs/pn532-uart.md §5).
///
/// ``respond(to:)`` takes a host frame `D4 cmd params` and returns the chip's `D5 cmd+1 data`, or
/// nil when the chip refuses the frame (a syntax error: the serial endpoint answers the error
/// frame). A command that waits (TgInitAsTarget for a reader, InListPassiveTarget with infinite
/// retries) blocks the calling thread until what it waits for happens, ``abortCommand()`` is called,
/// or ``commandBound`` of the field's clock passes. There is no MCU timeout: the chip waits as long
/// as the host lets it.
///
/// Thread safety: calls may come from any thread; the state lives behind the field's lock, released
/// while a command waits.
public final class SimulatedPN532: Sendable {
    /// A name for field events (e.g. "PN532 board tty").
    public let name: String
    /// The RF field the board's antenna is in, shared with simulated ACR122U readers and peers.
    public let field: SimulatedField
    /// The simulator's own bound on one waiting command (the chip has none): default 60 s.
    public let commandBound: Duration
    let state: DeviceState

    /// - Parameters:
    ///   - field: the RF field.
    ///   - name: the name in field events.
    ///   - firmwareVersion: GetFirmwareVersion's `IC Ver Rev Support`, default `32 01 06 07` (PN532 v1.6).
    ///   - commandBound: the longest a command waits, in the field's simulated time.
    public init(
        field: SimulatedField = SimulatedField(), name: String = "PN532 board",
        firmwareVersion: [UInt8] = [0x32, 0x01, 0x06, 0x07], commandBound: Duration = .seconds(60)
    ) {
        self.name = name
        self.field = field
        self.commandBound = commandBound
        // No MCU: MCU timeout 00 (wait for the chip), no automatic polling, no PC/SC card.
        var personality = ACR122Personality(
            pn532FirmwareVersion: firmwareVersion, initialMCUTimeout: 0x00, driverTimeout: commandBound)
        personality.reportsCardsToPCSC = false
        state = DeviceState(name: name, personality: personality, clock: { [weak field] in field?.clock ?? .realTime })
        state.piccParameter = 0x00
        state.frameLimit = 265
        field.lock.withLock { world in world.devices.append(state) }
    }

    deinit { detach() }

    /// The chip's answer `D5 cmd+1 data` to the host frame `D4 cmd params`, nil when the chip
    /// refuses it (not D4, an unknown command, a parameter syntax error, more than 265 bytes) or
    /// when the command was aborted or passed ``commandBound``.
    ///
    /// A frame that comes while another command is under way replaces it: that command is aborted
    /// and ends (its answer dropped) before this one starts, as the serial endpoint aborts a
    /// running command when a new one arrives; if it has not ended within ``commandBound`` this
    /// frame gets nil.
    public func respond(to frame: [UInt8]) -> [UInt8]? {
        // PowerDown `D4 16 WakeUpEnable [GenerateIRQ]` → `D5 17 Status` (UM0701-02 §7.2.11): a bare
        // board takes it (libnfc's pn532_uart sends it when it closes the device); status 00, the
        // chip sleeps until the next host frame wakes it (the serial line's 55 preamble).
        if frame.count == 3 || frame.count == 4, frame[0] == 0xD4, frame[1] == 0x16 {
            return [0xD5, 0x17, 0x00]
        }
        // SetSerialBaudRate `D4 10 BR` → `D5 11` (UM0701-02 §7.2.8): BR 00…08 is 9 600, 19 200,
        // 38 400, 57 600, 115 200, 230 400, 460 800, 921 600 or 1 288 000 baud (nfcpy's
        // `set_serial_baudrate` table). The host acknowledges the answer and both sides switch; a
        // pseudo-terminal carries its bytes at any speed, so nothing else changes here. nfcpy asks
        // for 921 600 after its wake-up where stty(1) takes that speed, and for 115 200 on close.
        if frame.count == 3, frame[0] == 0xD4, frame[1] == 0x10 {
            return frame[2] <= 0x08 ? [0xD5, 0x11] : nil
        }
        // A command still under way (aborted by the host's ACK, or replaced by this frame) ends
        // first: it reads the shared abort flag, which this command must not clear under it.
        let bound = state.clock.deadline(after: commandBound)
        if requestAbort() { field.wakeWaiters() }
        let answer = field.lock.withLock { world -> [UInt8]? in
            while state.commandInFlight != nil {
                // The earlier command did not end within the bound: this one is refused.
                if bound.hasPassed { return nil }
                field.lock.wait(until: bound)
            }
            state.abortRequested = false
            state.commandInFlight = frame
            defer {
                state.commandInFlight = nil
                field.lock.broadcast()
            }
            let outcome = state.runChip(frame, world: world, lock: field.lock)
            if state.abortRequested { return nil }
            if case .frame(let bytes) = outcome { return bytes }
            return nil
        }
        // A command waiting for this one to end counts as running before time can move on.
        field.wakeWaiters()
        return answer
    }

    /// Ends the command under way at once (the host's ACK on the serial line); its answer is
    /// dropped. On virtual time the command's thread is woken through the clock, so time does not
    /// move before it has seen the abort.
    public func abortCommand() {
        if requestAbort() { field.wakeWaiters() }
    }

    /// Marks the command under way aborted; false when none is.
    private func requestAbort() -> Bool {
        field.lock.withLock { _ in
            guard state.commandInFlight != nil else { return false }
            state.abortRequested = true
            field.lock.broadcast()
            return true
        }
    }

    /// The command under way, nil when none.
    public var commandInFlight: [UInt8]? { field.lock.withLock { _ in state.commandInFlight } }

    /// Whether the RF field is on.
    public var isRFFieldOn: Bool { field.lock.withLock { _ in state.rfOn } }

    /// Takes the board out of its field (unplugged). Idempotent.
    public func detach() {
        field.lock.withLock { world in state.leaveField(world: world, lock: field.lock) }
        field.wakeWaiters()
    }
}
