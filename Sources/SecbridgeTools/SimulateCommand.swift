// These commands link Foundation (through the session engine and the pcscd sandbox, PCSCSandbox), so
// they live in the `secbridge-tools` binary; `secbridge` hands them over (see SecbridgeCLI/Root.swift).
import SecbridgeCLI
import ISO7816
import InProcessPCSC
import PCSC
import PCSCSandbox
import NFCTags
import ACR122Simulator

#if canImport(Glibc)
import Glibc
#endif

extension SecbridgeCLI {
    static let simulateCommand = Command(
        name: "simulate",
        abstract: SecbridgeCLI.toolAbstract("simulate"),
        usage: "[--readers 1|2] [--personality NAME] [--card UID] [--applet NAME] [--tag UID [--tag-type TYPE] [--tag-uri URI | --tag-text TEXT] [--tag-key HEX12]] [--terminal SCRIPT] [--timeout SECONDS] [--time-scale FACTOR] [--pn532-serial] [--in-process] [--json]",
        discussion: """
            Starts a private pcscd (its own mount namespace; the system pcscd and USB readers are not
            touched) with one or two simulated ACR122U readers sharing one RF field, prints the
            `export PCSCLITE_CSOCK_NAME=…` line that points other programs (secbridge, pcsc_scan,
            opensc-tool, libnfc's tools) at it, and runs until Ctrl-C (or --timeout).

            Peers are placed in the field with the options, or while it runs by typing control
            requests on standard input, prefixed with the reader (a or b):
              a place-card uid=04A1B2C3 applet=t4t-ndef     an ISO 14443-4 card (applet ok, echo, t4t-ndef)
              a place-tag uid=04A1B2C3                      an ISO 14443-3 tag (UID only)
              a place-tag type=ntag213 uid=04A1B2C3D4E5F6 ndef=D1010C55046578616D706C652E636F6D
                                                            an NTAG213 holding an NDEF message (hex)
              a place-tag type=classic1k uid=04A1B2C3 key=A0A1A2A3A4A5 id=mf
                                                            a MIFARE Classic 1K, keys A and B of every sector
              a tag-memory peer=mf first=4 count=3          what a tag holds now (keys read as 00)
              b place-terminal script=android-t4t-read      a terminal that reads an emulated Type 4 Tag
              a remove all=yes        a status        a events        a help
            Each control socket is printed too, for programs that place peers themselves.

            --pn532-serial also puts a bare PN532 board in the field, on a pseudo-terminal behind the
            PN532 serial framing (docs/pn532-uart.md), and prints its device node: open it as a
            board on /dev/ttyUSB0 (`--device tty:/dev/pts/N`, or libnfc's
            LIBNFC_DEVICE=pn532_uart:/dev/pts/N). The board and the ACR122U readers share the
            field: one can emulate a card the other reads.

            --time-scale 0.01 makes every wait of the simulated devices take 0.01 of its real time
            (the ACR122U's 5 s MCU timeout 50 ms, libccid's 30 s escape timeout 300 ms), for tests
            and CI that should not wait out device timeouts; the default 1 is real time.

            Personalities (--personality NAME; docs/acr122-units.md):
            \(personalityTable)

            Needs root, or unprivileged user namespaces; otherwise it says why and exits 1,
            unless --in-process is given: then the readers run inside this process (no pcscd, so no
            other program sees them) and standard input also takes `send a|b HEX…` to send a
            command APDU (to the card) or a pseudo-APDU (FF …, through the escape path without a card).

            Example:
              $ secbridge simulate --card 04A1B2C3 &
              export PCSCLITE_CSOCK_NAME=/tmp/secbridge-pcscd.1234.AB12CD34/run/pcscd.comm
              …
              $ export PCSCLITE_CSOCK_NAME=…; secbridge send 00 A4 04 00 07 D2 76 00 00 85 01 01 00
            """,
        options: [
            .value("readers", "1|2", "How many simulated readers (default 2, sharing one field).", .integer(1...2)),
            .value("personality", "NAME", "The readers' personality (driver and firmware), one of the list above; default ccid-escape-enabled.",
                   .choice(personalities, noun: "personality")),
            .value("card", "UID", "Place an ISO 14443-4 card with this UID (4, 7 or 10 bytes of hex).", uidKind),
            .value("applet", "NAME", "The placed card's applet: ok (default), echo or t4t-ndef.", .choice(applets, noun: "applet")),
            .value("tag", "UID", "Place an ISO 14443-3 tag (no ISO-DEP) with this UID (4, 7 or 10 bytes of hex), as peer `tag` (e.g. `a tag-memory peer=tag`).", uidKind),
            .value("tag-type", "TYPE", "The placed tag's memory: ntag213, ntag215, ntag216 or ultralight (each with a 7-byte UID); classic1k, classic4k or mini (a 4- or 7-byte UID); default: none (UID only).",
                   .choice(tagTypes, noun: "--tag-type")),
            .value("tag-uri", "URI", "A Type 2 tag's content: an NDEF URI record (default: an empty NDEF message)."),
            .value("tag-text", "TEXT", "A Type 2 tag's content: an NDEF text record (language en)."),
            .value("tag-key", "HEX12", "A MIFARE Classic tag's key A and key B for every sector: 6 bytes of hex (default FF FF FF FF FF FF).",
                   .hex(lengths: [6], takes: "6 bytes of hex (12 digits), e.g. FFFFFFFFFFFF", secret: true)).secret(),
            .value("terminal", "SCRIPT", "Place a terminal, a model of a reader (android-t4t-read, android11-t4t-read, android-t4t-write, ios-t4t-read, emv-payment, access-control, android-beam-p2p; docs/terminal-models.md) or a recording (android-t4t-recording, ios-t4t-recording).", .choice(terminalScripts, noun: "terminal script")),
            .value("timeout", "SECONDS", "Stop after SECONDS (at most 86400) instead of waiting for Ctrl-C.", .seconds(limit: 86_400)),
            timeScaleOption,
            .flag("pn532-serial", "Also place a bare PN532 board in the field, on a pseudo-terminal (its path is printed)."),
            .flag("in-process", "Run the readers in this process (no pcscd); `send a|b HEX` on standard input."),
            .flag("json", "Print JSON lines: {event: started, socket, driver, readers: [{reader, name, controlSocket}], pn532Serial, standardInput}, then {event: reply, reader, line, ok, fields | code, reason} per control request, {event: exchange, reader, path, command, response} per `send`, {event: stopped}."),
        ],
        run: runSimulate
    )

