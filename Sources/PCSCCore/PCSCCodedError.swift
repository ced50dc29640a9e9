/// An error that carries a PC/SC result code.
///
/// Layers that only see a ``CardChannel`` recognise a reader's answer by its code, whichever client
/// produced the error: ``PCSCError`` (pcsc-lite and the in-process client), a replayed `!` line of a
/// transcript, or a test double. The ACR122U layer, for example, reads SCARD_E_NOT_TRANSACTED
/// (0x80100016) on the first escape command as "libccid refuses escape commands"
/// (docs/cases.md P09).
///
/// Conform an error type here, in the module that defines it; never retroactively in a module above.
public protocol PCSCCodedError: Error {
    /// The 32-bit result code, e.g. 0x80100016 for SCARD_E_NOT_TRANSACTED.
    var pcscCode: UInt32 { get }
}

extension PCSCError: PCSCCodedError {
    /// The 32-bit ``code``.
    public var pcscCode: UInt32 { code }
}

extension Error {
    /// The PC/SC result code this error carries, if it is a ``PCSCCodedError``.
    public var pcscResultCode: UInt32? { (self as? any PCSCCodedError)?.pcscCode }
}
