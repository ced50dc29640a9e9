// These commands link Foundation (through the session engine and the pcscd sandbox, PCSCSandbox), so
// they live in the `secbridge-tools` binary; `secbridge` hands them over (see SecbridgeCLI/Root.swift).
import SecbridgeCLI
import ISO7816
import PN53x
import NFCTags
import Transcript

#if canImport(Glibc)
import Glibc
#endif

extension SecbridgeCLI {
    static let transcriptCommand = Command(
        name: "transcript",
        abstract: SecbridgeCLI.toolAbstract("transcript"),
        discussion: """
            Example:
              secbridge transcript import-spy spy.log -o session.trn
              secbridge transcript show session.trn
              secbridge transcript diff before.trn after.trn
            """,
        subcommands: [importSpyCommand, showCommand, diffCommand, redactCommand, statsCommand]
    )

    // MARK: import-spy

    static let importSpyCommand = Command(
        name: "import-spy",
        abstract: "Convert the output of pcsc-spy into a transcript.",
        usage: "[--no-redact] [--force] [--json] LOG -o FILE",
        discussion: """
            LOG is what the pcsc-spy viewer printed (pcsc-lite's spy: LD_PRELOAD=libpcscspy.so.0, read by
            `pcsc-spy`), in the older (pcsc-lite ≤ 2.1) or newer (2.2) result-line form, with or
            without -t (thread tags), -d (diffable) or colour codes. SCardTransmit and SCardControl
            become exchanges, SCardConnect/SCardStatus give the ATR and protocol, SCardGetStatusChange
            gives card events. Several card handles get one channel id each (@h1, @h2, …).

            Secrets (VERIFY PINs, keys: Fixtures/README.md, "Bytes") are redacted unless --no-redact.
            Nothing is written when the log cannot be read, is empty or ends inside a call (cut
            short): the error names its line.

            Example:
              secbridge transcript import-spy spy.log -o Fixtures/imported/nfc-list.trn
            """,
        options: [
            .value("output", short: "o", "FILE", "The transcript to write (atomically)."),
            .flag("no-redact", "Keep secrets (PINs, keys) as logged. Only for test cards."),
            .flag("force", "Replace FILE when it exists."),
            .flag("json", "Print a JSON object {file, output, exchanges, events, channels}."),
        ],
        run: runImportSpy
    )

    @Sendable static func runImportSpy(_ invocation: Invocation) throws -> Int32 {
        let log = try onePath(invocation, "give the pcsc-spy log to import")
        let output = try outputPath(invocation)
        var options = SpyImportOptions(redactor: invocation.arguments.has("no-redact") ? .disabled : .default,
                                       tool: "secbridge \(version) import-spy")
        options.date = fileModificationDate(log)
        // A log given by hand that ends inside a call was cut short: refused, not imported in part.
        options.keepsUnfinishedCalls = false
        // Read twice line by line and written as it goes: memory does not grow with the log.
        let stats: TranscriptStatistics
        do {
            stats = try SpyLogImporter.importLog(contentsOfFile: log, writingTo: output, options: options)
        } catch {
            throw CLIError.failure("\(error)")
        }
        report(invocation, stats, input: log, output: output)
        return exitSuccess
    }

    /// Prints what was written: a sentence, or a JSON object with --json.
    static func report(_ invocation: Invocation, _ transcript: Transcript, input: String, output: String, extra: [(String, JSONValue)] = []) {
        report(invocation, TranscriptStatistics(transcript), input: input, output: output, extra: extra)
    }

    /// Prints what was written, from the counts of the written transcript.
    static func report(_ invocation: Invocation, _ stats: TranscriptStatistics, input: String, output: String, extra: [(String, JSONValue)] = []) {
        let exchanges = stats.transmitCommands + stats.controlCommands
        let events = stats.events.reduce(0) { $0 + $1.count }
        if invocation.json {
            invocation.out(JSONValue.object([
                ("file", .string(input)), ("output", .string(output)), ("exchanges", .int(exchanges)),
                ("events", .int(events)), ("channels", .int(stats.channels.filter { !$0.isEmpty }.count)),
                ("redacted", .int(stats.redactedCommands)),
            ] + extra).prettySerialized())
        } else {
            invocation.out("wrote \(output): \(exchanges) exchange\(exchanges == 1 ? "" : "s"), \(events) event\(events == 1 ? "" : "s")"
                + (stats.redactedCommands > 0 ? ", \(stats.redactedCommands) command(s) redacted" : ""))
        }
    }

