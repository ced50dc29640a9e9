import Foundation
import InProcessPCSC
import PCSCCore
import PCSCSandbox
import SimulatedACR122IFD
import Synchronization

/// Simulated ACR122U readers on a desk of their own, in this process: reached through the
/// in-process PC/SC client (no pcscd), each with its control socket for placing cards, tags and
/// terminals, and running on virtual time (the default, ``DeskTime/virtual``) so that no test
/// waits out a device timeout, or on a time scale (``DeskTime/scaled(_:)``). On virtual time the
/// desk's `VirtualTime` (PCSCCore) moves only when every reader command, status wait and
/// transaction wait on the desk waits, straight to the earliest deadline, so a 5 s MCU timeout
/// takes no wall time and ends the same way on every run. Code with timers of its own finds the
/// clock as the client's `virtualTime` (`secbridge emulate` runs its session on it, as one
/// activity the clock waits for: docs/test-infrastructure.md, "Virtual time on an in-process
/// desk").
///
///     let desk = try SimulatedDesk(readers: 2)
///     defer { desk.close() }
///     try desk.control(0).send("place-card uid=04A1B2C3 applet=t4t-ndef")
///     let context = try desk.client.establishContext()
///
/// Readers of one desk share one RF field (reader 0's emulated card is a card in reader 1's
/// field); desks do not see each other, so tests with desks of their own run in parallel. A
/// process holds at most 16 in-process readers at a time: a desk waits up to 300 s for free ones
/// (a whole test suite's desks, under a loaded CI machine, were seen to hold all 16 for over 30 s).
/// From async code (a Swift Testing test), make a desk with ``open(readers:personality:time:separateFields:)``,
/// which waits on a thread of its own: a wait on Swift's shared pool could starve the very tests
/// whose desks it waits for.
public final class SimulatedDesk: Sendable {
    /// What a desk's time is.
    public enum DeskTime: Sendable, Hashable {
        /// A `VirtualTime` of the desk's own (``SimulatedDesk/virtualTime``).
        case virtual
        /// Wall-clock seconds per simulated second (`1`: real time), for a check that must see a
        /// device wait take wall time, or that acts on the desk from outside while a command waits
        /// and cannot `VirtualTime.hold()` the clock.
        case scaled(Double)
    }

    /// The time scale of ``DeskTime/scaled(_:)`` desks made with ``init(readers:personality:timeScale:separateFields:)``'s
    /// customary value: a simulated second takes 10 ms (the 5 s MCU timeout 50 ms).
    public static let defaultTimeScale = 0.01

    /// The in-process readers (the simulated ACR122U devices and their driver).
    public let readers: InProcessReaders
    /// The client to hand to code under test.
    public let client: InProcessPCSCClient
    /// The readers' names, in creation order: `ACS ACR122U PICC Interface 00 00`, `… 01 00`.
    public let names: [String]
    /// The desk's directory (control sockets at `<directory>/<n>/control.sock`).
    public let directory: String
    /// Wall-clock seconds per simulated second (the 5 s MCU timeout takes 5 s × this); 0 on
    /// virtual time.
    public let timeScale: Double
    /// The desk's virtual time (``DeskTime/virtual``), nil on scaled wall-clock time. Hand it to the
    /// code under test as its clock (the session engine's `SessionClock`, the tool's), so that
    /// its timers run on the same time as the readers; `VirtualTime.hold()` it while acting on
    /// the desk from a test while a command waits.
    public let virtualTime: VirtualTime?

    private static let counter = Atomic<Int>(0)

    /// - Parameters:
    ///   - count: how many readers, 1 to 4.
    ///   - personality: the readers' personality (e.g. `ccid-escape-disabled`), default
    ///     `ccid-escape-enabled`.
    ///   - time: virtual time (the default) or scaled wall-clock time.
    ///   - separateFields: each reader gets an RF field of its own (a card placed on one is not
    ///     in the other's field), e.g. a secure-element card beside an emulating reader.
    /// - Throws: `InProcessReaderError` when the driver refuses a reader or no Lun frees up.
    public init(
        readers count: Int = 1, personality: String? = nil, time: DeskTime = .virtual, separateFields: Bool = false
    ) throws {
        let number = Self.counter.add(1, ordering: .relaxed).oldValue
        let clockOption: String
        switch time {
        case .virtual:
            let virtualTime = VirtualTime()
            self.virtualTime = virtualTime
            timeScale = 0
            clockOption = ":clock=" + virtualTime.name
            // A transaction another handle keeps is waited for 60 s (virtual).
            readers = InProcessReaders(transactionWaitLimit: .seconds(60), virtualTime: virtualTime)
        case .scaled(let scale):
            virtualTime = nil
            timeScale = scale
            clockOption = SimulatedReaders.timeScaleOption(scale)
            // A transaction another handle keeps is waited for 60 simulated seconds.
            readers = InProcessReaders(transactionWaitLimit: .seconds(60) * scale)
        }
        directory = "/tmp/secbridge-desk.\(getpid()).\(number)"
        try? FileManager.default.removeItem(atPath: directory)
        client = InProcessPCSCClient(readers)
        let base = directory
        let deviceNames = (0..<max(1, min(count, 4))).map { index in
            "\(base)/\(index):field=desk\(number)" + (separateFields ? "-\(index)" : "") + clockOption + (personality.map { ":personality=\($0)" } ?? "")
        }
        let names: [String]
        do {
            // All of the desk's Luns at once: desks never hold some while waiting for the rest.
            names = try readers.createChannels(deviceNames: deviceNames, waitingUpTo: .seconds(300))
        } catch {
            readers.close()
            virtualTime?.close()
            try? FileManager.default.removeItem(atPath: directory)
            throw error
        }
        self.names = names
    }

