import ISO7816
import PCSC
import Transcript

/// Where a script's steps come from: a file's lines (``APDUScript/Lines``) or standard input's.
package protocol ScriptSource {
    /// The next step; nil at the end or at `exit`. A source that must wait for input calls
    /// `beforeWaiting` when no line came within `hold`, before it waits on (without a bound); a
    /// file's lines never wait.
    mutating func next(holding hold: Duration, beforeWaiting: () -> Void) throws(CLIError) -> APDUScript.Step?
}

extension APDUScript.Lines: ScriptSource {
    package mutating func next(holding _: Duration, beforeWaiting _: () -> Void) throws(CLIError) -> APDUScript.Step? {
        try next()
    }
}

/// The lines of standard input, parsed one at a time as they arrive (`run -`, `shell < FILE`).
package struct ConsoleLines: ScriptSource {
    let console: any Console
    let fileName: String
    private var lineNumber = 0
    private var ended = false

    package init(console: any Console, fileName: String = "<stdin>") {
        self.console = console
        self.fileName = fileName
    }

    package mutating func next(holding hold: Duration, beforeWaiting: () -> Void) throws(CLIError) -> APDUScript.Step? {
        while !ended {
            if !console.waitForLine(upTo: hold) { beforeWaiting() }
            guard let line = console.readLine() else {
                // A read that failed is no end of the script: the lines after it were never seen.
                if let failure = console.inputFailure {
                    let after = lineNumber == 0 ? "" : " after line \(lineNumber)"
                    throw .failure("\(fileName): cannot read standard input\(after): \(failure); give the script through a pipe, a regular file (`< FILE`) or as `secbridge run FILE`")
                }
                break
            }
            lineNumber += 1
            switch try ScriptLine.parse(Array(line.utf8)[...], fileName: fileName, line: lineNumber) {
            case .none: continue
            case .exit: ended = true
            case .step(let step): return step
            }
        }
        return nil
    }
}

