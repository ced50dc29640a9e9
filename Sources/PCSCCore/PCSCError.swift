/// An error returned by a PC/SC function: the raw result code, its `SCARD_*` name and its meaning.
///
/// PC/SC result codes are 32-bit values (0x8010xxxx), but they arrive in several widths: pcsc-lite on
/// 64-bit Linux returns them as a 64-bit `LONG` (0x0000000080100008), Windows and some bindings as a
/// negative `Int32` (−2146435064), others sign-extended (0xFFFFFFFF80100008). ``init(rawValue:function:)``
/// normalizes every width to the same 32-bit ``code`` (docs/cases.md P04), so errors compare equal whatever
/// path they took. Equality and hashing use ``code`` only; ``function`` is context for messages.
///
/// Unknown codes are kept as they are (an open set of values): the type never traps.
///
/// Source: pcsc-lite `pcsclite.h` (the SCARD_* result codes and their descriptions), PC/SC
/// Workgroup specification part 5 §3.
public struct PCSCError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The 32-bit result code, e.g. 0x8010000C for SCARD_E_NO_SMARTCARD.
    public let code: UInt32
    /// The PC/SC function that failed, e.g. "SCardTransmit", when known.
    public let function: String?
    /// What exactly went wrong and what to do, when the caller knows more than the code says (e.g.
    /// the answer's and the receive buffer's sizes); printed in place of ``remedy``.
    public let detail: String?

    /// Makes an error from a 32-bit code.
    /// - Parameters:
    ///   - code: the 32-bit result code, e.g. 0x80100008 for SCARD_E_INSUFFICIENT_BUFFER.
    ///   - function: the PC/SC function that failed, e.g. "SCardTransmit".
    ///   - detail: what exactly went wrong and what to do, printed in place of ``remedy``.
    public init(code: UInt32, function: String? = nil, detail: String? = nil) {
        self.code = code
        self.function = function
        self.detail = detail
    }

    /// Makes an error from a result code in any width: a 64-bit LONG, a negative Int32 or a
    /// sign-extended 64-bit value all give the same ``code`` (docs/cases.md P04).
    public init(rawValue: Int, function: String? = nil) {
        self.init(code: UInt32(truncatingIfNeeded: rawValue), function: function)
    }

    /// The constant's name, e.g. "SCARD_E_NO_SMARTCARD", or "SCARD_UNKNOWN_0x12345678".
    public var name: String { Self.table[code]?.name ?? "SCARD_UNKNOWN_0x" + hex32(code) }

    /// What the code means, from pcsc-lite's documentation of each constant.
    public var meaning: String { Self.table[code]?.meaning ?? "an unknown PC/SC result code" }

    /// What a user can do about this error, when there is something to do.
    public var remedy: String? {
        switch code {
        case Self.noService.code, Self.serviceStopped.code:
            return "start pcscd (e.g. `systemctl start pcscd`), or set PCSCLITE_CSOCK_NAME to the socket of a running one"
        case Self.noSmartcard.code, Self.removedCard.code:
            return "place a card or tag on the reader and try again"
        case Self.noReadersAvailable.code, Self.unknownReader.code, Self.readerUnavailable.code:
            return "check that the reader is plugged in and listed by `secbridge readers`"
        case Self.sharingViolation.code:
            return "another program holds the card exclusively; close it and retry"
        case Self.insufficientBuffer.code:
            return "this is a bug in the caller's receive buffer size; please report it"
        default:
            return nil
        }
    }

    /// "SCardTransmit failed: SCARD_E_NO_SMARTCARD (0x8010000C): …".
    public var description: String {
        var text = ""
        if let function { text += function + " failed: " }
        text += "\(name) (0x\(hex32(code))): \(meaning)"
        if let note = detail ?? remedy { text += "; " + note }
        return text
    }

    public static func == (lhs: PCSCError, rhs: PCSCError) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    /// Whether this code means pcscd went away (docs/cases.md P12): SCARD_E_NO_SERVICE or SCARD_E_SERVICE_STOPPED.
    /// After such an error the context must be released and established again.
    public var isServiceLost: Bool {
        code == Self.noService.code || code == Self.serviceStopped.code
    }

    /// ``isServiceLost``, or SCARD_F_COMM_ERROR (0x80100013): what libpcsclite's client decodes
    /// from its broken socket when pcscd dies while a call waits inside it (measured with pcsc-lite
    /// 1.9.9 on SCardTransmit and SCardControl, docs/faults.md). Code that holds a card or a
    /// target opens it again on such an error; ``isServiceLost`` alone says the context must go.
    public var isServiceLostOrCut: Bool {
        isServiceLost || code == Self.commError.code
    }
}

