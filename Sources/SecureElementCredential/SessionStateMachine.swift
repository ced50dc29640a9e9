import ISO7816

/// This package's older spelling of ``CredentialSession/State``.
public typealias SessionState = CredentialSession.State

extension CredentialSession {
/// The states of a credential session (Apple's `CredentialSession.State`; docs/session-model.md,
/// "CredentialSession"). `invalid` is terminal: start a new session.
public enum State: Sendable, Hashable, CustomStringConvertible {
    /// Listing credentials; the state a session starts in.
    case management
    /// Wired mode: `transceive(_:)` reaches the credential's secure element.
    case wired(credential: Credential)
    /// Card emulation: a terminal at the reader reaches the credential.
    case cardEmulation(credential: Credential)
    /// Invalidated; every call throws `sessionInvalidated`.
    case invalid

    /// `management`, `wired(<id>)`, `cardEmulation(<id>)` or `invalid`.
    public var description: String {
        switch self {
        case .management: "management"
        case .wired(let c): "wired(\(c.id))"
        case .cardEmulation(let c): "cardEmulation(\(c.id))"
        case .invalid: "invalid"
        }
    }
}

/// The state of the NFC RF field during card emulation (Apple's `CredentialSession.NFCFieldInformation`),
/// as far as the reader can observe it: on an ACR122U a terminal's activation (TgInitAsTarget
/// returned) is `fieldPresent`, its release (PN532 status 29/2B) or silence `fieldAbsent`.
public enum NFCFieldInformation: String, Sendable, Hashable, CustomStringConvertible {
    /// A terminal's RF field is present (it activated the emulated card).
    case fieldPresent
    /// No terminal's RF field is present (it released the card or fell silent).
    case fieldAbsent

    /// `fieldPresent` or `fieldAbsent`.
    public var description: String { rawValue }
}
}

/// Ours: what the device observed when the field changed, with the words of the observation; the
/// event `CredentialSession.Event.fieldObserved(_:)` carries it right after Apple's
/// `fieldStateChanged(info:)`.
public struct FieldStateInfo: Sendable, Hashable, CustomStringConvertible {
    /// This package's older spelling of ``CredentialSession/NFCFieldInformation``.
    public typealias State = CredentialSession.NFCFieldInformation

    /// Present or absent.
    public var state: State
    /// What the device observed, e.g. "TgInitAsTarget returned mode 08, RATS E0 80" or "status 29".
    public var observation: String

    /// A field change as the device observed it.
    public init(state: State, observation: String) {
        self.state = state
        self.observation = observation
    }

    /// `fieldPresent: TgInitAsTarget returned mode 08, initiator command E0 80`.
    public var description: String { "\(state): \(observation)" }
}

/// Why a session became invalid (docs/session-model.md, "When the session becomes invalid").
public enum InvalidationReason: Sendable, Hashable, CustomStringConvertible {
    /// `invalidate()` was called.
    case invalidatedByClient
    /// Wired mode saw no `transceive` for the idle limit (15 s by default).
    case wiredIdleTimeout(Duration)
    /// The reader or pcscd went away while the session held it.
    case readerLost(String)

    /// The case in words.
    public var description: String {
        switch self {
        case .invalidatedByClient: "invalidate() was called"
        case .wiredIdleTimeout(let limit): "no transceive in wired mode for \(limit)"
        case .readerLost(let detail): "the reader was lost: \(detail)"
        }
    }
}

/// This package's older spelling of ``CredentialSession/Event``.
public typealias CredentialSessionEvent = CredentialSession.Event

extension CredentialSession {
/// Ours: reader and link events that are not field changes (carried by `Event.readerEvent(_:)`;
/// Apple's `ConnectivityEvent` is an applet's event data, which this host never receives).
public enum ReaderEvent: Sendable, Hashable, CustomStringConvertible {
    /// Card emulation stopped because the reader kept failing; the text says why.
    case emulationStoppedByReaderError(String)
    /// The card serving as secure element changed under the session (removed, put back, or
    /// reset by another program): the terminal's command got `6F 00`, its transaction could not
    /// continue; the text says what happened and whether a new card session was opened.
    case secureElementChanged(String)