    /// `--time-scale FACTOR`, shared by `simulate` and `demo`: a decimal number above 0.002 and at
    /// most 1.
    ///
    /// The bounds are a decision, measured: the host programs on the other side run in real time,
    /// and below about 0.002 their own turnarounds (a process start, a PC/SC round trip) no longer
    /// fit the devices' scaled timeouts (the demo failed at 0.001 in 2 of 4 runs on 2 cores, never
    /// at 0.002 and above). Above 1 a simulated libccid escape timeout (30 s) would keep a command
    /// from noticing Ctrl-C for longer than real hardware does. The driver's own `timescale=` and
    /// control verb take 0 … 1000, for tests that need a device wait whole or none at all.
    static let timeScaleOption = OptionSpec.value(
        "time-scale", "FACTOR",
        "Wall-clock seconds per simulated second, above 0.002 and at most 1 (default 1, real time; 0.01: a 5 s MCU timeout takes 50 ms).",
        .decimal(above: 0.002, atMost: 1, note: "1 is real time, 0.01 a hundred times faster"))

    /// `--card UID`, `--tag UID`.
    static let uidKind = ValueKind.hex(lengths: [4, 7, 10], takes: "a UID of 4, 7 or 10 bytes (ISO/IEC 14443-3)")

    /// The personality names `--personality` takes: the simulator's registry.
    static let personalities = ACR122Personality.names

    /// The discussion's personality table: `  name  summary` per registry entry, names padded to one
    /// column.
    static var personalityTable: String {
        let width = (ACR122Personality.all.map(\.name.count).max() ?? 0) + 2
        // A loop rather than joined(separator:): every command of the tree is built at each start
        // of secbridge-tools, and the generic joined's first call costs a scan of every protocol
        // conformance record (about 0.28 M instructions, 5 % of a `replay --against simulated`).
        var table = ""
        for personality in ACR122Personality.all {
            if !table.isEmpty { table += "\n" }
            table += "  " + personality.name.padding(width) + personality.summary
        }
        return table
    }
    static let applets = ["ok", "echo", "t4t-ndef"]
    static let terminalScripts = ExternalTerminal.catalog.map(\.name)

