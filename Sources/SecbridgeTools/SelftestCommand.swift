// `secbridge selftest`: the fixed hardware sequence (HardwareSelftest.swift) on a reader, written as
// a transcript bundle, and the replay of such a bundle against the simulated ACR122U.
import SecbridgeCLI
import ACR122Simulator
import ISO7816
import InProcessPCSC
import PCSC
import PCSCSandbox
import PN53x
import SecureElementCredential
import Transcript

#if canImport(Glibc)
import Glibc
#endif

extension SecbridgeCLI {
    static let selftestCommand = Command(
        name: "selftest",
        abstract: SecbridgeCLI.toolAbstract("selftest"),
        usage: "--hardware [--reader NAME|INDEX [--output DIR] [--phone] | --device tty:PATH] [--json] | --replay DIR…",
        discussion: """
            --hardware runs the same escape commands on every unit, over a DIRECT connection (a card
            is not needed): reader identification, PICC parameter, LEDs, PN532 status, RF field,
            polling for a card with bounded retries, commands that must fail, and card emulation
            (TgInitAsTarget) with no terminal until the 5 s MCU timeout; then everything it changed
            is put back. With --phone it also emulates the built-in URI tag
            (https://example.com) for one 60 s emulation window: hold a phone or terminal to the
            reader to read it. A card left on the reader is found and recorded; keep phones away unless
            --phone is given.

            It writes a bundle directory (default selftest-FIRMWARE-DATE in the current directory,
            never an existing one): reader.trn, target.trn and, with --phone, phone.trn, each with
            its provenance in the header (reader name, driver, firmware, date; see Fixtures/README.md).
            Each step prints ok, differs (the unit answered otherwise than the documents say; the
            recording keeps what it said) or error. Exit status 1 only when a step failed with a
            PC/SC error or the bundle could not be written.

            With --device tty:/dev/ttyUSB0 (or nfcpy's tty:USB0) --hardware runs the PN532 steps on a
            bare board on a serial line instead (docs/pn532-uart.md §12), framed for its UART: the
            wake-up, GetFirmwareVersion, the chip's self tests (Diagnose 00 communication line, 01
            ROM, 02 RAM), status, RF field off and on, polling with bounded retries, TgGetData
            outside the target role, and TgInitAsTarget with no terminal, ended by the host's 1 s
            bound and the ACK frame; then targets released and the RF field off. The ACR122U's
            own steps (PC/SC feature request, firmware string, PICC parameter, LEDs, MCU timeout)
            are listed as not applicable. Nothing is recorded: --output and --phone apply to an
            ACR122U.

            --replay DIR… replays bundles against a simulated ACR122U in this process: reader.trn
            and target.trn on a fresh simulated unit with the recorded driver and firmware (and the
            recorded card placed in its field, left powered up when the recording shows that pcscd
            still held it powered, else powered down), phone.trn's terminal side against the built-in
            credential. A bundle recorded on a real unit and put under Fixtures/hardware/ becomes a
            fidelity test: the tests replay every bundle found there.
            """,
        options: [
            .flag("hardware", "Run the sequence on a reader and write a bundle."),
            .reader("The reader: an index from `secbridge readers` or part of its name (default: the first ACR122-class reader)."),
            .value("device", "tty:PATH", "A PN532 board on this serial port (tty:/dev/ttyUSB0, or tty:USB0) instead of an ACR122U."),
            .value("output", short: "o", "DIR", "The bundle directory to create (must not exist)."),
            .flag("phone", "Also emulate the built-in URI tag (one 60 s window) for a phone or terminal to read."),
            .value("replay", "DIR", "Replay the bundle in DIR against the simulated ACR122U (repeat or list several)."),
            .flag("json", "Print the outcome as JSON."),
        ],
        run: ReaderCleanup.wrapping(runSelftest)
    )

