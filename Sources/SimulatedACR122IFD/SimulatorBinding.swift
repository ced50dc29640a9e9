import ACR122Simulator
import PCSCCore
import PN53x
import Synchronization

/// One simulated reader as the driver serves it: an ``IFDDevice`` that forwards to the current
/// ``SimulatedACR122U`` (a personality switch replaces it, as replugging the reader behind another
/// driver would), the shared field it sits in, and the control verbs (``ControlProtocol``).
final class SimulatorBinding: IFDDevice {
    let deviceName: DeviceName
    /// 0 for the first reader pcscd opened on this driver, 1 for the next, …
    let openOrder: Int
    let field: SharedField
    private let current: Mutex<(device: SimulatedACR122U, personality: String)>
    private let unplugged = Atomic<Bool>(false)

    /// Builds the device with the personality `DEVICENAME` names, in the field it names.
    /// - Throws: ``ControlError`` `bad-argument` for an unknown personality.
    init(deviceName: DeviceName, openOrder: Int) throws(ControlError) {
        let personalityName = deviceName.personality ?? PersonalityName.defaultName
        let personality = try PersonalityName.personality(personalityName, firmware: nil)
        self.deviceName = deviceName
        self.openOrder = openOrder
        field = try SharedField.attach(deviceName.field, clock: try Self.clock(deviceName))
        let device = SimulatedACR122U(field: field.field, personality: personality, name: deviceName.directory)
        current = Mutex((device, personalityName))
    }

    /// The time base `DEVICENAME` names: a virtual clock of this process (`clock=`), or scaled
    /// wall-clock time (`timescale=`, default real time).
    /// - Throws: ``ControlError`` `bad-argument` for a clock name no open `VirtualTime` has.
    static func clock(_ deviceName: DeviceName) throws(ControlError) -> SimulationClock {
        guard let name = deviceName.clock else { return SimulationClock(scale: deviceName.timeScale ?? 1) }
        guard let time = VirtualTime.named(name) else {
            throw ControlError(
                .badArgument,
                "no virtual clock named '\(name)' is open in this process; clock= is for in-process desks (SimulatedDesk), use timescale= under pcscd")
        }
        return SimulationClock(virtualTime: time)
    }

    var device: SimulatedACR122U { current.withLock { $0.device } }
    var personalityName: String { current.withLock { $0.personality } }

    /// Replaces the device by one with `personality`, in the same field: the old one is detached
    /// (as unplugged), so LED, PICC parameter, MCU timeout and roles start afresh.
    func switchPersonality(to personality: ACR122Personality, named name: String) {
        let fresh = SimulatedACR122U(field: field.field, personality: personality, name: deviceName.directory)
        let old = current.withLock { current in
            defer { current = (fresh, name) }
            fresh.takeOverPCSCSession(from: current.device)
            return current.device
        }
        old.detach()
    }

    /// Whether the reader is unplugged (control verb `unplug`): every driver entry point that
    /// reaches the device answers IFD_NO_SUCH_DEVICE until `replug`, as libccid does once the USB
    /// device is gone (its commands.c turns libusb's "no such device" into IFD_NO_SUCH_DEVICE).
    var isUnplugged: Bool { unplugged.load(ordering: .sequentiallyConsistent) }

    /// Unplugs the reader: the device leaves its field at once (a card's session and a target end
    /// with the power), and the driver answers as for a removed device.
    func unplug() {
        unplugged.store(true, ordering: .sequentiallyConsistent)
        device.detach()
        field.field.clock.virtualTime?.nudge()
    }

    /// Plugs the reader back in: a fresh device with the same personality and firmware (LED, PICC
    /// parameter, MCU timeout and roles at their power-up values), in the same field.
    func replug() {
        let (personality, name) = current.withLock { ($0.device.personality, $0.personality) }
        switchPersonality(to: personality, named: name)
        unplugged.store(false, ordering: .sequentiallyConsistent)
        field.field.clock.virtualTime?.nudge()
    }

