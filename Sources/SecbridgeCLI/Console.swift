import Transcript

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Where a command writes: standard output for results, standard error for errors and progress.
/// Tests inject a ``CapturingConsole``.
public protocol Console: AnyObject, Sendable {
    /// Writes `text` as it is to standard output (results); the caller adds the line feeds.
    func out(_ text: String)
    /// Writes `text` as it is to standard error (errors, progress, prompts).
    func err(_ text: String)
    /// Reads one line from standard input (for prompts); nil at end of input.
    func readLine() -> String?
    /// Whether standard input is a terminal (an interactive `secbridge shell`); false by default.
    var inputIsTerminal: Bool { get }
    /// Whether reading a line now could wait for input (nothing readable on standard input yet):
    /// buffered output is written first, so a program driving the tool through a pipe sees the
    /// answer to one line before it sends the next. False by default.
    var inputMayWait: Bool { get }
    /// Whether a whole line (or the end of input) can be read now or arrives within `bound`: false
    /// when standard input gave no line within it (a pipe whose writer paused). What arrives is
    /// kept for ``readLine()``; nothing is lost. True by default (input that never waits).
    func waitForLine(upTo bound: Duration) -> Bool
    /// Why standard input ended, when a read failed rather than reaching its end (a directory
    /// given as standard input: "Is a directory (errno 21)"); nil at a true end. Nil by default.
    var inputFailure: String? { get }
}

extension Console {
    public var inputIsTerminal: Bool { false }
    public var inputMayWait: Bool { false }
    public func waitForLine(upTo bound: Duration) -> Bool { true }
    public var inputFailure: String? { nil }
}

/// The process's standard streams, unbuffered per line so a pipe sees every event as it happens.
public final class StandardConsole: Console, @unchecked Sendable {
    private let lock = ConsoleLock()
    private var failedErrno: Int32?

    /// The process's standard input, output and error.
    public init() {}

    /// The error that stopped standard output (e.g. ENOSPC on /dev/full, EPIPE), if any:
    /// the tool then exits 1 instead of reporting success with output lost.
    public var outputFailure: String? {
        lock.withLock { failedErrno.map { String(cString: strerror($0)) + " (errno \($0))" } }
    }
    /// Writes all of `text` to file descriptor 1, retrying short writes; a failure is kept for
    /// ``outputFailure``.
    public func out(_ text: String) { writeAll(STDOUT_FILENO, text) }
    /// Writes all of `text` to file descriptor 2, retrying short writes.
    public func err(_ text: String) { writeAll(STDERR_FILENO, text) }

    /// Writes every byte with write(2), so output is never buffered and never interleaved mid-line.
    private func writeAll(_ descriptor: Int32, _ text: String) {
        var text = text
        text.withUTF8 { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 {
                    let error = errno
                    if error == EINTR { continue }
                    if descriptor == STDOUT_FILENO { lock.withLock { if failedErrno == nil { failedErrno = error } } }
                    return
                }
                offset += written
            }
        }
    }
    /// One line of standard input without its line feed (`InputLineReader.standardInput`).
    public func readLine() -> String? { InputLineReader.standardInput.readLine() }
    public var inputIsTerminal: Bool { isatty(STDIN_FILENO) == 1 }
    public var inputMayWait: Bool { InputLineReader.standardInput.mayWait }
    public func waitForLine(upTo bound: Duration) -> Bool { InputLineReader.standardInput.waitForLine(upTo: bound) }
    public var inputFailure: String? { InputLineReader.standardInput.readFailure }
}

