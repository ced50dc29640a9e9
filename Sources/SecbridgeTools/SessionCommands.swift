// These commands link Foundation (through the session engine and the pcscd sandbox, PCSCSandbox), so
// they live in the `secbridge-tools` binary; `secbridge` hands them over (see SecbridgeCLI/Root.swift).
import SecbridgeCLI
import ISO7816
import PCSC
import PN53x
import NFCTags
import SecureElementCredential
import Transcript
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

extension SecbridgeCLI {
    // MARK: credentials

    static let credentialsCommand = Command(
        name: "credentials",
        abstract: SecbridgeCLI.toolAbstract("credentials"),
        usage: "[--json] [FILE…]",
        discussion: """
            Loads each credential file (JSON; the format is in the README) into a session and lists
            what `listCredentials()` returns: id, name, how the emulated card presents itself, and
            the secure element (host applets with their AIDs, or a PC/SC card). Without files, the
            built-in example (a URI tag for https://example.com) is listed.

            Example:
              $ secbridge credentials Fixtures/credentials/access-badge.json
            """,
        options: [.flag("json", "Print a JSON array of {id, name, emulation, secureElement}.")],
        run: runCredentials
    )

    @Sendable static func runCredentials(_ invocation: Invocation) throws -> Int32 {
        var files: [(String, CredentialFile)] = []
        if invocation.arguments.positional.isEmpty {
            do {
                files.append(("built-in", try CredentialFile(json: Array(demoCredentialJSON.utf8))))
            } catch {
                throw CLIError.failure("the built-in credential is broken: \(error)")
            }
        }
        for path in invocation.arguments.positional {
            do {
                let file = try CredentialFile(contentsOfFile: path)
                _ = try file.makeCredential()  // checks transcripts and NDEF sizes too
                files.append((path, file))
            } catch {
                throw CLIError.failure("\(path): \(error)")
            }
        }
        let credentials = try files.map { (_, file) throws(CLIError) -> Credential in
            do { return try file.makeCredential() } catch { throw CLIError.failure("\(error)") }
        }
        // One session lists them, as `listCredentials()` would for an app.
        let listed = try awaitResult("listing credentials", timeout: .seconds(10)) {
            let session = try CredentialSession.startSession(CredentialSessionOptions(credentials: credentials, authorizer: PolicyAuthorizer.declineAll))
            defer { Task { await session.invalidate() } }
            return try await session.listCredentials()
        }
        var entries: [JSONValue] = []
        for credential in listed {
            guard let (source, file) = files.first(where: { $0.1.id == credential.id }) else { continue }
            let emulation = file.emulation
            let element = describeSecureElement(file.secureElement)
            if invocation.json {
                entries.append(.object([
                    ("id", .string(file.id)), ("name", .string(file.name)), ("source", .string(source)),
                    ("emulation", .object([
                        ("uid", .hex(emulation.uid.bytes)), ("atqa", .hex([UInt8(emulation.atqa.rawValue >> 8), UInt8(emulation.atqa.rawValue & 0xFF)])),
                        ("sak", .hex([emulation.sak])), ("historicalBytes", .hex(emulation.historicalBytes)),
                    ])),
                    ("secureElement", .array(element.map { .string($0) })),
                ]))
            } else {
                invocation.out("\(file.id): \(file.name)   (\(source))")
                invocation.out("  emulation: UID \(emulation.uid.bytes.hexString), ATQA \([UInt8(emulation.atqa.rawValue >> 8), UInt8(emulation.atqa.rawValue & 0xFF)].hexString), SAK \([emulation.sak].hexString), historical bytes \(emulation.historicalBytes.isEmpty ? "none" : emulation.historicalBytes.hexString)")
                for line in element { invocation.out("  " + line) }
            }
        }
        if invocation.json { invocation.out(JSONValue.array(entries).prettySerialized()) }
        return exitSuccess
    }

    static func describeSecureElement(_ element: CredentialFile.SecureElementSpec) -> [String] {
        switch element {
        case .pcscCard(let reader, let resolve):
            return ["secure element: the card in PC/SC reader \"\(reader)\" (relay\(resolve ? ", 61xx/6Cxx resolved locally" : ", status words passed through"))"]
        case .applets(let applets):
            return applets.map { applet in
                switch applet {
                case .ndefTag(let name, let message, let readOnly, _):
                    return "applet \(name == "NFC Forum Type 4 Tag" ? "ndef-tag" : name): NFC Forum Type 4 Tag, AID D2 76 00 00 85 01 01, \(message?.records.count ?? 0) NDEF record(s), \(readOnly ? "read-only" : "read/write")"
                case .declarative(let name, let aids, _, let rules, _):
                    return "applet \(name): declarative, AIDs \(aids.map(\.description).joined(separator: ", ")), \(rules.count) rule(s)"
                case .transcript(let name, let file, let aids, _):
                    return "applet \(name ?? file): answers from transcript \(file)" + (aids.isEmpty ? "" : ", AIDs \(aids.map(\.description).joined(separator: ", "))")
                }
            }
        }
    }

    // MARK: emulate

    /// The card-emulation window for an invocation: Apple's 60 s, times the invocation's time
    /// scale (tests on simulated readers shrink the window only; every other session rule, such
    /// as the 15 s wired idle rule, stays in real time, so a slow machine cannot break them).
    /// On readers on virtual time (an in-process desk) the window is Apple's 60 s of that time,
    /// whatever the scale.
    static func emulationWindow(_ invocation: Invocation) -> Duration {
        if invocation.client.virtualTime != nil { return .seconds(60) }
        return .seconds(60) * (invocation.timeScale > 0 ? invocation.timeScale : 1)
    }

    static let emulateCommand = makeEmulateCommand(relayClock: nil)

    /// Which terminals `emulate` serves before it ends (before the window does).
    enum TerminalServing: Sendable, Equatable {
        /// The default: the first terminal that is done. For a Type 4 Tag that is one that read
        /// the NDEF file to the end (or wrote it), across its activations: a phone that left
        /// before (after READ CC, after NLEN, mid-file) is served again when it comes back.
        case untilDone
        /// `--once`: the first terminal, when it leaves, unless it left in the middle of reading a
        /// Type 4 Tag's NDEF file (``TerminalVerdict/stoppedMidRead(_:credential:)``).
        case once
        /// `--keep`: every terminal until the window ends.
        case keep

        /// - Throws: a usage error for `--keep` with `--once`.
        init(keep: Bool, once: Bool) throws(CLIError) {
            switch (keep, once) {
            case (true, true):
                throw CLIError.usage("--keep and --once cannot be used together: --keep serves every terminal until the window ends, --once ends after the first; give one of them")
            case (true, false): self = .keep
            case (false, true): self = .once
            case (false, false): self = .untilDone
            }
        }

