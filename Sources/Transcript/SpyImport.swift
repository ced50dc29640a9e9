import ISO7816
import PCSCCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Why a pcsc-spy log could not be imported: the file, the 1-based line and a reason that says
/// what to do. Equatable by ``code``.
public struct SpyImportError: CodedError {
    /// An open set of fault kinds.
    public struct Code: ErrorCode {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The file could not be read (missing, not a regular file, no permission, a read error).
        public static let unreadable = Self(rawValue: "unreadable")
        /// No pcsc-spy block at all (empty file, or another tool's output).
        public static let notASpyLog = Self(rawValue: "not-a-spy-log")
        /// The spy library's raw FIFO format, not the pcsc-spy viewer's output.
        public static let rawLibraryFormat = Self(rawValue: "raw-library-format")
        /// A line that is none of: function name, ` i `/` o ` parameter, ` => ` result, summary.
        public static let unknownLine = Self(rawValue: "unknown-line")
        /// A function block starts before the previous block of the same thread has its result.
        public static let badSequence = Self(rawValue: "bad-sequence")
        /// A hexdump line with a bad offset, a bad byte or a short line before the last one.
        public static let badHex = Self(rawValue: "bad-hex")
        /// A buffer whose hexdump holds another number of bytes than its length line says.
        public static let lengthMismatch = Self(rawValue: "length-mismatch")
        /// A ` => ` result line that is neither the older nor the newer form.
        public static let badResult = Self(rawValue: "bad-result")
        /// A parameter the block needs is missing or malformed (e.g. no `bSendBuffer`).
        public static let badParameter = Self(rawValue: "bad-parameter")
        /// The log ends inside a call (its result line ` => ` never came): the log was cut, and
        /// ``SpyImportOptions/keepsUnfinishedCalls`` is false.
        public static let truncated = Self(rawValue: "truncated")
        /// The transcript file could not be written (``SpyLogImporter/importLog(contentsOfFile:writingTo:options:)``).
        public static let writeFailed = Self(rawValue: "write-failed")
    }

    public var code: Code
    /// The log's file name, as given.
    public var file: String
    /// 1-based line number of the log; 0 when the fault is not on one line.
    public var line: Int
    /// What was wrong in the log, and what to do.
    public var reason: String

    /// An error of `code` at `line` (1-based, 0 when not on one line) of `file`.
    public init(code: Code, file: String, line: Int, reason: String) {
        self.code = code
        self.file = file
        self.line = line
        self.reason = reason
    }

    /// `file:line: reason`.
    public var description: String { line > 0 ? "\(file):\(line): \(reason)" : "\(file): \(reason)" }
}

/// Choices for ``SpyLogImporter``.
public struct SpyImportOptions: Sendable {
    /// Applied to every command line; ``Redactor/default`` masks PINs and keys.
    public var redactor: Redactor
    /// The header's `tool`, e.g. `secbridge 0.1.0 import-spy`.
    public var tool: String?
    /// The header's `date` (ISO 8601 UTC); nil leaves it out.
    public var date: String?
    /// The header's `source`; nil writes `pcsc-spy output <file name>`.
    public var source: String?
    /// What becomes of a log that ends inside a call (no result line ` => ` after its last
    /// function name): true (the default) keeps the calls before and says the cut call in a
    /// comment (`; the log ends inside …`), as `secbridge capture` does for a program it saw
    /// stopped; false refuses the log with ``SpyImportError/Code/truncated`` naming the line
    /// where the log is cut and the call it cuts, and nothing is written (`transcript import-spy`:
    /// a log given by hand that is cut was damaged or copied short).
    public var keepsUnfinishedCalls = true

    /// Options with the default redactor (PINs and keys masked) and the header fields `tool`, `date`
    /// (ISO 8601 UTC) and `source`; nil leaves a field to its default.
    public init(redactor: Redactor = .default, tool: String? = nil, date: String? = nil, source: String? = nil) {
        self.redactor = redactor
        self.tool = tool
        self.date = date
        self.source = source
    }
}

