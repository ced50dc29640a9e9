import PCSCCore

/// The seam between a simulated reader and the code that exposes it to PC/SC clients.
///
/// Two hosts drive an `IFDDevice`: the pcscd driver (`SimulatedACR122IFD`, a shared library exporting the
/// IFD handler entry points of pcsc-lite's `ifdhandler.h`), and the in-process path used by unit
/// tests. Both call exactly these operations, the way pcscd calls a driver: presence polling,
/// power up/down (which yields the ATR), protocol selection, transmit, control and capabilities.
///
/// Calls may block for as long as the real device would (a TgInitAsTarget waits for a terminal up
/// to the MCU timeout), and are made from pcscd's reader thread: one call at a time per device.
public protocol IFDDevice: AnyObject, Sendable {
    /// Whether a card (or tag) is present in the reader's field as the device reports it: with
    /// automatic PICC polling off, no card is ever reported (ACR122U API v2.04 §6).
    /// Corresponds to IFDHICCPresence.
    func isCardPresent() -> Bool

    /// Powers the card up (or resets it) and returns its ATR, synthesised as a PC/SC part 3
    /// contactless ATR (docs/acr122-pn532.md §3). Corresponds to IFDHPowerICC(IFD_POWER_UP / IFD_RESET).
    /// - Throws: ``IFDError/noCard`` when no card is present.
    func powerUp() throws(IFDError) -> [UInt8]

    /// Powers the card down. Corresponds to IFDHPowerICC(IFD_POWER_DOWN).
    func powerDown()

    /// Selects the transmission protocol for the powered card: 1 (T=0) or 2 (T=1), as
    /// SCARD_PROTOCOL_* values. Corresponds to IFDHSetProtocolParameters.
    /// - Throws: ``IFDError/protocolNotSupported`` for a protocol the personality does not offer.
    func setProtocol(_ protocolValue: UInt) throws(IFDError)

    /// Sends a command APDU or pseudo-APDU to the card/reader and returns the answer.
    /// Corresponds to IFDHTransmitToICC.
    /// - Throws: ``IFDError`` (no card, communication error, …).
    func transmit(_ command: [UInt8]) throws(IFDError) -> [UInt8]

    /// Sends a control (escape) command and returns the answer. Corresponds to IFDHControl.
    /// - Throws: ``IFDError/notSupported`` for an unknown control code, ``IFDError/communicationError``
    ///   when escape commands are refused (libccid without ifdDriverOptions 0x0001) or time out.
    func control(code: UInt32, _ command: [UInt8]) throws(IFDError) -> [UInt8]

    /// The PC/SC attribute `tag` (e.g. SCARD_ATTR_MAXINPUT 0x0007A007, SCARD_ATTR_VENDOR_NAME),
    /// or nil when unsupported. Corresponds to IFDHGetCapabilities.
    func attribute(_ tag: UInt32) -> [UInt8]?
}

/// Failures of an ``IFDDevice`` operation, as a driver reports them to pcscd (ifdhandler.h), and
/// the SCARD error pcscd turns each into.
public enum IFDError: Error, Sendable, Hashable {
    /// IFD_ICC_NOT_PRESENT → SCARD_E_NO_SMARTCARD (0x8010000C) / SCARD_W_REMOVED_CARD.
    case noCard
    /// IFD_COMMUNICATION_ERROR → SCARD_E_NOT_TRANSACTED (0x80100016).
    case communicationError
    /// IFD_NOT_SUPPORTED / IFD_ERROR_NOT_SUPPORTED → SCARD_E_UNSUPPORTED_FEATURE (0x8010001F).
    case notSupported
    /// IFD_PROTOCOL_NOT_SUPPORTED → SCARD_E_PROTO_MISMATCH (0x8010000F).
    case protocolNotSupported
    /// IFD_RESPONSE_TIMEOUT → SCARD_E_TIMEOUT / SCARD_E_NOT_TRANSACTED.
    case responseTimeout
    /// IFD_ERROR_INSUFFICIENT_BUFFER → SCARD_E_INSUFFICIENT_BUFFER (0x80100008).
    case insufficientBuffer
}

extension IFDError {
    /// The RESPONSECODE a pcscd driver returns for this error (pcsc-lite `ifdhandler.h`); what pcscd
    /// then tells the client is `IFDResultMapping`'s, per PC/SC function.
    public var responseCode: Int {
        switch self {
        case .noCard: IFDResponseCode.iccNotPresent
        case .communicationError: IFDResponseCode.communicationError
        case .notSupported: IFDResponseCode.errorNotSupported
        case .protocolNotSupported: IFDResponseCode.protocolNotSupported
        case .responseTimeout: IFDResponseCode.responseTimeout
        case .insufficientBuffer: IFDResponseCode.insufficientBuffer
        }
    }
}
