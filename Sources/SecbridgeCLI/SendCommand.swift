import ISO7816
import PCSC

extension SecbridgeCLI {
    package static let sendCommand = Command(
        name: "send",
        abstract: "Send APDUs to the card in a reader, with ISO 7816-4 handling.",
        usage: "[--reader NAME|INDEX] [--raw | --stop-at-ne] [--wait SECONDS] [--json] [--record FILE] [--show-secrets] HEX…",
        discussion: """
            Consecutive single-byte arguments form one APDU (00 A4 04 00 00); any other argument is
            an APDU of its own ("00A4040000" "00B0000000", or quoted with spaces). Hex may use
            spaces, colons or 0x prefixes.

            ISO 7816-4 handling is on by default: 61xx is answered with GET RESPONSE, 6Cxx by sending
            again with the right Le, long commands use extended length or chaining as the card and
            reader allow. A 61xx chain is followed to its end whatever Le said (as OpenSC and
            javax.smartcardio do: a 2847-byte object read with Le 00 arrives whole), at most 256
            GET RESPONSEs; --stop-at-ne stops once Le's bytes arrived and shows the card's 61xx.
            Reader pseudo-APDUs (CLA FF) always go through untouched. --raw turns the handling off.
            An APDU that carries a PIN or a key can be given as env:NAME (an environment variable),
            file:PATH (the file's first line) or - (one line of standard input), so that it does not
            show in the process list; a script (`secbridge run FILE`, `run -`) keeps it out too.
            Each raw exchange is shown (> to the card, < from it), then the status word's meaning;
            PINs, keys and cryptograms are shown [REDACTED n], as in a --record transcript, here and
            in --json unless --show-secrets, and always in error messages (docs/secrets.md).
            The exit status is 0 when every APDU was exchanged, whatever its SW. It is 1 when an
            exchange failed: a card that answered nothing (0 bytes), a GET RESPONSE chain broken by
            an error SW (the data before it is shown as partial), the card removed or reset during
            the exchange; the exchanges before the failure are still shown, in --json too (with an
            "error" member), and recorded.

            Example:
              $ secbridge send 00 A4 04 00 07 D2 76 00 00 85 01 01 00
              > 00 A4 04 00 07 D2 76 00 00 85 01 01 00
              < 6A 82
                SW 6A 82: file or application not found
            """,
        options: [
            .reader("The reader: an index from `secbridge readers` or part of its name."),
            .flag("raw", "Send the bytes as they are: no GET RESPONSE, no Le correction, no chaining."),
            .flag("stop-at-ne", "Follow 61xx only until Le's bytes arrived; the card's remaining 61xx is shown."),
            .waitForCard,
            .flag("json", "Print a JSON object {reader, protocol, exchanges: [{command, response, data, sw, meaning, raw}], error}; a broken GET RESPONSE chain gives {command, partial, sw, raw}."),
            .value("record", "FILE", "Record every exchange to a transcript FILE."),
            .showSecrets,
        ],
        run: runSend
    )

    /// Splits the positional arguments into APDUs (see the command's discussion).
    /// - Parameter example: the usage example shown when no APDU is given.
    package static func apdus(
        from arguments: [String], example: String = "secbridge send 00 A4 04 00 00"
    ) throws(CLIError) -> [[UInt8]] {
        guard !arguments.isEmpty else {
            throw .usage("give at least one APDU in hex, e.g. `\(example)`")
        }
        func parse(_ text: String, what: String) throws(CLIError) -> [UInt8] {
            let bytes: [UInt8]
            do {
                bytes = try HexBytes.parse(text)
            } catch {
                throw .usage("\(what) is not valid hex: \(error.reason)")
            }
            guard !bytes.isEmpty else { throw .usage("\(what) is empty; an APDU has at least 4 bytes (CLA INS P1 P2)") }
            return bytes
        }
        // Consecutive single-byte arguments ("00 A4 04 00 00" unquoted) form one APDU; any other
        // argument ("00A4040000", or quoted with spaces) is an APDU of its own.
        var result: [[UInt8]] = []
        var group: [String] = []
        func flush() throws(CLIError) {
            guard !group.isEmpty else { return }
            result.append(try parse(group.joined(separator: " "), what: "APDU \(result.count + 1) ('\(SecretDisplay.masked.argumentText(group.joined(separator: " ")))')"))
            group.removeAll()
        }
        for argument in arguments {
            if argument.count == 2 {
                group.append(argument)
            } else {
                try flush()
                result.append(try parse(argument, what: "APDU \(result.count + 1) ('\(SecretDisplay.masked.argumentText(argument))')"))
            }
        }
        try flush()
        return result
    }

