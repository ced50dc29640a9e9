import ISO7816
import PCSC
import Transcript

extension SecbridgeCLI {
    static let replayCommand = Command(
        name: "replay",
        abstract: "Send a transcript's recorded commands to a live reader and compare the answers.",
        usage: "[--reader NAME|INDEX] [--json] [--record FILE] FILE",
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
            """,
        options: [
            .value("reader", short: "r", "NAME|INDEX", "The reader: an index from `secbridge readers` or part of its name."),
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
        let transcript: Transcript
        do {
            transcript = try Transcript(contentsOfFile: path)
        } catch {
            throw CLIError.failure("\(error)")
        }
        do {
            try LiveReplay.check(transcript)
        } catch {
            throw CLIError.failure("\(error)")
        }
        // Every recorded card command must be a well-formed command APDU before anything is sent
        // (a card may fail on malformed bytes); reader pseudo-APDUs (CLA FF) and control commands
        // go as recorded.
        for (index, line) in transcript.lines.enumerated() {
            guard case .transmit(.outgoing, let bytes)? = line.record?.entry, let command = bytes.bytes,
                command.first != 0xFF
            else { continue }
            do {
                _ = try CommandAPDU(parsing: command)
            } catch {
                throw CLIError.failure("\(path):\(transcript.lineNumber(ofBodyIndex: index)): the recorded command is not a valid APDU (\(error.reason)); nothing was sent")
            }
        }
        if transcript.lines.allSatisfy({ line in
            switch line.record?.entry {
            case .transmit(.outgoing, _)?, .control(_, .outgoing, _)?: false
            default: true
            }
        }) {
            throw CLIError.failure("\(path) records no commands to replay (no `>` or `ctl … >` lines)")
        }
        let context = try openContext()
        let readers: [String]
        do { readers = try context.listReaders() } catch { throw CLIError.failure(describe(error)) }
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
            let handle: CardHandle
            do {
                handle = try context.connect(to: reader, share: .direct, protocols: .undefined)
            } catch {
                throw CLIError.failure("could not connect to '\(reader)' directly: \(describe(error))")
            }
            channel = handle
            if let path = invocation.arguments.value("record") {
                let recording = try TranscriptRecording.start(path: path, inner: handle, reader: reader, atr: [], command: "replay")
                channel = recording.channel
                finishRecording = recording.finish
            }
        } else {
            let session = try CardSession.open(
                context: context, reader: argument, record: invocation.arguments.value("record"), command: "replay")
            reader = session.reader
            channel = session.channel
            finishRecording = session.close
        }
        do {
            let count = try LiveReplay.run(transcript, on: channel)
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
}