        /// Whether the emulation ends when a terminal that sent `exchanges` (every activation's,
        /// in order) leaves the field.
        func endsAfter(_ exchanges: [(command: [UInt8], response: [UInt8])], credential: Credential) -> Bool {
            switch self {
            case .keep: false
            case .once: !TerminalVerdict.stoppedMidRead(exchanges, credential: credential)
            case .untilDone: !TerminalVerdict.isType4Tag(credential) || TerminalVerdict.readToTheEndOrWritten(exchanges, credential: credential)
            }
        }
    }

    /// `emulate`, a relayed PC/SC card's call bound measured on `relayClock` (nil: real time).
    static func makeEmulateCommand(relayClock: (any SessionClock)?) -> Command { Command(
        name: "emulate",
        abstract: SecbridgeCLI.toolAbstract("emulate"),
        usage: "--credential FILE [--reader NAME|INDEX | --device tty:PATH] [--yes] [--keep | --once] [--record FILE] [--json] [--show-secrets]",
        discussion: """
            Runs the client sequence of a credential session on an ACR122-class reader: wired mode,
            a presentment assertion, the authorization prompt (or --yes), then performTransaction:
            the PN532 in target mode presents the credential until the terminal is done (it reads
            and releases the target), or the 60-second card emulation window ends, or Ctrl-C. The
            target is then not armed again, so the reader is restored at once (an armed
            TgInitAsTarget cannot be cancelled and would hold the reader for one 5 s MCU timeout).
            An NFC Forum Type 4 Tag is done when its NDEF file was read to the end (or written): a
            phone that slips during detection (it leaves after READ CC or READ NLEN, or in the
            middle of the file) is served again when it comes back within the window, the target
            armed again 250 ms after it left. With --once emulation ends when the first terminal
            leaves, unless it left in the middle of reading the NDEF file. With --keep, emulation
            continues for further terminals until the window ends: the target is armed again
            250 ms after each release. The reader's settings (PICC polling, RF field) are restored
            at the end, on every exit path: after Ctrl-C, errors, and when the window ends while
            the target waits for a terminal. An activation that is no ISO-DEP reader (a
            peer-to-peer initiator's ATR_REQ) is reported and the target armed again.

            With --device tty:PATH the PN532 is a bare board on a serial line (docs/pn532-uart.md
            §9), reached without PC/SC: a bare PN532 has no MCU timeout, so the host bounds each
            TgInitAsTarget at 1 s and each TgGetData at 5 s and aborts an unanswered one with an
            ACK frame; at the end the board gets InRelease 00. The recording then holds the
            terminal's APDUs and events, not the serial frames.

            Readers that cannot emulate (not ACR122-class, the ACR1252U family, escape commands not
            enabled in the CCID driver) fail with the reason and what to do. At the end a
            `terminal:` line (also written to the --record transcript) says what the terminal did:
            how many APDUs, and for an NFC Forum Type 4 Tag whether the NDEF file was read to the
            end; if it was not, the tag is run through the model of Android's reader to say where
            and why Android would refuse it. On a simulated reader (`secbridge simulate`) each
            simulated terminal's own verdict follows: what it read, or the step and reason it
            failed. Exit status 0 when a terminal exchanged APDUs, read a Type 4 Tag to the end
            (any other credential: its last command got 90 00 or 61 XX, else the `terminal:` line
            names the answer it stopped at), and no simulated terminal failed; 1 otherwise. A
            terminal's PIN, keys and cryptograms are printed [REDACTED n], as the --record
            transcript has them, unless --show-secrets (docs/secrets.md).
            """,
        options: [
            .value("credential", "FILE", "The credential file to present (required).", .existingFile),
            .reader("The ACR122U: an index from `secbridge readers` or part of its name."),
            .value("device", "tty:PATH", "A PN532 board on this serial port (tty:/dev/ttyUSB0, or tty:USB0) instead of an ACR122U."),
            .flag("yes", "Approve the transaction without asking."),
            .flag("keep", "Serve terminals until the 60-second window ends, not only the first."),
            .flag("once", "End when the first terminal leaves, even a phone that left a Type 4 Tag before reading its NDEF file."),
            .value("record", "FILE", "Record the reader's exchanges and the terminal's APDUs to a transcript FILE."),
            .flag("json", "Print JSON lines, one per event: {event: authorization|state|assertion|apdu|field|secureElementChanged|cardEmulationTimeout|interrupted|other, …}, then {event: end, commands, status} or {event: error, error}; the prompt goes to standard error."),
            .showSecrets,
        ],
        // Ctrl-C or an error: the reader is restored in full (ResetCommand.swift), exit 130 on Ctrl-C.
        run: ReaderCleanup.wrapping { try runEmulate($0, relayClock: relayClock) }
    ) }

    @Sendable static func runEmulate(_ invocation: Invocation, relayClock: (any SessionClock)? = nil) throws -> Int32 {
        guard invocation.arguments.positional.isEmpty else {
            throw CLIError.usage("emulate takes no arguments, got '\(invocation.arguments.positional[0])'")
        }
        guard let path = invocation.arguments.value("credential") else {
            throw CLIError.usage("give the credential to present with --credential FILE")
        }
        let serving = try TerminalServing(keep: invocation.arguments.has("keep"), once: invocation.arguments.has("once"))
        let credential = try loadCredential(path, fallbackJSON: "", client: invocation.client, relayClock: relayClock)
        // A PN532 board on a serial line (docs/pn532-uart.md §9) is no PC/SC reader: no context.
        let serialPath = try invocation.arguments.value("device").map { device throws(CLIError) in
            if invocation.arguments.value("reader") != nil {
                throw twoReadersNamed(device: device)
            }
            return try SerialDeviceName.path(device)
        }
        let reader: String
        if let serialPath {
            reader = "tty:" + serialPath
        } else {
            let context = try openContext(invocation)
            let readers = try listReaders(context)
            reader = try selectReader(
                invocation.arguments.value("reader"), in: readers,
                preferring: { ACR122Detection.nameSuggestsACR122($0) })
        }
        let console = invocation.console
        // A recording that cannot be written (a full disk) stops with an error; the emulation and
        // the reader's restore go on, and the exit status says the recording is incomplete (said
        // here, in the emulation's own report).
        let recordPath = invocation.arguments.value("record") ?? ""
        let stoppingSink = try invocation.arguments.value("record").map { path throws(CLIError) in
            try invocation.recordings.open(
                path: path,
                header: TranscriptRecording.header(reader: reader, atr: nil, transmissionProtocol: .undefined, command: "emulate"),
                work: "the emulation", reportedByCommand: true)
        }
        let recorder = stoppingSink.map { TranscriptRecorder(sink: $0) }
        defer { stoppingSink?.finish() }
        let approve = invocation.arguments.has("yes")
        installInterruptHandler()
        let cleanup = ReaderCleanup.current
        let client = invocation.client
        let json = invocation.json
        let served: TerminalVerdict
        do {
            served = try awaitResult("card emulation", timeout: .seconds(180)) {
                try await emulate(
                    credential: credential, reader: reader, serialPath: serialPath, recorder: recorder, approve: approve, serving: serving,
                    console: console, client: client, window: serialPath == nil ? emulationWindow(invocation) : .seconds(60), json: json,
                    secrets: invocation.secrets, changingReader: { if serialPath == nil { cleanup?.track(reader) } })
            }
        } catch where json {
            // Events were printed already, so dispatch's {"error": …} would not come: the stream ends with it.
            EmulateReport.print(.failure((error as? CLIError)?.message ?? "\(error)"), json: true, on: console)
            throw error
        }
        let recordingFailure = stoppingSink?.failure
        let status = served.succeeded && recordingFailure == nil ? exitSuccess : exitFailure
        if let recordingFailure {
            // The reader was restored already: said here rather than thrown, so that no second restore runs.
            let message = "the recording to '\(recordPath)' is incomplete: \(recordingFailure.reason)"
            if json { EmulateReport.print(.failure(message), json: true, on: console) } else { console.err("secbridge: error: \(message)\n") }
        }
        EmulateReport.print(.end(commands: served.exchangeCount, status: status), json: json, on: console)
        return status
    }