    @Sendable package static func runSend(_ invocation: Invocation) throws -> Int32 {
        if invocation.arguments.has("raw") && invocation.arguments.has("stop-at-ne") {
            throw CLIError.usage("--raw sends no GET RESPONSE at all, so --stop-at-ne does not apply; give one of them")
        }
        // An APDU that carries a PIN or a key can come by reference (env:NAME, file:PATH, -), out of argv.
        var positional: [String] = []
        for argument in invocation.arguments.positional {
            // The message names the reference itself ("the APDU file:P: …").
            positional.append(try resolveSecretReference(argument, what: "the APDU", standardInput: { invocation.console.readLine() }) ?? argument)
        }
        let commands = try apdus(from: positional)
        // Validate every APDU before anything is sent.
        var parsedCommands: [CommandAPDU?] = []
        for (index, bytes) in commands.enumerated() {
            if bytes.first == 0xFF {
                guard bytes.count >= 4 else {
                    throw CLIError.usage("APDU \(index + 1) has \(bytes.count) bytes; a pseudo-APDU has at least 4 (FF INS P1 P2)")
                }
                parsedCommands.append(nil)
                continue
            }
            do {
                parsedCommands.append(try CommandAPDU(parsing: bytes))
            } catch {
                throw CLIError.usage("APDU \(index + 1) (\(SecretDisplay.masked.text(bytes))) is malformed: \(error.reason)")
            }
        }
        let context = try openContext(invocation)
        let session = try CardSession.open(
            context: context, reader: invocation.arguments.value("reader"),
            record: invocation.arguments.value("record"), command: "send", wait: invocation.arguments.seconds("wait"),
            recordings: invocation.recordings)
        defer { session.close() }
        var exchanges: [JSONValue] = []
        func printJSON(error: String?) {
            var members: [(String, JSONValue)] = [
                ("reader", .string(session.reader)),
                ("protocol", .string(session.channel.transmissionProtocol.rawValue)),
                ("exchanges", .array(exchanges)),
            ]
            if let error { members.append(("error", .string(error))) }
            invocation.out(JSONValue.object(members).prettySerialized())
        }
        let secrets = invocation.secrets
        func rawJSON(_ raw: [([UInt8], [UInt8])]) -> JSONValue {
            .array(raw.map { .object([("command", secrets.json($0.0)), ("response", secrets.json(response: $0.1, answering: $0.0))]) })
        }
        let chain: ISO7816Transport.ResponseChain = invocation.arguments.has("stop-at-ne") ? .stopAtNe : .toTheEnd
        // The APDUs of one invocation are one sequence: inside one PC/SC transaction.
        try withCardTransaction(session.handle, reader: session.reader) {
            for (bytes, parsed) in zip(commands, parsedCommands) {
                var raw: [([UInt8], [UInt8])] = []
                let tracer = TracingChannel(session.channel, display: secrets) { line in
                    if !invocation.json { invocation.out(line) }
                }
                tracer.onExchange = { raw.append(($0, $1)) }
                let answer: [UInt8]
                do {
                    if invocation.arguments.has("raw") || parsed == nil {
                        answer = try tracer.transmit(bytes)
                        if answer.isEmpty && parsed != nil { throw ISO7816Transport.noResponse(to: bytes) }
                    } else {
                        let transport = ISO7816Transport(
                            channel: tracer, capabilities: session.capabilities, readerMaxInput: session.maxInput,
                            responseChain: chain)
                        answer = try transport.transmit(parsed!).serialized()
                    }
                } catch {
                    // What was exchanged before stays: printed as it happened, in the JSON, recorded.
                    let message = session.explainFailure(error, sending: bytes)
                    if invocation.json {
                        if !raw.isEmpty {
                            var members: [(String, JSONValue)] = [("command", secrets.json(bytes))]
                            // A broken GET RESPONSE chain: the data before it, marked partial.
                            if let chain = error as? GetResponseChainError {
                                members += [("partial", .hex(chain.partialData)), ("sw", .hex(chain.statusWord.bytes))]
                            }
                            members.append(("raw", rawJSON(raw)))
                            exchanges.append(.object(members))
                        }
                        printJSON(error: message)
                    }
                    throw CLIError.failure(message)
                }
                // The firmware-version answer is ASCII with no SW: all data, never split.
                let firmware = firmwareVersionAnswer(command: bytes, answer: answer)
                let response = firmware == nil && answer.count >= 2 ? try? ResponseAPDU(parsing: answer) : nil
                if invocation.json {
                    var members: [(String, JSONValue)] = [("command", secrets.json(bytes)), ("response", secrets.json(response: answer, answering: bytes))]
                    if let firmware { members += [("data", .hex(answer)), ("firmware", .string(firmware.text))] }
                    if let response {
                        members += [
                            ("data", secrets.json(responseData: answer, answering: bytes)), ("sw", .hex(response.statusWord.bytes)),
                            ("meaning", .string(response.statusWord.meaning)),
                        ]
                    }
                    members.append(("raw", rawJSON(raw)))
                    exchanges.append(.object(members))
                } else {
                    if raw.count > 1, response != nil { invocation.out("= " + secrets.text(response: answer, answering: bytes)) }
                    if let firmware { invocation.out("  firmware \"\(firmware.text)\"") }
                    if let response, parsed != nil || response.statusWord.sw1 == 0x90 || response.statusWord.sw1 == 0x63 || response.statusWord.sw1 == 0x6A {
                        invocation.out("  SW \(response.statusWord.bytes.hexString): \(response.statusWord.meaning)")
                    }
                }
            }
        }
        if invocation.json { printJSON(error: nil) }
        return SecbridgeCLI.exitSuccess
    }
}

extension String {
    /// "00 A4" → "00A4", for JSON hex strings.
    package func replacingSpaces() -> String { String(filter { $0 != " " }) }
}
