import ISO7816
import NFCTags
import PCSC
import PN53x
import SecureElementCredential
import Transcript

/// What an app built on secbridge does with each library product: presents a badge credential
/// (SecureElementCredential), reads a badge's URI (NFCTags, ISO7816) and the reader's firmware
/// (PN53x) over any card channel (PCSC's `CardChannel`), recording every exchange (Transcript).
public enum BadgeReader {
    /// The client an app uses on a real machine: pcscd through libpcsclite. Nothing is opened
    /// until a context is established, so making it needs no pcscd.
    public static func systemClient() -> any PCSCClient { PCSCLiteClient() }

    /// The NDEF Tag Application's AID, D2 76 00 00 85 01 01 (docs/iso14443-t4t-ndef.md of secbridge).
    public static let ndefApplication = try! AID(hex: "D2 76 00 00 85 01 01")

    /// The URI of the first record of an NDEF message, or nil when that record is not a URI record.
    /// - Throws: `TagFormatError` when the bytes are not an NDEF message (docs/iso14443-t4t-ndef.md §5 of secbridge).
    public static func uri(ofNDEFMessage bytes: [UInt8]) throws -> String? {
        try NDEFMessage(parsing: bytes).records.first?.uriValue()
    }

    /// Asks an ACR122U for its firmware string (pseudo-APDU `FF 00 48 00 00`, 10 ASCII bytes back,
    /// no status word), then selects the NDEF Tag Application (`00 A4 04 00 07 D2 76 00 00 85 01 01 00`),
    /// every exchange recorded to `recorder`.
    /// - Returns: the firmware string and the SELECT's status word.
    /// - Throws: what `channel` throws; `TranscriptWriteError` when a line cannot be recorded.
    public static func identify(
        over channel: any CardChannel, recorder: TranscriptRecorder
    ) throws -> (firmware: String, select: StatusWord) {
        let recorded = RecordingChannel(wrapping: channel, recorder: recorder)
        let firmware = try recorded.transmit(ACR122Command.firmwareVersion.serialized())
        let select = try ResponseAPDU(parsing: recorded.transmit(CommandAPDU.select(aid: ndefApplication).serialized()))
        return (String(decoding: firmware, as: UTF8.self), select.statusWord)
    }

    /// Presents the first credential of a session until a reader has read it and left (or the card
    /// emulation window ended), as an iOS app does (docs/apple-api-map.md of secbridge).
    /// - Returns: the field states seen, in order.
    /// - Throws: `CredentialSession.ErrorCode` from the session.
    public static func presentFirstCredential() async throws -> [CredentialSession.NFCFieldInformation] {
        let session = try await CredentialSession.startSession()
        guard let credential = try await session.listCredentials().first else { return [] }
        try await session.enterWiredMode(using: credential)
        let assertion = try await session.acquirePresentmentAssertion()
        try await assertion.relinquish()
        try await session.performTransaction(using: credential)
        var seen: [CredentialSession.NFCFieldInformation] = []
        events: for await event in session.eventStream {
            switch event {
            case .fieldStateChanged(let info):
                seen.append(info)
                if info == .fieldAbsent { break events }
            case .cardEmulationTimeout, .sessionInvalidated:
                break events
            default:
                continue
            }
        }
        try await session.endCardEmulation()
        await session.invalidate()
        return seen
    }
}
