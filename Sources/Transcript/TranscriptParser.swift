import ISO7816
import PCSCCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Why a transcript text could not be read: the file, the 1-based line and column (in bytes) of
/// the offending text, and a reason that says what to write instead.
///
/// Equatable by ``code`` (house style); compare ``line`` and ``column`` separately when they matter.
public struct TranscriptParseError: CodedError {
    /// What kind of fault. An open set: compare with the static members.
    public struct Code: ErrorCode {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        /// Line 1 is not `# secbridge-transcript: 1` (or the file is empty).
        public static let notATranscript = Self(rawValue: "not-a-transcript")
        /// The version line names a format this module does not read.
        public static let unsupportedVersion = Self(rawValue: "unsupported-version")
        /// The last line has no LF: the file was cut short.
        public static let truncated = Self(rawValue: "truncated")
        /// Not UTF-8, a control character or a carriage return.
        public static let invalidCharacter = Self(rawValue: "invalid-character")
        /// A space or tab at the end of a line, or two spaces where one belongs.
        public static let badSpacing = Self(rawValue: "bad-spacing")
        /// A `#` line that is not `# key: value`, a duplicate key, or an invalid known value.
        public static let badHeader = Self(rawValue: "bad-header")
        /// A `#` line after the first body line.
        public static let misplacedHeader = Self(rawValue: "misplaced-header")
        /// A malformed `+12.345ms` offset.
        public static let badOffset = Self(rawValue: "bad-offset")
        /// A malformed `@id`.
        public static let badChannel = Self(rawValue: "bad-channel")
        /// A line kind other than `>`, `<`, `!`, `ctl`, `tgt`, `ini`, `event`, `reader`.
        public static let unknownLineKind = Self(rawValue: "unknown-line-kind")
        /// A byte item that is not `HH`, `??` or `[REDACTED n]`.
        public static let badHex = Self(rawValue: "bad-hex")
        /// A control code that is not `0x` and eight uppercase hex digits.
        public static let badControlCode = Self(rawValue: "bad-control-code")
        /// A malformed `!` line.
        public static let badFailure = Self(rawValue: "bad-failure")
        /// An event kind that version 1 does not define and that does not start with `x-`.
        public static let unknownEventKind = Self(rawValue: "unknown-event-kind")
        /// A malformed `key="value"` or an invalid value for a known key.
        public static let badAttribute = Self(rawValue: "bad-attribute")
        /// An empty or malformed trailing `; note`.
        public static let badNote = Self(rawValue: "bad-note")
        /// Lines out of order: an answer without a command, a command whose answer never came,
        /// a `reader` line without an id or declared twice.
        public static let badSequence = Self(rawValue: "bad-sequence")
        /// The file could not be read, or is larger than the limit.
        public static let unreadable = Self(rawValue: "unreadable")
    }

    public var code: Code
    /// The file name given to the parser.
    public var file: String
    /// 1-based line number.
    public var line: Int
    /// 1-based column, counted in bytes of the line's UTF-8 text.
    public var column: Int
    /// What is wrong and what to do.
    public var reason: String

    /// An error of `code` at `line` and `column` (both 1-based) of `file`, with a reason.
    public init(code: Code, file: String, line: Int, column: Int, reason: String) {
        self.code = code
        self.file = file
        self.line = line
        self.column = column
        self.reason = reason
    }

    /// `file:line:column: reason`, the form compilers use.
    public var description: String { "\(file):\(line):\(column): \(reason)" }
}

extension Transcript {
    /// Parses the text form (Fixtures/README.md).
    ///
    /// - Parameters:
    ///   - text: the whole file; every line, the last included, ends in LF.
    ///   - fileName: the name errors cite.
    /// - Throws: ``TranscriptParseError`` naming the first bad line; never a partial result.
    public init(parsing text: String, fileName: String = "<transcript>") throws(TranscriptParseError) {
        self = try TranscriptTextParser(fileName: fileName).parse(Array(text.utf8))
    }

    /// Reads and parses a file of any size, line by line (``TranscriptFileReader``); the result
    /// holds every line, with payloads in their compact form.
    /// - Throws: ``TranscriptParseError``: `unreadable` when the file cannot be read;
    ///   `invalidCharacter` (with its line) when it is not UTF-8; any parse error.
    public init(contentsOfFile path: String) throws(TranscriptParseError) {
        let reader = try TranscriptFileReader(contentsOfFile: path)
        var transcript = Transcript(header: reader.header, fileName: path)
        while let (_, line) = try reader.next() { transcript.lines.append(line) }
        self = transcript
    }
}

/// The line-by-line state of a parse: header, then body lines with their cross-line checks.
/// Shared by the in-memory parser and the streaming ``TranscriptFileReader``.
struct TranscriptLineParser {
    let fileName: String
    private(set) var header = TranscriptHeader()
    private var pairing = PairingCheck()
    private(set) var inHeader = true
    private var headerEnd = 0
    /// One scanner for every line, moved to each in turn: a scanner made per line would copy
    /// the file name and the payload arena (a retain and a release each) per line.
    private var scanner: TextScanner

    init(fileName: String) {
        self.fileName = fileName
        // The chunks payload bytes are decoded into.
        scanner = TextScanner(UnsafeBufferPointer(start: nil, count: 0), file: fileName, line: 0, arena: PayloadArena())
    }