/// Runs the statements of the script language (``APDUScript``) on one reader at a time: `secbridge
/// run` and `secbridge shell` share it, so the same lines print the same output in both.
///
/// The session is on a card (SCardConnect shared, T=0 or T=1) when the reader has one, else on the
/// reader alone (SCardConnect with SCARD_SHARE_DIRECT), where pseudo-APDUs (`FF …`) and `control`
/// lines go as escape commands (SCardControl with the code the reader announces, as `secbridge
/// control` sends them). A card placed later is connected to by the first APDU that needs it.
package final class ScriptInterpreter {
    package struct Options {
        /// `--raw`: no GET RESPONSE, no Le correction, no chaining.
        package var raw = false
        package var stopOnError = false
        /// Hold one PC/SC transaction on the card while the session is on it (`run`, a shell script).
        package var holdsTransaction = true
        /// How long the transaction is kept while the script waits for its next line; by default
        /// ``ScriptInterpreter/inputHold``. The source asks its console with it
        /// (``Console/waitForLine(upTo:)``), so a test's console decides on its own clock.
        package var inputHold = ScriptInterpreter.inputHold
        /// The SCardControl code for escape commands (`--code`); nil: the one the reader announces.
        package var controlCode: UInt32?
        /// The command named in transcript headers ("run", "shell").
        package var command = "run"
        package init() {}
    }

    /// How long a script read from standard input keeps its PC/SC transaction while it waits for
    /// the next line: 200 ms. Longer than a program that writes a script in pieces takes between
    /// them (a shell loop's `echo` per line, a program that answers each output line: a few
    /// milliseconds each), so such a script stays in one transaction, as a file does; short enough
    /// that another program on the reader waits at most this and pcsc-lite's retry period
    /// (SCardBeginTransaction tries again every 100 ms, PCSCLITE_LOCK_POLL_RATE in pcsc-lite's
    /// winscard_clnt.c) while the script pauses, instead of as long as the pipe stays open. After it
    /// the transaction is ended (SCARD_LEAVE_CARD) and begun again when the next line needs the card
    /// (docs/shell.md §1).
    package static let inputHold: Duration = .milliseconds(200)

    private let invocation: Invocation
    private let context: any PCSCClientContext
    private let options: Options
    /// The file name in messages ("script.txt:3: …").
    private let fileName: String
    package private(set) var reader: String
    // The interpreter runs on one thread (it is not Sendable): the state read per APDU skips the
    // run-time exclusivity check.
    @exclusivity(unchecked) private var card: CardSession? { didSet { cardExchange = nil } }
    private var direct: (any PCSCConnection)?
    /// The session on a PN532 board on a serial line (`reader tty:PATH`, `shell --device`), instead
    /// of a PC/SC reader.
    private var serial: SerialBoardSession?
    private var escapeCode: UInt32?
    /// pcscd went away and the reader was not opened again yet (``execute(_:)``).
    private var reconnectPending = false
    private var inTransaction = false
    /// The line after which the transaction was ended to wait for input, until it is begun again.
    private var releasedAfterLine: Int?
    /// The last line run, and whether the note about a released transaction was printed.
    private var lastLine = 0
    private var releaseNoted = false
    @exclusivity(unchecked) private var recording: (path: String, writer: StoppingTranscriptSink, recorder: TranscriptRecorder)? {
        didSet { cardExchange = nil }
    }
    /// The card's traced (and recorded) channel and the ISO 7816-4 transport over it, made at the
    /// first APDU and kept while the card and the recording stay the same (not built per APDU).
    private final class CardExchange {
        let tracer: TracingChannel
        let transport: ISO7816Transport
        init(tracer: TracingChannel, transport: ISO7816Transport) { (self.tracer, self.transport) = (tracer, transport) }
    }
    @exclusivity(unchecked) private var cardExchange: CardExchange?
    /// The last status word printed and its meaning (a script's answers mostly repeat one SW).
    @exclusivity(unchecked) private var lastMeaning: (sw: StatusWord, text: String)?
    /// `--json` and `--show-secrets`, read once (not a set lookup per APDU).
    private let json: Bool
    private let secrets: SecretDisplay
    /// Prints a line of an exchange (`> …`, `< …`, `  SW …`) in text mode; nothing with --json.
    private let traceLine: (String) -> Void
    /// In text mode on a buffered console (`run`, a shell reading a script): where the exchange
    /// lines are written as bytes.
    private let lineSink: BufferedConsole?
    /// With --json, one object per step run so far.
    package private(set) var results: [JSONValue] = []
    package private(set) var status = SecbridgeCLI.exitSuccess

    /// Opens the session: on a card (the reader `argument` names, else the first with a card) when
    /// `needsCard`, or when `wait` is given; otherwise on the chosen reader, with or without a card.
    /// - Throws: `CLIError.failure` from reader selection, the connection or the transaction.
    package init(
        invocation: Invocation, context: any PCSCClientContext, fileName: String, options: Options,
        reader argument: String?, needsCard: Bool, wait: Duration?
    ) throws(CLIError) {
        self.invocation = invocation
        self.context = context
        self.options = options
        self.fileName = fileName
        let console = invocation.console
        let json = invocation.json
        self.json = json
        secrets = invocation.secrets
        lineSink = json ? nil : console as? BufferedConsole
        if json {
            traceLine = { _ in }
        } else if let buffered = console as? BufferedConsole {
            traceLine = { buffered.outLine($0) }
        } else {
            traceLine = { console.out($0 + "\n") }
        }
        if let argument, argument.hasPrefix("tty:") {
            let board = try SerialBoardSession(path: try SerialBoardSession.path(argument))
            reader = board.reader
            serial = board
            return
        }
        if needsCard || wait != nil {
            let session = try CardSession.open(context: context, reader: argument, record: nil, command: options.command, wait: wait, recordings: nil)
            reader = session.reader
            card = session
        } else {
            let (readers, states) = try listReadersWithStates(context)
            let withCard = Set(states.filter(\.hasCard).map(\.readerName))
            reader = try selectReader(argument, in: readers, preferring: { withCard.contains($0) })
            try connect(card: withCard.contains(reader))
        }
        try beginTransactionIfHeld()
    }

    /// Ends recording, the transaction and the connection, leaving the card as it is.
    package func close() {
        stopRecording()
        disconnect()
    }

    /// What the session is on: "reader: NAME, card ATR …" or "reader: NAME, no card (…)".
    package var readerDescription: String {
        if let serial {
            return "reader: \(serial.reader), a PN532 board on a serial line (PN532 frames: control D4 …, or Direct Transmit FF 00 00 00 Lc D4 …)"
        }
        if let card { return "reader: \(reader), card ATR \(card.atr.isEmpty ? "none" : card.atr.hexString)" }
        return "reader: \(reader), no card (a DIRECT connection: pseudo-APDUs FF … and control only)"
    }

    /// Runs one step. Returns false when the script should stop here (--stop-on-error).
    /// - Throws: `CLIError.failure` "FILE:LINE: …" when the step failed.
    ///
    /// On a ``ReestablishingContext`` (the interactive shell), a step during which pcscd went away
    /// (SCARD_E_NO_SERVICE, SCARD_E_SERVICE_STOPPED) is run once more on a new connection, made on
    /// a new context, to the same reader: pcsc-lite answers those codes when its request did not
    /// reach pcscd, so the card did not see the command. When pcscd is not back yet the step
    /// fails, and the next step connects again first.
    package func execute(_ step: APDUScript.Step) throws(CLIError) -> Bool {
        guard let reestablishing = context as? ReestablishingContext else { return try executeOnce(step) }
        if reconnectPending { try located(step.line) { () throws(CLIError) in try reconnectAfterServiceLoss() } }
        let losses = reestablishing.losses
        do {
            return try executeOnce(step)
        } catch where reestablishing.losses != losses {
            reconnectPending = true
            try located(step.line) { () throws(CLIError) in try reconnectAfterServiceLoss() }
            return try executeOnce(step)
        }
    }

    /// After pcscd went away: the old connections are dropped and the reader is opened again on a
    /// new context (on the card when there is one, else DIRECT).
    private func reconnectAfterServiceLoss() throws(CLIError) {
        disconnect()
        let states: [ReaderState]
        do {
            states = try readerStates(context, [reader])
        } catch {
            throw .failure(describe(error))
        }
        try connect(card: states.first?.eventFlags.contains(.present) == true)
        try beginTransactionIfHeld()
        reconnectPending = false
    }

    private func executeOnce(_ step: APDUScript.Step) throws(CLIError) -> Bool {
        defer { lastLine = step.line }
        switch step {
        case .apdu(let bytes, let line) where serial != nil:
            guard let frame = SerialBoardSession.directTransmitFrame(bytes) else {
                throw .failure("\(fileName):\(line): \(reader) is a PN532 board on a serial line: it takes PN532 frames (control D4 …) and Direct Transmit (FF 00 00 00 Lc D4 …), not \(SecretDisplay.masked.text(bytes)); an APDU goes to a card inside InDataExchange: control D4 4A 01 00 lists it, then control D4 40 01 followed by the APDU")
            }
            try serialFrame(frame, shown: bytes, statusWord: [0x90, 0x00], line: line)
        case .control(let bytes, let line) where serial != nil:
            try serialFrame(bytes, shown: bytes, statusWord: [], line: line)
        case .reset(let line) where serial != nil:
            throw .failure("\(fileName):\(line): `reset` resets a card in a PC/SC reader; on the PN532 board \(reader) send InRelease (control D4 52 00), or run `secbridge reset --device \(reader)`")
        case .apdu(let bytes, let line):
            try resumeTransaction(line: line)
            return try exchange(bytes, line: line)
        case .control(let bytes, let line):
            try resumeTransaction(line: line)
            _ = try control(bytes, line: line, asPseudoAPDU: false)
        case .reset(let line):
            try resumeTransaction(line: line)
            try reset(line: line)
        case .reader(let argument, let line):
            if let argument { try changeReader(to: argument, line: line) }
            if json, let serial {
                results.append(.object([("line", .int(line)), ("reader", .string(serial.reader)), ("atr", .null)]))
            } else if json {
                results.append(.object([("line", .int(line)), ("reader", .string(reader)), ("atr", card.map { .hex($0.atr) } ?? .null)]))
            } else {
                invocation.out(readerDescription)
            }
        case .record(let path, let line):
            if path != nil, serial != nil {
                throw .failure("\(fileName):\(line): `record` is not available on a PN532 board on a serial line yet; change to a PC/SC reader with `reader NAME` first")
            }
            if let path {
                try startRecording(path, line: line)
            } else {
                guard let finished = recording?.path else {
                    throw .failure("\(fileName):\(line): 'record off', but nothing is being recorded")
                }
                // A recording stopped by a write error says so here too, not only when it failed.
                let incomplete = stopRecording().map { "writing it failed (\(StoppingTranscriptSink.cause($0)))" }
                if json {
                    var members: [(String, JSONValue)] = [("line", .int(line)), ("recorded", .string(finished))]
                    if let incomplete { members.append(("incomplete", .string(incomplete))) }
                    results.append(.object(members))
                } else if let incomplete {
                    invocation.out("recorded to \(finished) up to where \(incomplete); the file ends with a line saying it is incomplete")
                } else {
                    invocation.out("recorded to \(finished)")
                }
            }
        case .help(let line):
            if json {
                results.append(.object([("line", .int(line)), ("help", .string(Self.languageHelp))]))
            } else {
                invocation.console.out(Self.languageHelp + "\n")
            }
        }
        return true
    }

    /// The statements, as `help` prints them and `secbridge shell --help` shows them.
    package static let languageHelp = """
        Statements (one a line; `#` and `//` start comments; keywords in any case):
          HEX…             an APDU in hex, e.g. 00 A4 04 00 07 D2 76 00 00 85 01 01 00
          FF …             a reader pseudo-APDU (e.g. FF 00 48 00 00, the ACR122U firmware);
                           without a card it goes as an escape command
          control HEX…     an escape command (SCardControl with the reader's escape code)
          reset            reset the card and show its ATR
          reader [NAME]    show the reader, or change to another (an index or part of its name,
                           or tty:PATH, a PN532 board on a serial line: control D4 … then)
          record FILE      record every exchange to a new transcript FILE; `record off` stops
          help             this list
          exit, quit       stop (Ctrl-D too)
        """

    /// Starts recording to `path` (`record FILE`, `--record FILE`); `line` nil for the option.
    package func startRecording(_ path: String, line: Int?) throws(CLIError) {
        let place = line.map { "\(fileName):\($0): " } ?? ""
        if let recording {
            throw .failure("\(place)already recording to '\(recording.path)'; `record off` first")
        }
        let writer: StoppingTranscriptSink
        do {
            writer = try invocation.recordings.open(
                path: path,
                header: TranscriptRecording.header(
                    reader: reader, atr: card?.atr, transmissionProtocol: card?.handle.transmissionProtocol ?? .undefined,
                    command: options.command),
                work: "the \(options.command)")
        } catch {
            throw .failure(place + error.message)
        }
        recording = (path, writer, TranscriptRecorder(sink: writer))
        guard let line else { return }
        if json {
            results.append(.object([("line", .int(line)), ("record", .string(path))]))
        } else {
            invocation.out("recording to \(path)")
        }
    }

    // MARK: - Steps

    private func exchange(_ bytes: [UInt8], line: Int) throws(CLIError) -> Bool {
        if card == nil && bytes[0] != 0xFF { try attachCard(line: line, for: "an APDU other than a pseudo-APDU (FF …)") }
        let answer: [UInt8]
        // The transport's answer as it parsed it (not serialized and parsed again for the SW line).
        var transported: ResponseAPDU?
        if let card {
            do {
                let exchange = cardExchange(card)
                if options.raw || bytes[0] == 0xFF {
                    answer = try exchange.tracer.transmit(bytes)
                } else {
                    let response = try exchange.transport.transmit(encoded: bytes)
                    transported = response
                    answer = json ? response.serialized() : []
                }
            } catch {
                let message = "\(fileName):\(line): " + card.explainFailure(error, sending: bytes, recorded: recording != nil)
                dropCardIfGone(card)
                throw .failure(message)
            }
        } else {
            answer = try control(bytes, line: line, asPseudoAPDU: true)
        }
        let firmware = firmwareVersionAnswer(command: bytes, answer: answer)
        let response = transported ?? (firmware == nil && answer.count >= 2 ? try? ResponseAPDU(parsing: answer) : nil)
        if json {
            if card != nil {
                var members: [(String, JSONValue)] = [
                    ("line", .int(line)), ("command", secrets.json(bytes)),
                    ("response", secrets.json(response: answer, answering: bytes)),
                ]
                if let firmware { members.append(("firmware", .string(firmware.text))) }
                if let response {
                    members.append(("sw", .hex(response.statusWord.bytes)))
                    members.append(("meaning", .string(response.statusWord.meaning)))
                }
                results.append(.object(members))
            }
        } else if let response {
            let sw = response.statusWord
            if let lineSink {
                let meaning = meaning(of: sw)
                lineSink.outLine { SecretDisplay.appendStatusLine(sw.sw1, sw.sw2, meaning: meaning, to: &$0) }
            } else {
                traceLine(SecretDisplay.statusLine(sw.sw1, sw.sw2, meaning: sw.meaning))
            }
        } else if let firmware {
            invocation.out("  firmware: \(firmware.text)")
        }
        if options.stopOnError, let sw = response?.statusWord, !(sw.isSuccess || sw.sw1 == 0x61) {
            invocation.console.err("secbridge: stopped at \(fileName):\(line): SW \(sw.bytes.hexString) (\(sw.meaning))\n")
            status = SecbridgeCLI.exitFailure
            return false
        }
        return true
    }

    /// ``cardExchange``, made now if there is none for `card`.
    private func cardExchange(_ card: CardSession) -> CardExchange {
        if let cardExchange { return cardExchange }
        let tracer = TracingChannel(recorded(card.channel), display: secrets, trace: traceLine)
        tracer.lineSink = lineSink
        let made = CardExchange(
            tracer: tracer, transport: ISO7816Transport(channel: tracer, capabilities: card.capabilities, readerMaxInput: card.maxInput))
        cardExchange = made
        return made
    }

    /// `sw.meaning`, kept for the next answer with the same status word.
    private func meaning(of sw: StatusWord) -> String {
        if let lastMeaning, lastMeaning.sw == sw { return lastMeaning.text }
        let text = sw.meaning
        lastMeaning = (sw, text)
        return text
    }

    /// An escape command on the session's handle (a card's or the DIRECT one). With
    /// `asPseudoAPDU` the caller reports the answer (as for a transmitted pseudo-APDU).
    private func control(_ bytes: [UInt8], line: Int, asPseudoAPDU: Bool) throws(CLIError) -> [UInt8] {
        guard let handle = card?.handle ?? direct else {
            throw .failure("\(fileName):\(line): no connection to '\(reader)'; choose a reader with `reader NAME`")
        }
        let code: UInt32
        if let known = options.controlCode ?? escapeCode {
            code = known
        } else {
            do {
                code = try SecbridgeCLI.escapeCode(of: handle, reader: reader)
            } catch {
                throw .failure("\(fileName):\(line): \(error.message)")
            }
            escapeCode = code
        }
        let answer: [UInt8]
        do {
            let tracer = TracingChannel(recorded(GuardedChannel(handle)), display: secrets, trace: traceLine)
            answer = try tracer.control(code: code, bytes)
        } catch let error as PCSCError {
            throw .failure("\(fileName):\(line): " + SecbridgeCLI.controlFailure(error, code: code, command: bytes))
        } catch {
            throw .failure("\(fileName):\(line): SCardControl with \(SecretDisplay.masked.text(bytes)): \(error)")
        }
        let firmware = SecbridgeCLI.firmwareString(bytes, answer)
        if json {
            var members: [(String, JSONValue)] = [
                ("line", .int(line)), ("control", .string("0x" + String(code, radix: 16, uppercase: true))),
                ("command", secrets.json(bytes)), ("response", secrets.json(response: answer, answering: bytes)),
            ]
            if let firmware { members.append(("firmware", .string(firmware))) }
            results.append(.object(members))
        } else if !asPseudoAPDU, let firmware {
            invocation.out("  firmware: \(firmware)")
        }
        return answer
    }

    private func reset(line: Int) throws(CLIError) {
        if card == nil { try attachCard(line: line, for: "reset") }
        guard let card else { return }
        do {
            try CallWatchdog.shared.guarding("SCardReconnect") { () throws(PCSCError) in
                try card.handle.reconnect(share: .shared, protocols: .any, initialization: .reset)
            }
        } catch {
            dropCardIfGone(card)
            throw .failure("\(fileName):\(line): reset failed: \(describe(error))")
        }
        let atr = (try? card.handle.status().atr) ?? []
        try? recording?.recorder.recordEvent(.cardReset, [TranscriptAttribute("atr", atr.hexString)])
        if json {
            results.append(.object([("line", .int(line)), ("reset", .bool(true)), ("atr", .hex(atr))]))
        } else {
            invocation.out("reset: ATR \(atr.isEmpty ? "none" : atr.hexString)")
        }
    }

    private func changeReader(to argument: String, line: Int) throws(CLIError) {
        if argument.hasPrefix("tty:") {
            if let recording {
                throw .failure("\(fileName):\(line): a PN532 board on a serial line is not recorded yet; `record off` first (recording to '\(recording.path)')")
            }
            let board = try located(line) { () throws(CLIError) in try SerialBoardSession(path: try SerialBoardSession.path(argument)) }
            disconnect()
            reader = board.reader
            serial = board
            return
        }
        let (readers, states) = try located(line) { () throws(CLIError) in try listReadersWithStates(context) }
        let chosen = try located(line) { () throws(CLIError) in try selectReader(argument, in: readers) }
        disconnect()
        reader = chosen
        escapeCode = nil
        let present = states.first { $0.readerName == chosen }?.eventFlags.contains(.present) ?? false
        try located(line) { () throws(CLIError) in
            try connect(card: present)
            try beginTransactionIfHeld()
        }
    }

    // MARK: - Connections

    /// Connects to the card in ``reader`` (`card`), else to the reader alone (DIRECT).
    private func connect(card: Bool) throws(CLIError) {
        if card {
            self.card = try CardSession.open(context: context, reader: reader, record: nil, command: options.command, recordings: nil)
            return
        }
        let reader = self.reader
        do {
            direct = try CallWatchdog.shared.guarding("SCardConnect") { () throws(PCSCError) in
                try context.connect(to: reader, share: .direct, protocols: .undefined)
            }
        } catch {
            throw .failure("could not connect to '\(reader)' directly: \(describe(error))")
        }
    }

    /// A DIRECT session gets the card now in the reader, for `what`.
    /// - Throws: `CLIError.failure` saying that `what` needs a card when there is none.
    private func attachCard(line: Int, for what: String) throws(CLIError) {
        let states: [ReaderState]
        do {
            states = try readerStates(context, [reader])
        } catch {
            throw .failure("\(fileName):\(line): \(describe(error))")
        }
        guard states.first?.eventFlags.contains(.present) == true else {
            throw .failure("\(fileName):\(line): no card in '\(reader)': \(what) needs one; place a card or tag on the reader, or change readers with `reader NAME`")
        }
        try? direct?.disconnect(.leave)
        direct = nil
        try located(line) { () throws(CLIError) in
            try connect(card: true)
            try beginTransactionIfHeld()
        }
    }

    /// After a failure: when the card has left (SCardStatus), the session goes back to the reader
    /// alone (DIRECT), so the next line that needs a card connects to the one placed then.
    private func dropCardIfGone(_ card: CardSession) {
        guard CallWatchdog.shared.guarding("SCardStatus", { card.handle.cardHasLeft() }) else { return }
        disconnect()
        try? connect(card: false)
    }

    private func beginTransactionIfHeld() throws(CLIError) {
        guard options.holdsTransaction, let card, !inTransaction else { return }
        try beginCardTransaction(card.handle, reader: card.reader)
        inTransaction = true
        releasedAfterLine = nil
    }

    /// Ends the transaction before the script waits on for its next line (none came within
    /// ``Options/inputHold``), so other programs reach the card while it waits; a recording notes
    /// it (`event transaction-ended reason="waiting for input"`). The next line that needs the
    /// card begins it again (``resumeTransaction(line:)``).
    package func releaseTransactionWhileWaiting() {
        guard inTransaction, let card else { return }
        endCardTransaction(card.handle)
        inTransaction = false
        releasedAfterLine = lastLine
        try? recording?.recorder.recordEvent(.transactionEnded, [TranscriptAttribute("reason", "waiting for input")])
    }

    /// Begins the transaction again after ``releaseTransactionWhileWaiting()``, for `line`.
    ///
    /// Another program may have used the card meanwhile. A reset (SCardBeginTransaction answers
    /// SCARD_W_RESET_CARD) or a removal lost the card's state: the script stops there, as when a
    /// card is reset in the middle of a run, and the message says that the transaction had been
    /// released to wait for input. A change that leaves no trace (another application selected) is
    /// not seen: the first time, a note on standard error says that the lines after the pause did not
    /// run in the same transaction as those before it.
    /// - Throws: `CLIError.failure` "FILE:LINE: …" when the card was reset or removed, or the
    ///   transaction cannot begin (another program keeps the card).
    private func resumeTransaction(line: Int) throws(CLIError) {
        guard let released = releasedAfterLine, let card, options.holdsTransaction, !inTransaction else { return }
        let pause = "no line within \(secondsText(options.inputHold)) s after line \(released)"
        let recorded = recording != nil
        var changed: PCSCError?
        do {
            try beginCardTransaction(card.handle, reader: card.reader) { error in
                let gone = { CallWatchdog.shared.guarding("SCardStatus", { card.handle.cardHasLeft() }) }
                // The message says when: while the transaction was released (no exchange was on).
                let words = cardChange(error.code, reader: card.reader, cardIsGone: gone, recorded: recorded, again: "script", removal: "")
                if words != nil { changed = error }
                return words
            }
        } catch {
            if changed == .resetCard {
                let reason = TranscriptAttribute("reason", "another program, while the transaction was released")
                try? recording?.recorder.recordEvent(.cardReset, [reason])
            } else if changed != nil {
                try? recording?.recorder.recordEvent(.cardRemoved, [TranscriptAttribute("reader", card.reader)])
            }
            dropCardIfGone(card)
            throw .failure("\(fileName):\(line): while the PC/SC transaction was released to wait for input (\(pause)), \(error.message)")
        }
        inTransaction = true
        releasedAfterLine = nil
        try? recording?.recorder.recordEvent(.transactionBegan)
        if !releaseNoted {
            releaseNoted = true
            invocation.console.err(
                "secbridge: note: \(fileName):\(line): the PC/SC transaction was released to wait for input (\(pause)) and begun again for this line: "
                    + "other programs could use the card in between, so the lines before and after the pause did not run in one transaction\n")
        }
    }

    private func disconnect() {
        if let card {
            if inTransaction { endCardTransaction(card.handle) }
            card.close()
        }
        inTransaction = false
        releasedAfterLine = nil
        card = nil
        try? direct?.disconnect(.leave)
        direct = nil
        serial = nil
    }

    /// Sends `frame` (`D4 cmd …`) to the serial board and prints the exchange as `shown` and the
    /// answer followed by `statusWord` (90 00 for Direct Transmit, as the ACR122U's MCU adds it).
    private func serialFrame(_ frame: [UInt8], shown: [UInt8], statusWord: [UInt8], line: Int) throws(CLIError) {
        guard let serial else { return }
        try located(line) { () throws(CLIError) in try SerialBoardSession.check(frame) }
        traceLine("> " + secrets.text(shown))
        let answer = try located(line) { () throws(CLIError) in try serial.exchange(frame) } + statusWord
        traceLine("< " + secrets.text(response: answer, answering: shown))
        if json {
            results.append(.object([
                ("line", .int(line)), ("device", .string(serial.reader)),
                ("command", secrets.json(shown)), ("response", secrets.json(response: answer, answering: shown)),
            ]))
        }
    }

    /// Ends the recording; returns the failure that stopped it early, nil for a complete one.
    @discardableResult
    private func stopRecording() -> TranscriptWriteError? {
        defer { recording = nil }
        return recording?.writer.finish()
    }

    /// `channel`, recorded when a recording is on.
    private func recorded(_ channel: any CardChannel) -> any CardChannel {
        recording.map { RecordingChannel(wrapping: channel, recorder: $0.recorder) } ?? channel
    }

    /// `body`'s error with "FILE:LINE: " before it.
    private func located<T>(_ line: Int, _ body: () throws(CLIError) -> T) throws(CLIError) -> T {
        do {
            return try body()
        } catch {
            throw .failure("\(fileName):\(line): \(error.message)")
        }
    }
}

