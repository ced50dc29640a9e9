// These commands link Foundation (through the session engine and the pcscd sandbox, PCSCSandbox), so
// they live in the `secbridge-tools` binary; `secbridge` hands them over (see SecbridgeCLI/Root.swift).
import SecbridgeCLI
import ISO7816
import InProcessPCSC
import PCSC
import PCSCSandbox
import PN53x
import NFCTags
import SecureElementCredential
import Transcript

#if canImport(Glibc)
import Glibc
#endif

extension SecbridgeCLI {
    static let demoCommand = Command(
        name: "demo",
        abstract: SecbridgeCLI.toolAbstract("demo"),
        usage: "[--record FILE] [--credential FILE] [--time-scale FACTOR] [--in-process] [--json]",
        discussion: """
            Starts two simulated ACR122U readers sharing one RF field in a private pcscd (its own mount
            namespace), then runs the client sequence of Apple's SecureElementCredential model on
            reader A: startSession, enterWiredMode, acquirePresentmentAssertion, relinquish,
            performTransaction (card emulation: the PN532 in target mode), while reader B, as the
            terminal, reads the NDEF credential with Android's Type 4 Tag read sequence through PN532
            initiator commands; then endCardEmulation, acquire and relinquish again, invalidate.

            It prints the reader names, the escape control code in use, every state and session
            event, the terminal's APDUs, the decoded NDEF record, and the transcript of both readers,
            whose file it names. The credential is a URI tag for https://example.com unless
            --credential names a credential file. Needs root (or unprivileged user namespaces) for
            the private pcscd; otherwise it says why and exits 1, unless --in-process is given: then
            the same readers run inside this process, driven through the same driver entry points
            with pcscd's rules (no pcscd involved).
            """,
        options: [
            .value("record", "FILE", "Write the transcript to FILE (default: a new file in /tmp)."),
            .value("credential", "FILE", "Emulate the credential of this file instead of the built-in URI tag.", .existingFile),
            SecbridgeCLI.timeScaleOption,
            .flag("in-process", "Run the simulated readers in this process instead of a private pcscd."),
            .flag("json", "Print a JSON object {emulator, terminal, escapeControlCode, credential: {id, name}, states, events, terminalExchanges: [{command, response}], ndef, billableEvents, transcript}; the running commentary goes to standard error."),
        ],
        // Ctrl-C or an error: both readers are restored in full (ResetCommand.swift), exit 130 on Ctrl-C.
        run: ReaderCleanup.wrapping(runDemo)
    )

    /// The built-in credential: an NFC Forum Type 4 Tag holding the URI record https://example.com,
    /// whose capability container and NDEF file are those of docs/iso14443-t4t-ndef.md §4's full URI read.
    static let demoCredentialJSON = """
        {
          "secbridge-credential": 1,
          "id": "example-uri-tag",
          "name": "URI tag https://example.com",
          "emulation": { "uid": "08 00 B0 0B", "atqa": "00 04", "sak": "20" },
          "applets": [ { "type": "ndef-tag", "readOnly": false, "records": [ { "uri": "https://example.com" } ] } ]
        }
        """