    /// Parses line `number` (1-based, without its LF); nil for the version line and header lines.
    /// The bytes are read in place and not kept.
    mutating func accept(_ raw: UnsafeBufferPointer<UInt8>, number: Int) throws(TranscriptParseError) -> TranscriptLine? {
        scanner.moveTo(raw, line: number)
        if number == 1 || raw.first == UInt8(ascii: "#") {
            try scanner.checkCharacters()
            if number == 1 {
                try scanner.parseVersionLine()
                return nil
            }
            if inHeader {
                let field = try scanner.parseHeaderField()
                if header[field.key] != nil || field.key == TranscriptHeader.versionKey {
                    throw error(.badHeader, line: number, column: 3,
                                "the header key '\(field.key)' appears twice: keep one line")
                }
                header.fields.append(field)
                return nil
            }
            throw error(.misplacedHeader, line: number, column: 1,
                        "a header line after the body began (line \(headerEnd + 1)): move it to the top, or write a comment as '; text'")
        }
        // A body line. Its characters are checked first by the rules (a bad character is the
        // error named, whatever else is wrong), but the check runs after the parse, and only for
        // a line the parse did not read wholly as items whose every byte it compared (a note,
        // a comment, a quoted value or a name may hold any text): the common line is read once.
        let line: TranscriptLine
        do {
            line = try scanner.parseBodyLine()
        } catch {
            try scanner.checkCharacters()
            endHeader(at: number)
            throw error
        }
        if !scanner.readEveryByte { try scanner.checkCharacters() }
        endHeader(at: number)
        if case .record = line, let problem = pairing.accept(scanner.recordShape, channel: scanner.recordChannel, line: number) {
            throw error(.badSequence, line: number, column: 1, problem)
        }
        return line
    }

    /// Line `number`, a body line whose characters passed, ends the header if it is the first.
    private mutating func endHeader(at number: Int) {
        if inHeader {
            inHeader = false
            headerEnd = number - 1
        }
    }

    /// The end of the text: `lineCount` terminated lines, then `unterminated` bytes after the last LF.
    func finish(lineCount: Int, unterminated: ArraySlice<UInt8>) throws(TranscriptParseError) {
        if lineCount == 0 && unterminated.isEmpty {
            throw error(.notATranscript, line: 1, column: 1,
                        "the file is empty: a transcript starts with the line '# secbridge-transcript: 1'")
        }
        guard !unterminated.isEmpty else { return }
        let number = lineCount + 1
        try TextScanner.scan(unterminated, file: fileName, line: number) { (scanner) throws(TranscriptParseError) in
            try scanner.checkCharacters(trailingSpace: false)
            let versionLine = Array("# \(TranscriptHeader.versionKey): \(TranscriptHeader.formatVersion)".utf8)
            if number == 1 && !versionLine.starts(with: unterminated) { try scanner.parseVersionLine() }
        }
        throw error(.truncated, line: number, column: unterminated.count + 1,
                    "the last line does not end with a newline: the file looks cut short; complete it or remove the partial line")
    }

    private func error(_ code: TranscriptParseError.Code, line: Int, column: Int, _ reason: String) -> TranscriptParseError {
        TranscriptParseError(code: code, file: fileName, line: line, column: column, reason: reason)
    }
}

/// Parses a whole text held in memory.
struct TranscriptTextParser {
    let fileName: String

    func parse(_ text: [UInt8]) throws(TranscriptParseError) -> Transcript {
        let result = text.withUnsafeBufferPointer { whole in
            Result { () throws(TranscriptParseError) -> Transcript in
                var parser = TranscriptLineParser(fileName: fileName)
                var lines: [TranscriptLine] = []
                var start = 0
                var number = 0
                while let end = whole[start...].firstIndex(of: 0x0A) {
                    number += 1
                    if let line = try parser.accept(UnsafeBufferPointer(rebasing: whole[start..<end]), number: number) {
                        lines.append(line)
                    }
                    start = end + 1
                }
                try parser.finish(lineCount: number, unterminated: text[start...])
                return Transcript(header: parser.header, lines: lines, fileName: fileName)
            }
        }
        return try result.get()
    }
}

/// Reads a transcript file one line at a time, in memory bounded independently of the file size
/// (one read buffer of 1 MiB, growing only for a longer line, up to ``maximumLineLength``).
///
/// The header is read when the reader opens; ``next()`` hands out the body lines in order, with
/// the same checks as ``Transcript/init(parsing:fileName:)``: the first bad line throws, and the
/// lines handed out before it were valid.
public final class TranscriptFileReader {
    /// The longest line read: 16 MiB (a payload of the largest extended APDU takes under 200 KiB).
    public static let maximumLineLength = 16 << 20

    /// The path given, as errors cite it.
    public let fileName: String
    /// The header fields (complete when the initializer returns).
    public var header: TranscriptHeader { parser.header }

    private var parser: TranscriptLineParser
    private let input: FileIO.LineInput
    private var number = 0
    /// The first body line, read with the header, and its number (kept apart: an optional
    /// tuple holding a line is destroyed through generic code).
    private var pending: TranscriptLine?
    private var pendingNumber = 0

    /// Opens `path` and reads its version line and header.
    /// - Throws: ``TranscriptParseError``: `unreadable` when the file cannot be opened or read (not a
    ///   regular file, no permission); `notATranscript`, `truncated` and the other parse errors.
    public init(contentsOfFile path: String) throws(TranscriptParseError) {
        fileName = path
        parser = TranscriptLineParser(fileName: path)
        do {
            input = try FileIO.LineInput(path: path, maximumLineLength: Self.maximumLineLength)
        } catch {
            throw TranscriptParseError(code: .unreadable, file: path, line: 0, column: 0, reason: error.reason)
        }
        if let (n, line) = try readLine() {
            pending = line
            pendingNumber = n
        }
    }

    /// The next body line (blank, comment or record) and its 1-based line number; nil at the end.
    /// - Throws: ``TranscriptParseError`` for the first bad line, or `unreadable` when reading fails.
    public func next() throws(TranscriptParseError) -> (line: Int, content: TranscriptLine)? {
        if let line = pending.take() { return (pendingNumber, line) }
        return try readLine()
    }

    /// Calls `body` with each remaining body line and its 1-based line number, in order, until
    /// `body` returns false or the file ends. The line is handed over to `body` (moved, not
    /// copied: a copy of a line costs a retain and a release per reference it holds); it may
    /// keep it.
    /// - Throws: ``TranscriptParseError`` for the first bad line, or `unreadable` when reading fails;
    ///   the lines before it were handed to `body`.
    public func forEachLine(_ body: (_ line: Int, _ content: consuming TranscriptLine) -> Bool) throws(TranscriptParseError) {
        if let line = pending.take() {
            guard body(pendingNumber, line) else { return }
        }
        // The parser and the line count in locals for the loop: no exclusive access to the
        // reader's properties per line.
        var parser = self.parser
        var number = self.number
        defer {
            self.parser = parser
            self.number = number
        }
        while let raw = try nextRaw(after: number) {
            number += 1
            if let line = try parser.accept(raw, number: number) {
                guard body(number, line) else { return }
            }
        }
        try parser.finish(lineCount: number, unterminated: input.unterminated)
    }

