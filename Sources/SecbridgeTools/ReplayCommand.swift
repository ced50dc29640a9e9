// These commands link Foundation (through the session engine and the pcscd sandbox, PCSCSandbox), so
// they live in the `secbridge-tools` binary; `secbridge` hands them over (see SecbridgeCLI/Root.swift).
import SecbridgeCLI
import ISO7816
import InProcessPCSC
import PCSC
import PCSCSandbox
import SecureElementCredential
import Transcript

#if canImport(Glibc)
import Glibc
#endif

extension SecbridgeCLI {
    static let replayCommand = Command(
        name: "replay",
        abstract: SecbridgeCLI.toolAbstract("replay"),
        usage: "[--against live|credential:FILE|simulated] [--mode strict|ignore-timing|wildcard] [--reader NAME|INDEX] [--json] [--record FILE] FILE",
        discussion: """
            Every recorded command (SCardTransmit `>` and SCardControl `ctl` lines) is sent in
            order; each answer must match the recorded one (`??` bytes match anything). The first
            difference stops the replay with exit status 1, naming the file and line, the expected
            and the actual answer.

            Before anything is sent, the whole file is checked: a command with redacted bytes
            (`[REDACTED n]`) or `??` wildcards is refused, since sending other bytes than the
            original (a masked VERIFY) would spend the card's PIN tries.

            The reader is --reader, else the transcript header's `reader` when connected, else the
            first reader with a card. A transcript whose header says `protocol: undefined` is
            replayed over a direct connection (no card needed; reader control commands only).

            --against credential:FILE plays the terminal's side instead (the `tgt <` commands, or
            the `>` commands of a file without `tgt` lines; reader pseudo-APDUs with CLA FF are
            skipped) to the credential's host applets, and compares each answer with the recorded
            `tgt >` (or `<`) line. No reader is needed.

            --mode: every mode checks the order and count of the exchanges and never the time
            offsets. strict (the default) compares the answers byte for byte (`??` and
            `[REDACTED n]` in the file match anything); ignore-timing replays as strict; wildcard
            also lets the data (not SW1-SW2, not the length) of GET CHALLENGE (INS 84) and of
            INTERNAL/EXTERNAL AUTHENTICATE (INS 88/82) answers differ, since they are random.
            """,
        options: [
            .value("against", "TARGET", "What answers: live (a reader, the default), credential:FILE (a credential file's host applets), simulated (a simulated ACR122U in this process)."),
            .value("mode", "MODE", "How answers are compared: strict (the default), ignore-timing or wildcard.",
                   .choice(ReplayMode.allCases.map(\.rawValue))),
            .reader("The reader: an index from `secbridge readers` or part of its name."),
            .flag("json", "Print a JSON object {file, reader, exchanges, result, error}."),
            .value("record", "FILE", "Record the replayed exchanges (what the reader answered now) to a transcript FILE."),
        ],
        run: runReplay
    )

