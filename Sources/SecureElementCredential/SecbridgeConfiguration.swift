import Foundation
import PN53x

/// secbridge's configuration file, `$XDG_CONFIG_HOME/secbridge/config`
/// (`~/.config/secbridge/config` when XDG_CONFIG_HOME is unset or empty, as the XDG Base Directory
/// Specification says), read by ``CredentialSession/startSession()``.
///
/// One setting per line, `key = value`: spaces around the `=` are optional, the value runs to the
/// end of the line (trimmed, so it may hold spaces, as PC/SC reader names do). Blank lines and lines
/// whose first non-blank character is `#` are comments; a `#` after a value is part of the value.
/// The keys:
/// - `reader`: the reader sessions emulate on, as `$SECBRIDGE_READER` takes it: a PC/SC reader's
///   name (e.g. `ACS ACR122U PICC Interface 00 00`; `secbridge list` shows them), or a PN532
///   board on a serial line, `tty:/dev/ttyUSB0` or nfcpy's `tty:USB0` (`PN532DeviceName`, PN53x;
///   docs/pn532-uart.md §7), which the session drives with ``SerialPN532EmulationBackend``.
///   `$SECBRIDGE_READER`, when set and not empty, wins over it.
///
///     # ~/.config/secbridge/config
///     reader = tty:USB0
///
/// No file is no configuration. Anything else is refused with a ``SecbridgeConfigurationError``
/// that names the file, the line and what to write: a line without `=`, an unknown key, a key
/// given twice, an empty or quoted value, a `tty:` name that names no device, a file that is
/// larger than ``maximumSize``, not UTF-8, or unreadable.
public struct SecbridgeConfiguration: Sendable, Hashable {
    /// The `reader` setting, nil when the file has none.
    public var reader: String?
    /// Where ``reader`` was read, `FILE:LINE` (e.g. `/home/ada/.config/secbridge/config:2`); nil
    /// when it was not read from a file.
    public var readerOrigin: String?

    /// The keys the file takes.
    public static let keys = ["reader"]
    /// The largest file read: 64 KiB (a configuration file of a few lines; anything larger is not one).
    public static let maximumSize = 65_536

    /// A configuration with the settings given (none by default: what a missing file gives).
    public init(reader: String? = nil, readerOrigin: String? = nil) {
        self.reader = reader
        self.readerOrigin = readerOrigin
    }

    /// Where the file is: `$XDG_CONFIG_HOME/secbridge/config`, else `$HOME/.config/secbridge/config`
    /// (the home directory from the password database when HOME is unset too).
    /// - Parameter environment: the variables (default: this process's).
    public static func path(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        directory(environment: environment) + "/config"
    }

    /// secbridge's configuration directory, which holds this file and the credential files:
    /// `$XDG_CONFIG_HOME/secbridge`, else `$HOME/.config/secbridge` (the home directory from the
    /// password database when HOME is unset or empty).
    static func directory(environment: [String: String]) -> String {
        let base = environment["XDG_CONFIG_HOME"].flatMap { $0.isEmpty ? nil : $0 }
            ?? ((environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()) + "/.config")
        return base + "/secbridge"
    }

