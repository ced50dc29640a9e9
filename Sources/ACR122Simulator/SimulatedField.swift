import ISO7816
import PCSCCore
import Synchronization

/// The RF field around one or more simulated readers.
///
/// Peers (``ISO14443_4Card``, ``ISO14443_3Tag``, ``ExternalTerminal``) are placed and removed at
/// any time from any thread. Readers created on the same field see each other: a reader waiting in
/// TgInitAsTarget is found by another reader's InListPassiveTarget as an ISO/IEC 14443-4 card with
/// UID 08xxxxxx, the emulation's ATQA/SAK and ATS `05 75 33 92 03` + historical bytes.
///
/// One mutex with a condition variable guards the field and the state of every reader on it, so a
/// reader blocked in TgInitAsTarget wakes as soon as a peer arrives. Every wait is bounded by a
/// deadline (an MCU timeout or the driver's escape timeout, scaled by ``clock``).
public final class SimulatedField: Sendable {
    /// The time base of every reader on this field, read at the start of each wait.
    public var clock: SimulationClock {
        if let virtualTime { return SimulationClock(virtualTime: virtualTime) }
        return SimulationClock(scale: Double(bitPattern: scaleBits.load(ordering: .relaxed)))
    }
    private let scaleBits: Atomic<UInt64>
    /// The virtual time of a field made with a virtual clock (``SimulationClock/init(virtualTime:)``):
    /// fixed for the field's life.
    private let virtualTime: VirtualTime?
    let lock: ConditionLock<FieldWorld>

    /// - Parameters:
    ///   - clock: the time base (tests use a small scale so that 5 s timeouts take milliseconds).
    ///   - eventCapacity: how many field events are kept (older ones are dropped), at least 16.
    public init(clock: SimulationClock = .realTime, eventCapacity: Int = 4096) {
        scaleBits = Atomic(clock.scale.bitPattern)
        virtualTime = clock.virtualTime
        lock = ConditionLock(FieldWorld(eventCapacity: max(16, eventCapacity)))
    }

    /// Changes the time base of every reader on this field. A wait already under way keeps the
    /// deadline it computed; the next wait uses the new scale. A field on virtual time keeps it.
    public func setClock(_ clock: SimulationClock) {
        scaleBits.store(clock.scale.bitPattern, ordering: .relaxed)
    }

    /// Places a peer in the field. Placing a peer already there does nothing.
    public func place(_ peer: any FieldPeer) {
        lock.withLock { world in
            guard !world.peers.contains(where: { $0 === peer }) else { return }
            world.peers.append(peer)
            world.record(.peerPlaced(peer.peerDescription), reader: nil)
            lock.broadcast()
        }
        // A reader waiting for a peer (TgInitAsTarget) counts as running before time can move.
        wakeWaiters()
        // Status waits on the same virtual time poll presence now (VirtualTime.nudge()).
        virtualTime?.nudge()
    }

    /// On virtual time, wakes every reader waiting on this field through the clock
    /// (`VirtualTime.wakeWaiters(of:)`), so that time does not jump to another deadline (a host's
    /// bound on TgInitAsTarget) between a change and the waiters' look at it. Field lock not held.
    func wakeWaiters() {
        lock.wakeWaiters(on: virtualTime)
    }

    /// Removes a peer. A reader that had activated it loses it (its next exchange fails as with a
    /// card taken away); an emulating reader whose terminal leaves sees status 29 (released).
    public func remove(_ peer: any FieldPeer) {
        lock.withLock { world in
            if world.removePeer(peer) { lock.broadcast() }
        }
        wakeWaiters()
        virtualTime?.nudge()
    }

    /// The peers in the field, in the order they were placed.
    public var peers: [any FieldPeer] { lock.withLock { $0.peers } }

    /// The events recorded so far with a sequence number above `sequence`, oldest first.
    public func events(after sequence: Int = 0) -> [FieldEvent] {
        lock.withLock { world in world.events.filter { $0.sequence > sequence } }
    }

    /// The sequence number of the latest event (0 before any).
    public var lastEventSequence: Int { lock.withLock { $0.nextSequence - 1 } }
}

/// Something that happened in a field, as a session engine observes it.
public struct FieldEvent: Sendable, Hashable, CustomStringConvertible {
    /// What happened: a peer placed or removed, the RF field switched, a card or the emulated target
    /// activated, the target released.
    public enum Kind: Sendable, Hashable {
        /// A peer was placed (its description).
        case peerPlaced(String)
        /// A peer was removed (its description).
        case peerRemoved(String)
        /// A reader switched its RF field on (RFConfiguration item 01, or a poll).
        case fieldOn
        /// A reader switched its RF field off.
        case fieldOff
        /// A reader activated a card (InListPassiveTarget or automatic polling); its UID.
        case cardActivated(uid: [UInt8])
        /// A reader in TgInitAsTarget was activated: the mode byte and the initiator's first command.
        case targetActivated(mode: UInt8, initiatorCommand: [UInt8])
        /// The initiator released the emulated target (or left the field).
        case targetReleased
    }

    /// Increasing from 1 within a field.
    public var sequence: Int
    /// The reader's name, nil for field-wide events.
    public var reader: String?
    /// What happened.
    public var kind: Kind

    public var description: String {
        let who = reader.map { "[\($0)] " } ?? ""
        switch kind {
        case .peerPlaced(let p): return "\(sequence) \(who)placed \(p)"
        case .peerRemoved(let p): return "\(sequence) \(who)removed \(p)"
        case .fieldOn: return "\(sequence) \(who)field on"
        case .fieldOff: return "\(sequence) \(who)field off"
        case .cardActivated(let uid): return "\(sequence) \(who)card activated \(uid.hexString)"
        case .targetActivated(let mode, let command):
            return "\(sequence) \(who)target activated mode \([mode].hexString) initiator command \(command.hexString)"
        case .targetReleased: return "\(sequence) \(who)target released"
        }
    }
}

/// The shared state behind a field's lock.
final class FieldWorld {
    var peers: [any FieldPeer] = []
    var devices: [DeviceState] = []
    var events: [FieldEvent] = []
    var nextSequence = 1
    let eventCapacity: Int

    init(eventCapacity: Int) {
        self.eventCapacity = eventCapacity
    }

    /// Takes `peer` out of the field (the lock held); false when it was not in it.
    @discardableResult
    func removePeer(_ peer: any FieldPeer) -> Bool {
        guard let index = peers.firstIndex(where: { $0 === peer }) else { return false }
        peers.remove(at: index)
        for device in devices { device.peerRemoved(peer, world: self) }
        record(.peerRemoved(peer.peerDescription), reader: nil)
        return true
    }

    func record(_ kind: FieldEvent.Kind, reader: String?) {
        events.append(FieldEvent(sequence: nextSequence, reader: reader, kind: kind))
        nextSequence += 1
        if events.count > eventCapacity { events.removeFirst(events.count - eventCapacity) }
    }
}