    /// `emulationStoppedByReaderError: …` or `secureElementChanged: …`.
    public var description: String {
        switch self {
        case .emulationStoppedByReaderError(let text): "emulationStoppedByReaderError: \(text)"
        case .secureElementChanged(let text): "secureElementChanged: \(text)"
        }
    }
}

/// The events of `CredentialSession.eventStream` (Apple's `CredentialSession.Event`;
/// docs/session-model.md, "Events"; docs/apple-api-map.md).
public enum Event: Sendable, Hashable, CustomStringConvertible {
    /// The field changed during card emulation; only what the device observes (the words of the
    /// observation follow in `fieldObserved(_:)`).
    case fieldStateChanged(info: NFCFieldInformation)
    /// The emulation window (60 s) ended; the session is back in management.
    case cardEmulationTimeout
    /// The app's presentment intent assertion reached its lifetime (60 s).
    case presentmentIntentAssertionTimeout
    /// The session became invalid; the stream ends after this event. The reason's code is
    /// `sessionInvalidated` (`invalidate()`, the wired idle rule) or `resourceUnavailable` (the
    /// reader was lost); its `invalidation` says which.
    case sessionInvalidated(reason: ErrorCode)
    /// Apple's applet event during card emulation; never emitted on this host (see ``ConnectivityEvent``).
    case connectivityEvent(ConnectivityEvent)
    /// A credential finished installing; never emitted here (credentials come from files, installed already).
    case credentialFinishedInstalling(credential: Credential)
    /// Ours: the device's own words for the field change just reported by `fieldStateChanged(info:)`.
    case fieldObserved(FieldStateInfo)
    /// Ours: reader and link events (``ReaderEvent``).
    case readerEvent(ReaderEvent)
    /// Ours: one C-APDU from the terminal and the R-APDU sent back during card emulation.
    case apduExchanged(command: [UInt8], response: [UInt8])

    /// One line in the shape of the case, e.g. `fieldStateChanged(info: fieldPresent)`,
    /// `sessionInvalidated(reason: invalidate() was called)`, `apduExchanged(00 A4 04 00 … → 90 00)`.
    public var description: String {
        switch self {
        case .fieldStateChanged(let info): "fieldStateChanged(info: \(info))"
        case .cardEmulationTimeout: "cardEmulationTimeout"
        case .presentmentIntentAssertionTimeout: "presentmentIntentAssertionTimeout"
        case .sessionInvalidated(let reason): "sessionInvalidated(reason: \(reason.reason))"
        case .connectivityEvent(let event): "connectivityEvent(\(event))"
        case .credentialFinishedInstalling(let credential): "credentialFinishedInstalling(credential: \(credential))"
        case .fieldObserved(let info): "fieldObserved(\(info))"
        case .readerEvent(let event): "readerEvent(\(event))"
        case .apduExchanged(let command, let response): "apduExchanged(\(command.hexString) → \(response.hexString))"
        }
    }
}
}

/// One billable event: a successful activation of card emulation (docs/session-model.md: "record one
/// in the session's billing log for each successful activation").
public struct BillableEvent: Sendable, Hashable {
    /// 1, 2, … within a session.
    public var sequence: Int
    /// The credential's id.
    public var credentialID: String
    /// When, on the session's clock.
    public var time: Duration
}

/// Every duration and limit the session rules use, with the documented defaults.
public struct SessionTimings: Sendable, Hashable {
    /// Card emulation ends after this (doc: 60 s) with `cardEmulationTimeout`.
    public var cardEmulationTimeLimit: Duration = .seconds(60)
    /// An app assertion's lifetime (doc: 60 s), then `presentmentIntentAssertionTimeout`.
    public var assertionLifetime: Duration = .seconds(60)
    /// The span over which app assertions are counted (80 s).
    public var assertionRateWindow: Duration = .seconds(80)
    /// The most app assertions in one span (2).
    public var assertionsPerWindow: Int = 2
    /// Wired mode without `transceive` for this long invalidates the session (doc: 15 s).
    public var wiredIdleTimeout: Duration = .seconds(15)
    /// How long the authorizer may take before `userAuthorizationTimedOut` (decision: 60 s).
    public var authorizationTimeout: Duration = .seconds(60)

    /// The documented defaults.
    public init() {}

    /// The defaults.
    public static let standard = SessionTimings()
}

