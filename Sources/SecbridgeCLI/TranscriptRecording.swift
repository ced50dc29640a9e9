import ISO7816
import PCSC
import Transcript

#if canImport(Glibc)
import Glibc
#endif

/// `--record FILE` for the CLI: a transcript written as the command runs, one flushed line per event.
struct TranscriptRecording {
    let channel: any CardChannel
    let recorder: TranscriptRecorder
    let finish: () -> Void

    /// The provenance header every CLI recording carries.
    static func header(reader: String?, atr: [UInt8]?, transmissionProtocol: TransmissionProtocol?, command: String) -> TranscriptHeader {
        var header = TranscriptHeader(
            tool: "secbridge \(SecbridgeCLI.version) \(command)", origin: .recorded, date: utcTimestamp(), reader: reader,
            atr: atr, transmissionProtocol: transmissionProtocol)
        return header
    }

    static func openWriter(path: String, header: TranscriptHeader) throws(CLIError) -> TranscriptWriter {
        do {
            return try TranscriptWriter(creatingFileAt: path, header: header, replacingExisting: true)
        } catch {
            throw .failure("cannot record to '\(path)': \(error.reason)")
        }
    }

    /// Starts recording the exchanges of `inner` into `path`.
    static func start(
        path: String, inner: any CardChannel, reader: String, atr: [UInt8], command: String
    ) throws(CLIError) -> TranscriptRecording {
        let writer = try openWriter(
            path: path,
            header: header(reader: reader, atr: atr, transmissionProtocol: inner.transmissionProtocol, command: command))
        let recorder = TranscriptRecorder(sink: writer)
        let channel = RecordingChannel(wrapping: inner, recorder: recorder)
        return TranscriptRecording(channel: channel, recorder: recorder, finish: { try? writer.close() })
    }

    /// Starts a recording of reader events only (`secbridge monitor --record`).
    static func startEvents(path: String, command: String) throws(CLIError) -> EventRecording {
        let writer = try openWriter(path: path, header: header(reader: nil, atr: nil, transmissionProtocol: nil, command: command))
        return EventRecording(writer: writer, recorder: TranscriptRecorder(sink: writer))
    }
}

/// Writes ``ReaderEvent``s as transcript `event` lines.
final class EventRecording: Sendable {
    let writer: TranscriptWriter
    let recorder: TranscriptRecorder
    init(writer: TranscriptWriter, recorder: TranscriptRecorder) {
        self.writer = writer
        self.recorder = recorder
    }

    func record(_ event: ReaderEvent) {
        var attributes: [TranscriptAttribute] = []
        if let reader = event.reader { attributes.append(TranscriptAttribute("reader", reader)) }
        let kind: TranscriptEventKind
        switch event {
        case .readerAttached: kind = .readerAdded
        case .readerDetached: kind = .readerRemoved
        case .cardInserted(_, let atr):
            kind = .cardInserted
            attributes.append(TranscriptAttribute("atr", atr.hexString))
        case .cardRemoved: kind = .cardRemoved
        case .serviceLost(let error):
            kind = TranscriptEventKind(rawValue: "service-lost")
            attributes.append(TranscriptAttribute("error", error.name))
        case .serviceRestored: kind = TranscriptEventKind(rawValue: "service-restored")
        }
        try? recorder.recordEvent(kind, attributes)
    }

    func finish() { try? writer.close() }
}

/// Now as "2026-11-29T14:15:49Z".
func utcTimestamp() -> String {
    var now = time(nil)
    var parts = tm()
    gmtime_r(&now, &parts)
    func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
    return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))Z"
}
