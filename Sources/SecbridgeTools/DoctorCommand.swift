// `secbridge doctor`: why an ACR122U does not show up or does not answer escape commands
// (docs/acr122-pn532.md §1, §2, §5b, §5d, §6).
import SecbridgeCLI
import Foundation
import ISO7816
import PCSC
import PN53x

#if canImport(Glibc)
import Glibc
#endif

extension SecbridgeCLI {
    static let doctorCommand = Command(
        name: "doctor",
        abstract: SecbridgeCLI.toolAbstract("doctor"),
        usage: "[--reader NAME|INDEX] [--device tty:PATH] [--json]",
        discussion: """
            Checks, in order, each with a verdict (ok, warning, fail, skipped) and, when not ok, the fix:
              pcscd installed, pcscd running (the socket: PCSCLITE_CSOCK_NAME or /run/pcscd/pcscd.comm),
              the reader in PC/SC (ACR122-class by name, confirmed by its firmware string),
              the USB device 072F:2200 (or 072F:90CC Touchatag) and the kernel NFC modules that
              claim it (pn533_usb, pn533, nfc), the driver serving it (escape code from
              CM_IOCTL_GET_FEATURE_REQUEST tag 0x13: 0x42000001 libccid, 0x42000DAC acsccid),
              escape commands (the ifdDriverOptions edit when refused), the firmware and its
              known quirks, the variant (genuine unit, clone or Touchatag-era unit, firmware,
              libccid or acsccid, escape option; what works on it and what does not; the simulator
              personality that models it), the PICC operating parameter (automatic polling), a card
              in the field.
            With --device tty:/dev/ttyUSB0 (or nfcpy's tty:USB0) a PN532 board on a serial line is
            checked instead: the device node, its permissions (the dialout group), a wake-up (55
            preamble, SAMConfiguration) and GetFirmwareVersion, at 115200 baud (docs/pn532-uart.md).
            Exit status 0 when no check failed, 1 otherwise. Read-only: nothing is changed.

            Example:
              $ secbridge doctor
              ok       pcscd installed: /usr/sbin/pcscd
              ok       pcscd running: SCardEstablishContext answered on /run/pcscd/pcscd.comm
              ok       reader in PC/SC: ACS ACR122U PICC Interface 00 00
              …
              fail     escape commands: refused: SCardControl 0x42000001 gave SCARD_E_NOT_TRANSACTED (0x80100016)
                       fix: edit /etc/libccid_Info.plist: …
            """,
        options: [
            .reader("The reader to check: an index from `secbridge readers` or part of its name."),
            .value("device", "tty:PATH", "Check a PN532 board on this serial port instead (tty:/dev/ttyUSB0, or tty:USB0)."),
            .flag("json", "Print a JSON array of {check, verdict, detail, fix}."),
        ],
        run: runDoctor
    )

    @Sendable static func runDoctor(_ invocation: Invocation) throws -> Int32 {
        guard invocation.arguments.positional.isEmpty else {
            throw CLIError.usage("doctor takes no arguments, got '\(invocation.arguments.positional[0])'")
        }
        if let device = invocation.arguments.value("device") {
            if invocation.arguments.value("reader") != nil {
                throw CLIError.usage("give --reader (a PC/SC reader) or --device (a serial PN532), not both")
            }
            let path = try SerialDeviceName.path(device)
            // Blocking reads on the tty, on this command's own thread (not Swift's shared pool).
            let checks = DoctorSerial.evaluate(path: path, node: DoctorSerialNode.gather(path: path)) {
                PN532SerialLink(stream: try PN532TTY(path: path))
            }
            if invocation.json {
                invocation.out(Doctor.json(checks).prettySerialized())
            } else {
                for check in checks { invocation.console.out(check.text) }
            }
            return checks.contains { $0.verdict == .fail } ? exitFailure : exitSuccess
        }
        let system = DoctorSystem(
            root: environmentValue("SECBRIDGE_DOCTOR_ROOT") ?? "/",
            environment: ProcessInfo.processInfo.environment)
        let findings = DoctorPCSCFindings.gather(readerArgument: invocation.arguments.value("reader"), system: system)
        let checks = Doctor.evaluate(system: system, pcsc: findings)
        if invocation.json {
            invocation.out(Doctor.json(checks).prettySerialized())
        } else {
            for check in checks { invocation.console.out(check.text) }
        }
        return checks.contains { $0.verdict == .fail } ? exitFailure : exitSuccess
    }
}

