import ACR122Simulator
import PCSCCore
import PN53x

/// ``SimulatedSerialPN532`` with a host link on its line, for the package's own tests: a link is
/// not `Sendable`, so it is kept here rather than in the public board. `run(_:)` makes the
/// calling thread a participant of the board's time, so its waits on the line move virtual time.
package final class SimulatedSerialBoard {
    /// The board itself (time, field, chip, line, device).
    package let board: SimulatedSerialPN532
    /// A host link on the line, made once; ``link()`` makes another (another program opening the port).
    package let host: PN532SerialLink

    package var time: VirtualTime { board.time }
    package var clock: PN532SerialClock { board.clock }
    package var field: SimulatedField { board.field }
    package var chip: SimulatedPN532 { board.chip }
    package var line: PN532InMemorySerialLine { board.line }
    package var device: PN532SerialDevice { board.device }

    /// - Parameter awake: as ``SimulatedSerialPN532/init(name:awake:)``.
    package init(awake: Bool = false) {
        board = SimulatedSerialPN532(awake: awake)
        host = PN532SerialLink(stream: board.line.host, clock: board.clock)
    }

    /// A new host link on the line.
    package func link() -> PN532SerialLink { PN532SerialLink(stream: board.line.host, clock: board.clock) }

    /// Runs `body` as a participant of ``time`` (its waits on the line move virtual time).
    package func run<R>(_ body: () throws -> R) rethrows -> R { try time.participate { try body() } }

    /// Runs `body` with ``host``, as a participant of ``time``.
    package func run<R>(_ body: (PN532SerialLink) throws -> R) rethrows -> R { try time.participate { try body(host) } }

    deinit { board.close() }
}
