// `secbridge reset`, and the reader clean-up that runs after Ctrl-C (SIGINT, SIGTERM) or an error
// in the commands that change reader settings (emulate, read --pn532, demo).
import SecbridgeCLI
import Foundation
import ISO7816
import PCSC
import PCSCCore
import PN53x

#if canImport(Glibc)
import Glibc
#endif

extension SecbridgeCLI {
    static let resetCommand = Command(
        name: "reset",
        abstract: SecbridgeCLI.toolAbstract("reset"),
        usage: "[--reader NAME|INDEX] [--device tty:PATH] [--json]",
        discussion: """
            Connects DIRECT (escape commands; if the driver refuses them and a card is present, SHARED
            with pseudo-APDUs through SCardTransmit) and sends, printing each command and answer:
              GetFirmwareVersion    FF 00 00 00 02 D4 02        aborts a pending PN532 command
              InRelease             FF 00 00 00 03 D4 52 00     releases every target
              RF field on           FF 00 00 00 04 D4 32 01 01
              PICC parameter FF     FF 00 51 FF 00              automatic polling back on
              LEDs idle             FF 00 40 0D 04 00 00 00 00  red on, green off
              MCU timeout           FF 00 41 01 00              one 5-second step
            Exit status 0 when every step got the expected answer; otherwise unplug and replug
            the reader.

            With --device tty:/dev/ttyUSB0 (or nfcpy's tty:USB0) the PN532 is a bare board on a
            serial line (docs/pn532-uart.md §11), reached without PC/SC, and put back in its idle
            state: the ACK frame (aborts a pending command), the wake-up (55 preamble,
            SAMConfiguration), GetFirmwareVersion, InRelease 00, RF field off (D4 32 01 00) and the
            retries back to FF 01 FF (D4 32 05 FF 01 FF). The PICC parameter, LEDs and MCU timeout
            are the ACR122U's and have no counterpart there.

            Example:
              $ secbridge reset --reader acr122
              reader: ACS ACR122U PICC Interface 00 00
              connection: DIRECT, escape code 0x42000001, firmware ACR122U207
              abort a pending PN532 command (GetFirmwareVersion): FF 00 00 00 02 D4 02 → D5 03 32 01 06 07 90 00  ok
              …
              reader restored
            """,
        options: [
            .reader("The ACR122U: an index from `secbridge readers` or part of its name."),
            .value("device", "tty:PATH", "A PN532 board on this serial port (tty:/dev/ttyUSB0, or tty:USB0) instead of an ACR122U."),
            .flag("json", "Print a JSON object {reader, connection, steps: [{name, exchanges: [{command, reply}], ok, failure}], restored}."),
        ],
        run: runReset
    )

    @Sendable static func runReset(_ invocation: Invocation) throws -> Int32 {
        guard invocation.arguments.positional.isEmpty else {
            throw CLIError.usage("reset takes no arguments, got '\(invocation.arguments.positional[0])'")
        }
        if let device = invocation.arguments.value("device") {
            if invocation.arguments.value("reader") != nil {
                throw twoReadersNamed(device: device)
            }
            let path = try SerialDeviceName.path(device)
            return try runSerialReset(invocation, path: path) { PN532SerialLink(stream: try PN532TTY(path: path)) }
        }
        let context = try openContext(invocation)
        defer { try? context.release() }
        let (readers, states) = try listReadersWithStates(context)
        let reader = try selectReader(
            invocation.arguments.value("reader"), in: readers,
            preferring: { ACR122Detection.nameSuggestsACR122($0) })
        let present = states.first { $0.readerName == reader }?.eventFlags.contains(.present) ?? false
        let json = invocation.json
        if !json { invocation.out("reader: \(reader)") }
        var escapeRefused = false
        var held = false
        var lines: [String] = []
        var outcomes: [ACR122RestoreOutcome] = []
        let restored = ReaderRestore.restore(
            reader, cardPresent: present, connector: ReaderRestore.connector(invocation.client), escapeRefused: &escapeRefused,
            held: &held, say: { line in if json { lines.append(line) } else { invocation.out(line) } },
            onOutcome: { outcomes.append($0) })
        var failure: String?
        if !restored && held && outcomes.isEmpty {
            // Nothing reached the reader: it is not stuck, another program has it.
            failure = "\(reader) was not reset: another program holds it (exclusive access, or a PC/SC transaction it keeps), so nothing was sent; close that program (pcsc_scan, a browser or a middleware that keeps the card) and run `secbridge reset` again"
        } else if !restored {
            failure = escapeRefused
                ? "\(reader) cannot be reached without a card: the CCID driver refuses escape commands; enable them (`secbridge doctor` shows the ifdDriverOptions edit), or place a card on the reader and run `secbridge reset` again"
                : "\(reader) was not fully restored: unplug the reader and plug it in again (then `secbridge doctor`)"
        }
        return try finishReset(
            invocation, reader: reader, connection: lines.last { $0.hasPrefix("connection: ") }.map { String($0.dropFirst(12)) },
            steps: outcomes.map { ($0.name, $0.exchanges, $0.failure) }, restored: restored, failure: failure)
    }