extension PCSCError {
    /// SCARD_F_INTERNAL_ERROR (0x80100001): an internal consistency check in the resource manager
    /// failed (pcsc-lite `pcsclite.h`).
    public static let internalError = PCSCError(code: 0x8010_0001)
    /// SCARD_E_CANCELLED (0x80100002): the call was cancelled by SCardCancel.
    public static let cancelled = PCSCError(code: 0x8010_0002)
    /// SCARD_E_INVALID_HANDLE (0x80100003): the context or card handle is not (or no longer) valid.
    public static let invalidHandle = PCSCError(code: 0x8010_0003)
    /// SCARD_E_INVALID_PARAMETER (0x80100004): a parameter could not be interpreted.
    public static let invalidParameter = PCSCError(code: 0x8010_0004)
    /// SCARD_E_NO_MEMORY (0x80100006): not enough memory to complete the call.
    public static let noMemory = PCSCError(code: 0x8010_0006)
    /// SCARD_E_INSUFFICIENT_BUFFER (0x80100008): the buffer for the answer is too small (an APDU
    /// response or a control answer longer than the caller allowed).
    public static let insufficientBuffer = PCSCError(code: 0x8010_0008)
    /// SCARD_E_UNKNOWN_READER (0x80100009): no reader of that name (it may have been unplugged).
    public static let unknownReader = PCSCError(code: 0x8010_0009)
    /// SCARD_E_TIMEOUT (0x8010000A): a timeout expired: SCardGetStatusChange saw no change, or a
    /// transaction could not begin in time.
    public static let timeout = PCSCError(code: 0x8010_000A)
    /// SCARD_E_SHARING_VIOLATION (0x8010000B): another connection holds the card or reader in a way
    /// that excludes this one (exclusive share, or a transaction).
    public static let sharingViolation = PCSCError(code: 0x8010_000B)
    /// SCARD_E_NO_SMARTCARD (0x8010000C): the operation needs a card and none is in the reader.
    public static let noSmartcard = PCSCError(code: 0x8010_000C)
    /// SCARD_E_PROTO_MISMATCH (0x8010000F): none of the requested protocols is one the card can use.
    public static let protoMismatch = PCSCError(code: 0x8010_000F)
    /// SCARD_E_NOT_READY (0x80100010): the reader or card is not ready to accept commands.
    public static let notReady = PCSCError(code: 0x8010_0010)
    /// SCARD_E_INVALID_VALUE (0x80100011): a parameter value is out of range.
    public static let invalidValue = PCSCError(code: 0x8010_0011)
    /// SCARD_F_COMM_ERROR (0x80100013): communication with the resource manager or the reader failed;
    /// pcscd 1.9.9 also reports a driver's IFD_COMMUNICATION_ERROR this way (``IFDResultMapping``).
    public static let commError = PCSCError(code: 0x8010_0013)
    /// SCARD_E_NOT_TRANSACTED (0x80100016): the reader could not complete the exchange; libccid
    /// answers an escape command it does not allow this way (docs/cases.md P09).
    public static let notTransacted = PCSCError(code: 0x8010_0016)
    /// SCARD_E_READER_UNAVAILABLE (0x80100017): the reader is not available (unplugged, or its driver
    /// failed).
    public static let readerUnavailable = PCSCError(code: 0x8010_0017)
    /// SCARD_E_NO_SERVICE (0x8010001D): the resource manager (pcscd) is not running or not reachable.
    public static let noService = PCSCError(code: 0x8010_001D)
    /// SCARD_E_SERVICE_STOPPED (0x8010001E): the resource manager shut down while the call was under
    /// way.
    public static let serviceStopped = PCSCError(code: 0x8010_001E)
    /// SCARD_E_UNSUPPORTED_FEATURE, which pcsc-lite gives the same value as SCARD_E_UNEXPECTED.
    public static let unsupportedFeature = PCSCError(code: 0x8010_001F)
    /// SCARD_E_NO_READERS_AVAILABLE (0x8010002E): no reader is attached (SCardListReaders).
    public static let noReadersAvailable = PCSCError(code: 0x8010_002E)
    /// SCARD_W_UNRESPONSIVE_CARD (0x80100066): the card does not answer a reset (no ATR).
    public static let unresponsiveCard = PCSCError(code: 0x8010_0066)
    /// SCARD_W_UNPOWERED_CARD (0x80100067): the card is not powered.
    public static let unpoweredCard = PCSCError(code: 0x8010_0067)
    /// SCARD_W_RESET_CARD (0x80100068): another connection reset the card; reconnect to go on.
    public static let resetCard = PCSCError(code: 0x8010_0068)
    /// SCARD_W_REMOVED_CARD (0x80100069): the card was removed from the reader.
    public static let removedCard = PCSCError(code: 0x8010_0069)
    /// SCARD_W_SECURITY_VIOLATION (0x8010006A): access was refused because of a security violation.
    public static let securityViolation = PCSCError(code: 0x8010_006A)

