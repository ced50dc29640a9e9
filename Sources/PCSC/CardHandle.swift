import Synchronization

/// A connection to a card, or with `ShareMode.direct` to a reader: transmit APDUs, send control
/// commands, read attributes and status.
///
/// Every method blocks the calling thread for at least an IPC round trip to pcscd, and control
/// commands to a reader for as long as the reader takes (seconds for an ACR122U escape command that
/// waits for a terminal); none can be cancelled. Call them from a thread of your own or through a
/// `BlockingExecutor`. One handle may be used from several threads: calls are serialized.
///
/// The receive buffer is always pcsc-lite's largest (MAX_BUFFER_SIZE_EXTENDED, 65 548 bytes)
/// whatever Le says, so no answer is ever refused with SCARD_E_INSUFFICIENT_BUFFER (docs/cases.md P04).
/// The handle disconnects itself (leaving the card) when it is deinitialized.
public final class CardHandle: PCSCConnection, @unchecked Sendable {
    private struct State {
        var connected = true
    }
    /// The context that made the handle; kept alive as long as the handle.
    public let context: PCSCContext
    /// The reader's full name.
    public let readerName: String
    let raw: SCard.Handle
    private let state: Mutex<State>
    /// The active protocol's raw value: an atomic, not part of `state`, because every transmit
    /// reads it (a lock and unlock per APDU otherwise).
    private let protocolValue: Atomic<UInt>
    /// Serializes use of `receiveBuffer` and of the handle, and holds the last answer
    /// ``transmit(_:)`` returned, whose storage the next call reuses once the caller has let go of
    /// it (see `reuse(_:for:)`).
    private let callLock = Mutex([UInt8]())
    private let receiveBuffer: UnsafeMutableRawBufferPointer

    init(context: PCSCContext, handle: SCard.Handle, readerName: String, activeProtocol: UInt) {
        self.context = context
        self.raw = handle
        self.readerName = readerName
        self.state = Mutex(State())
        self.protocolValue = Atomic(activeProtocol)
        self.receiveBuffer = .allocate(byteCount: PCSCConstants.maxBufferSizeExtended, alignment: 8)
    }

    deinit {
        if state.withLock({ $0.connected }) { try? SCard.disconnect(raw, disposition: Disposition.leave.rawValue) }
        receiveBuffer.deallocate()
    }

    /// The protocol in use: `.t0`, `.t1`, `.raw`, or `.undefined` for a direct connection.
    public var activeProtocol: ProtocolSet { ProtocolSet(rawValue: protocolValue.load(ordering: .acquiring)) }

    /// ``activeProtocol`` in the terms of `CardChannel`.
    public var transmissionProtocol: TransmissionProtocol { activeProtocol.transmissionProtocol }

    /// Ends the connection.
    ///
    /// The corresponding PC/SC function is SCardDisconnect.
    /// - Parameter disposition: what to do with the card: leave (default), reset, unpower, eject.
    public func disconnect(_ disposition: Disposition = .leave) throws(PCSCError) {
        let wasConnected = state.withLock { state in
            defer { state.connected = false }
            return state.connected
        }
        guard wasConnected else { return }
        try callLock.withLock { _ throws(PCSCError) in
            try SCard.disconnect(raw, disposition: disposition.rawValue)
        }
    }

    /// Re-establishes the connection, e.g. after SCARD_W_RESET_CARD, or resets the card.
    ///
    /// The corresponding PC/SC function is SCardReconnect.
    /// - Parameters:
    ///   - share: the new share mode.
    ///   - protocols: the acceptable protocols.
    ///   - initialization: leave, reset or unpower the card while reconnecting.
    public func reconnect(
        share: ShareMode = .shared, protocols: ProtocolSet = .any, initialization: Disposition = .leave
    ) throws(PCSCError) {
        let active = try callLock.withLock { _ throws(PCSCError) in
            try SCard.reconnect(
                raw, share: share.rawValue, protocols: protocols.rawValue,
                initialization: initialization.rawValue)
        }
        protocolValue.store(active, ordering: .releasing)
    }

