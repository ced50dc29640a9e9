import Foundation
import PCSCCore
import PCSCSandbox
import SecureElementCredential

/// A phone (or other NFC terminal) the simulator can hold to the emulating reader: one of the
/// terminal models of ACR122Simulator (`ExternalTerminal.catalog`), which read an emulated NFC
/// Forum Type 4 Tag the way the real ones do (docs/terminal-models.md).
public struct SimulatedPhone: Sendable, Hashable, CustomStringConvertible {
    /// The model's name in the simulator's catalog, e.g. `android-t4t-read`.
    public let script: String

    /// A terminal of the simulator's catalog by its name (`place-terminal script=<name>`).
    public init(script: String) { self.script = script }

    /// Android reading a Type 4 Tag with the rules of android-15.0.0_r23 (strict, Android 12 and later).
    public static let android = SimulatedPhone(script: "android-t4t-read")
    /// Android reading a Type 4 Tag with the rules of android-11.0.0_r1 (lenient, Android 8 to 11).
    public static let android11 = SimulatedPhone(script: "android11-t4t-read")
    /// An iPhone (Core NFC, NFCNDEFReaderSession) reading a Type 4 Tag, probing first.
    public static let iPhone = SimulatedPhone(script: "ios-t4t-read")

    /// The script name.
    public var description: String { script }
}

/// What a simulated phone did, from the simulator's `terminal-result` (docs/terminal-models.md).
public struct SimulatedPhoneReading: Sendable, Hashable, CustomStringConvertible {
    /// `passed` (it read the tag), `failed` (it gave up: see ``stage`` and ``reason``),
    /// `mismatch`, `target-left`, or `running`/`waiting` when the wait ended first.
    public let result: String
    /// The NDEF message it read (the bytes of NFC Forum NDEF 1.0 §3), when it read one.
    public let ndefMessage: [UInt8]?
    /// What it read, in a line (the model's summary), when it read anything.
    public let read: String?
    /// The records it read, in its own words (e.g. `URI https://example.com`), `; `-separated.
    public let items: String?
    /// Where a failed model gave up, and why.
    public let stage: String?
    /// Why a failed model gave up.
    public let reason: String?
    /// How many C-APDUs it sent.
    public let exchanges: Int
    /// The whole reply, for anything else it holds.
    public let reply: SimulatedReaderReply

    /// Reads the fields of a `terminal-result` reply.
    public init(reply: SimulatedReaderReply) {
        self.reply = reply
        result = reply["result"] ?? "unknown"
        ndefMessage = reply.bytes("ndef")
        read = reply["read"]
        items = reply["items"]
        stage = reply["stage"]
        reason = reply["reason"]
        exchanges = reply["exchanges"].flatMap { Int($0) } ?? 0
    }

    /// Whether the phone read the tag to the end.
    public var passed: Bool { result == "passed" }

    /// `passed: URI https://example.com (6 C-APDUs)` or `failed at <stage>: <reason>`.
    public var description: String {
        if passed { return "passed: \(items ?? "no records") (\(exchanges) C-APDUs)" }
        return "\(result)" + (stage.map { " at \($0)" } ?? "") + (reason.map { ": \($0)" } ?? "")
    }
}

/// A `CredentialSession` over an in-process simulated ACR122U, with simulated phones to hold to it:
/// no pcscd, no root, no namespaces, no hardware (docs/test-infrastructure.md). Sessions are the
/// ones `CredentialSession.startSession(on:readerName:credentials:authorizer:clock:timings:)` makes
/// on the desk's in-process PC/SC client, so everything between the session and the simulated
/// PN532 is the production code (the PN532 emulation backend, the ACR122U escape path, pcscd's
/// rules).
///
///     let desk = try await SimulatedSessionDesk.open(credentials: [credential])
///     defer { desk.close() }
///     let session = try await desk.startSession()
///     try await session.enterWiredMode(using: credential)
///     try await session.performTransaction(using: credential)
///     try await desk.present(.android)
///     let reading = try await desk.reading()   // reading.ndefMessage: what the phone read
///     await session.invalidate()
///
/// App code that calls `CredentialSession.startSession()` itself runs unchanged inside
/// ``asDefault(_:)``. The simulated reader runs on the desk's time scale
/// (`SimulatedDesk.defaultTimeScale`: one simulated second in 10 ms); sessions run on the clock
/// given (real time by default).
public final class SimulatedSessionDesk: Sendable {
    /// The simulated readers (one, an ACR122U with escape commands enabled by default).
    public let desk: SimulatedDesk
    /// What sessions on this desk list, and who approves their transactions.
    public let defaults: SessionDefaults.Override
    /// The reader sessions emulate on, `ACS ACR122U PICC Interface 00 00`.
    public var readerName: String { desk.names[0] }

