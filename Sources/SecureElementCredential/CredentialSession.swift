import ISO7816
import PCSCCore
import Synchronization

/// What a session is made with.
public struct CredentialSessionOptions: Sendable {
    /// The credentials `listCredentials()` returns and the transactions may use.
    public var credentials: [Credential]
    /// The reader that emulates cards; nil when there is none (wired mode still works, transactions
    /// fail with `featureUnavailable`).
    public var emulationBackend: (any CardEmulationBackend)?
    /// The reader this session claims (one session per reader); defaults to the backend's reader.
    public var readerName: String?
    /// Who approves transactions (on iOS: the system's authorization sheet).
    public var authorizer: any TransactionAuthorizer
    /// The clock every deadline runs on (a virtual clock in tests).
    public var clock: any SessionClock
    /// The rules' durations and limits.
    public var timings: SessionTimings
    /// On an in-process desk on virtual time (`clock` is the desk's `VirtualTime`): the command's
    /// activity, so that time does not move on its own while the session's own work runs (its
    /// runner between device steps, a fired timer, an event not yet handled by the one consumer
    /// of ``CredentialSession/eventStream``, who releases one hold per event it has handled).
    /// nil: the session's tasks are invisible to the clock.
    package var activity: VirtualTime.Activity?

    /// Options with the credentials, the backend, the reader and the authorizer; clock and timings default to real time and the documented limits.
    public init(
        credentials: [Credential], emulationBackend: (any CardEmulationBackend)? = nil, readerName: String? = nil,
        authorizer: any TransactionAuthorizer, clock: any SessionClock = ContinuousSessionClock(),
        timings: SessionTimings = .standard
    ) {
        self.credentials = credentials
        self.emulationBackend = emulationBackend
        self.readerName = readerName
        self.authorizer = authorizer
        self.clock = clock
        self.timings = timings
    }
}