    /// The reader's name, the card state, the protocol and the ATR.
    ///
    /// The corresponding PC/SC function is SCardStatus.
    /// - Throws: `PCSCError` — SCARD_W_REMOVED_CARD after the card left.
    public func status() throws(PCSCError) -> CardStatus {
        let raw = try callLock.withLock { _ throws(PCSCError) in try SCard.status(self.raw) }
        return CardStatus(
            readerName: parseMultiString(raw.readerName).first ?? "",
            state: CardState(rawValue: raw.state),
            activeProtocol: ProtocolSet(rawValue: raw.protocolValue),
            atr: raw.atr)
    }

    /// A reader attribute's raw bytes.
    ///
    /// The corresponding PC/SC function is SCardGetAttrib.
    /// - Throws: `PCSCError` — SCARD_E_UNSUPPORTED_FEATURE when the driver does not know it.
    public func attribute(_ attribute: PCSCAttribute) throws(PCSCError) -> [UInt8] {
        try callLock.withLock { _ throws(PCSCError) in try SCard.getAttribute(raw, id: attribute.rawValue) }
    }

    /// Sends a command APDU (or a reader pseudo-APDU) and returns the whole answer, SW1-SW2 included.
    /// The bytes travel unchanged: no GET RESPONSE or other ISO 7816-4 handling happens here (see
    /// `ISO7816Transport` for that).
    ///
    /// The answer is written into the storage of the array the previous call returned when the
    /// caller no longer holds it (a loop of `let answer = try card.transmit(…)`), else into a new
    /// array; an answer the caller keeps is never changed (copy-on-write). A loop that reuses one
    /// buffer of its own can call ``transmit(_:into:)-(UnsafeRawBufferPointer,_)`` instead.
    ///
    /// The corresponding PC/SC function is SCardTransmit.
    /// - Parameter command: 1 to 65 544 bytes.
    /// - Returns: the answer, at most 65 548 bytes (an extended APDU's 65 536 data bytes and SW1-SW2).
    /// - Throws: `PCSCError` — SCARD_E_NO_SMARTCARD / SCARD_W_REMOVED_CARD when the card left,
    ///   SCARD_E_PROTO_MISMATCH on a direct connection, SCARD_E_INVALID_PARAMETER for an empty or
    ///   oversized command (checked before sending).
    public func transmit(_ command: [UInt8]) throws(PCSCError) -> [UInt8] {
        try Self.checkCommandLength(command.count)
        var answer: [UInt8] = []
        let result = command.withUnsafeBytes { bytes in
            callLock.withLock { lastAnswer in
                var length = 0
                let result = sendReceive(bytes, length: &length)
                if SCard.succeeded(result) {
                    answer = Self.reuse(&lastAnswer, for: UnsafeRawBufferPointer(rebasing: receiveBuffer[..<length]))
                }
                return result
            }
        }
        try SCard.check(result, "SCardTransmit")
        return answer
    }

    /// Sends a command APDU (or a reader pseudo-APDU) and writes the whole answer, SW1-SW2
    /// included, to the front of `response`, for loops that reuse one buffer: nothing is allocated
    /// per call. The bytes travel unchanged, as with ``transmit(_:)``.
    ///
    /// pcscd always receives into the handle's own buffer of MAX_BUFFER_SIZE_EXTENDED (65 548)
    /// bytes, whatever `response` holds (docs/cases.md P04), and the answer is then copied to
    /// `response`; bytes of `response` past the answer are left as they were. A `response` of
    /// 65 548 bytes takes every answer; 258 bytes take every answer to a short APDU (256 data
    /// bytes and SW1-SW2).
    ///
    /// The corresponding PC/SC function is SCardTransmit.
    /// - Parameters:
    ///   - command: the command bytes, 1 to 65 544 of them.
    ///   - response: where the answer goes, from its first byte.
    /// - Returns: the answer's length in bytes: the answer is `response[..<length]`.
    /// - Throws: `PCSCError` — SCARD_E_INSUFFICIENT_BUFFER (0x80100008) when the answer is longer
    ///   than `response` (its `PCSCError.detail` gives both sizes; the command did reach the card,
    ///   its answer is dropped), SCARD_E_NO_SMARTCARD / SCARD_W_REMOVED_CARD when the card left,
    ///   SCARD_E_PROTO_MISMATCH on a direct connection, SCARD_E_INVALID_PARAMETER for an empty or
    ///   oversized command (checked before sending).
    public func transmit(
        _ command: UnsafeRawBufferPointer, into response: UnsafeMutableRawBufferPointer
    ) throws(PCSCError) -> Int {
        try Self.checkCommandLength(command.count)
        let (result, length) = exchange(command, into: response)
        return try Self.checkAnswer(result, length: length, capacity: response.count)
    }

