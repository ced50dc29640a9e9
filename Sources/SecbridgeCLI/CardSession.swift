import ISO7816
import PCSC
import Transcript

/// `--wait SECONDS`: waits (SCardGetStatusChange, at most `limit`) until a card is present in the
/// reader `argument` selects, or in any reader without `--reader`; returns the readers and their
/// states then. The corresponding PC/SC function is SCardGetStatusChange, as pcsc-tools' scriptor
/// and pyscard's `CardRequest(timeout=…)` wait.
/// - Throws: `CLIError.failure` naming the wait when no card came in time.
package func waitForCard(
    context: any PCSCClientContext, reader argument: String?, upTo limit: Duration
) throws(CLIError) -> (readers: [String], states: [ReaderState]) {
    let deadline = ContinuousClock.now + limit
    var chosen: String?
    while true {  // bounded by the deadline
        let readers = try listReaders(context)
        var watched = readers
        if let argument {
            chosen = try selectReader(argument, in: readers)
            watched = [chosen!]
        }
        // The PnP entry wakes the wait when readers come or go, so one plugged in is watched too.
        var states = watched.map { ReaderState(readerName: $0) } + [ReaderState(readerName: ReaderState.pnpNotification)]
        do throws(PCSCError) {
            _ = try CallWatchdog.shared.guarding("SCardGetStatusChange") { () throws(PCSCError) in
                try context.getStatusChange(&states, timeout: .zero)
            }
            let left = deadline - ContinuousClock.now
            if !states.contains(where: \.hasCard), left > .zero {
                for index in states.indices { states[index].acknowledge() }
                _ = try CallWatchdog.shared.guarding("SCardGetStatusChange") { () throws(PCSCError) in
                    try context.getStatusChange(&states, timeout: min(left, .seconds(30)))
                }
            }
        } catch where error == .timeout {
            // No change within the wait: checked against the deadline below.
        } catch {
            throw .failure("waiting for a card failed: \(describe(error))")
        }
        if states.contains(where: { $0.readerName != ReaderState.pnpNotification && $0.hasCard }) {
            return try listReadersWithStates(context)
        }
        if ContinuousClock.now >= deadline { break }
    }
    throw .failure("no card came to \(chosen.map { "'\($0)'" } ?? "any reader") within \(secondsText(limit)) s (--wait); place the card or tag on the reader")
}

/// `duration` in seconds for a message, to the millisecond and at least 1 ms: "2", "0.2".
package func secondsText(_ duration: Duration) -> String {
    let milliseconds = max(1, duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000)
    return milliseconds % 1000 == 0 ? "\(milliseconds / 1000)" : "\(Double(milliseconds) / 1000)"
}

/// The words for a failed exchange that met a card change, or nil when `code` is not one: a card
/// reset by another program (SCARD_W_RESET_CARD: its state is lost), or a card removed during the
/// exchange (SCARD_W_REMOVED_CARD, or SCARD_E_NOT_TRANSACTED / SCARD_E_NO_SMARTCARD when
/// `cardIsGone` says the reader has lost it). `again` names what to run again ("sequence", "read");
/// `removal` says when the card went ("during the exchange"; "" when the caller's words say it).
package func cardChange(
    _ code: UInt32, reader: String, cardIsGone: () -> Bool, recorded: Bool, again: String,
    removal: String = "during the exchange"
) -> String? {
    let kept = "the exchanges before it are shown" + (recorded ? " and recorded" : "")
    let name = PCSCError(code: code).name
    if code == PCSCError.resetCard.code {
        return "the card was reset by another program (\(name)): its state is lost (the selected application, a verified PIN, an open secure channel); \(kept). Run the \(again) again from the start (its SELECT)"
    }
    let mayHaveLeft = [PCSCError.notTransacted.code, PCSCError.noSmartcard.code].contains(code)
    if code == PCSCError.removedCard.code || mayHaveLeft && cardIsGone() {
        return "the card was removed\(removal.isEmpty ? "" : " " + removal); \(kept). Hold the card on the reader and run the \(again) again (\(name) from the reader)"
    }
    return nil
}

