import Foundation
import PCSC
import PCSCCore
import PN53x

// Apple's entry points of `CredentialSession` that the original, configurable API did not have
// (docs/apple-api-map.md): `startSession()` without arguments, `isEligible`, `secureElementInfo`,
// `transceive(_:)` on `Data`, and the wired transaction.
extension CredentialSession {
    /// Starts a session the way an app on iOS does, with no arguments (Apple's `startSession()`).
    ///
    /// What it uses comes from the process (``SessionDefaults/fromEnvironment(_:standardInputIsTerminal:)``):
    /// - the reader: `$SECBRIDGE_READER`, else the `reader` of the configuration file
    ///   `$XDG_CONFIG_HOME/secbridge/config` (``SecbridgeConfiguration``), else the first reader
    ///   whose name is an ACR122's, through pcsc-lite (pcscd); no such reader gives a session
    ///   without card emulation (transactions throw `featureUnavailable`, wired mode works). A
    ///   `tty:` name (`tty:/dev/ttyUSB0`, nfcpy's `tty:USB0`) is a PN532 board on a serial line,
    ///   driven without pcscd by ``SerialPN532EmulationBackend``;
    /// - the credentials: the credential files (README.md, "Credential files"; Fixtures/credentials/README.md) at
    ///   `$SECBRIDGE_CREDENTIALS` (a file or a directory of `*.json`), else
    ///   `$XDG_CONFIG_HOME/secbridge/credentials/*.json` (`~/.config/…` when XDG_CONFIG_HOME is unset);
    /// - the authorizer: a prompt on the terminal (``TerminalAuthorizer``) when standard input is a
    ///   terminal, else the policy `$SECBRIDGE_AUTHORIZE` (`approve`, or `decline`: the default; any
    ///   other value is refused).
    ///
    /// Within ``SessionDefaults/override``'s scope (set by tests, e.g. SecbridgeTesting's simulated
    /// desk) it uses that client, reader, credentials and authorizer instead. The reader's
    /// connection is released when the session is released.
    /// - Throws: `resourceUnavailable` when pcscd does not answer (SCARD_E_NO_SERVICE) or another
    ///   session holds the reader; `instanceDoesNotExist` when the reader named names no reader
    ///   (or no device node); `invalidInput` for a credential file that cannot be used (naming the
    ///   file and the JSON path), a configuration file that cannot be used (naming the file and the
    ///   line), a `tty:` name that names no device, and a `$SECBRIDGE_AUTHORIZE` other than
    ///   `approve` or `decline`.
    public static func startSession() async throws(ErrorCode) -> CredentialSession {
        if let override = SessionDefaults.override {
            return try await startSession(
                on: override.client, readerName: override.readerName, credentials: override.credentials,
                authorizer: override.authorizer, clock: override.clock, timings: override.timings)
        }
        let defaults = SessionDefaults.fromEnvironment()
        try defaults.checkPolicy()
        try defaults.checkReader()
        return try await startSession(
            on: PCSCLiteClient(), readerName: defaults.readerName, credentials: try defaults.loadCredentials(),
            authorizer: defaults.authorizer)
    }

    /// Ours: ``startSession()`` on any PC/SC client (pcsc-lite, or the in-process simulated readers
    /// of SecbridgeTesting) with the credentials and authorizer given.
    /// - Parameters:
    ///   - client: where readers are found; the ACR122-class one is opened DIRECT for card emulation.
    ///   - readerName: the reader to emulate on; nil picks the first ACR122-class reader, or none.
    ///     A `tty:` name (`tty:/dev/ttyUSB0`, `tty:USB0`; `PN532DeviceName`, PN53x) is a PN532 board
    ///     on a serial line: the session emulates on it with ``SerialPN532EmulationBackend`` (real
    ///     time), and `client` is not asked.
    ///   - credentials: what `listCredentials()` returns, each with its secure element.
    ///   - authorizer: who approves each transaction (Apple's sheet) before wired mode or card
    ///     emulation starts; without an answer within `timings.authorizationTimeout` (60 s) the
    ///     call throws `userAuthorizationTimedOut`.
    ///   - clock: the session's clock (a virtual clock in tests); default the continuous clock.
    ///   - timings: the session's rules (60 s card emulation, 15 s wired idle, …); default
    ///     ``SessionTimings/standard``.
    /// - Throws: as ``startSession()``.
    public static func startSession(
        on client: any PCSCClient, readerName: String? = nil, credentials: [Credential],
        authorizer: any TransactionAuthorizer, clock: any SessionClock = ContinuousSessionClock(),
        timings: SessionTimings = .standard
    ) async throws(ErrorCode) -> CredentialSession {
        try await startSession(
            on: client, readerName: readerName, credentials: credentials, authorizer: authorizer, clock: clock,
            timings: timings, openSerial: openSerialBoard)
    }

