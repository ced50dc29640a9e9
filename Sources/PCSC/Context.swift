import Synchronization

/// A connection to the PC/SC resource manager (pcscd): lists readers, connects to cards, waits for
/// reader and card events.
///
/// Every method except ``cancel()`` blocks the calling thread (an IPC round trip to pcscd, or a wait
/// for events in ``getStatusChange(_:timeout:)``). Call them from a thread of your own or through a
/// `BlockingExecutor`, never from Swift's shared concurrency pool. pcsc-lite serializes calls on one
/// context, so a thread blocked in ``getStatusChange(_:timeout:)`` stalls other calls on the same
/// context: give monitoring its own context. ``cancel()`` may be called from any thread.
///
/// The client library reads `PCSCLITE_CSOCK_NAME` once, at the first PC/SC call of the process:
/// one process talks to one pcscd.
///
/// The corresponding PC/SC functions are SCardEstablishContext and SCardReleaseContext.
public final class PCSCContext: PCSCClientContext {
    /// The scope of a context (SCARD_SCOPE_*). pcsc-lite treats them alike.
    public enum Scope: UInt, Sendable {
        /// SCARD_SCOPE_USER (0): the user's readers.
        case user = 0
        /// SCARD_SCOPE_TERMINAL (1): the terminal's readers.
        case terminal = 1
        /// SCARD_SCOPE_SYSTEM (2): the system's readers; what pcsc-lite's own tools pass.
        case system = 2
    }

    let raw: SCard.Context
    private let released = Atomic<Bool>(false)

    /// Establishes a context.
    /// - Throws: `PCSCError` — SCARD_E_NO_SERVICE (0x8010001D) when pcscd is not running.
    public init(scope: Scope = .system) throws(PCSCError) {
        raw = try SCard.establishContext(scope: scope.rawValue)
    }

    deinit { try? release() }

    /// Releases the context; later calls fail with SCARD_E_INVALID_HANDLE. Idempotent.
    ///
    /// The corresponding PC/SC function is SCardReleaseContext.
    public func release() throws(PCSCError) {
        if released.exchange(true, ordering: .acquiringAndReleasing) { return }
        try SCard.releaseContext(raw)
    }

    /// Whether pcsc-lite still considers the context valid. After pcscd restarts this stays true
    /// while every call fails with SCARD_E_NO_SERVICE (docs/cases.md P12): do not rely on it to detect that.
    ///
    /// The corresponding PC/SC function is SCardIsValidContext.
    public var isValid: Bool { !released.load(ordering: .acquiring) && SCard.isValidContext(raw) }

    /// The names of the readers pcscd knows, in its order; an empty list when there are none.
    ///
    /// The corresponding PC/SC function is SCardListReaders (its multi-string is split by
    /// `parseMultiString(_:)`).
    /// - Throws: `PCSCError`, e.g. SCARD_E_NO_SERVICE when pcscd went away.
    public func listReaders() throws(PCSCError) -> [String] {
        guard let multiString = try SCard.listReaders(raw) else { return [] }
        return parseMultiString(multiString)
    }

    /// Connects to the card in a reader, or with `ShareMode.direct` to the reader itself.
    ///
    /// The corresponding PC/SC function is SCardConnect.
    /// - Parameters:
    ///   - reader: the reader's full name, as ``listReaders()`` gives it.
    ///   - share: exclusive, shared or direct.
    ///   - protocols: the acceptable protocols; `.undefined` (0) for a direct connection.
    /// - Throws: `PCSCError` — SCARD_E_NO_SMARTCARD (0x8010000C) with no card (except direct),
    ///   SCARD_E_UNKNOWN_READER, SCARD_E_SHARING_VIOLATION, SCARD_E_PROTO_MISMATCH.
    public func connect(
        to reader: String, share: ShareMode = .shared, protocols: ProtocolSet = .any
    ) throws(PCSCError) -> CardHandle {
        let (handle, active) = try SCard.connect(
            raw, reader: reader, share: share.rawValue, protocols: protocols.rawValue)
        return CardHandle(context: self, handle: handle, readerName: reader, activeProtocol: active)
    }

    /// Waits until the state of one of the readers differs from its `ReaderState.currentState`,
    /// or the timeout expires.
    ///
    /// The corresponding PC/SC function is SCardGetStatusChange.
    /// - Parameters:
    ///   - states: the readers to watch; on return each `ReaderState.eventState` and ATR are filled.
    ///   - timeout: how long to wait; nil waits without limit (INFINITE). Rounded to milliseconds.
    /// - Returns: false when the timeout expired with no change.
    /// - Throws: `PCSCError` — SCARD_E_CANCELLED after ``cancel()``, SCARD_E_NO_SERVICE when pcscd
    ///   went away, SCARD_E_UNKNOWN_READER for a reader that is not there.
    public func getStatusChange(_ states: inout [ReaderState], timeout: Duration?) throws(PCSCError) -> Bool {
        let milliseconds: UInt
        if let timeout {
            let (seconds, attoseconds) = timeout.components
            let total = max(0, seconds) * 1000 + attoseconds / 1_000_000_000_000_000
            milliseconds = UInt(min(total, Int64(UInt32.max - 1)))
        } else {
            milliseconds = UInt(UInt32.max)  // INFINITE
        }
        return try SCard.getStatusChange(raw, timeoutMilliseconds: milliseconds, states: &states)
    }

    /// Makes a ``getStatusChange(_:timeout:)`` blocked on this context return SCARD_E_CANCELLED.
    /// Safe to call from any thread. It does not cancel transmit or control commands (a reader
    /// escape command cannot be cancelled).
    ///
    /// The corresponding PC/SC function is SCardCancel.
    public func cancel() throws(PCSCError) {
        try SCard.cancel(raw)
    }
}