    @Sendable static func runDemo(_ invocation: Invocation) throws -> Int32 {
        guard invocation.arguments.positional.isEmpty else {
            throw CLIError.usage("demo takes no arguments, got '\(invocation.arguments.positional[0])'")
        }
        let credential = try loadCredential(invocation.arguments.value("credential"), fallbackJSON: demoCredentialJSON)
        let path = invocation.arguments.value("record") ?? "/tmp/secbridge-demo-\(getpid()).trn"
        let out = invocation.console

        let access: DemoReaderAccess
        var stop: () -> Void = {}
        defer { stop() }
        let scale = invocation.arguments.decimal("time-scale")
        if invocation.arguments.has("in-process") {
            access = try DemoReaderAccess.inProcess(timeScale: scale)
            stop = access.cleanup
        } else {
            // A private pcscd with the simulated pair; this process talks to it from now on.
            let pcscd: PrivatePCSCD
            let names: [String]
            do {
                // Daemons of runs that died before the lifeline existed, or whose watcher was killed too.
                PrivatePCSCD.reapLeftovers()
                pcscd = try PrivatePCSCD(readers: SimulatedReaders.readerConfEntries(timeScale: scale))
                names = try pcscd.start()
            } catch let error as HarnessError {
                throw CLIError.failure(
                    "cannot start a private pcscd for the simulated readers: \(error.reason)"
                        + (error.code == .notPermitted ? "; run as root, or allow unprivileged user namespaces" : "")
                        + "; or run `secbridge demo --in-process` to drive the simulated readers without pcscd")
            }
            stop = { pcscd.stop() }
            setenv("PCSCLITE_CSOCK_NAME", pcscd.socketPath, 1)
            let ordered = readerNamesInOrder(names, controls: [("a", SimulatedReaders.controlA), ("b", SimulatedReaders.controlB)])
            access = DemoReaderAccess.pcscd(emulator: ordered[0], terminal: ordered[1], socket: pcscd.socketPath)
        }
        let demo = try DemoRun(
            access: access, credential: credential, transcriptPath: path, console: out, recordings: invocation.recordings, json: invocation.json)
        // Restored while the readers still run (before `stop`): after an error or Ctrl-C.
        let cleanup = ReaderCleanup.current
        for reader in [access.emulator, access.terminal] {
            cleanup?.track(reader) { reader, shared in
                guard !shared else { throw CLIError.failure("the demo's readers are reached DIRECT only") }
                let connection = try access.direct(reader)
                return (connection.handle, connection.close)
            }
        }
        cleanup?.atForcedExit(stop)
        let run = { try awaitResult("the demo", timeout: .seconds(120)) { try await demo.run() } }
        guard let cleanup else { return try run() }
        return try cleanup.restoringBeforeReturn(run)
    }

    /// A credential from a file, or from built-in JSON.
    /// - Parameter client: reaches the reader of a `pcscCard` credential (a relay).
    /// - Parameter relayClock: what the relay's call bound is measured on (nil: real time).
    static func loadCredential(
        _ path: String?, fallbackJSON: String, client: any PCSCClient = PCSCLiteClient(), relayClock: (any SessionClock)? = nil
    ) throws(CLIError) -> Credential {
        do {
            let file = try path.map { path throws(CredentialFileError) in try CredentialFile(contentsOfFile: path) }
                ?? CredentialFile(json: Array(fallbackJSON.utf8))
            return try file.makeCredential { reader, resolve in
                // The relay session holds the card in one PC/SC transaction (bounded by the call
                // watchdog), so no other program's APDU lands inside a terminal's transaction;
                // a new card session after a change begins a new one.
                CardSecureElement(
                    description: "PC/SC card in \(reader)", resolveStatusWordsLocally: resolve,
                    clock: relayClock ?? ContinuousSessionClock()
                ) {
                    let context = try client.establishContext()
                    let handle = try context.connect(to: reader, share: .shared, protocols: .any)
                    do {
                        try beginCardTransaction(handle, reader: reader)
                    } catch {
                        try? handle.disconnect(.leave)
                        try? context.release()
                        throw error
                    }
                    return (handle, {
                        endCardTransaction(handle)
                        try? handle.disconnect(.leave)
                        try? context.release()
                    })
                }
            }
        } catch {
            throw CLIError.failure("the credential file is not usable: \(error)")
        }
    }
}

/// How the demo reaches its two simulated readers: through a private pcscd, or in process.
struct DemoReaderAccess: Sendable {
    /// Reader A (card emulation) and reader B (terminal).
    var emulator: String
    var terminal: String
    /// A line saying where the readers run.
    var where_: String
    /// A DIRECT connection to a reader (blocking: call it on an executor thread).
    var direct: @Sendable (String) throws -> (handle: any CardChannel, features: () throws -> [PCSCFeature], close: @Sendable () -> Void)
    /// Releases what the readers left (in-process: closes the channels, removes their directory).
    var cleanup: @Sendable () -> Void = {}
    /// `PCSCClient.readerScope` of the readers (in process: their own namespace).
    var readerScope = ""
    /// `PCSCClient.sharedSocketPath` of the readers (nil in process).
    var sharedSocketPath: String?

    static func pcscd(emulator: String, terminal: String, socket: String) -> DemoReaderAccess {
        var access = DemoReaderAccess(emulator: emulator, terminal: terminal, where_: "pcscd: private instance, PCSCLITE_CSOCK_NAME=\(socket)") { reader in
            let context = try PCSCContext()
            let handle = try context.connect(to: reader, share: .direct, protocols: .undefined)
            return (handle, { try handle.features() }, { try? handle.disconnect(.leave); try? context.release() })
        }
        access.sharedSocketPath = socket
        return access
    }

