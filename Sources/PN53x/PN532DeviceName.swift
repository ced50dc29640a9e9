/// A PN532 board's serial device as users name it: `tty:` and a device path (`tty:/dev/ttyUSB0`),
/// or nfcpy's short form, a name under /dev with its `tty` left off (`tty:USB0` is /dev/ttyUSB0,
/// `tty:AMA0` is /dev/ttyAMA0) or a pseudo-terminal (`tty:pts/3` is /dev/pts/3). nfcpy's device
/// table writes the driver after a second colon (`tty:USB0:pn532`, docs/pn532-uart.md §7): that
/// form is taken too, and in the short form any driver but `pn532` is refused (a path may hold
/// colons of its own, as /dev/serial/by-path names do).
///
/// `--device` on the command line, `$SECBRIDGE_READER` and a session's options are read with it,
/// so each takes the same spellings and refuses the same mistakes.
public struct PN532DeviceName: Sendable, Hashable, CustomStringConvertible {
    /// The device node, e.g. `/dev/ttyUSB0`.
    public let path: String

    /// The name in its long form, `tty:/dev/ttyUSB0`: the reader name a session and a transcript give.
    public var description: String { "tty:" + path }

    /// Whether `name` is meant as a serial device (it starts with `tty:`), right or wrong; any other
    /// name is a PC/SC reader's.
    public static func isSerial(_ name: String) -> Bool { name.hasPrefix("tty:") }

    /// Reads `tty:PATH` or `tty:NAME`.
    /// - Throws: ``PN532DeviceNameError`` naming the mistake and the form to write instead: a name
    ///   without `tty:`, `tty:` with nothing after it (or a path that ends in `/` or holds a NUL
    ///   byte), a relative path other than nfcpy's short form, and a driver other than `pn532`.
    public init(parsing name: String) throws(PN532DeviceNameError) {
        guard Self.isSerial(name) else { throw PN532DeviceNameError(name: name, reason: .notSerial) }
        var rest = String(name.dropFirst(4))
        // A path may hold colons (/dev/serial/by-path/pci-0000:00:14.0-usb-0:1:1.0-port0): after
        // one, only `:pn532` is a driver; in the short form any colon starts nfcpy's driver field.
        if rest.hasSuffix(":pn532") {
            rest.removeLast(6)
        } else if !rest.hasPrefix("/"), let colon = rest.firstIndex(of: ":") {
            throw PN532DeviceNameError(name: name, reason: .driver(String(rest[rest.index(after: colon)...])))
        }
        guard !rest.isEmpty, !rest.contains("\0"), !rest.hasSuffix("/") else {
            throw PN532DeviceNameError(name: name, reason: .noDevice)
        }
        if rest.hasPrefix("/") {
            path = rest
        } else if rest.hasPrefix("pts/") {
            path = "/dev/" + rest
        } else if rest.contains("/") {
            throw PN532DeviceNameError(name: name, reason: .relativePath)
        } else {
            path = "/dev/tty" + rest
        }
    }
}

/// A serial device name that ``PN532DeviceName/init(parsing:)`` cannot take; its description says
/// what was wrong and what to write.
public struct PN532DeviceNameError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What was wrong with a name.
    public enum Reason: Sendable, Equatable {
        /// It does not start with `tty:`.
        case notSerial
        /// `tty:` names no device node.
        case noDevice
        /// A relative path that is not nfcpy's short form.
        case relativePath
        /// nfcpy's driver field names a chip other than the PN532 (`tty:USB0:arygon`).
        case driver(String)
    }
    /// The name as given.
    public let name: String
    /// What was wrong with it.
    public let reason: Reason

    /// An error for `name`, wrong for `reason`.
    public init(name: String, reason: Reason) {
        self.name = name
        self.reason = reason
    }

    public var description: String {
        switch reason {
        case .notSerial:
            "'\(name)' is not a serial device: write tty:/dev/ttyUSB0 (a path) or tty:USB0 (nfcpy's form, /dev/ttyUSB0)"
        case .noDevice:
            "'\(name)' names no device: write tty:/dev/ttyUSB0 or tty:USB0"
        case .relativePath:
            "'\(name)': a relative name is nfcpy's short form (tty:USB0 for /dev/ttyUSB0); give a device path as tty:/dev/…"
        case .driver(let driver):
            "'\(name)' names the driver '\(driver)': only a PN532 board is supported (tty:USB0:pn532, or leave the driver off)"
        }
    }
}
