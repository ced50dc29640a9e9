import SimulatedACR122IFD
import PCSCCore
import Synchronization

/// Simulated ACR122U readers driven in this process through SimulatedACR122IFD's IFD handler entry
/// points, with pcscd 1.9.9's rules kept by this layer: for unit tests and for machines where no
/// private pcscd can start.
///
/// A reader is made the way pcscd makes one from a reader.conf entry: a Lun, a DEVICENAME handed to
/// IFDHCreateChannelByName (`<absolute dir>[:personality=<name>][:field=<name>]`, see
/// `SimulatedACR122IFD/DeviceName.swift`), and the name `<FRIENDLYNAME> XX 00`, XX the lowest index not
/// used by a reader of the same friendly name in this instance. The driver serves the reader's
/// control socket `<dir>/control.sock` as it does inside pcscd, so peers are placed the same way.
///
///     let readers = InProcessReaders()
///     let name = try readers.createChannel(deviceName: "/tmp/my-test/a:field=desk")
///     let direct = try readers.connect(to: name, share: .direct, protocols: .undefined)
///     let firmware = try direct.control(code: 0x4200_0001, [0xFF, 0x00, 0x48, 0x00, 0x00])
///
/// Luns are unique in the process (the driver keeps its readers in one table, at most 16 open at a
/// time), so several instances may run in parallel, e.g. one per test; give each reader its own
/// directory. Calls block (see ``InProcessCardHandle``): use a dedicated thread or a PCSC
/// `BlockingExecutor`. ``close()`` (or deinitialization) closes every channel.
public final class InProcessReaders: Sendable {
    /// The friendly name a real ACR122U has on the CCID driver.
    public static let acr122FriendlyName = "ACS ACR122U PICC Interface"

    private struct Entry: Sendable {
        var friendlyName: String
        var reader: ReaderContext
    }
    private let entries = Mutex<[Entry]>([])

    /// How long SCardBeginTransaction waits for another handle's transaction before
    /// SCARD_E_TIMEOUT (``InProcessCardHandle/beginTransaction()``).
    public let transactionWaitLimit: Duration

    /// The virtual time the readers' waits run on (status polls, transaction waits), or nil for
    /// the monotonic clock. Their devices run on it too when their `DEVICENAME` says
    /// `clock=<its name>` (`SimulatedDesk` (SecbridgeTesting) gives both).
    public let virtualTime: VirtualTime?

    /// - Parameters:
    ///   - transactionWaitLimit: default 60 s.
    ///   - virtualTime: see ``virtualTime``; default none.
    public init(transactionWaitLimit: Duration = .seconds(60), virtualTime: VirtualTime? = nil) {
        self.transactionWaitLimit = transactionWaitLimit
        self.virtualTime = virtualTime
    }

    /// The clock the readers' thread waits are measured on.
    var clock: ThreadClock { ThreadClock(virtualTime) }

    deinit { close() }

    /// Opens a reader on `deviceName` (IFDHCreateChannelByName) and names it.
    /// - Parameters:
    ///   - deviceName: the DEVICENAME, e.g. `/tmp/test-42/a:personality=ccid-escape-disabled`.
    ///   - friendlyName: the reader.conf FRIENDLYNAME.
    ///   - timeout: how long to wait (blocking) for a Lun when all 16 of the process are taken,
    ///     e.g. by tests running in parallel; no wait by default.
    /// - Returns: the reader's name, e.g. "ACS ACR122U PICC Interface 00 00".
    /// - Throws: ``InProcessReaderError`` — `tooManyReaders` when 16 in-process readers stay open
    ///   in this process for `timeout`, `channelRefused` when the driver refuses the DEVICENAME
    ///   (it writes the reason to standard error, as it does to pcscd's log).
    @discardableResult
    public func createChannel(
        deviceName: String, friendlyName: String = acr122FriendlyName, waitingUpTo timeout: Duration = .zero
    ) throws(InProcessReaderError) -> String {
        guard let index = LunTable.reserve(waitingUpTo: timeout) else {
            throw InProcessReaderError(
                .tooManyReaders, "\(LunTable.capacity) in-process readers stayed open in this process for \(timeout); close some first")
        }
        return try open(deviceName: deviceName, friendlyName: friendlyName, index: index)
    }

    /// Opens one reader per DEVICENAME, taking their Luns all at once (so tests that each need
    /// several readers never wait for each other's half-made sets).
    /// - Returns: the readers' names, in order.
    /// - Throws: as ``createChannel(deviceName:friendlyName:waitingUpTo:)``; on a refusal the
    ///   readers already opened are closed again.
    @discardableResult
    public func createChannels(
        deviceNames: [String], friendlyName: String = acr122FriendlyName, waitingUpTo timeout: Duration = .zero
    ) throws(InProcessReaderError) -> [String] {
        guard let indices = LunTable.reserve(count: deviceNames.count, waitingUpTo: timeout) else {
            throw InProcessReaderError(
                .tooManyReaders,
                "\(deviceNames.count) of the \(LunTable.capacity) in-process readers of this process did not become free within \(timeout); close some first")
        }
        var names: [String] = []
        for (position, deviceName) in deviceNames.enumerated() {
            do {
                names.append(try open(deviceName: deviceName, friendlyName: friendlyName, index: indices[position]))
            } catch {
                for index in indices[(position + 1)...] { LunTable.release(index) }
                for name in names { try? closeChannel(name) }
                throw error
            }
        }
        return names
    }

