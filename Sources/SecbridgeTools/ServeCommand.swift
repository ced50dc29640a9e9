// `secbridge serve`: a credential's applets as the card in a vpcd reader (docs/vpcd-protocol.md).
import ISO7816
import PCSCCore
import SecbridgeCLI
import SecureElementCredential
import Transcript

#if canImport(Glibc)
import Glibc
#endif

extension SecbridgeCLI {
    /// vpcd's default port (vsmartcard vpcd.h `VPCDPORT`, docs/vpcd-protocol.md §1).
    package static let vpcdDefaultPort = 35963

    /// The bound on one answer of the credential: host applets answer at once, a relayed PC/SC
    /// card within the call watchdog's 40 s; vpcd itself waits for an answer without a bound.
    static let serveAnswerBound = Duration.seconds(45)

    static let serveCommand = Command(
        name: "serve",
        abstract: SecbridgeCLI.toolAbstract("serve"),
        usage: "--credential FILE [--host HOST] [--port PORT] [--atr HEX] [--slot-wait SECONDS] [--record FILE] [--json]",
        discussion: """
            Connects to vsmartcard's vpcd (the pcscd driver of package vsmartcard-vpcd) as its virtual
            card, the way vicc and Android's "Remote Smart Card Reader" do, and answers with the
            credential's host applets: every PC/SC program on vpcd's host then sees the credential as a
            card in "Virtual PCD 00 00". vpcd listens on port 35963 for slot 00 (35964 for slot 01) on
            every interface; give --host to serve a pcscd on another machine.

            The card's ATR is the one a PC/SC reader builds for a contactless ISO/IEC 14443-4 card
            (PC/SC part 3 §3.1.3.2.3): 3B 8N 80 01, the credential's historical bytes, TCK; with none,
            3B 80 80 01 01. --atr replaces it.

            vpcd talks only to the first card of a slot: when the connection is made but vpcd asks
            nothing within 5 s (its presence poll asks about every 400 ms; --slot-wait changes the
            wait), another program is the card there already (another serve, vicc) and serve exits
            with status 1 saying so.

            When vpcd goes away (pcscd stopped or restarted) serve connects again, at most every 2 s,
            until Ctrl-C or SIGTERM, which close the connection (vpcd sees the card removed), finish
            the transcript and exit with status 0. A credential file that is a PC/SC card (pcscCard)
            is relayed: its card answers.

            Example:
              $ secbridge serve --credential Fixtures/credentials/uri-tag.json
              serving credential 'example-uri-tag' (host applets (NFC Forum Type 4 Tag)) as ATR 3B 80 80 01 01
              connected to vpcd at localhost:35963: the card is in its reader (Ctrl-C stops)
              $ secbridge read --reader 'Virtual PCD 00 00'    # in another terminal: NDEF record 1: URI https://example.com
            """,
        options: [
            .value("credential", "FILE", "The credential file to present (required).", .existingFile),
            .value("host", "HOST", "vpcd's host (default: localhost)."),
            .value("port", "PORT", "vpcd's port for the slot (default: 35963, slot 00).", .integer(1...65535)),
            .value("atr", "HEX", "The ATR to present (default: PC/SC part 3's contactless ATR).",
                   .hex(lengths: Array(2...33), takes: "an ATR of 2 to 33 bytes")),
            .value("slot-wait", "SECONDS", "How long vpcd may stay silent after the connection before the slot counts as held by another program (0.5 to 60, default 5).",
                   .seconds(limit: 60, atLeast: 0.5)),
            .value("record", "FILE", "Record every exchange to a transcript FILE (tgt < / tgt > lines)."),
            .flag("json", "Print JSON lines, one per event: {event: serving, credential, atr}, {event: connected, vpcd}, {event: disconnected, vpcd, reason}, {event: stopped, commands}."),
        ],
        run: runServe
    )