    @Sendable static func runSelftest(_ invocation: Invocation) throws -> Int32 {
        let arguments = invocation.arguments
        let replays = arguments.value("replay").map { [$0] + arguments.positional } ?? []
        switch (arguments.has("hardware"), !replays.isEmpty) {
        case (true, true):
            throw CLIError.usage("give either --hardware or --replay DIR, not both")
        case (false, false):
            throw CLIError.usage("give --hardware to test a reader (writes a bundle) or --replay DIR to replay a bundle against the simulator")
        case (false, true):
            for option in ["reader", "device", "output", "phone"] where arguments.value(option) != nil || arguments.has(option) {
                throw CLIError.usage("--\(option) applies to --hardware only")
            }
            return try replayBundles(replays, invocation: invocation)
        case (true, false):
            guard arguments.positional.isEmpty else {
                throw CLIError.usage("selftest --hardware takes no arguments, got '\(arguments.positional[0])'")
            }
            return try runHardwareSelftest(invocation)
        }
    }

    // MARK: --hardware

    static func runHardwareSelftest(_ invocation: Invocation) throws -> Int32 {
        if let device = invocation.arguments.value("device") {
            if invocation.arguments.value("reader") != nil {
                throw twoReadersNamed(device: device)
            }
            let path = try SerialDeviceName.path(device)
            return try runSerialSelftest(invocation, path: path) { PN532SerialLink(stream: try PN532TTY(path: path)) }
        }
        let context = try openContext(invocation)
        let readers = try listReaders(context)
        let reader: String
        if let argument = invocation.arguments.value("reader") {
            reader = try selectReader(argument, in: readers)
        } else if let first = readers.first(where: ACR122Detection.nameSuggestsACR122) {
            reader = first
        } else {
            throw CLIError.failure("no ACR122-class reader is listed (readers: \(readers.joined(separator: ", "))); pick one with --reader, or run `secbridge doctor`")
        }
        let handle = try connectDirect(context, reader)
        defer { try? handle.disconnect(.leave) }
        // The reader and target parts in one PC/SC transaction: no other program's escape command
        // lands between their steps. It ends before the phone part, whose session connects anew.
        try beginCardTransaction(handle, reader: reader)
        var inTransaction = true
        defer { if inTransaction { endCardTransaction(handle) } }

        // Identify the unit first, unrecorded, so every part's header carries its provenance.
        let link: ACR122Link
        let firmware: String
        do {
            link = try ACR122Link.open(channel: handle, readerName: reader, path: .escape)  // asks the firmware string
            firmware = try link.firmware?.text ?? link.firmwareVersion().text
        } catch {
            throw CLIError.failure("'\(reader)' does not answer as an ACR122U: \(error) (run `secbridge doctor --reader \"\(reader)\"`)")
        }
        let escapeCode = link.escapeCode
        let date = utcTimestamp()
        let directory = invocation.arguments.value("output")
            ?? "selftest-\(firmware.filter { $0.isLetter || $0.isNumber })-\(date.filter { $0.isNumber || $0 == "T" })"
        guard !directory.isEmpty, mkdir(directory, 0o755) == 0 else {
            let number = directory.isEmpty ? ENOENT : errno
            let advice = switch number {
            case EEXIST: "it exists, and an existing directory is never reused; give another --output"
            case ENOENT: "its parent directory does not exist; create it first, or give another --output"
            default: "give another --output"
            }
            throw CLIError.failure("cannot create the bundle directory '\(directory)': \(String(cString: strerror(number))); \(advice)")
        }

        func header(_ part: HardwareSelftest.Part) -> TranscriptHeader {
            var header = TranscriptHeader(
                tool: "secbridge \(SecbridgeCLI.version) selftest", origin: .recorded, date: date, reader: reader,
                driver: BundleHeader.driver(forEscapeCode: escapeCode), firmware: firmware, transmissionProtocol: .undefined)
            header[BundleHeader.escapeCodeKey] = ReaderRestore.hex32(escapeCode)
            header[BundleHeader.partKey] = part.rawValue
            return header
        }
        var results: [(part: HardwareSelftest.Part, outcomes: [HardwareSelftest.Outcome], file: String)] = []
        var writeErrors: [String] = []
        let json = invocation.json
        if !json {
            invocation.out("reader: \(reader)")
            invocation.out("firmware: \(firmware)   driver: \(BundleHeader.driver(forEscapeCode: escapeCode)) (escape code \(ReaderRestore.hex32(escapeCode)))")
        }
        func report(_ outcome: HardwareSelftest.Outcome) {
            guard !json else { return }
            let answer = outcome.answer.map { $0.hexString } ?? (outcome.error ?? "")
            invocation.out("  \(outcome.verdict.padding(7)) \(outcome.step.label): \(answer)")
            if outcome.verdict == "differs" {
                invocation.out("          documented: \(outcome.step.expected.text) (\(outcome.step.source))")
            }
        }

        // From here the reader's settings change: on an error or Ctrl-C it is restored in full.
        ReaderCleanup.track(reader)
        for part in [HardwareSelftest.Part.reader, .target] where !interrupted() {
            if !json { invocation.out(part == .reader ? "reader role:" : "target role (about 5 s, the MCU timeout):") }
            let buffer = try makeBuffer(header(part))
            let recording = RecordingChannel(wrapping: handle, recorder: TranscriptRecorder(sink: buffer))
            var outcomes: [HardwareSelftest.Outcome]
            var transcript: Transcript
            if part == .reader {
                let result = HardwareSelftest.runReaderPart(on: recording, escapeCode: escapeCode, stop: interrupted, report: report)
                outcomes = result.outcomes
                transcript = buffer.transcript
                transcript.header[BundleHeader.cardKey] = BundleHeader.cardValue(result.card)
                if !json, let card = result.card {
                    invocation.out("  card in the field: \(BundleHeader.cardValue(card))")
                }
            } else {
                outcomes = HardwareSelftest.runTargetPart(on: recording, escapeCode: escapeCode, stop: interrupted, report: report)
                transcript = buffer.transcript
            }
            let file = directory + "/" + part.fileName
            do {
                try transcript.write(toFile: file)
            } catch {
                writeErrors.append("\(file): \(error.reason)")
            }
            results.append((part, outcomes, file))
        }
        let warnings = HardwareSelftest.warnings(results.flatMap(\.outcomes))
        if !json { for warning in warnings { invocation.out("warning: \(warning)") } }

        endCardTransaction(handle)
        inTransaction = false

        if invocation.arguments.has("phone") && !interrupted() {
            if !json { invocation.out("phone: hold a phone or terminal to the reader within 60 s (it reads https://example.com)") }
            let file = directory + "/" + HardwareSelftest.Part.phone.fileName
            var phoneHeader = header(.phone)
            phoneHeader[BundleHeader.credentialKey] = "example-uri-tag"
            let writer = try TranscriptRecording.openWriter(path: file, header: phoneHeader)
            defer { try? writer.close() }
            let credential = try demoCredential()
            // With --json the session's running commentary goes to standard error.
            let console: any Console = json ? ErrorStreamConsole(invocation.console) : invocation.console
            let exchanges = try awaitResult("the phone part", timeout: .seconds(90)) {
                try await emulate(
                    credential: credential, reader: reader, recorder: TranscriptRecorder(sink: writer), approve: true,
                    console: console, client: invocation.client, window: emulationWindow(invocation)).exchangeCount
            }
            if !json { invocation.out("  phone: \(exchanges) APDU exchange\(exchanges == 1 ? "" : "s") with the terminal") }
            results.append((.phone, [], file))
        }

        let failed = results.flatMap(\.outcomes).filter { $0.verdict == "error" }.count
        let differing = results.flatMap(\.outcomes).filter { $0.verdict == "differs" }.count
        if json {
            invocation.out(JSONValue.object([
                ("reader", .string(reader)), ("firmware", .string(firmware)),
                ("driver", .string(BundleHeader.driver(forEscapeCode: escapeCode))), ("escapeCode", .string(ReaderRestore.hex32(escapeCode))),
                ("bundle", .string(directory)),
                ("parts", .array(results.map { result in
                    .object([
                        ("part", .string(result.part.rawValue)), ("file", .string(result.file)),
                        ("steps", .array(result.outcomes.map { outcome in
                            .object([
                                ("step", .string(outcome.step.label)), ("command", .hex(outcome.step.command)),
                                ("answer", outcome.answer.map { .hex($0) } ?? .null), ("error", outcome.error.map { .string($0) } ?? .null),
                                ("verdict", .string(outcome.verdict)), ("documented", .string(outcome.step.expected.text)),
                                ("source", .string(outcome.step.source)),
                            ])
                        })),
                    ])
                })),
                ("errors", .int(failed)), ("differences", .int(differing)), ("writeErrors", .array(writeErrors.map { .string($0) })),
                ("warnings", .array(warnings.map { .string($0) })),
            ]).prettySerialized())
        } else {
            invocation.out("bundle: \(directory) (\(results.map(\.part.fileName).joined(separator: ", ")))")
            if interrupted() {
                // No verdict on the reader: the part in progress stopped where Ctrl-C found it.
                let planned = invocation.arguments.has("phone") ? 3 : 2
                invocation.out(results.isEmpty
                    ? "interrupted before the first part: nothing was recorded, and this is no verdict on the reader"
                    : "interrupted: \(results.count) of \(planned) parts recorded, the last as far as it went; this is no verdict on the reader (run it again to the end)")
            } else {
                invocation.out("\(failed) error\(failed == 1 ? "" : "s"), \(differing) answer\(differing == 1 ? "" : "s") different from the documents")
            }
            for error in writeErrors { invocation.console.err("secbridge: error: could not write \(error)\n") }
        }
        return failed == 0 && writeErrors.isEmpty ? exitSuccess : exitFailure
    }

