import PCSCCore
import Synchronization

/// Why a transcript could not be written. Equatable by ``code``.
public struct TranscriptWriteError: CodedError {
    /// An open set of fault kinds.
    public struct Code: ErrorCode {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The file (or the temporary file of an atomic save) could not be created.
        public static let cannotCreate = Self(rawValue: "cannot-create")
        /// write(2) or fsync(2) failed (disk full, I/O error).
        public static let writeFailed = Self(rawValue: "write-failed")
        /// The finished temporary file could not be renamed over the target.
        public static let cannotRename = Self(rawValue: "cannot-rename")
        /// The line would not parse back (bad characters, an answer without a command, …).
        public static let invalidLine = Self(rawValue: "invalid-line")
        /// The writer was closed.
        public static let closed = Self(rawValue: "closed")
    }

    public var code: Code
    /// The transcript file concerned.
    public var path: String
    /// The POSIX errno when a system call failed.
    public var errorNumber: Int32?
    /// What went wrong and what to do.
    public var reason: String

    /// An error of `code` on the file at `path`, with the POSIX errno when a system call failed.
    public init(code: Code, path: String, errorNumber: Int32? = nil, reason: String) {
        self.code = code
        self.path = path
        self.errorNumber = errorNumber
        self.reason = reason
    }

    public var description: String { reason }
}

/// Where recorded lines go: a file (``TranscriptWriter``) or memory (``TranscriptBuffer``).
///
/// A sink checks every line before keeping it (it must parse back to the same value, and answers
/// must follow their commands), so whatever a sink holds is a valid transcript.
public protocol TranscriptSink: AnyObject, Sendable {
    /// Appends one body line.
    /// - Throws: ``TranscriptWriteError``: `invalidLine`, `writeFailed`, `closed`.
    func append(_ line: TranscriptLine) throws(TranscriptWriteError)

    /// Appends one record line: `append(.record(record))`, which is what it does unless a sink
    /// has a quicker way (``TranscriptWriter`` writes an exchange without wrapping it in a line).
    /// - Parameter record: the record to append.
    /// - Throws: ``TranscriptWriteError``: `invalidLine`, `writeFailed`, `closed`.
    func appendRecord(_ record: TranscriptRecord) throws(TranscriptWriteError)
}

extension TranscriptSink {
    /// `append(.record(record))`.
    /// - Parameter record: the record to append.
    /// - Throws: what ``append(_:)`` throws.
    public func appendRecord(_ record: TranscriptRecord) throws(TranscriptWriteError) {
        try append(.record(record))
    }
}

/// The per-line check every sink runs: the line's text parses back to the same value, and the
/// pairing rules of the parser hold.
struct LineValidator {
    private var pairing = PairingCheck()
    private(set) var nextLineNumber: Int
    let fileName: String

    init(header: TranscriptHeader, fileName: String) throws(TranscriptWriteError) {
        self.fileName = fileName
        let text = Transcript(header: header, fileName: fileName).serialized()
        do {
            _ = try Transcript(parsing: text, fileName: fileName)
        } catch {
            throw TranscriptWriteError(code: .invalidLine, path: fileName, reason: "invalid header: \(error)")
        }
        nextLineNumber = 2 + header.fields.count
    }

    /// The line's text (without LF) once it passes.
    mutating func check(_ line: TranscriptLine) throws(TranscriptWriteError) -> String {
        let text = line.serialized()
        do {
            let parsed = try TextScanner.scan(text, file: fileName, line: nextLineNumber) { (scanner) throws(TranscriptParseError) in
                try scanner.checkCharacters()
                if text.hasPrefix("#") {
                    throw TranscriptParseError(code: .misplacedHeader, file: fileName, line: nextLineNumber, column: 1,
                                               reason: "a body line may not start with '#'")
                }
                return try scanner.parseBodyLine()
            }
            guard parsed == line else {
                throw TranscriptParseError(code: .badSpacing, file: fileName, line: nextLineNumber, column: 1,
                                           reason: "the line would read back differently (leading spaces or a malformed value): '\(text)'")
            }
        } catch {
            throw TranscriptWriteError(code: .invalidLine, path: fileName, reason: "refusing to write \(error)")
        }
        if let record = line.record, let problem = pairing.accept(record, line: nextLineNumber) {
            throw TranscriptWriteError(code: .invalidLine, path: fileName,
                                       reason: "refusing to write \(fileName):\(nextLineNumber): \(problem)")
        }
        nextLineNumber += 1
        return text
    }

