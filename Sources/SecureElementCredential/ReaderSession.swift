import ISO7816
import PCSC
import PN53x

/// One exchange of a reader session: the C-APDU sent and the R-APDU received.
public struct ReaderExchange: Sendable, Hashable, CustomStringConvertible {
    /// The C-APDU sent.
    public var command: [UInt8]
    /// The R-APDU received, SW1 SW2 included.
    public var response: [UInt8]
    /// `> command` and `< response` lines, house hex.
    public var description: String { "> \(command.hexString)\n< \(response.hexString)" }
}

/// The host as terminal: runs a transaction against a card or phone presented to a reader
/// (docs/session-model.md, "Reader sessions"; not part of Apple's framework).
///
/// Two paths, both driven on the session's own `BlockingExecutor` thread:
/// - `.pcsc`: the reader polls by itself; the card is connected SHARED (T=0 or T=1) and each
///   C-APDU goes with SCardTransmit. Any PC/SC reader.
/// - `.pn532Initiator`: an ACR122U on a DIRECT connection; automatic PICC polling off
///   (`FF 00 51 00 00`), bounded InListPassiveTarget polls (8, or repeated up to `pollingBound`),
///   each C-APDU with InDataExchange, then InRelease and `FF 00 51 FF 00`.
public final class ReaderSession: Sendable {
    /// How the host reaches the card: plain PC/SC, or the PN532 as initiator.
    public enum Path: Sendable, Hashable {
        /// Any PC/SC reader: the card connected SHARED, C-APDUs with SCardTransmit.
        case pcsc
        /// An ACR122U on a DIRECT connection: InListPassiveTarget, then InDataExchange (PN532 UM0701-02 §7.3.5, §7.3.8).
        case pn532Initiator
    }

    /// Opens the connection on the executor thread; returns it and its release.
    public typealias Connector = @Sendable () throws -> (channel: any CardChannel, close: @Sendable () -> Void)

    /// The PC/SC reader name.
    public let readerName: String
    /// The path exchanges take.
    public let path: Path
    /// On the `.pn532Initiator` path: whether the reader's automatic polling is turned back on
    /// (`FF 00 51 FF 00`) when the session ends. A caller that keeps the reader quiet on purpose
    /// (its polling would activate a card emulated nearby) passes false and restores it itself.
    public let restoresReaderDefaults: Bool
    /// On the `.pn532Initiator` path: how long to keep polling for a card (`--wait`), nil for the
    /// fixed 8 polls. Each poll is one InListPassiveTarget that the chip itself ends after
    /// MxRtyPassiveActivation + 1 attempts (``waitingPollRetries``), so the repetition is paced by
    /// the device, never by a sleep; polls start while the bound has not passed, at least one.
    public let pollingBound: Duration?
    private let executor: BlockingExecutor
    private let connector: Connector

    /// A reader session that opens its connection with `connector` on `executor` (nil makes one).
    public init(
        readerName: String, path: Path, executor: BlockingExecutor? = nil, restoresReaderDefaults: Bool = true,
        pollingBound: Duration? = nil, connector: @escaping Connector
    ) {
        self.readerName = readerName
        self.path = path
        self.restoresReaderDefaults = restoresReaderDefaults
        self.pollingBound = pollingBound
        self.executor = executor ?? BlockingExecutor(name: "reader session \(readerName)")
        self.connector = connector
    }

    /// A reader session through pcscd: SHARED with a card for `.pcsc`, DIRECT for `.pn532Initiator`.
    public static func pcsc(readerName: String, path: Path) -> ReaderSession {
        ReaderSession(readerName: readerName, path: path) {
            let context = try PCSCContext()
            let handle = path == .pcsc
                ? try context.connect(to: readerName, share: .shared, protocols: .any)
                : try context.connect(to: readerName, share: .direct, protocols: [])
            return (handle, {
                try? handle.disconnect(.leave)
                try? context.release()
            })
        }
    }

    /// Sends C-APDUs to the presented card.
    public final class Transceiver: @unchecked Sendable {
        // @unchecked: used only from the transaction closure, whose calls hop to the executor.
        fileprivate let send: @Sendable ([UInt8]) async throws -> [UInt8]
        /// Every exchange so far, in order.
        public private(set) var exchanges: [ReaderExchange] = []
        /// The target InListPassiveTarget found (UID, ATQA, SAK, ATS) on the `.pn532Initiator`
        /// path; nil on the `.pcsc` path, where the reader polled by itself.
        public let target: ISO14443ATarget?
        fileprivate init(target: ISO14443ATarget?, send: @escaping @Sendable ([UInt8]) async throws -> [UInt8]) {
            self.target = target
            self.send = send
        }

        /// Sends one C-APDU and returns the R-APDU (SW1 SW2 included); the exchange is recorded.
        public func transceive(_ command: [UInt8]) async throws -> [UInt8] {
            let response = try await send(command)
            exchanges.append(ReaderExchange(command: command, response: response))
            return response
        }
    }