/// The lines of a file descriptor, read with read(2) into a buffer of its own, so that whether a
/// line is already at hand is known exactly (stdio's buffer would hide lines it holds from poll(2)).
///
/// A line ends at a line feed (0A), which is removed with a carriage return (0D) before it, as
/// `Swift.readLine()` does; bytes that are not UTF-8 are replaced (U+FFFD). The last line may end
/// without a line feed. A descriptor in non-blocking mode (O_NONBLOCK, as the program that started
/// the tool may leave a pipe) is waited on in poll(2) when it has nothing (EAGAIN), as a blocking
/// one would be; any other read error (but EINTR) ends the input, kept for ``readFailure``. One reader per
/// descriptor: ``standardInput`` for the process's standard input.
package final class InputLineReader: @unchecked Sendable {
    // @unchecked: the buffer and its indices are guarded by `lock`.
    /// The process's standard input (descriptor 0).
    package static let standardInput = InputLineReader(descriptor: STDIN_FILENO)

    private let descriptor: Int32
    private let lock = ConsoleLock()
    private var buffer: [UInt8] = []
    /// Where the unread bytes start, and how far they are known to hold no line feed.
    private var start = 0
    private var scanned = 0
    private var ended = false
    /// The errno of the read that failed and ended the input, if one did.
    private var failedErrno: Int32?
    /// Where read(2) puts what it reads (at most 64 KiB at once) before it joins `buffer`.
    private var chunk = [UInt8](repeating: 0, count: 64 << 10)

    /// Reads `descriptor`, which stays open (the caller's).
    package init(descriptor: Int32) { self.descriptor = descriptor }

    /// The next line; nil at the end of input. Blocks in read(2) until a line is whole.
    package func readLine() -> String? {
        lock.withLock {
            while true {
                if let end = lineEnd() {
                    var last = end
                    if last > start && buffer[last - 1] == 0x0D { last -= 1 }
                    let line = String(decoding: buffer[start..<last], as: UTF8.self)
                    consume(through: end + 1)
                    return line
                }
                if ended {
                    guard start < buffer.count else { return nil }
                    let line = String(decoding: buffer[start...], as: UTF8.self)
                    consume(through: buffer.count)
                    return line
                }
                fill()
            }
        }
    }

    /// The bytes read and not yet handed out as lines, taken out of the reader (which then holds
    /// none): for a caller that reads the descriptor itself from here on, so that what this reader
    /// read ahead is not lost (`simulate`'s control requests after `--tag-key -` took one line).
    package func takeUnread() -> [UInt8] {
        lock.withLock {
            let unread = Array(buffer[start...])
            buffer.removeAll()
            start = 0
            scanned = 0
            return unread
        }
    }

    /// Why the input ended, when a read(2) failed (EISDIR for a directory as standard input,
    /// EBADF for a closed descriptor): "Is a directory (errno 21)"; nil otherwise.
    package var readFailure: String? {
        lock.withLock { failedErrno.map { String(cString: strerror($0)) + " (errno \($0))" } }
    }

    /// Whether reading a line now could wait: no whole line buffered and nothing readable
    /// (poll(2) without waiting).
    package var mayWait: Bool {
        lock.withLock {
            guard lineEnd() == nil && !ended else { return false }
            return ready(timeoutMilliseconds: 0) == false
        }
    }

    /// Whether a whole line (or the end of input) is at hand now or arrives within `bound`: waits
    /// in poll(2) on the descriptor, at most `bound` in all, and reads what comes (a line may come
    /// in pieces). False when the bound passed without a whole line; what came is kept.
    package func waitForLine(upTo bound: Duration) -> Bool {
        lock.withLock {
            let deadline = ContinuousClock.now + bound
            while lineEnd() == nil && !ended {
                let left = deadline - ContinuousClock.now
                guard left > .zero else { return false }
                // Rounded up to whole milliseconds, so a wait never ends before the bound.
                let (seconds, attoseconds) = left.components
                let milliseconds = seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
                switch ready(timeoutMilliseconds: Int32(clamping: milliseconds)) {
                case true: fill()  // readable: read(2) returns at once
                case false: return false
                case nil: continue  // interrupted by a signal: wait what is left
                }
            }
            return true
        }
    }

    /// poll(2) for input: true readable (or hung up, or in error: read(2) then says which), false
    /// none within the timeout, nil interrupted (EINTR).
    private func ready(timeoutMilliseconds: Int32) -> Bool? {
        var watched = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        let count = poll(&watched, 1, timeoutMilliseconds)
        if count < 0 { return errno == EINTR ? nil : true }
        return count > 0
    }

    /// The index of the next line feed in the unread bytes, scanning only what was not scanned.
    private func lineEnd() -> Int? {
        if let found = buffer[scanned...].firstIndex(of: 0x0A) { return found }
        scanned = buffer.count
        return nil
    }

    /// One read(2) of up to 64 KiB; 0 bytes or an error (but EINTR and EAGAIN) ends the input.
    private func fill() {
        if start > 0 && start * 2 >= buffer.count {
            buffer.removeSubrange(0..<start)
            scanned -= start
            start = 0
        }
        var count: Int
        while true {
            count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress!, $0.count) }
            guard count < 0 else { break }
            let error = errno
            if error == EINTR { continue }
            // Non-blocking and empty: no end of input; wait for some as read(2) would block.
            if error == EAGAIN || error == EWOULDBLOCK {
                _ = ready(timeoutMilliseconds: -1)
                continue
            }
            failedErrno = error
            break
        }
        guard count > 0 else {
            ended = true
            return
        }
        buffer.append(contentsOf: chunk[..<count])
    }

    private func consume(through end: Int) {
        start = end
        scanned = max(scanned, end)
    }
}

/// A console that keeps what was written, for tests.
public final class CapturingConsole: Console, @unchecked Sendable {
    private let lock = ConsoleLock()
    private var outText = ""
    private var errText = ""
    private var input: [String]

    /// A console whose standard input gives the lines of `input`, one per ``readLine()``, then nil.
    public init(input: [String] = []) { self.input = input }

    /// Everything written to standard output so far.
    public var standardOutput: String { lock.withLock { outText } }
    /// Everything written to standard error so far.
    public var standardError: String { lock.withLock { errText } }

