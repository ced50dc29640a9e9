import Synchronization
import Transcript

#if canImport(Glibc)
import Glibc
#endif

/// A transcript sink that stops at its first failure instead of passing it on: the command keeps
/// running (a card write, an emulation, a monitor, a replay) while its recording ends, and the
/// failure is kept for the command's exit status.
///
/// The first ``append(_:)`` that the wrapped sink refuses (`writeFailed` on a full disk, EFBIG past
/// a file-size limit, EIO; or any other ``TranscriptWriteError``) calls `onStop` once with that
/// error, and that line and every later one are dropped without an error. The wrapped
/// ``TranscriptWriter`` has already cut the file back to its last whole line, so the file keeps
/// every line written before the failure and still parses. ``finish()`` then ends the file with
/// a comment saying that it is incomplete and why (`; incomplete: …`).
///
/// Every `--record` file of the CLI is one of these, opened through ``RecordingLedger`` (the one
/// rule of docs/faults.md, "A recording that cannot be written").
package final class StoppingTranscriptSink: TranscriptSink {
    private let base: any TranscriptSink
    private let stopped = Mutex<TranscriptWriteError?>(nil)
    private let finished = Mutex(false)
    private let onStop: @Sendable (TranscriptWriteError) -> Void
    /// The file written, when the base is a ``TranscriptWriter``.
    package let writer: TranscriptWriter?
    /// What the command goes on doing once the recording stopped, for the closing line
    /// (`the card write`, `the emulation`).
    package let work: String
    /// Whether the command says the failure itself (its own words and exit status), so that
    /// ``RecordingLedger/finishAll()`` does not say it again.
    package let reportedByCommand: Bool
    /// Whether the work stops with the recording (`monitor`: its events are the work), for the
    /// closing line: `…; monitoring stopped with it` instead of `…; WORK went on, unrecorded`.
    package let stopsWork: Bool

    /// - Parameters:
    ///   - base: the sink written to until it fails (usually a ``TranscriptWriter``).
    ///   - work: what goes on unrecorded after a failure, for the closing line.
    ///   - reportedByCommand: true when the command reports the failure itself.
    ///   - stopsWork: true when the command stops once its recording stopped.
    ///   - onStop: called once, with the first failure, on the thread that appended the line.
    package init(
        _ base: any TranscriptSink, work: String, reportedByCommand: Bool = false, stopsWork: Bool = false,
        onStop: @escaping @Sendable (TranscriptWriteError) -> Void
    ) {
        self.base = base
        self.writer = base as? TranscriptWriter
        self.work = work
        self.reportedByCommand = reportedByCommand
        self.stopsWork = stopsWork
        self.onStop = onStop
    }

    /// A sink over `base` for "the command", said by `onStop` (no report of its own at the end).
    package convenience init(_ base: any TranscriptSink, onStop: @escaping @Sendable (TranscriptWriteError) -> Void) {
        self.init(base, work: "the command", reportedByCommand: false, onStop: onStop)
    }

    /// The failure that stopped the recording; nil while it runs.
    package var failure: TranscriptWriteError? { stopped.withLock { $0 } }

    /// The path of the file written ("" for a sink in memory).
    package var path: String { writer?.path ?? "" }

    /// Appends `line` to the wrapped sink while no append failed; never throws.
    package func append(_ line: TranscriptLine) throws(TranscriptWriteError) {
        pass { (base) throws(TranscriptWriteError) in try base.append(line) }
    }

    /// Appends `record` to the wrapped sink (a ``TranscriptWriter`` writes an exchange straight from
    /// its values) while no append failed; never throws.
    package func appendRecord(_ record: TranscriptRecord) throws(TranscriptWriteError) {
        pass { (base) throws(TranscriptWriteError) in try base.appendRecord(record) }
    }

    private func pass(_ body: (any TranscriptSink) throws(TranscriptWriteError) -> Void) {
        // One line at a time, so that the first failure is the one reported.
        let newFailure = stopped.withLock { (failure: inout TranscriptWriteError?) -> TranscriptWriteError? in
            guard failure == nil else { return nil }
            do throws(TranscriptWriteError) {
                try body(base)
                return nil
            } catch {
                failure = error
                return error
            }
        }
        if let newFailure { onStop(newFailure) }
    }

    /// `No space left on device (errno 28)`: the system's words for the failure, else its reason.
    package static func cause(_ error: TranscriptWriteError) -> String {
        error.errorNumber.map { FileIO.describeError($0) } ?? error.reason
    }

    /// Ends the recording (once; later calls return the same): a stopped recording gets its
    /// closing line `; incomplete: …` (written into the room the writer keeps for it), then the
    /// file is closed. A deferred write error that close(2) reports stops the recording too.
    /// - Returns: the failure that stopped the recording; nil when it is complete.
    @discardableResult
    package func finish() -> TranscriptWriteError? {
        let first = finished.withLock { (done: inout Bool) -> Bool in
            defer { done = true }
            return !done
        }
        guard first, let writer else { return failure }
        if let failure {
            try? writer.appendClosingComment(
                "incomplete: the recording stopped here: writing this file failed (\(Self.cause(failure))); "
                    + (stopsWork ? "\(work) stopped with it" : "\(work) went on, unrecorded"))
        }
        do throws(TranscriptWriteError) {
            try writer.close()
        } catch {
            stopped.withLock { if $0 == nil { $0 = error } }
        }
        return failure
    }
}

