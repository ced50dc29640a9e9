import PCSCCore
import Synchronization

/// The in-process PC/SC client: contexts on ``InProcessReaders`` (simulated ACR122U readers driven
/// through their driver's entry points with pcscd 1.9.9's rules), with no pcscd.
///
/// Code written against `PCSCClient` runs on it unchanged; the `secbridge` tool's tests use it to
/// run commands in process, in parallel:
///
///     let readers = InProcessReaders()
///     let name = try readers.createChannel(deviceName: "/tmp/my-test/a:timescale=0.01")
///     let client = InProcessPCSCClient(readers)
///     let context = try client.establishContext()
///     let direct = try context.connect(to: name, share: .direct, protocols: .undefined)
public struct InProcessPCSCClient: PCSCClient {
    /// The simulated readers this client's contexts reach.
    public let readers: InProcessReaders

    /// A client over `readers`; each context it establishes sees the readers as pcscd 1.9.9 would.
    public init(_ readers: InProcessReaders) { self.readers = readers }

    /// These readers' own namespace: `in-process <address of readers>/`.
    public var readerScope: String { "in-process \(ObjectIdentifier(readers).hashValue)/" }
    /// The readers' virtual time (``InProcessReaders/virtualTime``), nil on scaled real time.
    public var virtualTime: VirtualTime? { readers.virtualTime }

    /// A new context on ``readers``; never fails (there is no service to reach).
    public func establishContext() throws(PCSCError) -> any PCSCClientContext {
        InProcessContext(readers: readers)
    }
}

/// A context of the in-process client.
///
/// ``getStatusChange(_:timeout:)`` reports what pcscd's event handler would: a reader's
/// `dwEventState` is its card event counter in the high 16 bits and SCARD_STATE_EMPTY or
/// SCARD_STATE_PRESENT (with INUSE for a connected card, EXCLUSIVE for an exclusive connection) in
/// the low 16; `\\?PnP?\Notification` carries the number of readers in its high 16 bits. Presence is
/// polled as pcscd polls IFDHICCPresence: every 400 ms (PCSCLITE_STATUS_POLL_RATE) while a call
/// waits, so a card placed in the field is reported within that period.
public final class InProcessContext: PCSCClientContext {
    public typealias Connection = InProcessCardHandle

    /// pcscd's presence poll period (PCSCLITE_STATUS_POLL_RATE, 400 ms).
    public static let pollPeriod: Duration = .milliseconds(400)

    /// The simulated readers this context reaches.
    public let readers: InProcessReaders
    private let wake = ConditionLock()
    private let state = Mutex((cancelled: false, released: false, waiting: 0))

    init(readers: InProcessReaders) { self.readers = readers }

    /// SCardListReaders.
    /// - Throws: `PCSCError` SCARD_E_INVALID_HANDLE after ``release()``.
    public func listReaders() throws(PCSCError) -> [String] {
        try checkValid("SCardListReaders")
        return readers.listReaders()
    }

    /// SCardConnect, as ``InProcessReaders/connect(to:share:protocols:)``.
    public func connect(to reader: String, share: ShareMode, protocols: ProtocolSet) throws(PCSCError) -> InProcessCardHandle {
        try checkValid("SCardConnect")
        return try readers.connect(to: reader, share: share, protocols: protocols)
    }

    /// SCardGetStatusChange: returns at once when a reader's state differs from its
    /// `ReaderState/currentState` (SCARD_STATE_CHANGED set on it), else waits, polling presence
    /// every ``pollPeriod``, until a change, `timeout`, or ``cancel()``.
    /// - Throws: `PCSCError` — SCARD_E_UNKNOWN_READER, SCARD_E_CANCELLED, SCARD_E_INVALID_HANDLE.
    public func getStatusChange(_ states: inout [ReaderState], timeout: Duration?) throws(PCSCError) -> Bool {
        try checkValid("SCardGetStatusChange")
        guard let virtualTime = readers.virtualTime else { return try statusChange(&states, timeout: timeout) }
        // A participant: woken at a poll step, it looks at presence before time moves on.
        return try virtualTime.participate { () throws(PCSCError) in try statusChange(&states, timeout: timeout) }
    }