    @Sendable static func runReplay(_ invocation: Invocation) throws -> Int32 {
        guard invocation.arguments.positional.count == 1 else {
            throw CLIError.usage(
                invocation.arguments.positional.isEmpty
                    ? "give the transcript file to replay" : "replay takes one transcript file, got \(invocation.arguments.positional.count) arguments")
        }
        let path = invocation.arguments.positional[0]
        let options = replayOptions(invocation.arguments.value("mode"))
        let against = invocation.arguments.value("against") ?? "live"
        var credentialPath: String?
        switch against {
        case "live":
            break
        case "simulated":
            break
        case _ where against.hasPrefix("credential:"):
            let file = String(against.dropFirst("credential:".count))
            guard !file.isEmpty else { throw CLIError.usage("--against credential:FILE needs the credential file, e.g. --against credential:Fixtures/credentials/uri-tag.json") }
            credentialPath = file
        default:
            throw CLIError.usage("--against takes live, credential:FILE or simulated, not '\(against)'")
        }
        if against != "live", invocation.arguments.value("reader") != nil || invocation.arguments.value("record") != nil {
            throw CLIError.usage("--reader and --record apply to --against live only; a \(credentialPath != nil ? "credential" : "simulated") replay uses no reader of pcscd")
        }
        // One reading checks the whole file (nothing held but the findings); the replay reads it
        // again line by line, so memory does not grow with the file.
        var invalidCommand: String?
        var hasCommands = false
        let transcript: TranscriptReplayFile
        do {
            transcript = try TranscriptReplayFile(contentsOfFile: path) { number, line in
                switch line.record?.entry {
                case .transmit(.outgoing, let bytes)?:
                    hasCommands = true
                    // Every recorded card command must be a well-formed command APDU before
                    // anything is sent (a card may fail on malformed bytes); reader pseudo-APDUs
                    // (CLA FF) and control commands go as recorded.
                    guard invalidCommand == nil, let command = bytes.bytes, command.first != 0xFF else { return }
                    do throws(ISO7816Error) {
                        _ = try CommandAPDU(parsing: command)
                    } catch {
                        invalidCommand = "\(path):\(number): the recorded command is not a valid APDU (\(error.reason)); nothing was sent"
                    }
                case .control(_, .outgoing, _)?:
                    hasCommands = true
                default:
                    break
                }
            }
        } catch {
            throw CLIError.failure("\(error)")
        }
        if let credentialPath {
            return try replayAgainstCredential(transcript, path: path, credentialPath: credentialPath, options: options, invocation: invocation)
        }
        do {
            try transcript.checkLive()
        } catch {
            throw CLIError.failure("\(error)")
        }
        if let invalidCommand { throw CLIError.failure(invalidCommand) }
        if !hasCommands {
            throw CLIError.failure("\(path) records no commands to replay (no `>` or `ctl … >` lines)")
        }
        if against == "simulated" {
            return try replayAgainstSimulatedReader(transcript, path: path, options: options, invocation: invocation)
        }
        let context = try openContext(invocation)
        let readers = try listReaders(context)
        let direct = transcript.header.transmissionProtocol == .undefined
        var argument = invocation.arguments.value("reader")
        if argument == nil, let recorded = transcript.header.reader {
            if readers.contains(recorded) {
                argument = recorded
            } else {
                invocation.console.err("secbridge: note: the recorded reader '\(recorded)' is not connected; replaying on another\n")
            }
        }
        var channel: any CardChannel
        let reader: String
        var finishRecording: () -> Void = {}
        defer { finishRecording() }
        if direct {
            reader = try selectReader(argument, in: readers)
            let handle: any PCSCConnection
            do throws(PCSCError) {
                handle = try context.connect(to: reader, share: .direct, protocols: .undefined)
            } catch {
                throw CLIError.failure("could not connect to '\(reader)' directly: \(describe(error))")
            }
            channel = handle
            if let path = invocation.arguments.value("record") {
                let recording = try TranscriptRecording.start(
                    path: path, inner: handle, reader: reader, atr: [], command: "replay", recordings: invocation.recordings, work: "the replay")
                channel = recording.channel
                finishRecording = recording.finish
            }
        } else {
            let session = try CardSession.open(
                context: context, reader: argument, record: invocation.arguments.value("record"), command: "replay",
                recordings: invocation.recordings, work: "the replay")
            reader = session.reader
            channel = session.channel
            finishRecording = session.close
        }
        do {
            let count = try LiveReplay.run(transcript, on: channel, options: options)
            if invocation.json {
                invocation.out(JSONValue.object([
                    ("file", .string(path)), ("reader", .string(reader)), ("exchanges", .int(count)),
                    ("result", .string("match")), ("error", .null),
                ]).prettySerialized())
            } else {
                invocation.out("replayed \(count) exchange\(count == 1 ? "" : "s") from \(path) on '\(reader)': every answer matches")
            }
            return exitSuccess
        } catch {
            if invocation.json {
                invocation.out(JSONValue.object([
                    ("file", .string(path)), ("reader", .string(reader)), ("exchanges", .null),
                    ("result", .string(error.code.rawValue)), ("error", .string(error.description)),
                ]).prettySerialized())
                return exitFailure
            }
            throw CLIError.failure(error.description)
        }
    }

