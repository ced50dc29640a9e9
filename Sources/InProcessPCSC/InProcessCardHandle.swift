import ISO7816
import PCSCCore
import Synchronization

/// A connection to an in-process reader (``InProcessReaders``): the counterpart of PCSC's
/// `CardHandle`, with pcscd 1.9.9's rules and no pcscd.
///
/// Every call runs the reader's presence poll, then reaches the driver holding the reader's lock,
/// so it blocks the calling thread for as long as the simulated reader takes (seconds for a
/// TgInitAsTarget waiting for a terminal). Call from a thread of your own or a PCSC
/// `BlockingExecutor`, never from Swift's shared concurrency pool. Errors are `PCSCError`s naming
/// the PC/SC function, with the codes pcscd would return (see `ReaderContext` for the rules and
/// their sources). The handle disconnects itself (leaving the card) when it is deinitialized.
public final class InProcessCardHandle: PCSCConnection, Sendable {
    /// The reader's full name, e.g. "ACS ACR122U PICC Interface 00 00".
    public let readerName: String
    let reader: ReaderContext
    let id: UInt
    private let state: Mutex<(activeProtocol: ProtocolSet, connected: Bool)>

    init(reader: ReaderContext, id: UInt, activeProtocol: UInt) {
        self.reader = reader
        self.readerName = reader.name
        self.id = id
        state = Mutex((ProtocolSet(rawValue: activeProtocol), true))
    }

    deinit {
        if state.withLock({ $0.connected }) { reader.disconnect(id, disposition: .leave) }
    }

    /// The protocol in use: `.t0`, `.t1`, `.raw`, or `.undefined` (0) for a DIRECT connection made
    /// while no card protocol was negotiated.
    public var activeProtocol: ProtocolSet { state.withLock { $0.activeProtocol } }

    /// ``activeProtocol`` in the terms of `CardChannel`.
    public var transmissionProtocol: TransmissionProtocol { activeProtocol.transmissionProtocol }

    /// Ends the connection; a second call does nothing.
    ///
    /// The corresponding PC/SC function is SCardDisconnect.
    /// - Parameter disposition: leave (default), reset (IFDHPowerICC IFD_RESET; the other handles
    ///   see SCARD_W_RESET_CARD), unpower (IFDHPowerICC IFD_POWER_DOWN), eject (as leave: pcscd sends
    ///   the eject only to IFD handler v2 drivers).
    public func disconnect(_ disposition: Disposition = .leave) throws(PCSCError) {
        let wasConnected = state.withLock { state in
            defer { state.connected = false }
            return state.connected
        }
        guard wasConnected else { return }
        reader.disconnect(id, disposition: disposition)
    }

    /// Re-establishes the connection: clears a pending SCARD_W_REMOVED_CARD / _RESET_CARD, changes
    /// the share mode, or resets the card.
    ///
    /// The corresponding PC/SC function is SCardReconnect.
    /// - Throws: `PCSCError` — SCARD_E_NO_SMARTCARD without a card (also for DIRECT with leave, as
    ///   pcscd does), SCARD_E_SHARING_VIOLATION (EXCLUSIVE while others are connected),
    ///   SCARD_E_PROTO_MISMATCH, SCARD_W_UNRESPONSIVE_CARD, SCARD_E_INVALID_VALUE for eject.
    public func reconnect(
        share: ShareMode = .shared, protocols: ProtocolSet = .any, initialization: Disposition = .leave
    ) throws(PCSCError) {
        guard state.withLock({ $0.connected }) else { throw PCSCError(code: PCSCError.invalidHandle.code, function: "SCardReconnect") }
        let active = try Self.named("SCardReconnect") { () throws(PCSCError) in
            try reader.reconnect(id, share: share, protocols: protocols, initialization: initialization)
        }
        state.withLock { $0.activeProtocol = ProtocolSet(rawValue: active) }
    }

    /// The reader's name, the card state, the card's protocol and its ATR.
    ///
    /// The corresponding PC/SC function is SCardStatus. `state` carries pcsc-lite's event counter in
    /// its high 16 bits (insertions and removals seen on this reader), the SCARD_ABSENT …
    /// SCARD_NEGOTIABLE flags in the low 16.
    /// - Throws: `PCSCError` — SCARD_W_REMOVED_CARD after the card left, SCARD_W_RESET_CARD after
    ///   another handle reset it.
    public func status() throws(PCSCError) -> InProcessCardStatus {
        try checkConnected("SCardStatus")
        let raw = try Self.named("SCardStatus") { () throws(PCSCError) in try reader.status(id) }
        return InProcessCardStatus(readerName: readerName, state: CardState(rawValue: raw.state),
                                   activeProtocol: ProtocolSet(rawValue: raw.cardProtocol), atr: raw.atr)
    }

    /// A reader attribute's raw bytes (IFDHGetCapabilities).
    ///
    /// The corresponding PC/SC function is SCardGetAttrib.
    /// - Throws: `PCSCError` — SCARD_E_UNSUPPORTED_FEATURE when the driver does not know it,
    ///   SCARD_W_REMOVED_CARD after the card left.
    public func attribute(_ attribute: PCSCAttribute) throws(PCSCError) -> [UInt8] {
        try checkConnected("SCardGetAttrib")
        return try Self.named("SCardGetAttrib") { () throws(PCSCError) in try reader.attribute(id, tag: attribute.rawValue) }
    }