/// Every `--record` transcript one command run writes, under one rule (docs/faults.md, "A
/// recording that cannot be written"): a write error stops the recording (said once, naming the
/// file and the errno), the command finishes its device work, the file ends with a line saying
/// it is incomplete and why, and the command exits non-zero (``Root``'s dispatch asks
/// ``finishAll()`` when the command returns).
package final class RecordingLedger: Sendable {
    private let console: any Console
    private let sinks = Mutex<[StoppingTranscriptSink]>([])

    /// Failures are said on `console`'s standard error.
    package init(console: any Console) {
        self.console = console
    }

    /// Creates the transcript `path` (never replacing a file) with `header`, as a sink that stops
    /// at its first failed write.
    /// - Parameters:
    ///   - work: what the command goes on doing without its recording (`the card write`).
    ///   - onStop: the command's own words for the failure; by default
    ///     `secbridge: error: cannot record to 'FILE': cannot append to FILE: … (errno N); …; the recording stopped, WORK goes on`.
    ///   - reportedByCommand: true when the command says the failure itself at its end (its own
    ///     words and exit status); ``finishAll()`` then only closes the file.
    ///   - stopsWork: true when the command stops with its recording (the closing line says so).
    /// - Throws: `CLIError.failure` when the file cannot be created.
    package func open(
        path: String, header: TranscriptHeader, work: String, reportedByCommand: Bool = false, stopsWork: Bool = false,
        onStop: (@Sendable (TranscriptWriteError) -> Void)? = nil
    ) throws(CLIError) -> StoppingTranscriptSink {
        let writer = try TranscriptRecording.openWriter(path: path, header: header)
        let console = console
        let sink = StoppingTranscriptSink(
            writer, work: work, reportedByCommand: reportedByCommand, stopsWork: stopsWork, onStop: onStop ?? { error in
            console.err("secbridge: error: cannot record to '\(path)': \(error.reason); the recording stopped, \(work) goes on\n")
        })
        sinks.withLock { $0.append(sink) }
        return sink
    }

    /// Finishes every recording opened (``StoppingTranscriptSink/finish()``), and returns the
    /// messages for those that are incomplete and that the command did not report itself.
    package func finishAll() -> [String] {
        let all = sinks.withLock { $0 }
        return all.compactMap { sink in
            guard let failure = sink.finish(), !sink.reportedByCommand else { return nil }
            return "the recording to '\(sink.path)' is incomplete: writing it failed (\(StoppingTranscriptSink.cause(failure))); "
                + "it keeps every line before and ends with a line saying so"
        }
    }
}

/// The room a recording whose size is known beforehand needs, checked before the command starts
/// (`write-dump --record`: a card write is never begun when its transcript cannot be kept).
package enum RecordingRoom {
    /// The bytes an unprivileged user may still write (statvfs(3): `f_bavail` × `f_frsize`) on the
    /// file system that will hold `path`, and that file system's mount point (the last directory
    /// up from `path`'s on the same device). nil when the directory cannot be examined.
    package static func available(forFileAt path: String) -> (bytes: UInt64, mount: String)? {
        let slash = path.lastIndex(of: "/")
        var directory = slash.map { String(path[..<$0]) } ?? "."
        if directory.isEmpty { directory = "/" }
        var info = statvfs()
        guard statvfs(directory, &info) == 0 else { return nil }
        return (UInt64(info.f_bavail) * UInt64(info.f_frsize), mountPoint(of: directory))
    }

    /// The mount point of the file system holding `directory`: up the tree while the device stays
    /// the same.
    static func mountPoint(of directory: String) -> String {
        var current = directory
        if !current.hasPrefix("/") {
            var buffer = [CChar](repeating: 0, count: 4096)
            guard getcwd(&buffer, buffer.count) != nil else { return directory }
            let cwd = String(cString: buffer)
            current = (cwd == "/" ? "" : cwd) + "/" + directory
        }
        var here = stat()
        guard stat(current, &here) == 0 else { return directory }
        while current != "/" {
            let parent = current.lastIndex(of: "/").map { $0 == current.startIndex ? "/" : String(current[..<$0]) } ?? "/"
            var up = stat()
            guard stat(parent, &up) == 0, up.st_dev == here.st_dev else { return current }
            current = parent
        }
        return "/"
    }

    /// The refusal when `available` bytes are fewer than `needed`: names the file, the disk (its
    /// mount point) and both sizes; nil when there is room.
    package static func problem(path: String, needed: UInt64, available: UInt64, mount: String, command: String) -> String? {
        guard available < needed else { return nil }
        func kib(_ bytes: UInt64) -> String { "\((bytes + 1023) / 1024) KiB" }
        return "\(command) \(path): the disk that would hold it (the file system mounted at \(mount)) has \(kib(available)) free, "
            + "and the recording needs up to \(kib(needed)): free some space there or record elsewhere; nothing was sent to the card"
    }

    /// ``problem(path:needed:available:mount:command:)`` for the disk of `path` as it is now.
    /// - Throws: `CLIError.failure` with the refusal.
    package static func check(path: String, needed: UInt64, command: String) throws(CLIError) {
        guard let (available, mount) = available(forFileAt: path) else { return }  // an unreadable directory: the create says why
        if let problem = problem(path: path, needed: needed, available: available, mount: mount, command: command) {
            throw .failure(problem)
        }
    }
}