    private func readLine() throws(TranscriptParseError) -> (Int, TranscriptLine)? {
        while let raw = try nextRaw(after: number) {
            number += 1
            if let line = try parser.accept(raw, number: number) { return (number, line) }
        }
        try parser.finish(lineCount: number, unterminated: input.unterminated)
        return nil
    }

    /// The bytes of the line after line `number`, or nil at the end of the file (the caller then
    /// checks how the text ends, ``TranscriptLineParser/finish(lineCount:unterminated:)``).
    private func nextRaw(after number: Int) throws(TranscriptParseError) -> UnsafeBufferPointer<UInt8>? {
        do {
            return try input.nextLine()
        } catch {
            throw TranscriptParseError(code: .unreadable, file: fileName, line: error.errorNumber == EFBIG ? number + 1 : 0,
                                       column: 0, reason: error.reason)
        }
    }
}

/// The cross-line rules of the channel layer, per channel id: every answer (`<`, `ctl … <`, `!`)
/// follows an unanswered command of the same kind; a command is answered before the next one on
/// the same channel; `reader` lines carry an id declared once. In the APDU layer (`tgt`, `ini`) an
/// answer needs a command before it, but a command may go unanswered (the field can drop).
struct PairingCheck {
    private enum Pending: Equatable {
        case transmit
        case control(UInt32)
    }

    /// What a record is, as far as the pairing rules care: trivial values only, so that checking
    /// a line copies nothing of its payload.
    enum Shape {
        case transmit(TranscriptDirection)
        case control(UInt32, TranscriptDirection)
        case failure
        case target(TranscriptDirection)
        case initiator(TranscriptDirection)
        case event
        case reader

        init(_ entry: TranscriptEntry) {
            switch entry {
            case .transmit(let d, _): self = .transmit(d)
            case .control(let code, let d, _): self = .control(code, d)
            case .failure: self = .failure
            case .target(let d, _): self = .target(d)
            case .initiator(let d, _): self = .initiator(d)
            case .event: self = .event
            case .reader: self = .reader
            }
        }
    }

    /// The unanswered command per channel id.
    private var pending = PerChannel<(Pending, Int)>()
    /// The line of the last unanswered `tgt <` and `ini >` per channel id.
    private var targetPending = PerChannel<Int>()
    private var initiatorPending = PerChannel<Int>()
    private var readers: [String: Int] = [:]

    /// Nil when `record` may come next, else the reason it may not.
    mutating func accept(_ record: TranscriptRecord, line: Int) -> String? {
        accept(Shape(record.entry), channel: record.channel, line: line)
    }

    /// Nil when a record of `shape` on `channel` may come next, else the reason it may not.
    mutating func accept(_ shape: Shape, channel: String?, line: Int) -> String? {
        var on: String { channel.map { " on @\($0)" } ?? "" }
        func command(_ kind: Pending) -> String? {
            if let (_, at) = pending[channel] {
                return "the command at line \(at)\(on) has no answer: write its '<' or '!' line before the next command"
            }
            pending[channel] = (kind, line)
            return nil
        }
        func answer(_ kind: Pending?) -> String? {
            guard let (waiting, at) = pending[channel] else {
                return "an answer with no command before it\(on): write the command line ('>' or 'ctl 0x… >') first"
            }
            if let kind, kind != waiting {
                let want = switch waiting {
                case .transmit: "'<'"
                case .control(let c): "'ctl \(HexText.code(c)) <'"
                }
                return "this answer does not fit the command at line \(at): that command is answered by \(want)"
            }
            pending[channel] = nil
            return nil
        }
        switch shape {
        case .transmit(.outgoing): return command(.transmit)
        case .transmit(.incoming): return answer(.transmit)
        case .control(let code, .outgoing): return command(.control(code))
        case .control(let code, .incoming): return answer(.control(code))
        case .failure: return answer(nil)
        case .target(let d):
            if d == .incoming {
                targetPending[channel] = line
                return nil
            }
            if targetPending.removeValue(for: channel) == nil {
                return "a 'tgt \(d.rawValue)' answer with no command before it\(on): write 'tgt <' (the terminal's C-APDU) first"
            }
            return nil
        case .initiator(let d):
            if d == .outgoing {
                initiatorPending[channel] = line
                return nil
            }
            if initiatorPending.removeValue(for: channel) == nil {
                return "a 'ini \(d.rawValue)' answer with no command before it\(on): write 'ini >' (the host's C-APDU) first"
            }
            return nil
        case .event: return nil
        case .reader:
            guard let id = channel else {
                return "a 'reader' line declares a channel id: write it as '@r0 reader name=\"…\"'"
            }
            if let at = readers[id] {
                return "reader @\(id) is already declared at line \(at): use another id"
            }
            readers[id] = line
            return nil
        }
    }
}

/// A value per channel id (`@r0`), with its own slot for the lines that name no channel (most
/// transcripts), so the common case hashes nothing.
struct PerChannel<Value> {
    private var named: [String: Value] = [:]
    private var unnamed: Value?

    subscript(channel: String?) -> Value? {
        get { channel.map { named[$0] } ?? unnamed }
        set {
            if let channel { named[channel] = newValue } else { unnamed = newValue }
        }
    }

    /// Stores `value` for `channel` and returns what it replaced.
    mutating func updateValue(_ value: Value, for channel: String?) -> Value? {
        defer { self[channel] = value }
        return self[channel]
    }

    /// Removes and returns `channel`'s value.
    mutating func removeValue(for channel: String?) -> Value? {
        defer { self[channel] = nil }
        return self[channel]
    }

    /// How many channels hold a value.
    var count: Int { named.count + (unnamed == nil ? 0 : 1) }