    /// A DIRECT connection (no card needed: escape commands only).
    static func connectDirect(_ context: any PCSCClientContext, _ reader: String) throws(CLIError) -> any PCSCConnection {
        do throws(PCSCError) {
            // Bounded: pcscd lets SCardConnect wait while another program holds a transaction.
            return try CallWatchdog.shared.guarding("SCardConnect") { () throws(PCSCError) in
                try context.connect(to: reader, share: .direct, protocols: .undefined)
            }
        } catch {
            throw .failure("could not connect to '\(reader)' directly: \(describe(error))")
        }
    }

    static func makeBuffer(_ header: TranscriptHeader) throws(CLIError) -> TranscriptBuffer {
        do {
            return try TranscriptBuffer(header: header)
        } catch {
            throw .failure("the recording header is not valid: \(error.reason)")
        }
    }

    // MARK: --replay

    /// The bundles in `directories`, each replayed part by part; exit 1 at the first part whose
    /// answers differ.
    static func replayBundles(_ directories: [String], invocation: Invocation) throws -> Int32 {
        var results: [JSONValue] = []
        var failures = 0
        for directory in directories {
            guard access(directory, F_OK) == 0 else {
                throw CLIError.failure("\(directory) does not exist; give the directory `secbridge selftest --hardware` wrote")
            }
            let parts = HardwareSelftest.Part.allCases.map { (part: $0, file: directory + "/" + $0.fileName) }
                .filter { access($0.file, F_OK) == 0 }
            guard !parts.isEmpty else {
                let inside = bundleDirectories(in: directory)
                guard inside.isEmpty else {
                    throw CLIError.failure("\(directory) holds bundle directories, not a bundle: give them, e.g. `secbridge selftest --replay \(inside.map { directory + "/" + $0 }.joined(separator: " "))`")
                }
                throw CLIError.failure("\(directory) holds no bundle (no reader.trn, target.trn or phone.trn); record one with `secbridge selftest --hardware`")
            }
            for (part, file) in parts {
                let outcome: Result<Int, any Error>
                do {
                    outcome = .success(try replayBundlePart(file, part: part))
                } catch {
                    outcome = .failure(error)
                }
                // A ReplayError is the simulator answering otherwise; anything else means the file
                // could not be used at all.
                let result: String
                var errorText: String?
                switch outcome {
                case .success(let count):
                    result = "match"
                    if !invocation.json { invocation.out("\(file): \(count) exchange\(count == 1 ? "" : "s"), every answer matches the simulator") }
                case .failure(let error as ReplayError):
                    failures += 1
                    result = "differs"
                    errorText = error.description
                    if !invocation.json { invocation.console.err("secbridge: \(file): the simulator answers differently: \(error)\n") }
                case .failure(let error as StagedReplayDifference):
                    failures += 1
                    result = "differs"
                    errorText = error.difference.description + "\nnote: " + error.note
                    if !invocation.json {
                        invocation.console.err("secbridge: \(file): the simulator answers differently: \(error.difference)\n  note: \(error.note)\n")
                    }
                case .failure(let error):
                    failures += 1
                    result = "unusable"
                    errorText = (error as? CLIError)?.message ?? "\(error)"
                    if !invocation.json { invocation.console.err("secbridge: \(file): not a usable selftest recording: \(errorText ?? "")\n") }
                }
                results.append(.object([
                    ("file", .string(file)), ("part", .string(part.rawValue)), ("result", .string(result)),
                    ("exchanges", (try? outcome.get()).map { .int($0) } ?? .null),
                    ("error", errorText.map { .string($0) } ?? .null),
                ]))
            }
        }
        if invocation.json { invocation.out(JSONValue.array(results).prettySerialized()) }
        return failures == 0 ? exitSuccess : exitFailure
    }

