import PCSCCore
import Synchronization

/// Something that happened to a reader, a card, or pcscd itself.
public enum ReaderEvent: Sendable, Hashable, CustomStringConvertible {
    /// A reader appeared (or was there when monitoring started).
    case readerAttached(reader: String)
    /// A reader went away.
    case readerDetached(reader: String)
    /// A card or tag entered the reader's field (or was there when monitoring started).
    case cardInserted(reader: String, atr: [UInt8])
    /// The card or tag left.
    case cardRemoved(reader: String)
    /// pcscd reports the reader unavailable (SCARD_STATE_UNAVAILABLE): its driver answers as for a
    /// removed device (a USB reader unplugged: libccid's IFD_NO_SUCH_DEVICE), while pcscd keeps it
    /// listed (a reader.conf reader, docs/faults.md, "What pcscd 1.9.9 does when a reader.conf
    /// reader goes away").
    case readerUnavailable(reader: String)
    /// The reader answers again after ``readerUnavailable(reader:)`` (SCARD_STATE_UNAVAILABLE cleared).
    case readerAvailable(reader: String)
    /// pcscd stopped answering (SCARD_E_NO_SERVICE / SCARD_E_SERVICE_STOPPED, docs/cases.md P12).
    case serviceLost(PCSCError)
    /// A new context was established after ``serviceLost(_:)``; readers have been re-enumerated.
    case serviceRestored

    /// The event's kind in the words the CLI and transcripts use, e.g. "card-inserted".
    public var kind: String {
        switch self {
        case .readerAttached: "reader-attached"
        case .readerDetached: "reader-detached"
        case .cardInserted: "card-inserted"
        case .cardRemoved: "card-removed"
        case .readerUnavailable: "reader-unavailable"
        case .readerAvailable: "reader-available"
        case .serviceLost: "service-lost"
        case .serviceRestored: "service-restored"
        }
    }

    /// The reader the event concerns, if any.
    public var reader: String? {
        switch self {
        case .readerAttached(let reader), .readerDetached(let reader), .cardInserted(let reader, _),
            .cardRemoved(let reader), .readerUnavailable(let reader), .readerAvailable(let reader):
            reader
        case .serviceLost, .serviceRestored: nil
        }
    }

    public var description: String {
        switch self {
        case .readerAttached(let reader): "reader-attached \"\(reader)\""
        case .readerDetached(let reader): "reader-detached \"\(reader)\""
        case .cardInserted(let reader, let atr):
            "card-inserted \"\(reader)\" ATR " + atr.map { hex8($0) }.joined(separator: " ")
        case .cardRemoved(let reader): "card-removed \"\(reader)\""
        case .readerUnavailable(let reader): "reader-unavailable \"\(reader)\""
        case .readerAvailable(let reader): "reader-available \"\(reader)\""
        case .serviceLost(let error): "service-lost \(error.name)"
        case .serviceRestored: "service-restored"
        }
    }
}

/// Turns two successive SCardGetStatusChange reports for one reader into card events.
///
/// The flags say whether a card is present now; the counter in the high 16 bits of `dwEventState`
/// counts insertions and removals (docs/cases.md P11). A counter that moved by two or more while the flags
/// still say "present" means the card was swapped between two calls: a removal, then an insertion.
/// The counter alone is never a state change.
public func cardEvents(reader: String, previous: ReaderState?, current: ReaderState) -> [ReaderEvent] {
    let wasPresent = previous?.eventFlags.contains(.present) ?? false
    let isPresent = current.eventFlags.contains(.present)
    switch (wasPresent, isPresent) {
    case (false, true): return [.cardInserted(reader: reader, atr: current.atr)]
    case (true, false): return [.cardRemoved(reader: reader)]
    case (true, true):
        guard let previous else { return [] }
        let moved = current.eventCounter &- previous.eventCounter
        if moved >= 2 && moved < 0x8000 || previous.atr != current.atr {
            return [.cardRemoved(reader: reader), .cardInserted(reader: reader, atr: current.atr)]
        }
        return []
    case (false, false): return []
    }
}

/// Turns two successive SCardGetStatusChange reports for one reader into its events: the reader
/// becoming unavailable (SCARD_STATE_UNAVAILABLE set) or available again (cleared), and the card
/// events of ``cardEvents(reader:previous:current:)``. An unplugged reader's card leaves with it:
/// `reader-unavailable` comes first, then `card-removed`; on the way back `reader-available`
/// comes before the card's `card-inserted`.
public func readerEvents(reader: String, previous: ReaderState?, current: ReaderState) -> [ReaderEvent] {
    let wasUnavailable = previous?.eventFlags.contains(.unavailable) ?? false
    let isUnavailable = current.eventFlags.contains(.unavailable)
    let cards = cardEvents(reader: reader, previous: previous, current: current)
    switch (wasUnavailable, isUnavailable) {
    case (false, true): return [.readerUnavailable(reader: reader)] + cards
    case (true, false): return [.readerAvailable(reader: reader)] + cards
    default: return cards
    }
}