    /// Calls `body` with each value held (the channel-less one first, the others in no order).
    func forEachValue(_ body: (Value) -> Void) {
        if let unnamed { body(unnamed) }
        for value in named.values { body(value) }
    }
}

extension PerChannel: Sendable where Value: Sendable {}

/// A cursor over one line's bytes. `read*` consumes; `peek*` does not.
///
/// It reads the bytes in place (no copy of the line): make one with ``scan(_:file:line:_:)``,
/// which keeps the bytes alive for as long as the scanner is used.
struct TextScanner {
    private var text: UnsafeBufferPointer<UInt8>
    private var position = 0
    private let file: String
    private var line: Int
    /// Where payload bytes go; nil gives each payload a chunk of its own.
    private let arena: PayloadArena?
    /// ``HexText/pairTable``, read once: each read of the global checks that it was initialized.
    private let hexPairs = HexText.pairTable
    /// What the record ``parseBodyLine()`` read is, and its channel id, for the pairing check
    /// (no copy of the record needed).
    private(set) var recordShape = PairingCheck.Shape.event
    private(set) var recordChannel: String?
    /// True when ``parseBodyLine()`` compared every byte of the line it read with what its item
    /// allows (blank lines; `>`, `<`, `ctl`, `tgt` and `ini` lines without a note): all of them
    /// are then printable ASCII with no trailing space, and ``checkCharacters(trailingSpace:)``
    /// cannot fail.
    private(set) var readEveryByte = false

    /// A scanner over `text`, which must stay valid while the scanner is used; payloads go to
    /// `arena` when one is given.
    init(_ text: UnsafeBufferPointer<UInt8>, file: String, line: Int, arena: PayloadArena? = nil) {
        self.text = text
        self.file = file
        self.line = line
        self.arena = arena
    }

    /// Starts over on `text`, line `line` of the same file (which must stay valid while the
    /// scanner is used), with the same arena.
    mutating func moveTo(_ text: UnsafeBufferPointer<UInt8>, line: Int) {
        self.text = text
        self.line = line
        position = 0
        // Tested first: storing nil over nil still calls the runtime to release the old value.
        if recordChannel != nil { recordChannel = nil }
    }

    /// Runs `body` with a scanner over `bytes`, which must not escape it; payloads go to `arena`
    /// when one is given.
    static func scan<R>(
        _ bytes: ArraySlice<UInt8>, file: String, line: Int, arena: PayloadArena? = nil,
        _ body: (inout TextScanner) throws(TranscriptParseError) -> R
    ) throws(TranscriptParseError) -> R {
        let result = bytes.withUnsafeBufferPointer { buffer in
            var scanner = TextScanner(buffer, file: file, line: line, arena: arena)
            return Result { () throws(TranscriptParseError) -> R in try body(&scanner) }
        }
        return try result.get()
    }

    /// ``scan(_:file:line:_:)`` over a string's UTF-8 bytes.
    static func scan<R>(
        _ text: String, file: String, line: Int, _ body: (inout TextScanner) throws(TranscriptParseError) -> R
    ) throws(TranscriptParseError) -> R {
        try scan(ArraySlice(text.utf8), file: file, line: line, body)
    }

    // MARK: Whole-line checks

    func checkCharacters(trailingSpace: Bool = true) throws(TranscriptParseError) {
        // The common case, printable ASCII only, in one pass; anything else takes the full check.
        if Self.isPrintableASCII(text) {
            if trailingSpace, let last = text.last, last == UInt8(ascii: " ") {
                throw fail(.badSpacing, at: text.count - 1, "a space at the end of the line: remove it")
            }
            return
        }
        var parser = Unicode.UTF8.ForwardParser()
        var iterator = text.makeIterator()
        var offset = 0
        decoding: while true {
            switch parser.parseScalar(from: &iterator) {
            case .valid(let scalar): offset += scalar.count
            case .emptyInput: break decoding
            case .error:
                throw fail(.invalidCharacter, at: offset, "not UTF-8 text: save the file as UTF-8")
            }
        }
        for (i, b) in text.enumerated() {
            if b == 0x0D {
                throw fail(.invalidCharacter, at: i, "a carriage return: convert the file to LF line endings")
            }
            if b < 0x20 || b == 0x7F {
                throw fail(.invalidCharacter, at: i, "control character 0x\(Self.hex(b)): remove it (write text, hex bytes in uppercase with single spaces)")
            }
        }
        if trailingSpace, let last = text.last, last == UInt8(ascii: " ") {
            throw fail(.badSpacing, at: text.count - 1, "a space at the end of the line: remove it")
        }
    }

    /// True when every byte is in 0x20…0x7E, checked eight bytes at a time: a byte below 0x20,
    /// equal to 0x7F or with its top bit set makes the word's test non-zero (the classic
    /// "has a byte less than n" and "has a zero byte" bit tricks, both exact).
    private static func isPrintableASCII(_ text: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = text.baseAddress else { return true }
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
        var i = 0
        var flagged: UInt64 = 0
        while i + 8 <= text.count {
            let w = UnsafeRawPointer(base + i).loadUnaligned(as: UInt64.self)
            let below20 = (w &- ones &* 0x20) & ~w & highs
            let x7F = w ^ (ones &* 0x7F)
            let is7F = (x7F &- ones) & ~x7F & highs
            flagged |= below20 | is7F | (w & highs)
            i += 8
        }
        var tail: UInt8 = 0
        if i < text.count && text.count >= 8 {
            // The last eight bytes in one word, overlapping the ones already checked.
            let w = UnsafeRawPointer(base + text.count - 8).loadUnaligned(as: UInt64.self)
            let below20 = (w &- ones &* 0x20) & ~w & highs
            let x7F = w ^ (ones &* 0x7F)
            let is7F = (x7F &- ones) & ~x7F & highs
            flagged |= below20 | is7F | (w & highs)
            i = text.count
        }
        while i < text.count {
            tail |= text[i] &- 0x20 >= 0x5F ? 1 : 0
            i += 1
        }
        return flagged == 0 && tail == 0
    }

