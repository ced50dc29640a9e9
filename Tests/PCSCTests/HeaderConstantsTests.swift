import CPCSCLite
import PCSC
import Testing

/// Every row of ``PCSCError``'s table against the macro pcsc-lite's `pcsclite.h` defines for it, the
/// way swift-system checks its constants: a code re-declared in Swift cannot drift from the header.
@Suite struct HeaderConstantsTests {
    /// Every SCARD_* result-code macro of pcsc-lite 1.9.9 `pcsclite.h`, in the header's order.
    static let headerMacros: [(name: String, value: Int)] = [
        ("SCARD_S_SUCCESS", SCARD_S_SUCCESS),
        ("SCARD_F_INTERNAL_ERROR", SCARD_F_INTERNAL_ERROR),
        ("SCARD_E_CANCELLED", SCARD_E_CANCELLED),
        ("SCARD_E_INVALID_HANDLE", SCARD_E_INVALID_HANDLE),
        ("SCARD_E_INVALID_PARAMETER", SCARD_E_INVALID_PARAMETER),
        ("SCARD_E_INVALID_TARGET", SCARD_E_INVALID_TARGET),
        ("SCARD_E_NO_MEMORY", SCARD_E_NO_MEMORY),
        ("SCARD_F_WAITED_TOO_LONG", SCARD_F_WAITED_TOO_LONG),
        ("SCARD_E_INSUFFICIENT_BUFFER", SCARD_E_INSUFFICIENT_BUFFER),
        ("SCARD_E_UNKNOWN_READER", SCARD_E_UNKNOWN_READER),
        ("SCARD_E_TIMEOUT", SCARD_E_TIMEOUT),
        ("SCARD_E_SHARING_VIOLATION", SCARD_E_SHARING_VIOLATION),
        ("SCARD_E_NO_SMARTCARD", SCARD_E_NO_SMARTCARD),
        ("SCARD_E_UNKNOWN_CARD", SCARD_E_UNKNOWN_CARD),
        ("SCARD_E_CANT_DISPOSE", SCARD_E_CANT_DISPOSE),
        ("SCARD_E_PROTO_MISMATCH", SCARD_E_PROTO_MISMATCH),
        ("SCARD_E_NOT_READY", SCARD_E_NOT_READY),
        ("SCARD_E_INVALID_VALUE", SCARD_E_INVALID_VALUE),
        ("SCARD_E_SYSTEM_CANCELLED", SCARD_E_SYSTEM_CANCELLED),
        ("SCARD_F_COMM_ERROR", SCARD_F_COMM_ERROR),
        ("SCARD_F_UNKNOWN_ERROR", SCARD_F_UNKNOWN_ERROR),
        ("SCARD_E_INVALID_ATR", SCARD_E_INVALID_ATR),
        ("SCARD_E_NOT_TRANSACTED", SCARD_E_NOT_TRANSACTED),
        ("SCARD_E_READER_UNAVAILABLE", SCARD_E_READER_UNAVAILABLE),
        ("SCARD_P_SHUTDOWN", SCARD_P_SHUTDOWN),
        ("SCARD_E_PCI_TOO_SMALL", SCARD_E_PCI_TOO_SMALL),
        ("SCARD_E_READER_UNSUPPORTED", SCARD_E_READER_UNSUPPORTED),
        ("SCARD_E_DUPLICATE_READER", SCARD_E_DUPLICATE_READER),
        ("SCARD_E_CARD_UNSUPPORTED", SCARD_E_CARD_UNSUPPORTED),
        ("SCARD_E_NO_SERVICE", SCARD_E_NO_SERVICE),
        ("SCARD_E_SERVICE_STOPPED", SCARD_E_SERVICE_STOPPED),
        ("SCARD_E_UNEXPECTED", SCARD_E_UNEXPECTED),
        ("SCARD_E_UNSUPPORTED_FEATURE", SCARD_E_UNSUPPORTED_FEATURE),
        ("SCARD_E_ICC_INSTALLATION", SCARD_E_ICC_INSTALLATION),
        ("SCARD_E_ICC_CREATEORDER", SCARD_E_ICC_CREATEORDER),
        ("SCARD_E_DIR_NOT_FOUND", SCARD_E_DIR_NOT_FOUND),
        ("SCARD_E_FILE_NOT_FOUND", SCARD_E_FILE_NOT_FOUND),
        ("SCARD_E_NO_DIR", SCARD_E_NO_DIR),
        ("SCARD_E_NO_FILE", SCARD_E_NO_FILE),
        ("SCARD_E_NO_ACCESS", SCARD_E_NO_ACCESS),
        ("SCARD_E_WRITE_TOO_MANY", SCARD_E_WRITE_TOO_MANY),
        ("SCARD_E_BAD_SEEK", SCARD_E_BAD_SEEK),
        ("SCARD_E_INVALID_CHV", SCARD_E_INVALID_CHV),
        ("SCARD_E_UNKNOWN_RES_MNG", SCARD_E_UNKNOWN_RES_MNG),
        ("SCARD_E_NO_SUCH_CERTIFICATE", SCARD_E_NO_SUCH_CERTIFICATE),
        ("SCARD_E_CERTIFICATE_UNAVAILABLE", SCARD_E_CERTIFICATE_UNAVAILABLE),
        ("SCARD_E_NO_READERS_AVAILABLE", SCARD_E_NO_READERS_AVAILABLE),
        ("SCARD_E_COMM_DATA_LOST", SCARD_E_COMM_DATA_LOST),
        ("SCARD_E_NO_KEY_CONTAINER", SCARD_E_NO_KEY_CONTAINER),
        ("SCARD_E_SERVER_TOO_BUSY", SCARD_E_SERVER_TOO_BUSY),
        ("SCARD_W_UNSUPPORTED_CARD", SCARD_W_UNSUPPORTED_CARD),
        ("SCARD_W_UNRESPONSIVE_CARD", SCARD_W_UNRESPONSIVE_CARD),
        ("SCARD_W_UNPOWERED_CARD", SCARD_W_UNPOWERED_CARD),
        ("SCARD_W_RESET_CARD", SCARD_W_RESET_CARD),
        ("SCARD_W_REMOVED_CARD", SCARD_W_REMOVED_CARD),
        ("SCARD_W_SECURITY_VIOLATION", SCARD_W_SECURITY_VIOLATION),
        ("SCARD_W_WRONG_CHV", SCARD_W_WRONG_CHV),
        ("SCARD_W_CHV_BLOCKED", SCARD_W_CHV_BLOCKED),
        ("SCARD_W_EOF", SCARD_W_EOF),
        ("SCARD_W_CANCELLED_BY_USER", SCARD_W_CANCELLED_BY_USER),
        ("SCARD_W_CARD_NOT_AUTHENTICATED", SCARD_W_CARD_NOT_AUTHENTICATED),
    ]

    @Test func everyHeaderMacroHasItsNameAndCode() {
        for macro in Self.headerMacros {
            let error = PCSCError(rawValue: macro.value)
            // SCARD_E_UNEXPECTED shares 0x8010001F with SCARD_E_UNSUPPORTED_FEATURE; pcsc-lite's own
            // pcsc_stringify_error names the value SCARD_E_UNSUPPORTED_FEATURE, and so do we.
            let expected = macro.name == "SCARD_E_UNEXPECTED" ? "SCARD_E_UNSUPPORTED_FEATURE" : macro.name
            #expect(error.name == expected, "\(macro.name) = 0x\(String(error.code, radix: 16, uppercase: true))")
        }
    }

    @Test func everyTableRowIsAHeaderMacro() {
        let headerCodes = Set(Self.headerMacros.map { UInt32(truncatingIfNeeded: $0.value) })
        for known in PCSCError.knownCodes {
            #expect(headerCodes.contains(known.code), "\(known.name) is not in pcsclite.h")
            let macro = Self.headerMacros.first { $0.name == known.name }
            #expect(macro.map { UInt32(truncatingIfNeeded: $0.value) } == known.code, "\(known.name)")
        }
        #expect(PCSCError.knownCodes.count == headerCodes.count)
    }
}