    /// Takes the device out of its field and lets go of the field.
    func close() {
        device.detach()
        SharedField.detach(deviceName.field)
    }

    // MARK: IFDDevice, forwarded

    func isCardPresent() -> Bool { device.isCardPresent() }
    func powerUp() throws(IFDError) -> [UInt8] { try device.powerUp() }
    func powerDown() { device.powerDown() }
    func setProtocol(_ protocolValue: UInt) throws(IFDError) { try device.setProtocol(protocolValue) }
    func transmit(_ command: [UInt8]) throws(IFDError) -> [UInt8] { try device.transmit(command) }
    func control(code: UInt32, _ command: [UInt8]) throws(IFDError) -> [UInt8] { try device.control(code: code, command) }
    func attribute(_ tag: UInt32) -> [UInt8]? { device.attribute(tag) }
}

/// The personality names of the control protocol and `DEVICENAME`: the registry
/// ``ACR122Personality/all`` (docs/acr122-units.md).
enum PersonalityName {
    static let defaultName = ACR122Personality.defaultName

    /// The personality `name`, with the firmware string replaced when `firmware` is given.
    /// - Throws: ``ControlError`` `bad-argument` naming the known personalities, or for a firmware
    ///   string that is not 10 printable ASCII characters.
    static func personality(_ name: String, firmware: String?) throws(ControlError) -> ACR122Personality {
        guard var personality = ACR122Personality.named(name) else {
            throw ControlError(.badArgument, "unknown personality '\(name)'; known: \(ACR122Personality.names.joined(separator: ", "))")
        }
        if let firmware {
            guard firmware.utf8.count == 10, firmware.utf8.allSatisfy({ (0x20...0x7E).contains($0) }) else {
                throw ControlError(.badArgument, "firmware '\(firmware)' must be 10 printable ASCII characters, e.g. ACR122U215")
            }
            personality.firmware = firmware
            personality.bcdDevice = ACR122Personality.bcdDevice(forFirmware: firmware) ?? personality.bcdDevice
        }
        return personality
    }
}

/// A field shared by the readers of this pcscd whose `DEVICENAME` names it, with the peers placed
/// through any of their control sockets (so one reader's socket can remove what another placed).
final class SharedField: Sendable {
    let field: SimulatedField
    private struct Peers {
        var byID: [(id: String, peer: any FieldPeer)] = []
        var counter = 0
    }
    private let peers = Mutex(Peers())

    private init(clock: SimulationClock) {
        field = SimulatedField(clock: clock)
    }

    /// The fields in use, by name, with how many readers are in each: at most one per reader (16).
    /// An array searched in order rather than a `[String: …]`, whose first use looked up
    /// `String: Hashable` by scanning every conformance record (0.38 M instructions of each
    /// in-process reader's start; docs/benchmarks.md §11).
    private static let table = Mutex<[(name: String, field: SharedField, readers: Int)]>([])

    /// The field `name`, created on first use with `clock`.
    /// - Throws: ``ControlError`` `bad-argument` when the field exists with another time scale.
    static func attach(_ name: String, clock: SimulationClock) throws(ControlError) -> SharedField {
        try table.withLock { table throws(ControlError) in
            if let position = table.firstIndex(where: { $0.name == name }) {
                let field = table[position].field
                guard field.field.clock == clock else {
                    throw ControlError(
                        .badArgument,
                        field.field.clock.virtualTime != nil || clock.virtualTime != nil
                            ? "the field is already in use on another clock; every reader of a field needs the same clock= (or timescale=)"
                            : "the field is already in use with timescale=\(field.field.clock.scale); every reader of a field needs the same timescale")
                }
                table[position].readers += 1
                return field
            }
            let field = SharedField(clock: clock)
            table.append((name, field, 1))
            return field
        }
    }

    /// Forgets the field `name` when its last reader closes; its serial boards are unplugged then.
    static func detach(_ name: String) {
        let gone = table.withLock { table -> SharedField? in
            guard let position = table.firstIndex(where: { $0.name == name }) else { return nil }
            if table[position].readers <= 1 { return table.remove(at: position).field }
            table[position].readers -= 1
            return nil
        }
        gone?.closeSerialBoards()
    }