/// The session rules as a pure value: which call is allowed in which state, what each outcome
/// does, and what the deadlines do. `CredentialSession` drives it and performs the actions it
/// returns; it never reads a clock (times are passed in) and never blocks.
///
/// The call table (docs/session-model.md; "—" means the state is unchanged on that error):
///
/// | Call | allowed in | on success | on `resourceUnavailable` | other errors |
/// |---|---|---|---|---|
/// | listCredentials | management | — | — | — |
/// | enterWiredMode(c) | management, wired, cardEmulation | wired(c) | management | — |
/// | transceive | wired | — (idle timer restarts) | management | — |
/// | endWiredMode | wired | management | management | — |
/// | performTransaction(c) | wired(c) | cardEmulation(c) | management | — |
/// | performCardEmulation…WithCurrentCredential | wired | cardEmulation(current) | management | — |
/// | endCardEmulation | cardEmulation | management | management | — |
/// | acquirePresentmentAssertion | management, wired | — | — | — |
/// | configuration invalidate | management, wired, cardEmulation | management | management | — |
/// | invalidate | any | invalid | | |
///
/// A call in a state it is not allowed in throws `invalidSessionState`; any call on an invalid
/// session throws `sessionInvalidated`. Transactions need no app assertion to be active: one that
/// is active makes them throw `resourceUnavailable` (relinquish it first).
public struct SessionStateMachine: Sendable {
    /// The calls the table covers.
    public enum Call: Sendable, Hashable, CustomStringConvertible {
        /// `listCredentials()`.
        case listCredentials
        /// `enterWiredMode(using:)` with the credential.
        case enterWiredMode(Credential)
        /// `transceive(_:)`.
        case transceive
        /// `endWiredMode()`.
        case endWiredMode
        /// `performTransaction(using:options:)` with the credential.
        case performTransaction(Credential)
        /// `performCardEmulationTransactionWithCurrentCredential(options:)`.
        case performCardEmulationTransactionWithCurrentCredential
        /// `endCardEmulation()`.
        case endCardEmulation
        /// `acquirePresentmentAssertion()`.
        case acquirePresentmentAssertion
        /// `CredentialTransaction.Configuration.invalidate()`.
        case invalidateConfiguration

        /// The case in words.
        public var description: String {
            switch self {
            case .listCredentials: "listCredentials()"
            case .enterWiredMode(let c): "enterWiredMode(using: \(c.id))"
            case .transceive: "transceive(_:)"
            case .endWiredMode: "endWiredMode()"
            case .performTransaction(let c): "performTransaction(using: \(c.id))"
            case .performCardEmulationTransactionWithCurrentCredential: "performCardEmulationTransactionWithCurrentCredential()"
            case .endCardEmulation: "endCardEmulation()"
            case .acquirePresentmentAssertion: "acquirePresentmentAssertion()"
            case .invalidateConfiguration: "CredentialTransaction.Configuration.invalidate()"
            }
        }
    }

    /// Permission to commit a call's outcome: valid while the state has not changed since `check`.
    public struct Ticket: Sendable, Hashable {
        /// The call the ticket was issued for.
        public let call: Call
        let epoch: UInt64
    }

    /// What the driver must do after a transition.
    public enum Action: Sendable, Hashable {
        /// Publish the event on `eventStream`.
        case emit(CredentialSessionEvent)
        /// Stop the card-emulation loop and restore the reader.
        case stopEmulation
        /// Close the credential's secure element.
        case closeSecureElement(Credential)
        /// Mark the app assertion with this id invalid.
        case endAssertion(id: UInt64)
        /// Release the reader claim and finish the event stream.
        case finishSession
    }

    /// The durations and limits the rules use.
    public let timings: SessionTimings
    /// The current state.
    public private(set) var state: SessionState = .management
    /// Increases on every state change; tickets from before a change are stale.
    public private(set) var epoch: UInt64 = 0
    /// One entry per successful card-emulation activation.
    public private(set) var billingLog: [BillableEvent] = []
    /// The active app assertion: its id and when it expires.
    public private(set) var activeAssertion: (id: UInt64, expires: Duration)?
    /// When app assertions were acquired (those inside the rate window).
    public private(set) var assertionTimes: [Duration] = []
    /// When wired mode's idle rule invalidates the session (nil outside wired mode).
    public private(set) var wiredIdleDeadline: Duration?
    /// When the card-emulation window ends (nil outside card emulation).
    public private(set) var emulationDeadline: Duration?
    private var nextAssertionID: UInt64 = 0

    /// A machine in `management` with `timings`.
    public init(timings: SessionTimings = .standard) {
        self.timings = timings
    }

    // MARK: Checks