    /// Opens the reader on the reserved Lun index `index` (released again on failure).
    private func open(deviceName: String, friendlyName: String, index: Int) throws(InProcessReaderError) -> String {
        let lun = UInt(index) << 16
        let result = DriverCalls.createChannel(lun: lun, deviceName: deviceName)
        guard result == IFDResponseCode.success else {
            LunTable.release(index)
            throw InProcessReaderError(
                .channelRefused,
                "IFDHCreateChannelByName refused DEVICENAME '\(deviceName)' (RESPONSECODE \(result)); the driver wrote why to standard error")
        }
        return entries.withLock { entries in
            let taken = Set(entries.filter { $0.friendlyName == friendlyName }.map { $0.reader.index })
            let number = (0..<LunTable.capacity).first { !taken.contains($0) } ?? entries.count
            let name = friendlyName + " " + Self.hex(number) + " 00"
            let reader = ReaderContext(
                name: name, lun: lun, index: number, deviceName: deviceName, transactionWaitLimit: transactionWaitLimit, virtualTime: virtualTime)
            reader.poll(initial: true)
            entries.append(Entry(friendlyName: friendlyName, reader: reader))
            return name
        }
    }

    /// Closes the reader `name` (IFDHCloseChannel): its card is powered down, its control socket
    /// closed; calls on its handles then fail with SCARD_E_READER_UNAVAILABLE.
    /// - Throws: `PCSCError` SCARD_E_UNKNOWN_READER.
    public func closeChannel(_ name: String) throws(PCSCError) {
        let removed = entries.withLock { entries -> Entry? in
            guard let position = entries.firstIndex(where: { $0.reader.name == name }) else { return nil }
            return entries.remove(at: position)
        }
        guard let removed else { throw PCSCError(code: PCSCError.unknownReader.code, function: "IFDHCloseChannel") }
        Self.close(removed.reader)
    }

    /// Closes every reader; idempotent.
    public func close() {
        let all = entries.withLock { entries in
            defer { entries.removeAll() }
            return entries
        }
        for entry in all { Self.close(entry.reader) }
    }

    private static func close(_ reader: ReaderContext) {
        reader.markClosed()
        _ = reader.withDriver { DriverCalls.closeChannel(lun: reader.lun) }
        LunTable.release(Int(reader.lun >> 16))
    }

    /// Handles a typed control request for the reader `name`, in this process, with no socket and
    /// no text: what its control socket would answer to ``SimulatorRequest/line`` (the reply's
    /// fields in order), on the caller's thread.
    /// - Throws: `ControlError` as the socket replies it; code `connect` when no reader of this
    ///   instance is named `name`.
    package func control(_ request: SimulatorRequest, reader name: String) throws(ControlError) -> [(key: String, value: String)] {
        guard let lun = entries.withLock({ entries in entries.first { $0.reader.name == name }?.reader.lun }) else {
            throw ControlError(ControlError.Code(rawValue: "connect"), "no in-process reader '\(name)'")
        }
        return try request.handled(byReaderOn: lun)
    }

    /// The readers' names in the order they were created (pcscd lists readers in its table order).
    ///
    /// The corresponding PC/SC function is SCardListReaders.
    public func listReaders() -> [String] {
        entries.withLock { $0.map(\.reader.name) }
    }

    /// Connects to the card in `reader`, or with `.direct` to the reader itself.
    ///
    /// The corresponding PC/SC function is SCardConnect. As pcscd 1.9.9 does: the card is powered
    /// up if needed (IFDHPowerICC) and its protocol selected from the ATR (T=1 first, asked of the
    /// driver as IFDHSetProtocolParameters(2)); a DIRECT connection needs no card and reports the
    /// card's protocol, 0 while none was negotiated.
    /// - Parameters:
    ///   - reader: a name from ``listReaders()``.
    ///   - share: exclusive, shared or direct.
    ///   - protocols: the acceptable protocols; `.undefined` (0) for a direct connection.
    /// - Throws: `PCSCError` — SCARD_E_UNKNOWN_READER, SCARD_E_NO_SMARTCARD (no card, SHARED or
    ///   EXCLUSIVE), SCARD_E_SHARING_VIOLATION (an EXCLUSIVE connection holds the reader, or
    ///   EXCLUSIVE asked while others are connected), SCARD_E_PROTO_MISMATCH (no usable protocol),
    ///   SCARD_W_UNPOWERED_CARD, SCARD_W_UNRESPONSIVE_CARD.
    public func connect(
        to reader: String, share: ShareMode = .shared, protocols: ProtocolSet = .any
    ) throws(PCSCError) -> InProcessCardHandle {
        guard let context = self.reader(named: reader) else {
            throw PCSCError(code: PCSCError.unknownReader.code, function: "SCardConnect")
        }
        let (id, active) = try InProcessCardHandle.named("SCardConnect") { () throws(PCSCError) in
            try context.connect(share: share, protocols: protocols)
        }
        return InProcessCardHandle(reader: context, id: id, activeProtocol: active)
    }