    /// Reads the file at ``path(environment:)``; a file that does not exist gives no settings.
    /// - Throws: ``SecbridgeConfigurationError`` as ``init(parsing:file:)``, or when the file
    ///   cannot be read, is larger than ``maximumSize`` or is not UTF-8.
    public static func load(
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(SecbridgeConfigurationError) -> SecbridgeConfiguration {
        try load(file: path(environment: environment))
    }

    /// Reads `file`; a file that does not exist gives no settings.
    /// - Throws: as ``load(environment:)``.
    public static func load(file: String) throws(SecbridgeConfigurationError) -> SecbridgeConfiguration {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: file, isDirectory: &isDirectory) else { return SecbridgeConfiguration() }
        if isDirectory.boolValue {
            throw SecbridgeConfigurationError(file: file, line: nil, "is a directory; the configuration is a file of `key = value` lines (e.g. `reader = tty:/dev/ttyUSB0`)")
        }
        guard let handle = FileHandle(forReadingAtPath: file) else {
            throw SecbridgeConfigurationError(file: file, line: nil, "cannot be read (permissions?); make it readable (chmod u+r) or remove it")
        }
        defer { try? handle.close() }
        let data: Data
        do {
            data = try handle.read(upToCount: maximumSize + 1) ?? Data()
        } catch {
            throw SecbridgeConfigurationError(file: file, line: nil, "cannot be read: \(error.localizedDescription)")
        }
        guard data.count <= maximumSize else {
            throw SecbridgeConfigurationError(file: file, line: nil, "is larger than \(maximumSize) bytes: not a configuration file of `key = value` lines")
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw SecbridgeConfigurationError(file: file, line: nil, "is not UTF-8 text; write it as `key = value` lines (e.g. `reader = tty:/dev/ttyUSB0`)")
        }
        return try SecbridgeConfiguration(parsing: text, file: file)
    }

    /// Reads the settings of a configuration file's text (see the type's documentation).
    /// - Parameters:
    ///   - text: the file's content.
    ///   - file: its path, for ``readerOrigin`` and the errors.
    /// - Throws: ``SecbridgeConfigurationError`` naming `file`, the line and what to write.
    public init(parsing text: String, file: String) throws(SecbridgeConfigurationError) {
        self.init()
        var lineNumber = 0
        // A line ends at LF or CR LF (one Character in Swift, so split on newlines, not on "\n").
        for rawLine in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline) {
            lineNumber += 1
            let line = rawLine.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") { continue }
            func fail(_ message: String) -> SecbridgeConfigurationError {
                SecbridgeConfigurationError(file: file, line: lineNumber, message)
            }
            guard let equals = line.firstIndex(of: "=") else {
                throw fail("'\(line)' is not a setting: write `key = value`, e.g. `reader = tty:/dev/ttyUSB0` (a `#` starts a comment line)")
            }
            let key = line[..<equals].trimmingCharacters(in: .whitespaces)
            let value = line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            guard Self.keys.contains(key) else {
                let known = Self.keys.map { "`\($0)`" }.joined(separator: ", ")
                throw fail(key.isEmpty
                    ? "a setting without a key: write `key = value`; the keys are \(known)"
                    : "unknown key '\(key)'; the keys are \(known) (e.g. `reader = tty:/dev/ttyUSB0`)")
            }
            if let origin = readerOrigin {
                throw fail("`reader` is set a second time (first at \(origin)); keep one of them")
            }
            guard !value.isEmpty else {
                throw fail("`reader` has no value: write `reader = tty:/dev/ttyUSB0` (a PN532 board) or `reader = ` and a PC/SC reader's name (`secbridge list`), or remove the line")
            }
            if value.count >= 2, let first = value.first, first == value.last, first == "\"" || first == "'" {
                throw fail("`reader` is quoted: write the name without quotes, e.g. `reader = ACS ACR122U PICC Interface 00 00`")
            }
            if PN532DeviceName.isSerial(value) {
                do {
                    _ = try PN532DeviceName(parsing: value)
                } catch {
                    throw fail("`reader = \(value)`: \(error)")
                }
            }
            reader = value
            readerOrigin = "\(file):\(lineNumber)"
        }
    }
}

/// A configuration file ``SecbridgeConfiguration`` cannot use; its description is
/// `the configuration file FILE:LINE: what is wrong and what to write`.
public struct SecbridgeConfigurationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The file's path.
    public let file: String
    /// The line (from 1), nil for a problem with the whole file.
    public let line: Int?
    /// What is wrong, and what to write instead.
    public let message: String

    /// An error in `file` at `line`.
    public init(file: String, line: Int?, _ message: String) {
        self.file = file
        self.line = line
        self.message = message
    }

    /// `the configuration file FILE:LINE: message`, without `:LINE` for the whole file.
    public var description: String {
        "the configuration file \(file)\(line.map { ":\($0)" } ?? ""): \(message)"
    }
}