    /// ``check(_:)`` for a record whose text holds no free text: an exchange (`>`, `<`,
    /// `ctl 0x… >`, `ctl 0x… <`) of concrete bytes, without a note, with an offset of at most 18
    /// digits and 9 decimals and a valid `@id` if any. Such a line is written from typed values only
    /// (digits, hex, a fixed word), so it reads back as the same value by construction and is not
    /// parsed again (the recorder writes every exchange this way); the pairing rules are checked as
    /// for every line. Its text and LF are written to `out`. Returns false, with nothing checked or
    /// written, for any other record: ``check(_:)`` then checks it whole.
    /// - Throws: ``TranscriptWriteError`` `invalidLine` when the pairing rules refuse it.
    mutating func checkExchange(_ record: TranscriptRecord, into out: inout LineBytes) throws(TranscriptWriteError) -> Bool {
        guard record.note == nil else { return false }
        let code: UInt32?
        let direction: TranscriptDirection
        let payload: TranscriptBytes
        switch record.entry {
        case .transmit(let d, let b): (code, direction, payload) = (nil, d, b)
        case .control(let c, let d, let b): (code, direction, payload) = (c, d, b)
        default: return false
        }
        guard payload.masks.isEmpty else { return false }
        if let channel = record.channel, !TextScanner.isChannelID(channel) { return false }
        var integer: UInt64 = 0, fraction: UInt64 = 0, fractionDigits = 0
        if let offset = record.offset {
            guard (0...9).contains(offset.fractionDigits) else { return false }
            fractionDigits = offset.fractionDigits
            var scale: UInt64 = 1
            for _ in 0..<fractionDigits { scale *= 10 }
            (integer, fraction) = offset.mantissa.quotientAndRemainder(dividingBy: scale)
            guard LineBytes.decimalDigits(integer) + fractionDigits <= 18 else { return false }
        }
        if let problem = pairing.accept(record, line: nextLineNumber) {
            throw TranscriptWriteError(code: .invalidLine, path: fileName,
                                       reason: "refusing to write \(fileName):\(nextLineNumber): \(problem)")
        }
        out.count = 0
        // The offset (at most 22 bytes), `ctl 0x…` (15), the direction, the LF: 64 is room enough.
        out.reserve(64 + 3 * payload.itemCount + (record.channel?.utf8.count ?? 0))
        if let offset = record.offset {
            out.append(UInt8(ascii: "+"))
            out.appendDecimal(integer, width: 1)
            if fractionDigits > 0 {
                out.append(UInt8(ascii: "."))
                out.appendDecimal(fraction, width: fractionDigits)
            }
            switch offset.unit {
            case .seconds: out.append(UInt8(ascii: "s"))
            case .milliseconds: out.append(UInt8(ascii: "m")); out.append(UInt8(ascii: "s"))
            case .microseconds: out.append(UInt8(ascii: "u")); out.append(UInt8(ascii: "s"))
            }
            out.append(UInt8(ascii: " "))
        }
        if let channel = record.channel {
            out.append(UInt8(ascii: "@"))
            channel.utf8.forEach { out.append($0) }
            out.append(UInt8(ascii: " "))
        }
        if let code {
            out.append(UInt8(ascii: "c")); out.append(UInt8(ascii: "t")); out.append(UInt8(ascii: "l"))
            out.append(UInt8(ascii: " ")); out.append(UInt8(ascii: "0")); out.append(UInt8(ascii: "x"))
            for shift in stride(from: 24, through: 0, by: -8) { out.appendHex(UInt8(truncatingIfNeeded: code >> UInt32(shift))) }
            out.append(UInt8(ascii: " "))
        }
        out.append(direction == .outgoing ? UInt8(ascii: ">") : UInt8(ascii: "<"))
        payload.withConcreteBytes { bytes in
            for byte in bytes {
                out.append(UInt8(ascii: " "))
                out.appendHex(byte)
            }
        }
        out.append(0x0A)
        nextLineNumber += 1
        return true
    }
}

