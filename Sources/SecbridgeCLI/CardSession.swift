import ISO7816
import PCSC
import Transcript

/// A connection to the card in the reader a command chose, with what the ISO transport needs to
/// know (card capabilities from the ATR, the reader's maximum input), and the transcript recorder
/// when `--record` was given.
package final class CardSession {
    package let reader: String
    package let handle: any PCSCConnection
    /// The channel commands use: the card handle, wrapped by the recorder with `--record`.
    package let channel: any CardChannel
    package let capabilities: CardCapabilities
    package let maxInput: Int?
    package let atr: [UInt8]
    /// The transcript recorder with `--record`, for events (a card reset) beside the exchanges.
    package let recorder: TranscriptRecorder?
    private let finish: () -> Void

    private init(
        reader: String, handle: any PCSCConnection, channel: any CardChannel, capabilities: CardCapabilities,
        maxInput: Int?, atr: [UInt8], recorder: TranscriptRecorder?, finish: @escaping () -> Void
    ) {
        self.recorder = recorder
        self.reader = reader
        self.handle = handle
        self.channel = channel
        self.capabilities = capabilities
        self.maxInput = maxInput
        self.atr = atr
        self.finish = finish
    }

    /// Chooses the reader (preferring one with a card), connects shared with T=0 or T=1, reads the
    /// ATR's card capabilities and SCARD_ATTR_MAXINPUT, and starts recording if asked.
    package static func open(
        context: any PCSCClientContext, reader argument: String?, record path: String?, command: String
    ) throws(CLIError) -> CardSession {
        let (readers, states) = try listReadersWithStates(context)
        let withCard = Set(states.filter { $0.eventFlags.contains(.present) }.map(\.readerName))
        if argument == nil && withCard.isEmpty && !readers.isEmpty {
            let listing = readers.enumerated().map { "  \($0.offset): \($0.element)" }.joined(separator: "\n")
            throw .failure("no reader has a card; place a card or tag on one of the readers:\n\(listing)")
        }
        let reader = try selectReader(argument, in: readers, preferring: { withCard.contains($0) })
        let handle: any PCSCConnection
        do {
            handle = try CallWatchdog.shared.guarding("SCardConnect") { () throws(PCSCError) in
                try context.connect(to: reader, share: .shared, protocols: .any)
            }
        } catch where error == .noSmartcard {
            throw .failure("no card in '\(reader)': \(describe(error))")
        } catch {
            throw .failure("could not connect to '\(reader)': \(describe(error))")
        }
        let atr = (try? handle.status().atr) ?? []
        let capabilities = (try? ATR(parsing: atr, requireValidChecksum: false))?.cardCapabilities ?? .shortOnly
        let maxInput = try? handle.maxInput()
        var channel: any CardChannel = GuardedChannel(handle)
        var finish: () -> Void = {}
        var recorder: TranscriptRecorder?
        if let path {
            let recording = try TranscriptRecording.start(
                path: path, inner: channel, reader: reader, atr: atr, command: command)
            channel = recording.channel
            finish = recording.finish
            recorder = recording.recorder
        }
        return CardSession(
            reader: reader, handle: handle, channel: channel, capabilities: capabilities,
            maxInput: maxInput.flatMap { $0 > 0 ? $0 : nil }, atr: atr, recorder: recorder, finish: finish)
    }

    /// Ends recording and disconnects, leaving the card as it is.
    package func close() {
        finish()
        try? handle.disconnect(.leave)
    }
}