    /// The reader's state after a presence poll, as SCardGetStatusChange reports it: the
    /// SCARD_ABSENT … SCARD_NEGOTIABLE flags, the event counter, the ATR of the card.
    /// - Throws: `PCSCError` SCARD_E_UNKNOWN_READER.
    public func readerStatus(_ reader: String) throws(PCSCError) -> InProcessReaderStatus {
        guard let context = self.reader(named: reader) else {
            throw PCSCError(code: PCSCError.unknownReader.code, function: "SCardGetStatusChange")
        }
        let record = context.readerSnapshot()
        return InProcessReaderStatus(flags: record.flags, eventCounter: record.eventCounter, atr: record.atr,
                                     connections: record.sharing)
    }

    /// How many calls hold or wait for `reader`'s lock (pcscd's per-reader mutex), for tests and
    /// diagnostics: a call blocked in the driver counts 1, each call waiting behind it 1 more.
    public func pendingDriverCalls(on reader: String) -> Int {
        self.reader(named: reader)?.pendingDriverCalls ?? 0
    }

    /// Blocks the calling thread (never Swift's shared pool) until exactly `count` calls hold or
    /// wait for `reader`'s lock, or `timeout` of real time passed (a safety net for a test that
    /// must act once a call is under way); whether the count was reached. False for an unknown
    /// reader.
    package func waitUntilPendingDriverCalls(on reader: String, reach count: Int, within timeout: Duration = .seconds(60)) -> Bool {
        self.reader(named: reader)?.waitForPendingDriverCalls(count, within: timeout) ?? false
    }

    private func reader(named name: String) -> ReaderContext? {
        entries.withLock { $0.first { $0.reader.name == name }?.reader }
    }

    private static func hex(_ value: Int) -> String {
        let digits = String(value, radix: 16, uppercase: true)
        return digits.count < 2 ? "0" + digits : digits
    }
}

/// A reader's state as SCardGetStatusChange would report it.
public struct InProcessReaderStatus: Sendable, Hashable {
    /// SCARD_ABSENT, SCARD_PRESENT, SCARD_POWERED, … (the SCardStatus flags).
    public var flags: CardState
    /// Insertions and removals seen, modulo 0x10000.
    public var eventCounter: UInt
    /// The ATR of the card present, empty without one.
    public var atr: [UInt8]
    /// Connections: the number of SHARED and DIRECT ones, or −1 for one EXCLUSIVE.
    public var connections: Int
}

/// A reader this layer could not open.
public struct InProcessReaderError: CodedError {
    /// An open set of codes.
    public struct Code: ErrorCode {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The driver's IFDHCreateChannelByName refused the DEVICENAME.
        public static let channelRefused = Code(rawValue: "channel-refused")
        /// Every Lun the driver serves in this process is taken.
        public static let tooManyReaders = Code(rawValue: "too-many-readers")
    }

    public var code: Code
    public var reason: String

    /// An error with its code and a reason that says what was wrong and what to do.
    public init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }
    public var description: String { "\(code): \(reason)" }
}

/// The Luns of the in-process readers: the driver's reader table is one per process (keyed by
/// `Lun >> 16`, at most 16 open), so every instance of ``InProcessReaders`` draws from here.
enum LunTable {
    /// The driver's limit (TAG_IFD_SIMULTANEOUS_ACCESS).
    static let capacity = 16
    /// The used indices behind the package's condition lock (the table lives as long as the
    /// process).
    private final class Table: @unchecked Sendable {
        let condition = ConditionLock()
        var used: Set<Int> = []
    }
    private static let table = Table()

    /// Takes the lowest free index, waiting at most `timeout` for one to be released.
    /// - Returns: nil when none became free in time.
    static func reserve(waitingUpTo timeout: Duration) -> Int? {
        reserve(count: 1, waitingUpTo: timeout)?.first
    }

    /// Takes `count` free indices at once, or none: a caller never holds some while it waits for
    /// the rest, so callers that need several cannot deadlock each other.
    /// - Returns: nil when that many did not become free within `timeout`.
    static func reserve(count: Int, waitingUpTo timeout: Duration) -> [Int]? {
        guard count > 0, count <= capacity else { return nil }
        let deadline = ContinuousClock.now + max(timeout, .zero)
        table.condition.lock()
        defer { table.condition.unlock() }
        // Each wakeup either finds enough free indices or the deadline passes: bounded by the timeout.
        while true {
            let free = (0..<capacity).filter { !table.used.contains($0) }
            if free.count >= count {
                let taken = Array(free.prefix(count))
                table.used.formUnion(taken)
                return taken
            }
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return nil }
            _ = table.condition.wait(timeout: left)
        }
    }

    static func release(_ index: Int) {
        table.condition.lock()
        table.used.remove(index)
        table.condition.broadcast()
        table.condition.unlock()
    }
}