/// A growable byte buffer written through a pointer, with no per-byte capacity or uniqueness
/// check as an array has: the text of a line, reused from line to line (the transcript writer's
/// exchange lines, the CLI's buffered output). Not copyable: one owner, freed when it goes.
package struct LineBytes: ~Copyable {
    @usableFromInline var base: UnsafeMutablePointer<UInt8>
    @usableFromInline var capacity: Int
    /// The bytes written so far; set to 0 to start again.
    package var count: Int

    /// An empty buffer with room for `capacity` bytes (it grows as needed).
    package init(capacity: Int = 256) {
        self.capacity = max(capacity, 16)
        base = .allocate(capacity: self.capacity)
        count = 0
    }

    deinit { base.deallocate() }

    /// Makes room for `more` bytes after ``count``: every `append` must have room reserved.
    @inlinable
    package mutating func reserve(_ more: Int) {
        if count + more > capacity { grow(more) }
    }

    /// Moves the bytes to a buffer with room for `more` after them (at least twice as large).
    @usableFromInline
    mutating func grow(_ more: Int) {
        let grown = max(2 * capacity, count + more)
        let new = UnsafeMutablePointer<UInt8>.allocate(capacity: grown)
        new.update(from: base, count: count)
        base.deallocate()
        base = new
        capacity = grown
    }

    /// Appends one byte.
    @inlinable @inline(__always)
    package mutating func append(_ byte: UInt8) {
        base[count] = byte
        count += 1
    }

    /// Appends the bytes of `bytes`.
    @inlinable @inline(__always)
    package mutating func append(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard let start = bytes.baseAddress else { return }
        (base + count).update(from: start, count: bytes.count)
        count += bytes.count
    }

    /// Appends two uppercase hex digits.
    @inlinable @inline(__always)
    package mutating func appendHex(_ byte: UInt8) {
        let high = byte >> 4, low = byte & 0x0F
        append(high < 10 ? 0x30 + high : 0x37 + high)
        append(low < 10 ? 0x30 + low : 0x37 + low)
    }

    /// Appends `bytes` as uppercase hex, one space between bytes (`00 A4 04 00`); reserves the room.
    package mutating func appendSpacedHex(_ bytes: [UInt8]) {
        reserve(3 * bytes.count)
        bytes.withUnsafeBufferPointer { bytes in
            for index in bytes.indices {
                if index > 0 { append(0x20) }
                appendHex(bytes[index])
            }
        }
    }

    /// Appends `value` in decimal, zero-padded to at least `width` digits (room: 20 bytes).
    package mutating func appendDecimal(_ value: UInt64, width: Int) {
        let digits = max(width, Self.decimalDigits(value))
        count += digits
        // Written from the last digit back.
        var index = count
        var rest = value
        for _ in 0..<digits {
            index -= 1
            base[index] = 0x30 + UInt8(rest % 10)
            rest /= 10
        }
    }

    /// The number of decimal digits of `value` (1 for 0).
    package static func decimalDigits(_ value: UInt64) -> Int {
        var digits = 1
        var rest = value
        while rest >= 10 {
            rest /= 10
            digits += 1
        }
        return digits
    }

    /// Calls `body` with the bytes written (valid only inside `body`).
    @inlinable
    package func withBytes<R, E: Error>(_ body: (UnsafeBufferPointer<UInt8>) throws(E) -> R) throws(E) -> R {
        try body(UnsafeBufferPointer(start: base, count: count))
    }
}

/// Appends a transcript to a file one line at a time, each line in the file before `append`
/// returns.
///
/// Each line goes to the kernel with one write(2) call and no user-space buffer: if the process
/// crashes, every line appended before stays in the file, and the file parses (at worst its last
/// command has no answer). It does not fsync per line: a power loss may lose the last lines.
/// Safe to share between threads (a mutex orders lines).
public final class TranscriptWriter: TranscriptSink {
    private struct State: ~Copyable {
        var fd: Int32
        var validator: LineValidator
        /// The file's length after the last complete line.
        var length: Int
        /// The text of the line being written (an exchange's, ``LineValidator/checkExchange(_:into:)``).
        var line = LineBytes()
        /// The end of the room allocated for the file (fallocate(2) with FALLOC_FL_KEEP_SIZE, past
        /// its length): at least ``TranscriptWriter/closingRoom`` bytes past `length` after every
        /// line, so that a closing line fits when the disk is full. nil when the file system has
        /// no fallocate (then the closing line may not fit).
        var reservedEnd: Int?
        /// A test's full disk (``TranscriptWriter/injectFullDisk(atPath:afterBodyBytes:)``): past
        /// this length, body lines go to `/dev/full` (descriptor `fullFD`), which fails every write
        /// with ENOSPC.
        var fullAfter: Int?
        var fullFD: Int32 = -1
    }
    private let state: Mutex<State>
    /// The file being written.
    public let path: String