    /// Whether `call` is allowed now.
    /// - Returns: a ticket to commit the outcome with.
    /// - Throws: `sessionInvalidated` on an invalid session, `invalidSessionState` when the state
    ///   does not allow the call, `resourceUnavailable` for a transaction while an app assertion is
    ///   active or an assertion beyond the rate limit.
    public func check(_ call: Call, now: Duration) throws(CredentialSessionError) -> Ticket {
        if state == .invalid {
            throw CredentialSessionError(.sessionInvalidated, "the session is invalid; start a new session to call \(call)")
        }
        func wrongState(_ allowed: String) -> CredentialSessionError {
            CredentialSessionError(.invalidSessionState, "\(call) is allowed in \(allowed) only; the session is in \(state)")
        }
        switch call {
        case .listCredentials:
            guard state == .management else { throw wrongState("management") }
        case .enterWiredMode, .invalidateConfiguration:
            break
        case .transceive, .endWiredMode:
            guard case .wired = state else { throw wrongState("wired mode") }
        case .performTransaction(let credential):
            guard case .wired(let current) = state, current == credential else {
                throw wrongState("wired mode with the same credential (\(credential.id)); call enterWiredMode(using:) first")
            }
            try checkNoAppAssertion(call)
        case .performCardEmulationTransactionWithCurrentCredential:
            guard case .wired = state else { throw wrongState("wired mode") }
            try checkNoAppAssertion(call)
        case .endCardEmulation:
            guard case .cardEmulation = state else { throw wrongState("card emulation") }
        case .acquirePresentmentAssertion:
            if case .cardEmulation = state { throw wrongState("management or wired mode") }
            if activeAssertion != nil {
                throw CredentialSessionError(.resourceUnavailable, "a presentment intent assertion is already active; relinquish it first")
            }
            let recent = assertionTimes.filter { $0 > now - timings.assertionRateWindow }
            if recent.count >= timings.assertionsPerWindow, let oldest = recent.min() {
                let wait = oldest + timings.assertionRateWindow - now
                throw CredentialSessionError(
                    .resourceUnavailable,
                    "at most \(timings.assertionsPerWindow) presentment intent assertions in any \(timings.assertionRateWindow); the next is allowed in \(wait)")
            }
        }
        return Ticket(call: call, epoch: epoch)
    }

    private func checkNoAppAssertion(_ call: Call) throws(CredentialSessionError) {
        if activeAssertion != nil {
            throw CredentialSessionError(
                .resourceUnavailable,
                "\(call) takes the system's own presentment assertion: relinquish the app's assertion first")
        }
    }

    /// Throws unless the state is still what it was when `ticket` was issued.
    public func validate(_ ticket: Ticket) throws(CredentialSessionError) {
        guard ticket.epoch == epoch else {
            if state == .invalid {
                throw CredentialSessionError(.sessionInvalidated, "the session became invalid while \(ticket.call) ran")
            }
            throw CredentialSessionError(.invalidSessionState, "the session changed to \(state) while \(ticket.call) ran")
        }
    }

    private mutating func transition(to newState: SessionState) {
        state = newState
        epoch &+= 1
        if case .wired = newState {} else { wiredIdleDeadline = nil }
        if case .cardEmulation = newState {} else { emulationDeadline = nil }
    }

    /// Actions that leave the current wired or emulation state (before moving elsewhere).
    private func leavingActions(keeping kept: Credential? = nil) -> [Action] {
        switch state {
        case .wired(let c):
            return c == kept ? [] : [.closeSecureElement(c)]
        case .cardEmulation(let c):
            return [.stopEmulation] + (c == kept ? [] : [.closeSecureElement(c)])
        case .management, .invalid:
            return []
        }
    }

    // MARK: Outcomes

    /// `enterWiredMode(using:)` succeeded: the secure element is open.
    public mutating func commitWiredMode(_ ticket: Ticket, credential: Credential, now: Duration) throws(CredentialSessionError) -> [Action] {
        try validate(ticket)
        let actions = leavingActions(keeping: credential)
        transition(to: .wired(credential: credential))
        wiredIdleDeadline = now + timings.wiredIdleTimeout
        return actions
    }

    /// A `transceive` finished (successfully or with a status word): the idle timer restarts.
    public mutating func recordTransceive(now: Duration) {
        if case .wired = state { wiredIdleDeadline = now + timings.wiredIdleTimeout }
    }

    /// `endWiredMode()`.
    public mutating func commitEndWiredMode(_ ticket: Ticket) throws(CredentialSessionError) -> [Action] {
        try validate(ticket)
        let actions = leavingActions()
        transition(to: .management)
        return actions
    }

