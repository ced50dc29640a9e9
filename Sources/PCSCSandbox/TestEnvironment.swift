import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The process-wide test environment: one private pcscd with a vpcd reader and a vicc card.
///
/// The PC/SC client library caches the socket path at its first call, so a process talks to one
/// pcscd for its whole life, and `swift test` runs Swift Testing tests in parallel in one process.
/// Hence one shared environment, started on first use and kept until the process exits:
///
///     let environment = try TestEnvironment.shared.start()
///     // PCSCLITE_CSOCK_NAME now names its socket in this process
///     environment.vpcdReaderName                // "Virtual PCD 00 00"
///     environment.environmentForSubprocesses    // for `secbridge` run as a subprocess
///
/// Call `start()` before the process's first PC/SC call. Suites that use the shared reader must
/// be `.serialized` (and should not run in parallel with other suites using the same reader).
///
/// **More readers.** Every reader the run needs must be in the pcscd from its first start, since
/// it cannot be restarted under another configuration without confusing parallel tests. Two ways:
/// - Add the entry to ``standardExtraReaders`` (in `StandardReaders.swift`): every first start
///   includes it, whichever suite comes first. This is the place for the simulated ACR122U driver.
/// - Pass `extraReaders:` to ``Launcher/start(extraReaders:)``. A later call whose readers the
///   running pcscd lacks throws `.alreadyStarted`, so this suits a process with one caller.
public final class TestEnvironment: Sendable {
    /// The process-wide launcher.
    public static let shared = Launcher()

    /// The private pcscd.
    public let pcscd: PrivatePCSCD
    /// The vicc card in the vpcd reader.
    public let card: VirtualCard
    /// The vpcd reader's TCP port (slot 0; slot 1 is `port + 1`).
    public let vpcdPort: UInt16
    /// The vpcd reader the card sits in: `Virtual PCD 00 00`.
    public let vpcdReaderName: String
    /// All readers the pcscd listed at start, e.g. `["Virtual PCD 00 00", "Virtual PCD 00 01"]`.
    public let readerNames: [String]

    /// The socket path, also exported as `PCSCLITE_CSOCK_NAME` in this process.
    public var socketPath: String { pcscd.socketPath }

    /// This process's environment with `PCSCLITE_CSOCK_NAME` set: for subprocesses (the
    /// `secbridge` tool, `pcsc_scan`) that must talk to the same pcscd.
    public var environmentForSubprocesses: [String: String] { pcscd.environment }

    init(pcscd: PrivatePCSCD, card: VirtualCard, vpcdPort: UInt16, vpcdReaderName: String, readerNames: [String]) {
        self.pcscd = pcscd
        self.card = card
        self.vpcdPort = vpcdPort
        self.vpcdReaderName = vpcdReaderName
        self.readerNames = readerNames
    }

    /// Restarts pcscd at the same socket path, then vicc (which exits when its pcscd goes).
    /// - Throws: ``HarnessError`` from ``PrivatePCSCD/restart(timeout:)`` or ``VirtualCard/start(timeout:)``.
    public func restartPCSCD() throws {
        card.stopForExit(grace: .seconds(1))
        try pcscd.restart()
        try card.start()
    }

    /// Starts the shared environment once per process.
    public final class Launcher: Sendable {
        private enum Status {
            case idle
            case running(TestEnvironment)
            case failed(HarnessError)
        }
        private let status = Mutex(Status.idle)

        init() {}

        /// The running environment, or `nil` before the first successful ``start(extraReaders:)``.
        public var current: TestEnvironment? {
            status.withLock { status in
                if case .running(let environment) = status { return environment }
                return nil
            }
        }

        /// Starts the private pcscd (vpcd reader, ``TestEnvironment/standardExtraReaders`` and
        /// `extraReaders`), exports `PCSCLITE_CSOCK_NAME` in this process, and starts vicc.
        ///
        /// Idempotent and thread-safe: concurrent callers wait for the one start; later calls return
        /// the running environment. A failed start is remembered and rethrown at once, so a broken
        /// host fails every test quickly. Takes about 0.5 s (pcscd about 0.1 s, vicc about 0.4 s).
        /// - Parameter extraReaders: more reader.conf entries for the first start.
        /// - Throws: ``HarnessError`` — `.missingDependency` (run `scripts/install-deps.sh`),
        ///   `.notPermitted`, `.launchFailed`, `.timeout`; `.alreadyStarted` when the running pcscd
        ///   lacks one of `extraReaders`; `.notPermitted` naming ``PCSCDAvailability`` when
        ///   `SECBRIDGE_NO_PCSCD=1` is set.
        public func start(extraReaders: [ReaderConfEntry] = []) throws -> TestEnvironment {
            if let value = ProcessInfo.processInfo.environment[PCSCDAvailability.disableVariable], value == "1" {
                throw HarnessError(code: .notPermitted, reason: PCSCDAvailability.unavailableReason ?? "")
            }
            return try status.withLock { status in
                switch status {
                case .running(let environment):
                    let missing = extraReaders.filter { !environment.pcscd.readers.contains($0) }
                    guard missing.isEmpty else {
                        throw HarnessError(
                            code: .alreadyStarted,
                            reason: "the shared pcscd already runs without \(missing); add these readers to "
                                + "TestEnvironment.standardExtraReaders so every first start includes them")
                    }
                    return environment
                case .failed(let error):
                    throw error
                case .idle:
                    do {
                        let environment = try Self.launch(extraReaders: extraReaders)
                        status = .running(environment)
                        return environment
                    } catch let error as HarnessError {
                        status = .failed(error)
                        throw error
                    }
                }
            }
        }