/// One check's result.
struct DoctorCheck: Sendable, Hashable {
    enum Verdict: String, Sendable { case ok, warning, fail, skipped }
    var check: String
    var verdict: Verdict
    var detail: String
    /// What to do, in exact words; nil when ok.
    var fix: String?

    /// `verdict  check: detail` and an indented `fix:` line.
    var text: String {
        var line = verdict.rawValue.padding(9) + check + ": " + detail + "\n"
        if let fix { line += String(repeating: " ", count: 9) + "fix: " + fix + "\n" }
        return line
    }
}

/// The file-system side of the machine, below `root` ("/" normally; a fake tree in tests:
/// `SECBRIDGE_DOCTOR_ROOT`). Every probe only reads.
struct DoctorSystem: Sendable {
    /// USB IDs of ACR122-class readers: ACR122U 072F:2200, Touchatag 072F:90CC (docs/acr122-pn532.md §1).
    static let usbIDs: [(vendor: String, product: String, name: String)] = [
        ("072f", "2200", "ACS ACR122U"), ("072f", "90cc", "Touchatag (ACR122U)"),
    ]
    /// The kernel's NFC modules that claim 072F:2200 before pcscd can (docs/acr122-pn532.md §5d).
    static let kernelNFCModules = ["pn533_usb", "pn533", "nfc"]
    static let defaultSocket = PCSCLiteClient.defaultSocketPath
    static let libccidPlist = "/etc/libccid_Info.plist"
    static let ccidBundle = "/usr/lib/pcsc/drivers/ifd-ccid.bundle"
    static let acsccidBundle = "/usr/lib/pcsc/drivers/ifd-acsccid.bundle"

    var root: String
    var environment: [String: String]

    /// `path` (absolute, as on the real system) below the root.
    func path(_ path: String) -> String {
        root == "/" || root.isEmpty ? path : (root.hasSuffix("/") ? String(root.dropLast()) : root) + path
    }

    func exists(_ path: String) -> Bool { FileManager.default.fileExists(atPath: self.path(path)) }

    func read(_ path: String) -> String? {
        guard let data = FileManager.default.contents(atPath: self.path(path)) else { return nil }
        return String(decoding: data, as: UTF8.self)
    }

    /// /usr/sbin/pcscd, else the first `pcscd` in PATH (both below the root).
    var pcscdBinary: String? {
        if exists("/usr/sbin/pcscd") { return "/usr/sbin/pcscd" }
        for directory in (environment["PATH"] ?? "").split(separator: ":") where directory.hasPrefix("/") {
            let candidate = String(directory) + "/pcscd"
            if exists(candidate) { return candidate }
        }
        return nil
    }