    /// The end of `reset`, for an ACR122U and a serial board alike: with --json the object
    /// {reader, connection, steps: [{name, exchanges: [{command, reply}], ok, failure}], restored,
    /// error}; then the failure thrown, or "reader restored".
    static func finishReset(
        _ invocation: Invocation, reader: String, connection: String?,
        steps: [(name: String, exchanges: [(command: [UInt8], reply: [UInt8])], failure: String?)], restored: Bool, failure: String?
    ) throws(CLIError) -> Int32 {
        if invocation.json {
            invocation.out(resetJSON(reader: reader, connection: connection, steps: steps, restored: restored, failure: failure))
        }
        if let failure { throw CLIError.failure(failure) }
        if !invocation.json { invocation.out("reader restored") }
        return exitSuccess
    }

    private static func resetJSON(
        reader: String, connection: String?, steps: [(name: String, exchanges: [(command: [UInt8], reply: [UInt8])], failure: String?)],
        restored: Bool, failure: String?
    ) -> String {
        var members: [(String, JSONValue)] = [
            ("reader", .string(reader)),
            ("connection", connection.map { .string($0) } ?? .null),
            ("steps", .array(steps.map { outcome in
                var step: [(String, JSONValue)] = [
                    ("name", .string(outcome.name)),
                    ("exchanges", .array(outcome.exchanges.map { .object([("command", .hex($0.command)), ("reply", .hex($0.reply))]) })),
                    ("ok", .bool(outcome.failure == nil)),
                ]
                if let why = outcome.failure { step.append(("failure", .string(why))) }
                return .object(step)
            })),
            ("restored", .bool(restored)),
        ]
        if let failure { members.append(("error", .string(failure))) }
        return JSONValue.object(members).prettySerialized()
    }
}

/// The full restore of an ACR122U on a connection of its own (`PN532.restoreReaderDefaults(.all)`).
enum ReaderRestore {
    /// Opens a connection to a reader: DIRECT when `shared` is false, else SHARED with a card.
    typealias Connector = @Sendable (_ reader: String, _ shared: Bool) throws -> (channel: any CardChannel, close: @Sendable () -> Void)

    /// Through `client` (the pcscd this process talks to, or the in-process readers); every call is
    /// bounded by the call watchdog.
    static func connector(_ client: any PCSCClient) -> Connector {
        { reader, shared in try connect(client, reader, shared) }
    }

    private static func connect(
        _ client: any PCSCClient, _ reader: String, _ shared: Bool
    ) throws -> (channel: any CardChannel, close: @Sendable () -> Void) {
        let context = try CallWatchdog.shared.guarding("SCardEstablishContext") { () throws(PCSCError) in try client.establishContext() }
        do {
            let handle = try CallWatchdog.shared.guarding("SCardConnect") { () throws(PCSCError) in
                shared
                    ? try context.connect(to: reader, share: .shared, protocols: .any)
                    : try context.connect(to: reader, share: .direct, protocols: [])
            }
            return (GuardedChannel(handle), { try? handle.disconnect(.leave); try? context.release() })
        } catch {
            try? context.release()
            throw error
        }
    }