    /// The emulate sequence; returns what the terminals did (``TerminalVerdict``), printed and
    /// recorded as a `terminal:` line.
    ///
    /// With `serialPath` the reader is a PN532 board on that serial line (``SerialPN532EmulationBackend``),
    /// reached without PC/SC, on real time: its restore is the backend's own (InRelease 00).
    static func emulate(
        credential: Credential, reader: String, serialPath: String? = nil, recorder: TranscriptRecorder?, approve: Bool,
        serving: TerminalServing = .untilDone,
        console: any Console, client: any PCSCClient = PCSCLiteClient(), window: Duration = .seconds(60),
        json: Bool = false, secrets: SecretDisplay = .masked, changingReader: @escaping @Sendable () -> Void = {}
    ) async throws -> TerminalVerdict {
        @Sendable func report(_ event: EmulateReport) { EmulateReport.print(event, json: json, on: console) }
        // On readers on virtual time the session runs on the readers' clock, as one activity with
        // this task as its first flow: time moves only while every flow waits on the clock (a
        // device wait, the runner's grace), never while the session's tasks or this command's
        // event handling run (docs/test-infrastructure.md, "Virtual time on an in-process desk").
        // (A serial board is not reached through the client: its waits are on real time.)
        let time = serialPath == nil ? client.virtualTime : nil
        let activity = time?.beginActivity()
        defer { activity?.end() }
        let executor = BlockingExecutor(name: "emulate", activity: activity)
        let prompter = BlockingExecutor(name: "authorization prompt")
        defer {
            executor.shutdown()
            prompter.shutdown()
        }
        let backend: any CardEmulationBackend
        let support: EmulationSupport
        // Releases the reader's connection (or the serial line), awaited before emulate returns.
        let closeBackend: @Sendable () async -> Void
        if let serialPath {
            let serial = await SerialPN532EmulationBackend.open(path: serialPath, executor: executor)
            (backend, support, closeBackend) = (serial, serial.support, { await serial.close() })
        } else {
            let acr122 = await openACR122Backend(reader: reader, recorder: recorder, executor: executor, client: client, console: console)
            (backend, support, closeBackend) = (acr122, acr122.support, { await acr122.close() })
        }
        // Whether pcscd reports the reader unavailable (unplugged). (A PC/SC call: on the
        // executor's thread, not Swift's shared pool.)
        @Sendable func readerIsGone() async -> Bool {
            guard serialPath == nil else { return false }
            return (try? await executor.run { () throws -> Bool in
                let context = try client.establishContext()
                defer { try? context.release() }
                return readerIsUnavailable(reader, context: context)
            }) ?? false
        }
        if case .unsupported(let reason, let cause) = support {
            // An unplugged reader answers no escape command either: say what is really wrong.
            if await readerIsGone() { throw CLIError.failure(readerUnavailableMessage(reader)) }
            // Another program keeps the reader: say so, in `send`'s words.
            if case .pcsc(let code, _)? = cause, code == PCSCError.sharingViolation.code || code == PCSCError.timeout.code {
                throw CLIError.failure("\(reader) cannot emulate a card: could not connect to it directly: \(describe(PCSCError(code: code, function: "SCardConnect")))")
            }
            throw CLIError.failure("\(reader) cannot emulate a card: \(reason)")
        }
        // Approved: card emulation changes the reader's settings next (PICC parameter, RF, MCU timeout).
        let authorizer = PolicyAuthorizer { request in
            if approve {
                report(.authorization(prompt: request.prompt, approved: true, reason: "--yes"))
                changingReader()
                return .approved
            }
            // With --json standard output carries only the JSON lines.
            if json { console.err("\(request.prompt) [y/N] ") } else { console.out("\(request.prompt) [y/N] ") }
            guard let answer = await answerOrInterrupt(prompter: prompter, console: console) else {
                report(.authorization(prompt: request.prompt, approved: false, reason: "interrupted"))
                return .declined
            }
            switch answer?.lowercased() {
            case "y", "yes":
                if json { report(.authorization(prompt: request.prompt, approved: true, reason: "answered yes")) }
                changingReader()
                return .approved
            case nil:
                report(.authorization(prompt: request.prompt, approved: false, reason: "no answer"))
                return .declined
            default:
                report(.authorization(prompt: request.prompt, approved: false, reason: "declined"))
                return .declined
            }
        }
        // Every path from here releases the reader's connection (backend.close()) before it
        // returns: a release still running on the executor when the process exits dies with it.
        let session: CredentialSession
        do {
            session = try CredentialSession.startSession(
                {
                    var options = CredentialSessionOptions(
                        credentials: [credential], emulationBackend: backend, authorizer: authorizer,
                        clock: time ?? ContinuousSessionClock())
                    options.activity = activity
                    return options
                }())
        } catch {
            await closeBackend()
            throw CLIError.failure("\(error)")
        }
        // What ends the wait for the terminal: done, the window's end, the session's end, Ctrl-C.
        // Whoever ends it first hands its hold of the activity to the waiting command.
        let finished = FinishSignal()
        @Sendable func finish() { if !finished.signal() { activity?.release() } }
        let secureElementChanges = Mutex<[String]>([])
        // The session ended because the reader failed (unplugged during a call, pcscd gone).
        let readerLost = Mutex(false)
        // The card-emulation state line comes before the first event of the emulation, whichever
        // of the session's return and a fast terminal's first event is seen first.
        let emulationAnnounced = OnceFlag()
        let emulationState = "\(SessionState.cardEmulation(credential: credential))"
        @Sendable func announceEmulation() {
            emulationAnnounced.once { report(.state(emulationState, reader: reader)) }
        }
        let isType4Tag = TerminalVerdict.isType4Tag(credential)
        let events = Task { () -> (commands: [(command: [UInt8], response: [UInt8])], activationStarts: [Int]) in
            var commands: [(command: [UInt8], response: [UInt8])] = []
            var activationStarts: [Int] = []
            var activeAfterCommands = false
            for await event in session.eventStream {
                // Each event holds the activity until it is handled (CredentialSessionOptions.activity).
                var ends = false
                defer { if ends { finish() } else { activity?.release() } }
                switch event {
                case .apduExchanged(let command, let response):
                    announceEmulation()
                    commands.append((command, response))
                    activeAfterCommands = true
                    report(.apdu(command: secrets.redactor.redact(command), response: secrets.redactor.redact(response: response, answering: command)))
                    try? recorder?.record(.target(.incoming, TranscriptBytes(command)))
                    try? recorder?.record(.target(.outgoing, TranscriptBytes(response)))
                case .fieldStateChanged:
                    announceEmulation()
                case .fieldObserved(let info):
                    announceEmulation()
                    report(.field(state: info.state.rawValue, observation: info.observation))
                    try? recorder?.recordEvent(info.state == .fieldPresent ? .fieldOn : .fieldOff, [TranscriptAttribute("observed", info.observation)])
                    if info.state == .fieldPresent, activationStarts.last != commands.count { activationStarts.append(commands.count) }
                    // A phone that slipped before the NDEF file was read usually comes back: the
                    // target is armed again (docs/terminal-models.md §6.1) until the window ends.
                    if info.state == .fieldAbsent && activeAfterCommands && serving.endsAfter(commands, credential: credential) {
                        ends = true
                    }
                case .readerEvent(.secureElementChanged(let detail)):
                    report(.secureElementChanged(detail))
                    try? recorder?.recordEvent(.cardReset, [TranscriptAttribute("secure-element", detail)])
                    secureElementChanges.withLock { $0.append(detail) }
                case .cardEmulationTimeout:
                    report(.cardEmulationTimeout)
                    ends = true
                case .sessionInvalidated(let reason):
                    report(.other("\(event)"))
                    if case .readerLost? = reason.invalidation { readerLost.withLock { $0 = true } }
                    ends = true
                case .readerEvent(.emulationStoppedByReaderError):
                    report(.other("\(event)"))
                    ends = true
                default:
                    report(.other("\(event)"))
                }
            }
            activity?.hold()
            finish()
            return (commands, activationStarts.isEmpty ? [0] : activationStarts)
        }
        do {
            try await session.enterWiredMode(using: credential)
            report(.state("\(await session.state)"))
            let assertion = try await session.acquirePresentmentAssertion()
            report(.assertion(assertion.state.rawValue))
            try await assertion.relinquish()
            // Without --keep one terminal is served: the target is not armed again after its
            // release, so the restore follows at once instead of after one MCU timeout. A Type 4
            // Tag keeps the grace re-arm: a phone that left before the end of the read is served
            // when it comes back, and after a complete read the session ends within the grace.
            var options = serving == .keep || isType4Tag ? credential.emulationDefaults : credential.emulationDefaults.rearming(.never)
            if window < .seconds(60) { options.timeLimit = min(options.timeLimit ?? window, window) }
            try await session.performTransaction(using: credential, options: options)
            announceEmulation()
            // Wait (bounded by the session's own 60 s window) for the terminal, the window, or Ctrl-C.
            // A cancelled task stops waiting and restores the reader as Ctrl-C does: `try?` on the
            // sleep would make the loop spin, each round throwing at once (seen: two such loops held
            // both threads of Swift's pool, and the session they waited for could not run).
            // Ctrl-C comes from outside: a watcher looks for it every 50 ms of real time.
            let interruptWatch = Task {
                while !interrupted() {
                    do { try await Task.sleep(for: .milliseconds(50)) } catch { return }
                }
                activity?.hold()
                finish()
            }
            if case .cardEmulation = await session.state {
                activity?.release()
                await finished.wait()
            } else if !finished.signal() {
                // Ended already: the hold its signaller handed over is one too many.
                activity?.release()
            }
            interruptWatch.cancel()
            if case .cardEmulation = await session.state {
                if interrupted() { report(.interrupted) }
                try await session.endCardEmulation()
            }
            report(.state("\(await session.state)"))
        } catch {
            await session.invalidate()
            _ = await events.value
            await closeBackend()
            throw CLIError.failure("\(error)")
        }
        await session.invalidate()
        let (served, activationStarts) = await events.value
        await closeBackend()
        // The reader went away during the emulation (its call ended with SCARD_E_READER_UNAVAILABLE).
        if readerLost.withLock({ $0 }), await readerIsGone() {
            throw CLIError.failure(readerUnavailableMessage(reader))
        }
        // A terminal command met a changed secure element and was answered 6F 00: that
        // transaction could not continue, whatever came after.
        if let change = secureElementChanges.withLock({ $0.first }) {
            throw CLIError.failure("the terminal's transaction could not continue: \(change)")
        }
        var verdict = await TerminalVerdict.evaluate(served, credential: credential, activationStarts: activationStarts)
        if serving == .once, isType4Tag, !verdict.succeeded, !served.isEmpty {
            verdict.details.append("  emulate ended when this terminal left (--once); without --once the target is armed again for a phone that comes back within the window")
        }
        // On a simulated reader the terminals' own verdicts too (their step and reason).
        // (PC/SC calls and a socket: on the executor's thread, not Swift's shared pool.)
        if serialPath == nil, let simulated = (try? await executor.run { SimulatedTerminals.verdicts(reader: reader, client: client) }) ?? nil {
            verdict.details += simulated.lines.map { "  " + $0 }
            if simulated.failed { verdict.succeeded = false }
        }
        report(.terminal(line: verdict.line, details: verdict.details, succeeded: verdict.succeeded))
        for line in [verdict.line] + verdict.details {
            try? recorder?.recordComment(line.trimmingPrefix("  ").description)
        }
        return verdict
    }

