// `secbridge doctor --device tty:…`: why a PN532 board on a serial line does not answer
// (docs/pn532-uart.md §3, §4, §7).
import SecbridgeCLI
import PN53x
import ISO7816

#if canImport(Glibc)
import Glibc
#endif

/// `--device`'s reading of a PN532 board's name, with the option named in its errors.
enum SerialDeviceName {
    /// The device node `--device` names (``PN532DeviceName``).
    /// - Throws: a usage error naming the mistake for anything but `tty:PATH` or `tty:NAME`.
    static func path(_ argument: String) throws(CLIError) -> String {
        do {
            return try PN532DeviceName(parsing: argument).path
        } catch {
            throw CLIError.usage("--device \(error)")
        }
    }
}

/// What `doctor --device tty:…` learns about the device node, gathered by ``gather(path:)`` (tests
/// give their own).
struct DoctorSerialNode: Sendable, Equatable {
    /// The node exists.
    var exists: Bool
    /// It is a character device (a serial port or a pty), not a file or a directory.
    var isCharacterDevice: Bool
    /// access(2) R_OK | W_OK for this process.
    var readWrite: Bool
    /// The node's group name (`dialout` on Debian and Ubuntu) and mode bits, e.g. 0660.
    var group: String
    var mode: UInt32
    /// Whether this process is in that group (its supplementary groups, or its effective group).
    var inGroup: Bool
    /// The serial ports present, for the missing-device hint: /dev/ttyUSB*, /dev/ttyACM*.
    var candidates: [String]

    static func gather(path: String) -> DoctorSerialNode {
        var info = stat()
        let found = stat(path, &info) == 0
        let groupName = found ? (getgrgid(info.st_gid).map { String(cString: $0.pointee.gr_name) } ?? String(info.st_gid)) : ""
        var groups = [gid_t](repeating: 0, count: 256)
        let count = getgroups(Int32(groups.count), &groups)
        let member = found && (getegid() == info.st_gid || groups.prefix(Int(max(0, count))).contains(info.st_gid))
        var ports: [String] = []
        if let directory = opendir("/dev") {
            while let entry = readdir(directory) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
                if name.hasPrefix("ttyUSB") || name.hasPrefix("ttyACM") { ports.append("/dev/" + name) }
            }
            closedir(directory)
        }
        return DoctorSerialNode(
            exists: found, isCharacterDevice: found && (info.st_mode & S_IFMT) == S_IFCHR,
            readWrite: found && access(path, R_OK | W_OK) == 0, group: groupName, mode: UInt32(info.st_mode & 0o7777),
            inGroup: member, candidates: ports.sorted())
    }
}

enum DoctorSerial {
    /// The checks for the serial PN532 at `path`: the device node, its permissions, a wake-up
    /// (55 preamble and SAMConfiguration) and GetFirmwareVersion. The line comes from `open` (a
    /// ``PN532TTY`` normally; an in-memory line in tests), called only when the node is usable.
    static func evaluate(
        path: String, node: DoctorSerialNode, open: () throws -> PN532SerialLink
    ) -> [DoctorCheck] {
        var checks: [DoctorCheck] = []
        guard node.exists else {
            let seen = node.candidates.isEmpty ? "no /dev/ttyUSB* or /dev/ttyACM* is present" : "present: " + node.candidates.joined(separator: ", ")
            checks.append(DoctorCheck(
                check: "serial device", verdict: .fail, detail: "\(path) does not exist (\(seen))",
                fix: "plug in the USB-serial adapter (or the board's USB port) and name the port it gets: `dmesg | tail` shows it, e.g. --device tty:/dev/ttyUSB0"))
            return checks + skipped(after: "the serial device")
        }
        guard node.isCharacterDevice else {
            checks.append(DoctorCheck(
                check: "serial device", verdict: .fail, detail: "\(path) is not a character device (not a serial port)",
                fix: "name the serial port, e.g. --device tty:/dev/ttyUSB0"))
            return checks + skipped(after: "the serial device")
        }
        checks.append(DoctorCheck(check: "serial device", verdict: .ok, detail: "\(path) is a character device"))
        let mode = "0" + String(node.mode, radix: 8)
        guard node.readWrite else {
            let fix = node.inGroup
                ? "the node's mode \(mode) gives group \(node.group) no read and write; a udev rule should set MODE=\"0660\" for it"
                : "add yourself to the group \(node.group): `sudo usermod -aG \(node.group) $USER`, then log out and in again (check with `id`)"
            checks.append(DoctorCheck(
                check: "permissions", verdict: .fail,
                detail: "no read and write access to \(path) (group \(node.group), mode \(mode)\(node.inGroup ? "" : ", you are not in group \(node.group)"))",
                fix: fix))
            return checks + skipped(after: "the permissions")
        }
        checks.append(DoctorCheck(check: "permissions", verdict: .ok, detail: "read and write (group \(node.group), mode \(mode))"))
        let link: PN532SerialLink
        do {
            link = try open()
        } catch {
            checks.append(DoctorCheck(
                check: "wake-up", verdict: .fail, detail: "cannot open \(path): \(error)",
                fix: "close the program that holds the port (`fuser \(path)`), or unplug and plug in the adapter"))
            return checks + [skippedCheck("firmware", "the port did not open")]
        }
        do {
            try link.wakeUp()
            checks.append(DoctorCheck(check: "wake-up", verdict: .ok, detail: "55 preamble and SAMConfiguration (normal mode) acknowledged and answered"))
        } catch {
            checks.append(DoctorCheck(
                check: "wake-up", verdict: .fail, detail: "the board did not answer the wake-up: \(error)",
                fix: "check the wiring (board TX to adapter RX, RX to TX, GND, 3.3 V or 5 V as the board takes), the board's interface switches or jumpers set to HSU (UART), and that nothing else uses \(path)"))
            return checks + [skippedCheck("firmware", "the board did not wake up")]
        }
        do {
            let version = try link.exchange(.getFirmwareVersion)
            guard version.count == 4 else {
                checks.append(DoctorCheck(
                    check: "firmware", verdict: .fail, detail: "GetFirmwareVersion answered \(version.hexString), expected 4 bytes (IC Ver Rev Support)",
                    fix: "this is not a PN532 or its firmware is damaged; try another board"))
                return checks
            }
            let chip = version[0] == 0x32 ? "PN532" : "IC \(HexBytes.format(version[0]))"
            checks.append(DoctorCheck(
                check: "firmware", verdict: version[0] == 0x32 ? .ok : .warning,
                detail: "\(chip) firmware \(version[1]).\(version[2]), support \(HexBytes.format(version[3])) (GetFirmwareVersion \(version.hexString))",
                fix: version[0] == 0x32 ? nil : "the chip is not a PN532 (IC 32): secbridge's serial path is written for the PN532"))
        } catch {
            checks.append(DoctorCheck(
                check: "firmware", verdict: .fail, detail: "GetFirmwareVersion failed: \(error)",
                fix: "the board woke but does not answer reliably: check the cable and the ground connection, and use 115200 baud"))
        }
        return checks
    }

    private static func skippedCheck(_ name: String, _ why: String) -> DoctorCheck {
        DoctorCheck(check: name, verdict: .skipped, detail: why)
    }

    private static func skipped(after what: String) -> [DoctorCheck] {
        ["permissions", "wake-up", "firmware"].suffix(from: what == "the serial device" ? 0 : 1).map {
            skippedCheck($0, "\(what) check failed")
        }
    }
}
