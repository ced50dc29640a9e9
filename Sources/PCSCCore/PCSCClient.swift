/// A PC/SC client: the way to a resource manager's readers.
///
/// Two implementations share these protocols: the pcsc-lite client (`PCSCLiteClient` in the PCSC
/// module: a real pcscd, the system's or the one `PCSCLITE_CSOCK_NAME` names) and the in-process
/// client (`InProcessPCSCClient` in InProcessPCSC: simulated ACR122U readers driven through their
/// pcscd driver's entry points with pcscd 1.9.9's rules, no pcscd). Code written against
/// ``PCSCClient`` runs unchanged on both, so a command-line tool or a library is tested in process
/// and used against real readers.
///
/// Every call blocks the calling thread (an IPC round trip, a card exchange, or for
/// ``PCSCClientContext/getStatusChange(_:timeout:)`` as long as the timeout): never call it on
/// Swift's shared concurrency pool; use a ``BlockingExecutor``.
public protocol PCSCClient: Sendable {
    /// Establishes a context.
    ///
    /// The corresponding PC/SC function is SCardEstablishContext.
    /// - Throws: ``PCSCError`` — SCARD_E_NO_SERVICE (0x8010001D) when no resource manager answers.
    func establishContext() throws(PCSCError) -> any PCSCClientContext
    /// What makes this client's reader names unique in the process: empty for pcsc-lite (one
    /// resource manager per process, whose names are unique), an identity per set of in-process
    /// readers (two desks both have an `ACS ACR122U PICC Interface 00 00`). Rules that hold
    /// per reader, such as one credential session per reader, key on `readerScope` + name.
    var readerScope: String { get }
    /// The resource manager's socket, through which other processes reach the same readers:
    /// `PCSCLITE_CSOCK_NAME`, or pcsc-lite's `/run/pcscd/pcscd.comm`, for pcsc-lite; nil (the
    /// default) for readers only this process sees. Rules that hold across processes (one card
    /// emulation per reader) key on it.
    var sharedSocketPath: String? { get }
    /// The virtual time the readers run on (in-process readers on a desk on virtual time), nil
    /// (the default) on real time: code that waits on its own timers (a card-emulation window)
    /// measures them on it, so that they end at the same virtual instants as the readers' waits.
    var virtualTime: VirtualTime? { get }
}

extension PCSCClient {
    public var readerScope: String { "" }
    public var sharedSocketPath: String? { nil }
    public var virtualTime: VirtualTime? { nil }
}

/// A connection to a resource manager (an SCARDCONTEXT): lists readers, waits for changes, connects.
///
/// One context per thread that blocks in it; ``cancel()`` may be called from any thread.
public protocol PCSCClientContext: AnyObject, Sendable {
    /// The connection type this client hands out.
    associatedtype Connection: PCSCConnection

    /// The readers' names, in the resource manager's order.
    ///
    /// The corresponding PC/SC function is SCardListReaders.
    /// - Throws: ``PCSCError`` — SCARD_E_NO_READERS_AVAILABLE is never thrown: no readers is `[]`.
    func listReaders() throws(PCSCError) -> [String]

    /// Waits until a reader's state differs from its ``ReaderState/currentState``, or `timeout`
    /// passes (`nil`: no limit; `.zero`: report at once).
    ///
    /// The corresponding PC/SC function is SCardGetStatusChange.
    /// - Returns: false when the timeout passed with no change.
    /// - Throws: ``PCSCError`` — SCARD_E_CANCELLED after ``cancel()``, SCARD_E_UNKNOWN_READER.
    func getStatusChange(_ states: inout [ReaderState], timeout: Duration?) throws(PCSCError) -> Bool

    /// Connects to the card in `reader`, or with `.direct` to the reader itself.
    ///
    /// The corresponding PC/SC function is SCardConnect.
    /// - Throws: ``PCSCError`` — SCARD_E_NO_SMARTCARD (no card, except direct), SCARD_E_UNKNOWN_READER,
    ///   SCARD_E_SHARING_VIOLATION, SCARD_E_PROTO_MISMATCH.
    func connect(to reader: String, share: ShareMode, protocols: ProtocolSet) throws(PCSCError) -> Connection

    /// Makes a blocked ``getStatusChange(_:timeout:)`` return SCARD_E_CANCELLED.
    ///
    /// The corresponding PC/SC function is SCardCancel.
    func cancel() throws(PCSCError)

    /// Releases the context; its connections become invalid.
    ///
    /// The corresponding PC/SC function is SCardReleaseContext.
    func release() throws(PCSCError)
}

/// One connection (an SCARDHANDLE): a ``CardChannel`` to the card or the reader, with the rest of
/// what a PC/SC handle offers.
public protocol PCSCConnection: CardChannel, Sendable {
    /// The reader this connection is on.
    var readerName: String { get }
    /// The protocol negotiated for this connection (`.undefined` for a direct one without a card).
    var activeProtocol: ProtocolSet { get }

