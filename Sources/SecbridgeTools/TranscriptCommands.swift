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
            Nothing is written when the log cannot be read: the error names its line.

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
        let transcript: Transcript
        do {
            transcript = try SpyLogImporter.importLog(contentsOfFile: log, options: options)
        } catch {
            throw CLIError.failure("\(error)")
        }
        try save(transcript, to: output)
        report(invocation, transcript, input: log, output: output)
        return exitSuccess
    }

    /// Prints what was written: a sentence, or a JSON object with --json.
    static func report(_ invocation: Invocation, _ transcript: Transcript, input: String, output: String, extra: [(String, JSONValue)] = []) {
        let stats = TranscriptStatistics(transcript)
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
        let transcript = try load(path)
        let shown = TranscriptPresenter.lines(of: transcript)
        if let html = invocation.arguments.value("html") {
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
        if invocation.json {
            invocation.out(JSONValue.array(shown.map(\.json)).prettySerialized())
            return exitSuccess
        }
        for field in transcript.header.fields { invocation.out("# \(field.key): \(field.value)") }
        for line in shown {
            invocation.out(line.text)
            for detail in line.details { invocation.out("        " + detail) }
        }
        return exitSuccess
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
        let left = try load(paths[0]), right = try load(paths[1])
        let options = TranscriptDiffOptions(compareTiming: invocation.arguments.has("timing"), compareNotes: invocation.arguments.has("notes"))
        let differences = TranscriptDiff.compare(left, right, options: options)
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
            for d in differences { invocation.out(d.description) }
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
            and the MIFARE key of PN532 InDataExchange authentication. OUT may be FILE itself with
            --force; it is replaced atomically.

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
        let transcript = try load(path)
        let redacted = Redactor.default.redact(transcript)
        var changed = 0
        for (a, b) in zip(transcript.lines, redacted.lines) where a != b { changed += 1 }
        try save(redacted, to: output)
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
        let s = TranscriptStatistics(try load(path))
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
                ("timedExchanges", .int(s.exchangeTimes.count)),
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
            invocation.out("exchange time (\(s.exchangeTimes.count) timed): min \(formatDuration(r.lowerBound)), median \(formatDuration(median)), max \(formatDuration(r.upperBound)), total \(formatDuration(s.exchangeTimeTotal))")
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

    /// Writes `bytes` to a temporary file beside `path`, then renames it over `path`.
    static func writeAtomically(_ bytes: [UInt8], to path: String) throws(CLIError) {
        let temporary = path + ".tmp-\(getpid())"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw .failure("cannot create \(temporary): \(String(cString: strerror(errno)))") }
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + done, $0.count - done) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 {
                let reason = String(cString: strerror(errno))
                close(fd)
                unlink(temporary)
                throw .failure("cannot write \(path): \(reason); nothing was written")
            }
            done += n
        }
        if fsync(fd) != 0 || close(fd) != 0 || rename(temporary, path) != 0 {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            throw .failure("cannot write \(path): \(reason); nothing was written")
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

enum HexFormat {
    static func word(_ w: UInt16) -> String { [UInt8(w >> 8), UInt8(w & 0xFF)].hexString.replacingSpaces() }
    static func spacedWord(_ w: UInt16) -> String { [UInt8(w >> 8), UInt8(w & 0xFF)].hexString }
}

// MARK: - Pretty printing

/// The meaning of each transcript line, for `transcript show` (text, JSON and HTML).
enum TranscriptPresenter {
    struct Shown {
        var line: Int
        var record: TranscriptRecord?
        var comment: String?
        /// The line as written, without its note.
        var text: String
        /// What it means: the instruction, status word, ACR122U/PN532 command, NDEF records.
        var details: [String]
        /// Which lanes the line goes between in the timeline (terminal, reader, host, secure element).
        var from: Lane
        var to: Lane

        var json: JSONValue {
            var members: [(String, JSONValue)] = [("line", .int(line))]
            if let r = record {
                members.append(("offset", r.offset.map { .string($0.description) } ?? .null))
                members.append(("channel", r.channel.map { .string($0) } ?? .null))
                members.append(("kind", .string(TranscriptPresenter.kindName(r.entry))))
                switch r.entry {
                case .transmit(let d, let b), .target(let d, let b), .initiator(let d, let b), .control(_, let d, let b):
                    members.append(("direction", .string(d.rawValue)))
                    members.append(("hex", .string(b.description.replacingSpaces())))
                    if case .control(let code, _, _) = r.entry { members.append(("controlCode", .string(HexFormat.code(code)))) }
                default:
                    members.append(("text", .string(text)))
                }
                members.append(("note", r.note.map { .string($0) } ?? .null))
            } else {
                members.append(("kind", .string("comment")))
                members.append(("text", .string(comment ?? "")))
            }
            members.append(("meaning", .array(details.map { .string($0) })))
            return .object(members)
        }
    }

    enum Lane: Int { case terminal = 0, reader = 1, host = 2, secureElement = 3, none = -1 }

    static func kindName(_ e: TranscriptEntry) -> String {
        switch e {
        case .transmit: "transmit"
        case .control: "control"
        case .failure: "failure"
        case .target: "target"
        case .initiator: "initiator"
        case .event: "event"
        case .reader: "reader"
        }
    }

    static func lines(of transcript: Transcript) -> [Shown] {
        var out: [Shown] = []
        var lastCommand: [String: [UInt8]] = [:]
        for (index, line) in transcript.lines.enumerated() {
            let number = transcript.lineNumber(ofBodyIndex: index)
            switch line {
            case .blank: continue
            case .comment(let text):
                out.append(Shown(line: number, comment: text, text: "; " + text, details: [], from: .none, to: .none))
            case .record(let r):
                var bare = r
                bare.note = nil
                var details: [String] = []
                if let note = r.note { details.append("note: \(note)") }
                let key = r.channel ?? ""
                var from = Lane.host, to = Lane.secureElement
                switch r.entry {
                case .transmit(.outgoing, let b):
                    if let bytes = b.bytes ?? concretePrefix(b) {
                        lastCommand[key] = bytes
                        details += describeCommand(bytes)
                        if bytes.first == 0xFF { to = .reader }
                    }
                case .transmit(.incoming, let b):
                    from = (lastCommand[key]?.first == 0xFF) ? .reader : .secureElement
                    to = .host
                    details += describeAnswer(b, to: lastCommand[key])
                case .control(_, .outgoing, let b):
                    to = .reader
                    if let bytes = b.bytes ?? concretePrefix(b) {
                        lastCommand[key] = bytes
                        details += describeCommand(bytes)
                    }
                case .control(_, .incoming, let b):
                    from = .reader; to = .host
                    details += describeAnswer(b, to: lastCommand[key])
                case .failure(let f):
                    from = .reader; to = .host
                    details.append("failed: \(f.name)\(f.message.map { " (\($0))" } ?? "")")
                case .target(let d, let b):
                    if d == .incoming {
                        from = .terminal; to = .host
                        if let bytes = b.bytes { details += describeAPDU(bytes) }
                    } else {
                        from = .host; to = .terminal
                        details += describeStatusWord(b)
                    }
                case .initiator(let d, let b):
                    if d == .outgoing {
                        if let bytes = b.bytes { details += describeAPDU(bytes) }
                    } else {
                        from = .secureElement; to = .host
                        details += describeStatusWord(b)
                    }
                case .event, .reader:
                    from = .none; to = .none
                }
                out.append(Shown(line: number, record: r, text: bare.serialized(), details: details, from: from, to: to))
            }
        }
        return out
    }

    /// The concrete bytes before the first `??` or redaction mark (enough for a header).
    static func concretePrefix(_ b: TranscriptBytes) -> [UInt8]? {
        var out: [UInt8] = []
        for item in b.items {
            guard case .byte(let v) = item else { break }
            out.append(v)
        }
        return out.count >= 4 ? out : nil
    }

    /// Instruction names of ISO/IEC 7816-4 §11 (and GlobalPlatform where noted).
    static let instructions: [UInt8: String] = [
        0x0E: "ERASE BINARY", 0x20: "VERIFY", 0x21: "VERIFY", 0x22: "MANAGE SECURITY ENVIRONMENT", 0x24: "CHANGE REFERENCE DATA",
        0x2A: "PERFORM SECURITY OPERATION", 0x2C: "RESET RETRY COUNTER", 0x44: "ACTIVATE FILE", 0x46: "GENERATE ASYMMETRIC KEY PAIR",
        0x70: "MANAGE CHANNEL", 0x82: "EXTERNAL AUTHENTICATE", 0x84: "GET CHALLENGE", 0x86: "GENERAL AUTHENTICATE",
        0x87: "GENERAL AUTHENTICATE", 0x88: "INTERNAL AUTHENTICATE", 0xA4: "SELECT", 0xB0: "READ BINARY", 0xB1: "READ BINARY",
        0xB2: "READ RECORD", 0xB3: "READ RECORD", 0xC0: "GET RESPONSE", 0xC2: "ENVELOPE", 0xCA: "GET DATA", 0xCB: "GET DATA",
        0xD0: "WRITE BINARY", 0xD6: "UPDATE BINARY", 0xD8: "PUT KEY (GlobalPlatform)", 0xDA: "PUT DATA", 0xDB: "PUT DATA",
        0xDC: "UPDATE RECORD", 0xE2: "APPEND RECORD", 0xE4: "DELETE", 0xE6: "INSTALL (GlobalPlatform)", 0xE8: "LOAD (GlobalPlatform)",
        0xF2: "GET STATUS (GlobalPlatform)", 0x50: "INITIALIZE UPDATE (GlobalPlatform)",
    ]

    /// A command on a channel: an ACR122U pseudo-APDU (CLA FF) or a card APDU.
    static func describeCommand(_ c: [UInt8]) -> [String] {
        guard c.count >= 4 else { return [] }
        if c[0] == 0xFF { return describeACR122(c) }
        return describeAPDU(c)
    }

    static func describeAPDU(_ c: [UInt8]) -> [String] {
        guard c.count >= 4 else { return [] }
        var name = instructions[c[1]] ?? "INS \([c[1]].hexString)"
        if c[1] == 0xA4 {
            switch c[2] {
            case 0x04: name += " by DF name (AID)"
            case 0x00: name += " by file identifier"
            case 0x02: name += " EF under the current DF"
            case 0x08: name += " by path from the MF"
            default: break
            }
        }
        var out = [name]
        if let apdu = try? CommandAPDU(parsing: c) {
            out[0] += " (case \(apdu.case.rawValue), Nc \(apdu.nc), Ne \(apdu.ne))"
            if c[1] == 0xA4 && c[2] == 0x04, !apdu.data.isEmpty { out.append("AID \(apdu.data.hexString)\(aidName(apdu.data).map { ": \($0)" } ?? "")") }
            if (c[1] == 0xB0 || c[1] == 0xD6) && c[0] & 0x80 == 0 { out.append("offset \(Int(c[2] & 0x7F) << 8 | Int(c[3]))") }
        }
        return out
    }

    static func aidName(_ aid: [UInt8]) -> String? {
        switch aid {
        case [0xD2, 0x76, 0x00, 0x00, 0x85, 0x01, 0x01]: "NFC Forum Type 4 Tag application v2"
        case [0xD2, 0x76, 0x00, 0x00, 0x85, 0x01, 0x00]: "NFC Forum Type 4 Tag application v1"
        case [0xD2, 0x76, 0x00, 0x01, 0x24, 0x01]: "OpenPGP"
        case [0xA0, 0x00, 0x00, 0x03, 0x08, 0x00, 0x00, 0x10, 0x00, 0x01, 0x00]: "PIV"
        default: nil
        }
    }

    /// ACR122U pseudo-APDUs (ACR122U API v2.04 §4–§6) and the PN532 frame of Direct Transmit.
    static func describeACR122(_ c: [UInt8]) -> [String] {
        switch (c[1], c[2]) {
        case (0x00, 0x48): return ["ACR122U: get firmware version"]
        case (0x00, 0x40): return ["ACR122U: LED and buzzer control"]
        case (0x00, 0x51): return ["ACR122U: set PICC operating parameter"]
        case (0x00, 0x50): return ["ACR122U: get PICC operating parameter"]
        case (0xCA, _): return ["ACR122U: get data (\(c[2] == 0 ? "UID" : "ATS"))"]
        case (0x82, _): return ["ACR122U: load authentication key"]
        case (0x86, _): return ["ACR122U: authenticate (MIFARE Classic)"]
        case (0xB0, _): return ["ACR122U: read binary block \(c[3])"]
        case (0xD6, _): return ["ACR122U: update binary block \(c[3])"]
        case (0x00, 0x00) where c.count > 6 && c[5] == 0xD4:
            return ["ACR122U direct transmit: PN532 " + describePN532Command(Array(c[6...]))]
        default: return ["ACR122U pseudo-APDU"]
        }
    }

    /// `cmd params` after D4 (PN532 UM0701-02 §7).
    static func describePN532Command(_ frame: [UInt8]) -> String {
        guard let code = frame.first else { return "frame" }
        let name = PN532CommandCode(rawValue: code).name
        switch code {
        case 0x40 where frame.count > 2:
            let inner = Array(frame[2...])
            let apdu = describeAPDU(inner).first.map { ": \($0)" } ?? ""
            return "\(name) target \(frame[1])\(apdu)"
        case 0x8E where frame.count >= 3:
            return "\(name): R-APDU ending \(frame.suffix(2).hexString)"
        default:
            return name
        }
    }

    /// An answer: a PN532 response (D5), else an R-APDU with its status word.
    static func describeAnswer(_ b: TranscriptBytes, to command: [UInt8]?) -> [String] {
        guard let bytes = b.bytes else { return describeStatusWord(b) }
        if let c = command, c.count >= 3, c[0] == 0xFF, c[1] == 0x00, c[2] == 0x48 {
            // The firmware version comes as ASCII, with no status word (ACR122U API v2.04 §4.3).
            return ["firmware \"\(String(decoding: bytes.map { (0x20...0x7E).contains($0) ? $0 : UInt8(ascii: ".") }, as: UTF8.self))\""]
        }
        if let c = command, c.count > 6, c[0] == 0xFF, c[5] == 0xD4, bytes.count >= 2, bytes[0] == 0xD5 {
            var out = ["PN532 \(PN532CommandCode(rawValue: bytes[1] &- 1).name) answer"]
            let code = bytes[1] &- 1
            if (code == 0x40 || code == 0x86 || code == 0x8E) && bytes.count >= 3 {
                let status = bytes[2] & 0x3F
                out[0] += status == 0 ? ", status 00 (success)" : ", status \([bytes[2]].hexString)\(status == 0x29 ? " (released by the initiator)" : " (error)")"
                if code == 0x86 && status == 0 && bytes.count > 5 {
                    out.append("terminal's C-APDU: " + (describeAPDU(Array(bytes[3..<(bytes.count - 2)])).first ?? ""))
                }
                if code == 0x40 && status == 0 && bytes.count >= 7 {
                    let inner = Array(bytes[3..<(bytes.count - 2)])
                    out += describeStatusWord(TranscriptBytes(inner)).map { "card: " + $0 }
                }
            }
            if bytes.count >= 2 { out += describeStatusWord(TranscriptBytes(Array(bytes.suffix(2)))).map { "reader: " + $0 } }
            return out
        }
        var out = describeStatusWord(b)
        if let c = command, c.count >= 4, c[1] == 0xB0, c[0] & 0x80 == 0, bytes.count > 2, bytes.suffix(2) == [0x90, 0x00] {
            out += describeNDEF(Array(bytes.dropLast(2)))
        }
        return out
    }

    static func describeStatusWord(_ b: TranscriptBytes) -> [String] {
        guard b.items.count >= 2, case .byte(let sw1) = b.items[b.items.count - 2], case .byte(let sw2) = b.items[b.items.count - 1] else { return [] }
        let sw = StatusWord(sw1: sw1, sw2: sw2)
        return ["SW \(sw.bytes.hexString): \(sw.meaning)"]
    }

    /// NDEF records in data read from a tag (NFC Forum NDEF 1.0 §3; T4T: NLEN then the message).
    static func describeNDEF(_ data: [UInt8]) -> [String] {
        var candidates: [[UInt8]] = [data]
        if data.count > 2 {
            let nlen = Int(data[0]) << 8 | Int(data[1])
            if nlen > 0 && nlen <= data.count - 2 { candidates.insert(Array(data[2..<(2 + nlen)]), at: 0) }
        }
        for candidate in candidates {
            guard let first = candidate.first, first & 0x80 != 0, let message = try? NDEFMessage(parsing: candidate) else { continue }
            return message.records.enumerated().map { i, r in
                var text = "NDEF record \(i + 1): TNF \(r.tnf.rawValue)"
                if !r.type.isEmpty { text += ", type \"\(String(decoding: r.type, as: UTF8.self))\"" }
                if let uri = try? r.uriValue() {
                    text += ", URI \(uri)"
                } else if r.tnf == .wellKnown && r.type == [0x54], let status = r.payload.first, r.payload.count > Int(status & 0x3F) {
                    let language = String(decoding: r.payload[1..<(1 + Int(status & 0x3F))], as: UTF8.self)
                    text += ", text [\(language)] \"\(String(decoding: r.payload[(1 + Int(status & 0x3F))...], as: UTF8.self))\""
                } else {
                    text += ", \(r.payload.count) payload bytes"
                }
                return text
            }
        }
        return []
    }

    // MARK: HTML

    static func escape(_ s: String) -> String {
        var out = ""
        for c in s {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            default: out.append(c)
            }
        }
        return out
    }

    /// A self-contained page (inline CSS, no script): four lanes (terminal, reader, host, secure
    /// element) and one row per line, an arrow from the sender's lane to the receiver's.
    static func html(_ transcript: Transcript, _ shown: [Shown], title: String) -> String {
        var page = """
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8"><title>\(escape(title))</title>
            <style>
            body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}
            table.h td{padding:0 1em 0 0;font-size:90%}
            .lanes,.row{display:grid;grid-template-columns:7em repeat(4,1fr);align-items:start}
            .lanes{position:sticky;top:0;background:#fff;border-bottom:2px solid #999;font-weight:bold;text-align:center;padding:.3em 0}
            .row{border-bottom:1px solid #eee;padding:.25em 0}
            .t{font-family:monospace;color:#666;font-size:85%}
            .msg{font-family:monospace;font-size:85%;padding:.2em .4em;border-radius:4px;overflow-wrap:anywhere}
            .right{background:#e8f0fe;border-right:4px solid #1a73e8}
            .left{background:#e6f4ea;border-left:4px solid #188038}
            .event{background:#fef7e0;grid-column:2 / span 4;text-align:center}
            .comment{color:#777;grid-column:2 / span 4;font-style:italic}
            .fail{background:#fce8e6;border-left:4px solid #d93025}
            .d{font-family:system-ui,sans-serif;color:#444;font-size:90%}
            </style></head><body>
            <h1>\(escape(title))</h1>
            <table class="h">
            """
        for field in transcript.header.fields {
            page += "<tr><td>\(escape(field.key))</td><td>\(escape(field.value))</td></tr>\n"
        }
        page += "</table>\n<div class=\"lanes\"><div>time</div><div>terminal</div><div>reader</div><div>host</div><div>secure element</div></div>\n"
        for s in shown {
            let time = s.record?.offset?.description ?? ""
            let channel = s.record?.channel.map { "@" + $0 + " " } ?? ""
            page += "<div class=\"row\" id=\"l\(s.line)\"><div class=\"t\">\(escape(time))<br>line \(s.line)</div>"
            let details = s.details.map { "<div class=\"d\">\(escape($0))</div>" }.joined()
            if s.record == nil {
                page += "<div class=\"comment\">\(escape(s.text))</div>"
            } else if s.from == .none {
                page += "<div class=\"msg event\">\(escape(channel + s.text))\(details)</div>"
            } else {
                let lo = min(s.from.rawValue, s.to.rawValue), hi = max(s.from.rawValue, s.to.rawValue)
                var cls = s.from.rawValue < s.to.rawValue ? "right" : "left"
                if case .failure? = s.record?.entry { cls = "fail" }
                let arrow = s.from.rawValue < s.to.rawValue ? " →" : "← "
                page += "<div class=\"msg \(cls)\" style=\"grid-column:\(lo + 2) / \(hi + 3)\">\(arrow == "← " ? arrow : "")\(escape(channel + s.text))\(arrow == " →" ? arrow : "")\(details)</div>"
            }
            page += "</div>\n"
        }
        page += "</body></html>\n"
        return page
    }
}

extension HexFormat {
    static func code(_ v: UInt32) -> String {
        "0x" + [UInt8(v >> 24), UInt8((v >> 16) & 0xFF), UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)].hexString.replacingSpaces()
    }
}
