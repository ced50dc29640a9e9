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
}

extension Console {
    public var inputIsTerminal: Bool { false }
    public var inputMayWait: Bool { false }
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
    public func readLine() -> String? { Swift.readLine() }
    public var inputIsTerminal: Bool { isatty(STDIN_FILENO) == 1 }
    public var inputMayWait: Bool {
        var descriptor = pollfd(fd: STDIN_FILENO, events: Int16(POLLIN), revents: 0)
        return poll(&descriptor, 1, 0) == 0
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

    /// Writes what is buffered.
    package func flush() {
        let pending = lock.withLock { take() }
        if !pending.isEmpty { inner.out(String(decoding: pending, as: UTF8.self)) }
    }
}