    /// Every result code pcsc-lite 1.9.9 defines, with its name and meaning (pcsclite.h).
    /// 0x8010001F is listed once, as SCARD_E_UNSUPPORTED_FEATURE, the name pcsc-lite returns it for.
    package static let entries: [(code: UInt32, name: String, meaning: String)] = [
        (0x0000_0000, "SCARD_S_SUCCESS", "no error was encountered"),
        (0x8010_0001, "SCARD_F_INTERNAL_ERROR", "an internal consistency check failed"),
        (0x8010_0002, "SCARD_E_CANCELLED", "the action was cancelled by an SCardCancel request"),
        (0x8010_0003, "SCARD_E_INVALID_HANDLE", "the supplied handle was invalid"),
        (0x8010_0004, "SCARD_E_INVALID_PARAMETER", "one or more of the supplied parameters could not be properly interpreted"),
        (0x8010_0005, "SCARD_E_INVALID_TARGET", "registry startup information is missing or invalid"),
        (0x8010_0006, "SCARD_E_NO_MEMORY", "not enough memory available to complete this command"),
        (0x8010_0007, "SCARD_F_WAITED_TOO_LONG", "an internal consistency timer has expired"),
        (0x8010_0008, "SCARD_E_INSUFFICIENT_BUFFER", "the buffer to receive returned data is too small for the returned data"),
        (0x8010_0009, "SCARD_E_UNKNOWN_READER", "the specified reader name is not recognized"),
        (0x8010_000A, "SCARD_E_TIMEOUT", "the user-specified timeout value has expired"),
        (0x8010_000B, "SCARD_E_SHARING_VIOLATION", "the card cannot be accessed because of other connections outstanding"),
        (0x8010_000C, "SCARD_E_NO_SMARTCARD", "the operation requires a card, but no card is in the reader"),
        (0x8010_000D, "SCARD_E_UNKNOWN_CARD", "the specified card name is not recognized"),
        (0x8010_000E, "SCARD_E_CANT_DISPOSE", "the system could not dispose of the media in the requested manner"),
        (0x8010_000F, "SCARD_E_PROTO_MISMATCH", "the requested protocols are incompatible with the protocol currently in use with the card"),
        (0x8010_0010, "SCARD_E_NOT_READY", "the reader or card is not ready to accept commands"),
        (0x8010_0011, "SCARD_E_INVALID_VALUE", "one or more of the supplied parameter values could not be properly interpreted"),
        (0x8010_0012, "SCARD_E_SYSTEM_CANCELLED", "the action was cancelled by the system, presumably to log off or shut down"),
        (0x8010_0013, "SCARD_F_COMM_ERROR", "an internal communications error has been detected"),
        (0x8010_0014, "SCARD_F_UNKNOWN_ERROR", "an internal error has been detected, but the source is unknown"),
        (0x8010_0015, "SCARD_E_INVALID_ATR", "an ATR obtained from the registry is not a valid ATR string"),
        (0x8010_0016, "SCARD_E_NOT_TRANSACTED", "an attempt was made to end a non-existent transaction, or the reader refused the exchange"),
        (0x8010_0017, "SCARD_E_READER_UNAVAILABLE", "the specified reader is not currently available for use"),
        (0x8010_0018, "SCARD_P_SHUTDOWN", "the operation has been aborted to allow the server application to exit"),
        (0x8010_0019, "SCARD_E_PCI_TOO_SMALL", "the PCI receive buffer was too small"),
        (0x8010_001A, "SCARD_E_READER_UNSUPPORTED", "the reader driver does not meet minimal requirements for support"),
        (0x8010_001B, "SCARD_E_DUPLICATE_READER", "the reader driver did not produce a unique reader name"),
        (0x8010_001C, "SCARD_E_CARD_UNSUPPORTED", "the card does not meet minimal requirements for support"),
        (0x8010_001D, "SCARD_E_NO_SERVICE", "the smart card resource manager (pcscd) is not running"),
        (0x8010_001E, "SCARD_E_SERVICE_STOPPED", "the smart card resource manager (pcscd) has shut down"),
        (0x8010_001F, "SCARD_E_UNSUPPORTED_FEATURE", "the reader or card does not support the requested feature (also SCARD_E_UNEXPECTED)"),
        (0x8010_0020, "SCARD_E_ICC_INSTALLATION", "no primary provider can be found for the card"),
        (0x8010_0021, "SCARD_E_ICC_CREATEORDER", "the requested order of object creation is not supported"),
        (0x8010_0023, "SCARD_E_DIR_NOT_FOUND", "the identified directory does not exist in the card"),
        (0x8010_0024, "SCARD_E_FILE_NOT_FOUND", "the identified file does not exist in the card"),
        (0x8010_0025, "SCARD_E_NO_DIR", "the supplied path does not represent a card directory"),
        (0x8010_0026, "SCARD_E_NO_FILE", "the supplied path does not represent a card file"),
        (0x8010_0027, "SCARD_E_NO_ACCESS", "access is denied to this file"),
        (0x8010_0028, "SCARD_E_WRITE_TOO_MANY", "the card does not have enough memory to store the information"),
        (0x8010_0029, "SCARD_E_BAD_SEEK", "there was an error trying to set the card file object pointer"),
        (0x8010_002A, "SCARD_E_INVALID_CHV", "the supplied PIN is incorrect"),
        (0x8010_002B, "SCARD_E_UNKNOWN_RES_MNG", "an unrecognized error code was returned from a layered component"),
        (0x8010_002C, "SCARD_E_NO_SUCH_CERTIFICATE", "the requested certificate does not exist"),
        (0x8010_002D, "SCARD_E_CERTIFICATE_UNAVAILABLE", "the requested certificate could not be obtained"),
        (0x8010_002E, "SCARD_E_NO_READERS_AVAILABLE", "no reader could be found"),
        (0x8010_002F, "SCARD_E_COMM_DATA_LOST", "a communications error with the card has been detected; retry the operation"),
        (0x8010_0030, "SCARD_E_NO_KEY_CONTAINER", "the requested key container does not exist on the card"),
        (0x8010_0031, "SCARD_E_SERVER_TOO_BUSY", "the smart card resource manager is too busy to complete this operation"),
        (0x8010_0065, "SCARD_W_UNSUPPORTED_CARD", "the reader cannot communicate with the card, due to ATR configuration conflicts"),
        (0x8010_0066, "SCARD_W_UNRESPONSIVE_CARD", "the card is not responding to a reset"),
        (0x8010_0067, "SCARD_W_UNPOWERED_CARD", "power has been removed from the card, so further communication is not possible"),
        (0x8010_0068, "SCARD_W_RESET_CARD", "the card has been reset, so any shared state information is invalid"),
        (0x8010_0069, "SCARD_W_REMOVED_CARD", "the card has been removed, so further communication is not possible"),
        (0x8010_006A, "SCARD_W_SECURITY_VIOLATION", "access was denied because of a security violation"),
        (0x8010_006B, "SCARD_W_WRONG_CHV", "the card cannot be accessed because the wrong PIN was presented"),
        (0x8010_006C, "SCARD_W_CHV_BLOCKED", "the card cannot be accessed because the maximum number of PIN entry attempts has been reached"),
        (0x8010_006D, "SCARD_W_EOF", "the end of the card file has been reached"),
        (0x8010_006E, "SCARD_W_CANCELLED_BY_USER", "the user pressed Cancel on a card selection dialog"),
        (0x8010_006F, "SCARD_W_CARD_NOT_AUTHENTICATED", "no PIN was presented to the card"),
    ]

    /// Every result code pcsc-lite 1.9.9 defines (`pcsclite.h`), in the header's order, each with its
    /// ``name`` and ``meaning``; `PCSCTests/HeaderConstantsTests` checks each against its macro.
    public static let knownCodes: [PCSCError] = entries.map { PCSCError(code: $0.code) }

    static let table: [UInt32: (name: String, meaning: String)] = {
        var table: [UInt32: (name: String, meaning: String)] = [:]
        for entry in entries { table[entry.code] = (entry.name, entry.meaning) }
        return table
    }()
}

/// Eight uppercase hex digits, as pcsc-lite's documentation writes result codes.
package func hex32(_ value: UInt32) -> String {
    let digits = String(value, radix: 16, uppercase: true)
    return String(repeating: "0", count: 8 - digits.count) + digits
}

/// Two uppercase hex digits.
package func hex8(_ value: UInt8) -> String {
    let digits = String(value, radix: 16, uppercase: true)
    return digits.count == 1 ? "0" + digits : digits
}