/// Whether `reader` shows no card now, or loses it within pcscd's next presence poll (at most
/// 1 s of SCardGetStatusChange): how a command learns that a failed exchange met a card being
/// taken away (pcscd polls presence every 400 ms, PCSCLITE_STATUS_POLL_RATE in pcsc-lite's pcscd.h).
package func cardLeft(_ reader: String, context: any PCSCClientContext) -> Bool {
    var states = [ReaderState(readerName: reader)]
    do {
        _ = try CallWatchdog.shared.guarding("SCardGetStatusChange") { () throws(PCSCError) in
            try context.getStatusChange(&states, timeout: .zero)
        }
        if !states[0].eventFlags.contains(.present) { return true }
        states[0].acknowledge()
        _ = try CallWatchdog.shared.guarding("SCardGetStatusChange") { () throws(PCSCError) in
            try context.getStatusChange(&states, timeout: .seconds(1))
        }
        return !states[0].eventFlags.contains(.present)
    } catch {
        return false
    }
}

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
    private let context: any PCSCClientContext

    private init(
        reader: String, handle: any PCSCConnection, channel: any CardChannel, capabilities: CardCapabilities,
        maxInput: Int?, atr: [UInt8], recorder: TranscriptRecorder?, context: any PCSCClientContext, finish: @escaping () -> Void
    ) {
        self.context = context
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
    /// - Parameters:
    ///   - wait: with `--wait SECONDS`, how long to wait for a card when none is there.
    ///   - recordings: where the `--record` file is opened (a write failure stops the recording,
    ///     never the card's exchanges); required with `path`.
    ///   - work: what goes on when the recording stops (`the card write`), for its closing line.
    package static func open(
        context: any PCSCClientContext, reader argument: String?, record path: String?, command: String,
        wait: Duration? = nil, recordings: RecordingLedger?, work: String = "the command"
    ) throws(CLIError) -> CardSession {
        var (readers, states) = try listReadersWithStates(context)
        if let wait { (readers, states) = try waitForCard(context: context, reader: argument, upTo: wait) }
        let withCard = Set(states.filter(\.hasCard).map(\.readerName))
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
        } catch where error == .timeout {
            // Another program's transaction outlasted the wait (pcscd lets SCardConnect wait for it).
            throw .failure(heldByAnotherProgram(reader) + " (SCardConnect: SCARD_E_TIMEOUT)")
        } catch where readerIsUnavailable(reader, context: context) {
            throw .failure(readerUnavailableMessage(reader))
        } catch {
            throw .failure("could not connect to '\(reader)': \(describe(error))")
        }
        let atr = (try? handle.status().atr) ?? []
        let capabilities = (try? ATR(parsing: atr, requireValidChecksum: false))?.cardCapabilities ?? .shortOnly
        let maxInput = try? handle.maxInput()
        var channel: any CardChannel = GuardedChannel(handle)
        var finish: () -> Void = {}
        var recorder: TranscriptRecorder?
        if let path, let recordings {
            let recording = try TranscriptRecording.start(
                path: path, inner: channel, reader: reader, atr: atr, command: command, recordings: recordings, work: work)
            channel = recording.channel
            finish = recording.finish
            recorder = recording.recorder
        }
        return CardSession(
            reader: reader, handle: handle, channel: channel, capabilities: capabilities,
            maxInput: maxInput.flatMap { $0 > 0 ? $0 : nil }, atr: atr, recorder: recorder, context: context, finish: finish)
    }

    /// What went wrong with an exchange, in words a user can act on. After a PC/SC failure the
    /// reader is asked (SCardStatus) whether the card is still there, because pcscd reports a
    /// card pulled away mid-APDU as SCARD_E_NOT_TRANSACTED (the driver's IFD_COMMUNICATION_ERROR,
    /// `IFDResultMapping.transmit`), whose own wording ("transaction failed") says nothing of the card.
    /// A reader unplugged during the exchange (SCARD_E_READER_UNAVAILABLE, and pcscd marks it
    /// unavailable) is said so (``readerUnavailableMessage(_:)``).
    /// - Parameter command: the APDU that failed, for the message.
    /// - Parameter recorded: whether the exchanges are being recorded (default: this session's `--record`).
    package func explainFailure(_ error: any Error, sending command: [UInt8], recorded: Bool? = nil) -> String {
        let shown = SecretDisplay.masked.text(command)  // a VERIFY's PIN never reaches a message
        switch error {
        case let error as GetResponseChainError:
            return "\(shown): \(error)" + (error.partialData.isEmpty ? "" : "; partial data: \(error.partialData.hexString)")
        case let error as ISO7816Error:
            return "could not send \(shown): \(error.reason)"
        case let error as PCSCError:
            if error == .sharingViolation {
                return "\(shown): \(describe(error))"
            }
            // The reader went away during the exchange (unplugged: the driver's IFD_NO_SUCH_DEVICE).
            if error == .readerUnavailable, readerIsUnavailable(reader, context: context) {
                return "\(shown): \(readerUnavailableMessage(reader))"
            }
            let gone = { self.cardIsGone(waitingForPresencePoll: error == .notTransacted) }
            if let changed = cardChange(error.code, reader: reader, cardIsGone: gone, recorded: recorded ?? (recorder != nil), again: "sequence") {
                return "\(shown): \(changed)"
            }
            return "\(shown): \(describe(error))"
        default:
            return "\(shown): \(error)"
        }
    }

    /// Whether the reader says the card has left (or was replaced) since the connection: SCardStatus,
    /// then (with `waitingForPresencePoll`) ``cardLeft(_:context:)``.
    ///
    /// pcscd learns of a removal from its presence poll (every 400 ms, PCSCLITE_STATUS_POLL_RATE in
    /// pcsc-lite's pcscd.h), so right after a failed exchange SCardStatus may still say present.
    /// With `waitingForPresencePoll`, the reader's state is then watched for one more poll
    /// (SCardGetStatusChange, at most 1 s): a card that left shows as a change to empty.
    private func cardIsGone(waitingForPresencePoll: Bool) -> Bool {
        if CallWatchdog.shared.guarding("SCardStatus", { handle.cardHasLeft() }) { return true }
        guard waitingForPresencePoll else { return false }
        return cardLeft(reader, context: context)
    }

    /// Ends recording and disconnects, leaving the card as it is.
    package func close() {
        finish()
        try? handle.disconnect(.leave)
    }
}
