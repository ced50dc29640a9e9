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

    /// Sends one command and writes the whole answer, status word included, to the front of
    /// `response`: for loops that reuse one buffer. The PC/SC layer's card handle sends and
    /// receives without allocating; other channels get a default that calls
    /// ``transmit(_:)`` and copies its answer.
    ///
    /// The corresponding PC/SC function is SCardTransmit.
    /// - Parameters:
    ///   - command: the command bytes, 1 to 65 544 bytes.
    ///   - response: where the answer goes, from its first byte; 65 548 bytes take every answer.
    /// - Returns: the answer's length: the answer is `response[..<length]`.
    /// - Throws: `PCSCError` SCARD_E_INSUFFICIENT_BUFFER (0x80100008) when the answer is longer
    ///   than `response` (the command did reach the card; its answer is dropped), and whatever
    ///   ``transmit(_:)`` throws.
    func transmit(_ command: UnsafeRawBufferPointer, into response: UnsafeMutableRawBufferPointer) throws -> Int

    /// Sends a reader control (escape) command and returns the reader's answer.
    ///
    /// The corresponding PC/SC function is SCardControl.
    /// - Parameters:
    ///   - code: the control code, e.g. 0x42000001 (`SCARD_CTL_CODE(1)`) for the CCID escape command.
    ///   - command: the bytes sent to the reader, possibly empty.
    func control(code: UInt32, _ command: [UInt8]) throws -> [UInt8]
}

extension CardChannel {
    /// The default of ``CardChannel/transmit(_:into:)``: ``transmit(_:)`` and a copy of its
    /// answer.
    ///
    /// The corresponding PC/SC function is SCardTransmit.
    /// - Parameters:
    ///   - command: the command bytes.
    ///   - response: where the answer goes, from its first byte.
    /// - Returns: the answer's length: the answer is `response[..<length]`.
    /// - Throws: `PCSCError` SCARD_E_INSUFFICIENT_BUFFER (0x80100008) when the answer is longer
    ///   than `response`, and whatever ``transmit(_:)`` throws.
    public func transmit(_ command: UnsafeRawBufferPointer, into response: UnsafeMutableRawBufferPointer) throws -> Int {
        let answer = try transmit(Array(command))
        guard answer.count <= response.count else {
            throw PCSCError.answerTooLong(answer.count, capacity: response.count)
        }
        answer.withUnsafeBytes { response.copyMemory(from: $0) }
        return answer.count
    }
}

extension PCSCError {
    /// SCARD_E_INSUFFICIENT_BUFFER (0x80100008) from SCardTransmit for an answer of `length` bytes
    /// that does not fit a receive buffer of `capacity` bytes, with both sizes in ``detail``.
    /// - Parameters:
    ///   - length: the answer's length in bytes.
    ///   - capacity: the receive buffer's size in bytes.
    /// - Returns: the error, for SCardTransmit.
    public static func answerTooLong(_ length: Int, capacity: Int) -> PCSCError {
        PCSCError(
            code: PCSCError.insufficientBuffer.code, function: "SCardTransmit",
            detail: "the card's answer is \(length) bytes, the receive buffer \(capacity); the command reached the card and its answer was dropped: pass a buffer of at least \(length) bytes (65 548 take every answer)")
    }
}