    /// Opens the board `device` names for a session: `instanceDoesNotExist` when its node does
    /// not exist, else ``SerialPN532EmulationBackend/open(path:executor:activationStep:commandStep:)``
    /// (a board that cannot be opened or does not answer gives a backend whose `support` says why).
    @Sendable static func openSerialBoard(
        _ device: PN532DeviceName, executor: BlockingExecutor
    ) async throws(ErrorCode) -> SerialPN532EmulationBackend {
        guard FileManager.default.fileExists(atPath: device.path) else {
            throw ErrorCode(
                .instanceDoesNotExist,
                "no serial device \(device.path) for the PN532 board \(device): is the USB-serial adapter plugged in? (`secbridge doctor --device \(device)` checks it)")
        }
        return await SerialPN532EmulationBackend.open(path: device.path, executor: executor)
    }

    /// ``startSession(on:readerName:credentials:authorizer:clock:timings:)`` with the serial board's
    /// opener given (tests put an in-memory board in its place).
    package static func startSession(
        on client: any PCSCClient, readerName: String?, credentials: [Credential],
        authorizer: any TransactionAuthorizer, clock: any SessionClock, timings: SessionTimings,
        openSerial: @Sendable (PN532DeviceName, BlockingExecutor) async throws(ErrorCode) -> SerialPN532EmulationBackend
    ) async throws(ErrorCode) -> CredentialSession {
        let executor = BlockingExecutor(name: "credential session")
        if let readerName, PN532DeviceName.isSerial(readerName) {
            let device: PN532DeviceName
            let backend: SerialPN532EmulationBackend
            do {
                device = try PN532DeviceName(parsing: readerName)
            } catch {
                executor.shutdown()
                throw ErrorCode(.invalidInput, "the reader \(error)")
            }
            do {
                backend = try await openSerial(device, executor)
            } catch {
                executor.shutdown()
                throw error
            }
            do {
                return try startSession(CredentialSessionOptions(
                    credentials: credentials, emulationBackend: backend, authorizer: authorizer, clock: clock, timings: timings))
            } catch {
                await backend.close()
                throw error
            }
        }
        let readers: [String]
        do {
            readers = try await executor.run {
                let context = try client.establishContext()
                defer { try? context.release() }
                return try context.listReaders()
            }
        } catch {
            executor.shutdown()
            throw ErrorCode.wrapping(
                error, as: .resourceUnavailable, "pcsc-lite gave no reader list (is pcscd running? `systemctl start pcscd`)")
        }
        let chosen: String?
        if let readerName {
            guard readers.contains(readerName) else {
                executor.shutdown()
                throw ErrorCode(
                    .instanceDoesNotExist,
                    "no reader is named \"\(readerName)\"; the readers are: \(readers.isEmpty ? "none" : readers.joined(separator: ", "))")
            }
            chosen = readerName
        } else {
            chosen = readers.first(where: ACR122Detection.nameSuggestsACR122)
        }
        var backend: PN532EmulationBackend?
        if let chosen {
            backend = await PN532EmulationBackend.open(
                readerName: chosen, executor: executor, readerScope: client.readerScope, sharedSocketPath: client.sharedSocketPath
            ) {
                let context = try client.establishContext()
                do {
                    let handle = try context.connect(to: chosen, share: .direct, protocols: .undefined)
                    return (handle, {
                        try? handle.disconnect(.leave)
                        try? context.release()
                    })
                } catch {
                    try? context.release()
                    throw error
                }
            }
        } else {
            executor.shutdown()
        }
        do {
            return try startSession(CredentialSessionOptions(
                credentials: credentials, emulationBackend: backend, authorizer: authorizer, clock: clock, timings: timings))
        } catch {
            await backend?.close()
            throw error
        }
    }

    /// Whether a session can start here (Apple's `isEligible`): true when pcsc-lite answers and
    /// lists an ACR122-class reader (card emulation needs one), false when it answers without one.
    /// When the reader named (``SessionDefaults/readerName``: `$SECBRIDGE_READER` or the
    /// configuration file; an override's `readerName`) is a `tty:` board, it is true when that
    /// device node is a character device this process may read and write, and pcsc-lite is not
    /// asked; the board itself is not woken (``startSession()`` does that). Within
    /// ``SessionDefaults/override``'s scope it asks that client.
    /// - Throws: `resourceUnavailable` when pcscd does not answer (Apple: the system service is
    ///   temporarily unavailable).
    public static var isEligible: Bool {
        get async throws {
            let readerName = SessionDefaults.override.map(\.readerName) ?? SessionDefaults.fromEnvironment().readerName
            if let readerName, PN532DeviceName.isSerial(readerName) {
                guard let device = try? PN532DeviceName(parsing: readerName) else { return false }
                return serialDeviceIsUsable(device.path)
            }
            return try await isEligible(on: SessionDefaults.override?.client ?? PCSCLiteClient())
        }
    }