    /// The room kept allocated past the last line for ``appendClosingComment(_:)`` (its text is
    /// cut to fit).
    package static let closingRoom = 1024
    /// How much is allocated at a time past the file's end (a fallocate(2) call per 64 KiB of
    /// transcript, not per line).
    static let reserveStep = 64 * 1024

    /// Full disks staged by tests, by path (``injectFullDisk(atPath:afterBodyBytes:)``).
    private static let injectedFullDisks = Mutex<[String: Int]>([:])

    /// Makes the next writer created at `path` behave as on a full disk once `afterBodyBytes`
    /// bytes of body lines (after the header) were written: every later body line goes to
    /// `/dev/full`, whose write(2) fails with ENOSPC (the kernel's real error, through the same
    /// path as a real full disk: the torn line cut back, the error thrown). The closing line
    /// (``appendClosingComment(_:)``) goes to the file, as it does into the room kept for it on a
    /// real disk. For fault tests; a path is used once.
    package static func injectFullDisk(atPath path: String, afterBodyBytes: Int) {
        injectedFullDisks.withLock { $0[path] = afterBodyBytes }
    }

    /// Creates the file and writes the header.
    ///
    /// - Parameters:
    ///   - path: the new file.
    ///   - header: its header (the version line is added).
    ///   - replacingExisting: false (default) refuses an existing file instead of truncating it.
    /// - Throws: ``TranscriptWriteError``: `invalidLine` (bad header), `cannotCreate`, `writeFailed`.
    public init(creatingFileAt path: String, header: TranscriptHeader, replacingExisting: Bool = false) throws(TranscriptWriteError) {
        let validator = try LineValidator(header: header, fileName: path)
        let fd: Int32
        do {
            fd = try FileIO.create(path, exclusive: !replacingExisting)
        } catch {
            throw TranscriptWriteError(code: .cannotCreate, path: path, errorNumber: error.errorNumber, reason: error.reason)
        }
        let headerBytes = Array(Transcript(header: header, fileName: path).serialized().utf8)
        do {
            try FileIO.writeAll(fd, headerBytes)
        } catch {
            _ = FileIO.closeDescriptor(fd)
            throw TranscriptWriteError(code: .writeFailed, path: path, errorNumber: error.errorNumber,
                                       reason: "cannot write the header of \(path): \(error.reason)")
        }
        self.path = path
        var initial = State(fd: fd, validator: validator, length: headerBytes.count)
        if let budget = Self.injectedFullDisks.withLock({ $0.removeValue(forKey: path) }) {
            initial.fullAfter = headerBytes.count + budget
            initial.fullFD = FileIO.openFullDevice()
        }
        state = Mutex(initial)
        state.withLock { s in
            // 64 KiB, else (a nearly full disk) the closing line's room alone.
            for count in [Self.reserveStep, Self.closingRoom] where s.reservedEnd == nil {
                if FileIO.reserve(s.fd, from: s.length, count: count) == 0 { s.reservedEnd = s.length + count }
            }
        }
    }

    deinit {
        state.withLock {
            if $0.fd >= 0 { _ = FileIO.closeDescriptor($0.fd) }
            if $0.fullFD >= 0 { _ = FileIO.closeDescriptor($0.fullFD) }
        }
    }

    /// Writes one line (and its LF) to the file.
    /// - Throws: ``TranscriptWriteError``: `invalidLine` (nothing written), `writeFailed`, `closed`.
    public func append(_ line: TranscriptLine) throws(TranscriptWriteError) {
        if case .record(let record) = line {
            try appendRecord(record)
        } else {
            try write(record: nil, line: line)
        }
    }