    // MARK: show

    static let showCommand = Command(
        name: "show",
        abstract: "Print a transcript with status-word meanings, decoded ACR122/PN532 frames and NDEF records.",
        usage: "[--json] [--html OUT] FILE",
        discussion: """
            Each line gets its meaning: the APDU's instruction, the status word (ISO/IEC 7816-4), the
            ACR122U pseudo-APDU or PN532 command it carries (PN532 UM0701-02), and NDEF records read
            from a tag. --html writes a self-contained page: a timeline of the exchange between
            terminal, reader, host and secure element.

            Example:
              secbridge transcript show Fixtures/vicc/select-read.trn
              secbridge transcript show --html session.html session.trn
            """,
        options: [
            .flag("json", "Print a JSON array of lines {line, offset, channel, kind, direction, hex, meaning}."),
            .value("html", "OUT", "Write a self-contained HTML timeline to OUT (atomically) instead."),
            .flag("force", "With --html: replace OUT when it exists."),
        ],
        run: runShow
    )

    @Sendable static func runShow(_ invocation: Invocation) throws -> Int32 {
        let path = try onePath(invocation, "give the transcript to show")
        // Text and JSON stream: one line read, shown and forgotten at a time. All output goes
        // through one buffer (64 KiB writes), flushed at the end and after each line on a terminal.
        let output = LineOutput(invocation)
        defer { output.buffer.flush() }
        let invocation = output.invocation
        if let html = invocation.arguments.value("html") {
            // The timeline page is one document: it is built in memory.
            let transcript = try load(path)
            let shown = TranscriptPresenter.lines(of: transcript)
            if !invocation.arguments.has("force") && fileExists(html) {
                throw CLIError.failure("'\(html)' exists: choose another name, or give --force to replace it")
            }
            do {
                try writeAtomically(Array(TranscriptPresenter.html(transcript, shown, title: path).utf8), to: html)
            } catch {
                throw CLIError.failure("cannot write '\(html)': \(error)")
            }
            invocation.out("wrote \(html): \(shown.count) line\(shown.count == 1 ? "" : "s")")
            return exitSuccess
        }
        let reader = try openReader(path)
        var presenter = TranscriptPresenter.Reader()
        if invocation.json {
            var count = 0
            try forEachLine(reader) { number, line in
                guard let shown = presenter.show(line, number: number) else { return }
                // The element as JSONValue.array's pretty form puts it: indented one level.
                let element = shown.json.prettySerialized().replacing("\n", with: "\n  ")
                invocation.console.out((count == 0 ? "[\n  " : ",\n  ") + element)
                count += 1
                output.lineDone()
            }
            invocation.out(count == 0 ? "[]" : "\n]")
            return exitSuccess
        }
        for field in reader.header.fields { invocation.out("# \(field.key): \(field.value)") }
        try forEachLine(reader) { number, line in
            guard let shown = presenter.show(line, number: number) else { return }
            invocation.out(shown.text)
            for detail in shown.details { invocation.out("        " + detail) }
            output.lineDone()
        }
        return exitSuccess
    }

    /// Standard output gathered by a ``BufferedConsole`` (written 64 KiB at a time, before anything
    /// goes to standard error, and when ``buffer`` is flushed), and after every line when standard
    /// output is a terminal, so a person watching sees each line as it is made.
    struct LineOutput {
        let buffer: BufferedConsole
        let invocation: Invocation
        let interactive: Bool

        init(_ invocation: Invocation) {
            buffer = BufferedConsole(invocation.console)
            self.invocation = invocation.with(console: buffer)
            interactive = invocation.console is StandardConsole && isatty(STDOUT_FILENO) == 1
        }

        /// Ends one shown line: written at once on a terminal.
        func lineDone() { if interactive { buffer.flush() } }
    }

    // MARK: diff

