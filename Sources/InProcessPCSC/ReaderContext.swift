import CPCSCLite
import PCSCCore
import Synchronization

/// pcscd's power state of a reader's card (pcsc-lite `src/readerfactory.h`, POWER_STATE_*).
enum PowerState: Sendable, Hashable {
    case unpowered
    /// Powered but not used by a connection.
    case powered
    /// A SHARED or EXCLUSIVE connection powered it.
    case inUse
    /// The last connection ended; pcscd powers the card down after a grace period (not done here).
    case gracePeriod
}

/// What the presence poll last saw (the event handler's `dwCurrentState`).
enum PolledState: Sendable, Hashable {
    case unknown, present, absent
}

/// A per-handle event (RDR_CLIHANDLES.dwEventStatus): set by a removal or a reset, reported by the
/// next SCardTransmit / SCardStatus / SCardGetAttrib of that handle, cleared by SCardReconnect.
enum HandleEvent: Sendable, Hashable {
    case none, removed, reset
}

/// The reader state pcscd keeps in its READER_CONTEXT and `readerState` (pcsc-lite
/// `src/readerfactory.h`, `src/eventhandler.h`).
struct ReaderRecord: Sendable {
    /// SCARD_ABSENT … SCARD_NEGOTIABLE flags (CardState bits).
    var flags: CardState = .unknown
    var atr: [UInt8] = []
    /// The negotiated protocol (SCARD_PROTOCOL_* value), 0 while not negotiated.
    var cardProtocol: UInt = 0
    var power: PowerState = .unpowered
    var polled: PolledState = .unknown
    /// Counts insertions and removals (the high 16 bits of SCardStatus's state).
    var eventCounter: UInt = 0
    /// `contexts`: the number of SHARED/DIRECT connections, or ``exclusive``.
    var sharing = 0
    /// `hLockId`: the handle holding the reader (an EXCLUSIVE connection), if any.
    var lockHolder: UInt?
    /// `LockCount`: how many SCardBeginTransaction calls of ``lockHolder`` are not ended yet.
    var lockCount = 0
    var handles: [UInt: HandleEvent] = [:]
    var closed = false

    /// PCSCLITE_SHARING_EXCLUSIVE_CONTEXT.
    static let exclusive = -1
}

/// One in-process reader, keeping pcscd 1.9.9's rules around the driver's entry points.
///
/// Sources (pcsc-lite 1.9.9, the version Debian 12 ships): `src/winscard.c` (SCardConnect,
/// SCardReconnect, SCardDisconnect, SCardStatus, SCardControl, SCardGetAttrib, SCardTransmit),
/// `src/ifdwrapper.c` (how each IFD_* result becomes an SCARD code), `src/eventhandler.c` (presence
/// polling, power-up at insertion), `src/readerfactory.c` (per-reader lock, handle events, sharing
/// lock), `src/prothandler.c` and `src/atrhandler.c` (protocol selection).
///
/// Locks: ``driverLock`` is pcscd's `mMutex` (the driver reports TAG_IFD_THREAD_SAFE = 1, so pcscd
/// gives each reader its own): every driver call holds it, so one call at a time reaches a reader;
/// other readers are not held up. ``record`` guards the state for short moments and is never held
/// while waiting for ``driverLock`` (order: poll → driver → record).
final class ReaderContext: Sendable {
    let name: String
    let lun: UInt
    let index: Int
    let deviceName: String
    /// How long SCardBeginTransaction waits for another handle's transaction.
    let transactionWaitLimit: Duration
    private let driverLock = Mutex(())
    /// pcscd's single event-handler thread per reader: one presence poll at a time.
    private let pollLock = Mutex(())
    /// Calls holding or waiting for the driver lock, guarded by `pendingChange`'s lock, which is
    /// broadcast at every change (``waitForPendingDriverCalls(_:within:)``).
    private nonisolated(unsafe) var pending = 0
    private let pendingChange = ConditionLock()
    let record = Mutex(ReaderRecord())
    private let nextHandle = Atomic<UInt>(1)

    /// The readers' virtual time (``InProcessReaders/virtualTime``), or nil.
    let virtualTime: VirtualTime?
    var clock: ThreadClock { ThreadClock(virtualTime) }