    /// Writes one record line (and its LF) to the file: an exchange straight from its values
    /// (`LineValidator.checkExchange`), any other record as ``append(_:)`` does.
    /// - Parameter record: the record to append.
    /// - Throws: ``TranscriptWriteError``: `invalidLine` (nothing written), `writeFailed`, `closed`.
    public func appendRecord(_ record: TranscriptRecord) throws(TranscriptWriteError) {
        try write(record: record, line: nil)
    }

    /// Writes `record` (an exchange is not wrapped in a line), else `line`.
    private func write(record: TranscriptRecord?, line: TranscriptLine?) throws(TranscriptWriteError) {
        try state.withLock { (s: inout State) throws(TranscriptWriteError) in
            guard s.fd >= 0 else {
                throw TranscriptWriteError(code: .closed, path: path, reason: "\(path) is closed: open a new writer")
            }
            var validator = s.validator
            // An exchange is written from its values straight into the line buffer (nil here); any
            // other line is checked by reading its text back.
            let text: [UInt8]?
            if let record, try validator.checkExchange(record, into: &s.line) {
                text = nil
            } else {
                text = Array((try validator.check(line ?? .record(record!)) + "\n").utf8)
            }
            let written = text?.count ?? s.line.count
            do throws(FileIO.Failure) {
                // Room for this line and a closing line after it, allocated before the line is
                // written: when the disk cannot give it, the recording stops here, with room left
                // for its closing line (kept from the last allocation).
                if let reservedEnd = s.reservedEnd, s.length + written + Self.closingRoom > reservedEnd {
                    // 64 KiB at a time; on a nearly full disk, just this line and the closing line.
                    var count = max(Self.reserveStep, written + Self.closingRoom)
                    var e = FileIO.reserve(s.fd, from: s.length, count: count)
                    if FileIO.meansNoSpace(e) {
                        count = written + Self.closingRoom
                        e = FileIO.reserve(s.fd, from: s.length, count: count)
                    }
                    if e == 0 {
                        s.reservedEnd = s.length + count
                    } else if FileIO.meansNoSpace(e) {
                        throw FileIO.Failure(errorNumber: e, reason: FileIO.describe(e))
                    } else {
                        s.reservedEnd = nil  // no fallocate on this file system: written without the room
                    }
                }
                let fd = s.fullAfter.map { s.length + written > $0 } == true ? s.fullFD : s.fd
                if let text {
                    try FileIO.writeAll(fd, text)
                } else {
                    try s.line.withBytes { (bytes) throws(FileIO.Failure) in try FileIO.writeAll(fd, bytes) }
                }
            } catch {
                // A short write (disk full) would leave a torn last line, and a file that no longer
                // parses: cut it back to the last complete line, so every earlier line stays usable.
                _ = FileIO.truncate(s.fd, to: s.length)
                throw TranscriptWriteError(code: .writeFailed, path: path, errorNumber: error.errorNumber,
                                           reason: "cannot append to \(path): \(error.reason); the file keeps every line before")
            }
            s.length += written
            s.validator = validator
        }
    }

    /// Appends the comment `; text` as the file's last line, after a failed append: written into
    /// the room kept allocated past the last line (``closingRoom`` bytes; a longer text is cut),
    /// so that it fits on a full disk where the file system has fallocate(2). Control characters
    /// become spaces.
    /// - Throws: ``TranscriptWriteError`` `writeFailed` when even this line cannot be written, `closed`.
    package func appendClosingComment(_ text: String) throws(TranscriptWriteError) {
        var shown = String(String.UnicodeScalarView(text.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? " " : $0 }))
        while shown.utf8.count > Self.closingRoom - 3 { shown.removeLast() }
        try state.withLock { (s: inout State) throws(TranscriptWriteError) in
            guard s.fd >= 0 else {
                throw TranscriptWriteError(code: .closed, path: path, reason: "\(path) is closed: open a new writer")
            }
            var validator = s.validator
            let bytes = Array((try validator.check(.comment(shown)) + "\n").utf8)
            do throws(FileIO.Failure) {
                try FileIO.writeAll(s.fd, bytes)
            } catch {
                _ = FileIO.truncate(s.fd, to: s.length)
                throw TranscriptWriteError(code: .writeFailed, path: path, errorNumber: error.errorNumber,
                                           reason: "cannot append the closing line to \(path): \(error.reason)")
            }
            s.length += bytes.count
            s.validator = validator
        }
    }

    /// Closes the file, giving back the room allocated past its end. Later appends throw
    /// `closed`; closing twice does nothing.
    /// - Throws: ``TranscriptWriteError`` `writeFailed` when close(2) reports a deferred write error.
    public func close() throws(TranscriptWriteError) {
        try state.withLock { (s: inout State) throws(TranscriptWriteError) in
            guard s.fd >= 0 else { return }
            let fd = s.fd
            s.fd = -1
            if let reservedEnd = s.reservedEnd, reservedEnd > s.length { FileIO.unreserve(fd, from: s.length, count: reservedEnd - s.length) }
            if s.fullFD >= 0 { _ = FileIO.closeDescriptor(s.fullFD); s.fullFD = -1 }
            if FileIO.closeDescriptor(fd) != 0 {
                let e = FileIO.lastError()
                throw TranscriptWriteError(code: .writeFailed, path: path, errorNumber: e,
                                           reason: "closing \(path) failed: \(FileIO.describe(e)); the last lines may be lost")
            }
        }
    }
}