    /// Appends `text` to ``standardOutput``.
    public func out(_ text: String) { lock.withLock { outText += text } }
    /// Appends `text` to ``standardError``.
    public func err(_ text: String) { lock.withLock { errText += text } }
    public func readLine() -> String? {
        lock.withLock { input.isEmpty ? nil : input.removeFirst() }
    }
}

package final class ConsoleLock: @unchecked Sendable {
    private var mutex = pthread_mutex_t()
    package init() { pthread_mutex_init(&mutex, nil) }
    package func withLock<T>(_ body: () -> T) -> T {
        pthread_mutex_lock(&mutex)
        defer { pthread_mutex_unlock(&mutex) }
        return body()
    }
}

/// The value of an environment variable.
package func environmentValue(_ name: String) -> String? {
    guard let value = getenv(name) else { return nil }
    return String(cString: value)
}

/// Passes everything to another console and notes whether standard output was written.
package final class OutputTrackingConsole: Console, @unchecked Sendable {
    // @unchecked: `written` is guarded by `lock`.
    private let inner: any Console
    private let lock = ConsoleLock()
    private var written = false

    package init(_ inner: any Console) { self.inner = inner }

    /// Whether anything went to standard output.
    package var wroteOutput: Bool { lock.withLock { written } }

    package func out(_ text: String) {
        lock.withLock { written = true }
        inner.out(text)
    }
    package func err(_ text: String) { inner.err(text) }
    package func readLine() -> String? { inner.readLine() }
    package var inputIsTerminal: Bool { inner.inputIsTerminal }
    package var inputMayWait: Bool { inner.inputMayWait }
    package func waitForLine(upTo bound: Duration) -> Bool { inner.waitForLine(upTo: bound) }
    package var inputFailure: String? { inner.inputFailure }
}

/// Keeps standard output in memory and passes it on in large writes: when 64 KiB have gathered,
/// before anything goes to standard error, before a line is read that may have to wait for input
/// (at a prompt, or a program driving the tool through a pipe), and at
/// ``flush()`` (a command's end). `run` and `shell` use it, so a script's output costs a few
/// write(2) calls rather than three per APDU.
package final class BufferedConsole: Console, @unchecked Sendable {
    // @unchecked: `buffer` is guarded by `lock`.
    private let inner: any Console
    private let lock = ConsoleLock()
    /// UTF-8 bytes, written through a pointer (``LineBytes``): appending a line is a copy of its
    /// bytes, with no String or Array growth rules. Only touched with `lock` held, so the run-time
    /// exclusivity check is left out.
    @exclusivity(unchecked) private var buffer = LineBytes(capacity: BufferedConsole.limit + 4096)
    private static let limit = 64 << 10

    package init(_ inner: any Console) { self.inner = inner }

    package func out(_ text: String) {
        var text = text
        let full: [UInt8]? = text.withUTF8 { bytes in
            lock.withLock {
                buffer.reserve(bytes.count)
                buffer.append(bytes)
                return buffer.count >= Self.limit ? take() : nil
            }
        }
        if let full { inner.out(String(decoding: full, as: UTF8.self)) }
    }

    /// `text` and a line feed, as `out(text + "\n")` without building that string.
    package func outLine(_ text: String) {
        var text = text
        let full: [UInt8]? = text.withUTF8 { bytes in
            lock.withLock {
                buffer.reserve(bytes.count + 1)
                buffer.append(bytes)
                buffer.append(0x0A)
                return buffer.count >= Self.limit ? take() : nil
            }
        }
        if let full { inner.out(String(decoding: full, as: UTF8.self)) }
    }

    /// One line written by `build` straight into the buffer (no string made), then a line feed;
    /// `build` reserves the room it writes (``LineBytes/reserve(_:)``).
    package func outLine(_ build: (inout LineBytes) -> Void) {
        let full: [UInt8]? = lock.withLock {
            build(&buffer)
            buffer.reserve(1)
            buffer.append(0x0A)
            return buffer.count >= Self.limit ? take() : nil
        }
        if let full { inner.out(String(decoding: full, as: UTF8.self)) }
    }

    /// The buffered bytes, leaving the buffer empty (the lock held).
    private func take() -> [UInt8] {
        let taken = buffer.withBytes { Array($0) }
        buffer.count = 0
        return taken
    }
    package func err(_ text: String) {
        flush()
        inner.err(text)
    }
    package func readLine() -> String? {
        if inner.inputMayWait { flush() }
        return inner.readLine()
    }
    package var inputIsTerminal: Bool { inner.inputIsTerminal }
    package var inputMayWait: Bool { inner.inputMayWait }
    package var inputFailure: String? { inner.inputFailure }
    /// Writes what is buffered first when the wait may be long, as ``readLine()`` does.
    package func waitForLine(upTo bound: Duration) -> Bool {
        if inner.inputMayWait { flush() }
        return inner.waitForLine(upTo: bound)
    }

    /// Writes what is buffered.
    package func flush() {
        let pending = lock.withLock { take() }
        if !pending.isEmpty { inner.out(String(decoding: pending, as: UTF8.self)) }
    }
}
