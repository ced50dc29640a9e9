import Synchronization
import Transcript

/// A transcript sink that stops at its first failure instead of passing it on: the command keeps
/// running (a card emulation, a monitor) while its recording ends, and the failure is kept for
/// the command's exit status.
///
/// The first ``append(_:)`` that the wrapped sink refuses (`writeFailed` on a full disk, EFBIG past
/// a file-size limit, EIO; or any other ``TranscriptWriteError``) calls `onStop` once with that
/// error, and that line and every later one are dropped without an error. The wrapped
/// ``TranscriptWriter`` has already cut the file back to its last whole line, so the file keeps
/// every line written before the failure and still parses.
package final class StoppingTranscriptSink: TranscriptSink {
    private let base: any TranscriptSink
    private let stopped = Mutex<TranscriptWriteError?>(nil)
    private let onStop: @Sendable (TranscriptWriteError) -> Void

    /// - Parameters:
    ///   - base: the sink written to until it fails (usually a ``TranscriptWriter``).
    ///   - onStop: called once, with the first failure, on the thread that appended the line.
    package init(_ base: any TranscriptSink, onStop: @escaping @Sendable (TranscriptWriteError) -> Void) {
        self.base = base
        self.onStop = onStop
    }

    /// The failure that stopped the recording; nil while it runs.
    package var failure: TranscriptWriteError? { stopped.withLock { $0 } }

    /// Appends `line` to the wrapped sink while no append failed; never throws.
    package func append(_ line: TranscriptLine) throws(TranscriptWriteError) {
        // One line at a time, so that the first failure is the one reported.
        let newFailure = stopped.withLock { (failure: inout TranscriptWriteError?) -> TranscriptWriteError? in
            guard failure == nil else { return nil }
            do throws(TranscriptWriteError) {
                try base.append(line)
                return nil
            } catch {
                failure = error
                return error
            }
        }
        if let newFailure { onStop(newFailure) }
    }
}