    init(name: String, lun: UInt, index: Int, deviceName: String, transactionWaitLimit: Duration, virtualTime: VirtualTime? = nil) {
        self.transactionWaitLimit = transactionWaitLimit
        self.virtualTime = virtualTime
        self.name = name
        self.lun = lun
        self.index = index
        self.deviceName = deviceName
    }

    /// Calls currently holding or waiting for the reader's lock.
    var pendingDriverCalls: Int {
        pendingChange.lock()
        defer { pendingChange.unlock() }
        return pending
    }

    /// Blocks the calling thread (never Swift's shared pool) until `count` calls hold or wait for
    /// the driver lock, or `timeout` of real time passed; whether the count was reached.
    func waitForPendingDriverCalls(_ count: Int, within timeout: Duration) -> Bool {
        let deadline = ContinuousClock.now + timeout
        pendingChange.lock()
        defer { pendingChange.unlock() }
        while pending != count {
            let left = deadline - ContinuousClock.now
            if left <= .zero { return false }
            _ = pendingChange.wait(timeout: left)
        }
        return true
    }

    private func changePending(by delta: Int) {
        pendingChange.lock()
        pending += delta
        pendingChange.broadcast()
        pendingChange.unlock()
    }

    /// Runs `body` (driver calls) holding the reader's lock. On virtual time the calling thread is
    /// a participant while it holds the lock (`VirtualTime.participate`): time moves on its own
    /// only while the device waits on it. A thread waiting for the lock is not one
    /// (`VirtualTime.outside`), so a command that waits in the device (TgInitAsTarget) does not
    /// keep time still for the calls queued behind it. A lock that is free is taken without
    /// leaving the participants: that instant would let time jump while the thread still runs
    /// (an emulation's hold is handed to this thread for the length of its call).
    func withDriver<T: Sendable>(_ body: () -> T) -> T {
        changePending(by: 1)
        defer { changePending(by: -1) }
        guard let virtualTime else { return driverLock.withLock { _ in body() } }
        if let result = driverLock.withLockIfAvailable({ _ in virtualTime.participate(body) }) { return result }
        return virtualTime.outside {
            driverLock.withLock { _ in virtualTime.participate(body) }
        }
    }

