import ISO7816
import PCSC
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Holds a `CardChannel` that only the executor's thread touches.
final class ChannelBox: @unchecked Sendable {
    // @unchecked: `channel` is read and written only in jobs of one BlockingExecutor (one thread).
    var channel: (any CardChannel)?
    var close: (@Sendable () -> Void)?
    /// The connection was lost (a changed card, pcscd gone) and could not be opened again at
    /// once: the next transceive tries again instead of asking for wired mode.
    var lost = false
}

/// A card in a PC/SC reader as the secure element (docs/session-model.md, "Relaying to a PC/SC card"):
/// wired `transceive` goes to it with SCardTransmit, and card emulation relays the terminal's
/// C-APDUs to it.
///
/// Status words pass through unchanged by default (a terminal speaks ISO/IEC 7816-4 and handles
/// 61 XX itself). With `resolveStatusWordsLocally`, 61 XX (GET RESPONSE) and 6C XX (resend with
/// Le = XX) are resolved here with `ISO7816Transport`, for terminals that do not.
///
/// Blocking calls run on the element's own `BlockingExecutor` thread, never on the shared pool.
///
/// Every call is bounded by ``callBound`` (40 s, or `SECBRIDGE_CALL_TIMEOUT` seconds): pcsc-lite's
/// SCardTransmit has no timeout of its own, and a card that stops answering would hold the
/// terminal for the whole emulation window. A call that outlives the bound throws
/// `secureElementChanged` naming the bound (the terminal's command is answered 6F 00 and the
/// session reports it); until the blocked call returns, later calls throw the same at once, and
/// ``close()`` releases the connection after it without waiting.
public final class CardSecureElement: SecureElement {
    /// Opens the channel (runs on the executor thread); returns it and a closure that releases it.
    public typealias Connector = @Sendable () throws -> (channel: any CardChannel, close: @Sendable () -> Void)

    /// A short description for messages, e.g. "PC/SC card in ACS ACR38U 00 00".
    public let secureElementDescription: String
    /// Whether 61xx (GET RESPONSE) and 6Cxx (repeat with Le = xx) are resolved here (ISO/IEC 7816-4 §5.3.4) instead of passed to the terminal.
    public let resolveStatusWordsLocally: Bool
    /// The longest a call to the card (SCardConnect, SCardTransmit, SCardDisconnect) may take.
    public let callBound: Duration
    private let clock: any SessionClock
    private let connector: Connector
    private let executor: BlockingExecutor
    private let box = ChannelBox()
    /// Why the element is unusable while a call that outlived the bound still blocks its thread.
    private let stalled = StallFlag()

    /// A secure element on the card `connector` opens.
    /// - Parameters:
    ///   - description: for messages.
    ///   - resolveStatusWordsLocally: see ``resolveStatusWordsLocally``.
    ///   - executor: the thread the PC/SC calls run on; nil makes one.
    ///   - callBound: the bound on each call (default ``defaultCallBound``).
    ///   - clock: what the bound is measured on (tests pass a `VirtualSessionClock`).
    ///   - connector: opens the channel (SCardConnect), on the executor thread.
    public init(
        description: String, resolveStatusWordsLocally: Bool = false, executor: BlockingExecutor? = nil,
        callBound: Duration = CardSecureElement.defaultCallBound, clock: any SessionClock = ContinuousSessionClock(),
        connector: @escaping Connector
    ) {
        self.secureElementDescription = description
        self.resolveStatusWordsLocally = resolveStatusWordsLocally
        self.callBound = callBound
        self.clock = clock
        self.connector = connector
        self.executor = executor ?? BlockingExecutor(name: "secure element \(description)")
    }

    /// 40 s, or the whole seconds (1…3600) of the environment variable `SECBRIDGE_CALL_TIMEOUT`,
    /// the bound the `secbridge` binaries put on every blocking PC/SC call. (The binaries refuse
    /// any other value of the variable before a command runs; here it counts as unset.)
    public static var defaultCallBound: Duration { callBound(fromEnvironment: getenv("SECBRIDGE_CALL_TIMEOUT").map { String(cString: $0) }) }

    /// ``defaultCallBound`` for the value `value` of `SECBRIDGE_CALL_TIMEOUT` (nil: unset).
    public static func callBound(fromEnvironment value: String?) -> Duration {
        guard let value, let seconds = Int(value), (1...3600).contains(seconds) else { return .seconds(40) }
        return .seconds(seconds)
    }

    /// The card in the PC/SC reader `readerName`, connected SHARED with T=0 or T=1.
    /// - Parameters:
    ///   - readerName: the PC/SC reader holding the card.
    ///   - resolveStatusWordsLocally: see ``resolveStatusWordsLocally``.
    ///   - client: how to reach the reader: pcsc-lite by default, or in process.
    ///   - callBound: the bound on each call (``callBound``).
    ///   - clock: what the bound is measured on.
    public static func pcsc(
        readerName: String, resolveStatusWordsLocally: Bool = false, client: any PCSCClient = PCSCLiteClient(),
        callBound: Duration = CardSecureElement.defaultCallBound, clock: any SessionClock = ContinuousSessionClock()
    ) -> CardSecureElement {
        CardSecureElement(
            description: "PC/SC card in \(readerName)", resolveStatusWordsLocally: resolveStatusWordsLocally,
            callBound: callBound, clock: clock
        ) {
            let context = try client.establishContext()
            let handle = try context.connect(to: readerName, share: .shared, protocols: .any)
            return (handle, {
                try? handle.disconnect(.leave)
                try? context.release()
            })
        }
    }