    static let diffCommand = Command(
        name: "diff",
        abstract: "Compare two transcripts structurally (records, not text).",
        usage: "[--timing] [--notes] [--json] LEFT RIGHT",
        discussion: """
            Header fields are compared by key (date and tool left out), records in order: comments,
            blank lines, offsets and notes do not count unless --timing / --notes. A changed payload
            names the first differing byte. Exit status 0 when equal, 1 when they differ.

            Example:
              secbridge transcript diff recorded.trn replayed.trn
            """,
        options: [
            .flag("timing", "Compare time offsets too."),
            .flag("notes", "Compare trailing '; notes' too."),
            .flag("json", "Print a JSON object {left, right, equal, differences}."),
        ],
        run: runDiff
    )

    @Sendable static func runDiff(_ invocation: Invocation) throws -> Int32 {
        let paths = invocation.arguments.positional
        guard paths.count == 2 else {
            throw CLIError.usage(paths.count < 2 ? "give two transcripts to compare" : "diff takes two transcripts, got \(paths.count) arguments")
        }
        let options = TranscriptDiffOptions(compareTiming: invocation.arguments.has("timing"), compareNotes: invocation.arguments.has("notes"))
        let differences: [TranscriptDifference]
        do {
            differences = try TranscriptDiff.compare(contentsOfFile: paths[0], paths[1], options: options)
        } catch {
            throw CLIError.failure("\(error)")
        }
        let output = LineOutput(invocation)
        defer { output.buffer.flush() }
        let invocation = output.invocation
        if invocation.json {
            invocation.out(JSONValue.object([
                ("left", .string(paths[0])), ("right", .string(paths[1])), ("equal", .bool(differences.isEmpty)),
                ("differences", .array(differences.map { d in
                    JSONValue.object([
                        ("kind", .string(d.kind.rawValue)),
                        ("leftLine", d.leftLine.map { .int($0) } ?? .null), ("rightLine", d.rightLine.map { .int($0) } ?? .null),
                        ("left", d.left.map { .string($0) } ?? .null), ("right", d.right.map { .string($0) } ?? .null),
                        ("firstDifferentByte", d.firstDifferentByte.map { .int($0) } ?? .null),
                    ])
                })),
            ]).prettySerialized())
        } else if differences.isEmpty {
            invocation.out("\(paths[0]) and \(paths[1]) record the same exchanges")
        } else {
            invocation.out("--- \(paths[0])")
            invocation.out("+++ \(paths[1])")
            for d in differences {
                invocation.out(d.description)
                output.lineDone()
            }
        }
        return differences.isEmpty ? exitSuccess : exitFailure
    }

    // MARK: redact

    static let redactCommand = Command(
        name: "redact",
        abstract: "Mask secrets (PINs, keys) in a transcript's commands, keeping their length.",
        usage: "[--force] [--json] FILE -o OUT",
        discussion: """
            Applies the default policy (Fixtures/README.md, "Bytes"): VERIFY, CHANGE REFERENCE DATA,
            RESET RETRY COUNTER, PUT KEY, EXTERNAL/MUTUAL AUTHENTICATE data, the ACR122U LOAD KEY key
            and the MIFARE key of PN532 InDataExchange authentication, MIFARE sector trailer keys,
            and the same card-command rules on C-APDUs inside PN532 frames (InDataExchange,
            InCommunicateThru, TgGetData answers). Header lines holding a command line (capture's
            source) get a PIN or key argument masked. The rules: docs/secrets.md. OUT may be FILE
            itself with --force; it is replaced atomically.

            Example:
              secbridge transcript redact raw.trn -o shared.trn
            """,
        options: [
            .value("output", short: "o", "OUT", "The redacted transcript to write."),
            .flag("force", "Replace OUT when it exists."),
            .flag("json", "Print a JSON object {file, output, redacted}."),
        ],
        run: runRedact
    )