    private func statusChange(_ states: inout [ReaderState], timeout: Duration?) throws(PCSCError) -> Bool {
        let virtualTime = readers.virtualTime
        let clock = ThreadClock(virtualTime)
        let deadline = timeout.map { clock.now + $0 }
        state.withLock { $0.waiting += 1 }
        defer { state.withLock { $0.waiting -= 1 } }
        while true {
            if try refresh(&states) { return true }
            if let deadline, clock.now >= deadline { return false }
            var step = Self.pollPeriod
            if let deadline { step = min(step, deadline - clock.now) }
            wake.lock()
            if !state.withLock({ $0.cancelled }) {
                if let virtualTime {
                    // A poll step: the next poll is no reason for virtual time to move, the call's
                    // timeout is (VirtualTime.park(until:advancingTo:)); a peer placed or removed
                    // ends the step at once (VirtualTime.nudge()).
                    let wake = self.wake
                    virtualTime.park(
                        until: virtualTime.deadline(after: step),
                        advancingTo: deadline.map { virtualTime.deadline(after: $0 - clock.now) },
                        wake: { wake.lock(); wake.broadcast(); wake.unlock() }
                    ) { wake.wait() }
                } else {
                    _ = wake.wait(timeout: step)
                }
            }
            wake.unlock()
            let cancelled = state.withLock { state in
                defer { state.cancelled = false }
                return state.cancelled
            }
            if cancelled { throw PCSCError(code: PCSCError.cancelled.code, function: "SCardGetStatusChange") }
            if virtualTime?.isClosed == true { return false }
        }
    }

    /// SCardCancel: a waiting ``getStatusChange(_:timeout:)`` throws SCARD_E_CANCELLED. With no call
    /// waiting it does nothing, as pcsc-lite's `SCardCancel` does outside a cancellable call
    /// (docs/test-infrastructure.md, "What the in-process client copies from pcsc-lite's client
    /// library").
    public func cancel() throws(PCSCError) {
        try checkValid("SCardCancel")
        wake.lock()
        state.withLock { if $0.waiting > 0 { $0.cancelled = true } }
        wake.broadcast()
        wake.unlock()
    }

    /// SCardReleaseContext. Idempotent; the readers stay (they belong to ``readers``).
    public func release() throws(PCSCError) {
        state.withLock { $0.released = true }
    }

    private func checkValid(_ function: String) throws(PCSCError) {
        if state.withLock({ $0.released }) { throw PCSCError(code: PCSCError.invalidHandle.code, function: function) }
    }

    /// Fills each state's event state; true when one differs from what the caller believes.
    private func refresh(_ states: inout [ReaderState]) throws(PCSCError) -> Bool {
        var changed = false
        for index in states.indices {
            let current = states[index].currentState
            var event: UInt
            var atr: [UInt8] = []
            if states[index].readerName == ReaderState.pnpNotification {
                event = UInt(readers.listReaders().count) << 16
            } else if current & ReaderStateFlags.ignore.rawValue != 0 {
                continue
            } else {
                let status: InProcessReaderStatus
                do {
                    status = try readers.readerStatus(states[index].readerName)
                } catch {
                    throw PCSCError(code: error.code, function: "SCardGetStatusChange")
                }
                var flags: ReaderStateFlags = status.flags.contains(.present) ? .present : .empty
                if status.flags.contains(.present) {
                    if status.connections == -1 { flags.insert([.exclusive, .inUse]) } else if status.connections > 0 { flags.insert(.inUse) }
                }
                event = (status.eventCounter & 0xFFFF) << 16 | flags.rawValue
                atr = status.atr
            }
            let mask = ~ReaderStateFlags.changed.rawValue
            if current == 0 || (event & mask) != (current & mask) {
                event |= ReaderStateFlags.changed.rawValue
                changed = true
            }
            states[index].eventState = event
            states[index].atr = atr
        }
        return changed
    }
}
