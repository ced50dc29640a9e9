/// The transmission protocol a card handle uses, as a PC/SC reader reports it.
///
/// `undefined` is what `SCardConnect(SCARD_SHARE_DIRECT, 0)` gives: no card is powered, and only
/// reader control (`SCardControl`) reaches the device (ACR122U API v2.04, PC/SC part 3).
public enum TransmissionProtocol: String, Sendable, Hashable, CaseIterable {
    /// ISO/IEC 7816-3 T=0: case-4 commands lose their Le, responses arrive through 61xx / GET RESPONSE.
    case t0 = "T=0"
    /// ISO/IEC 7816-3 T=1 (and every contactless card behind a PC/SC reader).
    case t1 = "T=1"
    /// Raw protocol (SCARD_PROTOCOL_RAW).
    case raw = "RAW"
    /// No protocol: a direct connection to the reader with no card powered.
    case undefined = "undefined"
}

/// A synchronous link that carries raw bytes to a card or a reader and returns the raw answer.
///
/// This is the seam between the layers: the PC/SC layer's card handle conforms to it, the transcript
/// layer wraps it to record or replay, the ISO/IEC 7816-4 transport and the ACR122U/PN532 layer drive
/// it. Both calls block the calling thread until the answer arrives; never call them from Swift's
/// shared concurrency pool (run them on the thread that owns the PC/SC context).
public protocol CardChannel: AnyObject {
    /// The protocol negotiated for this channel.
    var transmissionProtocol: TransmissionProtocol { get }

    /// Sends one command (an APDU or a reader pseudo-APDU) and returns the whole answer, status word
    /// included.
    ///
    /// The corresponding PC/SC function is SCardTransmit.
    /// - Parameter command: the command bytes, 4 to 65 544 bytes.
    /// - Returns: the response bytes, at most 65 538 bytes.
    func transmit(_ command: [UInt8]) throws -> [UInt8]

    /// Sends a reader control (escape) command and returns the reader's answer.
    ///
    /// The corresponding PC/SC function is SCardControl.
    /// - Parameters:
    ///   - code: the control code, e.g. 0x42000001 (`SCARD_CTL_CODE(1)`) for the CCID escape command.
    ///   - command: the bytes sent to the reader, possibly empty.
    func control(code: UInt32, _ command: [UInt8]) throws -> [UInt8]
}