/// A session with the credentials of a secure element, on Apple's `CredentialSession` model
/// (docs/session-model.md): management, wired mode (`transceive` to the secure element), card
/// emulation (a terminal reads the credential through an ACR122-class reader), presentment
/// assertions, events.
///
/// The rules live in `SessionStateMachine`; this actor performs what it decides: opens and closes
/// secure elements, asks the authorizer, runs the emulation loop on the backend, fires deadlines
/// on the injected clock, and publishes events. Blocking device work happens on the backends'
/// and secure elements' own threads, never on the actor.
public actor CredentialSession {
    /// The session's events; finishes after `sessionInvalidated`.
    public nonisolated let eventStream: AsyncStream<CredentialSessionEvent>
    private let continuation: AsyncStream<CredentialSessionEvent>.Continuation
    let options: CredentialSessionOptions
    private let claim: (reader: String, token: UInt64)?
    private var machine: SessionStateMachine
    private var timerTask: Task<Void, Never>?
    private var runner: (runner: EmulationRunner, task: Task<Void, Never>, epoch: UInt64)?
    /// The epochs of runners asked to stop whose task has not ended: what such a runner still
    /// observes (a TgInitAsTarget that was in flight returning an activation, its closing
    /// "card emulation ended") is published, since nothing recorded may be lost; only its state
    /// changes (`failed`, `readerLost`) no longer apply, the session having moved on.
    private var stoppingEpochs: Set<UInt64> = []
    /// Every runner asked to stop, until it has restored the reader: whoever ends the session
    /// waits for it, also when another path (the window's end, a failed step) asked first.
    private var stoppingRunners: Task<Void, Never>?
    private var assertions: [UInt64: WeakAssertion] = [:]

    private struct WeakAssertion {
        weak var assertion: PresentmentIntentAssertion?
    }

    private init(options: CredentialSessionOptions, claim: (String, UInt64)?) {
        self.options = options
        self.claim = claim
        machine = SessionStateMachine(timings: options.timings)
        (eventStream, continuation) = AsyncStream.makeStream(of: CredentialSessionEvent.self, bufferingPolicy: .bufferingNewest(4096))
    }

    deinit {
        if let claim { ReaderClaims.release(claim.reader, token: claim.token) }
        timerTask?.cancel()
        runner?.runner.stop()
        continuation.finish()
    }

    /// Starts a session in `management`.
    /// - Throws: `CredentialSessionError` `resourceUnavailable` when another session holds the reader: one
    ///   of this process, or (readers behind pcscd, `CardEmulationBackend.sharedSocketPath`) of another
    ///   process, whose pid the message names.
    public static func startSession(_ options: CredentialSessionOptions) throws(CredentialSessionError) -> CredentialSession {
        let reader = options.emulationBackend?.readerClaim ?? options.readerName
        var claim: (String, UInt64)?
        if let reader {
            let name = options.emulationBackend?.readerName ?? reader
            switch ReaderClaims.claim(reader, acrossProcesses: options.emulationBackend?.sharedSocketPath) {
            case .success(let token):
                claim = (reader, token)
            case .failure(.heldInProcess):
                throw CredentialSessionError(
                    .resourceUnavailable, "another credential session holds the reader \"\(name)\"; invalidate it first")
            case .failure(.heldByProcess(let pid)):
                throw CredentialSessionError(
                    .resourceUnavailable,
                    "another process\(pid.map { " (pid \($0))" } ?? "") holds the reader \"\(name)\" for a credential session (another `secbridge emulate`?); stop it first, or use another reader")
            }
        }
        return CredentialSession(options: options, claim: claim)
    }

    /// The current state.
    public var state: SessionState { machine.state }

    /// One entry per successful card-emulation activation.
    public var billingLog: [BillableEvent] { machine.billingLog }

    /// The reader name used for prompts and messages.
    private var readerName: String {
        options.readerName ?? options.emulationBackend?.readerName ?? "no reader"
    }

    // MARK: Management

    /// The credentials of this session. Management only.
    /// - Throws: `invalidSessionState`, `sessionInvalidated`.
    public func listCredentials() throws(CredentialSessionError) -> [Credential] {
        _ = try machine.check(.listCredentials, now: options.clock.now)
        return options.credentials
    }

    /// Invalidates the session from any state: ends card emulation (within one device step),
    /// closes the secure element, emits `sessionInvalidated`, finishes the event stream and
    /// releases the reader. Idempotent.
    public func invalidate() async {
        await perform(machine.invalidate(reason: .invalidatedByClient))
    }

    /// A configuration for `transactionTask(_:action:)`.
    ///
    /// Apple's shape (`async throws`), so `try await session.configuration()` reads as on iOS;
    /// here it neither suspends nor fails (docs/apple-api-map.md).
    public nonisolated func configuration() async throws(CredentialSessionError) -> CredentialTransaction.Configuration {
        CredentialTransaction.Configuration(session: self)
    }

    // MARK: Wired mode

    /// Opens the credential's secure element for `transceive` (from any state but invalid).
    /// - Throws: `credentialDoesNotExist` for a credential not in the session; the secure element's
    ///   errors (`resourceUnavailable` returns the session to management; others leave it as it was).
    public func enterWiredMode(using credential: Credential) async throws(CredentialSessionError) {
        let ticket = try machine.check(.enterWiredMode(credential), now: options.clock.now)
        guard options.credentials.contains(credential) else {
            throw CredentialSessionError(
                .credentialDoesNotExist, "the credential \(credential.id) is not one of this session's credentials")
        }
        do throws(CredentialSessionError) {
            try await credential.secureElement.open()
            await credential.secureElement.terminalActivated()
            try machine.validate(ticket)
        } catch {
            await perform(machine.commitFailure(ticket, error: error))
            throw error
        }
        let actions = try machine.commitWiredMode(ticket, credential: credential, now: options.clock.now)
        await perform(actions)
    }

    /// Sends one C-APDU to the wired credential's secure element and returns its R-APDU.
    ///
    /// `| CLA | INS | P1 | P2 | [Lc data] | [Le] |` → `| data | SW1 | SW2 |`. A status word is an
    /// answer, not an error. Restarts the wired idle timer.
    /// - Throws: `invalidInput` for bytes that are not a command APDU (ISO/IEC 7816-4 §5.1);
    ///   `invalidSessionState` outside wired mode; the secure element's errors.
    public func transceive(_ command: [UInt8]) async throws(CredentialSessionError) -> [UInt8] {
        let ticket = try machine.check(.transceive, now: options.clock.now)
        do {
            _ = try CommandAPDU(parsing: command)
        } catch {
            throw CredentialSessionError(.invalidInput, "not a command APDU: \(error)", cause: .other(error.description))
        }
        guard case .wired(let credential) = machine.state else {
            throw CredentialSessionError(.invalidSessionState, "transceive(_:) needs wired mode")
        }
        do throws(CredentialSessionError) {
            let response = try await credential.secureElement.transceive(command)
            machine.recordTransceive(now: options.clock.now)
            rescheduleTimer()
            return response
        } catch {
            await perform(machine.commitFailure(ticket, error: error))
            throw error
        }
    }

    /// Leaves wired mode for management and closes the secure element.
    /// - Throws: `invalidSessionState` outside wired mode.
    public func endWiredMode() async throws(CredentialSessionError) {
        let ticket = try machine.check(.endWiredMode, now: options.clock.now)
        await perform(try machine.commitEndWiredMode(ticket))
    }

    // MARK: Card emulation

    /// Asks the authorizer, then puts the reader into card emulation for `credential`.
    ///
    /// Requires `wired(credential:)` with the same credential and no active app assertion.
    /// Success: `cardEmulation(credential:)`, a billable event, and a window of at most 60 s
    /// (`cardEmulationTimeout`). Field events follow when a terminal activates the card.
    /// - Throws: `invalidSessionState`; `resourceUnavailable` (an app assertion is active, or the
    ///   reader is busy or gone: the session returns to management); `featureUnavailable` (no
    ///   reader that can emulate, with the reason); `userCanceledAuthorization`,
    ///   `userAuthorizationTimedOut`. Every error but `resourceUnavailable` leaves the state as it was.
    public func performTransaction(
        using credential: Credential, options emulationOptions: CardEmulationOptions? = nil
    ) async throws(CredentialSessionError) {
        let ticket = try machine.check(.performTransaction(credential), now: options.clock.now)
        try await startEmulation(ticket, credential: credential, kind: .performTransaction, emulationOptions)
    }

    /// `performTransaction(using:options:)` with the wired credential.
    public func performCardEmulationTransactionWithCurrentCredential(
        options emulationOptions: CardEmulationOptions? = nil
    ) async throws(CredentialSessionError) {
        let ticket = try machine.check(.performCardEmulationTransactionWithCurrentCredential, now: options.clock.now)
        guard case .wired(let credential) = machine.state else {
            throw CredentialSessionError(.invalidSessionState, "no wired credential")
        }
        try await startEmulation(
            ticket, credential: credential, kind: .performCardEmulationTransactionWithCurrentCredential, emulationOptions)
    }

    /// Ends card emulation (within one device step) and returns to management.
    /// - Throws: `invalidSessionState` outside card emulation.
    public func endCardEmulation() async throws(CredentialSessionError) {
        let ticket = try machine.check(.endCardEmulation, now: options.clock.now)
        await perform(try machine.commitEndCardEmulation(ticket))
    }

    private func startEmulation(
        _ ticket: SessionStateMachine.Ticket, credential: Credential, kind: AuthorizationRequest.Kind,
        _ emulationOptions: CardEmulationOptions?
    ) async throws(CredentialSessionError) {
        guard let backend = options.emulationBackend else {
            throw CredentialSessionError(
                .featureUnavailable,
                "card emulation needs an ACR122-class reader (PN532); this session has none. Wired mode and reader sessions still work")
        }
        if case .unsupported(let reason, let cause) = backend.support {
            throw CredentialSessionError(.featureUnavailable, reason, cause: cause)
        }
        let request = AuthorizationRequest(credential: credential, kind: kind, readerName: backend.readerName)
        switch await authorize(request) {
        case .approved: break
        case .declined:
            throw CredentialSessionError(.userCanceledAuthorization, "the authorizer declined: \(request.prompt)")
        case nil:
            throw CredentialSessionError(
                .userAuthorizationTimedOut, "the authorizer did not answer within \(options.timings.authorizationTimeout)")
        }
        try machine.validate(ticket)
        do {
            try await backend.prepare()
        } catch {
            let wrapped = CredentialSessionError.wrapping(error, as: .internalError, "preparing \(backend.readerName) for card emulation failed")
            try? await backend.restore()
            await perform(machine.commitFailure(ticket, error: wrapped))
            throw wrapped
        }
        do throws(CredentialSessionError) {
            try machine.validate(ticket)
        } catch {
            try? await backend.restore()
            throw error
        }
        let chosen = emulationOptions ?? credential.emulationDefaults
        let actions = try machine.commitCardEmulation(
            ticket, credential: credential, now: options.clock.now, timeLimit: chosen.timeLimit)
        startRunner(backend: backend, credential: credential, parameters: TargetParameters(chosen))
        await perform(actions)
    }

    /// The authorizer's answer, or nil when it did not come within the timeout.
    func authorize(_ request: AuthorizationRequest) async -> AuthorizationDecision? {
        let authorizer = options.authorizer
        let clock = options.clock
        let deadline = clock.now + options.timings.authorizationTimeout
        return await firstOf(
            { await authorizer.authorize(request) },
            {
                do { try await clock.sleep(until: deadline) } catch {}
                return nil
            })
    }

    /// Publishes `event`; with an activity, the event holds time until its consumer released it
    /// (an event the stream drops or no longer takes gives its hold back at once).
    private func emit(_ event: CredentialSessionEvent) {
        let activity = options.activity
        activity?.hold()
        switch continuation.yield(event) {
        case .enqueued: break
        case .dropped, .terminated: activity?.release()
        @unknown default: activity?.release()
        }
    }

    /// Awaits another flow of the session (a stopping runner) without holding time meanwhile:
    /// that flow may wait on the clock (a pending TgInitAsTarget), and time must move for it.
    private func awaitingAnotherFlow(_ task: Task<Void, Never>) async {
        options.activity?.release()
        await task.value
        options.activity?.hold()
    }

    private func startRunner(backend: any CardEmulationBackend, credential: Credential, parameters: TargetParameters) {
        let deadline = machine.emulationDeadline ?? options.clock.now
        let id = UInt64(machine.epoch)
        let runner = EmulationRunner(
            backend: backend, secureElement: credential.secureElement, parameters: parameters,
            clock: options.clock, deadline: deadline, activity: options.activity
        ) { [weak self] report in
            await self?.runnerReported(report, epoch: id)
        }
        let activity = options.activity
        activity?.hold()
        let task = Task { [weak self] in
            await runner.run()
            await self?.runnerEnded(epoch: id)
            activity?.release()
        }
        self.runner = (runner, task, id)
    }

    private func runnerEnded(epoch: UInt64) {
        stoppingEpochs.remove(epoch)
    }

    private func runnerReported(_ report: EmulationRunner.Report, epoch: UInt64) async {
        var isCurrent = false
        if machine.epoch == epoch, case .cardEmulation = machine.state { isCurrent = true }
        guard isCurrent || stoppingEpochs.contains(epoch) else { return }
        switch report {
        case .field(let info):
            emit(.fieldStateChanged(info: info.state))
            emit(.fieldObserved(info))
        case .exchanged(let command, let response):
            emit(.apduExchanged(command: command, response: response))
        case .failed(let reason):
            guard isCurrent else { return }
            await perform(machine.emulationStopped(reason: reason), waitForRunner: false)
        case .readerLost(let detail):
            guard isCurrent else { return }
            await perform(machine.invalidate(reason: .readerLost(detail)), waitForRunner: false)
        case .secureElementChanged(let detail):
            emit(.readerEvent(.secureElementChanged(detail)))
        }
    }

    /// Asks the runner to stop; with `wait`, returns once every stopped runner has restored the
    /// reader. A caller that finds the runner already stopping by another path (the window's
    /// deadline while `invalidate()` arrives) waits for that one too, so the session never ends
    /// (and its backend's executor never shuts down) before the restore ran.
    private func stopRunner(wait: Bool) async {
        if let current = runner {
            runner = nil
            stoppingEpochs.insert(current.epoch)
            current.runner.stop()
            let earlier = stoppingRunners
            stoppingRunners = Task {
                await earlier?.value
                await current.task.value
            }
        }
        if wait, let stopping = stoppingRunners { await awaitingAnotherFlow(stopping) }
    }

    // MARK: Presentment assertions

    /// Acquires the app's presentment intent assertion (management or wired mode).
    ///
    /// At most two in any 80 s; each lasts at most 60 s (`presentmentIntentAssertionTimeout`).
    /// Relinquish it before a transaction.
    /// - Throws: `resourceUnavailable` (one is active, or the rate limit), `invalidSessionState`
    ///   during card emulation, `sessionInvalidated`.
    public func acquirePresentmentAssertion() throws(CredentialSessionError) -> PresentmentIntentAssertion {
        let now = options.clock.now
        let ticket = try machine.check(.acquirePresentmentAssertion, now: now)
        let id = try machine.commitAssertion(ticket, now: now)
        let assertion = PresentmentIntentAssertion(session: self, id: id)
        assertions[id] = WeakAssertion(assertion: assertion)
        rescheduleTimer()
        return assertion
    }

    /// ``acquirePresentmentAssertion()`` under the name the sample on Apple's
    /// `transactionTask(_:action:)` page uses, so that sample compiles unchanged (Apple's
    /// CredentialSession declares only `acquirePresentmentAssertion()`; docs/apple-api-map.md).
    /// - Throws: as ``acquirePresentmentAssertion()``.
    public func acquirePresentmentIntentAssertion() throws(CredentialSessionError) -> PresentmentIntentAssertion {
        try acquirePresentmentAssertion()
    }

    func relinquishAssertion(id: UInt64) async {
        await perform(machine.relinquishAssertion(id: id))
    }

    // MARK: Configuration

    func invalidateConfiguration() async {
        guard let ticket = try? machine.check(.invalidateConfiguration, now: options.clock.now),
              let actions = try? machine.commitInvalidateConfiguration(ticket)
        else { return }
        await perform(actions)
    }

    // MARK: Actions and deadlines

    private func perform(_ actions: [SessionStateMachine.Action], waitForRunner: Bool = true) async {
        for action in actions {
            switch action {
            case .emit(let event):
                emit(event)
            case .stopEmulation:
                await stopRunner(wait: waitForRunner)
            case .closeSecureElement(let credential):
                await credential.secureElement.close()
            case .endAssertion(let id):
                assertions.removeValue(forKey: id)?.assertion?.markInvalid()
            case .finishSession:
                // Not from the runner's own report (it would wait for itself): the reader is gone then.
                if waitForRunner, let stopping = stoppingRunners { await awaitingAnotherFlow(stopping) }
                if let claim { ReaderClaims.release(claim.reader, token: claim.token) }
                continuation.finish()
            }
        }
        rescheduleTimer()
    }

    private func rescheduleTimer() {
        timerTask?.cancel()
        timerTask = nil
        guard machine.state != .invalid || machine.activeAssertion != nil, let next = machine.nextDeadline else { return }
        let clock = options.clock
        if let activity = options.activity {
            // A fired timer is a flow of the activity until its actions are done.
            timerTask = Task { [weak self] in
                defer { activity.release() }
                do { try await activity.sleep(until: next, handingOver: false) } catch { return }
                await self?.deadlineReached()
            }
            return
        }
        timerTask = Task { [weak self] in
            do { try await clock.sleep(until: next) } catch { return }
            await self?.deadlineReached()
        }
    }

    private func deadlineReached() async {
        let actions = machine.advance(to: options.clock.now)
        if actions.isEmpty {
            rescheduleTimer()
        } else {
            await perform(actions)
        }
    }
}