/// Watches readers and cards and reports ``ReaderEvent``s as an `AsyncStream`, on a thread of its own.
///
/// The monitor uses its own context (a blocked SCardGetStatusChange stalls other calls on the same
/// context). It watches `\\?PnP?\Notification` for readers that come and go, and each reader for
/// cards, feeding every report back as the next current state (docs/cases.md P11). Each wait is bounded by
/// ``Configuration/pollInterval``, so a stop is seen within that time even if SCardCancel is lost.
///
/// When pcscd stops or restarts (P12), the monitor reports ``ReaderEvent/serviceLost(_:)``, releases
/// its context, establishes a new one with exponential backoff, re-enumerates the readers (reporting
/// what changed meanwhile) and reports ``ReaderEvent/serviceRestored``: monitoring resumes by itself.
///
/// Events present at the start are reported first: one ``ReaderEvent/readerAttached(reader:)`` per
/// reader and one ``ReaderEvent/cardInserted(reader:atr:)`` per card already in place.
///
/// A program that exits after monitoring stops it with ``stop(waitingAtMost:)``: the thread's last
/// call, SCardReleaseContext, must not still run when exit(3) runs libpcsclite's destructor
/// (docs/test-infrastructure.md, "pcsc-lite at exit").
public final class ReaderMonitor: Sendable {
    /// Timing of the monitor. Every wait it makes is bounded by these values.
    public struct Configuration: Sendable {
        /// The longest single SCardGetStatusChange wait.
        public var pollInterval: Duration = .milliseconds(500)
        /// The first wait before re-establishing a context after pcscd went away.
        public var initialBackoff: Duration = .milliseconds(100)
        /// The longest wait between two attempts to re-establish a context: 1 s, so that pcscd's
        /// return is seen within about a second (docs/faults.md, "pcscd restarts").
        public var maximumBackoff: Duration = RetryBackoff.serviceCeiling
        /// The defaults: waits of at most 500 ms, a back-off from 100 ms to 1 s after pcscd went away.
        public init() {}
    }

    private let configuration: Configuration
    private let client: any PCSCClient
    private let stopped = Atomic<Bool>(false)
    private let currentContext = Mutex<(any PCSCClientContext)?>(nil)
    /// Set, and broadcast, when the thread has released its context and ended.
    private let ended = Mutex<Bool>(false)
    private let endedCondition = ConditionLock()
    /// Broadcast by ``stop()``, so that a back-off wait ends at once.
    private let stopCondition = ConditionLock()
    /// The events, in order. The stream finishes when ``stop()`` is called.
    public let events: AsyncStream<ReaderEvent>

    /// Starts monitoring on a new thread.
    /// - Parameters:
    ///   - client: how readers are reached: pcsc-lite (pcscd) by default, or the in-process
    ///     client in tests.
    ///   - configuration: the monitor's timing (``Configuration``); the defaults suit pcscd.
    public init(client: any PCSCClient = PCSCLiteClient(), configuration: Configuration = .init()) {
        self.configuration = configuration
        self.client = client
        let (stream, continuation) = AsyncStream.makeStream(of: ReaderEvent.self, bufferingPolicy: .unbounded)
        events = stream
        continuation.onTermination = { [weak self] _ in self?.stop() }
        let started = startThread(name: "secbridge-mon") { [self] in
            run(emit: { continuation.yield($0) })
            continuation.finish()
            markEnded()
        }
        if !started {
            continuation.finish()
            markEnded()
        }
    }

    private func markEnded() {
        endedCondition.lock()
        ended.withLock { $0 = true }
        endedCondition.broadcast()
        endedCondition.unlock()
    }

    /// Stops monitoring: cancels the wait in progress (SCardCancel, on a thread of its own: with
    /// pcsc-lite 1.9.9 it waits for pcscd's answer without a bound) and finishes ``events``.
    /// Returns at once; the thread ends within one poll interval at most, once pcscd answers.
    public func stop() {
        if stopped.exchange(true, ordering: .acquiringAndReleasing) { return }
        stopCondition.lock()
        stopCondition.broadcast()
        stopCondition.unlock()
        cancelWait()
    }

    private func cancelWait() {
        guard let context = currentContext.withLock({ $0 }) else { return }
        startThread(name: "secbridge-cancel") { try? context.cancel() }
    }