    /// Connects, confirms an ACR122U (firmware string) and runs every restore step, saying each.
    /// A DIRECT connection comes first; when it fails (e.g. escape commands refused) and a card is
    /// present, a SHARED one carries the pseudo-APDUs through SCardTransmit.
    /// - Parameter escapeRefused: set when the reader could not be reached because the driver
    ///   refuses escape commands (libccid without ifdDriverOptions 0x0001) and no card was present.
    /// - Parameter held: set when a connection was refused because another program keeps the
    ///   reader (SCARD_E_SHARING_VIOLATION, or SCARD_E_TIMEOUT waiting for its transaction).
    /// - Returns: whether every step got its expected answer.
    static func restore(
        _ reader: String, cardPresent: Bool, connector: Connector,
        escapeRefused: UnsafeMutablePointer<Bool>? = nil, held: UnsafeMutablePointer<Bool>? = nil, say: (String) -> Void,
        onOutcome: (ACR122RestoreOutcome) -> Void = { _ in }
    ) -> Bool {
        for shared in cardPresent ? [false, true] : [false] {
            let channel: any CardChannel
            let close: @Sendable () -> Void
            do {
                (channel, close) = try connector(reader, shared)
            } catch {
                if let error = error as? PCSCError, error == .sharingViolation || error == .timeout { held?.pointee = true }
                say("connection \(shared ? "SHARED" : "DIRECT") failed: \(error)")
                continue
            }
            defer { close() }
            let link: ACR122Link
            do {
                link = try ACR122Link.open(channel: channel, readerName: reader, path: shared ? .transmit : .escape)
            } catch {
                if case ACR122Error.escapeCommandsNotEnabled = error, !shared { escapeRefused?.pointee = true }
                say("connection \(shared ? "SHARED" : "DIRECT"): \(error)")
                continue
            }
            let path = link.usesEscapeCommands
                ? "DIRECT, escape code \(hex32(link.escapeCode))"
                : "SHARED (card present), pseudo-APDUs through SCardTransmit"
            say("connection: \(path), firmware \(link.firmware?.text ?? "unknown")")
            do {
                try PN532(link: link).restoreReaderDefaults(.all) { outcome in
                    say("\(outcome.name): \(outcome)")
                    onOutcome(outcome)
                }
                return true
            } catch {
                return false
            }
        }
        return false
    }

    static func hex32(_ value: UInt32) -> String {
        let digits = String(value, radix: 16, uppercase: true)
        return "0x" + String(repeating: "0", count: max(0, 8 - digits.count)) + digits
    }
}

/// The clean-up of the readers a command changed: on an error, and on SIGINT or SIGTERM.
///
/// `wrapping(_:)` runs a command with a clean-up of its own, reachable from the command's thread
/// (`track(_:)`). A command calls `track` once it starts changing a reader's settings. Then:
/// - the command throws: every tracked reader gets `ReaderRestore.restore` (the whole sequence on a
///   connection of its own), its lines on standard error, then the error is reported as usual;
/// - SIGINT/SIGTERM: the signal handler only sets a flag (`installInterruptHandler`); a watcher
///   thread sees it, lets the command end its session (emulate ends card emulation within one MCU
///   timeout) for at most `sessionBound`, then the readers are restored (each bounded by
///   `restoreBound`) and the process exits with 128 + the signal (130 SIGINT, 143 SIGTERM). When the command returns in time, the same
///   happens on its own thread.
///
/// Bounds: 8 s for the session (one 5 s MCU step of a pending TgInitAsTarget, plus the restore the
/// session does itself), 12 s per reader for the restore: Ctrl-C ends the process within 20 s per
/// reader even when the reader stopped answering.
final class ReaderCleanup: @unchecked Sendable {
    // @unchecked: every field is behind `lock`.
    static let sessionBound: Duration = .seconds(8)
    static let restoreBound: Duration = .seconds(12)
    private static let threadKey = "secbridge.reader-cleanup"

    private let lock = NSLock()
    private var readers: [(name: String, connector: ReaderRestore.Connector)] = []
    private var exitHooks: [() -> Void] = []
    private var finished = false
    /// Signalled when the command's run returned (with `finished` set), so the watcher sleeps in
    /// poll(2) instead of checking a flag.
    private let runReturned = Completion()
    private var claimed = false
    let console: any Console
    /// The client the command reaches its readers with; restores go through it too.
    let client: any PCSCClient

    init(console: any Console, client: any PCSCClient) {
        self.console = console
        self.client = client
    }

    /// The clean-up of the command running on this thread, if any.
    static var current: ReaderCleanup? { Thread.current.threadDictionary[threadKey] as? ReaderCleanup }

    /// Marks `reader` as changed by the running command (no-op outside `wrapping`).
    static func track(_ reader: String, connector: ReaderRestore.Connector? = nil) {
        current?.track(reader, connector: connector)
    }

    /// - Parameter connector: how to reach `reader` for the restore; by default through ``client``.
    func track(_ reader: String, connector: ReaderRestore.Connector? = nil) {
        let connector = connector ?? ReaderRestore.connector(client)
        lock.withLock {
            if !readers.contains(where: { $0.name == reader }) { readers.append((reader, connector)) }
        }
    }

    /// Runs `hook` before a forced exit after a signal (e.g. stopping a private pcscd); a command
    /// that returns runs its own clean-up instead.
    func atForcedExit(_ hook: @escaping () -> Void) { lock.withLock { exitHooks.append(hook) } }