    @Sendable static func runServe(_ invocation: Invocation) throws -> Int32 {
        guard let path = invocation.arguments.value("credential") else {
            throw CLIError.usage("give the credential to serve with --credential FILE, e.g. --credential Fixtures/credentials/uri-tag.json")
        }
        let credential = try loadCredential(path, fallbackJSON: "", client: invocation.client)
        let atr = try serveATR(invocation.arguments.value("atr"), credential: credential)
        let host = invocation.arguments.value("host") ?? "localhost"
        let port = UInt16(invocation.arguments.value("port").flatMap { Int($0) } ?? vpcdDefaultPort)
        let endpoint = "\(host):\(port)"
        let slotWait = invocation.arguments.seconds("slot-wait") ?? serveFirstMessageBound
        let element = credential.secureElement
        let recording = try invocation.arguments.value("record").map { recordPath throws(CLIError) in
            try invocation.recordings.open(
                path: recordPath,
                header: TranscriptRecording.header(reader: "vpcd at \(endpoint)", atr: atr.bytes, transmissionProtocol: .t1, command: "serve"),
                work: "serving")
        }
        let recorder = recording.map { TranscriptRecorder(sink: $0) }
        defer { recording?.finish() }
        installInterruptHandler()
        let stop = interruptDescriptor()
        guard stop >= 0 else { throw CLIError.failure("cannot create the pipe that wakes serve on Ctrl-C: \(String(cString: strerror(errno)))") }
        try awaitResult("opening the credential's secure element", timeout: .seconds(10)) { try await element.open() }
        defer { _ = try? awaitResult("closing the credential's secure element", timeout: .seconds(5)) { await element.close() } }

        let json = invocation.json
        // Each report as its text line, or with --json as one JSON line.
        func report(_ text: String, _ members: [(String, JSONValue)]) {
            invocation.out(json ? JSONValue.object(members).serialized() : text)
        }
        report("serving credential '\(credential.id)' (\(element.secureElementDescription)) as ATR \(atr.bytes.hexString)",
               [("event", .string("serving")), ("credential", .string(credential.id)), ("atr", .hex(atr.bytes))])
        var served = 0
        var waitingSaid = false
        var retry = RetryBackoff(initial: .milliseconds(250))
        while !interrupted() {
            let link: VPCDLink
            do {
                link = try VPCDLink(host: host, port: port, stop: stop)
            } catch {
                if !waitingSaid {
                    invocation.console.err("secbridge: \(error.message); trying again until it answers (is pcscd running with vpcd, package vsmartcard-vpcd?)\n")
                    waitingSaid = true
                }
                if waitForStop(stop, retry.next()) { break }
                continue
            }
            // Connected is not yet served: vpcd talks only to the first card of a slot.
            let spoke: Bool
            do {
                spoke = try link.awaitFirstMessage(within: slotWait)
            } catch {
                if error == .stopped { break }
                // Closed before a word (a pcscd stopping as it was reached): as a refused connection.
                if waitForStop(stop, retry.next()) { break }
                continue
            }
            guard spoke else { throw CLIError.failure(slotHeldMessage(host: host, port: port, wait: slotWait)) }
            waitingSaid = false
            retry.reset()
            try? recorder?.recordEvent(.connected, [TranscriptAttribute("vpcd", endpoint)])
            report("connected to vpcd at \(endpoint): the card is in its reader (Ctrl-C stops)",
                   [("event", .string("connected")), ("vpcd", .string(endpoint))])
            let end = serveConnection(link, atr: atr.bytes, element: element, recorder: recorder, console: invocation.console, served: &served)
            try? recorder?.recordEvent(.disconnected, [TranscriptAttribute("vpcd", endpoint)])
            if case .closed(let reason) = end {
                report("vpcd at \(endpoint) went away (\(reason)); connecting again",
                       [("event", .string("disconnected")), ("vpcd", .string(endpoint)), ("reason", .string(reason))])
            }
        }
        report("stopped after \(served) command\(served == 1 ? "" : "s")", [("event", .string("stopped")), ("commands", .int(served))])
        return exitSuccess
    }

    /// How long serve waits, after its connection to vpcd is made, for vpcd's first message (the
    /// ATR request of pcscd's next presence poll, about every 400 ms: docs/vpcd-protocol.md §2)
    /// before it says that another program holds the slot: a dozen polls, room for a loaded machine.
    /// `--slot-wait` replaces it (a test that plays the held slot need not spend 5 s on it).
    static let serveFirstMessageBound = Duration.seconds(5)