    /// Process ids whose /proc/PID/comm is "pcscd".
    var pcscdProcesses: [Int] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: path("/proc"))) ?? []
        return entries.compactMap { Int($0) }.sorted().filter {
            read("/proc/\($0)/comm")?.trimmingCharacters(in: .whitespacesAndNewlines) == "pcscd"
        }
    }

    /// PCSCLITE_CSOCK_NAME, or pcsc-lite's default socket.
    var socket: String { environment["PCSCLITE_CSOCK_NAME"].flatMap { $0.isEmpty ? nil : $0 } ?? Self.defaultSocket }

    /// ACR122-class USB devices: /sys/bus/usb/devices/*/idVendor and idProduct.
    var usbReaders: [(device: String, id: String, name: String)] {
        let base = "/sys/bus/usb/devices"
        let entries = ((try? FileManager.default.contentsOfDirectory(atPath: path(base))) ?? []).sorted()
        return entries.compactMap { entry in
            guard let vendor = read("\(base)/\(entry)/idVendor")?.trimmingCharacters(in: .whitespacesAndNewlines).lowercased(),
                  let product = read("\(base)/\(entry)/idProduct")?.trimmingCharacters(in: .whitespacesAndNewlines).lowercased(),
                  let known = Self.usbIDs.first(where: { $0.vendor == vendor && $0.product == product })
            else { return nil }
            return (entry, "\(vendor.uppercased()):\(product.uppercased())", known.name)
        }
    }

    /// Which of the kernel NFC modules are loaded: /proc/modules (first word of each line), or
    /// /sys/module/NAME when /proc/modules is not readable.
    var loadedKernelNFCModules: [String] {
        if let modules = read("/proc/modules") {
            let loaded = Set(modules.split(separator: "\n").compactMap { $0.split(separator: " ").first.map(String.init) })
            return Self.kernelNFCModules.filter { loaded.contains($0) }
        }
        return Self.kernelNFCModules.filter { exists("/sys/module/\($0)") }
    }

    /// The `<string>` after `<key>ifdDriverOptions</key>` in /etc/libccid_Info.plist, if any.
    var libccidDriverOptions: String? {
        guard let text = read(Self.libccidPlist), let key = text.range(of: "<key>ifdDriverOptions</key>") else { return nil }
        let rest = text[key.upperBound...]
        guard let open = rest.range(of: "<string>"), let close = rest.range(of: "</string>", range: open.upperBound..<rest.endIndex)
        else { return nil }
        return rest[open.upperBound..<close.lowerBound].trimmingCharacters(in: .whitespaces)
    }
}

/// What PC/SC says about the reader: gathered once, evaluated by `Doctor.evaluate` (a pure function,
/// so tests can give findings of their own).
struct DoctorPCSCFindings: Sendable {
    /// nil when SCardEstablishContext answered.
    var contextError: PCSCError?
    var readers: [String] = []
    /// The reader checked: `--reader`, else the first whose name suggests an ACR122.
    var reader: String?
    /// Why `--reader` matched nothing, if it did not.
    var selectionError: String?
    var cardPresent = false
    var atr: [UInt8] = []
    /// The escape code under FEATURE_CCID_ESC_COMMAND (tag 0x13), nil when not announced.
    var announcedEscapeCode: UInt32?
    /// The CM_IOCTL_GET_FEATURE_REQUEST answer as it came, nil when the request failed.
    var featureList: [UInt8]?
    /// Why the DIRECT connection or the feature request failed.
    var directError: String?
    /// The escape code that carried the firmware-version pseudo-APDU.
    var workingEscapeCode: UInt32?
    /// libccid refused 0x42000001 (SCARD_E_NOT_TRANSACTED, docs/cases.md P09).
    var escapeRefused = false
    /// Why no escape code worked otherwise.
    var escapeError: String?
    var firmware: ACR122FirmwareVersion?
    /// Whether the firmware came through SCardTransmit (card present) rather than an escape command.
    var firmwareViaTransmit = false
    var firmwareError: String?
    /// Whether the DIRECT connection was refused because another program keeps the reader
    /// (SCARD_E_SHARING_VIOLATION: exclusive access; SCARD_E_TIMEOUT: a transaction it holds).
    var heldByAnotherProgram = false
    var piccParameter: UInt8?
    var piccError: String?
    /// SCARD_ATTR_VENDOR_NAME on the DIRECT connection (the USB manufacturer string under
    /// libccid), nil when not answered.
    var vendorName: String?

