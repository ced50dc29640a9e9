import SecureElementCredential
import Synchronization

/// A terminal for `InMemoryEmulationBackend`: the C-APDUs it sends once it has activated the
/// target, and the R-APDUs it got.
public final class InMemoryTerminal: Sendable {
    /// How the terminal leaves after its last command.
    public enum Departure: Sendable, Hashable {
        /// It releases the target (the device reports status 29).
        case release
        /// It goes away without a word (the device sees one MCU timeout of silence).
        case silence
    }

    /// The C-APDUs the terminal sends, in order.
    public let commands: [[UInt8]]
    /// The RATS it activates with (default E0 80: FSDI 8, CID 0; ISO/IEC 14443-4 §5.1).
    public let rats: [UInt8]
    /// How it leaves after its last command.
    public let departure: Departure
    private let log = Mutex<(next: Int, responses: [[UInt8]])>((0, []))

    /// A terminal sending `commands`, then leaving by `departure`.
    public init(commands: [[UInt8]], rats: [UInt8] = [0xE0, 0x80], departure: Departure = .release) {
        self.commands = commands
        self.rats = rats
        self.departure = departure
    }

    /// The R-APDUs received, in order.
    public var responses: [[UInt8]] { log.withLock { $0.responses } }

    func nextCommand() -> [UInt8]? {
        log.withLock { l in
            guard l.next < commands.count else { return nil }
            defer { l.next += 1 }
            return commands[l.next]
        }
    }

    func received(_ response: [UInt8]) {
        log.withLock { $0.responses.append(response) }
    }
}

/// A card-emulation backend in memory, for state-machine and engine tests: terminals are queued
/// with `present(_:)`; a wait without one lasts one step on the session's clock (a virtual clock
/// in tests) or until `interrupt()`. It records every operation in `calls`.
public final class InMemoryEmulationBackend: CardEmulationBackend {
    /// The name sessions see.
    public let readerName: String
    /// Whether it claims to emulate (for testing `featureUnavailable`).
    public let support: EmulationSupport
    /// The longest C-APDU it passes (the ACR122U's 252 by default).
    public let maximumCommandLength: Int
    /// The longest R-APDU it passes.
    public let maximumResponseLength: Int
    private let clock: any SessionClock
    private let step: Duration

    private enum Wake: Sendable { case terminal, timeout, interrupted }

    private struct State {
        var queue: [InMemoryTerminal] = []
        var current: InMemoryTerminal?
        var calls: [String] = []
        var waiter: CheckedContinuation<Wake, Never>?
        /// The number of the latest wait (``waitForActivation(_:)``), so that a late timeout of
        /// an earlier one is told apart.
        var wait: UInt64 = 0
        /// A timeout of wait `earlyTimeout` that came before that wait had parked: it ends the
        /// wait as soon as it parks, instead of being lost.
        var earlyTimeout: UInt64?
        /// An ``interrupt()`` that found no parked wait: the next wait ends at once.
        var interruptPending = false
        var prepared = false
    }

    private let state = Mutex(State())

    /// - Parameters:
    ///   - readerName: the name for messages and the one-session-per-reader rule.
    ///   - clock: the session's clock; a wait without a terminal lasts `step` on it.
    ///   - step: the MCU timeout being modelled (5 s).
    ///   - support: `.unsupported` to model a reader that cannot emulate.
    ///   - maximumCommandLength: the longest C-APDU in bytes it passes (default 252, the ACR122U's
    ///     TgGetData limit, docs/acr122-pn532.md §4); the engine answers a longer one 67 00.
    ///   - maximumResponseLength: the longest R-APDU in bytes one TgSetData carries (default 252);
    ///     the engine sends a longer one in parts, 61 XX and GET RESPONSE (ISO/IEC 7816-4 §5.1.3, §7.6.1).
    public init(
        readerName: String = "in-memory reader", clock: any SessionClock, step: Duration = .seconds(5),
        support: EmulationSupport = .supported, maximumCommandLength: Int = 252, maximumResponseLength: Int = 252
    ) {
        self.readerName = readerName
        self.clock = clock
        self.step = step
        self.support = support
        self.maximumCommandLength = maximumCommandLength
        self.maximumResponseLength = maximumResponseLength
    }

    /// The operations so far: "prepare", "arm", "get", "set", "restore".
    public var calls: [String] { state.withLock { $0.calls } }

    /// Whether the reader is prepared for emulation and not restored yet.
    public var isPrepared: Bool { state.withLock { $0.prepared } }