    /// Connects, finds the card, runs `transaction`, then releases the card and restores the reader.
    /// - Returns: what the transaction returns, and every exchange.
    /// - Throws: `CredentialSessionError` `instanceDoesNotExist` when no card answers the poll;
    ///   the lower layers' errors wrapped; what `transaction` throws.
    public func run<T: Sendable>(
        _ transaction: (Transceiver) async throws -> T
    ) async throws -> (result: T, exchanges: [ReaderExchange]) {
        let box = PN532SessionBox()
        let connector = self.connector
        let path = self.path
        let name = readerName
        let bound = pollingBound
        do {
            try await executor.run {
                let (channel, close) = try connector()
                box.channel = channel
                box.close = close
                if path == .pn532Initiator {
                    let link = try ACR122Link.open(channel: channel, readerName: name, path: .escape)
                    let pn532 = PN532(link: link)
                    box.pn532 = pn532
                    try link.setPICCOperatingParameter([])
                    let target = try Self.poll(pn532, readerName: name, bound: bound)
                    box.target = target
                }
            }
        } catch {
            await finish(box)
            throw CredentialSessionError.wrapping(error, as: .instanceDoesNotExist, "opening \(name) failed")
        }
        let executor = self.executor
        let transceiver = Transceiver(target: box.target) { command in
            try await executor.run {
                if let pn532 = box.pn532 { return try pn532.exchangeAPDU(command) }
                guard let channel = box.channel else { throw CredentialSessionError(.internalError, "no channel") }
                return try channel.transmit(command)
            }
        }
        do {
            let result = try await transaction(transceiver)
            await finish(box)
            return (result, transceiver.exchanges)
        } catch {
            await finish(box)
            throw error
        }
    }

    /// MxRtyPassiveActivation of each poll while waiting up to ``pollingBound``: 20, as in the
    /// fixed polls, so every InListPassiveTarget ends by itself after 33 attempts with NbTg 0
    /// (FF would retry until a card comes: RFConfiguration item 05, docs/acr122-pn532.md §4), well
    /// inside the ACR122U's 5 s MCU timeout, after which the MCU would answer `63 00` instead.
    public static let waitingPollRetries: UInt8 = 0x20

    /// Polls for an ISO/IEC 14443-A target: 8 polls of 33 passive activation attempts without a
    /// bound (a terminal polls again and again; a phone or an emulating reader may be busy at the
    /// first attempt, e.g. re-arming after another reader's poll), else polls of
    /// ``waitingPollRetries`` attempts until a target answers or `bound` has passed on the host's
    /// monotonic clock (a poll under way is let finish: the chip ends it).
    /// - Throws: `CredentialSessionError` `instanceDoesNotExist` when none answered; the PN532's errors.
    static func poll(_ pn532: PN532, readerName name: String, bound: Duration?) throws -> ISO14443ATarget {
        guard let bound else {
            for _ in 0..<8 {
                if let target = try pn532.pollISO14443A(passiveActivationRetries: 0x20) { return target }
            }
            throw CredentialSessionError(
                .instanceDoesNotExist,
                "no ISO 14443-A card answered InListPassiveTarget on \(name) (8 polls); place the card or phone on the reader")
        }
        let clock = ContinuousClock()
        let deadline = clock.now + bound
        var polls = 0
        repeat {  // bounded by the deadline; each poll by the chip's retry count
            polls += 1
            if let target = try pn532.pollISO14443A(passiveActivationRetries: waitingPollRetries) { return target }
        } while clock.now < deadline
        throw CredentialSessionError(
            .instanceDoesNotExist,
            "no ISO 14443-A card answered InListPassiveTarget on \(name) within \(secondsText(bound)) s (--wait, \(polls) polls); place the card or phone on the reader")
    }

    /// `1.5` or `30`: a duration in seconds as the user typed it (millisecond precision).
    static func secondsText(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        let milliseconds = max(1, seconds * 1000 + attoseconds / 1_000_000_000_000_000)
        return milliseconds % 1000 == 0 ? "\(milliseconds / 1000)" : "\(Double(milliseconds) / 1000)"
    }

    /// Runs a script of C-APDUs, stopping early at nothing: every command is sent.
    public func run(script: [[UInt8]]) async throws -> [ReaderExchange] {
        try await run { transceiver in
            for command in script { _ = try await transceiver.transceive(command) }
        }.exchanges
    }

    private func finish(_ box: PN532SessionBox) async {
        let restore = restoresReaderDefaults
        _ = try? await executor.run {
            if let pn532 = box.pn532 {
                // The one restore implementation: InRelease, then (unless the caller keeps the
                // reader quiet) the PICC operating parameter FF.
                _ = try? pn532.restoreReaderDefaults(restore ? [.releaseTargets, .piccParameter] : .releaseTargets)
            }
            box.close?()
            box.pn532 = nil
            box.channel = nil
            box.close = nil
        }
    }
}

/// The reader session's connection, touched only on its executor thread.
final class PN532SessionBox: @unchecked Sendable {
    // @unchecked: every field is used only inside jobs of one BlockingExecutor.
    var channel: (any CardChannel)?
    var pn532: PN532?
    var target: ISO14443ATarget?
    var close: (@Sendable () -> Void)?
}