    static let tagTypes = Type2TagModel.allCases.map(\.rawValue) + MIFAREClassicModel.allCases.map(\.rawValue)

    /// The `place-tag` request for `--tag` and its `--tag-…` options (the control protocol's
    /// `place-tag type= uid= ndef= key=`), or nil without `--tag`.
    ///
    /// Everything is checked here, before a pcscd starts, by building the tag the simulator will
    /// build (``Type2TagMemory``, ``MIFAREClassicMemory``): a UID of the wrong length for the type,
    /// a message larger than the tag's data area. Hex is passed on normalized (no `0x`, no spaces).
    /// - Throws: a usage error naming the option that does not fit; it never repeats a key.
    static func simulatedTagLine(_ arguments: ParsedArguments) throws(CLIError) -> String? {
        let type = arguments.value("tag-type")
        guard let uid = arguments.bytes("tag") else {
            for option in ["tag-type", "tag-uri", "tag-text", "tag-key"] where arguments.value(option) != nil {
                throw .usage("--\(option) describes the tag of --tag UID; add --tag")
            }
            return nil
        }
        var line = "place-tag uid=\(compactHex(uid)) id=tag"
        guard let type else {
            for option in ["tag-uri", "tag-text", "tag-key"] where arguments.value(option) != nil {
                throw .usage("--\(option) needs --tag-type (\(tagTypes.joined(separator: ", ")))")
            }
            return line
        }
        line += " type=\(type)"
        if arguments.value("tag-uri") != nil && arguments.value("tag-text") != nil {
            throw .usage("give --tag-uri or --tag-text, not both")
        }
        if let model = Type2TagModel(rawValue: type) {
            if arguments.value("tag-key") != nil {
                throw .usage("--tag-key is for a MIFARE Classic tag (\(MIFAREClassicModel.allCases.map(\.rawValue).joined(separator: ", "))), not \(type)")
            }
            for option in ["tag-uri", "tag-text"] {
                guard let value = arguments.value(option) else { continue }
                if value.isEmpty { throw .usage("--\(option) is empty; give the \(option == "tag-uri" ? "URI" : "text") to store") }
                try refuseControlCharacters(option, value)
            }
            var message: [UInt8]?
            if let uri = arguments.value("tag-uri") { message = ndefMessage(NDEFRecord.uri(uri)) }
            if let text = arguments.value("tag-text") {
                do { message = ndefMessage(try NDEFRecord.text(text)) } catch { throw .usage("--tag-text cannot be encoded: \(error)") }
            }
            do {
                _ = try Type2TagMemory(model: model, uid: uid, ndefMessage: message)
            } catch {
                throw .usage("--tag with --tag-type \(type): \(error.reason)")
            }
            if let message { line += " ndef=\(compactHex(message))" }
            return line
        }
        guard let model = MIFAREClassicModel(rawValue: type) else {
            throw .usage("unknown --tag-type '\(type)'; use one of \(tagTypes.joined(separator: ", "))")
        }
        for option in ["tag-uri", "tag-text"] where arguments.value(option) != nil {
            throw .usage("--\(option) is for a Type 2 tag (\(Type2TagModel.allCases.map(\.rawValue).joined(separator: ", "))), not \(type)")
        }
        var key = MIFAREClassicMemory.transportKey
        if let bytes = arguments.bytes("tag-key") {
            key = bytes
            line += " key=\(compactHex(bytes))"
        }
        do {
            _ = try MIFAREClassicMemory(model: model, uid: uid, keyA: key, keyB: key)
        } catch {
            throw .usage("--tag with --tag-type \(type): \(error.reason)")
        }
        return line
    }

    /// One record as a whole NDEF message.
    static func ndefMessage(_ record: NDEFRecord) -> [UInt8] {
        (try? NDEFMessage(records: [record]))?.serialized() ?? []
    }