    /// The ACR122U's emulation backend: a direct connection to `reader` (bounded: pcscd lets
    /// SCardConnect wait while another program holds a transaction), recorded with `recorder`.
    /// The backend opens the channel again after pcscd went away (--keep across a restart): each
    /// later channel is a new context, announced on `console` once it is there.
    static func openACR122Backend(
        reader: String, recorder: TranscriptRecorder?, executor: BlockingExecutor, client: any PCSCClient, console: any Console
    ) async -> PN532EmulationBackend {
        let opened = Atomic(0)
        return await PN532EmulationBackend.open(
            readerName: reader, executor: executor, readerScope: client.readerScope, sharedSocketPath: client.sharedSocketPath
        ) {
            let context = try client.establishContext()
            let handle: any PCSCConnection
            do {
                // Bounded: pcscd lets SCardConnect wait while another program holds a transaction.
                handle = try CallWatchdog.shared.guarding("SCardConnect") { () throws(PCSCError) in
                    try context.connect(to: reader, share: .direct, protocols: .undefined)
                }
            } catch {
                try? context.release()
                throw error
            }
            let channel: any CardChannel = recorder.map { RecordingChannel(wrapping: handle, recorder: $0) } ?? handle
            if opened.add(1, ordering: .relaxed).newValue > 1 { console.err(pcscdCameBackLine) }
            return (channel, { try? handle.disconnect(.leave); try? context.release() })
        }
    }