    /// `--against simulated`: the host side of the transcript against a simulated ACR122U driven in
    /// this process (the driver's entry points with pcscd's rules; no pcscd needed).
    ///
    /// A transcript of a DIRECT connection (`protocol: undefined`: escape commands, PN532 frames)
    /// replays against the reader itself, as a fresh device powered up: a recording made on a real
    /// ACR122U thus checks the simulator's fidelity, and one made on the simulator checks that it
    /// still answers the same. A transcript of a card session replays through the reader to an ISO
    /// 14443-4 card placed in its field that answers from the same transcript: this exercises the
    /// reader path (power-up, ATR, T=1 forwarding), not the card.
    ///
    /// Only the card session places something through the reader's control socket: a DIRECT replay
    /// opens its reader with `control=none`, so no socket, directory or accept thread is made.
    static func replayAgainstSimulatedReader(
        _ transcript: TranscriptReplayFile, path: String, options: ReplayOptions, invocation: Invocation
    ) throws -> Int32 {
        if transcript.header.transmissionProtocol == .undefined {
            return try withFreshSimulatedReader(named: "replay-simulated", controlSocket: false) { readers, reader, _ in
                let channel: InProcessCardHandle
                do throws(PCSCError) {
                    channel = try readers.connect(to: reader, share: .direct, protocols: .undefined)
                } catch {
                    throw CLIError.failure("could not connect to the simulated reader: \(describe(error))")
                }
                return try replay(transcript, on: channel, path: path, options: options, invocation: invocation, reader: reader, direct: true)
            }
        }
        return try withFreshSimulatedReader(named: "replay-simulated") { readers, reader, control in
            let absolute = path.hasPrefix("/") ? path : (environmentValue("PWD") ?? ".") + "/" + path
            do {
                // The card takes this process's check of the file and reads it one exchange at
                // a time as the APDUs come (docs/transcript-diff.md, "§7"); should the file have
                // changed since, it checks it again first, so the wait grows with the file:
                // 10 s, and 1 s more per 4 MiB.
                var info = stat()
                let size = stat(absolute, &info) == 0 ? Int(info.st_size) : 0
                _ = try control.request("place-card", ["uid": "04A1B2C3", "transcript": absolute, "id": "replay"],
                                        timeout: .seconds(10 + size / (4 << 20)))
            } catch {
                throw CLIError.failure("the simulated reader could not take a card answering from \(path): \(error)")
            }
            // pcscd's rule: presence is polled; the in-process layer polls on use (bounded).
            var handle: InProcessCardHandle?
            for _ in 0..<20 where handle == nil {
                handle = try? readers.connect(to: reader, share: .shared, protocols: .any)
                if handle == nil { sleepMilliseconds(50) }
            }
            guard let handle else {
                throw CLIError.failure("the simulated reader did not report the placed card within 1 s")
            }
            return try replay(transcript, on: handle, path: path, options: options, invocation: invocation, reader: reader, direct: false)
        }
    }

    /// The time scale of the fresh simulated reader a replay runs against: a replay compares
    /// answers, never time offsets (``ReplayMode``), so the device's waits (a TgInitAsTarget
    /// waiting out the 5 s MCU timeout, libccid's 30 s escape timeout) take 1/100 of real time.
    static let replayTimeScale = 0.01

    /// Runs `body` with a fresh simulated ACR122U in this process (the driver's entry points with
    /// pcscd's rules, as just plugged in, at ``replayTimeScale``), its name and its control socket;
    /// the reader and its directory under /tmp are gone afterwards.
    /// - Throws: `CLIError.failure` when the reader cannot be created; what `body` throws.
    static func withFreshSimulatedReader<T>(
        named name: String, _ body: (InProcessReaders, String, SimulatedReaderControl) throws -> T
    ) throws -> T {
        try withFreshSimulatedReader(named: name, controlSocket: true) { readers, reader, base in
            try body(readers, reader, SimulatedReaderControl(socketPath: base + "/a/control.sock"))
        }
    }

    /// As ``withFreshSimulatedReader(named:_:)``; with `controlSocket` false the reader serves no
    /// control socket (`control=none`) and nothing is created under /tmp. `body` gets the readers,
    /// the reader's name and the directory its control socket lives under (`<base>/a/control.sock`).
    ///
    /// With a control socket the directory is made by mkdtemp(3) (mode 0700, a name no other user
    /// can take first): the driver accepts a directory that already exists, so a predictable name
    /// in /tmp would let another local user's directory, made beforehand, hold the socket.
    static func withFreshSimulatedReader<T>(
        named name: String, controlSocket: Bool, _ body: (InProcessReaders, String, String) throws -> T
    ) throws -> T {
        let base: String
        if controlSocket {
            var template = Array("/tmp/secbridge-\(name).XXXXXX".utf8CString)
            guard mkdtemp(&template) != nil else {
                throw CLIError.failure("cannot create the in-process simulated reader: mkdtemp in /tmp: \(String(cString: strerror(errno)))")
            }
            base = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        } else {
            base = freshReaderBase(named: name)
        }
        let readers = InProcessReaders()
        defer {
            readers.close()
            // The driver made the directories for the control socket only.
            if controlSocket {
                for directory in [base + "/a", base] { _ = rmdir(directory) }
            }
        }
        let reader: String
        do {
            reader = try readers.createChannel(
                deviceName: base + "/a" + SimulatedReaders.timeScaleOption(replayTimeScale) + (controlSocket ? "" : ":control=none"))
        } catch {
            throw CLIError.failure("cannot create the in-process simulated reader: \(error)")
        }
        return try body(readers, reader, base)
    }