extension SecbridgeCLI {
    /// Runs `source`'s steps with a ``ScriptInterpreter``: `secbridge run` and a shell reading a
    /// script. With --json the results (and a failure) are printed as one array at the end.
    package static func interpret(
        _ source: inout some ScriptSource, invocation: Invocation, fileName: String, options: ScriptInterpreter.Options,
        needsCard: Bool
    ) throws -> Int32 {
        // The first step is read before a reader is opened: a malformed first line is reported as such.
        var pending = try source.next(holding: options.inputHold) {}
        // A serial PN532 board (`shell --device`) needs no PC/SC until a `reader NAME` line.
        let device = invocation.arguments.value("device")
        let context: any PCSCClientContext = device == nil ? try openContext(invocation) : deferredReestablishingContext(invocation)
        let interpreter = try ScriptInterpreter(
            invocation: invocation, context: context, fileName: fileName, options: options,
            reader: device ?? invocation.arguments.value("reader"), needsCard: needsCard, wait: invocation.arguments.seconds("wait"))
        defer { interpreter.close() }
        do throws(CLIError) {
            if let path = invocation.arguments.value("record") { try interpreter.startRecording(path, line: nil) }
            // Each step is moved out of `pending`, not copied.
            while let step = pending.take() {
                guard try interpreter.execute(step) else { break }
                // A pause in the input longer than the hold ends the transaction while it lasts.
                pending = try source.next(holding: options.inputHold) { interpreter.releaseTransactionWhileWaiting() }
            }
        } catch {
            // The exchanges done so far are shown (and recorded) before the failure.
            if invocation.json {
                invocation.out(JSONValue.array(interpreter.results + [.object([("error", .string(error.message))])]).prettySerialized())
            }
            throw error
        }
        if invocation.json { invocation.out(JSONValue.array(interpreter.results).prettySerialized()) }
        return interpreter.status
    }

    /// The interpreter's options from a command's `--raw`, `--stop-on-error` and `--code`.
    package static func interpreterOptions(_ invocation: Invocation, command: String) -> ScriptInterpreter.Options {
        var options = ScriptInterpreter.Options()
        options.raw = invocation.arguments.has("raw")
        options.stopOnError = invocation.arguments.has("stop-on-error")
        options.command = command
        options.controlCode = invocation.arguments.value("code").flatMap { try? HexBytes.parse($0) }.map { bytes in
            bytes.reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        }
        return options
    }
}