    /// Asks pcscd (each call bounded by the call watchdog in the binary).
    static func gather(readerArgument: String?, system: DoctorSystem) -> DoctorPCSCFindings {
        var findings = DoctorPCSCFindings()
        let context: PCSCContext
        do {
            context = try CallWatchdog.shared.guarding("SCardEstablishContext") { () throws(PCSCError) in try PCSCContext() }
        } catch {
            findings.contextError = error
            return findings
        }
        defer { try? context.release() }
        do {
            findings.readers = try CallWatchdog.shared.guarding("SCardListReaders") { () throws(PCSCError) in try context.listReaders() }
        } catch where error == .noReadersAvailable {
            findings.readers = []
        } catch {
            findings.contextError = error
            return findings
        }
        if let readerArgument {
            do {
                findings.reader = try selectReader(readerArgument, in: findings.readers)
            } catch {
                findings.selectionError = "\(error)"
                return findings
            }
        } else {
            findings.reader = findings.readers.first { ACR122Detection.nameSuggestsACR122($0) }
        }
        guard let reader = findings.reader else { return findings }
        if let state = try? readerStates(context, [reader]).first {
            findings.cardPresent = state.eventFlags.contains(.present)
            findings.atr = state.atr
        }
        // DIRECT: the driver's features, then the escape path (ACR122Link.open tries the codes).
        do {
            let handle = try CallWatchdog.shared.guarding("SCardConnect") { () throws(PCSCError) in
                try context.connect(to: reader, share: .direct, protocols: [])
            }
            defer { try? handle.disconnect(.leave) }
            findings.vendorName = try? CallWatchdog.shared.guarding("SCardGetAttrib") { () throws(PCSCError) in try handle.vendorName() }
            let channel = GuardedChannel(handle)
            if let reply = try? channel.control(code: ACR122ControlCode.getFeatureRequest, []) {
                findings.featureList = reply
                findings.announcedEscapeCode = (try? PCSCFeatureList(parsing: reply))?.escapeCommandCode
            }
            do {
                let link = try ACR122Link.open(channel: channel, readerName: reader, path: .escape)
                findings.workingEscapeCode = link.escapeCode
                findings.firmware = link.firmware
                read(link, into: &findings)
            } catch ACR122Error.escapeCommandsNotEnabled {
                findings.escapeRefused = true
            } catch let ACR122Error.notAnACR122(_, firmware) {
                findings.firmware = try? ACR122FirmwareVersion(parsing: Array(firmware.utf8))
                findings.firmwareError = "the firmware string \"\(firmware)\" does not name an ACR122U"
            } catch {
                findings.escapeError = "\(error)"
            }
        } catch {
            findings.directError = "\(error)"
            if error == .sharingViolation || error == .timeout { findings.heldByAnotherProgram = true }
        }
        // Without escape commands, a card present still lets pseudo-APDUs through SCardTransmit.
        if findings.firmware == nil && findings.cardPresent {
            do {
                let handle = try CallWatchdog.shared.guarding("SCardConnect") { () throws(PCSCError) in
                    try context.connect(to: reader, share: .shared, protocols: .any)
                }
                defer { try? handle.disconnect(.leave) }
                let link = try ACR122Link.open(channel: GuardedChannel(handle), readerName: reader)
                findings.firmware = link.firmware
                findings.firmwareViaTransmit = true
                read(link, into: &findings)
            } catch {
                findings.firmwareError = findings.firmwareError ?? "\(error)"
            }
        }
        return findings
    }

    /// What ``ReaderVariantClassifier`` reads.
    var variantEvidence: ReaderVariantEvidence {
        ReaderVariantEvidence(
            readerName: reader, featureList: featureList, workingEscapeCode: workingEscapeCode,
            firmware: firmware?.text, atr: atr, vendorName: vendorName)
    }

    private static func read(_ link: ACR122Link, into findings: inout DoctorPCSCFindings) {
        do {
            findings.piccParameter = try link.piccOperatingParameter().rawValue
        } catch {
            findings.piccError = "\(error)"
        }
    }
}