    mutating func parseVersionLine() throws(TranscriptParseError) {
        let prefix = Array("# \(TranscriptHeader.versionKey): ".utf8)
        guard text.starts(with: prefix) else {
            throw fail(.notATranscript, at: 0, "not a secbridge transcript: line 1 must be '# secbridge-transcript: 1'")
        }
        let version = text[prefix.count...]
        if Array(version) == Array("\(TranscriptHeader.formatVersion)".utf8) { return }
        throw fail(.unsupportedVersion, at: prefix.count,
                   "format version '\(String(decoding: version, as: UTF8.self))' is not one this tool reads (it reads version \(TranscriptHeader.formatVersion)): use the tool that wrote the file, or a newer secbridge")
    }

    mutating func parseHeaderField() throws(TranscriptParseError) -> TranscriptHeader.Field {
        guard text.starts(with: Array("# ".utf8)) else {
            throw fail(.badHeader, at: 1, "a header line is '# key: value' with one space after '#'")
        }
        position = 2
        let keyStart = position
        while position < text.count, text[position] != UInt8(ascii: ":") { position += 1 }
        let key = string(keyStart..<position)
        guard Self.isKey(key) else {
            throw fail(.badHeader, at: keyStart, "'\(key)' is not a header key: write '# key: value' with a key of lowercase letters, digits and '-'")
        }
        guard position + 1 < text.count, text[position + 1] == UInt8(ascii: " ") else {
            throw fail(.badHeader, at: position, "a header line is '# key: value': put one space after ':' and give a value (remove the line if there is none)")
        }
        position += 2
        if text[position] == UInt8(ascii: " ") {
            throw fail(.badSpacing, at: position, "two spaces after ':': write one")
        }
        let value = string(position..<text.count)
        switch key {
        case "origin" where TranscriptOrigin(rawValue: value) == nil:
            throw fail(.badHeader, at: position, "origin '\(value)' is unknown: write recorded, simulated or imported")
        case "protocol" where TransmissionProtocol(rawValue: value) == nil:
            throw fail(.badHeader, at: position, "protocol '\(value)' is unknown: write T=0, T=1, RAW or undefined")
        case "atr":
            do {
                _ = try TextScanner.scan(value, file: file, line: line) { (sub) throws(TranscriptParseError) in
                    try sub.readConcreteBytesToEnd()
                }
            } catch {
                throw TranscriptParseError(code: .badHeader, file: file, line: line, column: position + error.column,
                                           reason: "atr: " + error.reason)
            }
        default: break
        }
        return TranscriptHeader.Field(key: key, value: value)
    }

    // MARK: Body lines

    mutating func parseBodyLine() throws(TranscriptParseError) -> TranscriptLine {
        readEveryByte = text.isEmpty
        if text.isEmpty { return .blank }
        if text[0] == UInt8(ascii: ";") {
            if text.count == 1 { return .comment("") }
            guard text[1] == UInt8(ascii: " "), text.count > 2 else {
                throw fail(.badNote, at: 1, "a comment is '; text' with one space after ';'")
            }
            return .comment(string(2..<text.count))
        }
        var offset: TranscriptOffset?
        var channel: String?
        if peek() == UInt8(ascii: "+") {
            offset = try readOffset()
            try readSeparator()
        }
        if peek() == UInt8(ascii: "@") {
            channel = try readChannel()
            try readSeparator()
        }
        let kindStart = position
        let kind = readWordRange()
        let entry: TranscriptEntry
        // Matched on the bytes: a String switch costs more than the rest of a short line.
        switch LineKind(text[kind]) {
        case .outgoing:
            entry = .transmit(.outgoing, try readPayload())
            recordShape = .transmit(.outgoing)
        case .incoming:
            entry = .transmit(.incoming, try readPayload())
            recordShape = .transmit(.incoming)
        case .control:
            try readSeparator()
            let code = try readControlCode()
            try readSeparator()
            let direction = try readDirection()
            entry = .control(code: code, direction, try readPayload())
            recordShape = .control(code, direction)
        case .target:
            try readSeparator()
            let direction = try readDirection()
            entry = .target(direction, try readPayload())
            recordShape = .target(direction)
        case .initiator:
            try readSeparator()
            let direction = try readDirection()
            entry = .initiator(direction, try readPayload())
            recordShape = .initiator(direction)
        case .failure:
            entry = .failure(try readFailure())
            recordShape = .failure
        case .event:
            recordShape = .event
            try readSeparator()
            let kindAt = position
            let kind = TranscriptEventKind(rawValue: readWord())
            guard kind.isValid else {
                throw fail(.unknownEventKind, at: kindAt,
                           "unknown event kind '\(kind.rawValue)': version 1 knows \(Self.knownEventList); name an extension 'x-…'")
            }
            entry = .event(TranscriptEvent(kind, try readAttributes()))
        case .reader:
            entry = .reader(try readAttributes())
            recordShape = .reader
        case nil where kind.isEmpty:
            throw fail(.badSpacing, at: kindStart, "expected a line kind here, found a space: separate items with one space")
        case nil:
            throw fail(.unknownLineKind, at: kindStart,
                       "unknown line kind '\(string(kind))': expected >, <, !, ctl, tgt, ini, event or reader (comments start with ';')")
        }
        let note = try readNote()
        if let channel { recordChannel = channel }
        // Every item of a payload line was compared byte by byte; a note is free text.
        switch recordShape {
        case .transmit, .control, .target, .initiator: readEveryByte = note == nil
        case .failure, .event, .reader: readEveryByte = false
        }
        return .record(TranscriptRecord(entry, offset: offset, channel: channel, note: note))
    }

    private static let knownEventList = TranscriptEventKind.known.map(\.rawValue).sorted().joined(separator: ", ")

    // MARK: Items

    private func peek() -> UInt8? { position < text.count ? text[position] : nil }

    private func atNoteOrEnd() -> Bool {
        position >= text.count
            || (text[position] == UInt8(ascii: " ") && position + 1 < text.count && text[position + 1] == UInt8(ascii: ";"))
    }

    /// Reads up to the next space or the end.
    private mutating func readWord() -> String { string(readWordRange()) }