    /// The error when vpcd at `host`:`port` took the connection but sent nothing within
    /// `wait`: the slot's card is another program (vpcd accepts one card per slot,
    /// docs/vpcd-protocol.md §1), or no vpcd listens there.
    static func slotHeldMessage(host: String, port: UInt16, wait: Duration = serveFirstMessageBound) -> String {
        let seconds = secondsText(wait)
        let otherSlot = port < UInt16.max ? ", or serve another slot with --port (vpcd's next slot listens on \(port + 1))" : ""
        return "vpcd at \(host):\(port) took the connection but sent nothing within \(seconds) s: another program is already "
            + "the card in that slot (vpcd talks only to the first card that connects: another `secbridge serve`, vicc, "
            + "Android's Remote Smart Card Reader), or what listens on port \(port) is not vpcd; stop that program\(otherSlot)"
    }

    /// `--atr`, checked as an ATR (ISO/IEC 7816-3 §8), or PC/SC part 3's contactless ATR with the
    /// credential's historical bytes.
    static func serveATR(_ text: String?, credential: Credential) throws(CLIError) -> ATR {
        if let text {
            do {
                return try ATR(parsing: try HexBytes.parse(text))
            } catch {
                throw .usage("--atr is not a valid ATR: \(error)")
            }
        }
        do {
            return try ATR.contactless(historicalBytes: credential.emulationDefaults.historicalBytes)
        } catch {
            throw .failure("credential '\(credential.id)' has \(credential.emulationDefaults.historicalBytes.count) historical bytes, more than an ATR holds (15): give --atr")
        }
    }

    /// Answers vpcd's messages on `link` until it closes or a signal comes (docs/vpcd-protocol.md §2).
    static func serveConnection(
        _ link: VPCDLink, atr: [UInt8], element: any SecureElement, recorder: TranscriptRecorder?, console: any Console, served: inout Int
    ) -> VPCDLinkEnd {
        do {
            while true {
                let payload = try link.receive()
                switch VPCDMessage(payload: payload) {
                case .atrRequest:
                    try link.send(atr)
                case .powerOn, .reset:
                    // A card forgets its selection at power-up and reset (ISO/IEC 7816-3 §6.2).
                    _ = try? awaitResult("resetting the applets", timeout: serveAnswerBound) { await element.terminalActivated() }
                    try? recorder?.recordEvent(VPCDMessage(payload: payload) == .reset ? .cardReset : .targetActivated)
                case .powerOff:
                    try? recorder?.recordEvent(.targetReleased)
                case .unknownControl(let byte):
                    console.err("secbridge: note: vpcd sent the unknown control byte \([byte].hexString); ignored (no answer, as vicc does)\n")
                case .commandAPDU(let command):
                    try? recorder?.record(.target(.incoming, TranscriptBytes(command)))
                    let response: [UInt8]
                    do {
                        response = try awaitResult("the credential's answer", timeout: serveAnswerBound) { try await element.transceive(command) }
                        try? recorder?.record(.target(.outgoing, TranscriptBytes(response)))
                    } catch {
                        // vpcd needs an answer to every C-APDU: 6F 00 (no precise diagnosis, ISO/IEC 7816-4 §5.6).
                        console.err("secbridge: error: the credential could not answer \(command.hexString): \(error); answered 6F 00\n")
                        try? recorder?.recordFailure(error)
                        response = [0x6F, 0x00]
                    }
                    served += 1
                    try link.send(response)
                case nil:
                    return .closed("vpcd sent an empty message")
                }
            }
        } catch {
            return error
        }
    }

    /// Waits `duration` or until `stop` is readable; true when it is.
    static func waitForStop(_ stop: Int32, _ duration: Duration) -> Bool {
        let milliseconds = Int32(duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000)
        var fds = [pollfd(fd: stop, events: Int16(POLLIN), revents: 0)]
        let result = poll(&fds, 1, milliseconds)
        return result > 0 || interrupted()
    }
}