    // MARK: read

    static let readCommand = Command(
        name: "read",
        abstract: SecbridgeCLI.toolAbstract("read"),
        usage: "[--reader NAME|INDEX] [--pn532 [--device tty:PATH]] [--wait SECONDS] [--aid HEX | --lenient-cc] [--key HEX12 [--key-b] --blocks N[-M]] [--dump FILE [--key HEX12 | --keys FILE] [--key-b]] [--json] [--record FILE]",
        discussion: """
            The host acts as the terminal. By default the reader's own polling finds the card
            (a PC/SC connection); with --pn532 an ACR122U is driven with PN532 initiator commands
            (automatic polling off, InListPassiveTarget, InDataExchange; settings restored after).
            An ACR122U clone or Touchatag-era unit, whose PC/SC side never reports the card, is
            read on the PN532 path by itself, with a note saying so. --wait SECONDS waits for a
            card through pcscd (SCardGetStatusChange) on the PC/SC path, and on the PN532 path with
            InListPassiveTarget polls, each ended by the chip after 33 activation attempts,
            repeated until a card answers or the wait is over.

            A storage card (its ATR names a PC/SC part 3 card: 80 4F 0C A0 00 00 03 06 …) is read
            with the reader's pseudo-APDUs: the UID (FF CA 00 00 00) and the card name from the ATR;
            an NFC Forum Type 2 Tag (MIFARE Ultralight, NTAG21x) has its capability container and
            NDEF message read (FF B0) and decoded; a MIFARE Classic card has the blocks of --blocks
            read with --key (key A, or key B with --key-b; loaded into the reader's volatile slot
            00). Keys never appear in the output or in transcripts; a sector trailer shows key A as
            zeros (the card never reveals it) and key B masked. A Type 2 Tag's model is asked with
            GET_VERSION (FF 00 00 00 03 D4 42 60) after the reads and shown on the `card:` line. If
            the card goes away mid-read, what was read and the exchanges are still printed (text
            and --json), with the error, and the exit status is 1. --aid and --pn532 do not apply
            to storage cards (usage error).

            --dump FILE writes every block (MIFARE Classic) or page (Ultralight, NTAG21x) to a new
            FILE in libnfc's layout, the one nfc-mfclassic and nfc-mfultralight read and write
            (restore it with `secbridge write-dump`). MIFARE Classic sectors are read with --key
            (default the transport key FF FF FF FF FF FF) or each sector's key from the trailers of
            --keys FILE, as key A or (--key-b) key B; each trailer in the file holds the key used,
            the access bits read and the other key where the card showed it (else 00 × 6). A
            dump is written whole or not at all, and never over an existing file.

            JSON: every hex value is uppercase without spaces. A byte string with secret bytes left
            out is an object instead: {"hex": "FF82000006", "redacted": 6} for Load Keys, and a
            sector trailer's data {"hex": "000000000000FF078069", "redacted": 6} (key B unshown).

            Without --aid, the card is read as an NFC Forum Type 4 Tag with Android's sequence and its
            NDEF message decoded. Its capability container is held to the rules of Android 12 and
            later (AOSP android-15.0.0_r23): a maximum NDEF size above 7FFF is refused, as those
            phones refuse it; --lenient-cc accepts what Android 8 to 11 accept (up to FFFE, as
            libnfc's nfc-emulate-forum-tag4 declares). docs/terminal-models.md §1 lists the rules. With --aid, that application is selected and the answer shown.
            The UID and ATS come from the ACR122U's Get Data pseudo-APDUs (FF CA 00/01 00 00) on
            the PC/SC path, from InListPassiveTarget on the PN532 path.
            With --pn532 --device tty:/dev/ttyUSB0 (or nfcpy's tty:USB0) the card is read through a
            PN532 board on a serial line, without pcscd (docs/pn532-uart.md); --reader, --wait,
            --record and the storage-card options do not apply there yet.

            Example:
              $ secbridge read --reader acr122
              UID 08 00 B0 0B  ATS 05 75 33 92 03
              NDEF record 1: URI https://example.com
              $ secbridge read --key FFFFFFFFFFFF --blocks 4-7     # a MIFARE Classic 1K
              $ secbridge read --dump card.mfd                     # every block, libnfc's layout
            """,
        options: [
            .reader("The reader: an index from `secbridge readers` or part of its name."),
            .flag("pn532", "Use PN532 initiator commands (ACR122U, no card needed at connect time)."),
            .value("device", "tty:PATH", "With --pn532: a PN532 board on this serial port (tty:/dev/ttyUSB0, or tty:USB0) instead of a PC/SC reader."),
            .waitForCard,
            .value("aid", "HEX", "SELECT this application (its AID: 5 to 16 bytes of hex) instead of reading NDEF."),
            .flag("lenient-cc", "Accept a Type 4 Tag capability container as Android 8 to 11 do (maximum NDEF size up to FFFE), not only as Android 12 and later do."),
            .value("key", "HEX12", "MIFARE Classic: the 6-byte key (12 hex digits), key A unless --key-b.").secret(),
            .flag("key-b", "MIFARE Classic: authenticate with the key as key B."),
            .value("blocks", "N[-M]", "MIFARE Classic: the block or inclusive block range to read."),
            .value("dump", "FILE", "Storage cards: write every block or page to a new FILE in libnfc's .mfd layout."),
            .value("keys", "FILE", "With --dump, MIFARE Classic: each sector's key from the trailers of this .mfd dump."),
            .flag("json", "Print a JSON object {reader, uid, ats, exchanges, ndef} (storage cards: {reader, card, uid, exchanges, ndef | blocks, error, note, hint}). Hex values are uppercase without spaces; a byte string with secret bytes left out (a key, a trailer's key B) is an object {\"hex\": the bytes shown, \"redacted\": how many bytes follow unshown}."),
            .value("record", "FILE", "Record the exchanges to a transcript FILE."),
        ],
        // Ctrl-C or an error with --pn532: the reader is restored in full (ResetCommand.swift).
        run: ReaderCleanup.wrapping(runRead)
    )

