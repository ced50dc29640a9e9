import PCSC

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
/// IFDHSetProtocolParameters is read by ``ProtocolChoice``. A card that left before a transmit is
/// reported earlier, by the handle's event: SCARD_W_REMOVED_CARD.
public enum IFDResultMapping {
    /// SCardTransmit (ifdwrapper.c IFDTransmit); nil for success.
    public static func transmit(_ result: Int) -> PCSCError? {
        switch result {
        case IFDCode.success: nil
        case IFDCode.noSuchDevice: .readerUnavailable
        case IFDCode.iccNotPresent: .noSmartcard
        default: .notTransacted
        }
    }

    /// SCardControl (ifdwrapper.c IFDControl); nil for success.
    public static func control(_ result: Int) -> PCSCError? {
        switch result {
        case IFDCode.success: nil
        case IFDCode.noSuchDevice: .readerUnavailable
        case IFDCode.errorNotSupported, IFDCode.notSupported: .unsupportedFeature
        case IFDCode.insufficientBuffer: .insufficientBuffer
        default: .notTransacted
        }
    }

    /// SCardGetAttrib (winscard.c), for tags pcscd does not answer itself; nil for success.
    public static func attribute(_ result: Int) -> PCSCError? {
        switch result {
        case IFDCode.success: nil
        case IFDCode.errorTag: .unsupportedFeature
        case IFDCode.insufficientBuffer: .insufficientBuffer
        default: .notTransacted
        }
    }

    /// IFDHPowerICC (ifdwrapper.c IFDPowerICC, after its presence check); nil for success.
    public static func power(_ result: Int) -> PCSCError? {
        switch result {
        case IFDCode.success: nil
        case IFDCode.noSuchDevice: .readerUnavailable
        default: .notTransacted
        }
    }

    /// IFDHICCPresence (ifdwrapper.c IFDStatusICC): true present, false absent.
    public static func presence(_ result: Int) -> Result<Bool, PCSCError> {
        switch result {
        case IFDCode.success, IFDCode.iccPresent: .success(true)
        case IFDCode.iccNotPresent: .success(false)
        case IFDCode.noSuchDevice: .failure(.readerUnavailable)
        default: .failure(.notTransacted)
        }
    }
}
