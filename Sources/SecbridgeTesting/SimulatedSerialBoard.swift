import ACR122Simulator
import PCSCCore
import PN53x

/// A bare PN532 board for tests: ``SimulatedPN532`` behind the UART framing (``PN532SerialDevice``)
/// on an in-memory serial line, in a field of its own, everything on one ``VirtualTime``
/// (docs/pn532-uart.md §5). A command the host bounds (TgInitAsTarget's 1 s, an ACK that never
/// comes) costs no real time.
package final class SimulatedSerialBoard {
    package let time = VirtualTime()
    /// The line's clock (``time``).
    package let clock: PN532SerialClock
    /// The board's RF field: place cards and terminals in it.
    package let field: SimulatedField
    package let chip: SimulatedPN532
    package let line: PN532InMemorySerialLine
    /// The device end: what the chip received, how many commands a host aborted.
    package let device: PN532SerialDevice
    /// A host link on the line, made once; ``link()`` makes another (another program opening the port).
    package let host: PN532SerialLink

    /// - Parameter awake: whether the chip answers before a wake-up (the 55 preamble), as a board
    ///   just powered up does for nfcpy's 00 preamble (docs/pn532-uart.md §3).
    package init(awake: Bool = false) {
        clock = PN532SerialClock(virtualTime: time)
        field = SimulatedField(clock: SimulationClock(virtualTime: time))
        chip = SimulatedPN532(field: field)
        line = PN532InMemorySerialLine(clock: clock)
        let chip = chip
        device = PN532SerialDevice(
            stream: line.device, clock: clock, awake: awake, respond: { chip.respond(to: $0) }, abort: { chip.abortCommand() })
        host = PN532SerialLink(stream: line.host, clock: clock)
    }

    /// A new host link on the line.
    package func link() -> PN532SerialLink { PN532SerialLink(stream: line.host, clock: clock) }

    /// Runs `body` as a participant of ``time`` (its waits on the line move virtual time).
    package func run<R>(_ body: () throws -> R) rethrows -> R { try time.participate { try body() } }

    /// Runs `body` with ``host``, as a participant of ``time``.
    package func run<R>(_ body: (PN532SerialLink) throws -> R) rethrows -> R { try time.participate { try body(host) } }

    deinit {
        line.close()
        chip.detach()
        time.close()
    }
}