    @Sendable static func runRead(_ invocation: Invocation) throws -> Int32 {
        guard invocation.arguments.positional.isEmpty else {
            throw CLIError.usage("read takes no arguments, got '\(invocation.arguments.positional[0])'")
        }
        let aid = try invocation.arguments.value("aid").map { text throws(CLIError) -> AID in
            do throws(ISO7816Error) { return try AID(hex: text) } catch { throw CLIError.usage("--aid is not an AID (5 to 16 bytes of hex): \(error.reason)") }
        }
        var usePN532 = invocation.arguments.has("pn532")
        if aid != nil, invocation.arguments.has("lenient-cc") {
            throw CLIError.usage("--lenient-cc is for the NDEF read; with --aid no capability container is read")
        }
        let ccRules: Type4CapabilityContainer.Rules = invocation.arguments.has("lenient-cc") ? .lenient : .android
        // A PN532 board on a serial line: no pcscd involved (SerialRead.swift).
        if let device = invocation.arguments.value("device") {
            return try runSerialRead(invocation, device: device, aid: aid, rules: ccRules)
        }
        let context = try openContext(invocation)
        var (readers, states) = try listReadersWithStates(context)
        let wait = invocation.arguments.seconds("wait")
        // With --wait on the PN532 path (--pn532, or a clone or Touchatag-era unit whose PC/SC side
        // never reports the card), the wait is InListPassiveTarget polls up to the bound.
        var pollingBound: Duration?
        var unitNote: String?
        if let wait {
            if usePN532 {
                pollingBound = wait
            } else if let note = try pn532OnlyReaderToWaitOn(
                invocation.arguments.value("reader"), readers: readers, states: states, context: context) {
                usePN532 = true
                unitNote = note
                pollingBound = wait
            } else {
                (readers, states) = try waitForCard(context: context, reader: invocation.arguments.value("reader"), upTo: wait)
            }
        }
        let withCard = Set(states.filter(\.hasCard).map(\.readerName))
        let reader = try selectReader(
            invocation.arguments.value("reader"), in: readers,
            preferring: usePN532 ? { ACR122Detection.nameSuggestsACR122($0) } : { withCard.contains($0) })
        // The PC/SC path records the card's ATR and protocol in the header, as `send` does.
        let atr = states.first { $0.readerName == reader }?.atr
        // A PC/SC part 3 storage card (a memory card: no applications, no ISO 14443-4): --aid and
        // --pn532 do not apply. Checked before the reader is tracked, so nothing is reset.
        if withCard.contains(reader), let atr, let kind = StorageCard.kind(atr: atr) {
            if aid != nil {
                throw CLIError.usage("--aid selects an application, but the card in '\(reader)' is a \(kind) (its ATR names a PC/SC part 3 storage card), a memory card without applications: read it without --aid")
            }
            if usePN532 {
                throw CLIError.usage("the card in '\(reader)' is a \(kind) (its ATR names a PC/SC part 3 storage card): drop --pn532; storage cards are read through the PC/SC part 3 path (`secbridge read --reader \"\(reader)\"`)")
            }
        }
        // A clone or a Touchatag-era unit never shows the card in PC/SC: the PN532 reaches it
        // (docs/acr122-clones.md §3).
        if !usePN532, !withCard.contains(reader), let note = pn532OnlyNote(reader, states: states, context: context) {
            usePN532 = true
            unitNote = note
        }
        // The reader is tracked for the restore once the PN532 path has its connection: a reader
        // that could not be reached (another program holds it) was changed in nothing.
        let cleanup = usePN532 ? ReaderCleanup.current : nil
        if !usePN532 && !withCard.contains(reader) {
            if readerIsUnavailable(reader, context: context, waitingUpTo: .zero) { throw CLIError.failure(readerUnavailableMessage(reader)) }
            throw CLIError.failure("no card in '\(reader)': place a card or phone on the reader\(ACR122Detection.nameSuggestsACR122(reader) ? ", or use --pn532 to poll with PN532 commands" : "")")
        }
        // A PC/SC part 3 storage card: the reader's pseudo-APDUs instead of ISO 7816-4 (StorageCardCommands.swift).
        if !usePN532, aid == nil, let atr, StorageCard.identify(atr: atr) != nil {
            if let path = invocation.arguments.value("dump") {
                return try runDumpRead(invocation, context: context, reader: reader, path: path)
            }
            if invocation.arguments.value("keys") != nil { throw CLIError.usage("--keys goes with --dump FILE") }
            return try runStorageCardRead(invocation, context: context, reader: reader)
        }
        if invocation.arguments.value("dump") != nil || invocation.arguments.value("keys") != nil {
            throw CLIError.usage("--dump and --keys dump storage cards (MIFARE Classic, Ultralight, NTAG21x) on the PC/SC path (without --pn532 and --aid); the card in '\(reader)' is not a PC/SC part 3 storage card")
        }
        if invocation.arguments.value("key") != nil || invocation.arguments.value("blocks") != nil || invocation.arguments.has("key-b") {
            throw CLIError.usage("--key, --key-b and --blocks read MIFARE Classic cards on the PC/SC path (without --pn532 and --aid); the card in '\(reader)' is not a PC/SC part 3 storage card")
        }
        let writer = try invocation.arguments.value("record").map { path throws(CLIError) in
            try invocation.recordings.open(
                path: path,
                header: TranscriptRecording.header(
                    reader: reader, atr: usePN532 ? nil : atr, transmissionProtocol: usePN532 ? .undefined : .t1, command: "read"),
                work: "the read")
        }
        let pn532Path = usePN532
        defer { writer?.finish() }
        let recorder = writer.map { TranscriptRecorder(sink: $0) }
        let client = invocation.client
        let session = ReaderSession(readerName: reader, path: pn532Path ? .pn532Initiator : .pcsc, pollingBound: pollingBound) {
            let context = try client.establishContext()
            let handle: any PCSCConnection
            do {
                // Bounded: pcscd lets SCardConnect wait while another program holds a transaction.
                handle = try CallWatchdog.shared.guarding("SCardConnect") { () throws(PCSCError) in
                    pn532Path
                        ? try context.connect(to: reader, share: .direct, protocols: .undefined)
                        : try context.connect(to: reader, share: .shared, protocols: .any)
                }
            } catch {
                try? context.release()
                throw error
            }
            cleanup?.track(reader)
            // The PC/SC path runs in one transaction: no other program's SELECT lands between our
            // SELECT and the READ BINARY that depends on it.
            if !pn532Path {
                do {
                    try CallWatchdog.shared.guarding("SCardBeginTransaction", stalled: heldByAnotherProgram(reader)) { () throws(PCSCError) in
                        try handle.beginTransaction()
                    }
                } catch {
                    try? handle.disconnect(.leave)
                    try? context.release()
                    throw error
                }
            }
            let channel: any CardChannel = recorder.map { RecordingChannel(wrapping: handle, recorder: $0) } ?? handle
            return (channel, {
                if !pn532Path { try? handle.endTransaction(.leave) }
                try? handle.disconnect(.leave)
                try? context.release()
            })
        }
        struct Outcome: Sendable {
            var uid: [UInt8]?
            var ats: [UInt8]?
            var selectResponse: [UInt8]?
            var tag: Type4TagReader.Result?
            var tagError: String?
        }
        let isACR122 = ACR122Detection.nameSuggestsACR122(reader)
        let log = ExchangeLog()
        let (outcome, exchanges) = try readerSessionErrorsExplained(reader, unitNote: unitNote, context: context) { () throws in
            do {
                return try awaitResult("the reader session", timeout: .seconds(60) + (pollingBound ?? .zero)) {
            try await session.run { session -> Outcome in
                // On the PN532 path, the C-APDUs inside InDataExchange are recorded as `ini` lines
                // beside the raw `ctl` exchanges (Fixtures/README.md).
                let transceiver = RecordingTransceiver(session, recorder: pn532Path ? recorder : nil, log: log)
                var outcome = Outcome()
                if let target = transceiver.target {
                    outcome.uid = target.uid
                    outcome.ats = target.ats
                } else if isACR122 {
                    // PC/SC part 3 Get Data through the ACR122U (ACR122U API v2.04 §4): UID, then ATS.
                    let uid = try await transceiver.transceive([0xFF, 0xCA, 0x00, 0x00, 0x00])
                    if uid.count > 2, uid.suffix(2) == [0x90, 0x00] { outcome.uid = Array(uid.dropLast(2)) }
                    let ats = try await transceiver.transceive([0xFF, 0xCA, 0x01, 0x00, 0x00])
                    if ats.count > 2, ats.suffix(2) == [0x90, 0x00] { outcome.ats = Array(ats.dropLast(2)) }
                }
                if let aid {
                    outcome.selectResponse = try await transceiver.transceive(CommandAPDU.select(aid: aid).serialized())
                } else {
                    do {
                        outcome.tag = try await Type4TagReader.read(rules: ccRules) { try await transceiver.transceive($0) }
                    } catch let error as Type4TagReader.ReadError {
                        outcome.tagError = error.description
                    }
                }
                return outcome
            }
                }
            } catch let error where !(error is CLIError) && !(error is CredentialSessionError && log.all.isEmpty) {
                // The exchanges that completed stay in the output (and the recording has them).
                let message = explainReadFailure(error, reader: reader, context: context, recorded: recorder != nil)
                let done = log.all
                if invocation.json {
                    invocation.out(JSONValue.object([
                        ("reader", .string(reader)),
                        ("exchanges", .array(done.map { JSONValue.object([("command", SecretDisplay.masked.json($0.command)), ("response", SecretDisplay.masked.json(response: $0.response, answering: $0.command))]) })),
                        ("error", .string(message)),
                    ]).prettySerialized())
                } else {
                    invocation.out("reader: \(reader)")
                    if let unitNote { invocation.out("note: \(unitNote)") }
                    for exchange in done {
                        invocation.out("> \(SecretDisplay.masked.text(exchange.command))")
                        invocation.out("< \(SecretDisplay.masked.text(response: exchange.response, answering: exchange.command))")
                    }
                }
                throw CLIError.failure(message)
            }
        }
        if invocation.json {
            var members: [(String, JSONValue)] = [
                ("reader", .string(reader)), ("uid", outcome.uid.map { .hex($0) } ?? .null),
                ("ats", outcome.ats.map { .hex($0) } ?? .null),
                ("exchanges", .array(exchanges.map { JSONValue.object([("command", SecretDisplay.masked.json($0.command)), ("response", SecretDisplay.masked.json(response: $0.response, answering: $0.command))]) })),
            ]
            if let unitNote { members.append(("note", .string(unitNote))) }
            if let response = outcome.selectResponse {
                members.append(("select", .hex(response)))
                if let parsed = try? ResponseAPDU(parsing: response), let verdict = selection(of: aid!, parsed) {
                    members.append(("selected", .string(verdict.kind)))
                }
            }
            if let tag = outcome.tag {
                members.append(("ndef", .array(tag.message.records.map(recordJSON))))
            }
            if let error = outcome.tagError { members.append(("error", .string(error))) }
            invocation.out(JSONValue.object(members).prettySerialized())
        } else {
            invocation.out("reader: \(reader)")
            if let unitNote { invocation.out("note: \(unitNote)") }
            var identity: [String] = []
            if let uid = outcome.uid { identity.append("UID \(uid.hexString)") }
            if let ats = outcome.ats { identity.append("ATS \(ats.isEmpty ? "none" : ats.hexString)") }
            if !identity.isEmpty { invocation.out(identity.joined(separator: "  ")) }
            printReadBody(invocation, exchanges: exchanges.map { ($0.command, $0.response) }, aid: aid,
                          selectResponse: outcome.selectResponse, tag: outcome.tag)
        }
        if let error = outcome.tagError {
            throw CLIError.failure("not readable as an NFC Forum Type 4 Tag: \(error)")
        }
        return exitSuccess
    }

