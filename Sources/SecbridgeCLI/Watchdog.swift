import PCSCCore
import ISO7816
import PCSC
import PN53x
import Synchronization

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
/// Arming and returning cost a few atomic operations and a coarse clock read
/// (CLOCK_MONOTONIC_COARSE), no lock: a call counts itself in `armedCalls`, notes when it began
/// and what it is, and counts itself in `returnedCalls` when it returns. The watch thread reads
/// those and sleeps on a condition with a bounded wait: until the deadline of the call in progress,
/// or one bound after the last call it saw; only after a whole bound without any call does it wait
/// without a deadline, and the next call wakes it (a signal, once). So it wakes about once per
/// bound of busy time however many calls are made, and whether it is scheduled before or after a
/// short call returns changes nothing. The decisions are ``step(now:)``, which tests drive with
/// their own clock.
///
/// Calls are expected one at a time (the commands make them from one thread); calls that overlap
/// are watched as one (the message names the latest).
package final class CallWatchdog: @unchecked Sendable {
    package static let shared = CallWatchdog()

    /// What the watch thread does next.
    package enum Step: Equatable {
        /// Sleep at most this many nanoseconds (a signal may end it earlier).
        case sleep(nanoseconds: Int64)
        /// No call in progress, none for a whole bound: wait until a call arms the watchdog.
        case idle
        /// The call in progress outlived its bound: print this message and exit 1.
        case fire(String)
    }

    /// - Parameter clock: monotonic nanoseconds; by default CLOCK_MONOTONIC_COARSE (a vDSO read).
    ///   Tests pass a manual clock and drive ``step(now:)`` themselves.
    package init(clock: @escaping @Sendable () -> Int64 = CallWatchdog.coarseNanoseconds) {
        self.clock = clock
    }

    private let clock: @Sendable () -> Int64
    /// The bound in nanoseconds; 0 while disabled.
    private let boundNanoseconds = Atomic<Int64>(0)
    /// Calls armed and calls returned so far: a call is in progress while they differ.
    private let armedCalls = Atomic<UInt64>(0)
    private let returnedCalls = Atomic<UInt64>(0)
    /// The latest armed call: when it began (clock nanoseconds), its extra time, and its label (a
    /// static string's address and length in one word). Stored before `armedCalls` counts it.
    private let armedAt = Atomic<Int64>(0)
    private let armedExtra = Atomic<Int64>(0)
    private let armedLabel = Atomic<UInt64>(0)
    private let started = Atomic<Bool>(false)
    /// True while the watch thread waits without a deadline: a call must signal it.
    private let watcherIdle = Atomic<Bool>(false)

    private let state = ConditionLock()
    // Guarded by `state`:
    private var output: (any Console)?
    /// The `stalled` text of the call with this number (rare: SCardBeginTransaction).
    private var stalledCall: (number: UInt64, text: String)?
    private var wakes = 0
    private var signals = 0
    /// Only the watch thread (or a test driving ``step(now:)``) touches these.
    private var seenCalls: UInt64 = 0

    private func locked<T>(_ body: () throws -> T) rethrows -> T {
        state.lock()
        defer { state.unlock() }
        return try body()
    }

    /// CLOCK_MONOTONIC_COARSE in nanoseconds: the kernel's last tick, read without a system call.
    @Sendable package static func coarseNanoseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC_COARSE, &now)
        return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
    }

    /// How often the watch thread has woken so far (each wait that returned, for a signal or a
    /// deadline): a figure tests read to see that it does not poll.
    package var wakeCount: Int { locked { wakes } }
    /// How often a call has signalled the idle watch thread so far.
    package var signalCount: Int { locked { signals } }

    /// Turns the watchdog on with `bound` per call. Its thread starts at the first guarded call,
    /// so commands that make none (decode, help) start no thread; `watchThread: false` starts none
    /// at all (tests drive ``step(now:)``).
    package func enable(bound: Duration, console: any Console, watchThread: Bool = true) {
        locked { output = console }
        if !watchThread { started.store(true, ordering: .relaxed) }
        let (seconds, attoseconds) = bound.components
        boundNanoseconds.store(max(1, seconds * 1_000_000_000 + attoseconds / 1_000_000_000), ordering: .releasing)
    }

    /// Runs `body` (a blocking call) with the watchdog armed for `label`.
    /// - Parameter stalled: what to say when the call outlives the bound, when the generic "pcscd
    ///   or the card stopped answering" would mislead (a transaction another program holds).
    /// - Parameter extra: time the call takes by design on top of the bound (an ACR122U LED/buzzer
    ///   sequence, docs/acr122-units.md §4).
    @inline(__always)
    package func guarding<T, E: Error>(_ label: StaticString, stalled: String? = nil, extra: Duration = .zero, _ body: () throws(E) -> T) throws(E) -> T {
        guard boundNanoseconds.load(ordering: .relaxed) != 0 else { return try body() }
        arm(label, stalled: stalled, extra: extra)
        defer { returnedCalls.wrappingAdd(1, ordering: .releasing) }
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

    private func arm(_ label: StaticString, stalled: String?, extra: Duration) {
        armedAt.store(clock(), ordering: .releasing)
        let extraNanoseconds: Int64
        if extra > .zero {
            let (seconds, attoseconds) = extra.components
            extraNanoseconds = seconds * 1_000_000_000 + attoseconds / 1_000_000_000
        } else {
            extraNanoseconds = 0
        }
        armedExtra.store(extraNanoseconds, ordering: .releasing)
        armedLabel.store(
            label.hasPointerRepresentation ? UInt64(UInt(bitPattern: label.utf8Start)) | UInt64(label.utf8CodeUnitCount) << 48 : 0,
            ordering: .releasing)
        let number = armedCalls.wrappingAdd(1, ordering: .sequentiallyConsistent).newValue
        if let stalled { locked { stalledCall = (number, stalled) } }
        // An idle watch thread (no call for a whole bound) waits without a deadline: wake it.
        if watcherIdle.load(ordering: .sequentiallyConsistent) {
            locked {
                if watcherIdle.load(ordering: .relaxed) {
                    watcherIdle.store(false, ordering: .relaxed)
                    signals += 1
                    state.signal()
                }
            }
        }
        if !started.load(ordering: .relaxed), started.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged {
            // The watch thread starts at the first guarded call (it finds that call armed).
            startThread(name: "secbridge-watch") { [self] in watch() }
        }
    }

    /// What the watch thread does at `now` (clock nanoseconds): fire for a call in progress past
    /// its deadline, sleep until that deadline, stay awake one more bound when calls were made
    /// since it last looked, or go idle.
    package func step(now: Int64) -> Step {
        let bound = boundNanoseconds.load(ordering: .acquiring)
        let armed = armedCalls.load(ordering: .acquiring)
        let calledSince = armed != seenCalls
        seenCalls = armed
        guard bound != 0, returnedCalls.load(ordering: .acquiring) != armed else {
            return calledSince || bound == 0 ? .sleep(nanoseconds: max(bound, 1_000_000_000)) : .idle
        }
        // A call is in progress. Its fields were stored before it was counted; the next call's
        // are stored only after this one returned, which the second look at `returnedCalls` sees.
        let began = armedAt.load(ordering: .acquiring)
        let extra = armedExtra.load(ordering: .acquiring)
        let label = armedLabel.load(ordering: .acquiring)
        guard returnedCalls.load(ordering: .acquiring) != armed, armedCalls.load(ordering: .acquiring) == armed else {
            return .sleep(nanoseconds: bound)  // it returned meanwhile: look again within a bound
        }
        let allowed = bound + extra
        let left = began + allowed - now
        // The coarse clock lags the condition's clock by up to a tick (4–10 ms): sleep a tick more.
        if left > 0 { return .sleep(nanoseconds: left + 10_000_000) }
        let name = label == 0 ? "a PC/SC call" : String(decoding: UnsafeBufferPointer(
            start: UnsafePointer<UInt8>(bitPattern: UInt(label & 0xFFFF_FFFF_FFFF)), count: Int(label >> 48)), as: UTF8.self)
        let stalled = locked { stalledCall.flatMap { $0.number == armed ? $0.text : nil } }
        let why = stalled ?? Self.stalledWords(name)
        return .fire("secbridge: error: \(name) did not return within \(allowed / 1_000_000_000) s: \(why)\n")
    }

    /// Marks the watch thread as waiting without a deadline, as it does after ``step(now:)`` said
    /// ``Step/idle``, so that the next call signals it; tests that take the steps themselves call it.
    package func enterIdle() { locked { _ = enterIdleLocked() } }

    /// Sets the idle flag (the lock held); false, with the flag cleared, when a call was counted
    /// since the last ``step(now:)`` (the thread must not wait then).
    private func enterIdleLocked() -> Bool {
        watcherIdle.store(true, ordering: .sequentiallyConsistent)
        guard armedCalls.load(ordering: .sequentiallyConsistent) == seenCalls else {
            watcherIdle.store(false, ordering: .relaxed)
            return false
        }
        return true
    }

    private func watch() {
        while true {
            switch step(now: clock()) {
            case .fire(let message):
                locked { output }?.err(message)
                _exit(1)
            case .sleep(let nanoseconds):
                state.lock()
                _ = state.wait(timeout: .nanoseconds(nanoseconds))
                wakes += 1
                state.unlock()
            case .idle:
                state.lock()
                // A call counted after `step` looked would not see the flag: look once more.
                if enterIdleLocked() {
                    state.wait()
                    wakes += 1
                }
                watcherIdle.store(false, ordering: .relaxed)
                state.unlock()
            }
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
/// - Parameter cardChange: the words for a failure that is a card change (SCARD_W_RESET_CARD, a
///   removal: ``cardChange(_:reader:cardIsGone:recorded:again:removal:)``), or nil for the default words.
package func beginCardTransaction(
    _ handle: any PCSCConnection, reader: String, cardChange: (PCSCError) -> String? = { _ in nil }
) throws(CLIError) {
    let held = heldByAnotherProgram(reader)
    do {
        try CallWatchdog.shared.guarding("SCardBeginTransaction", stalled: held) { () throws(PCSCError) in
            try handle.beginTransaction()
        }
    } catch where error == .timeout || error == .sharingViolation {
        throw CLIError.failure(held + " (\(error.name))")
    } catch {
        if let changed = cardChange(error) { throw CLIError.failure(changed) }
        throw CLIError.failure("could not begin a PC/SC transaction on '\(reader)': \(describe(error))")
    }
}

/// SCardEndTransaction with SCARD_LEAVE_CARD, bounded; a failure (the card is gone) is ignored.
package func endCardTransaction(_ handle: any PCSCConnection) {
    _ = try? CallWatchdog.shared.guarding("SCardEndTransaction") { () throws(PCSCError) in try handle.endTransaction(.leave) }
}
