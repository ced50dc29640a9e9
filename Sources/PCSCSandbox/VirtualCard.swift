import Foundation
import Synchronization

/// A virtual smart card: vsmartcard's `vicc` connected to a vpcd reader of a ``PrivatePCSCD``.
///
/// vicc runs with the interpreter of the harness's virtual environment (it needs `pycryptodome`)
/// and Debian's module directory on `PYTHONPATH`:
///
///     PYTHONPATH=/usr/lib/python3/site-packages/virtualsmartcard \
///         <repo>/.venv-vicc/bin/python /usr/bin/vicc -t iso7816 -P PORT
///
/// The `iso7816` card presents the ATR `3B 95 13 81 01 80 73 FF 01 00 0B`, answers SELECT of an
/// unknown AID with `6A 82` and READ BINARY without a current EF with `69 86`.
///
/// Keep vicc traffic short: stock vpcd writes the length prefix and the payload of each APDU in two
/// writes, so Nagle's algorithm on vpcd's side and delayed ACK on vicc's cost about 48 ms per APDU
/// (about 20 APDU/s; docs/vpcd-protocol.md §3).
/// vicc exits by itself when its pcscd goes away; ``start(timeout:)`` brings it back.
public final class VirtualCard: Sendable {
    /// The vpcd TCP port vicc connects to (slot 0 of the ``ReaderConfEntry/vpcd(port:friendlyName:)`` reader).
    public let port: UInt16
    /// The reader in which the card appears, e.g. `Virtual PCD 00 00`.
    public let readerName: String
    /// vicc's card type (`-t`), e.g. `iso7816`.
    public let cardType: String
    /// The environment (`PCSCLITE_CSOCK_NAME`) of the pcscd the card is watched through.
    public let pcscEnvironment: [String: String]
    /// vicc's stdout and stderr, appended to across restarts.
    public let logURL: URL

    private struct State {
        var child: ChildProcess?
        var cleanupToken: UUID?
        var atr: [UInt8]?
    }
    private let state = Mutex(State())

    /// - Parameters:
    ///   - port: the vpcd port (the reader's `DEVICENAME /dev/null:0xPORT`).
    ///   - readerName: the reader the card appears in.
    ///   - cardType: vicc's `-t` card type.
    ///   - pcscEnvironment: an environment with `PCSCLITE_CSOCK_NAME` for the pcscd that hosts the reader.
    ///   - logURL: where vicc's output goes.
    public init(port: UInt16, readerName: String, cardType: String = "iso7816",
                pcscEnvironment: [String: String], logURL: URL) {
        self.port = port
        self.readerName = readerName
        self.cardType = cardType
        self.pcscEnvironment = pcscEnvironment
        self.logURL = logURL
    }

    /// Whether the vicc process is alive.
    public var isRunning: Bool { state.withLock { $0.child.map { !$0.hasExited } ?? false } }

    /// vicc's process id while it runs, else nil: tests stop it with SIGSTOP to stage a card that
    /// stops answering inside SCardTransmit (vpcd then waits for its answer), and SIGCONT it after.
    public var processIdentifier: Int32? { state.withLock { $0.child.flatMap { $0.hasExited ? nil : $0.pid } } }

    /// The ATR the card presented when it last appeared, e.g. `3B 95 13 81 01 80 73 FF 01 00 0B`.
    public var atr: [UInt8]? { state.withLock { $0.atr } }