    /// Connects the card (SCardConnect through `connector`). Idempotent.
    /// - Throws: `resourceUnavailable` when the card or reader is busy or gone (sharing violation, no card, removed card), `secureElementChanged` when SCardConnect outlived ``callBound``, `instanceDoesNotExist` otherwise.
    public func open() async throws(CredentialSessionError) {
        let box = self.box
        let connector = self.connector
        let description = secureElementDescription
        do {
            try await bounded("SCardConnect") {
                guard box.channel == nil else { return }
                let (channel, close) = try connector()
                box.channel = channel
                box.close = close
                box.lost = false
            }
        } catch {
            throw CredentialSessionError.wrapping(error, as: .instanceDoesNotExist, "opening \(description) failed")
        }
    }

    /// Sends `command` to the card.
    ///
    /// When the card changed since it was connected — SCARD_W_REMOVED_CARD, SCARD_W_RESET_CARD,
    /// SCARD_E_INVALID_HANDLE, SCARD_E_NOT_TRANSACTED, or SCardStatus showing the card gone —
    /// the old connection is released and a new one opened (a new card session: nothing selected),
    /// and `secureElementChanged` is thrown saying so: the command that met the change is not
    /// answered, because its context (the selected application) is gone. The same happens when
    /// pcscd stops answering (SCARD_E_NO_SERVICE, SCARD_E_SERVICE_STOPPED, SCARD_F_COMM_ERROR: a
    /// restart): a new context is established and the card connected again. When that fails
    /// (pcscd not back yet), the next command tries again, so one command is lost, not the rest.
    /// - Throws: `CredentialSessionError` `secureElementChanged` (the card changed, pcscd went away,
    ///   or the card is still not reachable),
    ///   `invalidCredentialState` (not connected), or the wrapped lower-layer error.
    public func transceive(_ command: [UInt8]) async throws(CredentialSessionError) -> [UInt8] {
        let box = self.box
        let resolve = resolveStatusWordsLocally
        let connector = self.connector
        let description = secureElementDescription
        do {
            return try await bounded("SCardTransmit of \(command.hexString)") {
                if box.channel == nil && box.lost {
                    // Lost earlier and not back then (pcscd still restarting, the card away): try
                    // again; this command then goes to a new card session.
                    do {
                        let (channel, close) = try connector()
                        (box.channel, box.close, box.lost) = (channel, close, false)
                    } catch {
                        throw CredentialSessionError(
                            .secureElementChanged,
                            "the card serving as secure element (\(description)) is still not connected (\(error)): put the card back on its reader, or start pcscd",
                            cause: UnderlyingCause(error))
                    }
                }
                guard let channel = box.channel else {
                    throw CredentialSessionError(.invalidCredentialState, "the card is not connected; enter wired mode first")
                }
                do {
                    if resolve { return try ISO7816Transport(channel: channel).transmit(bytes: command) }
                    return try channel.transmit(command)
                } catch let error as PCSCError where error.isServiceLostOrCut {
                    // pcscd went away (restarted or stopped): the context is dead for good and the
                    // card was powered again by the new pcscd, so its session is gone too
                    // (docs/cases.md P12). A new context and connection, as after a changed card.
                    box.close?()
                    (box.channel, box.close) = (nil, nil)
                    let reconnected: String
                    do {
                        let (channel, close) = try connector()
                        (box.channel, box.close) = (channel, close)
                        reconnected = "a new context and card session were opened for what follows"
                    } catch {
                        box.lost = true
                        reconnected = "and it could not be reached again yet (\(error)); the next command tries again"
                    }
                    throw CredentialSessionError(
                        .secureElementChanged,
                        "pcscd stopped answering (\(error.name)) during \(command.hexString) to the card serving as secure element (\(description)); \(reconnected)",
                        cause: UnderlyingCause(error))
                } catch let error as PCSCError where Self.meansCardChanged(error, channel: channel) {
                    let what = error == .resetCard ? "was reset by another program"
                        : error == .notTransacted && !Self.cardIsGone(channel) ? "failed the exchange (taken out of the field or swapped for another)"
                        : "was removed or replaced"
                    box.close?()
                    box.channel = nil
                    box.close = nil
                    let reconnected: String
                    do {
                        let (channel, close) = try connector()
                        box.channel = channel
                        box.close = close
                        reconnected = "its state is lost; a new card session was opened for what follows"
                    } catch let reconnect as PCSCError {
                        box.lost = true
                        reconnected = "and it could not be connected again (\(reconnect.name)): put the card back on its reader"
                    } catch {
                        box.lost = true
                        reconnected = "and it could not be connected again (\(error)): put the card back on its reader"
                    }
                    throw CredentialSessionError(
                        .secureElementChanged,
                        "the card serving as secure element (\(description)) \(what) (\(error.name)) during \(command.hexString); \(reconnected)",
                        cause: UnderlyingCause(error))
                }
            }
        } catch {
            throw CredentialSessionError.wrapping(error, as: .internalError, "SCardTransmit to \(description) failed")
        }
    }