    /// Runs `body`; when it throws or a signal came meanwhile, restores the tracked readers now
    /// (while they are still reachable, e.g. before a private pcscd stops) and forgets them.
    func restoringBeforeReturn<T>(_ body: () throws -> T) throws -> T {
        do {
            let value = try body()
            if interrupted() { restoreNow(because: "interrupted") }
            return value
        } catch {
            restoreNow(because: interrupted() ? "interrupted" : "after the error")
            throw error
        }
    }

    private func restoreNow(because reason: String) {
        let mine = lock.withLock { () -> Bool in
            defer { claimed = true }
            return !claimed
        }
        guard mine else { return }
        restoreAll(because: reason)
        lock.withLock {
            readers = []
            claimed = false
        }
    }

    /// `run` with the clean-up around it (see the type).
    static func wrapping(
        _ run: @escaping @Sendable (Invocation) throws -> Int32
    ) -> @Sendable (Invocation) throws -> Int32 {
        { invocation in
            let cleanup = ReaderCleanup(console: invocation.console, client: invocation.client)
            let dictionary = Thread.current.threadDictionary
            let previous = dictionary[threadKey]
            dictionary[threadKey] = cleanup
            defer { dictionary[threadKey] = previous }
            installInterruptHandler()
            cleanup.startWatcher()
            let result: Result<Int32, any Error>
            do { result = .success(try run(invocation)) } catch { result = .failure(error) }
            let mine = cleanup.lock.withLock { () -> Bool in
                cleanup.finished = true
                defer { cleanup.claimed = true }
                return !cleanup.claimed
            }
            cleanup.runReturned.signal()
            if interrupted() {
                guard mine else {
                    // The watcher restores and exits; wait for it (bounded by its own bounds).
                    while true { sleepMilliseconds(1000) }
                }
                cleanup.restoreAll(because: "interrupted")
                if case .failure(let error) = result { invocation.console.err("secbridge: error: \(message(error))\n") }
                return interruptedExitStatus()
            }
            if case .failure(let error) = result {
                cleanup.restoreAll(because: "after the error")
                throw error
            }
            return try result.get()
        }
    }

    private static func message(_ error: any Error) -> String {
        if let error = error as? CLIError, case .failure(let text) = error { return text }
        return "\(error)"
    }

    /// A thread that sleeps in poll(2) on the interrupt pipe (written by the signal handler, which
    /// does nothing else) and the run's return, and restores on an interrupt.
    private func startWatcher() {
        startThread(name: "secbridge-intr") { [self] in
            runReturned.waitSignalledOrInterrupted(until: nil)
            if interrupted() && !lock.withLock({ finished }) { watchInterrupt() }
        }
    }

    private func watchInterrupt() {
        let names = lock.withLock { readers.map(\.name) }
        if !names.isEmpty {
            console.err("secbridge: interrupted: ending the session, then restoring \(names.joined(separator: ", ")) (at most \(Self.sessionBound.components.seconds + Self.restoreBound.components.seconds * Int64(names.count)) s)\n")
        }
        runReturned.waitSignalled(until: ContinuousClock.now + Self.sessionBound)
        let mine = lock.withLock { () -> Bool in
            defer { claimed = true }
            return !claimed
        }
        guard mine else { return }  // the command returned: its thread restores and returns 128 + signal
        restoreAll(because: "interrupted")
        let hooks = lock.withLock { exitHooks }
        for hook in hooks { hook() }
        _exit(interruptedExitStatus())
    }

    /// Restores every tracked reader, each on a thread of its own and bounded by `restoreBound`;
    /// lines go to standard error (standard output may carry JSON).
    func restoreAll(because reason: String) {
        let tracked = lock.withLock { readers }
        for (reader, connector) in tracked {
            let console = self.console
            console.err("restoring \(reader) (\(reason)):\n")
            let done = DispatchSemaphore(value: 0)
            let outcome = NSLock()
            nonisolated(unsafe) var restored = false
            startThread(name: "secbridge-restore") {
                let ok = ReaderRestore.restore(reader, cardPresent: false, connector: connector) { console.err("  \($0)\n") }
                outcome.withLock { restored = ok }
                done.signal()
            }
            let seconds = Double(Self.restoreBound.components.seconds)
            if done.wait(timeout: .now() + seconds) == .timedOut {
                console.err("  \(reader) did not answer within \(Int(seconds)) s: unplug the reader and plug it in again\n")
            } else if outcome.withLock({ restored }) {
                console.err("  \(reader) restored\n")
            } else {
                console.err("  \(reader) was not fully restored: run `secbridge reset`, or unplug and replug it\n")
            }
        }
    }
}