    @Sendable static func runSimulate(_ invocation: Invocation) throws -> Int32 {
        let arguments = invocation.arguments
        guard arguments.positional.isEmpty else {
            throw CLIError.usage("simulate takes no arguments, got '\(arguments.positional[0])'")
        }
        // The options' values were checked by the parser (their kinds); the tag's as a whole here.
        let readerCount = arguments.integer("readers") ?? 2
        let timeout = arguments.seconds("timeout")
        let tagLine = try simulatedTagLine(arguments)
        let scale = arguments.decimal("time-scale")
        // A reader of standard output that goes away (`secbridge simulate | head -1`, to take the
        // export line) must not kill this process with SIGPIPE: its private pcscd would be left
        // running. The simulator keeps serving until a signal or --timeout; output is then lost.
        signal(SIGPIPE, SIG_IGN)

        // The reader name the personality's driver gives (acsccid: `ACS ACR122U`).
        let friendlyName = arguments.value("personality").flatMap(ACR122Personality.named)?.readerFriendlyName ?? SimulatedReaders.friendlyName
        var controls: [(String, SimulatedReaderControl)]
        var inProcess: InProcessReaders?
        var names: [String]
        var stop: () -> Void
        var pcscd: PrivatePCSCD?
        if arguments.has("in-process") {
            let base = SimulatedReaders.baseDirectory + "-inprocess"
            let readers = InProcessReaders()
            names = []
            do {
                for letter in ["a", "b"].prefix(readerCount) {
                    names.append(try readers.createChannel(deviceName: "\(base)/\(letter):field=\(SimulatedReaders.sharedFieldName)" + SimulatedReaders.timeScaleOption(scale), friendlyName: friendlyName))
                }
            } catch {
                throw CLIError.failure("cannot create the in-process simulated readers: \(error)")
            }
            inProcess = readers
            controls = Array(zip(["a", "b"], [SimulatedReaderControl(socketPath: base + "/a/control.sock"), SimulatedReaderControl(socketPath: base + "/b/control.sock")]).prefix(readerCount))
            // Closing the readers removes their sockets; the directories they lived in go too.
            stop = {
                readers.close()
                for directory in [base + "/a", base + "/b", base] { _ = rmdir(directory) }
            }
        } else {
            let entries = Array(SimulatedReaders.readerConfEntries(timeScale: scale, friendlyName: friendlyName).prefix(readerCount))
            do {
                // Daemons of runs that died before the lifeline existed, or whose watcher was killed too.
                PrivatePCSCD.reapLeftovers()
                let daemon = try PrivatePCSCD(readers: entries)
                names = try daemon.start()
                pcscd = daemon
            } catch let error as HarnessError {
                throw CLIError.failure("cannot start a private pcscd for the simulated readers: \(error.reason)"
                    + (error.code == .notPermitted ? "; run as root, or allow unprivileged user namespaces" : "")
                    + "; or use --in-process to run the readers inside this process")
            }
            controls = Array([("a", SimulatedReaders.controlA), ("b", SimulatedReaders.controlB)].prefix(readerCount))
            stop = { pcscd?.stop() }
        }
        defer { stop() }
        func request(_ control: SimulatedReaderControl, _ line: String) throws -> SimulatedReaderReply {
            do {
                return try control.send(line, timeout: .seconds(10))
            } catch {
                // The verb only: the line may hold a key or a long NDEF message.
                throw CLIError.failure("the simulated reader refused `\(line.prefix { $0 != " " })`: \(error)")
            }
        }
        if let personality = arguments.value("personality"), personality != ACR122Personality.defaultName {
            for (_, control) in controls { _ = try request(control, "personality name=\(personality)") }
        }
        if let bytes = arguments.bytes("card") {
            _ = try request(controls[0].1, "place-card uid=\(compactHex(bytes)) applet=\(arguments.value("applet") ?? "ok") id=card")
        }
        if let tagLine {
            _ = try request(controls[0].1, tagLine)
        }
        if let script = arguments.value("terminal") {
            _ = try request(controls[0].1, "place-terminal script=\(script) id=terminal")
        }

        var serialPath: String?
        if arguments.has("pn532-serial") {
            serialPath = try request(controls[0].1, "pn532-serial")["path"]
            guard serialPath != nil else { throw CLIError.failure("the simulated reader did not name the serial PN532's device node") }
        }

        let ordered = inProcess != nil ? names : readerNamesInOrder(names, controls: controls, friendlyName: friendlyName)
        // Started in the background of an interactive shell (`simulate … &`), standard input is a
        // terminal this process group does not own: reading it would stop the job (SIGTTIN,
        // "Stopped (tty input)"), so requests then go only to the control sockets.
        var stdinOpen = !(isatty(STDIN_FILENO) != 0 && tcgetpgrp(STDIN_FILENO) != getpgrp())
        let json = invocation.json
        if json {
            invocation.out(simulateStartedJSON(
                socket: pcscd?.socketPath, driver: pcscd == nil ? nil : SimulatedReaders.libraryPath,
                readers: zip(controls, ordered).map { ($0.0, $1, $0.1.socketPath) }, standardInput: stdinOpen,
                pn532Serial: serialPath).serialized())
        } else {
            if let pcscd {
                invocation.out("export PCSCLITE_CSOCK_NAME=\(pcscd.socketPath)")
            } else {
                invocation.out("readers in this process (no pcscd): type `send a|b HEX…` to send to them")
            }
            for ((letter, control), name) in zip(controls, ordered) {
                invocation.out("reader \(letter): \(name)  (control socket \(control.socketPath))")
            }
            if let serialPath {
                invocation.out("pn532 board: \(serialPath)  (serial, 115200 8N1; --device tty:\(serialPath))")
            }
            invocation.out("type control requests as `a <verb> key=value…` (a help), Ctrl-C stops")
            if !stdinOpen {
                invocation.out("running in the background: standard input is not read; send control requests to the sockets above")
            }
        }

        installInterruptHandler()
        let deadline = timeout.map { ContinuousClock.now + $0 }
        // An option read its value from standard input (`--tag-key -`) through the console's line
        // reader, which may have read the first control requests too: they come first.
        var pending: [UInt8] = stdinOpen ? InputLineReader.standardInput.takeUnread() : []
        /// Runs the whole lines in `pending`; drops a line longer than 8192 bytes.
        func handleLines() {
            while let newline = pending.firstIndex(of: 0x0A) {
                let line = String(decoding: pending[..<newline], as: UTF8.self)
                pending.removeSubrange(...newline)
                if let inProcess, line.hasPrefix("send ") {
                    handleInProcessSend(line, readers: inProcess, names: Dictionary(uniqueKeysWithValues: zip(controls.map(\.0), ordered)), console: invocation.console, json: json)
                } else {
                    handleControlLine(line, controls: controls, console: invocation.console, json: json)
                }
            }
            if pending.count > 8192 {
                invocation.console.err("secbridge: a control request is longer than 8192 bytes; it was dropped\n")
                pending.removeAll()
            }
        }
        handleLines()
        while !interrupted() {
            if let deadline, ContinuousClock.now >= deadline { break }
            if let pcscd, !pcscd.isRunning {
                throw CLIError.failure("the private pcscd exited: \(pcscd.logTail(lines: 5))")
            }
            guard stdinOpen else {
                sleepMilliseconds(100)
                continue
            }
            var descriptor = pollfd(fd: STDIN_FILENO, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, 100) > 0 else { continue }
            var buffer = [UInt8](repeating: 0, count: 4096)
            let count = read(STDIN_FILENO, &buffer, buffer.count)
            if count <= 0 {
                stdinOpen = false
                continue
            }
            pending += buffer[0..<count]
            handleLines()
        }
        invocation.out(json ? JSONValue.object([("event", .string("stopped"))]).serialized() : "stopping the simulated readers")
        return exitSuccess
    }

