import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The two simulated ACR122U readers every shared test pcscd has (see
/// ``TestEnvironment/standardExtraReaders``), and where to find their driver and control sockets.
///
/// Both readers are served by `libSecbridgeACR122IFD.so` (target SimulatedACR122IFD) and share one RF
/// field, so reader A's emulated card is a card in reader B's field and vice versa:
///
///     FRIENDLYNAME "ACS ACR122U PICC Interface"
///     DEVICENAME   /tmp/secbridge-acr122.<pid>/a:field=shared
///     LIBPATH      <build dir>/libSecbridgeACR122IFD.so
///
/// pcscd names them `ACS ACR122U PICC Interface 00 00` and `… 01 00` in the order it loads them,
/// which is not fixed: ``TestEnvironment/simulatedReaderA`` asks the driver.
public enum SimulatedReaders {
    /// The friendly name a real ACR122U has on the CCID driver.
    public static let friendlyName = "ACS ACR122U PICC Interface"
    /// The driver library's file name (SwiftPM product SecbridgeACR122IFD).
    public static let libraryFileName = "libSecbridgeACR122IFD.so"
    /// The environment variable that overrides the library's location.
    public static let libraryVariable = "SECBRIDGE_ACR122_IFD"
    /// Where an installed copy keeps the driver, relative to the prefix whose `bin/` holds the
    /// tools: `lib/secbridge` (scripts/install.sh).
    public static let installedLibraryDirectory = "lib/secbridge"
    /// The field the two readers share.
    public static let sharedFieldName = "shared"

    /// `/tmp/secbridge-acr122.<pid>`: the control directories of this process's readers.
    public static let baseDirectory: String = {
        let base = "/tmp/secbridge-acr122.\(getpid())"
        reapLeftovers()
        _ = ExitCleanup.register { try? FileManager.default.removeItem(atPath: base) }
        return base
    }()

    /// Reader A's control directory (`…/a`); its socket is `…/a/control.sock`.
    public static var directoryA: String { baseDirectory + "/a" }
    /// Reader B's control directory (`…/b`).
    public static var directoryB: String { baseDirectory + "/b" }

    /// The driver library: `$SECBRIDGE_ACR122_IFD`, else the first existing
    /// `libSecbridgeACR122IFD.so` next to the running executable (the test bundle sits in the build
    /// directory), in ``installedLibraryDirectory`` beside its directory (an installed copy:
    /// PREFIX/bin/secbridge-tools finds PREFIX/lib/secbridge/, as scripts/install.sh lays it out),
    /// or up to three directories above it, else `<repo>/.build/debug` or `release`.
    /// When none exists, the path next to the executable: ``ReaderConfEntry/validate()`` then
    /// reports it missing.
    public static let libraryPath: String = {
        if let override = ProcessInfo.processInfo.environment[libraryVariable], !override.isEmpty { return override }
        var candidates: [String] = []
        // /proc/self/exe names the running binary even when it was started through PATH.
        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
            ?? CommandLine.arguments.first ?? "."
        var directory = URL(fileURLWithPath: executable).standardizedFileURL
            .resolvingSymlinksInPath().deletingLastPathComponent()
        for level in 0..<4 {
            candidates.append(directory.appendingPathComponent(libraryFileName).path)
            if level == 0 {
                candidates.append(directory.deletingLastPathComponent()
                    .appendingPathComponent(installedLibraryDirectory).appendingPathComponent(libraryFileName).path)
            }
            directory = directory.deletingLastPathComponent()
        }
        if let root = HarnessPaths.repositoryRoot {
            for configuration in ["debug", "release"] {
                candidates.append(root.appendingPathComponent(".build/\(configuration)/\(libraryFileName)").path)
            }
        }
        return candidates.first { FileManager.default.fileExists(atPath: $0) } ?? candidates[0]
    }()

    /// The reader.conf entries of reader A and reader B, in real time.
    public static var readerConfEntries: [ReaderConfEntry] { readerConfEntries(timeScale: nil) }

    /// The time scale of the shared test pcscd's readers: a simulated second takes 10 ms, so the
    /// ACR122U's 5 s MCU timeout takes 50 ms and libccid's 30 s escape timeout 300 ms. No test
    /// waits out a real device timeout.
    public static let testTimeScale = 0.01

    /// `:timescale=FACTOR`, the simulated driver's DEVICENAME option for `scale`, or nothing for
    /// real time (nil).
    public static func timeScaleOption(_ scale: Double?) -> String { scale.map { ":timescale=\($0)" } ?? "" }

    /// The reader.conf entries of reader A and reader B, every device wait scaled by `timeScale`
    /// (the driver's `timescale=` DEVICENAME option; nil for real time), named `name` (libccid's
    /// `ACS ACR122U PICC Interface` by default; acsccid names the reader `ACS ACR122U`,
    /// docs/acr122-units.md §2).
    public static func readerConfEntries(timeScale: Double?, friendlyName name: String = friendlyName) -> [ReaderConfEntry] {
        [directoryA, directoryB].map { directory in
            ReaderConfEntry(friendlyName: name, deviceName: directory + ":field=" + sharedFieldName + timeScaleOption(timeScale),
                            libraryPath: libraryPath)
        }
    }

    /// The control client of reader A.
    public static var controlA: SimulatedReaderControl { SimulatedReaderControl(socketPath: directoryA + "/control.sock") }
    /// The control client of reader B.
    public static var controlB: SimulatedReaderControl { SimulatedReaderControl(socketPath: directoryB + "/control.sock") }

    /// Removes `/tmp/secbridge-acr122.<pid>` directories whose process is gone.
    static func reapLeftovers() {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/tmp")) ?? []
        for name in names where name.hasPrefix("secbridge-acr122.") {
            guard let pid = Int32(name.dropFirst("secbridge-acr122.".count)), pid != getpid() else { continue }
            if kill(pid, 0) != 0 && errno == ESRCH {
                try? FileManager.default.removeItem(atPath: "/tmp/" + name)
            }
        }
    }
}

extension TestEnvironment {
    /// Reader A's PC/SC name: `ACS ACR122U PICC Interface 00 00` or `… 01 00`.
    ///
    /// pcscd reads `reader.conf.d` in directory order, not by file name, so which of the two
    /// readers is loaded first (and named `… 00 00`) varies. The driver's `ping` reply tells: the
    /// reader with the lower `open-order` was opened, and named, first.
    public var simulatedReaderA: String { simulatedReaderNames.a }
    /// Reader B's PC/SC name (see ``simulatedReaderA``).
    public var simulatedReaderB: String { simulatedReaderNames.b }

    private var simulatedReaderNames: (a: String, b: String) {
        var names = readerNames.filter { $0.hasPrefix(SimulatedReaders.friendlyName + " ") }.sorted()
        if names.count < 2 {
            names = [SimulatedReaders.friendlyName + " 00 00", SimulatedReaders.friendlyName + " 01 00"]
        }
        let orderA = (try? SimulatedReaders.controlA.send("ping", timeout: .seconds(2)))?["open-order"].flatMap { Int($0) }
        let orderB = (try? SimulatedReaders.controlB.send("ping", timeout: .seconds(2)))?["open-order"].flatMap { Int($0) }
        if let orderA, let orderB, orderB < orderA { return (names[1], names[0]) }
        return (names[0], names[1])
    }
}

/// A reply of the simulated reader's control socket: `ok key=value …`.
public struct SimulatedReaderReply: Sendable, Hashable, CustomStringConvertible {
    /// The fields in order.
    public var fields: [(key: String, value: String)] {
        zip(keys, values).map { ($0, $1) }
    }
    private var keys: [String]
    private var values: [String]

    /// The value of `key`, or nil.
    public subscript(key: String) -> String? {
        keys.firstIndex(of: key).map { values[$0] }
    }

    /// The hex bytes of `key` (`"04 A1 B2 C3"`), or nil when absent or not hex.
    public func bytes(_ key: String) -> [UInt8]? {
        guard let text = self[key] else { return nil }
        let digits = text.filter { $0 != " " }
        guard digits.count % 2 == 0 else { return nil }
        var result: [UInt8] = []
        var index = digits.startIndex
        while index < digits.endIndex {
            let next = digits.index(index, offsetBy: 2)
            guard let byte = UInt8(digits[index..<next], radix: 16) else { return nil }
            result.append(byte)
            index = next
        }
        return result
    }

    /// The reply made of `fields` in order, as an in-process caller receives it (no text between).
    package init(fields: [(key: String, value: String)]) {
        keys = fields.map(\.key)
        values = fields.map(\.value)
    }

    /// Parses `ok [key=value | key="value"]…`.
    /// - Throws: ``SimulatedReaderError`` with the server's code for an `error …` line, or code
    ///   `malformed-reply` for anything else.
    public init(parsing line: String) throws {
        if line.hasPrefix("error ") {
            let rest = line.dropFirst("error ".count)
            let code = rest.prefix { $0 != " " }
            throw SimulatedReaderError(code: String(code), reason: String(rest.dropFirst(code.count).drop { $0 == " " }))
        }
        guard line == "ok" || line.hasPrefix("ok ") else {
            throw SimulatedReaderError(code: "malformed-reply", reason: "expected 'ok …' or 'error …', got '\(line)'")
        }
        var keys: [String] = []
        var values: [String] = []
        var rest = Substring(line.dropFirst(2))
        while true {
            rest = rest.drop { $0 == " " }
            if rest.isEmpty { break }
            guard let equals = rest.firstIndex(of: "=") else {
                throw SimulatedReaderError(code: "malformed-reply", reason: "expected key=value in '\(line)'")
            }
            keys.append(String(rest[..<equals]))
            rest = rest[rest.index(after: equals)...]
            if rest.first == "\"" {
                rest = rest.dropFirst()
                guard let close = rest.firstIndex(of: "\"") else {
                    throw SimulatedReaderError(code: "malformed-reply", reason: "unterminated quote in '\(line)'")
                }
                values.append(String(rest[..<close]))
                rest = rest[rest.index(after: close)...]
            } else {
                let value = rest.prefix { $0 != " " }
                values.append(String(value))
                rest = rest.dropFirst(value.count)
            }
        }
        self.keys = keys
        self.values = values
    }

    public var description: String {
        (["ok"] + fields.map { $0.value.contains(" ") || $0.value.isEmpty ? "\($0.key)=\"\($0.value)\"" : "\($0.key)=\($0.value)" })
            .joined(separator: " ")
    }

    public static func == (a: Self, b: Self) -> Bool { a.keys == b.keys && a.values == b.values }
    public func hash(into hasher: inout Hasher) {
        hasher.combine(keys)
        hasher.combine(values)
    }
}

/// An `error <code> <reason>` reply of the control socket, or a client-side failure
/// (`connect`, `timeout`, `malformed-reply`).
public struct SimulatedReaderError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The server's error code (`syntax`, `unknown-verb`, `missing-argument`, `bad-argument`,
    /// `refused`, `timeout`, `too-long`, `busy`) or the client's (`connect`, `io`, `malformed-reply`).
    public var code: String
    /// What went wrong, in words: the server's message, or what the client could not do.
    public var reason: String

    /// An error with its code and reason.
    public init(code: String, reason: String) {
        self.code = code
        self.reason = reason
    }

    public var description: String { "simulated reader control: \(code): \(reason)" }
}