    /// The parent of the fresh simulated reader `name`'s directory `<base>/a` when it serves no
    /// control socket (only a name in its DEVICENAME then: nothing is made there), one per process.
    static func freshReaderBase(named name: String) -> String {
        "/tmp/secbridge-\(name).\(getpid())"
    }

    /// Replays `transcript` on `channel` (the fresh simulated reader `reader`, DIRECT or a card
    /// session) and reports the result as `replay --against simulated` does.
    private static func replay(
        _ transcript: TranscriptReplayFile, on channel: any CardChannel, path: String, options: ReplayOptions,
        invocation: Invocation, reader: String, direct: Bool
    ) throws -> Int32 {
        do {
            let count = try LiveReplay.run(transcript, on: channel, options: options)
            if invocation.json {
                invocation.out(JSONValue.object([
                    ("file", .string(path)), ("reader", .string(reader)), ("against", .string("simulated")),
                    ("exchanges", .int(count)), ("result", .string("match")), ("error", .null),
                ]).prettySerialized())
            } else {
                invocation.out("replayed \(count) exchange\(count == 1 ? "" : "s") from \(path) on a simulated ACR122U (\(direct ? "the reader itself, DIRECT" : "a card answering from the transcript")): every answer matches")
            }
            return exitSuccess
        } catch {
            if invocation.json {
                invocation.out(JSONValue.object([
                    ("file", .string(path)), ("reader", .string(reader)), ("against", .string("simulated")),
                    ("exchanges", .null), ("result", .string(error.code.rawValue)), ("error", .string(error.description)),
                ]).prettySerialized())
                return exitFailure
            }
            throw CLIError.failure(error.description)
        }
    }

    /// The `--mode` value (one of ``ReplayMode``'s, checked by the parser) as ``ReplayOptions``; strict when absent.
    static func replayOptions(_ text: String?) -> ReplayOptions {
        ReplayOptions(mode: text.flatMap(ReplayMode.init(rawValue:)) ?? .strict)
    }

    /// `--against credential:FILE`: the terminal's side to the credential's host applets.
    static func replayAgainstCredential(
        _ transcript: TranscriptReplayFile, path: String, credentialPath: String, options: ReplayOptions, invocation: Invocation
    ) throws -> Int32 {
        let credential: Credential
        do {
            let file = try CredentialFile(contentsOfFile: credentialPath)
            guard case .applets = file.secureElement else {
                throw CLIError.failure("\(credentialPath): this credential is a PC/SC card (pcscCard); replay against its reader with --against live --reader NAME")
            }
            credential = try file.makeCredential()
        } catch let error as CredentialFileError {
            throw CLIError.failure("\(credentialPath): \(error)")
        }
        let element = credential.secureElement
        let target = "credential '\(credential.id)' (\(element.secureElementDescription))"
        do {
            let count = try TerminalReplay.run(
                transcript, options: options,
                terminalActivated: {
                    _ = try? awaitResult("resetting the applets", timeout: .seconds(5)) { await element.terminalActivated() }
                },
                answer: { command in
                    try awaitResult("the credential's answer", timeout: .seconds(5)) { try await element.transceive(command) }
                })
            if invocation.json {
                invocation.out(JSONValue.object([
                    ("file", .string(path)), ("against", .string("credential:" + credentialPath)), ("mode", .string(options.mode.rawValue)),
                    ("exchanges", .int(count)), ("result", .string("match")), ("error", .null),
                ]).prettySerialized())
            } else {
                invocation.out("replayed \(count) exchange\(count == 1 ? "" : "s") from \(path) against \(target): every answer matches")
            }
            return exitSuccess
        } catch {
            if invocation.json {
                invocation.out(JSONValue.object([
                    ("file", .string(path)), ("against", .string("credential:" + credentialPath)), ("mode", .string(options.mode.rawValue)),
                    ("exchanges", .null), ("result", .string(error.code.rawValue)), ("error", .string(error.description)),
                ]).prettySerialized())
                return exitFailure
            }
            throw CLIError.failure(error.description)
        }
    }
}
