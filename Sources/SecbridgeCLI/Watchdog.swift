import PCSCCore
import ISO7816
import PCSC
import PN53x

#if canImport(Glibc)
import Glibc
#endif

/// Bounds every blocking PC/SC call the `secbridge` binary makes.
///
/// pcsc-lite's calls have no timeout of their own: a pcscd that accepts the connection but never
/// answers, or a card that stops answering inside SCardTransmit, would block the tool for ever.
/// The binary enables this watchdog (`SecbridgeCLI.enableCallWatchdog`); commands arm it around
/// each blocking call, and when a call outlives the bound the watchdog prints what was blocked and
/// what to do, and ends the process with exit status 1. Transcripts lose nothing: each command
/// line is written before its call. In tests (the CLI in-process) it stays disabled.
///
/// The watch thread sleeps on a condition: with nothing armed it waits until a call arms it, with
/// a call armed until that call's deadline. It wakes about once per bound of busy time, however
/// many calls are made (no polling).
package final class CallWatchdog: @unchecked Sendable {
    package static let shared = CallWatchdog()

    package init() {}

    private let state = ConditionLock()
    private var bound: Duration?
    /// The armed call's deadline (nil: nothing armed), and what it was armed with. Separate
    /// fields, so arming and disarming (twice per APDU) copy no tuple of strings.
    private var armedDeadline: ContinuousClock.Instant?
    private var armedLabel = ""
    private var armedStalled: String?
    private var armedAllowed = Duration.zero
    private var started = false
    private var output: (any Console)?
    /// True while the watch thread waits with no deadline (nothing armed): arming must wake it.
    private var watcherIdle = false
    private var wakes = 0

    private func locked<T>(_ body: () throws -> T) rethrows -> T {
        state.lock()
        defer { state.unlock() }
        return try body()
    }

    /// How often the watch thread has woken so far (each wait that returned, for a signal or a
    /// deadline): a figure tests read to see that it does not poll.
    package var wakeCount: Int { locked { wakes } }

    /// Turns the watchdog on with `bound` per call. Its thread starts at the first guarded call,
    /// so commands that make none (decode, help) start no thread.
    package func enable(bound: Duration, console: any Console) {
        locked {
            self.bound = bound
            self.output = console
        }
    }

    /// Runs `body` (a blocking call) with the watchdog armed for `label`.
    /// - Parameter stalled: what to say when the call outlives the bound, when the generic "pcscd
    ///   or the card stopped answering" would mislead (a transaction another program holds).
    /// - Parameter extra: time the call takes by design on top of the bound (an ACR122U LED/buzzer
    ///   sequence, docs/acr122-units.md §4).
    package func guarding<T, E: Error>(_ label: String, stalled: String? = nil, extra: Duration = .zero, _ body: () throws(E) -> T) throws(E) -> T {
        let startWatcher = locked { () -> Bool in
            guard let bound else { return false }
            let allowed = bound + max(extra, .zero)
            armedLabel = label
            armedStalled = stalled
            armedAllowed = allowed
            armedDeadline = ContinuousClock.now + allowed
            if watcherIdle { state.signal() }
            defer { started = true }
            return !started
        }
        // The watch thread starts at the first guarded call (it finds that call armed).
        if startWatcher { startThread(name: "secbridge-watch") { [self] in watch() } }
        defer { locked { armedDeadline = nil } }
        return try body()
    }

    /// What a call that outlived the bound most likely met, when its caller gave no words of its
    /// own. SCardConnect is the one call pcscd makes wait for another program: while another
    /// connection holds a PC/SC transaction on the reader, pcsc-lite 1.9.9's SCardConnect waits until
    /// it ends, with no bound (winscard.c, "wait until a possible transaction is finished";
    /// docs/faults.md §2).
    package static func stalledWords(_ label: String) -> String {
        let stopped = "pcscd or the card stopped answering; check `systemctl status pcscd` (or the PCSCLITE_CSOCK_NAME socket), then remove and replace the card"
        guard label == "SCardConnect" else { return stopped }
        return "another program holds a PC/SC transaction on the reader (pcscd lets SCardConnect wait until it ends): close that program (pcsc_scan, a browser or a middleware that keeps the card) and retry; if none does, " + stopped
    }

    private func watch() {
        state.lock()
        while true {
            if let deadline = armedDeadline, bound != nil {
                let left = deadline - ContinuousClock.now
                if left <= .zero {
                    let seconds = armedAllowed.components.seconds
                    let why = armedStalled ?? Self.stalledWords(armedLabel)
                    output?.err("secbridge: error: \(armedLabel) did not return within \(seconds) s: \(why)\n")
                    _exit(1)
                }
                // A call armed: sleep until its deadline (a later call's deadline is only later).
                watcherIdle = false
                _ = state.wait(timeout: left)
            } else {
                watcherIdle = true
                state.wait()
            }
            wakes += 1
        }
    }
}