/// A client of a simulated ACR122U's control socket (`<directory>/control.sock`, served by the
/// driver inside pcscd). Each request opens a connection, sends one line, waits (bounded) for one
/// reply line and closes. See `Sources/SimulatedACR122IFD/ControlProtocol.swift` for the verbs.
///
///     let reply = try SimulatedReaders.controlA.send("place-card uid=\"04 A1 B2 C3\" applet=t4t-ndef")
///
/// Thread-safe: it holds no connection between calls.
public struct SimulatedReaderControl: Sendable, Hashable {
    /// The path of the reader's control socket (a Unix-domain socket the simulated driver listens on).
    public let socketPath: String

    /// A client for the control socket at `socketPath`; nothing is connected until a request is sent.
    public init(socketPath: String) {
        self.socketPath = socketPath
    }

    /// Sends one request line and returns the parsed reply.
    /// - Parameters:
    ///   - line: `verb key=value …`, without the newline.
    ///   - timeout: the longest wait for the reply (connect, write and read together).
    /// - Throws: ``SimulatedReaderError`` for an `error …` reply, `connect` when the socket does not
    ///   answer (is pcscd running with the simulated readers?), `timeout`, `io`.
    @discardableResult
    public func send(_ line: String, timeout: Duration = .seconds(10)) throws -> SimulatedReaderReply {
        try SimulatedReaderReply(parsing: try exchange(line, timeout: timeout))
    }