    @Sendable static func runRedact(_ invocation: Invocation) throws -> Int32 {
        let path = try onePath(invocation, "give the transcript to redact")
        let output = try outputPath(invocation)
        let reader = try openReader(path)
        var redactor = Redactor.default.stream()
        // The header's command lines too (capture's `source` may hold a PIN): each changed field counts as a line.
        let header = Redactor.default.redact(reader.header)
        var changed = zip(header.fields, reader.header.fields).filter { $0.0 != $0.1 }.count
        let file: TranscriptFileReplacement
        do { file = try TranscriptFileReplacement(replacing: output, header: header) } catch { throw CLIError.failure(error.reason) }
        try forEachLine(reader) { _, line throws(CLIError) in
            let redacted = redactor.redact(line)
            if redacted != line { changed += 1 }
            do throws(TranscriptWriteError) { try file.append(redacted) } catch { throw .failure(error.reason) }
        }
        do throws(TranscriptWriteError) { try file.commit() } catch { throw CLIError.failure(error.reason) }
        if invocation.json {
            invocation.out(JSONValue.object([("file", .string(path)), ("output", .string(output)), ("redacted", .int(changed))]).prettySerialized())
        } else {
            invocation.out("wrote \(output): \(changed) line\(changed == 1 ? "" : "s") redacted")
        }
        return exitSuccess
    }

    // MARK: stats

    static let statsCommand = Command(
        name: "stats",
        abstract: "Count a transcript's exchanges, failures, events and status words, and time them.",
        usage: "[--json] FILE",
        discussion: """
            An exchange's time is its answer's offset minus its command's; the span is the last offset
            minus the first. Times in JSON are microseconds.

            Example:
              secbridge transcript stats Fixtures/imported/nfc-list.trn
            """,
        options: [.flag("json", "Print a JSON object of the counts and times.")],
        run: runStats
    )

    @Sendable static func runStats(_ invocation: Invocation) throws -> Int32 {
        let path = try onePath(invocation, "give the transcript to count")
        var s = TranscriptStatistics()
        try forEachLine(try openReader(path)) { _, line in s.add(line) }
        s.finish()
        func micros(_ d: Duration) -> Int {
            let (sec, atto) = d.components
            return Int(sec) * 1_000_000 + Int(atto / 1_000_000_000_000)
        }
        if invocation.json {
            invocation.out(JSONValue.object([
                ("file", .string(path)), ("records", .int(s.records)),
                ("transmit", .int(s.transmitCommands)), ("control", .int(s.controlCommands)),
                ("failures", .int(s.failures)), ("unanswered", .int(s.unanswered)),
                ("targetCommands", .int(s.targetCommands)), ("initiatorCommands", .int(s.initiatorCommands)),
                ("redactedCommands", .int(s.redactedCommands)), ("wildcardLines", .int(s.wildcardLines)),
                ("bytesSent", .int(s.bytesSent)), ("bytesReceived", .int(s.bytesReceived)),
                ("channels", .array(s.channels.map { .string($0) })),
                ("events", .object(s.events.map { ($0.kind, .int($0.count)) })),
                ("statusWords", .object(s.statusWords.map { (HexFormat.word($0.statusWord), .int($0.count)) })),
                ("spanMicroseconds", s.span.map { .int(micros($0)) } ?? .null),
                ("timedExchanges", .int(s.timedExchanges)),
                ("exchangeMicroseconds", s.exchangeTimeRange.map { r in
                    .object([("min", .int(micros(r.lowerBound))), ("median", .int(micros(s.exchangeTimeMedian!))),
                             ("max", .int(micros(r.upperBound))), ("total", .int(micros(s.exchangeTimeTotal)))])
                } ?? .null),
            ]).prettySerialized())
            return exitSuccess
        }
        invocation.out("\(path): \(s.records) records on \(s.channels.count) channel\(s.channels.count == 1 ? "" : "s")")
        invocation.out("exchanges: \(s.transmitCommands) transmit, \(s.controlCommands) control; \(s.failures) failed, \(s.unanswered) unanswered")
        if s.targetCommands + s.initiatorCommands > 0 {
            invocation.out("APDUs in PN532 frames: \(s.targetCommands) from a terminal (tgt), \(s.initiatorCommands) as initiator (ini)")
        }
        invocation.out("bytes: \(s.bytesSent) sent, \(s.bytesReceived) received; \(s.redactedCommands) command(s) redacted, \(s.wildcardLines) line(s) with ??")
        if !s.events.isEmpty {
            invocation.out("events: " + s.events.map { "\($0.kind) \($0.count)" }.joined(separator: ", "))
        }
        for sw in s.statusWords {
            invocation.out("SW \(HexFormat.spacedWord(sw.statusWord)) ×\(sw.count): \(StatusWord(sw.statusWord).meaning)")
        }
        if let span = s.span { invocation.out("span: \(formatDuration(span))") }
        if let r = s.exchangeTimeRange, let median = s.exchangeTimeMedian {
            invocation.out("exchange time (\(s.timedExchanges) timed): min \(formatDuration(r.lowerBound)), median \(formatDuration(median)), max \(formatDuration(r.upperBound)), total \(formatDuration(s.exchangeTimeTotal))")
        }
        return exitSuccess
    }