    /// ``readWord()``'s bytes, as positions.
    private mutating func readWordRange() -> Range<Int> {
        let start = position
        while position < text.count, text[position] != UInt8(ascii: " ") { position += 1 }
        return start..<position
    }

    /// The word that starts a record line.
    private enum LineKind {
        case outgoing, incoming, control, target, initiator, failure, event, reader

        init?(_ word: Slice<UnsafeBufferPointer<UInt8>>) {
            func `is`(_ s: StaticString) -> Bool {
                s.utf8CodeUnitCount == word.count
                    && s.withUTF8Buffer { $0.elementsEqual(word) }
            }
            switch word.count {
            case 1 where word.first == UInt8(ascii: ">"): self = .outgoing
            case 1 where word.first == UInt8(ascii: "<"): self = .incoming
            case 1 where word.first == UInt8(ascii: "!"): self = .failure
            case 3 where `is`("ctl"): self = .control
            case 3 where `is`("tgt"): self = .target
            case 3 where `is`("ini"): self = .initiator
            case 5 where `is`("event"): self = .event
            case 6 where `is`("reader"): self = .reader
            default: return nil
            }
        }
    }

    /// Exactly one space, and then not another.
    private mutating func readSeparator() throws(TranscriptParseError) {
        guard peek() == UInt8(ascii: " ") else {
            if position >= text.count {
                throw fail(.badSpacing, at: position, "the line ends too early: something must follow here")
            }
            throw fail(.badSpacing, at: position, "expected one space here")
        }
        position += 1
        if peek() == UInt8(ascii: " ") {
            throw fail(.badSpacing, at: position, "two spaces: separate items with one space")
        }
        if position >= text.count {
            throw fail(.badSpacing, at: position, "the line ends too early: something must follow here")
        }
    }

    private mutating func readOffset() throws(TranscriptParseError) -> TranscriptOffset {
        let start = position
        let count = text.count
        var p = position + 1  // "+"
        var mantissa: UInt64 = 0
        func digits() {
            while p < count, case let d = text[p] &- UInt8(ascii: "0"), d < 10 {
                mantissa = mantissa &* 10 &+ UInt64(d)
                p += 1
            }
        }
        let intStart = p
        digits()
        let intDigits = p - intStart
        var sawPoint = false
        var fraction = 0
        if intDigits > 0, p < count, text[p] == UInt8(ascii: ".") {
            sawPoint = true
            p += 1
            let fractionStart = p
            digits()
            fraction = p - fractionStart
        }
        if intDigits > 1, text[intStart] == UInt8(ascii: "0") {
            let next = text[intStart + 1] - 48
            throw fail(.badOffset, at: intStart, "an offset has no leading zero: write +\(next)… instead of +0\(next)…")
        }
        guard intDigits + fraction <= 18 else {
            throw fail(.badOffset, at: start, "the offset has more than 18 digits: use a larger unit")
        }
        position = p
        guard intDigits > 0, !sawPoint || fraction > 0 else {
            throw fail(.badOffset, at: start, "an offset is '+' digits [. digits] unit, e.g. +12.345ms")
        }
        guard fraction <= 9 else {
            throw fail(.badOffset, at: start, "at most 9 digits after the point: use a smaller unit")
        }
        let unitStart = position
        let unitWord = text[readWordRange()]
        let unit: TranscriptOffset.Unit
        switch (unitWord.count, unitWord.first, unitWord.last) {
        case (1, UInt8(ascii: "s"), _): unit = .seconds
        case (2, UInt8(ascii: "m"), UInt8(ascii: "s")): unit = .milliseconds
        case (2, UInt8(ascii: "u"), UInt8(ascii: "s")): unit = .microseconds
        default:
            throw fail(.badOffset, at: unitStart,
                       "'\(string(unitStart..<position))' is not a time unit: write s, ms or us right after the number, e.g. +12.345ms")
        }
        return TranscriptOffset(mantissa: mantissa, fractionDigits: fraction, unit: unit)
    }

    private mutating func readChannel() throws(TranscriptParseError) -> String {
        let start = position
        position += 1  // "@"
        let id = readWord()
        guard Self.isChannelID(id) else {
            throw fail(.badChannel, at: start, "'@\(id)' is not a channel id: use letters, digits, '_', '.' or '-', e.g. @r0")
        }
        return id
    }

    private mutating func readDirection() throws(TranscriptParseError) -> TranscriptDirection {
        let word = readWordRange()
        switch (word.count, text[word].first) {
        case (1, UInt8(ascii: ">")): return .outgoing
        case (1, UInt8(ascii: "<")): return .incoming
        default:
            throw fail(.unknownLineKind, at: word.lowerBound, "expected '>' (from the host) or '<' (to the host), found '\(string(word))'")
        }
    }

    private mutating func readControlCode() throws(TranscriptParseError) -> UInt32 {
        let start = position
        let word = readWord()
        guard let code = Self.parseCode(word) else {
            throw fail(.badControlCode, at: start,
                       "'\(word)' is not a control code: write 0x and eight uppercase hex digits, e.g. ctl 0x42000001 >")
        }
        return code
    }

    /// Zero or more byte items after a payload head; stops at the end or at a note.
    private mutating func readPayload() throws(TranscriptParseError) -> TranscriptBytes {
        if let concrete = readConcretePayload() { return concrete }
        var concrete: [UInt8] = []
        var masks: [TranscriptBytes.Mask] = []
        concrete.reserveCapacity((text.count - position) / 3)
        while !atNoteOrEnd() {
            // Fast path: " HH" followed by a space or the end; anything else goes through the
            // item reader, which names what is wrong.
            if position + 2 < text.count, text[position] == UInt8(ascii: " "),
               let hi = HexText.value(ofUppercaseDigit: text[position + 1]),
               let lo = HexText.value(ofUppercaseDigit: text[position + 2]),
               position + 3 == text.count || text[position + 3] == UInt8(ascii: " ") {
                concrete.append(hi << 4 | lo)
                position += 3
                continue
            }
            try readSeparator()
            switch try readByteItem() {
            case .byte(let b): concrete.append(b)
            case let item: masks.append(TranscriptBytes.Mask(position: concrete.count, item: item))
            }
        }
        return TranscriptBytes(copying: concrete, masks: masks)
    }