    /// Sends `verb` with `arguments` (values with spaces are quoted) and returns the parsed reply.
    @discardableResult
    public func request(_ verb: String, _ arguments: KeyValuePairs<String, String> = [:],
                        timeout: Duration = .seconds(10)) throws -> SimulatedReaderReply {
        let parts = [verb] + arguments.map { key, value in
            value.contains(" ") || value.isEmpty ? "\(key)=\"\(value)\"" : "\(key)=\(value)"
        }
        return try send(parts.joined(separator: " "), timeout: timeout)
    }

    /// Sends one line and returns the raw reply line (without the newline).
    public func exchange(_ line: String, timeout: Duration = .seconds(10)) throws -> String {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw SimulatedReaderError(code: "connect", reason: "socket(): errno \(errno)") }
        defer { close(descriptor) }
        // connect(2) on a Unix socket whose server's backlog is full (a driver thread that stopped
        // accepting) blocks; Linux bounds that wait, and each send(2), by the socket's SO_SNDTIMEO
        // (unix_stream_connect in net/unix/af_unix.c), then fails with EAGAIN.
        var bound = timeval(tv_sec: Int(timeout.components.seconds), tv_usec: Int(timeout.components.attoseconds / 1_000_000_000_000))
        if bound.tv_sec == 0 && bound.tv_usec == 0 { bound.tv_usec = 1 }  // zero would mean no bound
        _ = setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &bound, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let path = Array(socketPath.utf8)
        guard path.count < MemoryLayout.size(ofValue: address.sun_path) else {
            throw SimulatedReaderError(code: "connect", reason: "socket path too long: \(socketPath)")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in path.enumerated() { raw[index] = byte }
            raw[path.count] = 0
        }
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard connected == 0 else {
            if errno == EAGAIN {
                throw SimulatedReaderError(
                    code: "timeout", reason: "\(socketPath) accepted no connection within \(timeout) (its server takes no more) for '\(line)'")
            }
            throw SimulatedReaderError(
                code: "connect",
                reason: "\(socketPath): \(String(cString: strerror(errno))); is the shared pcscd running with the simulated ACR122U readers?")
        }
        let bytes = Array((line + "\n").utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard written > 0 else { throw SimulatedReaderError(code: "io", reason: "write to \(socketPath): errno \(errno)") }
            offset += written
        }
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while !received.contains(0x0A) {
            let remaining = deadline - clock.now
            guard remaining > .zero else {
                throw SimulatedReaderError(code: "timeout", reason: "no reply from \(socketPath) within \(timeout) to '\(line)'")
            }
            let milliseconds = Int32(clamping: remaining.components.seconds * 1000 + remaining.components.attoseconds / 1_000_000_000_000_000 + 1)
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, min(milliseconds, 200))
            if ready < 0 && errno != EINTR { throw SimulatedReaderError(code: "io", reason: "poll: errno \(errno)") }
            guard ready > 0 else { continue }
            let count = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            guard count > 0 else {
                throw SimulatedReaderError(code: "io", reason: "\(socketPath) closed the connection before replying to '\(line)'")
            }
            received.append(contentsOf: chunk[0..<count])
        }
        let end = received.firstIndex(of: 0x0A) ?? received.endIndex
        return String(decoding: received[..<end], as: UTF8.self)
    }
}