    /// `simulate --json`'s first line: where the readers are. `socket` (the private pcscd's, for
    /// PCSCLITE_CSOCK_NAME) and `driver` (the IFD handler library it loaded) are null in process;
    /// `pn532Serial` is the serial PN532 board's device node (`--pn532-serial`), null without one.
    static func simulateStartedJSON(
        socket: String?, driver: String?, readers: [(letter: String, name: String, controlSocket: String)], standardInput: Bool,
        pn532Serial: String? = nil
    ) -> JSONValue {
        .object([
            ("event", .string("started")),
            ("socket", socket.map { .string($0) } ?? .null),
            ("driver", driver.map { .string($0) } ?? .null),
            ("readers", .array(readers.map { reader in
                .object([("reader", .string(reader.letter)), ("name", .string(reader.name)), ("controlSocket", .string(reader.controlSocket))])
            })),
            ("pn532Serial", pn532Serial.map { .string($0) } ?? .null),
            ("standardInput", .bool(standardInput)),
        ])
    }

    /// `simulate --json`'s line for a control reply: the raw `line`, and parsed, `ok` with the
    /// `fields` (`ok key=value…`) or `ok: false` with the server's `code` and `reason` (`error …`).
    static func simulateReplyJSON(reader: String, line: String) -> JSONValue {
        var members: [(String, JSONValue)] = [("event", .string("reply")), ("reader", .string(reader)), ("line", .string(line))]
        do {
            let reply = try SimulatedReaderReply(parsing: line)
            members += [("ok", .bool(true)), ("fields", .object(reply.fields.map { ($0.key, .string($0.value)) }))]
        } catch let error as SimulatedReaderError {
            members += [("ok", .bool(false)), ("code", .string(error.code)), ("reason", .string(error.reason))]
        } catch {
            members += [("ok", .bool(false)), ("reason", .string("\(error)"))]
        }
        return .object(members)
    }