    /// Whether `path` is a character device (a serial port or a pty) open to this process for
    /// reading and writing (stat(2), access(2) R_OK | W_OK).
    static func serialDeviceIsUsable(_ path: String) -> Bool {
        var info = stat()
        guard stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFCHR else { return false }
        return access(path, R_OK | W_OK) == 0
    }

    /// Ours: ``isEligible`` on any PC/SC client.
    /// - Throws: `resourceUnavailable` when the client's service does not answer.
    public static func isEligible(on client: any PCSCClient) async throws(ErrorCode) -> Bool {
        let executor = BlockingExecutor(name: "isEligible")
        defer { executor.shutdown() }
        do {
            return try await executor.run {
                let context = try client.establishContext()
                defer { try? context.release() }
                return try context.listReaders().contains(where: ACR122Detection.nameSuggestsACR122)
            }
        } catch {
            throw ErrorCode.wrapping(error, as: .resourceUnavailable, "pcsc-lite gave no reader list (is pcscd running?)")
        }
    }

    /// Information about the secure element hardware (Apple's `secureElementInfo`, iOS 18.4).
    /// - Throws: always: `sessionInvalidated` on an invalid session, else `featureUnavailable`: a
    ///   host applet or a PC/SC card has no secure element platform signing certificate.
    public var secureElementInfo: SecureElementInfo {
        get async throws {
            if state == .invalid { throw ErrorCode(.sessionInvalidated, "the session is invalid; start a new session") }
            throw ErrorCode(
                .featureUnavailable,
                "this host's secure elements (host applets, PC/SC cards) have no secure element platform signing certificate")
        }
    }

    /// Sends one C-APDU to the wired credential's secure element and returns its R-APDU (Apple's
    /// `transceive(_:)` on `Data`); the same as the `[UInt8]` form.
    ///
    /// `| CLA | INS | P1 | P2 | [Lc data] | [Le] |` → `| data | SW1 | SW2 |` (ISO/IEC 7816-4 §5.1).
    /// - Throws: `invalidInput` for bytes that are not a command APDU; `invalidSessionState` outside
    ///   wired mode; the secure element's errors.
    public func transceive(_ command: Data) async throws(ErrorCode) -> Data {
        Data(try await transceive(Array(command)))
    }

    /// Enters wired mode after the authorizer approved (Apple's
    /// `performWiredTransaction(using:over:instanceAID:)` without the UIScene the sheet appears
    /// over). Apple's broker hands the instance an authorization token; there is no broker here, so
    /// `instanceAID` only has to be one of the credential's instances when it lists any.
    /// - Throws: `userCanceledAuthorization`, `userAuthorizationTimedOut`; `credentialDoesNotExist`
    ///   for an `instanceAID` the credential does not list; `enterWiredMode(using:)`'s errors.
    public func performWiredTransaction(using credential: Credential, instanceAID: Data) async throws(ErrorCode) {
        if state == .invalid { throw ErrorCode(.sessionInvalidated, "the session is invalid; start a new session") }
        if case .installed(let instances) = credential.state, !instances.isEmpty,
           !instances.contains(where: { $0.instanceAID == instanceAID }) {
            throw ErrorCode(
                .credentialDoesNotExist,
                "the credential \(credential.id) has no instance \(Array(instanceAID).hexString)")
        }
        let request = AuthorizationRequest(
            credential: credential, kind: .performWiredTransaction, readerName: options.emulationBackend?.readerName ?? "this host")
        switch await authorize(request) {
        case .approved: break
        case .declined:
            throw ErrorCode(.userCanceledAuthorization, "the authorizer declined: \(request.prompt)")
        case nil:
            throw ErrorCode(.userAuthorizationTimedOut, "the authorizer did not answer within \(options.timings.authorizationTimeout)")
        }
        try await enterWiredMode(using: credential)
    }
}