    /// `read`'s text after the UID line: each exchange (secrets masked), the SELECT verdict with
    /// --aid, the NDEF records otherwise. Shared by the PC/SC, ACR122U-PN532 and serial paths.
    static func printReadBody(
        _ invocation: Invocation, exchanges: [(command: [UInt8], response: [UInt8])], aid: AID?,
        selectResponse: [UInt8]?, tag: Type4TagReader.Result?
    ) {
        for exchange in exchanges {
            invocation.out("> \(SecretDisplay.masked.text(exchange.command))")
            invocation.out("< \(SecretDisplay.masked.text(response: exchange.response, answering: exchange.command))")
        }
        if let aid, let response = selectResponse, let parsed = try? ResponseAPDU(parsing: response) {
            invocation.out("SELECT \(aid.bytes.hexString): SW \(parsed.statusWord.bytes.hexString) (\(parsed.statusWord.meaning))")
            if let verdict = selection(of: aid, parsed) { invocation.out(verdict.text) }
        }
        if let tag {
            for line in tag.message.lines { invocation.out(line) }
            if tag.message.records.isEmpty { invocation.out("NDEF: the tag holds an empty message") }
        }
    }

    /// The `note:` for reading `reader` through the PN532 because it is an ACR122-class unit whose
    /// PC/SC side never reports a card (a clone, a Touchatag-era unit: ``ACR122Unit``,
    /// docs/acr122-clones.md §3), nil for any other reader.
    static func pn532OnlyNote(_ reader: String, states: [ReaderState], context: any PCSCClientContext) -> String? {
        guard ACR122Detection.nameSuggestsACR122(reader) else { return nil }
        let unit = classifyACR122Unit(context: context, reader: reader, atr: states.first { $0.readerName == reader }?.atr ?? [])
        guard unit.reachesCardsOnlyThroughPN532 else { return nil }
        return "\(reader) is \(unit.summary); reading with PN532 initiator commands, as with --pn532"
    }

    /// `read --wait`: the note for waiting through the PN532 instead of SCardGetStatusChange, when
    /// the reader waited on (the one `--reader` names, or the only reader without `--reader`) shows
    /// no card and is a unit whose PC/SC side never reports one (``pn532OnlyNote``). Nil otherwise:
    /// the wait is then pcscd's, for the first reader with a card.
    static func pn532OnlyReaderToWaitOn(
        _ argument: String?, readers: [String], states: [ReaderState], context: any PCSCClientContext
    ) throws(CLIError) -> String? {
        guard argument != nil || readers.count == 1 else { return nil }
        let reader = try selectReader(argument, in: readers)
        if states.contains(where: { $0.readerName == reader && $0.hasCard }) { return nil }
        return pn532OnlyNote(reader, states: states, context: context)
    }

