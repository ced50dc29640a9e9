import Foundation

/// One reader of a pcscd `reader.conf` file: a driver library and the device it opens.
///
/// Rendered as the keywords pcscd reads (pcsc-lite `reader.conf(5)`):
///
///     FRIENDLYNAME "Virtual PCD"
///     DEVICENAME   /dev/null:0x9A10
///     LIBPATH      /usr/lib/pcsc/drivers/serial/libifdvpcd.so
///     CHANNELID    0x9A10
///
/// pcscd names the reader `FRIENDLYNAME XX YY` (`XX` tells apart readers of the same name, `YY` is
/// the slot), e.g. `Virtual PCD 00 00`. `DEVICENAME`, when present, reaches the driver's
/// `IFDHCreateChannelByName` as a string; otherwise `IFDHCreateChannel` gets `CHANNELID`.
///
/// A bad `LIBPATH` makes the whole daemon exit, so ``validate()`` checks the library exists first.
public struct ReaderConfEntry: Sendable, Hashable, CustomStringConvertible {
    /// The reader name's prefix, as clients see it before the ` XX YY` suffix.
    public var friendlyName: String
    /// The string handed to `IFDHCreateChannelByName`, or `nil` to omit `DEVICENAME`.
    public var deviceName: String?
    /// The absolute path of the IFD handler shared library.
    public var libraryPath: String
    /// The channel number handed to `IFDHCreateChannel`, or `nil` to omit `CHANNELID`.
    public var channelID: Int?

    /// An entry for pcscd's reader.conf: `FRIENDLYNAME`, `DEVICENAME` (omitted when nil), `LIBPATH`
    /// and `CHANNELID` (omitted when nil).
    public init(friendlyName: String, deviceName: String? = nil, libraryPath: String, channelID: Int? = nil) {
        self.friendlyName = friendlyName
        self.deviceName = deviceName
        self.libraryPath = libraryPath
        self.channelID = channelID
    }

    /// The library of vsmartcard's vpcd driver as Debian installs it (package `vsmartcard-vpcd`).
    public static let vpcdLibraryPath = "/usr/lib/pcsc/drivers/serial/libifdvpcd.so"

    /// The friendly name the harness gives the vpcd reader; clients see `Virtual PCD 00 00`.
    public static let vpcdFriendlyName = "Virtual PCD"

    /// A vpcd reader listening on TCP `port` (slot 0, `… 00 00`) and `port + 1` (slot 1,
    /// `… 00 01`); `vicc -P port` connects to slot 0.
    ///
    /// vpcd reads the port from `DEVICENAME /dev/null:0xPORT`; `CHANNELID` repeats it.
    public static func vpcd(port: UInt16, friendlyName: String = vpcdFriendlyName) -> ReaderConfEntry {
        ReaderConfEntry(
            friendlyName: friendlyName,
            deviceName: "/dev/null:0x" + String(port, radix: 16, uppercase: true),
            libraryPath: vpcdLibraryPath,
            channelID: Int(port)
        )
    }

    /// The entry in reader.conf syntax, one keyword a line, ending with a newline.
    public var rendered: String {
        var lines = ["FRIENDLYNAME \"\(friendlyName)\""]
        if let deviceName { lines.append("DEVICENAME   \(deviceName)") }
        lines.append("LIBPATH      \(libraryPath)")
        if let channelID { lines.append("CHANNELID    0x" + String(channelID, radix: 16, uppercase: true)) }
        return lines.joined(separator: "\n") + "\n"
    }

    public var description: String { "\"\(friendlyName)\" (\(libraryPath))" }

    /// Checks what would make pcscd reject the entry or exit.
    /// - Throws: ``HarnessError/Code/invalidConfiguration`` for an empty or quoted friendly name,
    ///   whitespace in `DEVICENAME`, a relative `LIBPATH` or a negative `CHANNELID`;
    ///   ``HarnessError/Code/missingDependency`` when the library does not exist.
    public func validate() throws {
        func reject(_ why: String) -> HarnessError {
            HarnessError(code: .invalidConfiguration, reason: "reader.conf entry \(self): \(why)")
        }
        if friendlyName.isEmpty || friendlyName.contains(where: { $0 == "\"" || $0.isNewline }) {
            throw reject("FRIENDLYNAME must be non-empty, without quotes or line breaks")
        }
        if let deviceName, deviceName.isEmpty || deviceName.contains(where: { $0.isWhitespace }) {
            throw reject("DEVICENAME must be non-empty and without whitespace")
        }
        if !libraryPath.hasPrefix("/") || libraryPath.contains(where: { $0.isWhitespace }) {
            throw reject("LIBPATH must be an absolute path without whitespace")
        }
        if let channelID, channelID < 0 { throw reject("CHANNELID must not be negative") }
        guard FileManager.default.fileExists(atPath: libraryPath) else {
            let hint = libraryPath == Self.vpcdLibraryPath
                ? "install vsmartcard-vpcd: run scripts/install-deps.sh"
                : "build the driver before starting pcscd"
            throw HarnessError(code: .missingDependency, reason: "driver library \(libraryPath) does not exist: \(hint)")
        }
    }
}
