import ISO7816
import PCSC
import Synchronization
import Transcript

#if canImport(Glibc)
import Glibc
#endif

/// `--record FILE` for the CLI: a transcript written as the command runs, one flushed line per event.
package struct TranscriptRecording {
    package let channel: any CardChannel
    package let recorder: TranscriptRecorder
    package let finish: () -> Void

    /// The provenance header every CLI recording carries.
    package static func header(reader: String?, atr: [UInt8]?, transmissionProtocol: TransmissionProtocol?, command: String) -> TranscriptHeader {
        let header = TranscriptHeader(
            tool: "secbridge \(SecbridgeCLI.version) \(command)", origin: .recorded, date: utcTimestamp(), reader: reader,
            atr: atr, transmissionProtocol: transmissionProtocol)
        return header
    }

    package static func openWriter(path: String, header: TranscriptHeader) throws(CLIError) -> TranscriptWriter {
        do {
            // An existing file is never replaced: it may be a recording (or the very script or
            // transcript the command reads), and nothing recorded is ever lost.
            return try TranscriptWriter(creatingFileAt: path, header: header, replacingExisting: false)
        } catch {
            throw .failure("cannot record to '\(path)': \(error.reason)")
        }
    }

    /// Starts recording the exchanges of `inner` into `path`, a file of `recordings`: a write
    /// failure stops the recording, never the exchanges (``StoppingTranscriptSink``).
    package static func start(
        path: String, inner: any CardChannel, reader: String, atr: [UInt8], command: String, recordings: RecordingLedger,
        work: String = "the command"
    ) throws(CLIError) -> TranscriptRecording {
        let sink = try recordings.open(
            path: path,
            header: header(reader: reader, atr: atr, transmissionProtocol: inner.transmissionProtocol, command: command),
            work: work)
        let recorder = TranscriptRecorder(sink: sink)
        let channel = RecordingChannel(wrapping: inner, recorder: recorder)
        return TranscriptRecording(channel: channel, recorder: recorder, finish: { sink.finish() })
    }

    /// Starts a recording of reader events only (`monitor --record`, `readers --record`).
    /// - Parameter stopsCommand: true for `monitor`, whose events are its work: the first event the
    ///   file cannot take ends the monitor, which says so itself (the closing line: `…; monitoring
    ///   stopped with it`). False for `readers`: the listing goes on, and the run's ledger says the
    ///   recording is incomplete and makes the exit status non-zero, as for every other writer.
    package static func startEvents(
        path: String, command: String, console: any Console, recordings: RecordingLedger, stopsCommand: Bool
    ) throws(CLIError) -> EventRecording {
        let header = header(reader: nil, atr: nil, transmissionProtocol: nil, command: command)
        guard stopsCommand else {
            // The ledger's own words at the failure (`…; the recording stopped, the listing goes on`).
            let sink = try recordings.open(path: path, header: header, work: "the listing")
            return EventRecording(sink: sink, recorder: TranscriptRecorder(sink: sink), failure: { _ in })
        }
        let failure: @Sendable (TranscriptWriteError) -> Void = { error in
            console.err("secbridge: error: cannot record to '\(path)': \(error.reason)\n")
        }
        // The monitor stops on a failure and says so itself.
        let sink = try recordings.open(
            path: path, header: header, work: "monitoring", reportedByCommand: true, stopsWork: true, onStop: { _ in })
        return EventRecording(sink: sink, recorder: TranscriptRecorder(sink: sink), failure: failure)
    }
}

/// Writes ``ReaderEvent``s as transcript `event` lines, until the first line that cannot be
/// written (a full disk): that failure is reported once through `failure`, kept in
/// ``stoppedBy``, and every later event is no longer written (the file keeps every whole line
/// before; ``record(_:)`` returns false from then on so that the command can stop).
package final class EventRecording: Sendable {
    package let sink: StoppingTranscriptSink
    package let recorder: TranscriptRecorder
    package let failure: @Sendable (TranscriptWriteError) -> Void
    private let stopped = Mutex<TranscriptWriteError?>(nil)
    package init(sink: StoppingTranscriptSink, recorder: TranscriptRecorder, failure: @escaping @Sendable (TranscriptWriteError) -> Void) {
        self.sink = sink
        self.recorder = recorder
        self.failure = failure
    }

    /// The write failure that stopped the recording; nil while it runs.
    package var stoppedBy: TranscriptWriteError? { stopped.withLock { $0 } }

    /// The event kinds `monitor --record` writes for ``ReaderEvent/readerUnavailable(reader:)`` and
    /// ``ReaderEvent/readerAvailable(reader:)``: `x-` extensions, which every transcript reader keeps.
    package static let readerUnavailableKind = TranscriptEventKind(rawValue: "x-reader-unavailable")
    package static let readerAvailableKind = TranscriptEventKind(rawValue: "x-reader-available")

    /// Writes `event`; returns false when it was not written (this time or earlier).
    @discardableResult
    package func record(_ event: ReaderEvent) -> Bool {
        guard stoppedBy == nil else { return false }
        let kind: TranscriptEventKind
        let attributes: [TranscriptAttribute]
        switch event {
        case .readerAttached(let reader):
            (kind, attributes) = (.readerAdded, [TranscriptAttribute("name", reader)])
        case .readerDetached(let reader):
            (kind, attributes) = (.readerRemoved, [TranscriptAttribute("name", reader)])
        case .cardInserted(let reader, let atr):
            (kind, attributes) = (.cardInserted, [TranscriptAttribute("reader", reader), TranscriptAttribute("atr", atr.hexString)])
        case .cardRemoved(let reader):
            (kind, attributes) = (.cardRemoved, [TranscriptAttribute("reader", reader)])
        case .readerUnavailable(let reader):
            // Format version 1 has no kind for it: an `x-` extension kind (Fixtures/README.md).
            (kind, attributes) = (Self.readerUnavailableKind, [TranscriptAttribute("name", reader)])
        case .readerAvailable(let reader):
            (kind, attributes) = (Self.readerAvailableKind, [TranscriptAttribute("name", reader)])
        case .serviceLost(let error):
            (kind, attributes) = (.serviceLost, [TranscriptAttribute("error", error.name)])
        case .serviceRestored:
            (kind, attributes) = (.serviceRestored, [])
        }
        var problem: TranscriptWriteError?
        do {
            try recorder.recordEvent(kind, attributes)
        } catch {
            problem = error
        }
        // The sink stops at its first failed write without throwing.
        guard let error = problem ?? sink.failure else { return true }
        // The file can no longer be written: said once, and the caller stops rather than
        // leave a silent hole in the file.
        stopped.withLock { $0 = error }
        failure(error)
        return false
    }

    /// Closes the file; a stopped recording ends with its `; incomplete: …` line.
    package func finish() { sink.finish() }
}

/// Now as "2026-11-29T14:15:49Z".
package func utcTimestamp() -> String {
    var now = time(nil)
    var parts = tm()
    gmtime_r(&now, &parts)
    func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
    return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))Z"
}