/// Where ``CredentialSession/startSession()`` finds its reader, credentials and authorizer (ours).
public struct SessionDefaults: Sendable {
    /// What ``CredentialSession/startSession()`` uses instead of the process's defaults, within
    /// the scope bound with `SessionDefaults.$override.withValue(_:operation:)` (a task-local
    /// value: child tasks see it, other tasks do not): how a test runs an app's unchanged
    /// `startSession()` call against simulated readers.
    public struct Override: Sendable {
        /// The PC/SC client readers are found on.
        public var client: any PCSCClient
        /// The reader to emulate on; nil: the first ACR122-class reader.
        public var readerName: String?
        /// What `listCredentials()` returns.
        public var credentials: [Credential]
        /// Who approves transactions.
        public var authorizer: any TransactionAuthorizer
        /// The session's clock.
        public var clock: any SessionClock
        /// The session's rules.
        public var timings: SessionTimings

        /// An override with every part given.
        public init(
            client: any PCSCClient, readerName: String? = nil, credentials: [Credential], authorizer: any TransactionAuthorizer,
            clock: any SessionClock = ContinuousSessionClock(), timings: SessionTimings = .standard
        ) {
            self.client = client
            self.readerName = readerName
            self.credentials = credentials
            self.authorizer = authorizer
            self.clock = clock
            self.timings = timings
        }
    }

    /// The override in this task's scope, if any (see ``Override``).
    @TaskLocal public static var override: Override?

    /// The reader to emulate on: `$SECBRIDGE_READER`, else the configuration file's `reader`
    /// (``SecbridgeConfiguration``); nil: the first ACR122-class reader. A `tty:` name is a PN532
    /// board on a serial line (``serialDevice``).
    public var readerName: String?
    /// Where ``readerName`` came from: `SECBRIDGE_READER`, or the configuration file and line
    /// (`/home/ada/.config/secbridge/config:2`); nil when no reader is named.
    public var readerOrigin: String? = nil
    /// Why the configuration file could not be used, which ``checkReader()`` refuses; nil when it
    /// was read or does not exist.
    public var configurationError: SecbridgeConfigurationError? = nil

    /// The serial board ``readerName`` names when it is a `tty:` name that `PN532DeviceName` (PN53x)
    /// takes; nil for a PC/SC reader's name, no name, or a `tty:` name it refuses (``checkReader()``
    /// says why).
    public var serialDevice: PN532DeviceName? {
        guard let readerName, PN532DeviceName.isSerial(readerName) else { return nil }
        return try? PN532DeviceName(parsing: readerName)
    }

    /// Refuses a configuration file that could not be used (``configurationError``) and a `tty:`
    /// reader name that names no device, rather than let a session start on another reader.
    /// - Throws: `CredentialSession.ErrorCode` `invalidInput` naming the file and line, or where
    ///   the name came from, and what to write.
    public func checkReader() throws(CredentialSession.ErrorCode) {
        if let configurationError {
            throw CredentialSession.ErrorCode(.invalidInput, configurationError.description)
        }
        guard let readerName, PN532DeviceName.isSerial(readerName) else { return }
        do {
            _ = try PN532DeviceName(parsing: readerName)
        } catch {
            throw CredentialSession.ErrorCode(.invalidInput, "\(readerOrigin ?? "the reader"): \(error)")
        }
    }
    /// A credential file or a directory of `*.json` credential files.
    public var credentialsPath: String
    /// Whether `credentialsPath` was named explicitly (`$SECBRIDGE_CREDENTIALS`): then it must exist.
    public var credentialsPathIsExplicit: Bool
    /// Who approves transactions.
    public var authorizer: any TransactionAuthorizer
    /// `$SECBRIDGE_AUTHORIZE` when it is set to neither `approve` nor `decline` (a typo such as
    /// `yes` or `Approve`), which ``checkPolicy()`` refuses; nil otherwise.
    public var unknownAuthorizePolicy: String? = nil

    /// Refuses a `$SECBRIDGE_AUTHORIZE` that is neither `approve` nor `decline`, rather than let
    /// it decline every transaction without a word.
    /// - Throws: `CredentialSession.ErrorCode` `invalidInput` naming the value.
    public func checkPolicy() throws(CredentialSession.ErrorCode) {
        if let value = unknownAuthorizePolicy {
            throw CredentialSession.ErrorCode(
                .invalidInput,
                "SECBRIDGE_AUTHORIZE=\"\(value)\" is neither approve nor decline; set it to one of them (or unset it: no terminal then declines every transaction)")
        }
    }