        private static func launch(extraReaders: [ReaderConfEntry]) throws -> TestEnvironment {
            try HarnessPaths.checkDependencies()
            PrivatePCSCD.reapLeftovers()
            let port = try FreePort.pick()
            let vpcd = ReaderConfEntry.vpcd(port: port)
            var readers = [vpcd]
            for entry in TestEnvironment.standardExtraReaders + extraReaders where !readers.contains(entry) {
                readers.append(entry)
            }
            let pcscd = try PrivatePCSCD(readers: readers)
            let names = try pcscd.start()
            // Slot 0 of our vpcd entry; pcscd names it "FRIENDLYNAME XX 00".
            let prefix = vpcd.friendlyName + " "
            guard let readerName = names.first(where: { $0.hasPrefix(prefix) && $0.hasSuffix(" 00") }) else {
                pcscd.stop()
                throw HarnessError(code: .launchFailed, reason: "pcscd lists no vpcd slot 0 reader: \(names)",
                                   logTail: pcscd.logTail())
            }
            setenv(PrivatePCSCD.socketVariable, pcscd.socketPath, 1)
            let card = VirtualCard(port: port, readerName: readerName, pcscEnvironment: pcscd.environment,
                                   logURL: pcscd.directory.appendingPathComponent("vicc.log"))
            do {
                try card.start()
            } catch {
                pcscd.stop()
                throw error
            }
            return TestEnvironment(pcscd: pcscd, card: card, vpcdPort: port, vpcdReaderName: readerName,
                                   readerNames: names)
        }
    }
}

/// A free pair of TCP ports for a vpcd reader (slot 0 and slot 1).
public enum FreePort {
    /// The range ports are drawn from: above the usual services, below the ephemeral range.
    public static let range: ClosedRange<UInt16> = 0x9000...0xEFFE

    /// A random `port` such that `port` and `port + 1` can both be bound on all interfaces now.
    ///
    /// In a test process started as shard K of N (`SECBRIDGE_TEST_SHARD=K/N`, scripts/test.sh) the
    /// port comes from the K-th of N equal parts of ``range``: test processes running side by side
    /// never pick the same pair between one's check and its vpcd's bind.
    /// - Throws: ``HarnessError/Code/launchFailed`` after 64 taken candidates.
    public static func pick() throws -> UInt16 {
        let candidates = shardRange(ProcessInfo.processInfo.environment["SECBRIDGE_TEST_SHARD"])
        for _ in 0..<64 {
            let port = UInt16.random(in: candidates)
            if isFree(port) && isFree(port + 1) { return port }
        }
        throw HarnessError(code: .launchFailed, reason: "no free TCP port pair in \(range) after 64 tries")
    }

    /// The part of ``range`` for `shard` (`K/N`, 0 ≤ K < N ≤ 64); the whole range for nil or
    /// anything else.
    package static func shardRange(_ shard: String?) -> ClosedRange<UInt16> {
        guard let parts = shard?.split(separator: "/"), parts.count == 2,
              let index = Int(parts[0]), let count = Int(parts[1]), count > 0, count <= 64, index >= 0, index < count
        else { return range }
        // Each part is even in length and at least 2 ports, so a pair never straddles two parts.
        let size = (Int(range.upperBound) - Int(range.lowerBound) + 1) / count / 2 * 2
        let lower = Int(range.lowerBound) + index * size
        return UInt16(lower)...UInt16(lower + size - 2)
    }

    /// Whether a TCP socket can bind `port` on INADDR_ANY (as vpcd does) at this moment.
    public static func isFree(_ port: UInt16) -> Bool {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr = in_addr(s_addr: INADDR_ANY)
        let result = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        return result == 0
    }
}