    /// Two readers on one field, driven through the driver's IFD handler entry points in this
    /// process (InProcessPCSC keeps pcscd's rules); their control sockets live in a temporary
    /// directory of this process.
    static func inProcess(timeScale: Double?) throws(CLIError) -> DemoReaderAccess {
        let base = "/tmp/secbridge-demo-inprocess.\(getpid())"
        let readers = InProcessReaders()
        let a: String
        let b: String
        do {
            // Both Luns at once, waiting (bounded) while a process that holds other in-process
            // readers (a test run with desks in parallel) has fewer than two free; the secbridge
            // binary holds none, so it never waits.
            let names = try readers.createChannels(
                deviceNames: ["a", "b"].map { base + "/\($0):field=demo" + SimulatedReaders.timeScaleOption(timeScale) },
                waitingUpTo: .seconds(60))
            (a, b) = (names[0], names[1])
        } catch {
            throw CLIError.failure("cannot create the in-process simulated readers: \(error)")
        }
        var access = DemoReaderAccess(emulator: a, terminal: b, where_: "readers: in this process (no pcscd; the same driver entry points, pcscd's rules)") { reader in
            let handle = try readers.connect(to: reader, share: .direct, protocols: .undefined)
            return (handle, { try handle.features() }, { try? handle.disconnect(.leave) })
        }
        access.readerScope = InProcessPCSCClient(readers).readerScope
        access.cleanup = {
            readers.close()
            for directory in [base + "/a", base + "/b", base] { _ = rmdir(directory) }
        }
        return access
    }
}

/// One run of the demo: the session on reader A, the terminal on reader B, one transcript.
final class DemoRun: Sendable {
    let emulator: String
    let terminal: String
    let credential: Credential
    let transcriptPath: String
    let access: DemoReaderAccess
    let console: any Console
    /// `demo --json`: the commentary goes to standard error, one JSON object to standard output.
    let json: Bool
    /// The demo's transcript, one of the run's recordings (``RecordingLedger``): a write error
    /// stops it, the demo goes on, the file ends with a line saying it is incomplete and the
    /// command exits 1 (docs/faults.md, "A recording that cannot be written").
    let writer: StoppingTranscriptSink
    let recorder: TranscriptRecorder

    init(
        access: DemoReaderAccess, credential: Credential, transcriptPath: String, console: any Console, recordings: RecordingLedger,
        json: Bool = false
    ) throws(CLIError) {
        self.emulator = access.emulator
        self.terminal = access.terminal
        self.access = access
        self.credential = credential
        self.transcriptPath = transcriptPath
        self.console = console
        self.json = json
        var header = TranscriptHeader(
            tool: "secbridge \(SecbridgeCLI.version) demo", origin: .simulated, date: utcTimestamp(), reader: emulator,
            driver: "secbridge simulated ACR122U (libSecbridgeACR122IFD)", firmware: "ACR122U207",
            transmissionProtocol: .undefined)
        header["credential"] = credential.id
        writer = try recordings.open(path: transcriptPath, header: header, work: "the demo")
        recorder = TranscriptRecorder(sink: writer)
    }

    func say(_ line: String) {
        if json { console.err(line + "\n") } else { console.out(line + "\n") }
    }

    /// A DIRECT connection to `reader`, recorded on channel `id`.
    func directConnection(_ reader: String, id: String) throws -> (channel: any CardChannel, close: @Sendable () -> Void) {
        let connection = try access.direct(reader)
        let channel = RecordingChannel(wrapping: connection.handle, recorder: recorder, channelID: id)
        return (channel, connection.close)
    }

    /// The escape control code the reader's driver announces (CM_IOCTL_GET_FEATURE_REQUEST, tag 0x13).
    func escapeControlCode(_ reader: String) throws -> UInt32? {
        let connection = try access.direct(reader)
        defer { connection.close() }
        return try connection.features().first { $0.tag == PCSCFeature.ccidEscapeCommandTag }?.controlCode
    }

