import Foundation
import InProcessPCSC
import PCSCCore
import PCSCSandbox
import Synchronization

/// Simulated ACR122U readers on a desk of their own, in this process: reached through the
/// in-process PC/SC client (no pcscd), each with its control socket for placing cards, tags and
/// terminals, and running on a time scale so that no test waits out a real device timeout.
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
/// From async code (a Swift Testing test), make a desk with ``open(readers:personality:timeScale:separateFields:)``,
/// which waits on a thread of its own: a wait on Swift's shared pool could starve the very tests
/// whose desks it waits for.
public final class SimulatedDesk: Sendable {
    /// The default time scale: a simulated second takes 10 ms (the 5 s MCU timeout 50 ms).
    public static let defaultTimeScale = 0.01

    /// The in-process readers (the simulated ACR122U devices and their driver).
    public let readers: InProcessReaders
    /// The client to hand to code under test.
    public let client: InProcessPCSCClient
    /// The readers' names, in creation order: `ACS ACR122U PICC Interface 00 00`, `… 01 00`.
    public let names: [String]
    /// The desk's directory (control sockets at `<directory>/<n>/control.sock`).
    public let directory: String
    /// Wall-clock seconds per simulated second (the 5 s MCU timeout takes 5 s × this).
    public let timeScale: Double

    private static let counter = Atomic<Int>(0)

    /// - Parameters:
    ///   - count: how many readers, 1 to 4.
    ///   - personality: the readers' personality (e.g. `ccid-escape-disabled`), default
    ///     `ccid-escape-enabled`.
    ///   - timeScale: wall-clock seconds per simulated second; `1` for real time.
    ///   - separateFields: each reader gets an RF field of its own (a card placed on one is not
    ///     in the other's field), e.g. a secure-element card beside an emulating reader.
    /// - Throws: `InProcessReaderError` when the driver refuses a reader or no Lun frees up.
    public init(
        readers count: Int = 1, personality: String? = nil, timeScale: Double = defaultTimeScale, separateFields: Bool = false
    ) throws {
        let number = Self.counter.add(1, ordering: .relaxed).oldValue
        self.timeScale = timeScale
        directory = "/tmp/secbridge-desk.\(getpid()).\(number)"
        try? FileManager.default.removeItem(atPath: directory)
        // A transaction another handle keeps is waited for 60 simulated seconds.
        readers = InProcessReaders(transactionWaitLimit: .seconds(60) * timeScale)
        client = InProcessPCSCClient(readers)
        let base = directory
        let deviceNames = (0..<max(1, min(count, 4))).map { index in
            "\(base)/\(index):field=desk\(number)" + (separateFields ? "-\(index)" : "") + SimulatedReaders.timeScaleOption(timeScale) + (personality.map { ":personality=\($0)" } ?? "")
        }
        let names: [String]
        do {
            // All of the desk's Luns at once: desks never hold some while waiting for the rest.
            names = try readers.createChannels(deviceNames: deviceNames, waitingUpTo: .seconds(300))
        } catch {
            readers.close()
            try? FileManager.default.removeItem(atPath: directory)
            throw error
        }
        self.names = names
    }

    /// Makes a desk, waiting for free readers on a thread of its own (never on Swift's shared
    /// concurrency pool). Parameters and errors as ``init(readers:personality:timeScale:separateFields:)``.
    public static func open(
        readers count: Int = 1, personality: String? = nil, timeScale: Double = defaultTimeScale, separateFields: Bool = false
    ) async throws -> SimulatedDesk {
        let executor = BlockingExecutor(name: "desk-open")
        defer { executor.shutdown() }
        return try await executor.run {
            try SimulatedDesk(readers: count, personality: personality, timeScale: timeScale, separateFields: separateFields)
        }
    }

    deinit { close() }

    /// The control client of reader `index` (see the driver's control protocol: `place-card`,
    /// `place-tag`, `place-terminal`, `status`, `personality`, `timescale`, …).
    public func control(_ index: Int = 0) -> SimulatedReaderControl {
        SimulatedReaderControl(socketPath: "\(directory)/\(index)/control.sock")
    }

    /// Closes the readers and removes the directory; idempotent.
    public func close() {
        readers.close()
        try? FileManager.default.removeItem(atPath: directory)
    }
}