    /// ``transmit(_:into:)-(UnsafeRawBufferPointer,_)`` with the command in an array.
    ///
    /// The corresponding PC/SC function is SCardTransmit.
    /// - Parameters:
    ///   - command: the command bytes, 1 to 65 544 of them.
    ///   - response: where the answer goes, from its first byte.
    /// - Returns: the answer's length in bytes: the answer is `response[..<length]`.
    /// - Throws: `PCSCError`, as ``transmit(_:into:)-(UnsafeRawBufferPointer,_)`` does.
    public func transmit(_ command: [UInt8], into response: UnsafeMutableRawBufferPointer) throws(PCSCError) -> Int {
        try Self.checkCommandLength(command.count)
        let (result, length) = command.withUnsafeBytes { exchange($0, into: response) }
        return try Self.checkAnswer(result, length: length, capacity: response.count)
    }

    /// A command pcsc-lite can carry: 1 to 65 544 bytes (MAX_BUFFER_SIZE_EXTENDED less SW1-SW2 and
    /// Le's two bytes).
    @inline(__always)
    private static func checkCommandLength(_ count: Int) throws(PCSCError) {
        guard count > 0, count <= PCSCConstants.maxBufferSizeExtended - 4 else {
            throw PCSCError(code: PCSCError.invalidParameter.code, function: "SCardTransmit")
        }
    }

    /// `bytes` in `lastAnswer`'s storage when the caller no longer holds the array the previous
    /// call returned (the usual `let answer = try card.transmit(…)` loop), else in a new array;
    /// returns `lastAnswer`, which then shares its storage with the caller's copy until either
    /// side changes it (copy-on-write). This saves an allocation and a deallocation per APDU
    /// (about 330 of 1 308 instructions, docs/benchmarks.md §7). A storage more than four times
    /// larger than the answer (plus 64 bytes) is not reused, so a kept answer never carries much
    /// more capacity than it needs.
    @inline(__always)
    private static func reuse(_ lastAnswer: inout [UInt8], for bytes: UnsafeRawBufferPointer) -> [UInt8] {
        if lastAnswer.count == bytes.count {
            // Copies the old storage first if the caller still holds it.
            lastAnswer.withUnsafeMutableBytes { $0.copyMemory(from: bytes) }
        } else if lastAnswer.capacity >= bytes.count, lastAnswer.capacity <= 4 * bytes.count + 64 {
            // Empties the storage in place, or allocates one of the same capacity if it is shared.
            lastAnswer.removeAll(keepingCapacity: true)
            lastAnswer.append(contentsOf: bytes)
        } else {
            lastAnswer = Array(bytes)
        }
        return lastAnswer
    }

    /// One SCardTransmit under `callLock`, and the answer copied from `receiveBuffer` to the front
    /// of `response` when it fits. Returns pcsc-lite's result code and the answer's length.
    @inline(__always)
    private func exchange(
        _ command: UnsafeRawBufferPointer, into response: UnsafeMutableRawBufferPointer
    ) -> (SCard.ResultCode, Int) {
        callLock.withLock { _ in
            var length = 0
            let result = sendReceive(command, length: &length)
            if SCard.succeeded(result), length <= response.count, length > 0 {
                response.baseAddress.unsafelyUnwrapped.copyMemory(
                    from: receiveBuffer.baseAddress.unsafelyUnwrapped, byteCount: length)
            }
            return (result, length)
        }
    }