/// The checks, from the findings.
enum Doctor {
    static let blacklistFix = """
        create /etc/modprobe.d/blacklist-pn533.conf with the three lines `blacklist pn533_usb`, `blacklist pn533`, `blacklist nfc`, then run `rmmod pn533_usb pn533 nfc` (or unplug and replug the reader) and `systemctl restart pcscd`
        """
    static let installFix = "install it: `apt-get install pcscd libccid pcsc-tools` (Debian/Ubuntu)"

    static func hex32(_ value: UInt32) -> String { ReaderRestore.hex32(value) }

    static func driverName(_ code: UInt32) -> String {
        switch code {
        case ACR122ControlCode.ccidEscape: "CCID driver (libccid)"
        case ACR122ControlCode.acsccidEscape: "ACS driver (acsccid)"
        default: "an unknown driver"
        }
    }

    /// The ifdDriverOptions edit: the current value with bit 0x0001 set, other bits kept.
    /// - Returns: the new value as written in the file (`0x` and four hex digits), nil when
    ///   `current` is not a number.
    static func enablingEscape(_ current: String) -> String? {
        let text = current.lowercased()
        let value = text.hasPrefix("0x") ? UInt32(text.dropFirst(2), radix: 16) : UInt32(text)
        guard let value else { return nil }
        let digits = String(value | 0x0001, radix: 16, uppercase: true)
        return "0x" + String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }

    static func escapeFix(system: DoctorSystem) -> String {
        let file = DoctorSystem.libccidPlist
        guard let current = system.libccidDriverOptions else {
            return "set ifdDriverOptions to 0x0001 in the CCID driver's Info.plist (\(DoctorSystem.ccidBundle)/Contents/Info.plist; on Debian a symlink to \(file)), then run `systemctl restart pcscd`"
        }
        guard let new = enablingEscape(current) else {
            return "in \(file), the <string> after <key>ifdDriverOptions</key> is \"\(current)\", not a number: set it to 0x0001, then run `systemctl restart pcscd`"
        }
        if new == current.uppercased().replacingOccurrences(of: "0X", with: "0x") {
            return "\(file) already sets ifdDriverOptions to \(current) (escape commands on): pcscd has not read it since; run `systemctl restart pcscd`"
        }
        return "edit \(file): after <key>ifdDriverOptions</key>, change <string>\(current)</string> to <string>\(new)</string> (bit 0x0001 enables escape commands; the other bits are kept), then run `systemctl restart pcscd`"
    }