    /// The names of the directories in `directory` that hold a bundle part, sorted.
    static func bundleDirectories(in directory: String) -> [String] {
        guard let stream = opendir(directory) else { return [] }
        defer { closedir(stream) }
        var names: [String] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard name != ".", name != ".." else { continue }
            if HardwareSelftest.Part.allCases.contains(where: { access(directory + "/" + name + "/" + $0.fileName, F_OK) == 0 }) {
                names.append(name)
            }
        }
        return names.sorted()
    }

    /// One part of a bundle against the simulator; returns the number of exchanges compared.
    /// - Throws: `CLIError` for a file that cannot be used, `ReplayError` (via LiveReplay) at the
    ///   first different answer.
    static func replayBundlePart(_ file: String, part: HardwareSelftest.Part) throws -> Int {
        let transcript: Transcript
        do {
            transcript = try Transcript(contentsOfFile: file)
        } catch {
            throw CLIError.failure("\(error)")
        }
        if part == .phone {
            let element = try demoCredential().secureElement
            return try TerminalReplay.run(
                transcript, options: ReplayOptions(mode: .strict),
                terminalActivated: {
                    _ = try? awaitResult("resetting the applets", timeout: .seconds(5)) { await element.terminalActivated() }
                },
                answer: { command in
                    try awaitResult("the credential's answer", timeout: .seconds(5)) { try await element.transceive(command) }
                })
        }
        if let recorded = transcript.header[BundleHeader.partKey], recorded != part.rawValue {
            throw CLIError.failure("\(file): its header says `selftest-part: \(recorded)`, but the file is the \(part.rawValue) part; the bundle was edited or mixed up")
        }
        guard transcript.header.transmissionProtocol == .undefined else {
            throw CLIError.failure("\(file) is not a selftest recording (its header says protocol \(transcript.header.transmissionProtocol.map { "\($0)" } ?? "none"), not undefined)")
        }
        let personality = BundleHeader.personality(for: transcript)
        let card = try BundleHeader.cardArguments(transcript.header[BundleHeader.cardKey])
        do {
            try LiveReplay.check(transcript)
        } catch {
            throw CLIError.failure("\(error)")
        }

        return try withFreshSimulatedReader(named: "selftest-replay") { readers, reader, control in
            var personalityLine = "personality name=\(personality)"
            if let firmware = transcript.header.firmware {
                guard !firmware.isEmpty, firmware.allSatisfy({ $0.isASCII && !$0.isWhitespace && $0 != "\"" }) else {
                    throw CLIError.failure("\(file): the header's firmware '\(firmware)' is not a firmware string (ASCII, no spaces)")
                }
                personalityLine += " firmware=\(firmware)"
            }
            try control.send(personalityLine)
            let reportsCards = ACR122Personality.named(personality)?.reportsCardsToPCSC ?? true
            let (staging, note) = BundleHeader.cardStaging(
                card: card, listedAtStart: BundleHeader.targetsListedAtStart(in: transcript), reportsCards: reportsCards)
            if let card {
                let sak = card["sak"].flatMap { UInt8($0, radix: 16) } ?? 0
                let isoDEP = sak & 0x20 != 0
                var line = isoDEP ? "place-card id=selftest-card" : "place-tag id=selftest-card"
                for key in ["uid", "atqa", "sak", "ats"] where isoDEP || key != "ats" {
                    if let value = card[key] { line += " \(key)=\(value)" }
                }
                try control.send(line)
            }
            if staging == .powered || staging == .poweredDown {
                // As under pcscd: the card is seen and powered up at insertion (which reads its
                // ATR and leaves it the chip's target 1). pcscd powers it down again once its
                // power-off grace period passes with no client (pcsc-lite eventhandler.c); the
                // recording's first GetGeneralStatus says which of the two it met
                // (docs/acr122-units.md §6). The in-process layer powers up on the first
                // connection (bounded, as pcscd's polling) and, having no timer, keeps the card
                // powered after a LEAVE_CARD disconnection.
                var powered = false
                for _ in 0..<20 where !powered {
                    if let handle = try? readers.connect(to: reader, share: .shared, protocols: .any) {
                        try? handle.disconnect(staging == .powered ? .leave : .unpower)
                        powered = true
                    } else {
                        sleepMilliseconds(50)
                    }
                }
                guard powered else { throw CLIError.failure("the simulated reader did not report the recorded card within 1 s") }
            }
            let channel: InProcessCardHandle
            do {
                channel = try readers.connect(to: reader, share: .direct, protocols: .undefined)
            } catch {
                throw CLIError.failure("could not connect to the simulated reader: \(error)")
            }
            do {
                return try LiveReplay.run(transcript, on: channel, options: ReplayOptions(mode: .strict))
            } catch let difference as ReplayError {
                guard let note else { throw difference }
                throw StagedReplayDifference(difference: difference, note: note)
            }
        }
    }

    /// The built-in URI tag credential (the demo's).
    static func demoCredential() throws(CLIError) -> Credential {
        do {
            return try CredentialFile(json: Array(demoCredentialJSON.utf8)).makeCredential()
        } catch {
            throw .failure("the built-in credential does not load: \(error)")
        }
    }
}

/// A replay's first different answer, with what the recording showed that no staging of the card
/// reproduces (``BundleHeader/cardStaging(card:listedAtStart:reportsCards:)``).
struct StagedReplayDifference: Error {
    var difference: ReplayError
    var note: String
}

/// A console whose standard output goes to the wrapped console's standard error.
private final class ErrorStreamConsole: Console {
    let inner: any Console
    init(_ inner: any Console) { self.inner = inner }
    func out(_ text: String) { inner.err(text) }
    func err(_ text: String) { inner.err(text) }
    func readLine() -> String? { nil }
}

