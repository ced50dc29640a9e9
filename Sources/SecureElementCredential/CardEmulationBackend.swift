import PN53x

/// Whether a reader can emulate a card for host-routed APDUs.
public enum EmulationSupport: Sendable, Hashable {
    /// The reader can emulate (an ACR122U with escape commands).
    case supported
    /// Card emulation is not possible on this reader; `reason` says why and what to do.
    case unsupported(reason: String, cause: UnderlyingCause?)
}

/// The parameters a target is armed with (TgInitAsTarget, PN532 UM0701-02 §7.3.14).
public struct TargetParameters: Sendable, Hashable {
    /// The UID: 08 + 3 bytes (TgInitAsTarget NFCID1t; the PN532 fixes the first byte).
    public var uid: EmulatedUID
    /// ATQA (SENS_RES, ISO/IEC 14443-3 §6.5.2), e.g. 00 04.
    public var atqa: ATQA
    /// SAK (SEL_RES, ISO/IEC 14443-3 §6.5.3.4); 20 = ISO/IEC 14443-4 compliant.
    public var sak: UInt8
    /// Historical bytes the PN532 appends to its ATS `05 75 33 92 03`, at most 48.
    public var historicalBytes: [UInt8]
    /// What the engine does after a release (``CredentialSession/CardEmulationOptions/afterRelease``).
    public var afterRelease: TargetRearm

    /// The parameters `options` arm the target with.
    public init(_ options: CardEmulationOptions) {
        uid = options.uid
        atqa = options.atqa
        sak = options.sak
        historicalBytes = options.historicalBytes
        afterRelease = options.afterRelease
    }
}

/// How one bounded activation wait ended.
public enum ActivationOutcome: Sendable, Hashable {
    /// A terminal activated the target; its first command (RATS, e.g. E0 80) and the mode byte.
    case activated(mode: UInt8, initiatorCommand: [UInt8])
    /// No terminal within the step (the MCU timeout passed, or the wait was interrupted).
    case noTerminal
    /// An initiator activated the target in a mode other than ISO/IEC 14443-4 PICC: a
    /// peer-to-peer (NFC-DEP) initiator sending ATR_REQ (mode bit 04), or a plain Type A reader
    /// (mode bit 08 clear). No APDU reader: the engine reports it and arms the target again, as
    /// libnfc's `pn53x_target_init` loops on TgInitAsTarget until the mode is the one it wants
    /// (docs/terminal-models.md §6.3).
    case notISODEP(mode: UInt8, initiatorCommand: [UInt8])
}

/// What the terminal did next, as the device reports it.
public enum TargetReceiveOutcome: Sendable, Hashable {
    /// A C-APDU.
    case command([UInt8])
    /// The terminal released the target (PN532 status 29 or 2B), or it never was activated (25).
    case released(UnderlyingCause)
    /// Nothing within one MCU timeout: the terminal went silent (left the field).
    case silent
}

/// Whether the R-APDU reached the terminal.
public enum TargetSendOutcome: Sendable, Hashable {
    /// TgSetData succeeded: the terminal has the R-APDU.
    case delivered
    /// The terminal released the target or left first (PN532 status 29/2B/25, the cause).
    case released(UnderlyingCause)
}

/// The device side of card emulation: what the session engine drives (docs/session-model.md,
/// docs/acr122-pn532.md §5 and §5b).
///
/// Every operation is a bounded step: on real hardware one PN532 command that blocks at most one
/// MCU timeout (an escape command cannot be cancelled), so the engine re-arms in steps inside the
/// emulation window and `endCardEmulation` returns within one step. Field events come only from
/// what these steps report: activation → `fieldPresent`; release or silence → `fieldAbsent`.
///
/// Calls never overlap. `interrupt()` may come from any task while a step runs: backends that can
/// end a wait early do so; hardware backends cannot and ignore it.
public protocol CardEmulationBackend: AnyObject, Sendable {
    /// A name for messages (the PC/SC reader name).
    var readerName: String { get }
    /// What the one-session-per-reader rule keys on: the reader name, prefixed with the client's
    /// `PCSCClient.readerScope` when names repeat across clients (in-process readers). Default:
    /// `readerName`.
    var readerClaim: String { get }
    /// The pcscd socket through which other processes reach this reader (see
    /// `PCSCClient.sharedSocketPath`): then the one-session-per-reader rule holds across processes
    /// too, through a lock file. nil (the default) for a reader only this process sees.
    var sharedSocketPath: String? { get }
    /// Whether this reader can emulate; decided when the backend was made.
    var support: EmulationSupport { get }
    /// Makes the reader ready: automatic PICC polling off (`FF 00 51 00 00`), RF field off,
    /// SetParameters 30, the bounded MCU timeout.
    func prepare() async throws
    /// Arms the target (TgInitAsTarget) and waits at most one step for a terminal.
    func waitForActivation(_ parameters: TargetParameters) async throws -> ActivationOutcome
    /// The terminal's next C-APDU (TgGetData), waiting at most one step.
    func receiveCommand() async throws -> TargetReceiveOutcome
    /// Sends the R-APDU (TgSetData), at most `maximumResponseLength` bytes.
    func sendResponse(_ response: [UInt8]) async throws -> TargetSendOutcome
    /// Puts the reader back as it was: automatic PICC polling on (`FF 00 51 FF 00`).
    func restore() async throws
    /// Ends the current wait early when the backend can.
    func interrupt()
    /// The longest C-APDU the device passes (PN532 frame limit, about 252 bytes on an ACR122U).
    var maximumCommandLength: Int { get }
    /// The longest R-APDU the device sends in one TgSetData.
    var maximumResponseLength: Int { get }
}

extension CardEmulationBackend {
    /// Default: the reader name (readers of one process).
    public var readerClaim: String { readerName }
    /// Default: nil (no claim across processes).
    public var sharedSocketPath: String? { nil }
}