/// Keeps the lines in memory; ``transcript`` gives the result (e.g. to save it atomically).
public final class TranscriptBuffer: TranscriptSink {
    private struct State {
        var transcript: Transcript
        var validator: LineValidator
    }
    private let state: Mutex<State>

    /// - Throws: ``TranscriptWriteError`` `invalidLine` when the header would not parse back.
    public init(header: TranscriptHeader = TranscriptHeader(), fileName: String = "<memory>") throws(TranscriptWriteError) {
        let validator = try LineValidator(header: header, fileName: fileName)
        state = Mutex(State(transcript: Transcript(header: header, fileName: fileName), validator: validator))
    }

    public func append(_ line: TranscriptLine) throws(TranscriptWriteError) {
        try state.withLock { (s: inout State) throws(TranscriptWriteError) in
            _ = try s.validator.check(line)
            s.transcript.lines.append(line)
        }
    }

    /// Everything appended so far.
    public var transcript: Transcript {
        state.withLock { $0.transcript }
    }
}

extension Transcript {
    /// Writes the whole transcript to `path` atomically: a temporary file in the same directory,
    /// flushed to disk (fsync), then renamed over `path`. On failure `path` is unchanged and no
    /// temporary file is left.
    ///
    /// - Throws: ``TranscriptWriteError``: `invalidLine` when a line would not parse back (checked
    ///   before anything is written), `cannotCreate` (e.g. the directory does not exist or is not
    ///   writable), `writeFailed`, `cannotRename` (e.g. `path` is a directory).
    public func write(toFile path: String) throws(TranscriptWriteError) {
        var validator = try LineValidator(header: header, fileName: path)
        for line in lines { _ = try validator.check(line) }
        try FileIO.atomicWrite(Array(serialized().utf8), to: path)
    }
}

/// Writes a transcript line by line to a file that replaces `path` only when ``commit()`` succeeds
/// (a temporary file beside it, flushed and renamed, ``Transcript/write(toFile:)`` for a stream):
/// memory does not grow with the transcript. Each line is checked as every sink checks it.
/// Dropped without ``commit()``, nothing is written and `path` is unchanged.
public final class TranscriptFileReplacement {
    private var validator: LineValidator
    private let file: FileIO.AtomicFile

    /// Starts the file with `header`.
    /// - Throws: ``TranscriptWriteError``: `invalidLine` (bad header), `cannotCreate`.
    public init(replacing path: String, header: TranscriptHeader) throws(TranscriptWriteError) {
        validator = try LineValidator(header: header, fileName: path)
        file = try FileIO.AtomicFile(replacing: path)
        try file.write(Array(Transcript(header: header, fileName: path).serialized().utf8))
    }

    /// Appends one body line.
    /// - Throws: ``TranscriptWriteError``: `invalidLine`, `writeFailed` (then nothing is written).
    public func append(_ line: TranscriptLine) throws(TranscriptWriteError) {
        var text = Array(try validator.check(line).utf8)
        text.append(0x0A)
        try file.write(text)
    }

    /// Flushes the file to disk and renames it over the path.
    /// - Throws: ``TranscriptWriteError``: `writeFailed`, `cannotRename`.
    public func commit() throws(TranscriptWriteError) {
        try file.commit()
    }
}