    /// Starts vicc (unless it runs) and waits until pcscd reports a card in ``readerName``.
    ///
    /// The card appears about 0.3–0.5 s after launch (Python start-up plus vpcd's presence poll).
    /// - Parameter timeout: the longest wait for the card.
    /// - Returns: the card's ATR.
    /// - Throws: ``HarnessError`` — `.missingDependency` (run `scripts/install-deps.sh`),
    ///   `.launchFailed` (vicc exited; its log tail is attached), `.timeout`.
    @discardableResult
    public func start(timeout: Duration = .seconds(10)) throws -> [UInt8] {
        if let running = state.withLock({ $0.child }), !running.hasExited {
            // Still running: the card counts only if pcscd shows it (after a pcscd restart vicc
            // is about to exit), else the old vicc makes way for a new one.
            let reader = try? PCSCScan.status(environment: pcscEnvironment).first { $0.name == readerName }
            if let reader, reader.isCardPresent, let atr = reader.atr {
                state.withLock { $0.atr = atr }
                return atr
            }
            running.terminate(grace: .seconds(1))
        }
        let python = try HarnessPaths.viccPython()
        let modules = try HarnessPaths.viccModuleDirectory()
        let vicc = try HarnessPaths.requireTool("vicc", package: "vsmartcard-vpicc")
        var environment = ProcessInfo.processInfo.environment
        environment["PYTHONPATH"] = modules
        environment["PYTHONUNBUFFERED"] = "1"
        let child = try ChildProcess(name: "vicc", executable: python,
                                     arguments: [vicc, "-t", cardType, "-P", String(port)],
                                     environment: environment, logURL: logURL)
        state.withLock { state in
            state.child = child
            if state.cleanupToken == nil {
                state.cleanupToken = ExitCleanup.register { [self] in self.stopForExit(grace: .seconds(1)) }
            }
        }
        do {
            let atr = try waitForCard(present: true, timeout: timeout, child: child)
            state.withLock { $0.atr = atr }
            return atr ?? []
        } catch {
            child.terminate(grace: .milliseconds(500))
            throw error
        }
    }

    /// Stops vicc (SIGTERM, then SIGKILL) and waits until pcscd no longer reports a card in
    /// ``readerName`` (when pcscd runs). The card is gone within about 0.4 s (pcscd's presence poll).
    /// - Throws: ``HarnessError/Code/timeout`` if the card still shows after `timeout`.
    public func stop(timeout: Duration = .seconds(5)) throws {
        let child = state.withLock { state in
            defer { state.child = nil; state.atr = nil }
            return state.child
        }
        guard let child else { return }
        child.terminate(grace: .seconds(1))
        _ = try waitForCard(present: false, timeout: timeout, child: nil)
    }

    /// Ends vicc without watching the reader, for the exit handler.
    func stopForExit(grace: Duration) {
        let child = state.withLock { state in
            defer { state.child = nil }
            return state.child
        }
        child?.terminate(grace: grace)
    }

    /// Stops vicc and starts it again.
    /// - Returns: the card's ATR.
    /// - Throws: as ``stop(timeout:)`` and ``start(timeout:)``.
    @discardableResult
    public func restart(timeout: Duration = .seconds(10)) throws -> [UInt8] {
        try stop(timeout: timeout)
        return try start(timeout: timeout)
    }

    /// The last lines of vicc's log.
    public func logTail(lines: Int = 20) -> String { LogFile.tail(of: logURL, lines: lines) }

    /// Polls `pcsc_scan -c -n` every 50 ms until the card is (or is not) in ``readerName``.
    /// When pcscd does not answer while waiting for absence, the card counts as gone.
    private func waitForCard(present: Bool, timeout: Duration, child: ChildProcess?) throws -> [UInt8]? {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        var lastAnswer = "no answer yet"
        while clock.now < deadline {
            if let child, child.hasExited {
                throw HarnessError(code: .launchFailed,
                                   reason: "vicc exited with status \(child.exitStatus ?? -1) before the card appeared "
                                       + "in \(readerName) (is pcscd running with a vpcd reader on port \(port)?)",
                                   logTail: child.logTail())
            }
            do {
                let readers = try PCSCScan.status(environment: pcscEnvironment, timeout: .seconds(2))
                let reader = readers.first { $0.name == readerName }
                if present, let reader, reader.isCardPresent { return reader.atr }
                if !present, !(reader?.isCardPresent ?? false) { return nil }
                lastAnswer = reader.map { "\($0.name): \($0.state)" } ?? "no reader \(readerName) in \(readers.map(\.name))"
            } catch let error as HarnessError where error.code == .launchFailed || error.code == .timeout {
                if !present { return nil }
                lastAnswer = error.reason
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
        throw HarnessError(code: .timeout,
                           reason: "the card did not \(present ? "appear in" : "leave") \(readerName) within \(timeout): \(lastAnswer)",
                           logTail: child?.logTail() ?? logTail())
    }
}