    /// Whether a failed exchange means the card session is not the one connected any more:
    /// removed, reset, an invalid handle, or SCARD_E_NOT_TRANSACTED. A contactless card that
    /// fails an exchange has lost its RF session (it left the field, maybe for another card the
    /// reader then activated before pcscd's presence poll saw a gap), so its state is gone
    /// whether or not pcscd noticed.
    static func meansCardChanged(_ error: PCSCError, channel: any CardChannel) -> Bool {
        if error == .removedCard || error == .resetCard || error == .invalidHandle || error == .notTransacted { return true }
        return cardIsGone(channel)
    }

    /// Whether SCardStatus says the connected card has left.
    static func cardIsGone(_ channel: any CardChannel) -> Bool {
        (channel as? any PCSCConnection)?.cardHasLeft() ?? false
    }

    /// Nothing: the card keeps its own state (its selection) across activations.
    public func terminalActivated() async {}

    /// Releases the card (SCardDisconnect with SCARD_LEAVE_CARD). Idempotent. While a call that
    /// outlived ``callBound`` still blocks, the release is queued after it and this returns at once.
    public func close() async {
        let box = self.box
        let release: @Sendable () -> Void = {
            box.close?()
            box.channel = nil
            box.close = nil
            box.lost = false
        }
        // A call still blocked past its bound: the release follows it on the executor's thread.
        if stalled.reason != nil {
            executor.enqueue(release)
            return
        }
        _ = try? await bounded("SCardDisconnect", release)
    }

    /// Runs `body` on the executor's thread, waiting at most ``callBound`` on ``clock``.
    /// - Throws: what `body` throws; `secureElementChanged` when the bound passed first (the call
    ///   goes on blocking the thread; the element is marked unusable until it returns) or a call
    ///   that outlived its bound still blocks.
    private func bounded<T: Sendable>(_ call: String, _ body: @escaping @Sendable () throws -> T) async throws -> T {
        if let reason = stalled.reason { throw CredentialSessionError(.secureElementChanged, reason) }
        let clock = self.clock
        let deadline = clock.now + callBound
        let seconds = callBound.components.seconds
        let reason = "the card serving as secure element (\(secureElementDescription)) did not answer \(call) within \(seconds) s (the bound SECBRIDGE_CALL_TIMEOUT sets): it stopped answering, or its reader or pcscd is stuck; remove the card and put it back, or replug its reader"
        let stalled = self.stalled
        let pending = PendingCall<T>()
        let executor = self.executor
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) -> Void in
            pending.start(continuation)
            let accepted = executor.enqueue {
                let result = Result<T, any Error> { try body() }
                // A call that returns after its bound finds nobody waiting: the element is usable again.
                if !pending.finish(with: result) { stalled.reason = nil }
            }
            guard accepted else {
                _ = pending.finish(with: .failure(CredentialSessionError(.invalidCredentialState, "the thread of \(executor.name) has been shut down")))
                return
            }
            pending.arm(Task {
                guard (try? await clock.sleep(until: deadline)) != nil else { return }
                stalled.reason = reason
                if !pending.finish(with: .failure(CredentialSessionError(.secureElementChanged, reason))) { stalled.reason = nil }
            })
        }
    }
}

/// Why a ``CardSecureElement`` is unusable: a call that outlived its bound still blocks.
private final class StallFlag: Sendable {
    private let value = Mutex<String?>(nil)
    var reason: String? {
        get { value.withLock { $0 } }
        set { value.withLock { $0 = newValue } }
    }
}

/// One bounded call: whichever of its result and its bound comes first resumes the caller.
private final class PendingCall<T: Sendable>: Sendable {
    private let state = Mutex<(continuation: CheckedContinuation<T, any Error>?, timer: Task<Void, Never>?)>((nil, nil))

    func start(_ continuation: CheckedContinuation<T, any Error>) { state.withLock { $0.continuation = continuation } }

    /// Keeps the bound's timer, or cancels it when the call finished already.
    func arm(_ timer: Task<Void, Never>) {
        let finished = state.withLock { s -> Bool in
            if s.continuation == nil { return true }
            s.timer = timer
            return false
        }
        if finished { timer.cancel() }
    }

    /// Resumes the caller with `result` unless it was resumed already; returns whether it was this call.
    func finish(with result: Result<T, any Error>) -> Bool {
        let (waiting, timer) = state.withLock { s in
            defer { s = (nil, nil) }
            return (s.continuation, s.timer)
        }
        timer?.cancel()
        waiting?.resume(with: result)
        return waiting != nil
    }
}