    /// The defaults from environment variables and the configuration file
    /// (``SecbridgeConfiguration/load(environment:)``), as ``CredentialSession/startSession()``
    /// documents. A configuration file that cannot be used gives ``configurationError``.
    /// - Parameters:
    ///   - environment: the variables (default: this process's).
    ///   - standardInputIsTerminal: whether to prompt on the terminal (default: isatty(0)).
    public static func fromEnvironment(
        _ environment: [String: String] = ProcessInfo.processInfo.environment,
        standardInputIsTerminal: Bool = isatty(0) == 1
    ) -> SessionDefaults {
        do {
            return fromEnvironment(
                environment, standardInputIsTerminal: standardInputIsTerminal,
                configuration: try SecbridgeConfiguration.load(environment: environment))
        } catch {
            var defaults = fromEnvironment(
                environment, standardInputIsTerminal: standardInputIsTerminal, configuration: SecbridgeConfiguration())
            defaults.configurationError = error
            return defaults
        }
    }

    /// The defaults from environment variables and `configuration` (the configuration file's
    /// settings, read by the caller): `$SECBRIDGE_READER`, when set and not empty, wins over
    /// `configuration.reader`.
    /// - Parameters:
    ///   - environment: the variables.
    ///   - standardInputIsTerminal: whether to prompt on the terminal.
    ///   - configuration: the configuration file's settings.
    public static func fromEnvironment(
        _ environment: [String: String], standardInputIsTerminal: Bool, configuration: SecbridgeConfiguration
    ) -> SessionDefaults {
        let explicit = environment["SECBRIDGE_CREDENTIALS"].flatMap { $0.isEmpty ? nil : $0 }
        let authorizer: any TransactionAuthorizer = standardInputIsTerminal
            ? TerminalAuthorizer()
            : (environment["SECBRIDGE_AUTHORIZE"] == "approve" ? PolicyAuthorizer.approveAll : PolicyAuthorizer.declineAll)
        let policy = environment["SECBRIDGE_AUTHORIZE"].flatMap { $0.isEmpty ? nil : $0 }
        let variable = environment["SECBRIDGE_READER"].flatMap { $0.isEmpty ? nil : $0 }
        return SessionDefaults(
            readerName: variable ?? configuration.reader,
            readerOrigin: variable != nil ? "SECBRIDGE_READER" : (configuration.reader != nil ? configuration.readerOrigin : nil),
            credentialsPath: explicit ?? SecbridgeConfiguration.directory(environment: environment) + "/credentials", credentialsPathIsExplicit: explicit != nil,
            authorizer: authorizer, unknownAuthorizePolicy: policy == "approve" || policy == "decline" ? nil : policy)
    }

    /// Reads the credential files at ``credentialsPath``: the file, or every `*.json` of the
    /// directory in name order. A default directory that does not exist gives no credentials.
    /// - Throws: `CredentialSession.ErrorCode` `invalidInput` naming the file when one cannot be
    ///   read or used, or when an explicit path does not exist.
    public func loadCredentials() throws(CredentialSession.ErrorCode) -> [Credential] {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: credentialsPath, isDirectory: &isDirectory) else {
            if credentialsPathIsExplicit {
                throw CredentialSession.ErrorCode(
                    .invalidInput, "SECBRIDGE_CREDENTIALS names \(credentialsPath), which does not exist; give a credential file or a directory of them")
            }
            return []
        }
        let files: [String]
        if isDirectory.boolValue {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: credentialsPath)) ?? []
            files = names.filter { $0.hasSuffix(".json") }.sorted().map { credentialsPath + "/" + $0 }
        } else {
            files = [credentialsPath]
        }
        var credentials: [Credential] = []
        for file in files {
            do {
                credentials.append(try CredentialFile(contentsOfFile: file).makeCredential())
            } catch {
                throw CredentialSession.ErrorCode(.invalidInput, "the credential file \(file) is not usable: \(error)")
            }
        }
        return credentials
    }
}

/// Asks on the terminal: prints the request's prompt with ` [y/N] ` to standard error and reads a
/// line from standard input on a thread of its own; `y` or `yes` approves, anything else declines
/// (the CLI's prompt; on iOS the system's authorization sheet).
///
/// The session bounds the wait (``SessionTimings/authorizationTimeout``); a line that never comes
/// leaves the reading thread blocked in read(2) until standard input closes.
public final class TerminalAuthorizer: TransactionAuthorizer {
    private let executor = BlockingExecutor(name: "terminal authorizer")

    /// An authorizer on this process's standard input and standard error.
    public init() {}

    /// Prompts and reads the answer.
    public func authorize(_ request: AuthorizationRequest) async -> AuthorizationDecision {
        FileHandle.standardError.write(Data("\(request.prompt) [y/N] ".utf8))
        let line = try? await executor.run { readLine(strippingNewline: true) }
        switch line?.lowercased() {
        case "y", "yes": return .approved
        default: return .declined
        }
    }
}