extension SecbridgeCLI {
    /// Bounds each blocking PC/SC call of the commands (see `CallWatchdog`); the binary calls it.
    /// 40 s covers libccid's 30 s escape timeout plus the ACR122U's 5-second MCU steps.
    public static func enableCallWatchdog(bound: Duration = .seconds(40), console: any Console = StandardConsole()) {
        CallWatchdog.shared.enable(bound: bound, console: console)
    }

    /// The call bound the binaries use: 40 s, or `SECBRIDGE_CALL_TIMEOUT` whole seconds (1…3600).
    ///
    /// - Returns: the bound, or a message naming the bad value and the accepted range when the
    ///   variable is set to anything else (`abc`, `0`, `2.5`, empty): a typo never silently means 40 s.
    public static func callBound(fromEnvironment value: String?) -> Result<Duration, CallBoundError> {
        guard let value else { return .success(.seconds(40)) }
        guard let seconds = Int(value), (1...3600).contains(seconds) else {
            return .failure(CallBoundError(message:
                "SECBRIDGE_CALL_TIMEOUT=\"\(value)\" is not a whole number of seconds from 1 to 3600; set it to one (e.g. 90) or unset it for the default 40 s"))
        }
        return .success(.seconds(seconds))
    }

    /// Enables the call watchdog from `SECBRIDGE_CALL_TIMEOUT` (see ``callBound(fromEnvironment:)``);
    /// returns false after printing the error when the variable is invalid, and the binary then
    /// exits with status 64 (a usage error).
    public static func enableCallWatchdogFromEnvironment(console: any Console = StandardConsole()) -> Bool {
        switch callBound(fromEnvironment: environmentValue("SECBRIDGE_CALL_TIMEOUT")) {
        case .success(let bound):
            enableCallWatchdog(bound: bound, console: console)
            return true
        case .failure(let error):
            console.err("secbridge: error: \(error.message)\n")
            return false
        }
    }
}

/// An invalid `SECBRIDGE_CALL_TIMEOUT`, with the message that says what is accepted.
public struct CallBoundError: Error, Sendable, Equatable {
    /// What was wrong with the value and what is accepted, e.g. a positive number of seconds.
    public let message: String
}

/// A channel whose every call is guarded by the ``CallWatchdog``.
package final class GuardedChannel: CardChannel {
    package let inner: any CardChannel
    package init(_ inner: any CardChannel) { self.inner = inner }
    package var transmissionProtocol: TransmissionProtocol { inner.transmissionProtocol }
    package func transmit(_ command: [UInt8]) throws -> [UInt8] {
        try CallWatchdog.shared.guarding("SCardTransmit", extra: ACR122Command.designedDuration(ofPseudoAPDU: command)) {
            try inner.transmit(command)
        }
    }
    package func control(code: UInt32, _ command: [UInt8]) throws -> [UInt8] {
        try CallWatchdog.shared.guarding("SCardControl", extra: ACR122Command.designedDuration(ofPseudoAPDU: command)) {
            try inner.control(code: code, command)
        }
    }
}

/// Runs `body` inside a PC/SC transaction on `handle`, so that no other program's APDU lands
/// between the sequence's commands (a SELECT and the READ BINARY that depends on it). The
/// transaction ends with SCARD_LEAVE_CARD on every path.
///
/// The corresponding PC/SC functions are SCardBeginTransaction and SCardEndTransaction.
/// - Throws: `CLIError.failure` saying that another program holds the card (a transaction of its
///   own or exclusive access) when the transaction cannot begin within the bound; what `body` throws.
/// The message for a card another program keeps: its own transaction, or exclusive access.
package func heldByAnotherProgram(_ reader: String) -> String {
    "another program holds the card in '\(reader)' (a PC/SC transaction of its own, or exclusive access) and did not let go; close that program (pcsc_scan, a browser or a middleware that keeps the card) and retry"
}

package func withCardTransaction<T>(
    _ handle: any PCSCConnection, reader: String, _ body: () throws -> T
) throws -> T {
    try beginCardTransaction(handle, reader: reader)
    defer { endCardTransaction(handle) }
    return try body()
}

/// SCardBeginTransaction, bounded, with ``withCardTransaction(_:reader:_:)``'s errors; for a
/// transaction that spans more than one scope, ended with ``endCardTransaction(_:)``.
package func beginCardTransaction(_ handle: any PCSCConnection, reader: String) throws(CLIError) {
    let held = heldByAnotherProgram(reader)
    do {
        try CallWatchdog.shared.guarding("SCardBeginTransaction", stalled: held) { () throws(PCSCError) in
            try handle.beginTransaction()
        }
    } catch where error == .timeout || error == .sharingViolation {
        throw CLIError.failure(held + " (\(error.name))")
    } catch {
        throw CLIError.failure("could not begin a PC/SC transaction on '\(reader)': \(describe(error))")
    }
}

/// SCardEndTransaction with SCARD_LEAVE_CARD, bounded; a failure (the card is gone) is ignored.
package func endCardTransaction(_ handle: any PCSCConnection) {
    _ = try? CallWatchdog.shared.guarding("SCardEndTransaction") { () throws(PCSCError) in try handle.endTransaction(.leave) }
}