    /// The common payload, decoded straight into the arena's chunk (or a chunk of its own
    /// without an arena): only ` HH` items up to the end of the line or its note. Nil (position
    /// unchanged, nothing kept) for anything else, which ``readPayload()`` then reads item by item
    /// and names what is wrong.
    private mutating func readConcretePayload() -> TranscriptBytes? {
        let count = text.count
        let start = position
        let room = (count - start) / 3
        guard let base = text.baseAddress, room > 0 else {
            // Nothing after the head, or less than one item: the end, a note, or something to name.
            guard start == count || (start + 1 < count && text[start] == UInt8(ascii: " ") && text[start + 1] == UInt8(ascii: ";"))
            else { return nil }
            return TranscriptBytes([])
        }
        let chunk = arena?.room(for: room) ?? ByteChunk.make(capacity: room)
        // Locals only in the loop: the stores through `out` cannot then alias the scanner.
        let out = chunk.bytes + chunk.used
        var p = start
        var n = 0
        let pairs = hexPairs
        // Wrapping arithmetic: p < count ≤ the line's length, far from overflow. What follows an
        // item is checked as the next item's space; a byte there other than a space ends the
        // loop and fails the check after it ('0A1', a missing space). The two digits are one
        // 16-bit load and one table entry.
        while p &+ 2 < count, base[p] == UInt8(ascii: " ") {
            let digits = UInt16(littleEndian: UnsafeRawPointer(base + (p &+ 1)).loadUnaligned(as: UInt16.self))
            let value = pairs[Int(digits)]
            guard value > 0xFF else { break }  // a note's ';', '??', '[REDACTED n]', bad hex
            out[n] = UInt8(truncatingIfNeeded: value)
            n &+= 1
            p &+= 3
        }
        guard p == count || (p &+ 1 < count && base[p] == UInt8(ascii: " ") && base[p &+ 1] == UInt8(ascii: ";"))
        else { return nil }
        position = p
        if let arena { return arena.commit(chunk, count: n) }
        chunk.used = n
        return TranscriptBytes(chunk: chunk, start: 0, length: n)
    }

    /// Hex bytes with single spaces and nothing else (header `atr`, attribute `atr`).
    mutating func readConcreteBytesToEnd() throws(TranscriptParseError) -> [UInt8] {
        var out: [UInt8] = []
        while position < text.count {
            if !out.isEmpty { try readSeparator() }
            let at = position
            guard case .byte(let b) = try readByteItem() else {
                throw fail(.badHex, at: at, "only concrete hex bytes belong here, no ?? or [REDACTED n]")
            }
            out.append(b)
        }
        if out.isEmpty { throw fail(.badHex, at: 0, "no bytes: write hex bytes such as 3B 80 80 01 01") }
        return out
    }

