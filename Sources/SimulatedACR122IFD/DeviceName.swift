/// The `DEVICENAME` of a simulated ACR122U in a pcscd `reader.conf` file, parsed.
///
/// pcscd hands the string to `IFDHCreateChannelByName` unchanged. Syntax: a directory, then
/// options, each introduced by a colon:
///
///     DEVICENAME /tmp/secbridge-acr122.42/a:personality=ccid-escape-enabled:field=desk
///
/// | Part | Meaning | Default |
/// |---|---|---|
/// | `<directory>` | absolute path, no `:` or whitespace; created if missing (mode 0700). The driver serves the control socket `<directory>/control.sock` in it | required |
/// | `personality=<name>` | the device's personality at start, one of the registry ``ACR122Personality/all`` (`ccid-escape-enabled`, `ccid-escape-disabled`, `acs-driver`, `legacy-t0`, `acr122u215`, …) | `ccid-escape-enabled` |
/// | `field=<name>` | the RF field: readers of one pcscd whose `field` is the same share one field (a peer placed through either is seen by both; one reader's target is the other's card) | the directory, so each reader has a field of its own |
/// | `timescale=<number>` | wall-clock seconds per simulated second, 0 … 1000 (a decimal such as `0.01`): every device wait (the 5 s MCU timeout, libccid's 30 s escape timeout, activation attempts) is scaled by it. Tests use a small scale so that no test waits out a real device timeout; readers sharing a field must give the same scale | `1` (real time) |
/// | `clock=<name>` | the reader runs on the virtual time of this process named `<name>` (`VirtualTime/name`, PCSCCore) instead of scaled wall-clock time: for in-process desks (`SimulatedDesk`), never inside pcscd, where no such clock exists; not with `timescale=`; readers sharing a field must name the same clock | none (wall-clock time) |
/// | `control=<socket or none>` | `socket`: serve the control socket. `none`: no control socket, and nothing is created in the directory (it names the reader and its default field only); peers cannot be placed and the reader is used through the entry points alone, as `secbridge replay --against simulated` does with a DIRECT transcript | `socket` |
///
/// `field` names are letters, digits, `-`, `_` and `.`. Each option may appear once. An unknown
/// option, a relative directory or a malformed option is rejected: the driver logs the reason to
/// pcscd's log and `IFDHCreateChannelByName` fails with IFD_COMMUNICATION_ERROR, so a typo never
/// gives a silently different reader.
struct DeviceName: Sendable, Hashable {
    /// The control endpoint's directory (absolute).
    var directory: String
    /// The personality name at start, or nil for the default.
    var personality: String?
    /// The shared-field name.
    var field: String
    /// Wall-clock seconds per simulated second (`timescale=`), or nil for real time.
    var timeScale: Double?
    /// The virtual clock's name (`clock=`), or nil for wall-clock time.
    var clock: String?
    /// Whether the driver serves the control socket (`control=socket`, the default) or not
    /// (`control=none`).
    var servesControlSocket: Bool

    /// The control socket: `<directory>/control.sock`.
    var socketPath: String { directory + "/" + Self.socketFileName }

    static let socketFileName = "control.sock"
    /// `sockaddr_un.sun_path` holds 108 bytes including the terminating NUL.
    static let maximumSocketPathLength = 107

    /// Parses a `DEVICENAME` string.
    /// - Throws: ``DeviceNameError`` naming the part that is wrong and what to write instead.
    init(parsing text: String) throws(DeviceNameError) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        let directory = parts[0]
        guard directory.hasPrefix("/") else {
            throw DeviceNameError(text, "the directory '\(directory)' must be an absolute path (e.g. /tmp/acr122-0)")
        }
        guard !directory.contains(where: { $0 == " " || $0 == "\t" || $0 == "\n" }) else {
            throw DeviceNameError(text, "the directory must not contain whitespace")
        }
        var trimmed = directory
        while trimmed.count > 1 && trimmed.hasSuffix("/") { trimmed.removeLast() }
        guard trimmed.utf8.count + 1 + Self.socketFileName.utf8.count <= Self.maximumSocketPathLength else {
            throw DeviceNameError(
                text, "the socket path \(trimmed)/\(Self.socketFileName) is longer than \(Self.maximumSocketPathLength) bytes (sockaddr_un); use a shorter directory")
        }
        self.directory = trimmed
        self.personality = nil
        self.timeScale = nil
        self.clock = nil
        self.field = trimmed
        self.servesControlSocket = true
        // An array, not a Set: a Set<String> is the first use of String: Hashable on the in-process
        // replay's start path, whose conformance look-up scans every conformance record
        // (0.38 M instructions; docs/benchmarks.md §11). There are four keys at most.
        var seen: [String] = []
        for option in parts.dropFirst() {
            guard let equals = option.firstIndex(of: "=") else {
                throw DeviceNameError(text, "option '\(option)' must be key=value (personality=…, field=…, timescale=…, clock=…, control=…)")
            }
            let key = String(option[..<equals])
            let value = String(option[option.index(after: equals)...])
            guard !seen.contains(key) else {
                throw DeviceNameError(text, "option '\(key)' is given twice")
            }
            seen.append(key)
            guard !value.isEmpty else { throw DeviceNameError(text, "option '\(key)' has an empty value") }
            switch key {
            case "personality":
                personality = value
            case "field":
                guard value.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" || $0 == ".") }) else {
                    throw DeviceNameError(text, "field name '\(value)' may hold only letters, digits, '-', '_' and '.'")
                }
                field = "field:" + value
            case "timescale":
                guard let scale = Self.timeScale(value) else {
                    throw DeviceNameError(
                        text, "timescale '\(value)' must be a decimal number from 0 to 1000, e.g. timescale=0.01 (1 is real time)")
                }
                timeScale = scale
            case "clock":
                guard value.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" || $0 == ".") }) else {
                    throw DeviceNameError(text, "clock name '\(value)' may hold only letters, digits, '-', '_' and '.' (a VirtualTime's name, e.g. vt-123-1)")
                }
                clock = value
            case "control":
                guard value == "socket" || value == "none" else {
                    throw DeviceNameError(text, "control '\(value)' must be socket (serve the control socket) or none")
                }
                servesControlSocket = value == "socket"
            default:
                throw DeviceNameError(
                    text,
                    "unknown option '\(key)': the options are personality=<name>, field=<name>, timescale=<number>, clock=<name> and control=socket|none")
            }
        }
        if clock != nil && timeScale != nil {
            throw DeviceNameError(text, "give clock=<name> (virtual time) or timescale=<number> (scaled wall-clock time), not both")
        }
    }
}

extension DeviceName {
    /// A time scale as the `timescale=` option and the `timescale value=` control verb write it: a
    /// decimal number (an exponent allowed) from 0 to 1000, -0 read as 0; nil for anything else.
    static func timeScale(_ text: String) -> Double? {
        guard text.allSatisfy({ $0.isASCII && ($0.isNumber || ".eE+-".contains($0)) }), let scale = Double(text),
            scale >= 0, scale <= 1000
        else { return nil }
        return scale == 0 ? 0 : scale
    }
}

/// A `DEVICENAME` the driver cannot use.
struct DeviceNameError: Error, Sendable, Hashable, CustomStringConvertible {
    var deviceName: String
    var reason: String

    init(_ deviceName: String, _ reason: String) {
        self.deviceName = deviceName
        self.reason = reason
    }

    var description: String { "DEVICENAME '\(deviceName)': \(reason)" }
}