    /// What a successful SELECT says about the application selected (ISO/IEC 7816-4 §7.1.1: the
    /// FCI's DF name 84, or 61/4F; docs/cases.md P14): nil unless the SW is 90 00. `kind` is the
    /// JSON word: `verified` (the FCI names the AID, an extension or its PIX), `unverified` (a
    /// bare 90 00 without FCI, or an FCI naming no AID), `mismatch`.
    static func selection(of aid: AID, _ response: ResponseAPDU) -> (kind: String, text: String)? {
        guard response.statusWord.isSuccess else { return nil }
        if response.data.isEmpty {
            return ("unverified", "selected without FCI (a bare 90 00): unverified, the card did not say which application answered")
        }
        do {
            switch try checkSelectedAID(requested: aid, responseData: response.data) {
            case .notReported:
                return ("unverified", "selected: the FCI names no AID, so which application answered is unverified")
            case .exact:
                return ("verified", "selected: the FCI names \(aid.bytes.hexString)")
            case .extendsRequest(let longer):
                return ("verified", "selected: the FCI names \(longer.bytes.hexString), which extends the AID asked for")
            case .pixOnly(let pix):
                return ("verified", "selected: the FCI names the PIX \(pix.hexString) of the AID asked for")
            }
        } catch let error as SelectedAIDMismatchError {
            return ("mismatch", "warning: \(error)")
        } catch {
            return ("unverified", "selected: the answer's data is not BER-TLV (\(error)), so which application answered is unverified")
        }
    }

    /// Runs `body`, turning a reader session's failure to take the card into the words `send`
    /// uses: a sharing violation at connect (another program has the card exclusively), or a
    /// transaction that could not begin (another program holds one).
    /// With `unitNote` (the read fell back to the PN532 path on a clone or a Touchatag-era unit),
    /// a session that found no card says why that path was taken.
    static func readerSessionErrorsExplained<T>(
        _ reader: String, unitNote: String? = nil, context: (any PCSCClientContext)? = nil, _ body: () throws -> T
    ) throws -> T {
        do {
            return try body()
        } catch let error as CredentialSessionError {
            if let unitNote, error.code == .instanceDoesNotExist, error.cause == nil {
                throw CLIError.failure("\(error.reason) (\(unitNote))")
            }
            guard case .pcsc(let code, _)? = error.cause else { throw error }
            if let context, code != PCSCError.noSmartcard.code, readerIsUnavailable(reader, context: context) {
                throw CLIError.failure(readerUnavailableMessage(reader))
            }
            if code == PCSCError.sharingViolation.code {
                throw CLIError.failure("could not connect to '\(reader)': \(describe(PCSCError(code: code, function: "SCardConnect")))")
            }
            if code == PCSCError.timeout.code {
                // SCardConnect or SCardBeginTransaction gave up waiting for another program's transaction.
                throw CLIError.failure(heldByAnotherProgram(reader) + " (SCARD_E_TIMEOUT)")
            }
            throw error
        }
    }

    /// A failed reader session in words: a card reset or removed mid-read is said so
    /// (``cardChange(_:reader:cardIsGone:recorded:again:removal:)``, the reader asked through `context`).
    static func explainReadFailure(_ error: any Error, reader: String, context: any PCSCClientContext, recorded: Bool) -> String {
        let cause = (error as? CredentialSessionError)?.cause ?? UnderlyingCause(error)
        if case .pcsc(let code, _) = cause, code != PCSCError.noSmartcard.code, readerIsUnavailable(reader, context: context) {
            return readerUnavailableMessage(reader)
        }
        guard case .pcsc(let code, _) = cause,
              let changed = cardChange(code, reader: reader, cardIsGone: { cardLeft(reader, context: context) }, recorded: recorded, again: "read")
        else { return "\(error)" }
        return changed
    }

    /// A reader session's transceiver that also records each APDU as `ini` lines.
    struct RecordingTransceiver: Sendable {
        let inner: ReaderSession.Transceiver
        let recorder: TranscriptRecorder?
        /// Every exchange that completed, kept for the output when a later one fails.
        let log: ExchangeLog?
        init(_ inner: ReaderSession.Transceiver, recorder: TranscriptRecorder?, log: ExchangeLog? = nil) {
            self.inner = inner
            self.recorder = recorder
            self.log = log
        }
        var target: ISO14443ATarget? { inner.target }
        func transceive(_ command: [UInt8]) async throws -> [UInt8] {
            try? recorder?.record(.initiator(.outgoing, TranscriptBytes(command)))
            let response = try await inner.transceive(command)
            try? recorder?.record(.initiator(.incoming, TranscriptBytes(response)))
            log?.append(command, response)
            return response
        }
    }

    /// The line typed at a prompt (nil at the end of input), or nil when Ctrl-C or SIGTERM came
    /// first: the read blocks a thread that cannot be woken, so the signal flag is watched beside
    /// it (every 50 ms: a signal handler can only set a flag) and the read is left behind.
    static func answerOrInterrupt(prompter: BlockingExecutor, console: any Console) async -> String?? {
        await firstOf(
            { .some((try? await prompter.run { console.readLine() }) ?? nil) },
            {
                while !interrupted() {
                    do { try await Task.sleep(for: .milliseconds(50)) } catch { break }
                }
                return nil
            })
    }

    /// A one-time signal a task awaits: ``signal()`` ends ``wait()`` (also one that starts later).
    /// Cancellation does not end the wait: every signaller of `emulate` comes (the session's
    /// event stream ends on every path, and the task's cancellation is not one of them).
    final class FinishSignal: Sendable {
        private let state = Mutex<(signalled: Bool, waiter: CheckedContinuation<Void, Never>?)>((false, nil))

        /// Ends the wait; true the first time.
        func signal() -> Bool {
            let (first, waiter) = state.withLock { state -> (Bool, CheckedContinuation<Void, Never>?) in
                if state.signalled { return (false, nil) }
                state.signalled = true
                defer { state.waiter = nil }
                return (true, state.waiter)
            }
            waiter?.resume()
            return first
        }

        /// Returns once ``signal()`` was called.
        func wait() async {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    if state.signalled { return true }
                    state.waiter = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        }
    }

    /// Runs a body at most once, from any thread (the body runs under the flag's lock).
    final class OnceFlag: Sendable {
        private let done = Mutex(false)
        func once(_ body: () -> Void) {
            done.withLock { done in
                if !done { body() }
                done = true
            }
        }
    }

    /// The exchanges of a reader session so far, shared between its task and the command.
    final class ExchangeLog: Sendable {
        private let entries = Mutex<[(command: [UInt8], response: [UInt8])]>([])
        func append(_ command: [UInt8], _ response: [UInt8]) { entries.withLock { $0.append((command, response)) } }
        var all: [(command: [UInt8], response: [UInt8])] { entries.withLock { $0 } }
    }
}