    func run() async throws -> Int32 {
        let executorA = BlockingExecutor(name: "demo reader A")
        let executorB = BlockingExecutor(name: "demo reader B")
        defer {
            executorA.shutdown()
            executorB.shutdown()
        }
        say("secbridge demo: a credential session on a simulated ACR122U, read by a second one")
        say(access.where_)
        say("reader A (card emulation): \(emulator)")
        say("reader B (terminal):       \(terminal)")
        let emulator = self.emulator
        let code = try await executorA.run { [self] in try escapeControlCode(emulator) }
        let codeHex = code.map { "0x" + String($0, radix: 16, uppercase: true) }
        say("escape control code: " + (codeHex.map { $0 + " (CM_IOCTL_GET_FEATURE_REQUEST, tag 0x13)" } ?? "none announced"))
        say("credential: \(credential.displayName) (\(credential.id))")
        try? recorder.record(.reader([TranscriptAttribute("name", emulator), TranscriptAttribute("role", "card emulation")]), channel: "a")
        try? recorder.record(.reader([TranscriptAttribute("name", terminal), TranscriptAttribute("role", "terminal")]), channel: "b")

        let backend = await PN532EmulationBackend.open(
            readerName: emulator, executor: executorA, readerScope: access.readerScope, sharedSocketPath: access.sharedSocketPath
        ) { [self] in
            try directConnection(emulator, id: "a")
        }
        if case .unsupported(let reason, _) = backend.support {
            throw CLIError.failure("reader A cannot emulate: \(reason)")
        }
        let authorizer = PolicyAuthorizer { [self] request in
            say("authorization: \(request.prompt) → approved (the demo's policy)")
            return .approved
        }
        let session = try CredentialSession.startSession(
            CredentialSessionOptions(credentials: [credential], emulationBackend: backend, authorizer: authorizer))

        // Session events, as they come; recorded too.
        let recorder = self.recorder
        let log = EventLog()
        let events = Task { [self] () -> [String] in
            var seen: [String] = []
            for await event in session.eventStream {
                log.append(event)
                if let text = describe(event) {
                    seen.append(text)
                    say("  event: \(text)")
                }
                switch event {
                case .apduExchanged(let command, let response):
                    try? recorder.record(.target(.incoming, TranscriptBytes(command)), channel: "a")
                    try? recorder.record(.target(.outgoing, TranscriptBytes(response)), channel: "a")
                case .fieldObserved(let info):
                    try? recorder.recordEvent(info.state == .fieldPresent ? .fieldOn : .fieldOff,
                                              [TranscriptAttribute("observed", info.observation)], channel: "a")
                default:
                    break
                }
            }
            return seen
        }

        var states: [String] = []
        func state(_ step: String) async {
            let now = await session.state
            states.append("\(step) → \(now)")
            say("state: \(now)    (after \(step))")
            try? recorder.recordComment("state \(now) after \(step)")
        }
        await state("startSession")
        let listed = try await session.listCredentials()
        say("credentials: \(listed.map(\.description).joined(separator: ", "))")
        try await session.enterWiredMode(using: credential)
        await state("enterWiredMode(using:)")
        let assertion = try await session.acquirePresentmentAssertion()
        say("presentment assertion: \(assertion.state.rawValue)")
        try await assertion.relinquish()
        say("presentment assertion: \(assertion.state.rawValue) (relinquished)")
        // Reader B stays quiet until it reads: its automatic PICC polling (on since power-up) would
        // otherwise activate A's emulated target by itself (the two share one field).
        try await setPolling(terminal, on: false, executor: executorB)
        // One terminal read, then endCardEmulation: no re-arm after the release (a TgInitAsTarget
        // cannot be cancelled, and endCardEmulation would wait out its MCU timeout).
        try await session.performTransaction(using: credential, options: credential.emulationDefaults.rearming(.never))
        await state("performTransaction(using:)")

        // Reader B, the terminal: PN532 initiator commands, Android's Type 4 Tag read.
        say("terminal on reader B: InListPassiveTarget, then Android's Type 4 Tag read")
        let terminal = self.terminal
        let readerSession = ReaderSession(
            readerName: terminal, path: .pn532Initiator, executor: executorB, restoresReaderDefaults: false
        ) { [self] in
            try directConnection(terminal, id: "b")
        }
        let (read, exchanges) = try await readerSession.run { transceiver in
            try await Type4TagReader.read { command in
                try? recorder.record(.initiator(.outgoing, TranscriptBytes(command)), channel: "b")
                let response = try await transceiver.transceive(command)
                try? recorder.record(.initiator(.incoming, TranscriptBytes(response)), channel: "b")
                return response
            }
        }
        for exchange in exchanges {
            say("  terminal > \(exchange.command.hexString)")
            say("  terminal < \(exchange.response.hexString)")
        }
        for record in read.message.records {
            say("NDEF record: \(describe(record))")
        }
        // The terminal has released the target (InRelease): wait until the emulating reader has
        // seen it (status 29 on TgGetData, one device step at most), then end card emulation.
        await log.waitUntil(timeout: .seconds(10)) {
            if case .fieldStateChanged(let info) = $0 { return info == .fieldAbsent }
            return false
        }
        try await session.endCardEmulation()
        await state("endCardEmulation()")
        let again = try await session.acquirePresentmentAssertion()
        say("presentment assertion: \(again.state.rawValue)")
        try await again.relinquish()
        say("presentment assertion: \(again.state.rawValue) (relinquished)")
        let billing = await session.billingLog
        for entry in billing {
            say("billable event \(entry.sequence): credential \(entry.credentialID)")
        }
        await session.invalidate()
        // Reader A's connection released now, not by the backend's deinit after run() returned.
        await backend.close()
        await state("invalidate()")
        try await setPolling(terminal, on: true, executor: executorB)
        let seen = await events.value
        writer.finish()

        if json {
            console.out(JSONValue.object([
                ("emulator", .string(emulator)), ("terminal", .string(terminal)),
                ("escapeControlCode", codeHex.map { .string($0) } ?? .null),
                ("credential", .object([("id", .string(credential.id)), ("name", .string(credential.displayName))])),
                ("states", .array(states.map { .string($0) })),
                ("events", .array(seen.map { .string($0) })),
                ("terminalExchanges", .array(exchanges.map { .object([("command", .hex($0.command)), ("response", .hex($0.response))]) })),
                ("ndef", .array(read.message.records.map(SecbridgeCLI.recordJSON))),
                ("billableEvents", .array(billing.map { .object([("sequence", .int(Int($0.sequence))), ("credential", .string($0.credentialID))]) })),
                ("transcript", .string(transcriptPath)),
            ]).prettySerialized() + "\n")
            return SecbridgeCLI.exitSuccess
        }
        say("")
        say("summary")
        say("  states: " + states.joined(separator: "; "))
        say("  events: " + seen.joined(separator: "; "))
        say("  terminal exchanges: \(exchanges.count), NDEF: \(read.message.records.map(describe).joined(separator: ", "))")
        say("")
        say("transcript: \(transcriptPath)")
        if let text = try? Transcript(contentsOfFile: transcriptPath).serialized() {
            console.out(text)
        }
        return SecbridgeCLI.exitSuccess
    }