    /// A bare PN532 board in this field, served behind the PN532 serial framing on a pseudo-terminal
    /// (control verb `pn532-serial`; docs/pn532-uart.md §6).
    final class SerialBoard: Sendable {
        let id: String
        let chip: SimulatedPN532
        let terminal: PN532PseudoTerminal
        let device: PN532SerialDevice

        init(id: String, field: SimulatedField) throws(PN532SerialLineError) {
            self.id = id
            let chip = SimulatedPN532(field: field, name: "PN532 board \(id)")
            terminal = try PN532PseudoTerminal()
            self.chip = chip
            // The device's own thread reads the pty master; each command runs on a thread of its own.
            // Awake, as a board just plugged in: nfcpy's first GetFirmwareVersion comes after 00
            // bytes only (docs/pn532-uart.md §3); after a PowerDown it needs the 55 wake-up.
            device = PN532SerialDevice(
                stream: terminal, clock: .monotonic, awake: true,
                respond: { frame in chip.respond(to: frame) }, abort: { chip.abortCommand() })
        }

        func close() {
            terminal.close()
            chip.detach()
        }
    }

    private let boards = Mutex<[SerialBoard]>([])

    /// Puts a new serial PN532 board in the field (at most 4).
    /// - Throws: ``ControlError`` `refused` beyond 4 boards or when no pseudo-terminal can be opened.
    func addSerialBoard() throws(ControlError) -> SerialBoard {
        try boards.withLock { boards throws(ControlError) -> SerialBoard in
            guard boards.count < 4 else {
                throw ControlError(.refused, "this field already has 4 serial PN532 boards; use one of them (pn532-serial list=yes)")
            }
            do {
                let board = try SerialBoard(id: "pn532-\(boards.count + 1)", field: field)
                boards.append(board)
                return board
            } catch {
                throw ControlError(.refused, "cannot open a pseudo-terminal for the serial PN532: \(error)")
            }
        }
    }

    /// The serial boards of this field, oldest first.
    var serialBoards: [SerialBoard] { boards.withLock { $0 } }

    /// Unplugs every serial board (their pseudo-terminals stop serving).
    func closeSerialBoards() {
        for board in boards.withLock({ boards in defer { boards.removeAll() }; return boards }) { board.close() }
    }

    /// Places `peer` under `id` (or `<prefix>-<n>`).
    /// - Throws: ``ControlError`` `refused` when the id is taken.
    func place(_ peer: any FieldPeer, id: String?, prefix: String) throws(ControlError) -> String {
        let chosen = try peers.withLock { peers throws(ControlError) -> String in
            peers.counter += 1
            let chosen = id ?? "\(prefix)-\(peers.counter)"
            guard !peers.byID.contains(where: { $0.id == chosen }) else {
                throw ControlError(.refused, "a peer with id '\(chosen)' is already in the field; remove it first")
            }
            peers.byID.append((chosen, peer))
            return chosen
        }
        field.place(peer)
        return chosen
    }

    /// The peer `id`, or nil.
    func peer(_ id: String) -> (any FieldPeer)? {
        peers.withLock { $0.byID.first { $0.id == id }?.peer }
    }

    /// The ids and descriptions of the peers placed through the control sockets.
    var list: [(id: String, description: String)] {
        peers.withLock { $0.byID.map { ($0.id, $0.peer.peerDescription) } }
    }

    /// Removes the peer `id`, or every peer for nil.
    /// - Returns: the ids removed.
    func remove(_ id: String?) -> [String] {
        let removed = peers.withLock { peers in
            let matching = peers.byID.filter { id == nil || $0.id == id }
            peers.byID.removeAll { id == nil || $0.id == id }
            return matching
        }
        for (_, peer) in removed { field.remove(peer) }
        return removed.map(\.id)
    }
}