/// This package's older spelling of ``CredentialSession/PresentmentIntentAssertion``.
public typealias PresentmentIntentAssertion = CredentialSession.PresentmentIntentAssertion

extension CredentialSession {
/// The app's intent to present a credential (Apple's `CredentialSession.PresentmentIntentAssertion`).
///
/// It ends on `relinquish()`, when it is released (deinit), after its lifetime (60 s, with the
/// session event `presentmentIntentAssertionTimeout`), and when the session is invalidated.
public final class PresentmentIntentAssertion: Sendable {
    /// Whether the assertion still holds.
    public enum State: String, Sendable, Hashable, CustomStringConvertible {
        /// Held: the app may present its own UI.
        case active
        /// Ended (relinquished, released, expired, or the session was invalidated).
        case invalid

        /// `active` or `invalid`.
        public var description: String { rawValue }
    }

    private let session: CredentialSession
    let id: UInt64
    private let current = Mutex(State.active)

    init(session: CredentialSession, id: UInt64) {
        self.session = session
        self.id = id
    }

    deinit {
        if current.withLock({ $0 }) == .active {
            let session = self.session
            let id = self.id
            Task { await session.relinquishAssertion(id: id) }
        }
    }

    /// The assertion's state now.
    public var state: State { current.withLock { $0 } }

    /// Ends the assertion. Idempotent.
    ///
    /// Apple's shape (`async throws`), so `try await assertion.relinquish()` reads as on iOS; here
    /// it never fails (docs/apple-api-map.md).
    public func relinquish() async throws(CredentialSessionError) {
        let wasActive = current.withLock { s in
            defer { s = .invalid }
            return s == .active
        }
        if wasActive { await session.relinquishAssertion(id: id) }
    }

    func markInvalid() {
        current.withLock { $0 = .invalid }
    }
}
}