/// Converts the output of `pcsc-spy` (the viewer that ships with pcsc-lite, reading what
/// `libpcscspy.so.0` wrote) into a transcript.
///
/// Accepted: the result lines of pcsc-lite up to 2.1 (` => Command successful. (SCARD_S_SUCCESS
/// [0x00000000])  [0.000730]`) and from 2.2.0 (` => SCARD_S_SUCCESS [0x00000000]  [0.000730]`);
/// buffers as 16-byte hexdump lines (`0000 00 A4 04 00 …  ascii`); several threads (each indented
/// by four spaces per thread, or tagged `(tN)` with `-t`); the diffable mode (`-d`: handles
/// `0x????`, times `[??.??]`); ANSI colour codes; the closing statistics.
///
/// What becomes what:
/// - SCardTransmit → `>` / `<` (or `!` when the call failed); SCardControl (printed `SCarControl`)
///   → `ctl 0x… >` / `<`.
/// - SCardConnect → `event connected` (share, protocol, handle); SCardReconnect with reset or
///   unpower → `event card-reset`; SCardDisconnect → `event disconnected`;
///   SCardBeginTransaction / SCardEndTransaction → `transaction-began` / `transaction-ended`.
/// - SCardGetStatusChange → `card-inserted` / `card-removed` when a reader's presence bit changed
///   against the state the caller knew, else `state-changed` for each reader flagged CHANGED.
/// - ATR and protocol (SCardConnect, SCardStatus) → the header (one card handle) or the
///   `@hN reader` declarations (several handles, one channel id each).
///
/// Timing: the viewer prints how long each call took, not when it started. Offsets (`+…us`) add
/// up the call durations in log order, so the time an exchange took is exact and idle time
/// between calls is left out; the diffable mode has no times, so no offsets.
///
/// A block still open at the end of the log (the program was stopped inside a call) is kept as a
/// comment, or as a command without an answer.
public enum SpyLogImporter {
    /// Imports a log file into a transcript held in memory.
    /// - Throws: ``SpyImportError`` naming the first line that cannot be read; never a partial result.
    public static func importLog(contentsOfFile path: String, options: SpyImportOptions = SpyImportOptions()) throws(SpyImportError) -> Transcript {
        var lines: [TranscriptLine] = []
        var header = TranscriptHeader()
        try convert(fileName: path, options: options, forEachLine: { (body) throws(SpyImportError) in
            try forEachLine(ofFile: path, body)
        }, start: { header = $0 }, emit: { lines.append($0) })
        return try checkedTranscript(header: header, lines: lines, fileName: path)
    }

    /// Imports a log file of any size into the transcript file `output`, streaming: the log is read
    /// twice line by line (its form and card handles first, then its calls), and each line goes to
    /// a file that replaces `output` only when complete (``TranscriptFileReplacement``). Memory does
    /// not grow with the log.
    /// - Returns: the counts of what was written.
    /// - Throws: ``SpyImportError`` naming the first line that cannot be read, or `writeFailed`
    ///   when `output` cannot be written; then `output` is unchanged.
    public static func importLog(
        contentsOfFile path: String, writingTo output: String, options: SpyImportOptions = SpyImportOptions()
    ) throws(SpyImportError) -> TranscriptStatistics {
        var file: TranscriptFileReplacement?
        var statistics = TranscriptStatistics()
        func writeFailure(_ error: TranscriptWriteError) -> SpyImportError {
            if error.code == .invalidLine {
                return SpyImportError(code: .badParameter, file: path, line: 0,
                                      reason: "the converted transcript does not read back (\(error.reason)); report this log")
            }
            return SpyImportError(code: .writeFailed, file: output, line: 0, reason: error.reason)
        }
        try convert(fileName: path, options: options, forEachLine: { (body) throws(SpyImportError) in
            try forEachLine(ofFile: path, body)
        }, start: { (header) throws(SpyImportError) in
            do throws(TranscriptWriteError) { file = try TranscriptFileReplacement(replacing: output, header: header) } catch { throw writeFailure(error) }
        }, emit: { (line) throws(SpyImportError) in
            do throws(TranscriptWriteError) { try file?.append(line) } catch { throw writeFailure(error) }
            if let record = line.record { statistics.add(record) }
        })
        do { try file?.commit() } catch { throw writeFailure(error) }
        statistics.finish()
        return statistics
    }

    /// Imports a log held in memory.
    /// - Throws: ``SpyImportError``.
    public static func importLog(_ text: String, fileName: String = "<pcsc-spy>", options: SpyImportOptions = SpyImportOptions()) throws(SpyImportError) -> Transcript {
        try importLog(Array(text.utf8), fileName: fileName, options: options)
    }