    /// Runs `body` (a PC/SC call) with the calling thread a participant of the virtual time, if any.
    func participating<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        guard let virtualTime else { return try body() }
        return try virtualTime.participate(body)
    }

    // MARK: IFD wrappers (ifdwrapper.c); call with the reader's lock held

    /// IFDStatusICC: true present, false absent; a driver failure is SCARD_E_NOT_TRANSACTED
    /// (IFD_NO_SUCH_DEVICE: SCARD_E_READER_UNAVAILABLE).
    private func statusICC() throws(PCSCError) -> Bool {
        try IFDResultMapping.presence(DriverCalls.presence(lun: lun)).get()
    }

    /// IFDPowerICC: asks for presence first (absent: SCARD_W_REMOVED_CARD, the driver is not
    /// called), then any driver failure is SCARD_E_NOT_TRANSACTED.
    private func powerICC(_ action: Int32) throws(PCSCError) -> [UInt8] {
        guard try statusICC() else { throw .removedCard }
        let (result, atr) = DriverCalls.power(lun: lun, action: action)
        if let error = IFDResultMapping.power(result) { throw error }
        return atr
    }

    // MARK: The event handler (eventhandler.c), one pass

    /// One pass of pcscd's presence poll: a card that left marks every handle removed; a card
    /// that arrived is powered up for its ATR (pcscd powers up at insertion).
    ///
    /// pcscd's thread polls every 400 ms; here the pass runs at the start of each call, which is
    /// what pcscd shows once its poll has caught up. When the reader's lock is busy (a call blocks
    /// in the driver), the pass is skipped: pcscd's thread would be waiting for that lock too.
    /// pcscd also powers an unused card down 0.4 to 5 s after insertion or after its last
    /// connection (POWER_STATE_POWERED / _GRACE_PERIOD); having no timer, this layer leaves it
    /// powered until a disposition, a reset or a removal says otherwise.
    /// - Parameter initial: the first pass, when the channel opens (pcscd's EHSpawnEventHandler
    ///   start): it sets the state without counting an event or marking handles.
    func poll(initial: Bool = false) {
        pollLock.withLock { _ in
            let busy: Bool? = driverLock.withLockIfAvailable { _ -> Bool in
                let present: Bool
                do {
                    present = try statusICC()
                } catch {
                    record.withLock { record in
                        record.flags = .unknown
                        record.atr = []
                        record.cardProtocol = 0
                        record.polled = .unknown
                    }
                    return false
                }
                let previous = initial ? .unknown : record.withLock { $0.polled }
                let counted: UInt = initial ? 0 : 1
                if !present {
                    guard previous != .absent else { return false }
                    record.withLock { record in
                        for id in record.handles.keys { record.handles[id] = .removed }
                        record.lockHolder = nil
                        record.atr = []
                        record.cardProtocol = 0
                        record.flags = .absent
                        record.polled = .absent
                        record.eventCounter = (record.eventCounter + counted) & 0xFFFF
                    }
                } else if previous != .present {
                    let atr = try? powerICC(Int32(IFD_POWER_UP))
                    record.withLock { record in
                        record.cardProtocol = 0
                        if let atr {
                            record.atr = atr
                            record.flags = [.present, .powered, .negotiable]
                            record.power = .powered
                        } else {
                            record.atr = []
                            record.flags = [.present, .swallowed]
                            record.power = .unpowered
                        }
                        record.polled = .present
                        record.eventCounter = (record.eventCounter + counted) & 0xFFFF
                    }
                }
                return false
            }
            _ = busy
        }
    }

    // MARK: Handles

    /// Checks that `id` is a live handle of an open reader.
    /// - Throws: SCARD_E_READER_UNAVAILABLE after the channel was closed, SCARD_E_INVALID_HANDLE
    ///   for a handle that was disconnected.
    func checkHandle(_ id: UInt, in record: ReaderRecord) throws(PCSCError) {
        if record.closed { throw .readerUnavailable }
        guard record.handles[id] != nil else { throw .invalidHandle }
    }

    /// RFCheckSharing: another handle holds the reader (an EXCLUSIVE connection).
    func checkSharing(_ id: UInt, in record: ReaderRecord) throws(PCSCError) {
        if let holder = record.lockHolder, holder != id { throw .sharingViolation }
    }

    /// RFCheckReaderEventState: a removal or reset since the handle's last (re)connect.
    func checkEvent(_ id: UInt, in record: ReaderRecord) throws(PCSCError) {
        switch record.handles[id] ?? .none {
        case .none: return
        case .removed: throw .removedCard
        case .reset: throw .resetCard
        }
    }

    // MARK: SCardConnect

    /// SCardConnect (winscard.c), after the client's own checks.
    ///
    /// While another handle holds a transaction, pcscd 1.9.9 lets SCardConnect (any share mode)
    /// wait until the transaction ends, checking every PCSCLITE_LOCK_POLL_RATE (100 ms) with no end
    /// (winscard.c, "wait until a possible transaction is finished"); this one waits the same way
    /// for at most ``transactionWaitLimit`` and then throws SCARD_E_TIMEOUT, as
    /// `InProcessCardHandle.beginTransaction()` does, so a transaction left open never hangs the caller.
    /// - Returns: the new handle's id and the active protocol (the reader's card protocol, which is
    ///   0 for a DIRECT connection unless a card's protocol was already negotiated).
    func connect(share: ShareMode, protocols: ProtocolSet) throws(PCSCError) -> (id: UInt, active: UInt) {
        try participating { () throws(PCSCError) in try connectParticipating(share: share, protocols: protocols) }
    }

    private func connectParticipating(share: ShareMode, protocols: ProtocolSet) throws(PCSCError) -> (id: UInt, active: UInt) {
        if share != .direct && protocols.intersection(Self.anyUsable).isEmpty { throw .protoMismatch }
        poll()
        let clock = self.clock
        let deadline = clock.now + transactionWaitLimit
        while try record.withLock({ record throws(PCSCError) -> Bool in
            if record.closed { throw .readerUnavailable }
            if record.sharing == ReaderRecord.exclusive { throw .sharingViolation }
            return record.lockHolder != nil  // another handle's transaction
        }) {
            guard clock.now < deadline else { throw .timeout }
            clock.sleep(.milliseconds(100))
        }
        if share != .direct {
            try withDriver { () -> Result<Void, PCSCError> in
                Result { () throws(PCSCError) in
                    try powerUpForUse()
                    try selectProtocol(protocols)
                }
            }.get()
        } else if protocols.contains(.raw) {
            record.withLock { $0.cardProtocol = ProtocolSet.raw.rawValue }
        }
        let id = nextHandle.add(1, ordering: .relaxed).oldValue
        return try record.withLock { record throws(PCSCError) -> (UInt, UInt) in
            if share == .exclusive {
                guard record.sharing == 0 else { throw .sharingViolation }
                record.sharing = ReaderRecord.exclusive
                record.lockHolder = id
            } else {
                record.sharing += 1
            }
            record.handles[id] = HandleEvent.none
            return (id, record.cardProtocol)
        }
    }

    /// SCardConnect's card section: no card → SCARD_E_NO_SMARTCARD; an unpowered card is powered
    /// up; still not powered → SCARD_W_UNPOWERED_CARD; then the card is in use. Reader lock held.
    private func powerUpForUse() throws(PCSCError) {
        let (flags, power) = record.withLock { ($0.flags, $0.power) }
        guard flags.contains(.present) else { throw .noSmartcard }
        if power == .unpowered {
            let atr = try? powerICC(Int32(IFD_POWER_UP))
            record.withLock { record in
                record.atr = atr ?? []
                if atr != nil { record.flags = [.present, .powered, .negotiable] }
            }
        }
        try record.withLock { record throws(PCSCError) in
            guard record.flags.contains(.powered) else { throw .unpoweredCard }
            record.power = .inUse
        }
    }

    /// The protocol section of SCardConnect / SCardReconnect for a SHARED or EXCLUSIVE
    /// connection: RAW asked → RAW; not yet negotiated → ATR decoding and PHSetProtocol (one
    /// IFDHSetProtocolParameters call); already negotiated → it must be among `protocols`.
    /// Reader lock held.
    private func selectProtocol(_ protocols: ProtocolSet) throws(PCSCError) {
        if protocols.contains(.raw) {
            record.withLock { $0.cardProtocol = ProtocolSet.raw.rawValue }
            return
        }
        let (current, atr) = record.withLock { ($0.cardProtocol, $0.atr) }
        guard current == 0 else {
            guard protocols.rawValue & current != 0 else { throw .protoMismatch }
            return
        }
        var preferred = protocols
        if preferred.rawValue & Self.anyOld != 0 { preferred = .any }
        let announced = ATRProtocols(atr: atr)
        guard !preferred.isEmpty, let candidate = ProtocolChoice.candidate(preferred: preferred, announced: announced) else {
            throw .protoMismatch
        }
        let result = DriverCalls.setProtocol(lun: lun, candidate.rawValue)
        switch ProtocolChoice.decide(preferred: preferred, announced: announced, candidate: candidate, driverResult: result) {
        case .use(let chosen): record.withLock { $0.cardProtocol = chosen.rawValue }
        case .wrongArgument: throw .protoMismatch
        case .ppsFailed: throw .unresponsiveCard
        }
    }

    // MARK: SCardReconnect

    /// SCardReconnect (winscard.c): RESET / UNPOWER act on the card and mark every handle reset;
    /// LEAVE needs a card; then protocol and sharing as for a connection, and the handle's own
    /// event is cleared.
    func reconnect(_ id: UInt, share: ShareMode, protocols: ProtocolSet, initialization: Disposition) throws(PCSCError) -> UInt {
        guard initialization != .eject else { throw .invalidValue }
        if share != .direct && protocols.intersection(Self.anyUsable).isEmpty { throw .protoMismatch }
        poll()
        try record.withLock { record throws(PCSCError) in
            try checkHandle(id, in: record)
            try checkSharing(id, in: record)
        }
        try withDriver { () -> Result<Void, PCSCError> in
            Result { () throws(PCSCError) in
                switch initialization {
                case .reset, .unpower:
                    record.withLock { record in
                        for handle in record.handles.keys { record.handles[handle] = .reset }
                    }
                    let atr: Result<[UInt8], PCSCError>
                    if initialization == .reset {
                        atr = Result { () throws(PCSCError) in try powerICC(Int32(IFD_RESET)) }
                    } else {
                        _ = try? powerICC(Int32(IFD_POWER_DOWN))
                        atr = Result { () throws(PCSCError) in try powerICC(Int32(IFD_POWER_UP)) }
                    }
                    try record.withLock { record throws(PCSCError) in
                        record.cardProtocol = 0
                        switch atr {
                        case .success(let bytes):
                            record.atr = bytes
                            record.flags = [.present, .powered, .negotiable]
                        case .failure(let error):
                            record.atr = []
                            if error == .removedCard {
                                record.flags = .absent
                                throw .noSmartcard
                            }
                            record.flags = [.present, .swallowed]
                            throw .unresponsiveCard
                        }
                    }
                default:
                    try record.withLock { record throws(PCSCError) in
                        if record.flags.contains(.absent) { throw .noSmartcard }
                        if record.flags.isSuperset(of: [.present, .swallowed]) { throw .unresponsiveCard }
                    }
                }
                if share != .direct {
                    try selectProtocol(protocols)
                } else if protocols.contains(.raw) {
                    record.withLock { $0.cardProtocol = ProtocolSet.raw.rawValue }
                }
            }
        }.get()
        return try record.withLock { record throws(PCSCError) -> UInt in
            switch share {
            case .exclusive:
                if record.sharing != ReaderRecord.exclusive {
                    guard record.sharing == 1 else { throw .sharingViolation }
                    record.sharing = ReaderRecord.exclusive
                    record.lockHolder = id
                }
            case .shared, .direct:
                if record.sharing == ReaderRecord.exclusive {
                    record.lockHolder = nil
                    record.sharing = 1
                }
            }
            record.handles[id] = HandleEvent.none
            return record.cardProtocol
        }
    }

    // MARK: SCardDisconnect

    /// SCardDisconnect (winscard.c): RESET / UNPOWER act on the card and mark the other handles
    /// reset; EJECT does nothing on an IFD handler v3 driver (pcscd sends the eject through the v2
    /// control call only); the handle goes, the sharing count drops, and when it was the last
    /// connection a card in use enters the grace period.
    func disconnect(_ id: UInt, disposition: Disposition) {
        let live = record.withLock { record -> Bool in
            !record.closed && record.handles[id] != nil
        }
        guard live else {
            record.withLock { _ = $0.handles.removeValue(forKey: id) }
            return
        }
        applyDisposition(disposition)
        record.withLock { record in
            record.handles[id] = nil
            if record.lockHolder == id {
                record.lockHolder = nil
                record.lockCount = 0
            }
            if record.sharing == ReaderRecord.exclusive {
                record.sharing = 0
            } else {
                record.sharing = max(0, record.sharing - 1)
            }
            if record.sharing == 0 && (record.power == .powered || record.power == .inUse) {
                record.power = .gracePeriod
            }
        }
    }

    // MARK: SCardStatus

    /// What SCardDisconnect and SCardEndTransaction do to the card for `disposition` (winscard.c):
    /// RESET warm-resets it and UNPOWER powers it down, both marking every handle reset; LEAVE
    /// and EJECT do nothing.
    private func applyDisposition(_ disposition: Disposition) {
        guard disposition == .reset || disposition == .unpower else { return }
            withDriver {
                record.withLock { record in
                    for handle in record.handles.keys { record.handles[handle] = .reset }
                }
                let atr: Result<[UInt8], PCSCError>
                if disposition == .reset {
                    atr = Result { () throws(PCSCError) in try powerICC(Int32(IFD_RESET)) }
                } else {
                    atr = Result { () throws(PCSCError) in try powerICC(Int32(IFD_POWER_DOWN)) }
                    record.withLock { $0.power = .unpowered }
                }
                record.withLock { record in
                    record.cardProtocol = 0
                    switch atr {
                    case .success(let bytes):
                        if disposition == .unpower {
                            record.flags = .present
                        } else {
                            record.atr = bytes
                            record.flags = [.present, .powered, .negotiable]
                        }
                    case .failure(let error):
                        if disposition == .reset { record.atr = [] }
                        record.flags = error == .removedCard ? .absent : [.present, .swallowed]
                    }
                }
            }
    }

    // MARK: SCardBeginTransaction / SCardEndTransaction

    /// SCardBeginTransaction (winscard.c, readerfactory.c RFLockSharing): the reader's lock goes to
    /// this handle (again: transactions nest). Held by another handle: SCARD_E_SHARING_VIOLATION,
    /// which pcsc-lite's client library retries (see ``InProcessCardHandle/beginTransaction()``).
    func beginTransaction(_ id: UInt) throws(PCSCError) {
        try record.withLock { record throws(PCSCError) in
            try checkHandle(id, in: record)
            try checkEvent(id, in: record)
            if let holder = record.lockHolder, holder != id { throw .sharingViolation }
            record.lockHolder = id
            record.lockCount += 1
        }
    }

    /// SCardEndTransaction (winscard.c): acts on the card for `disposition` (the other handles see
    /// SCARD_W_RESET_CARD after RESET or UNPOWER), then releases one level of the lock; an
    /// EXCLUSIVE connection keeps the reader.
    func endTransaction(_ id: UInt, disposition: Disposition) throws(PCSCError) {
        try record.withLock { record throws(PCSCError) in
            try checkHandle(id, in: record)
            try checkEvent(id, in: record)
            guard record.lockHolder == id, record.lockCount > 0 else { throw .notTransacted }
        }
        applyDisposition(disposition)
        record.withLock { record in
            if record.handles[id] != nil { record.handles[id] = HandleEvent.none }
            record.lockCount = max(0, record.lockCount - 1)
            if record.lockCount == 0 && record.sharing != ReaderRecord.exclusive { record.lockHolder = nil }
        }
    }

    /// SCardStatus: the reader's name, state (event counter << 16 | flags, as pcsc-lite's client
    /// reports it), the card protocol and the ATR.
    func status(_ id: UInt) throws(PCSCError) -> (state: UInt, cardProtocol: UInt, atr: [UInt8]) {
        poll()
        return try record.withLock { record throws(PCSCError) in
            try checkHandle(id, in: record)
            try checkSharing(id, in: record)
            if record.atr.count > DriverCalls.maximumATRSize { throw .internalError }
            try checkEvent(id, in: record)
            return (record.eventCounter << 16 | record.flags.rawValue, record.cardProtocol, record.atr)
        }
    }

    // MARK: SCardTransmit

    /// SCardTransmit (winscard.c): handle events first (SCARD_W_REMOVED_CARD / _RESET_CARD), then
    /// no card → SCARD_E_NO_SMARTCARD, a PCI protocol other than the card's → SCARD_E_PROTO_MISMATCH
    /// (so a DIRECT handle, protocol 0, reaches the driver only while a card is present and not
    /// yet negotiated); the driver's IFD_ICC_NOT_PRESENT → SCARD_E_NO_SMARTCARD (and the reader is
    /// marked empty), any other failure → SCARD_E_NOT_TRANSACTED (ifdwrapper.c IFDTransmit).
    func transmit(_ id: UInt, pciProtocol: UInt, _ command: [UInt8]) throws(PCSCError) -> [UInt8] {
        poll()
        let headerProtocol: UInt = try record.withLock { record throws(PCSCError) -> UInt in
            try checkHandle(id, in: record)
            try checkSharing(id, in: record)
            try checkEvent(id, in: record)
            let raw = ProtocolSet.raw.rawValue
            if pciProtocol != raw && record.flags.contains(.absent) { throw .noSmartcard }
            if pciProtocol != raw && pciProtocol != Self.anyOld && pciProtocol != record.cardProtocol {
                throw .protoMismatch
            }
            switch pciProtocol {
            case ProtocolSet.t1.rawValue: return 1
            case raw: return raw
            case Self.anyOld: return record.cardProtocol == ProtocolSet.t1.rawValue ? 1 : 0
            default: return 0
            }
        }
        let (result, answer) = withDriver { DriverCalls.transmit(lun: lun, headerProtocol: headerProtocol, command) }
        guard let error = IFDResultMapping.transmit(result) else { return answer }
        if error == .noSmartcard {
            record.withLock { record in
                record.atr = []
                record.cardProtocol = 0
                record.flags = .absent
            }
        }
        throw error
    }

    // MARK: SCardControl

    /// SCardControl (winscard.c): no card and no event checks, whatever the share mode; the
    /// driver's IFD_ERROR_NOT_SUPPORTED / IFD_NOT_SUPPORTED → SCARD_E_UNSUPPORTED_FEATURE,
    /// IFD_ERROR_INSUFFICIENT_BUFFER → SCARD_E_INSUFFICIENT_BUFFER, any other failure (including
    /// IFD_COMMUNICATION_ERROR, IFD_RESPONSE_TIMEOUT, IFD_ICC_NOT_PRESENT) →
    /// SCARD_E_NOT_TRANSACTED (ifdwrapper.c IFDControl).
    func control(_ id: UInt, code: UInt32, _ command: [UInt8]) throws(PCSCError) -> [UInt8] {
        poll()
        try record.withLock { record throws(PCSCError) in
            try checkHandle(id, in: record)
            try checkSharing(id, in: record)
        }
        let (result, answer) = withDriver { DriverCalls.control(lun: lun, code: code, command) }
        if let error = IFDResultMapping.control(result) { throw error }
        return answer
    }

    // MARK: SCardGetAttrib

    /// SCardGetAttrib (winscard.c): event checks, then IFDHGetCapabilities with pcscd's 264-byte
    /// buffer; IFD_ERROR_TAG → SCARD_E_UNSUPPORTED_FEATURE, except SCARD_ATTR_DEVICE_FRIENDLY_NAME
    /// and _SYSTEM_NAME, which pcscd answers with the reader's name (NUL-terminated);
    /// IFD_ERROR_INSUFFICIENT_BUFFER → SCARD_E_INSUFFICIENT_BUFFER; others SCARD_E_NOT_TRANSACTED.
    func attribute(_ id: UInt, tag: UInt32) throws(PCSCError) -> [UInt8] {
        poll()
        try record.withLock { record throws(PCSCError) in
            try checkHandle(id, in: record)
            try checkSharing(id, in: record)
            try checkEvent(id, in: record)
        }
        let (result, value) = withDriver { DriverCalls.capability(lun: lun, tag: tag) }
        if result == IFDResponseCode.errorTag && (tag == Self.deviceFriendlyName || tag == Self.deviceSystemName) {
            let bytes = Array(name.utf8) + [0]
            guard bytes.count <= DriverCalls.attributeBufferSize else { throw .insufficientBuffer }
            return bytes
        }
        if let error = IFDResultMapping.attribute(result) { throw error }
        return value
    }

    // MARK: Reader state

    /// The reader's flags, event counter and ATR, as SCardGetStatusChange would report them after
    /// a presence poll.
    func readerSnapshot() -> ReaderRecord {
        poll()
        return record.withLock { $0 }
    }

    /// Marks the reader closed: later calls on its handles fail with SCARD_E_READER_UNAVAILABLE.
    func markClosed() {
        record.withLock { $0.closed = true }
    }

    /// T=0 | T=1 | RAW | SCARD_PROTOCOL_ANY_OLD: one of them is needed for a non-DIRECT connection.
    static let anyUsable = ProtocolSet(rawValue: 0x1 | 0x2 | 0x4 | anyOld)
    /// SCARD_PROTOCOL_ANY_OLD (winscard.c): the pre-1.3 "any" value, 0x1000.
    static let anyOld: UInt = 0x1000
    /// SCARD_ATTR_DEVICE_FRIENDLY_NAME (0x7FFF0003).
    static let deviceFriendlyName: UInt32 = 0x7FFF_0003
    /// SCARD_ATTR_DEVICE_SYSTEM_NAME (0x7FFF0004).
    static let deviceSystemName: UInt32 = 0x7FFF_0004
}
