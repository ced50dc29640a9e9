#if canImport(Glibc)
import Glibc
#endif

/// The pcsc-lite client: contexts on the pcscd that libpcsclite reaches (the system's at
/// /run/pcscd/pcscd.comm, or the one `PCSCLITE_CSOCK_NAME` names, read once per process).
///
///     let context = try PCSCLiteClient().establishContext()
///     let readers = try context.listReaders()
///
/// The corresponding PC/SC function is SCardEstablishContext.
public struct PCSCLiteClient: PCSCClient {
    /// The client; nothing is opened until ``establishContext()``.
    public init() {}

    /// A new ``PCSCContext``.
    /// - Throws: `PCSCError` — SCARD_E_NO_SERVICE (0x8010001D) when pcscd is not running.
    public func establishContext() throws(PCSCError) -> any PCSCClientContext {
        try PCSCContext()
    }

    /// pcsc-lite's socket when PCSCLITE_CSOCK_NAME is not set (pcsc-lite's USE_IPCDIR "/run/pcscd").
    public static let defaultSocketPath = "/run/pcscd/pcscd.comm"

    /// `PCSCLITE_CSOCK_NAME` when set (what libpcsclite connects to), else ``defaultSocketPath``.
    public var sharedSocketPath: String? {
        if let value = getenv("PCSCLITE_CSOCK_NAME"), value.pointee != 0 { return String(cString: value) }
        return Self.defaultSocketPath
    }
}