    /// Queues a terminal; it activates the target at the next (or current) wait.
    public func present(_ terminal: InMemoryTerminal) {
        let waiter: CheckedContinuation<Wake, Never>? = state.withLock { s in
            s.queue.append(terminal)
            defer { s.waiter = nil }
            return s.waiter
        }
        waiter?.resume(returning: .terminal)
    }

    /// Wakes a pending wait so the engine can stop at once.
    ///
    /// With no wait parked yet (the engine is on its way into one), the next wait ends at once:
    /// lost, this interrupt would leave that wait to a timeout on a clock nobody may move.
    public func interrupt() {
        let waiter: CheckedContinuation<Wake, Never>? = state.withLock { s in
            defer { s.waiter = nil }
            if s.waiter == nil { s.interruptPending = true }
            return s.waiter
        }
        waiter?.resume(returning: .interrupted)
    }

    /// Records the preparation; never throws.
    public func prepare() async throws {
        state.withLock {
            $0.calls.append("prepare")
            $0.prepared = true
            $0.interruptPending = false  // an interrupt of an earlier emulation ends no wait of this one
        }
    }

    /// Records the restore; never throws.
    public func restore() async throws {
        state.withLock {
            $0.calls.append("restore")
            $0.prepared = false
            $0.current = nil
        }
    }

    /// Waits (on the injected clock) until a presented terminal activates, or one step passes.
    public func waitForActivation(_ parameters: TargetParameters) async throws -> ActivationOutcome {
        if let terminal = takeTerminal(logging: "arm") { return .activated(mode: 0x08, initiatorCommand: terminal.rats) }
        let deadline = clock.now + step
        let clock = self.clock
        let number: UInt64 = state.withLock { s in
            s.wait += 1
            return s.wait
        }
        let sleeper = Task {
            try? await clock.sleep(until: deadline)
            if !Task.isCancelled { self.timeOut(wait: number) }
        }
        // A wake that came before this wait parked (the step already over, an interrupt) ends it
        // at once: no wake is lost between the sleeper's start and the park.
        let wake = await withCheckedContinuation { (continuation: CheckedContinuation<Wake, Never>) in
            let now: Wake? = state.withLock { s in
                if !s.queue.isEmpty { return .terminal }
                if s.interruptPending {
                    s.interruptPending = false
                    return .interrupted
                }
                if s.earlyTimeout == number { return .timeout }
                s.waiter = continuation
                return nil
            }
            if let now { continuation.resume(returning: now) }
        }
        sleeper.cancel()
        if wake == .terminal, let terminal = takeTerminal(logging: nil) {
            return .activated(mode: 0x08, initiatorCommand: terminal.rats)
        }
        return .noTerminal
    }

    /// The step of wait `number` is over: it ends, or, not parked yet, ends once it parks.
    private func timeOut(wait number: UInt64) {
        let waiter: CheckedContinuation<Wake, Never>? = state.withLock { s in
            guard s.wait == number else { return nil }  // a later wait runs: this one ended
            guard let waiter = s.waiter else {
                s.earlyTimeout = number
                return nil
            }
            s.waiter = nil
            return waiter
        }
        waiter?.resume(returning: .timeout)
    }

    private func takeTerminal(logging call: String?) -> InMemoryTerminal? {
        state.withLock { s in
            if let call { s.calls.append(call) }
            guard !s.queue.isEmpty else { return nil }
            s.current = s.queue.removeFirst()
            return s.current
        }
    }

    /// The terminal's next C-APDU, or its departure.
    public func receiveCommand() async throws -> TargetReceiveOutcome {
        let terminal: InMemoryTerminal? = state.withLock { s in
            s.calls.append("get")
            return s.current
        }
        guard let terminal else { return .released(.pn532(status: 0x25, meaning: "not activated")) }
        if let command = terminal.nextCommand() { return .command(command) }
        state.withLock { $0.current = nil }
        switch terminal.departure {
        case .release: return .released(.pn532(status: 0x29, meaning: "the initiator released the target"))
        case .silence: return .silent
        }
    }

    /// Hands the R-APDU to the terminal.
    public func sendResponse(_ response: [UInt8]) async throws -> TargetSendOutcome {
        let terminal: InMemoryTerminal? = state.withLock { s in
            s.calls.append("set")
            return s.current
        }
        guard let terminal else { return .released(.pn532(status: 0x29, meaning: "the initiator released the target")) }
        terminal.received(response)
        return .delivered
    }
}