    // MARK: helpers

    static func onePath(_ invocation: Invocation, _ missing: String) throws(CLIError) -> String {
        let positional = invocation.arguments.positional
        guard positional.count == 1 else {
            throw .usage(positional.isEmpty ? missing : "expected one file, got \(positional.count) arguments: \(positional.joined(separator: " "))")
        }
        return positional[0]
    }

    static func outputPath(_ invocation: Invocation) throws(CLIError) -> String {
        guard let output = invocation.arguments.value("output"), !output.isEmpty else {
            throw .usage("give the file to write with -o FILE")
        }
        if !invocation.arguments.has("force") && fileExists(output) {
            throw .failure("'\(output)' exists: choose another name, or give --force to replace it")
        }
        return output
    }

    static func load(_ path: String) throws(CLIError) -> Transcript {
        do {
            return try Transcript(contentsOfFile: path)
        } catch {
            throw .failure("\(error)")
        }
    }

    /// Opens a transcript to read line by line (its header read): memory stays the same whatever
    /// the file's size.
    static func openReader(_ path: String) throws(CLIError) -> TranscriptFileReader {
        do {
            return try TranscriptFileReader(contentsOfFile: path)
        } catch {
            throw .failure("\(error)")
        }
    }

    /// Calls `body` with each body line (handed over, not copied) and its 1-based number; a parse
    /// error stops with the line it names.
    static func forEachLine(_ reader: TranscriptFileReader, _ body: (Int, consuming TranscriptLine) throws(CLIError) -> Void) throws(CLIError) {
        var stopped: CLIError?
        do {
            try reader.forEachLine { number, line in
                do throws(CLIError) {
                    try body(number, line)
                    return true
                } catch {
                    stopped = error
                    return false
                }
            }
        } catch {
            throw .failure("\(error)")
        }
        if let stopped { throw stopped }
    }

    static func save(_ transcript: Transcript, to path: String) throws(CLIError) {
        do {
            try transcript.write(toFile: path)
        } catch {
            throw .failure("\(error.reason)")
        }
    }

    static func fileExists(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0
    }

    /// The file's modification time as ISO 8601 UTC, or nil.
    static func fileModificationDate(_ path: String) -> String? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        var seconds = info.st_mtim.tv_sec
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))Z"
    }

    /// Writes `bytes` to a temporary file beside `path`, flushes it, then renames it over `path`
    /// (Transcript's one atomic writer); on failure `path` is unchanged.
    static func writeAtomically(_ bytes: [UInt8], to path: String) throws(CLIError) {
        do {
            try FileIO.atomicWrite(bytes, to: path)
        } catch {
            throw .failure(error.reason)
        }
    }

    static func formatDuration(_ d: Duration) -> String {
        let (sec, atto) = d.components
        let micros = Int(sec) * 1_000_000 + Int(atto / 1_000_000_000_000)
        if micros >= 1_000_000 { return "\(micros / 1_000_000).\(pad(micros % 1_000_000 / 1000, 3)) s" }
        if micros >= 1000 { return "\(micros / 1000).\(pad(micros % 1000, 3)) ms" }
        return "\(micros) µs"
    }

    static func pad(_ n: Int, _ width: Int) -> String {
        let s = String(n)
        return String(repeating: "0", count: max(0, width - s.count)) + s
    }
}
