import ACR122Simulator
import PCSCCore
import PN53x

/// A bare PN532 board in this process, on a virtual time of its own: ACR122Simulator's
/// `SimulatedPN532` served behind the high-speed UART framing (`PN532SerialDevice`) on the device
/// end of a `PN532InMemorySerialLine`, its field and its line on one `VirtualTime`
/// (docs/pn532-uart.md §5). No tty, no pcscd: the host end (``line``'s `host`) is what a
/// `PN532SerialLink` or a `SerialPN532EmulationBackend` (SecureElementCredential) opens, and every bound (the 100 ms ACK,
/// a 1 s TgInitAsTarget step, the chip's own 60 s) counts on ``time``.
///
///     let board = SimulatedSerialPN532()
///     defer { board.close() }
///     let link = PN532SerialLink(stream: board.line.host, clock: board.clock)
///     try board.time.participate { try link.wakeUp() }
///     board.field.place(terminal)   // a phone (ExternalTerminal) the board's target meets
public final class SimulatedSerialPN532: Sendable {
    /// The board's time: it moves only while every thread and activity on it waits.
    public let time: VirtualTime
    /// ``time`` as the serial line's clock.
    public let clock: PN532SerialClock
    /// The RF field the board's antenna is in (place phones and cards here).
    public let field: SimulatedField
    /// The chip.
    public let chip: SimulatedPN532
    /// The serial line: the host end for the code under test, the device end served by ``device``.
    public let line: PN532InMemorySerialLine
    /// The chip side of the UART protocol (what it received, how many commands a host ACK aborted,
    /// fault injection).
    public let device: PN532SerialDevice

    /// A board with no peer in its field.
    /// - Parameters:
    ///   - name: the chip's name in field events.
    ///   - awake: false (default) for a board asleep until its wake-up (the 55 preamble); true
    ///     for one that takes frames at once (`PN532SerialDevice`'s `awake`).
    public init(name: String = "PN532 board (in memory)", awake: Bool = false) {
        let time = VirtualTime()
        self.time = time
        clock = PN532SerialClock(virtualTime: time)
        field = SimulatedField(clock: SimulationClock(virtualTime: time))
        let chip = SimulatedPN532(field: field, name: name)
        self.chip = chip
        line = PN532InMemorySerialLine(clock: clock)
        device = PN532SerialDevice(
            stream: line.device, clock: clock, awake: awake, respond: { chip.respond(to: $0) }, abort: { chip.abortCommand() })
    }

    /// Closes the line, takes the chip out of its field and closes the time (every wait on it
    /// ends); idempotent.
    public func close() {
        line.close()
        chip.detach()
        time.close()
    }

    deinit { close() }
}
