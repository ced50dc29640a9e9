import ISO7816
import PCSC
import Synchronization

/// Holds a `CardChannel` that only the executor's thread touches.
final class ChannelBox: @unchecked Sendable {
    // @unchecked: `channel` is read and written only in jobs of one BlockingExecutor (one thread).
    var channel: (any CardChannel)?
    var close: (@Sendable () -> Void)?
}

/// A card in a PC/SC reader as the secure element (docs/session-model.md, "Relaying to a PC/SC card"):
/// wired `transceive` goes to it with SCardTransmit, and card emulation relays the terminal's
/// C-APDUs to it.
///
/// Status words pass through unchanged by default (a terminal speaks ISO/IEC 7816-4 and handles
/// 61 XX itself). With `resolveStatusWordsLocally`, 61 XX (GET RESPONSE) and 6C XX (resend with
/// Le = XX) are resolved here with `ISO7816Transport`, for terminals that do not.
///
/// Blocking calls run on the element's own `BlockingExecutor` thread, never on the shared pool.
public final class CardSecureElement: SecureElement {
    /// Opens the channel (runs on the executor thread); returns it and a closure that releases it.
    public typealias Connector = @Sendable () throws -> (channel: any CardChannel, close: @Sendable () -> Void)

    /// A short description for messages, e.g. "PC/SC card in ACS ACR38U 00 00".
    public let secureElementDescription: String
    /// Whether 61xx (GET RESPONSE) and 6Cxx (repeat with Le = xx) are resolved here (ISO/IEC 7816-4 §5.3.4) instead of passed to the terminal.
    public let resolveStatusWordsLocally: Bool
    private let connector: Connector
    private let executor: BlockingExecutor
    private let box = ChannelBox()

    /// A secure element on the card `connector` opens.
    /// - Parameters:
    ///   - description: for messages.
    ///   - resolveStatusWordsLocally: see ``resolveStatusWordsLocally``.
    ///   - executor: the thread the PC/SC calls run on; nil makes one.
    ///   - connector: opens the channel (SCardConnect), on the executor thread.
    public init(description: String, resolveStatusWordsLocally: Bool = false, executor: BlockingExecutor? = nil, connector: @escaping Connector) {
        self.secureElementDescription = description
        self.resolveStatusWordsLocally = resolveStatusWordsLocally
        self.connector = connector
        self.executor = executor ?? BlockingExecutor(name: "secure element \(description)")
    }

    /// The card in the PC/SC reader `readerName`, connected SHARED with T=0 or T=1.
    /// - Parameter client: how to reach the reader: pcsc-lite by default, or in process.
    public static func pcsc(
        readerName: String, resolveStatusWordsLocally: Bool = false, client: any PCSCClient = PCSCLiteClient()
    ) -> CardSecureElement {
        CardSecureElement(description: "PC/SC card in \(readerName)", resolveStatusWordsLocally: resolveStatusWordsLocally) {
            let context = try client.establishContext()
            let handle = try context.connect(to: readerName, share: .shared, protocols: .any)
            return (handle, {
                try? handle.disconnect(.leave)
                try? context.release()
            })
        }
    }

    /// Connects the card (SCardConnect through `connector`). Idempotent.
    /// - Throws: `resourceUnavailable` when the card or reader is busy or gone (sharing violation, no card, removed card), `instanceDoesNotExist` otherwise.
    public func open() async throws(CredentialSessionError) {
        let box = self.box
        let connector = self.connector
        let description = secureElementDescription
        do {
            try await executor.run {
                guard box.channel == nil else { return }
                let (channel, close) = try connector()
                box.channel = channel
                box.close = close
            }
        } catch {
            throw CredentialSessionError.wrapping(error, as: .instanceDoesNotExist, "opening \(description) failed")
        }
    }

    /// Sends `command` to the card.
    ///
    /// When the card changed since it was connected — SCARD_W_REMOVED_CARD, SCARD_W_RESET_CARD,
    /// SCARD_E_INVALID_HANDLE, SCARD_E_NOT_TRANSACTED, or SCardStatus showing the card gone —
    /// the old connection is released and a new one opened (a new card session: nothing selected),
    /// and `secureElementChanged` is thrown saying so: the command that met the change is not
    /// answered, because its context (the selected application) is gone.
    /// - Throws: `CredentialSessionError` `secureElementChanged` (the card changed),
    ///   `invalidCredentialState` (not connected), or the wrapped lower-layer error.
    public func transceive(_ command: [UInt8]) async throws(CredentialSessionError) -> [UInt8] {
        let box = self.box
        let resolve = resolveStatusWordsLocally
        let connector = self.connector
        let description = secureElementDescription
        do {
            return try await executor.run {
                guard let channel = box.channel else {
                    throw CredentialSessionError(.invalidCredentialState, "the card is not connected; enter wired mode first")
                }
                do {
                    if resolve { return try ISO7816Transport(channel: channel).transmit(bytes: command) }
                    return try channel.transmit(command)
                } catch let error as PCSCError where Self.meansCardChanged(error, channel: channel) {
                    let what = error == .resetCard ? "was reset by another program"
                        : error == .notTransacted && !Self.cardIsGone(channel) ? "failed the exchange (taken out of the field or swapped for another)"
                        : "was removed or replaced"
                    box.close?()
                    box.channel = nil
                    box.close = nil
                    let reconnected: String
                    do {
                        let (channel, close) = try connector()
                        box.channel = channel
                        box.close = close
                        reconnected = "its state is lost; a new card session was opened for what follows"
                    } catch let reconnect as PCSCError {
                        reconnected = "and it could not be connected again (\(reconnect.name)): put the card back on its reader"
                    } catch {
                        reconnected = "and it could not be connected again (\(error)): put the card back on its reader"
                    }
                    throw CredentialSessionError(
                        .secureElementChanged,
                        "the card serving as secure element (\(description)) \(what) (\(error.name)) during \(command.hexString); \(reconnected)",
                        cause: UnderlyingCause(error))
                }
            }
        } catch {
            throw CredentialSessionError.wrapping(error, as: .internalError, "SCardTransmit to \(description) failed")
        }
    }

    /// Whether a failed exchange means the card session is not the one connected any more:
    /// removed, reset, an invalid handle, or SCARD_E_NOT_TRANSACTED. A contactless card that
    /// fails an exchange has lost its RF session (it left the field, maybe for another card the
    /// reader then activated before pcscd's presence poll saw a gap), so its state is gone
    /// whether or not pcscd noticed.
    static func meansCardChanged(_ error: PCSCError, channel: any CardChannel) -> Bool {
        if error == .removedCard || error == .resetCard || error == .invalidHandle || error == .notTransacted { return true }
        return cardIsGone(channel)
    }

    /// Whether SCardStatus says the connected card has left.
    static func cardIsGone(_ channel: any CardChannel) -> Bool {
        (channel as? any PCSCConnection)?.cardHasLeft() ?? false
    }

    /// Nothing: the card keeps its own state (its selection) across activations.
    public func terminalActivated() async {}

    /// Releases the card (SCardDisconnect with SCARD_LEAVE_CARD). Idempotent.
    public func close() async {
        let box = self.box
        _ = try? await executor.run {
            box.close?()
            box.channel = nil
            box.close = nil
        }
    }
}