    static func evaluate(system: DoctorSystem, pcsc: DoctorPCSCFindings) -> [DoctorCheck] {
        var checks: [DoctorCheck] = []
        func add(_ check: String, _ verdict: DoctorCheck.Verdict, _ detail: String, fix: String? = nil) {
            checks.append(DoctorCheck(check: check, verdict: verdict, detail: detail, fix: verdict == .ok ? nil : fix))
        }

        // pcscd installed
        if let binary = system.pcscdBinary {
            add("pcscd installed", .ok, binary)
        } else {
            add("pcscd installed", pcsc.contextError == nil ? .warning : .fail,
                "no pcscd in /usr/sbin or PATH" + (pcsc.contextError == nil ? " (a pcscd answers anyway, e.g. a private one)" : ""),
                fix: installFix)
        }

        // pcscd running, and which socket
        let socket = system.socket
        let viaVariable = system.environment["PCSCLITE_CSOCK_NAME"].map { !$0.isEmpty } ?? false
        let socketText = socket + (viaVariable ? " (PCSCLITE_CSOCK_NAME)" : " (the default socket)")
        let processes = system.pcscdProcesses
        // Every pcscd on the machine is listed; each serves its own socket, so one running is not
        // proof that the socket above is served.
        let processText = processes.isEmpty
            ? "no pcscd process on this machine"
            : "pcscd processes on this machine: pid " + processes.map(String.init).joined(separator: ", ") + " (each serves its own socket)"
        if let error = pcsc.contextError {
            let fix: String
            if error.isServiceLost {
                fix = viaVariable
                    ? "start the pcscd behind \(socket), or unset PCSCLITE_CSOCK_NAME to use the system pcscd"
                    : "start it: `systemctl start pcscd.socket` (or `systemctl start pcscd`; `pcscd --foreground --debug` shows why it stops)"
            } else {
                fix = error.remedy ?? "check `systemctl status pcscd` and `journalctl -u pcscd`"
            }
            add("pcscd running", .fail, "SCardEstablishContext on \(socketText) failed: \(error.name) (0x\(String(error.code, radix: 16, uppercase: true))); \(processText)", fix: fix)
        } else {
            add("pcscd running", .ok, "SCardEstablishContext answered on \(socketText); \(processText)")
        }

        let usb = system.usbReaders
        let modules = system.loadedKernelNFCModules
        let pcscUsable = pcsc.contextError == nil

        // the reader in PC/SC
        let readerListed = pcsc.reader != nil
        if !pcscUsable {
            add("reader in PC/SC", .skipped, "pcscd is not answering")
        } else if let error = pcsc.selectionError {
            add("reader in PC/SC", .fail, error, fix: "give --reader an index or a part of a name from `secbridge readers`")
        } else if let reader = pcsc.reader {
            let byName = ACR122Detection.nameSuggestsACR122(reader)
            let confirmed = pcsc.firmware?.isACR122U ?? false
            var detail = reader
            if byName { detail += " (ACR122-class name)" }
            if let firmware = pcsc.firmware { detail += confirmed ? "; firmware \(firmware.text) confirms an ACR122U" : "; firmware \(firmware.text) is not an ACR122U" }
            if !byName && !confirmed && pcsc.firmware == nil { detail += "; not confirmed as an ACR122U (no firmware string)" }
            add("reader in PC/SC", pcsc.firmware != nil && !confirmed ? .fail : .ok, detail,
                fix: "this reader is not an ACR122U (PN532 behind ACS firmware): card emulation needs one; reader sessions still work")
        } else {
            let listed = pcsc.readers.isEmpty ? "pcscd lists no readers" : "pcscd lists " + pcsc.readers.joined(separator: ", ") + ", none ACR122-class by name (use --reader to check one of them)"
            add("reader in PC/SC", .fail, listed,
                fix: usb.isEmpty ? "plug in the ACR122U (`lsusb` should show 072f:2200)" : "see the USB check below")
        }

        // the USB device and the kernel's NFC modules
        let usbCheck = "USB device"
        if usb.isEmpty {
            if readerListed {
                add(usbCheck, .skipped, "no USB 072F:2200 or 072F:90CC in /sys/bus/usb/devices: the reader in PC/SC is not a USB ACR122U here (simulated, or another bus)")
            } else {
                add(usbCheck, .fail, "no USB 072F:2200 (ACR122U) or 072F:90CC (Touchatag) in /sys/bus/usb/devices",
                    fix: "plug in the reader; if `lsusb` does not list 072f:2200 either, try another cable or port")
            }
        } else {
            let devices = usb.map { "\($0.name) \($0.id) at \($0.device)" }.joined(separator: ", ")
            if !modules.isEmpty && !readerListed {
                add(usbCheck, .fail, "\(devices) is present but not in PC/SC; kernel modules loaded: \(modules.joined(separator: ", ")) (they claim the reader before pcscd can)", fix: blacklistFix)
            } else if !modules.isEmpty {
                add(usbCheck, .warning, "\(devices); kernel modules loaded: \(modules.joined(separator: ", ")) (they may claim the reader when it is replugged)", fix: blacklistFix)
            } else if !readerListed && pcscUsable {
                add(usbCheck, .fail, "\(devices) is present but not in PC/SC, and no kernel NFC module is loaded",
                    fix: "check that a driver is installed (\(DoctorSystem.ccidBundle), `apt-get install libccid`), then `systemctl restart pcscd` and replug; `journalctl -u pcscd` shows what pcscd saw")
            } else {
                add(usbCheck, .ok, devices)
            }
        }

        guard pcscUsable, let reader = pcsc.reader else {
            for check in ["driver", "escape commands", "firmware", "variant", "PICC parameter", "card in the field"] {
                add(check, .skipped, pcscUsable ? "no ACR122-class reader in PC/SC" : "pcscd is not answering")
            }
            return checks
        }

        // Another program keeps the reader: nothing is wrong with it, and reset or a replug would not help.
        let heldFix = "another program holds the reader (exclusive access, or a PC/SC transaction it keeps): close it (pcsc_scan, a browser or a middleware that keeps the card) and run `secbridge doctor` again"
        // which driver serves it
        let hasCCID = system.exists(DoctorSystem.ccidBundle)
        let hasACS = system.exists(DoctorSystem.acsccidBundle)
        let bundles = [hasCCID ? "ifd-ccid.bundle" : nil, hasACS ? "ifd-acsccid.bundle" : nil].compactMap { $0 }
        let bundleText = bundles.isEmpty ? "no driver bundle in /usr/lib/pcsc/drivers" : "installed: " + bundles.joined(separator: ", ")
        if let error = pcsc.directError {
            add("driver", .fail, "SCardConnect DIRECT to \(reader) failed: \(error); \(bundleText)",
                fix: pcsc.heldByAnotherProgram
                    ? heldFix
                    : "close other programs that hold the reader exclusively, or run `secbridge reset`, then unplug and replug it")
        } else if let code = pcsc.announcedEscapeCode {
            add("driver", .ok, "\(driverName(code)): escape code \(hex32(code)) (CM_IOCTL_GET_FEATURE_REQUEST, tag 0x13); \(bundleText)")
        } else {
            add("driver", pcsc.workingEscapeCode == nil ? .warning : .ok,
                "no escape code announced (CM_IOCTL_GET_FEATURE_REQUEST has no tag 0x13: libccid without ifdDriverOptions 0x0001, or another driver)"
                    + (pcsc.workingEscapeCode.map { "; \(hex32($0)) works anyway" } ?? "") + "; \(bundleText)",
                fix: escapeFix(system: system))
        }

        // escape commands
        if pcsc.directError != nil {
            add("escape commands", .skipped, "no DIRECT connection")
        } else if let code = pcsc.workingEscapeCode {
            add("escape commands", .ok, "SCardControl \(hex32(code)) carries pseudo-APDUs")
        } else if pcsc.escapeRefused {
            add("escape commands", .fail,
                "refused: SCardControl 0x42000001 gave SCARD_E_NOT_TRANSACTED (0x80100016); libccid allows them only with ifdDriverOptions bit 0x0001 (the reader then works only while a card is present)",
                fix: escapeFix(system: system))
        } else {
            add("escape commands", .fail, pcsc.escapeError ?? pcsc.firmwareError ?? "no escape code answered",
                fix: "check that this is an ACR122U, then " + escapeFix(system: system))
        }

        // firmware and its quirks
        if let firmware = pcsc.firmware {
            let number = (firmware.major ?? 0) * 100 + (firmware.minor ?? 0)
            var notes: [String] = []
            var verdict: DoctorCheck.Verdict = firmware.isACR122U ? .ok : .fail
            var fix: String? = firmware.isACR122U ? nil : "card emulation needs an ACR122U (PN532 behind ACS firmware)"
            if firmware.major != nil && number < 206 {
                verdict = .warning
                notes.append("libccid refuses ACR122U firmware below 2.06 unless driver option 0x0004 is set")
                fix = "if the reader disappears from PC/SC, OR 0x0004 into ifdDriverOptions in \(DoctorSystem.libccidPlist) and `systemctl restart pcscd`"
            }
            if (214...216).contains(number) {
                verdict = .warning
                notes.append("2.14–2.16 answer one command late over raw USB (libnfc's acr122_usb driver); the PC/SC path used here works")
                fix = "use the reader through pcscd (libnfc: the acr122_pcsc driver), not raw USB"
            }
            if number == 215 {
                notes.append("2.15 units reportedly never get detected as targets: card emulation may not work on this unit")
            }
            notes.append("card emulation on an ACR122U is timing-fragile: a terminal may need a second try; if the reader stops answering, `secbridge reset`, then unplug and replug")
            add("firmware", verdict, "\(firmware.text)\(firmware.version.map { " (version \($0))" } ?? "")\(pcsc.firmwareViaTransmit ? " through SCardTransmit (card present)" : ""); " + notes.joined(separator: "; "), fix: fix)
        } else {
            add("firmware", pcsc.escapeRefused ? .skipped : .fail,
                pcsc.escapeRefused ? "FF 00 48 00 00 needs escape commands without a card" : (pcsc.firmwareError ?? "FF 00 48 00 00 got no answer"),
                fix: pcsc.escapeRefused
                    ? "enable escape commands (see the escape commands check), or place a card on the reader and run `secbridge doctor` again"
                    : pcsc.heldByAnotherProgram ? heldFix : "run `secbridge reset`; if that fails, unplug and replug the reader")
        }

        // the variant: which kind of unit (genuine, clone or Touchatag-era: docs/acr122-clones.md §3)
        // behind which driver, what works on it
        let unit = ACR122Unit.classify(vendorName: pcsc.vendorName, atr: pcsc.cardPresent ? pcsc.atr : [])
        var evidence = pcsc.variantEvidence
        evidence.atr = pcsc.cardPresent ? pcsc.atr : []
        let variant = ReaderVariantClassifier.classify(evidence)
        if pcsc.directError != nil && pcsc.firmware == nil && unit == .genuine {
            add("variant", .skipped, "no DIRECT connection and no firmware string")
        } else {
            add("variant", variant.doesNotWork.isEmpty ? .ok : .warning, variant.detail, fix: variant.unitFix ?? escapeFix(system: system))
        }

        // PICC operating parameter
        if let picc = pcsc.piccParameter {
            if picc == 0xFF {
                add("PICC parameter", .ok, "FF 00 50 00 00 → 90 FF (automatic polling on, the default)")
            } else {
                add("PICC parameter", .warning,
                    "FF 00 50 00 00 → 90 \([picc].hexString): automatic polling \(picc & 0x80 == 0 ? "off" : "partly off") (a card emulation or PN532 session was interrupted); PC/SC sees no cards until it is FF",
                    fix: "run `secbridge reset` (sends FF 00 51 FF 00 among others)")
            }
        } else {
            add("PICC parameter", .skipped, pcsc.piccError ?? "no pseudo-APDU path (see escape commands)")
        }

        // a card or tag in the field
        if case .pseudoCard(let atr) = unit {
            add("card in the field", .ok, "none: the reader shows its pseudo-card (ATR \(atr.hexString)), which is no card (place a card or tag to check reading with `secbridge read`)")
        } else if pcsc.cardPresent {
            var detail = "present, ATR \(pcsc.atr.hexString)"
            if let atr = try? ATR(parsing: pcsc.atr, requireValidChecksum: false),
               let storage = (try? atr.decodedHistoricalBytes())?.contactlessStorageCard {
                detail += " (" + (storage.cardNameText ?? "contactless storage card") + ")"
            } else if pcsc.atr.starts(with: [0x3B]) && pcsc.atr.count >= 4 && pcsc.atr[2] == 0x80 && pcsc.atr[3] == 0x01 {
                detail += " (ISO/IEC 14443-4 card)"
            }
            add("card in the field", .ok, detail)
        } else {
            add("card in the field", .ok, "none (place a card or tag to check reading; card emulation needs the field empty)")
        }
        return checks
    }

    static func json(_ checks: [DoctorCheck]) -> JSONValue {
        .array(checks.map { check in
            .object([
                ("check", .string(check.check)), ("verdict", .string(check.verdict.rawValue)),
                ("detail", .string(check.detail)), ("fix", check.fix.map { .string($0) } ?? .null),
            ])
        })
    }
}
