import PCSC
import PN53x
import Transcript

// The PC/SC layer sits below the transcript and PN532 layers and cannot name their protocols; the
// conformances live here, in the module that sees all three.

extension PCSCError: TranscriptDescribableError {
    /// `! SCARD_E_NO_SMARTCARD 0x8010000C`: PC/SC failures keep their exact name and code.
    public var transcriptFailure: TranscriptFailure {
        TranscriptFailure(name: name, code: code, message: function.map { "\($0) failed" })
    }
}

extension PCSCError: PCSCErrorCodeProviding {
    /// The 32-bit code, so the ACR122 layer can recognise SCARD_E_NOT_TRANSACTED (0x80100016) on
    /// an escape command (docs/cases.md P09).
    public var pcscCode: UInt32 { code }
}