    /// The reader, the card state, the protocol and the ATR.
    ///
    /// The corresponding PC/SC function is SCardStatus.
    /// - Throws: ``PCSCError`` — SCARD_W_REMOVED_CARD after the card left.
    func status() throws(PCSCError) -> CardStatus

    /// A reader attribute's raw bytes.
    ///
    /// The corresponding PC/SC function is SCardGetAttrib.
    /// - Throws: ``PCSCError`` — SCARD_E_UNSUPPORTED_FEATURE when the driver does not know it.
    func attribute(_ attribute: PCSCAttribute) throws(PCSCError) -> [UInt8]

    /// Re-establishes the connection, e.g. after SCARD_W_RESET_CARD, or resets the card.
    ///
    /// The corresponding PC/SC function is SCardReconnect.
    func reconnect(share: ShareMode, protocols: ProtocolSet, initialization: Disposition) throws(PCSCError)

    /// Ends the connection; later calls fail with SCARD_E_INVALID_HANDLE. Idempotent.
    ///
    /// The corresponding PC/SC function is SCardDisconnect.
    func disconnect(_ disposition: Disposition) throws(PCSCError)

    /// Takes the card for this connection alone until ``endTransaction(_:)``.
    ///
    /// The corresponding PC/SC function is SCardBeginTransaction.
    func beginTransaction() throws(PCSCError)

    /// Ends the transaction that ``beginTransaction()`` began.
    ///
    /// The corresponding PC/SC function is SCardEndTransaction.
    func endTransaction(_ disposition: Disposition) throws(PCSCError)

    /// The reader's PC/SC part 10 features (CM_IOCTL_GET_FEATURE_REQUEST); none when the driver
    /// answers SCARD_E_UNSUPPORTED_FEATURE.
    /// - Throws: ``PCSCError``; ``FeatureListError`` for a malformed answer.
    func features() throws -> [PCSCFeature]
}

extension PCSCConnection {
    /// Whether the reader says the connected card has left: SCardStatus shows no card, or answers
    /// SCARD_W_REMOVED_CARD (the card was taken away or swapped since the connection) or
    /// SCARD_E_NO_SMARTCARD. Any other error counts as "not known to have left".
    /// The corresponding PC/SC function is SCardStatus.
    public func cardHasLeft() -> Bool {
        do {
            return !(try status().state.contains(.present))
        } catch {
            return error == .removedCard || error == .noSmartcard
        }
    }

    /// Ends the transaction and leaves the card as it is (SCARD_LEAVE_CARD).
    public func endTransaction() throws(PCSCError) { try endTransaction(.leave) }

    /// Ends the connection and leaves the card as it is (SCARD_LEAVE_CARD).
    public func disconnect() throws(PCSCError) { try disconnect(.leave) }

    /// SCARD_ATTR_VENDOR_NAME as text (trailing NULs removed).
    public func vendorName() throws(PCSCError) -> String {
        let bytes = try attribute(.vendorName)
        return String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
    }

    /// SCARD_ATTR_MAXINPUT: the largest command the reader accepts, in bytes (a little-endian
    /// DWORD; libccid: the CCID descriptor's dwMaxCCIDMessageLength − 10).
    public func maxInput() throws(PCSCError) -> Int {
        let bytes = try attribute(.maxInput)
        var value = 0
        for (index, byte) in bytes.prefix(4).enumerated() { value |= Int(byte) << (8 * index) }
        return value
    }

    /// Runs `body` inside a transaction and ends it, with `disposition`, whatever `body` does.
    public func withTransaction<T>(disposition: Disposition = .leave, _ body: () throws -> T) throws -> T {
        try beginTransaction()
        do {
            let result = try body()
            try endTransaction(disposition)
            return result
        } catch {
            try? endTransaction(disposition)
            throw error
        }
    }
}

/// What SCardStatus reports about a connection.
public struct CardStatus: Sendable, Hashable {
    /// The reader's name, as SCardListReaders gives it.
    public var readerName: String
    /// The card state as pcsc-lite reports it: the event counter in the high 16 bits (insertions
    /// and removals seen), the SCARD_ABSENT … SCARD_SPECIFIC flags in the low 16.
    public var state: CardState
    /// The protocol in use.
    public var activeProtocol: ProtocolSet
    /// The card's ATR, empty without a card.
    public var atr: [UInt8]

    /// A status as a client reports it.
    public init(readerName: String, state: CardState, activeProtocol: ProtocolSet, atr: [UInt8]) {
        self.readerName = readerName
        self.state = state
        self.activeProtocol = activeProtocol
        self.atr = atr
    }

    /// ``state`` without the event counter: the SCARD_ABSENT … SCARD_SPECIFIC flags alone.
    public var flags: CardState { CardState(rawValue: state.rawValue & 0xFFFF) }
}