    /// Card emulation started for `credential`: a billable event is recorded, the window starts.
    /// - Parameters:
    ///   - ticket: what ``check(_:now:)`` returned for `startCardEmulation`.
    ///   - credential: the credential now emulated; the billable event names its `id`.
    ///   - now: the session clock's reading; the window ends at `now` + the limit.
    ///   - timeLimit: the options' limit; the session's window caps it.
    /// - Throws: as ``validate(_:)``: `sessionInvalidated` or `invalidSessionState` when the state
    ///   changed since `ticket` was issued.
    public mutating func commitCardEmulation(
        _ ticket: Ticket, credential: Credential, now: Duration, timeLimit: Duration? = nil
    ) throws(CredentialSessionError) -> [Action] {
        try validate(ticket)
        let limit = min(timeLimit ?? timings.cardEmulationTimeLimit, timings.cardEmulationTimeLimit)
        let actions = leavingActions(keeping: credential)
        transition(to: .cardEmulation(credential: credential))
        emulationDeadline = now + limit
        billingLog.append(BillableEvent(sequence: billingLog.count + 1, credentialID: credential.id, time: now))
        return actions
    }

    /// `endCardEmulation()`.
    public mutating func commitEndCardEmulation(_ ticket: Ticket) throws(CredentialSessionError) -> [Action] {
        try validate(ticket)
        let actions = leavingActions()
        transition(to: .management)
        return actions
    }

    /// `CredentialTransaction.Configuration.invalidate()`: back to management from anywhere.
    public mutating func commitInvalidateConfiguration(_ ticket: Ticket) throws(CredentialSessionError) -> [Action] {
        try validate(ticket)
        guard state != .management else { return [] }
        let actions = leavingActions()
        transition(to: .management)
        return actions
    }

    /// `acquirePresentmentAssertion()`: records the acquisition.
    /// - Returns: the assertion's id.
    public mutating func commitAssertion(_ ticket: Ticket, now: Duration) throws(CredentialSessionError) -> UInt64 {
        try validate(ticket)
        nextAssertionID += 1
        activeAssertion = (nextAssertionID, now + timings.assertionLifetime)
        assertionTimes = assertionTimes.filter { $0 > now - timings.assertionRateWindow } + [now]
        return nextAssertionID
    }

    /// The app relinquished (or dropped) assertion `id`.
    public mutating func relinquishAssertion(id: UInt64) -> [Action] {
        guard let active = activeAssertion, active.id == id else { return [] }
        activeAssertion = nil
        return [.endAssertion(id: id)]
    }

    /// A call failed with `error`: `resourceUnavailable` returns to management; other errors
    /// leave the state unchanged.
    public mutating func commitFailure(_ ticket: Ticket, error: CredentialSessionError) -> [Action] {
        guard error.code == .resourceUnavailable, state != .invalid, state != .management else { return [] }
        let actions = leavingActions()
        transition(to: .management)
        return actions
    }

    /// Card emulation ended by itself (the reader kept failing): back to management.
    public mutating func emulationStopped(reason: String) -> [Action] {
        guard case .cardEmulation(let credential) = state else { return [] }
        transition(to: .management)
        return [.closeSecureElement(credential), .emit(.readerEvent(.emulationStoppedByReaderError(reason)))]
    }

    /// `invalidate()`, the loss of the reader, or the wired idle rule.
    public mutating func invalidate(reason: InvalidationReason) -> [Action] {
        guard state != .invalid else { return [] }
        var actions = leavingActions()
        if let active = activeAssertion {
            actions.append(.endAssertion(id: active.id))
            activeAssertion = nil
        }
        transition(to: .invalid)
        actions.append(.emit(.sessionInvalidated(reason: reason.errorCode)))
        actions.append(.finishSession)
        return actions
    }

    // MARK: Time

    /// The earliest deadline still to come, or nil.
    public var nextDeadline: Duration? {
        [wiredIdleDeadline, emulationDeadline, activeAssertion?.expires].compactMap { $0 }.min()
    }

    /// Applies every deadline reached at `now`, earliest first.
    public mutating func advance(to now: Duration) -> [Action] {
        var actions: [Action] = []
        // Bounded: each pass clears one deadline, and there are three.
        for _ in 0..<3 {
            guard let next = nextDeadline, next <= now else { break }
            if let expiry = activeAssertion?.expires, expiry == next {
                actions.append(.endAssertion(id: activeAssertion!.id))
                actions.append(.emit(.presentmentIntentAssertionTimeout))
                activeAssertion = nil
            } else if let deadline = emulationDeadline, deadline == next, case .cardEmulation = state {
                // The event first: stopping the runner waits up to one device step, and an
                // `invalidate()` arriving meanwhile must not finish the stream before it.
                actions.append(.emit(.cardEmulationTimeout))
                actions += leavingActions()
                transition(to: .management)
            } else if let deadline = wiredIdleDeadline, deadline == next {
                actions += invalidate(reason: .wiredIdleTimeout(timings.wiredIdleTimeout))
            } else {
                wiredIdleDeadline = nil
                emulationDeadline = nil
            }
        }
        return actions
    }
}