    static func importLog(_ bytes: [UInt8], fileName: String, options: SpyImportOptions) throws(SpyImportError) -> Transcript {
        var lines: [TranscriptLine] = []
        var header = TranscriptHeader()
        try convert(fileName: fileName, options: options, forEachLine: { (body) throws(SpyImportError) in
            var start = 0
            var i = 0
            while i < bytes.count {
                if bytes[i] == 0x0A {
                    try body(bytes[start..<i])
                    start = i + 1
                }
                i += 1
            }
            if start < bytes.count { try body(bytes[start...]) }
        }, start: { header = $0 }, emit: { lines.append($0) })
        return try checkedTranscript(header: header, lines: lines, fileName: fileName)
    }

    /// The transcript of `lines`, once its text reads back (a reader name with a control
    /// character, for one, cannot).
    private static func checkedTranscript(header: TranscriptHeader, lines: [TranscriptLine], fileName: String) throws(SpyImportError) -> Transcript {
        let transcript = Transcript(header: header, lines: lines, fileName: fileName)
        do {
            _ = try Transcript(parsing: transcript.serialized(), fileName: fileName)
        } catch {
            throw SpyImportError(code: .badParameter, file: fileName, line: 0,
                                 reason: "the converted transcript does not read back (\(error.reason)); report this log")
        }
        return transcript
    }

    /// Calls `body` with each line of the file (without its LF; a last line without one too).
    private static func forEachLine(ofFile path: String, _ body: (ArraySlice<UInt8>) throws(SpyImportError) -> Void) throws(SpyImportError) {
        let input: FileIO.LineInput
        do {
            input = try FileIO.LineInput(path: path, maximumLineLength: maximumLineLength, kind: "pcsc-spy log")
        } catch {
            throw SpyImportError(code: .unreadable, file: path, line: 0, reason: error.reason)
        }
        var number = 0
        while true {
            let line: UnsafeBufferPointer<UInt8>?
            do {
                line = try input.nextLine()
            } catch {
                throw SpyImportError(code: .unreadable, file: path, line: error.errorNumber == EFBIG ? number + 1 : 0, reason: error.reason)
            }
            guard let line else { break }
            number += 1
            try body(ArraySlice(line))
        }
        if !input.unterminated.isEmpty { try body(input.unterminated) }
    }

    /// The longest log line read: 16 MiB (pcsc-spy prints 16 bytes of a buffer per line).
    static let maximumLineLength = 16 << 20

    /// The conversion, over a log `forEachLine` reads twice: the first reading fixes the header
    /// and the channel ids (``SpyTranscriptLayout``), handed to `start`; the second turns each
    /// block into lines, handed to `emit` in order.
    static func convert(
        fileName: String, options: SpyImportOptions,
        forEachLine: ((ArraySlice<UInt8>) throws(SpyImportError) -> Void) throws(SpyImportError) -> Void,
        start: (TranscriptHeader) throws(SpyImportError) -> Void,
        emit: (TranscriptLine) throws(SpyImportError) -> Void
    ) throws(SpyImportError) {
        // First reading: the log's form and its card handles.
        var reader = SpyLogReader(fileName: fileName)
        var builder = SpyTranscriptBuilder(fileName: fileName, options: options, timed: true)
        try forEachLine { (raw) throws(SpyImportError) in
            if let block = try reader.accept(raw) { _ = try builder.add(block) }
        }
        let log = try reader.finish()
        if !options.keepsUnfinishedCalls, let cut = log.open.first {
            throw SpyImportError(
                code: .truncated, file: fileName, line: reader.lineCount,
                reason: "the log is cut: it ends at line \(reader.lineCount) inside \(cut.function) (begun at line \(cut.line)), before that call's result line (=>)"
                    + (log.open.count > 1 ? " (and \(log.open.count - 1) more call\(log.open.count == 2 ? "" : "s") of other threads)" : "")
                    + "; give the whole log (pcsc-spy's output once the program ended); nothing was written")
        }
        _ = try builder.finish(open: log.open)
        let layout = SpyTranscriptLayout(log: log, connections: builder.connections, fileName: fileName, options: options)
        try start(layout.header)
        for line in layout.declarations { try emit(line) }

        // Second reading: the lines.
        var second = SpyLogReader(fileName: fileName)
        var items = SpyTranscriptBuilder(fileName: fileName, options: options, timed: !log.diffable)
        try withoutActuallyEscaping(emit, do: { (emit) throws(SpyImportError) in
            try forEachLine { (raw) throws(SpyImportError) in
                guard let block = try second.accept(raw) else { return }
                for item in try items.add(block) {
                    for line in try layout.lines(of: item) { try emit(line) }
                }
            }
        })
        for item in try items.finish(open: try second.finish().open) {
            for line in try layout.lines(of: item) { try emit(line) }
        }
    }
}