    /// The answer's length after `exchange(_:into:)`, or the error: pcsc-lite's, else
    /// SCARD_E_INSUFFICIENT_BUFFER when the answer did not fit `capacity`.
    @inline(__always)
    private static func checkAnswer(_ result: SCard.ResultCode, length: Int, capacity: Int) throws(PCSCError) -> Int {
        try SCard.check(result, "SCardTransmit")
        guard length <= capacity else { throw PCSCError.answerTooLong(length, capacity: capacity) }
        return length
    }

    /// One SCardTransmit of `command` into `receiveBuffer`; the caller holds `callLock`.
    @inline(__always)
    private func sendReceive(_ command: UnsafeRawBufferPointer, length: inout Int) -> SCard.ResultCode {
        SCard.transmit(
            raw, protocolValue: protocolValue.load(ordering: .acquiring), command: command, receive: receiveBuffer,
            length: &length)
    }

    /// Sends a control command to the reader and returns its answer.
    ///
    /// The corresponding PC/SC function is SCardControl.
    /// - Parameters:
    ///   - code: the control code, e.g. 0x42000001 for the CCID escape command, 0x42000D48 for
    ///     CM_IOCTL_GET_FEATURE_REQUEST.
    ///   - command: the bytes for the reader, possibly empty, at most 65 548.
    /// - Throws: `PCSCError` — SCARD_E_UNSUPPORTED_FEATURE (0x8010001F) for a code the driver does
    ///   not know, SCARD_E_NOT_TRANSACTED (0x80100016) when the driver refuses or times out.
    public func control(code: UInt32, _ command: [UInt8]) throws(PCSCError) -> [UInt8] {
        guard command.count <= PCSCConstants.maxBufferSizeExtended else {
            throw PCSCError(code: PCSCError.invalidParameter.code, function: "SCardControl")
        }
        return try callLock.withLock { _ throws(PCSCError) in
            let length = try command.withUnsafeBytes { bytes in
                Result { () throws(PCSCError) in
                    try SCard.control(raw, code: code, command: bytes, receive: receiveBuffer)
                }
            }.get()
            return Array(UnsafeRawBufferPointer(rebasing: receiveBuffer[..<length]))
        }
    }

    /// The reader's PC/SC part 10 features, from CM_IOCTL_GET_FEATURE_REQUEST (0x42000D48).
    /// A reader whose driver does not implement control commands (e.g. vpcd) has none: the
    /// SCARD_E_UNSUPPORTED_FEATURE it answers becomes an empty list.
    /// - Throws: `PCSCError` for other failures; `FeatureListError` for a malformed answer.
    public func features() throws -> [PCSCFeature] {
        let answer: [UInt8]
        do {
            answer = try control(code: PCSCConstants.getFeatureRequest, [])
        } catch let error where error == .unsupportedFeature {
            return []
        }
        return try PCSCFeatureList(parsing: answer).features
    }

    /// Takes the card for this handle alone until ``endTransaction(_:)``; see also
    /// `withTransaction(disposition:_:)`.
    ///
    /// The corresponding PC/SC function is SCardBeginTransaction.
    public func beginTransaction() throws(PCSCError) {
        try callLock.withLock { _ throws(PCSCError) in try SCard.beginTransaction(raw) }
    }

    /// Ends the transaction.
    ///
    /// The corresponding PC/SC function is SCardEndTransaction.
    public func endTransaction(_ disposition: Disposition = .leave) throws(PCSCError) {
        try callLock.withLock { _ throws(PCSCError) in
            try SCard.endTransaction(raw, disposition: disposition.rawValue)
        }
    }
}