    /// A desk on scaled wall-clock time (``DeskTime/scaled(_:)``), as
    /// ``init(readers:personality:time:separateFields:)``.
    public convenience init(readers count: Int = 1, personality: String? = nil, timeScale: Double, separateFields: Bool = false) throws {
        try self.init(readers: count, personality: personality, time: .scaled(timeScale), separateFields: separateFields)
    }

    /// Makes a desk, waiting for free readers on a thread of its own (never on Swift's shared
    /// concurrency pool). Parameters and errors as ``init(readers:personality:time:separateFields:)``.
    public static func open(
        readers count: Int = 1, personality: String? = nil, time: DeskTime = .virtual, separateFields: Bool = false
    ) async throws -> SimulatedDesk {
        let executor = BlockingExecutor(name: "desk-open")
        defer { executor.shutdown() }
        return try await executor.run {
            try SimulatedDesk(readers: count, personality: personality, time: time, separateFields: separateFields)
        }
    }

    /// A desk on scaled wall-clock time, as ``open(readers:personality:time:separateFields:)``.
    public static func open(
        readers count: Int = 1, personality: String? = nil, timeScale: Double, separateFields: Bool = false
    ) async throws -> SimulatedDesk {
        try await open(readers: count, personality: personality, time: .scaled(timeScale), separateFields: separateFields)
    }

    deinit { close() }

    /// The control client of reader `index` (see the driver's control protocol: `place-card`,
    /// `place-tag`, `place-terminal`, `status`, `personality`, `timescale`, …).
    public func control(_ index: Int = 0) -> SimulatedReaderControl {
        SimulatedReaderControl(socketPath: "\(directory)/\(index)/control.sock")
    }

    /// Sends a typed request to reader `index` in this process, with no socket and no text
    /// (SimulatedACR122IFD's `SimulatorRequest`; its text form is the control line
    /// ``control(_:)`` would send, `request.line`):
    ///
    ///     try desk.control(.placeCard(uid: [0x04, 0xA1, 0xB2, 0xC3], applet: .t4tNDEF))
    ///
    /// The reply and errors are those of the socket: a ``SimulatedReaderReply``, or a
    /// ``SimulatedReaderError`` with the server's code and reason (`connect` for a reader the desk
    /// does not have). Blocks the caller while the request runs (a `terminal-result` with
    /// `waitMilliseconds` up to that bound), as a socket request does.
    @discardableResult
    package func control(_ request: SimulatorRequest, reader index: Int = 0) throws(SimulatedReaderError) -> SimulatedReaderReply {
        guard names.indices.contains(index) else {
            throw SimulatedReaderError(code: "connect", reason: "the desk has no reader \(index) (it has \(names.count))")
        }
        return try readers.reply(to: request, reader: names[index])
    }

    /// Closes the readers, then the virtual time, and removes the directory; idempotent.
    public func close() {
        readers.close()
        virtualTime?.close()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

extension InProcessReaders {
    /// Hands a typed control request to the in-process reader `name` (no socket, no text) and
    /// gives what its control socket's client would: a ``SimulatedReaderReply``, or a
    /// ``SimulatedReaderError`` with the server's code and reason (a line break in it as a space,
    /// as on the socket). See ``SimulatedDesk/control(_:reader:)``.
    package func reply(to request: SimulatorRequest, reader name: String) throws(SimulatedReaderError) -> SimulatedReaderReply {
        do {
            return SimulatedReaderReply(fields: try control(request, reader: name))
        } catch {
            throw SimulatedReaderError(code: error.code.rawValue, reason: String(error.reason.map { $0 == "\n" || $0 == "\r" ? " " : $0 }))
        }
    }
}

extension SimulatedReaderControl {
    /// Sends a typed request over the control socket as its control line (`request.line`, which
    /// the driver parses back to the same request): for readers in another process (a pcscd),
    /// where the socket is the edge. In process, ``SimulatedDesk/control(_:reader:)`` needs no text.
    /// - Throws: as ``send(_:timeout:)``.
    @discardableResult
    package func send(_ request: SimulatorRequest, timeout: Duration = .seconds(10)) throws -> SimulatedReaderReply {
        try send(request.line, timeout: timeout)
    }
}