    /// Turns a reader's automatic PICC polling off (`FF 00 51 00 00`) or back on (`FF 00 51 FF 00`,
    /// the power-up default), through its escape path (ACR122U API v2.04 §6).
    func setPolling(_ reader: String, on: Bool, executor: BlockingExecutor) async throws {
        let channel = reader == emulator ? "a" : "b"
        try await executor.run { [self] in
            let (connection, close) = try directConnection(reader, id: channel)
            defer { close() }
            let link = try ACR122Link.open(channel: connection, readerName: reader, path: .escape)
            _ = try link.setPICCOperatingParameter(ACR122PICCOperatingParameter(rawValue: on ? 0xFF : 0x00))
        }
        say("reader \(channel == "a" ? "A" : "B"): automatic PICC polling \(on ? "on (restored)" : "off")")
    }

    /// The demo's event line, or nil for Apple's `fieldStateChanged(info:)`, whose observation
    /// `fieldObserved` prints.
    func describe(_ event: CredentialSessionEvent) -> String? {
        switch event {
        case .fieldStateChanged: nil
        case .fieldObserved(let info): "fieldStateChanged(\(info.state.rawValue): \(info.observation))"
        case .sessionInvalidated(let reason): "sessionInvalidated(\(reason.reason))"
        case .credentialFinishedInstalling(let credential): "credentialFinishedInstalling(\(credential.id))"
        default: "\(event)"
        }
    }

    func describe(_ record: NDEFRecord) -> String { record.summary }
}

/// The session events seen so far, for waiting on one (bounded).
final class EventLog: @unchecked Sendable {
    private let lock = ConsoleLock()
    private var events: [CredentialSessionEvent] = []

    func append(_ event: CredentialSessionEvent) { lock.withLock { events.append(event) } }

    /// Returns when an event satisfies `predicate`, after `timeout`, or when the task is cancelled
    /// (a `try?` sleep would spin then, throwing at once each round).
    func waitUntil(timeout: Duration, _ predicate: @escaping (CredentialSessionEvent) -> Bool) async {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if lock.withLock({ events.contains(where: predicate) }) { return }
            do { try await Task.sleep(for: .milliseconds(10)) } catch { return }
        }
    }
}