    private init(desk: SimulatedDesk, defaults: SessionDefaults.Override) {
        self.desk = desk
        self.defaults = defaults
    }

    /// Opens a desk with one simulated ACR122U.
    /// - Parameters:
    ///   - credentials: what `listCredentials()` returns (e.g. from `CredentialFile.makeCredential()`).
    ///   - authorizer: who approves transactions; default approves all.
    ///   - personality: the reader's personality (see `SimulatedDesk`), default `ccid-escape-enabled`.
    ///   - timeScale: wall-clock seconds per simulated second of the reader.
    ///   - clock: the sessions' clock; default the continuous clock.
    ///   - timings: the sessions' rules (60 s card emulation, 15 s wired idle, …); default
    ///     `SessionTimings.standard`.
    /// - Throws: `InProcessReaderError` when no simulated reader frees up (30 s bound).
    public static func open(
        credentials: [Credential], authorizer: any TransactionAuthorizer = PolicyAuthorizer.approveAll,
        personality: String? = nil, timeScale: Double = SimulatedDesk.defaultTimeScale,
        clock: any SessionClock = ContinuousSessionClock(), timings: SessionTimings = .standard
    ) async throws -> SimulatedSessionDesk {
        let desk = try await SimulatedDesk.open(readers: 1, personality: personality, timeScale: timeScale)
        return SimulatedSessionDesk(
            desk: desk,
            defaults: SessionDefaults.Override(
                client: desk.client, readerName: desk.names[0], credentials: credentials, authorizer: authorizer, clock: clock,
                timings: timings))
    }

    /// Starts a session in `management` on the desk's reader (one at a time: a second one before
    /// the first is invalidated throws `resourceUnavailable`).
    /// - Throws: `CredentialSession.ErrorCode` as `CredentialSession.startSession()`.
    public func startSession() async throws(CredentialSession.ErrorCode) -> CredentialSession {
        try await CredentialSession.startSession(
            on: defaults.client, readerName: defaults.readerName, credentials: defaults.credentials,
            authorizer: defaults.authorizer, clock: defaults.clock, timings: defaults.timings)
    }

    /// Runs `body` with `CredentialSession.startSession()` landing on this desk
    /// (`SessionDefaults.override`, SecureElementCredential): app code runs unchanged against the
    /// simulated reader.
    /// - Throws: what `body` throws.
    public func asDefault<T: Sendable>(_ body: () async throws -> T) async rethrows -> T {
        try await SessionDefaults.$override.withValue(defaults, operation: body)
    }

    /// Holds `phone` to the reader (`place-terminal`): it reads whatever the reader emulates, now
    /// or once card emulation starts.
    /// - Parameters:
    ///   - phone: the terminal model to run (``SimulatedPhone/android``, ``SimulatedPhone/iPhone``, …).
    ///   - id: the phone's name on the desk, for ``reading(of:waitingUpTo:)``.
    /// - Throws: `SimulatedReaderError` when the simulator refuses (an unknown script, the id in use).
    public func present(_ phone: SimulatedPhone, id: String = "phone") async throws {
        let control = desk.control(0)
        _ = try await Self.off { try control.request("place-terminal", ["script": phone.script, "id": id]) }
    }

    /// Takes the phone away from the reader (`remove`).
    /// - Throws: `SimulatedReaderError` for an id not on the desk.
    public func remove(phone id: String = "phone") async throws {
        let control = desk.control(0)
        _ = try await Self.off { try control.request("remove", ["peer": id]) }
    }

    /// What the phone did: waits (at most `limit`, wall clock) until its run ended.
    /// - Throws: `SimulatedReaderError` for an id not on the desk.
    public func reading(of id: String = "phone", waitingUpTo limit: Duration = .seconds(10)) async throws -> SimulatedPhoneReading {
        let control = desk.control(0)
        let milliseconds = max(0, min(60_000, Int(limit.components.seconds * 1000) + Int(limit.components.attoseconds / 1_000_000_000_000_000)))
        let reply = try await Self.off {
            try control.request("terminal-result", ["peer": id, "wait-ms": String(milliseconds)], timeout: limit + .seconds(5))
        }
        return SimulatedPhoneReading(reply: reply)
    }

    /// Closes the readers; call after the sessions' `invalidate()` (which restores the reader).
    public func close() {
        desk.close()
    }

    /// Runs a blocking control request on a thread of its own, never on Swift's shared pool.
    private static func off<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        let executor = BlockingExecutor(name: "simulated desk control")
        defer { executor.shutdown() }
        return try await executor.run(body)
    }
}