    /// The PC/SC names of readers a, b (named `friendlyName XX 00`): the driver's `open-order`
    /// tells which was named first.
    static func readerNamesInOrder(
        _ names: [String], controls: [(String, SimulatedReaderControl)], friendlyName: String = SimulatedReaders.friendlyName
    ) -> [String] {
        let simulated = names.filter { $0.hasPrefix(friendlyName + " ") }.sorted()
        let orders = controls.map { (try? $0.1.send("ping", timeout: .seconds(2)))?["open-order"].flatMap { Int($0) } ?? 0 }
        return orders.map { order in simulated.indices.contains(order) ? simulated[order] : "?" }
    }

    /// `send a|b HEX…` in --in-process mode: a pseudo-APDU (CLA FF) without a card goes through the
    /// escape path (DIRECT, control code 0x42000001), anything else to the card (SHARED).
    static func handleInProcessSend(_ line: String, readers: InProcessReaders, names: [String: String], console: any Console, json: Bool = false) {
        let parts = line.split(separator: " ", maxSplits: 2)
        guard parts.count == 3, let reader = names[String(parts[1]).lowercased()] else {
            console.err("secbridge: write `send a HEX…` or `send b HEX…`\n")
            return
        }
        let bytes: [UInt8]
        do { bytes = try HexBytes.parse(String(parts[2])) } catch {
            console.err("secbridge: not hex: \(error.reason)\n")
            return
        }
        do throws(PCSCError) {
            let answer: [UInt8]
            if bytes.first == 0xFF, (try? readers.readerStatus(reader).flags.contains(.present)) != true {
                let handle = try readers.connect(to: reader, share: .direct, protocols: .undefined)
                defer { try? handle.disconnect() }
                answer = try handle.control(code: 0x4200_0001, bytes)
                console.out(json ? exchangeJSON("control") : "ctl > \(bytes.hexString)\nctl < \(answer.hexString)\n")
            } else {
                let handle = try readers.connect(to: reader, share: .shared, protocols: .any)
                defer { try? handle.disconnect() }
                answer = try handle.transmit(bytes)
                console.out(json ? exchangeJSON("card") : "> \(bytes.hexString)\n< \(answer.hexString)\n")
            }
            // `path`: control (SCardControl, the escape path) or card (SCardTransmit).
            func exchangeJSON(_ path: String) -> String {
                JSONValue.object([
                    ("event", .string("exchange")), ("reader", .string(String(parts[1]).lowercased())), ("path", .string(path)),
                    ("command", .hex(bytes)), ("response", .hex(answer)),
                ]).serialized() + "\n"
            }
        } catch {
            console.err("secbridge: \(describe(error))\n")
        }
    }

    static func handleControlLine(_ line: String, controls: [(String, SimulatedReaderControl)], console: any Console, json: Bool = false) {
        let trimmed = Substring(line).trimmingCharacters(in: " \t\r")
        guard !trimmed.isEmpty else { return }
        let parts = trimmed.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, let control = controls.first(where: { $0.0 == parts[0].lowercased() })?.1 else {
            console.err("secbridge: start a request with the reader (\(controls.map(\.0).joined(separator: " or "))), e.g. `a status`\n")
            return
        }
        do {
            let reply = try control.exchange(String(parts[1]), timeout: .seconds(60))
            console.out((json ? simulateReplyJSON(reader: parts[0].lowercased(), line: reply).serialized() : reply) + "\n")
        } catch {
            console.err("secbridge: \(error)\n")
        }
    }
}
