import ISO7816
import PCSC
import Transcript

extension SecbridgeCLI {
    package static let runCommand = Command(
        name: "run",
        abstract: "Send the APDUs of a script file to a card (reads pcsc-tools' scriptor files).",
        usage: "[--reader NAME|INDEX] [--raw] [--stop-on-error] [--wait SECONDS] [--json] [--record FILE] SCRIPT",
        discussion: """
            SCRIPT holds one APDU in hex per line; `#` and `//` start comments; `reset` resets the
            card (its ATR is shown) and `exit` stops, as in scriptor; `-` reads the script from
            standard input. The whole script is checked before anything is
            sent. ISO 7816-4 handling is on unless --raw (see `secbridge send --help`). The whole
            script runs inside one PC/SC transaction: no other program's command lands between its
            lines (a `reset` line keeps the transaction).

            Example script:
              # select the NFC Forum Type 4 Tag application
              00 A4 04 00 07 D2 76 00 00 85 01 01 00
              00 B0 00 00 0F   // read the capability container

            Exit status: 0 when every APDU was exchanged (with --stop-on-error: and every SW was
            90 00 or 61xx), 1 otherwise.
            """,
        options: [
            .reader("The reader: an index from `secbridge readers` or part of its name."),
            .flag("raw", "Send the bytes as they are: no GET RESPONSE, no Le correction, no chaining."),
            .flag("stop-on-error", "Stop at the first status word other than 90 00 or 61xx, and exit 1."),
            .waitForCard,
            .flag("json", "Print a JSON array of {line, command, response, sw, meaning}; firmware instead of sw for FF 00 48 00 00."),
            .value("record", "FILE", "Record every exchange to a transcript FILE."),
        ],
        run: runScript
    )

    @Sendable package static func runScript(_ invocation: Invocation) throws -> Int32 {
        guard invocation.arguments.positional.count == 1 else {
            throw CLIError.usage(
                invocation.arguments.positional.isEmpty
                    ? "give the script file to run" : "run takes one script file, got \(invocation.arguments.positional.count) arguments")
        }
        let path = invocation.arguments.positional[0]
        let script: APDUScript
        if path == "-" {
            // The script from standard input, read whole (and checked) before anything is sent.
            var lines: [String] = []
            while let line = invocation.console.readLine() {
                lines.append(line)
                guard lines.count <= 100_000 else {
                    throw CLIError.failure("the script on standard input has more than 100000 lines; split it")
                }
            }
            script = try APDUScript(parsing: lines.joined(separator: "\n"), fileName: "<stdin>")
        } else {
            script = try APDUScript(contentsOfFile: path)
        }
        let context = try openContext(invocation)
        let session = try CardSession.open(
            context: context, reader: invocation.arguments.value("reader"),
            record: invocation.arguments.value("record"), command: "run", wait: invocation.arguments.seconds("wait"))
        defer { session.close() }
        var results: [JSONValue] = []
        var status = exitSuccess
        do {
            // The whole script inside one PC/SC transaction (decision: by default, as a script is a
            // sequence whose later commands depend on the earlier ones' state).
            try withCardTransaction(session.handle, reader: session.reader) {
                try runSteps(
                    script, path: path == "-" ? "<stdin>" : path, session: session, invocation: invocation, results: &results,
                    status: &status)
            }
        } catch let error as CLIError {
            // The exchanges done so far are shown (and recorded) before the failure.
            if invocation.json {
                results.append(.object([("error", .string(error.message))]))
                invocation.out(JSONValue.array(results).prettySerialized())
            }
            throw error
        }
        if invocation.json { invocation.out(JSONValue.array(results).prettySerialized()) }
        return status
    }

    package static func runSteps(
        _ script: APDUScript, path: String, session: CardSession, invocation: Invocation,
        results: inout [JSONValue], status: inout Int32
    ) throws {
        steps: for step in script.steps {
            switch step {
            case .reset(let line):
                do {
                    try session.handle.reconnect(share: .shared, protocols: .any, initialization: .reset)
                    let atr = (try? session.handle.status().atr) ?? []
                    try? session.recorder?.recordEvent(.cardReset, [TranscriptAttribute("atr", atr.hexString)])
                } catch {
                    throw CLIError.failure("\(path):\(line): reset failed: \(describe(error))")
                }
                let atr = (try? session.handle.status().atr) ?? []
                if invocation.json {
                    results.append(.object([("line", .int(line)), ("reset", .bool(true)), ("atr", .hex(atr))]))
                } else {
                    invocation.out("reset: ATR \(atr.isEmpty ? "none" : atr.hexString)")
                }
            case .apdu(let bytes, let line):
                let answer: [UInt8]
                do {
                    let tracer = TracingChannel(session.channel) { if !invocation.json { invocation.out($0) } }
                    if invocation.arguments.has("raw") || bytes[0] == 0xFF {
                        answer = try tracer.transmit(bytes)
                    } else {
                        let transport = ISO7816Transport(
                            channel: tracer, capabilities: session.capabilities, readerMaxInput: session.maxInput)
                        answer = try transport.transmit(try CommandAPDU(parsing: bytes)).serialized()
                    }
                } catch {
                    throw CLIError.failure("\(path):\(line): " + session.explainFailure(error, sending: bytes))
                }
                let firmware = firmwareVersionAnswer(command: bytes, answer: answer)
                let response = firmware == nil && answer.count >= 2 ? try? ResponseAPDU(parsing: answer) : nil
                if invocation.json {
                    var members: [(String, JSONValue)] = [("line", .int(line)), ("command", .hex(bytes)), ("response", .hex(answer))]
                    if let firmware { members.append(("firmware", .string(firmware.text))) }
                    if let response {
                        members.append(("sw", .hex(response.statusWord.bytes)))
                        members.append(("meaning", .string(response.statusWord.meaning)))
                    }
                    results.append(.object(members))
                } else if let response {
                    invocation.out("  SW \(response.statusWord.bytes.hexString): \(response.statusWord.meaning)")
                }
                if invocation.arguments.has("stop-on-error"), let sw = response?.statusWord,
                    !(sw.isSuccess || sw.sw1 == 0x61)
                {
                    invocation.console.err("secbridge: stopped at \(path):\(line): SW \(sw.bytes.hexString) (\(sw.meaning))\n")
                    status = exitFailure
                    break steps
                }
            }
        }
    }
}