    /// Sends a command APDU (or a reader pseudo-APDU) with the handle's active protocol as the PCI
    /// and returns the whole answer, SW1-SW2 included, unchanged.
    ///
    /// The corresponding PC/SC function is SCardTransmit.
    /// - Parameter command: 1 to 65 544 bytes.
    /// - Throws: `PCSCError` — SCARD_W_REMOVED_CARD once the card left, SCARD_E_NO_SMARTCARD with no
    ///   card, SCARD_E_PROTO_MISMATCH when the PCI protocol is not the card's (a DIRECT handle after
    ///   another connection negotiated T=1), SCARD_E_NOT_TRANSACTED when the driver fails,
    ///   SCARD_E_INVALID_PARAMETER for an empty or oversized command (checked before anything).
    public func transmit(_ command: [UInt8]) throws(PCSCError) -> [UInt8] {
        guard !command.isEmpty, command.count <= DriverCalls.receiveBufferSize - 4 else {
            throw PCSCError(code: PCSCError.invalidParameter.code, function: "SCardTransmit")
        }
        try checkConnected("SCardTransmit")
        let protocolValue = activeProtocol.rawValue
        return try Self.named("SCardTransmit") { () throws(PCSCError) in
            try reader.transmit(id, pciProtocol: protocolValue, command)
        }
    }

    /// Sends a control command to the reader (IFDHControl) and returns its answer. Works on every
    /// share mode, with or without a card.
    ///
    /// The corresponding PC/SC function is SCardControl.
    /// - Parameters:
    ///   - code: e.g. 0x42000001 (SCARD_CTL_CODE(1), the CCID escape), 0x42000D48
    ///     (CM_IOCTL_GET_FEATURE_REQUEST).
    ///   - command: at most 65 548 bytes, possibly empty.
    /// - Throws: `PCSCError` — SCARD_E_UNSUPPORTED_FEATURE (0x8010001F) for a code the driver does
    ///   not know, SCARD_E_NOT_TRANSACTED (0x80100016) when it refuses or times out.
    public func control(code: UInt32, _ command: [UInt8]) throws(PCSCError) -> [UInt8] {
        guard command.count <= DriverCalls.receiveBufferSize else {
            throw PCSCError(code: PCSCError.invalidParameter.code, function: "SCardControl")
        }
        try checkConnected("SCardControl")
        return try Self.named("SCardControl") { () throws(PCSCError) in try reader.control(id, code: code, command) }
    }

    /// The reader's PC/SC part 10 features from CM_IOCTL_GET_FEATURE_REQUEST (0x42000D48); a
    /// driver that answers SCARD_E_UNSUPPORTED_FEATURE has none.
    /// - Throws: `PCSCError` for other failures; `FeatureListError` for a malformed answer.
    public func features() throws -> [PCSCFeature] {
        let answer: [UInt8]
        do {
            answer = try control(code: PCSCConstants.getFeatureRequest, [])
        } catch let error where error == .unsupportedFeature {
            return []
        }
        return try PCSCFeatureList(parsing: answer).features
    }

    /// Takes the reader's lock for this handle (transactions nest).
    ///
    /// The corresponding PC/SC function is SCardBeginTransaction. While another handle holds the
    /// lock, pcsc-lite's client library retries every PCSCLITE_LOCK_POLL_RATE (100 ms) with no end
    /// (docs/test-infrastructure.md, "What the in-process client copies from pcsc-lite's client library");
    /// this one retries the same way for at most `InProcessReaders.transactionWaitLimit` and then throws
    /// SCARD_E_TIMEOUT (0x8010000A), so a transaction left open never hangs the caller.
    /// - Throws: `PCSCError` — SCARD_W_REMOVED_CARD / SCARD_W_RESET_CARD, SCARD_E_TIMEOUT.
    public func beginTransaction() throws(PCSCError) {
        try reader.participating { () throws(PCSCError) in try beginTransactionParticipating() }
    }

    private func beginTransactionParticipating() throws(PCSCError) {
        try checkConnected("SCardBeginTransaction")
        let clock = reader.clock
        let deadline = clock.now + reader.transactionWaitLimit
        while true {
            do {
                return try Self.named("SCardBeginTransaction") { () throws(PCSCError) in try reader.beginTransaction(id) }
            } catch where error == .sharingViolation {
                guard clock.now < deadline else {
                    throw PCSCError(code: PCSCError.timeout.code, function: "SCardBeginTransaction")
                }
                clock.sleep(.milliseconds(100))
                try checkConnected("SCardBeginTransaction")
            }
        }
    }


    /// Ends the transaction; RESET or UNPOWER act on the card first (the other handles then see
    /// SCARD_W_RESET_CARD).
    ///
    /// The corresponding PC/SC function is SCardEndTransaction.
    /// - Throws: `PCSCError` — SCARD_E_NOT_TRANSACTED without a transaction of this handle.
    public func endTransaction(_ disposition: Disposition = .leave) throws(PCSCError) {
        try checkConnected("SCardEndTransaction")
        try Self.named("SCardEndTransaction") { () throws(PCSCError) in try reader.endTransaction(id, disposition: disposition) }
    }

    private func checkConnected(_ function: String) throws(PCSCError) {
        guard state.withLock({ $0.connected }) else { throw PCSCError(code: PCSCError.invalidHandle.code, function: function) }
    }

    /// Runs `body` and names `function` in its error.
    static func named<T>(_ function: String, _ body: () throws(PCSCError) -> T) throws(PCSCError) -> T {
        do {
            return try body()
        } catch {
            throw PCSCError(code: error.code, function: function)
        }
    }
}

/// What SCardStatus reports about an in-process connection: the same value as pcsc-lite's.
public typealias InProcessCardStatus = CardStatus
