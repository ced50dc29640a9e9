/// The IFD handler result codes (RESPONSECODE) a pcscd driver returns, pcsc-lite `ifdhandler.h`
/// (IFD handler API v3.0). `PCSCTests/ConstantsTests` checks each value against its macro.
public enum IFDResponseCode {
    /// IFD_SUCCESS.
    public static let success = 0
    /// IFD_ERROR_TAG: the capability tag is unknown.
    public static let errorTag = 600
    /// IFD_ERROR_SET_FAILURE.
    public static let errorSetFailure = 601
    /// IFD_ERROR_VALUE_READ_ONLY.
    public static let errorValueReadOnly = 602
    /// IFD_ERROR_PTS_FAILURE: protocol negotiation failed.
    public static let errorPTSFailure = 605
    /// IFD_ERROR_NOT_SUPPORTED.
    public static let errorNotSupported = 606
    /// IFD_PROTOCOL_NOT_SUPPORTED: the requested protocol is not supported.
    public static let protocolNotSupported = 607
    /// IFD_ERROR_POWER_ACTION: powering the card failed.
    public static let errorPowerAction = 608
    /// IFD_COMMUNICATION_ERROR: a generic error.
    public static let communicationError = 612
    /// IFD_RESPONSE_TIMEOUT.
    public static let responseTimeout = 613
    /// IFD_NOT_SUPPORTED: the request is not supported.
    public static let notSupported = 614
    /// IFD_ICC_PRESENT.
    public static let iccPresent = 615
    /// IFD_ICC_NOT_PRESENT.
    public static let iccNotPresent = 616
    /// IFD_NO_SUCH_DEVICE: the reader went away.
    public static let noSuchDevice = 617
    /// IFD_ERROR_INSUFFICIENT_BUFFER.
    public static let insufficientBuffer = 618
}

/// How pcscd 1.9.9 turns a driver's RESPONSECODE into the SCARD code a client sees, per PC/SC
/// function (pcsc-lite `src/ifdwrapper.c` and `src/winscard.c`). The same IFD code can give
/// different SCARD codes in different functions:
///
/// | IFD result (value) | SCardTransmit | SCardControl | SCardGetAttrib | power (connect, reconnect, disconnect) |
/// |---|---|---|---|---|
/// | IFD_SUCCESS (0) | success | success | success | success |
/// | IFD_ICC_NOT_PRESENT (616) | SCARD_E_NO_SMARTCARD | SCARD_E_NOT_TRANSACTED | SCARD_E_NOT_TRANSACTED | SCARD_E_NOT_TRANSACTED |
/// | IFD_COMMUNICATION_ERROR (612) | SCARD_E_NOT_TRANSACTED | SCARD_E_NOT_TRANSACTED | SCARD_E_NOT_TRANSACTED | SCARD_E_NOT_TRANSACTED |
/// | IFD_RESPONSE_TIMEOUT (613) | SCARD_E_NOT_TRANSACTED | SCARD_E_NOT_TRANSACTED | SCARD_E_NOT_TRANSACTED | SCARD_E_NOT_TRANSACTED |
/// | IFD_ERROR_NOT_SUPPORTED (606), IFD_NOT_SUPPORTED (614) | SCARD_E_NOT_TRANSACTED | SCARD_E_UNSUPPORTED_FEATURE | SCARD_E_NOT_TRANSACTED | SCARD_E_NOT_TRANSACTED |
/// | IFD_ERROR_INSUFFICIENT_BUFFER (618) | SCARD_E_NOT_TRANSACTED | SCARD_E_INSUFFICIENT_BUFFER | SCARD_E_INSUFFICIENT_BUFFER | SCARD_E_NOT_TRANSACTED |
/// | IFD_ERROR_TAG (600) | SCARD_E_NOT_TRANSACTED | SCARD_E_NOT_TRANSACTED | SCARD_E_UNSUPPORTED_FEATURE | SCARD_E_NOT_TRANSACTED |
/// | IFD_NO_SUCH_DEVICE (617) | SCARD_E_READER_UNAVAILABLE | SCARD_E_READER_UNAVAILABLE | SCARD_E_NOT_TRANSACTED | SCARD_E_READER_UNAVAILABLE |
///
/// IFDHICCPresence: IFD_SUCCESS or IFD_ICC_PRESENT mean present, IFD_ICC_NOT_PRESENT absent,
/// IFD_NO_SUCH_DEVICE SCARD_E_READER_UNAVAILABLE, anything else SCARD_E_NOT_TRANSACTED.
/// IFDHSetProtocolParameters is read by the in-process client's protocol selection. A card that left before a transmit is
/// reported earlier, by the handle's event: SCARD_W_REMOVED_CARD.
///
/// This is the one copy of the table: the in-process client uses it, and so do the test doubles
/// that stand in for pcscd.
public enum IFDResultMapping {
    /// SCardTransmit (ifdwrapper.c IFDTransmit); nil for success.
    public static func transmit(_ result: Int) -> PCSCError? {
        switch result {
        case IFDResponseCode.success: nil
        case IFDResponseCode.noSuchDevice: .readerUnavailable
        case IFDResponseCode.iccNotPresent: .noSmartcard
        default: .notTransacted
        }
    }

    /// SCardControl (ifdwrapper.c IFDControl); nil for success.
    public static func control(_ result: Int) -> PCSCError? {
        switch result {
        case IFDResponseCode.success: nil
        case IFDResponseCode.noSuchDevice: .readerUnavailable
        case IFDResponseCode.errorNotSupported, IFDResponseCode.notSupported: .unsupportedFeature
        case IFDResponseCode.insufficientBuffer: .insufficientBuffer
        default: .notTransacted
        }
    }

    /// SCardGetAttrib (winscard.c), for tags pcscd does not answer itself; nil for success.
    public static func attribute(_ result: Int) -> PCSCError? {
        switch result {
        case IFDResponseCode.success: nil
        case IFDResponseCode.errorTag: .unsupportedFeature
        case IFDResponseCode.insufficientBuffer: .insufficientBuffer
        default: .notTransacted
        }
    }

    /// IFDHPowerICC (ifdwrapper.c IFDPowerICC, after its presence check); nil for success.
    public static func power(_ result: Int) -> PCSCError? {
        switch result {
        case IFDResponseCode.success: nil
        case IFDResponseCode.noSuchDevice: .readerUnavailable
        default: .notTransacted
        }
    }

    /// IFDHICCPresence (ifdwrapper.c IFDStatusICC): true present, false absent.
    public static func presence(_ result: Int) -> Result<Bool, PCSCError> {
        switch result {
        case IFDResponseCode.success, IFDResponseCode.iccPresent: .success(true)
        case IFDResponseCode.iccNotPresent: .success(false)
        case IFDResponseCode.noSuchDevice: .failure(.readerUnavailable)
        default: .failure(.notTransacted)
        }
    }
}