    /// Stops monitoring (``stop()``) and waits until the monitor's thread has released its
    /// context and ended, at most `bound`.
    ///
    /// pcsc-lite 1.9.9's SCardCancel cancels only a wait already under way (its context's
    /// `cancellable` flag): one sent while the thread is between two waits is lost, and the next
    /// wait would run its whole poll interval. So the cancel is sent again after 20 ms, 40 ms, …
    /// while the thread has not ended.
    /// - Returns: false when the thread was still inside a PC/SC call after `bound` (a pcscd that
    ///   stopped answering); it ends when pcscd answers.
    @discardableResult
    public func stop(waitingAtMost bound: Duration) -> Bool {
        stop()
        let deadline = ContinuousClock.now + bound
        var again = Duration.milliseconds(20)
        endedCondition.lock()
        defer { endedCondition.unlock() }
        while !ended.withLock({ $0 }) {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return false }
            if endedCondition.wait(timeout: min(left, again)) || ended.withLock({ $0 }) { continue }
            cancelWait()
            again *= 2
        }
        return true
    }

    private var isStopped: Bool { stopped.load(ordering: .acquiring) }

    private func run(emit: (ReaderEvent) -> Void) {
        var states: [String: ReaderState] = [:]
        var backoff = RetryBackoff(initial: configuration.initialBackoff, maximum: configuration.maximumBackoff)
        // Set while pcscd is unreachable: the loss is reported once, the restoration once.
        var lost = false
        while !isStopped {
            let context: any PCSCClientContext
            do {
                context = try client.establishContext()
            } catch {
                // Any failure to establish a context is reported once, then retried with backoff.
                if !lost {
                    lost = true
                    emit(.serviceLost(error))
                }
                sleep(backoff.next())
                continue
            }
            backoff.reset()
            currentContext.withLock { $0 = context }
            if isStopped {
                currentContext.withLock { $0 = nil }
                try? context.release()
                break
            }
            let error = watch(context: context, states: &states, announceRestore: lost, emit: emit)
            lost = false
            currentContext.withLock { $0 = nil }
            try? context.release()
            guard let error else { break }  // stopped
            lost = true
            emit(.serviceLost(error))
            sleep(backoff.next())
        }
    }

    /// Watches until stopped (returns nil) or until the context fails (returns the error).
    private func watch(
        context: any PCSCClientContext, states: inout [String: ReaderState], announceRestore: Bool,
        emit: (ReaderEvent) -> Void
    ) -> PCSCError? {
        var pnp = ReaderState(readerName: ReaderState.pnpNotification)
        var firstPass = true
        while !isStopped {
            do {
                // (Re-)enumerate readers: report what came and went.
                let names = try context.listReaders()
                for gone in states.keys.filter({ !names.contains($0) }).sorted() {
                    if states[gone]?.eventFlags.contains(.present) == true { emit(.cardRemoved(reader: gone)) }
                    emit(.readerDetached(reader: gone))
                    states[gone] = nil
                }
                var fresh: [String] = []
                for name in names where states[name] == nil {
                    emit(.readerAttached(reader: name))
                    states[name] = ReaderState(readerName: name)
                    fresh.append(name)
                }
                if firstPass && announceRestore { emit(.serviceRestored) }
                firstPass = false
                // Learn the current state of new readers at once (UNAWARE returns immediately).
                if !fresh.isEmpty {
                    var query = fresh.map { ReaderState(readerName: $0) }
                    _ = try context.getStatusChange(&query, timeout: .zero)
                    for state in query {
                        for event in readerEvents(reader: state.readerName, previous: nil, current: state) { emit(event) }
                        var known = state
                        known.acknowledge()
                        states[state.readerName] = known
                    }
                }
                // Wait for a change on any reader or on the PnP entry.
                let order = names
                var watched = order.map { states[$0]! } + [pnp]
                let changed = try context.getStatusChange(&watched, timeout: configuration.pollInterval)
                if !changed { continue }
                pnp = watched.removeLast()
                pnp.acknowledge()
                for (index, name) in order.enumerated() {
                    let current = watched[index]
                    if current.eventFlags.contains(.unknown) { continue }  // gone: the next list reports it
                    for event in readerEvents(reader: name, previous: states[name], current: current) { emit(event) }
                    var known = current
                    known.acknowledge()
                    states[name] = known
                }
            } catch let error where error == .cancelled {
                return nil
            } catch let error where error == .unknownReader || error == .readerUnavailable {
                continue  // a reader left between the list and the wait: enumerate again
            } catch {
                return error
            }
        }
        return nil
    }

    /// Waits `duration`, or less when ``stop()`` is called meanwhile.
    private func sleep(_ duration: Duration) {
        let deadline = ContinuousClock.now + duration
        stopCondition.lock()
        defer { stopCondition.unlock() }
        while !isStopped {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return }
            _ = stopCondition.wait(timeout: left)
        }
    }
}

func hex8(_ byte: UInt8) -> String {
    let digits = String(byte, radix: 16, uppercase: true)
    return digits.count == 1 ? "0" + digits : digits
}
