import ACR122Simulator
import Synchronization

/// One reader the driver serves: the device pcscd talks to through the entry points, its control
/// server (none with `control=none`), and the ATR of its last power-up (for TAG_IFD_ATR).
final class DriverReader: Sendable {
    let deviceName: DeviceName
    let binding: SimulatorBinding
    let server: ControlServer?
    private let lastATR = Mutex<[UInt8]>([])

    init(deviceName: DeviceName, binding: SimulatorBinding, server: ControlServer?) {
        self.deviceName = deviceName
        self.binding = binding
        self.server = server
    }

    /// The device pcscd talks to.
    var device: any IFDDevice { binding }

    var atr: [UInt8] {
        get { lastATR.withLock { $0 } }
        set { lastATR.withLock { $0 = newValue } }
    }
}

/// The readers of this pcscd, keyed by `Lun >> 16` (pcsc-lite numbers readers `0xXXXXYYYY`,
/// XXXX the reader, YYYY the slot; all readers that name this library share its one copy).
enum ReaderTable {
    /// The open readers and their keys (`Lun >> 16`), at most ``capacity``. An array searched
    /// in order rather than a `[UInt: DriverReader]`: the dictionary's first use looked up
    /// `UInt: Hashable` by scanning every conformance record (0.38 M instructions of each
    /// in-process reader's start; docs/benchmarks.md §11).
    private static let readers = Mutex<[(key: UInt, reader: DriverReader)]>([])

    /// The most readers one pcscd may open on this driver (TAG_IFD_SIMULTANEOUS_ACCESS).
    static let capacity = 16

    /// How many readers this pcscd has opened on the driver so far: a reader's place in that order
    /// is its place among same-named readers, since pcscd names a reader (`… XX 00`, the lowest
    /// free XX) just before it opens its channel. Reported by the `ping` verb.
    private static let opened = Mutex(0)

    static func reader(_ lun: UInt) -> DriverReader? {
        readers.withLock { readers in readers.first { $0.key == lun >> 16 }?.reader }
    }

    /// Opens the reader `lun` on `deviceNameText`: parses it, builds the simulated device and starts
    /// its control server (unless the name says `control=none`).
    /// - Returns: nil after logging why to pcscd's log.
    static func open(lun: UInt, deviceNameText: String) -> DriverReader? {
        let key = lun >> 16
        if let existing = reader(lun) {
            DriverLog.write("reader \(key) is already open on \(existing.deviceName.directory)")
            return nil
        }
        let name: DeviceName
        do {
            name = try DeviceName(parsing: deviceNameText)
        } catch {
            DriverLog.write("\(error)")
            return nil
        }
        let count = readers.withLock { $0.count }
        guard count < capacity else {
            DriverLog.write("\(name.directory): this driver serves at most \(capacity) readers per pcscd")
            return nil
        }
        let bound: SimulatorBinding
        do {
            let order = opened.withLock { count in
                defer { count += 1 }
                return count
            }
            bound = try SimulatorBinding(deviceName: name, openOrder: order)
        } catch {
            DriverLog.write("DEVICENAME '\(deviceNameText)': \(error)")
            return nil
        }
        var server: ControlServer?
        if name.servesControlSocket {
            let started = ControlServer(socketPath: name.socketPath) { request throws(ControlError) in
                try ControlProtocol.handle(request, binding: bound)
            }
            do {
                try started.start(directory: name.directory)
            } catch {
                DriverLog.write("cannot serve the control socket: \(error)")
                bound.close()
                return nil
            }
            server = started
        }
        let reader = DriverReader(deviceName: name, binding: bound, server: server)
        readers.withLock { $0.append((key, reader)) }
        if server != nil {
            DriverLog.write("reader \(key): control socket \(name.socketPath), field \(name.field)")
        }
        return reader
    }

    /// Closes the reader `lun`: powers its card down, stops its control server.
    /// - Returns: false when no such reader is open.
    static func close(lun: UInt) -> Bool {
        let removed = readers.withLock { readers -> DriverReader? in
            guard let position = readers.firstIndex(where: { $0.key == lun >> 16 }) else { return nil }
            return readers.remove(at: position).reader
        }
        guard let reader = removed else { return false }
        reader.device.powerDown()
        reader.server?.stop()
        reader.binding.close()
        return true
    }
}