    private mutating func readByteItem() throws(TranscriptParseError) -> TranscriptBytes.Item {
        let start = position
        let item: TranscriptBytes.Item
        if peek() == UInt8(ascii: "[") {
            let prefix = Array("[REDACTED ".utf8)
            guard text[position...].starts(with: prefix) else {
                throw fail(.badHex, at: start, "a redaction mark is written [REDACTED n], n the number of bytes")
            }
            position += prefix.count
            let digitsStart = position
            var n = 0
            while let c = peek(), c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9"), position - digitsStart < 6 {
                n = n * 10 + Int(c - 48)
                position += 1
            }
            guard peek() == UInt8(ascii: "]"), position > digitsStart, text[digitsStart] != UInt8(ascii: "0"),
                  n <= TranscriptBytes.maximumRedactedCount
            else {
                throw fail(.badHex, at: start,
                           "a redaction mark is written [REDACTED n], n from 1 to \(TranscriptBytes.maximumRedactedCount) with no leading zero")
            }
            position += 1
            item = .redacted(count: n)
        } else if position + 1 < text.count, text[position] == UInt8(ascii: "?"), text[position + 1] == UInt8(ascii: "?") {
            position += 2
            item = .wildcard
        } else if position + 1 < text.count,
                  let hi = HexText.value(ofUppercaseDigit: text[position]),
                  let lo = HexText.value(ofUppercaseDigit: text[position + 1]) {
            position += 2
            item = .byte(hi << 4 | lo)
        } else {
            let word = readWord()
            position = start
            if word.utf8.contains(where: HexText.isLowercaseHexDigit), word.uppercased() != word,
               word.utf8.count == 2, word.uppercased().utf8.allSatisfy({ HexText.value(ofUppercaseDigit: $0) != nil }) {
                throw fail(.badHex, at: start, "'\(word)' is lowercase: write hex in uppercase, '\(word.uppercased())'")
            }
            throw fail(.badHex, at: start, "'\(word)' is not a byte: write two uppercase hex digits, ?? (any byte) or [REDACTED n]")
        }
        if let c = peek(), c != UInt8(ascii: " ") {
            throw fail(.badHex, at: start, "bytes are two hex digits each, separated by one space")
        }
        return item
    }

    private mutating func readFailure() throws(TranscriptParseError) -> TranscriptFailure {
        try readSeparator()
        let nameStart = position
        let name = readWord()
        guard Self.isFailureName(name) else {
            throw fail(.badFailure, at: nameStart,
                       "'\(name)' is not an error name: write '! NAME [0xCODE] [\"message\"]', e.g. ! SCARD_E_NO_SMARTCARD 0x8010000C")
        }
        var failure = TranscriptFailure(name: name)
        if !atNoteOrEnd(), position + 2 < text.count, text[position + 1] != UInt8(ascii: "\"") {
            try readSeparator()
            let codeStart = position
            let word = readWord()
            guard let code = Self.parseCode(word) else {
                throw fail(.badFailure, at: codeStart, "'\(word)' is not an error code: write 0x and eight uppercase hex digits")
            }
            failure.code = code
        }
        if !atNoteOrEnd() {
            try readSeparator()
            guard peek() == UInt8(ascii: "\"") else {
                throw fail(.badFailure, at: position, "after the error name and code only a quoted message may follow")
            }
            failure.message = try readQuoted()
        }
        return failure
    }

    private mutating func readAttributes() throws(TranscriptParseError) -> [TranscriptAttribute] {
        var attributes: [TranscriptAttribute] = []
        while !atNoteOrEnd() {
            try readSeparator()
            let keyStart = position
            while let c = peek(), c != UInt8(ascii: "="), c != UInt8(ascii: " ") { position += 1 }
            let key = string(keyStart..<position)
            guard Self.isKey(key), peek() == UInt8(ascii: "=") else {
                throw fail(.badAttribute, at: keyStart,
                           "an attribute is key=\"value\": a key of lowercase letters, digits and '-', then = and a quoted value")
            }
            position += 1
            guard peek() == UInt8(ascii: "\"") else {
                throw fail(.badAttribute, at: position, "attribute values are quoted: write \(key)=\"…\"")
            }
            let valueStart = position
            let value = try readQuoted()
            if attributes.contains(where: { $0.key == key }) {
                throw fail(.badAttribute, at: keyStart, "the attribute '\(key)' appears twice: keep one")
            }
            if key == "atr" {
                do {
                    _ = try TextScanner.scan(value, file: file, line: line) { (sub) throws(TranscriptParseError) in
                        try sub.readConcreteBytesToEnd()
                    }
                } catch {
                    throw fail(.badAttribute, at: valueStart + error.column, "atr: " + error.reason)
                }
            }
            if key == "protocol", TransmissionProtocol(rawValue: value) == nil {
                throw fail(.badAttribute, at: valueStart, "protocol \"\(value)\" is unknown: write T=0, T=1, RAW or undefined")
            }
            attributes.append(TranscriptAttribute(key, value))
        }
        return attributes
    }

    private mutating func readQuoted() throws(TranscriptParseError) -> String {
        let start = position
        position += 1
        var out: [UInt8] = []
        while position < text.count {
            let c = text[position]
            if c == UInt8(ascii: "\"") {
                position += 1
                if let next = peek(), next != UInt8(ascii: " ") {
                    throw fail(.badAttribute, at: position, "a quoted value ends at its closing quote: put one space before what follows")
                }
                return String(decoding: out, as: UTF8.self)
            }
            if c == UInt8(ascii: "\\") {
                guard position + 1 < text.count, text[position + 1] == UInt8(ascii: "\"") || text[position + 1] == UInt8(ascii: "\\") else {
                    throw fail(.badAttribute, at: position, "unknown escape: inside quotes only \\\" and \\\\ are escapes")
                }
                out.append(text[position + 1])
                position += 2
                continue
            }
            out.append(c)
            position += 1
        }
        throw fail(.badAttribute, at: start, "the quoted text has no closing quote: add \" at its end")
    }

    private mutating func readNote() throws(TranscriptParseError) -> String? {
        if position >= text.count { return nil }
        let rest = text[position...]
        guard rest.starts(with: Array(" ; ".utf8)), rest.count > 3 else {
            if rest.starts(with: Array(" ;".utf8)) {
                throw fail(.badNote, at: position + 1, "a note is ' ; text' with text after it: write some text or remove the ';'")
            }
            throw fail(.badSpacing, at: position, "unexpected text after the line's last item: a note is written ' ; text'")
        }
        return string(position + 3..<text.count)
    }

    // MARK: Helpers

    private func string(_ range: Range<Int>) -> String {
        String(decoding: text[range], as: UTF8.self)
    }

    private func fail(_ code: TranscriptParseError.Code, at index: Int, _ reason: String) -> TranscriptParseError {
        TranscriptParseError(code: code, file: file, line: line, column: index + 1, reason: reason)
    }

    private static func hex(_ b: UInt8) -> String {
        var s = ""
        HexText.appendByte(b, to: &s)
        return s
    }

    /// `[a-z][a-z0-9-]*`.
    static func isKey(_ s: String) -> Bool {
        guard let first = s.utf8.first, (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(first) else { return false }
        return s.utf8.allSatisfy { c in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(c) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(c)
                || c == UInt8(ascii: "-")
        }
    }

    /// `[A-Za-z0-9_.-]+`.
    static func isChannelID(_ s: String) -> Bool {
        !s.isEmpty && s.utf8.allSatisfy { c in
            isAlphanumeric(c) || c == UInt8(ascii: "_") || c == UInt8(ascii: ".") || c == UInt8(ascii: "-")
        }
    }

    /// `[A-Za-z_][A-Za-z0-9_.]*`.
    static func isFailureName(_ s: String) -> Bool {
        guard let first = s.utf8.first, isAlphanumeric(first) && !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first)
            || first == UInt8(ascii: "_") else { return false }
        return s.utf8.allSatisfy { isAlphanumeric($0) || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: ".") }
    }

    private static func isAlphanumeric(_ c: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(c) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(c)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(c)
    }

    /// `0x` and exactly eight uppercase hex digits.
    static func parseCode(_ word: String) -> UInt32? {
        let u = Array(word.utf8)
        guard u.count == 10, u[0] == UInt8(ascii: "0"), u[1] == UInt8(ascii: "x") else { return nil }
        var value: UInt32 = 0
        for c in u[2...] {
            guard let d = HexText.value(ofUppercaseDigit: c) else { return nil }
            value = value << 4 | UInt32(d)
        }
        return value
    }

    /// A value in double quotes with `"` and `\` escaped.
    static func quote(_ s: String) -> String {
        var out = "\""
        for c in s.unicodeScalars {
            if c == "\"" || c == "\\" { out.append("\\") }
            out.unicodeScalars.append(c)
        }
        return out + "\""
    }

    /// Concrete hex bytes in the project's form, e.g. `3B 80 80 01 01`.
    static func concreteBytes(_ s: String) throws(TranscriptParseError) -> [UInt8] {
        try scan(s, file: "", line: 0) { (sub) throws(TranscriptParseError) in try sub.readConcreteBytesToEnd() }
    }
}
