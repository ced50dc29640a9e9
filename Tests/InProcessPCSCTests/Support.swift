import Foundation
import ISO7816
import InProcessPCSC
import PCSC
import PCSCSandbox
import PN53x
import Synchronization
import SecbridgeTesting
import SimulatedACR122IFD
import Testing

/// Runs blocking work (in-process PC/SC calls) on a dedicated thread of its own, never on Swift's
/// shared concurrency pool.
func blocking<T: Sendable>(_ name: String = "inproc-test", _ body: @escaping @Sendable () throws -> T) async throws -> T {
    let executor = BlockingExecutor(name: name)
    defer { executor.shutdown() }
    return try await executor.run(body)
}


/// The error `body` throws as a PCSCError, or nil when it succeeds (another error fails the test).
func pcscError<T>(_ body: () throws -> T) -> PCSCError? {
    do {
        _ = try body()
        return nil
    } catch let error as PCSCError {
        return error
    } catch {
        Issue.record("expected a PCSCError, got \(error)")
        return nil
    }
}

/// Luns for the benches of this test target: the driver serves 16 readers per process, shared
/// with other test targets of the same test bundle (the differential test), so benches take at
/// most 12, all of a bench's at once (no bench waits holding some).
actor LunPermits {
    static let shared = LunPermits(capacity: 12)
    private var free: Int
    private var waiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []

    init(capacity: Int) { free = capacity }

    func acquire(_ count: Int) async {
        if waiters.isEmpty && free >= count {
            free -= count
            return
        }
        await withCheckedContinuation { waiters.append((count, $0)) }
    }

    func release(_ count: Int) {
        free += count
        while let first = waiters.first, first.count <= free {
            free -= first.count
            waiters.removeFirst()
            first.continuation.resume()
        }
    }
}

/// One test's in-process readers: a directory of its own under /tmp (short enough for the control
/// socket's 107-byte limit), so tests run in parallel without sharing a field or a socket.
final class Bench: Sendable {
    static let counter = Atomic<Int>(0)

    let directory: String
    let readers = InProcessReaders()
    let permits: Int
    /// The readers' PC/SC names by their directory's last component (`a`, `b`).
    private let names = Mutex<[String: String]>([:])

    /// Makes the directory and reserves `readers` Luns; no reader yet.
    static func make(readers: Int = 1) async throws -> Bench {
        await LunPermits.shared.acquire(readers)
        do {
            return try Bench(permits: readers)
        } catch {
            await LunPermits.shared.release(readers)
            throw error
        }
    }

    private init(permits: Int) throws {
        self.permits = permits
        let number = Self.counter.add(1, ordering: .relaxed).oldValue
        directory = "/tmp/inproc.\(getpid()).\(number)"
        try? FileManager.default.removeItem(atPath: directory)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    /// The readers' time scale unless `options` give one: the 5 s MCU timeout takes 50 ms.
    static let timeScale = 0.01

    /// Opens a reader on `<directory>/<sub>` with the DEVICENAME `options` (e.g. `:personality=…`),
    /// at ``timeScale`` unless `options` hold a `timescale=`.
    /// Waits for a free Lun on a thread of its own, never on Swift's shared pool (two tests
    /// blocked there would starve the tests whose readers they wait for).
    @discardableResult
    func addReader(_ sub: String = "a", options: String = "") async throws -> String {
        try await blocking("bench-add") { [self] in try addReaderOnThisThread(sub, options: options) }
    }

    /// ``addReader(_:options:)`` for code already on a thread of its own (inside `blocking`).
    @discardableResult
    func addReaderOnThisThread(_ sub: String = "a", options: String = "") throws -> String {
        // A reader on a virtual clock (`clock=`) takes no time scale.
        let scaled = options.contains(":timescale=") || options.contains(":clock=")
            ? options : options + SimulatedReaders.timeScaleOption(Self.timeScale)
        let name = try readers.createChannel(deviceName: directory + "/" + sub + scaled, waitingUpTo: .seconds(300))
        names.withLock { $0[sub] = name }
        return name
    }

    /// Hands a typed request to the reader in `<directory>/<sub>`, in this process (no socket).
    /// - Throws: `SimulatedReaderError` as the socket replies; `connect` for a reader not added.
    @discardableResult
    func control(_ request: SimulatorRequest, _ sub: String = "a") throws(SimulatedReaderError) -> SimulatedReaderReply {
        guard let name = names.withLock({ $0[sub] }) else {
            throw SimulatedReaderError(code: "connect", reason: "no reader '\(sub)' on this bench")
        }
        return try readers.reply(to: request, reader: name)
    }

    /// The control client of the reader in `<directory>/<sub>`.
    func control(_ sub: String = "a") -> SimulatedReaderControl {
        SimulatedReaderControl(socketPath: directory + "/" + sub + "/control.sock")
    }

    /// Closes the readers, removes the directory and gives the Luns back.
    func close() {
        readers.close()
        try? FileManager.default.removeItem(atPath: directory)
        let permits = permits
        Task { await LunPermits.shared.release(permits) }
    }
}

/// The escape code of the default personality (libccid with ifdDriverOptions 0x0001).
let ccidEscape: UInt32 = 0x4200_0001
/// The firmware version pseudo-APDU (ACR122U API v2.04 §6.3).
let firmwareRequest = hex("FF 00 48 00 00")
/// SELECT of the NFC Forum Type 4 Tag application (iso14443-t4t-ndef.md §4).
let selectT4T = hex("00 A4 04 00 07 D2 76 00 00 85 01 01 00")
