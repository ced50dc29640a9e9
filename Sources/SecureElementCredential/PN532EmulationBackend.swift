import ISO7816
import PCSC
import PN53x
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Holds the PN532 client, which only the executor's thread touches.
final class PN532Box: @unchecked Sendable {
    // @unchecked: `pn532` and `lost` (not thread-safe) are used only inside jobs of one BlockingExecutor.
    private(set) var pn532: PN532?
    /// pcscd went away under the client: its context is released, and a new one is opened first.
    var lost = false
    /// The channel's release, until it is taken to run (once).
    private let release: Mutex<(@Sendable () -> Void)?>
    init(pn532: PN532?, close: (@Sendable () -> Void)?) {
        self.pn532 = pn532
        self.release = Mutex(close)
    }

    /// A client on a new channel and its release, after pcscd came back (on the executor's thread).
    func install(_ pn532: PN532, close: @escaping @Sendable () -> Void) {
        self.pn532 = pn532
        release.withLock { $0 = close }
        lost = false
    }

    /// The release, the first time only (nil afterwards, and for a box without a channel).
    func takeRelease() -> (@Sendable () -> Void)? {
        release.withLock { release in
            defer { release = nil }
            return release
        }
    }
}

/// Card emulation on an ACR122U: the PN532 in target mode through the PN53x client
/// (docs/acr122-pn532.md §5, §5b).
///
/// - `prepare()`: automatic PICC polling off (`FF 00 51 00 00`), the bounded MCU timeout
///   (`FF 00 41 TO 00`, default 1 step = 5 s), RF field off, SetParameters 30.
/// - `waitForActivation`: TgInitAsTarget (modes PassiveOnly | PICCOnly); the ACR122U answers 63 00
///   when its MCU timeout passes first, which is a step without a terminal; an answer of no bytes
///   at all (some firmware) is the same.
/// - `receiveCommand` / `sendResponse`: TgGetData / TgSetData; status 29 or 2B (and 25) mean the
///   terminal released the target; 63 00 on TgGetData means it fell silent.
/// - `restore()`: InRelease 00 (`FF 00 00 00 03 D4 52 00`), which leaves the target role even when
///   the last TgInitAsTarget was activated after the window, then `FF 00 51 FF 00`, so the reader
///   polls for cards again (and `FF 00 41 01 00` when `mcuTimeout` is not one 5 s step), through
///   `PN532.restoreReaderDefaults(_:onStep:)` (docs/acr122-pn532.md §5e).
///
/// Every command blocks at most one MCU timeout and cannot be cancelled, so `interrupt()` does
/// nothing: the engine stops within one step. All calls run on `executor`.
///
/// pcscd going away under a backend made by ``open(readerName:executor:mcuTimeout:readerScope:sharedSocketPath:channel:)``
/// (SCARD_E_NO_SERVICE, SCARD_E_SERVICE_STOPPED, or SCARD_F_COMM_ERROR from a call it was inside)
/// does not end the emulation: the channel and its context are released, the call throws a
/// `CredentialSessionError` `internalError` (one failed step, no lost reader), and the next
/// `waitForActivation` opens the channel again (the `channel` closure: a new context), prepares the
/// reader again and arms the target. While pcscd is not back (or has not listed the reader yet)
/// each `waitForActivation` is a step without a terminal, 250 ms long, until the window ends.
public final class PN532EmulationBackend: CardEmulationBackend {
    /// The PC/SC reader name.
    public let readerName: String
    /// `readerScope` + `readerName` (see `PCSCClient.readerScope`).
    public let readerClaim: String
    /// The pcscd socket, for the one-session-per-reader rule across processes; nil for in-process readers.
    public let sharedSocketPath: String?
    /// Whether this reader can emulate, and why not.
    public let support: EmulationSupport
    /// How long one TgInitAsTarget or TgGetData may block (`FF 00 41 TO 00`, ACR122U API v2.04 §6.3).
    public let mcuTimeout: ACR122MCUTimeout
    /// TgGetData's C-APDU is cut at 252 bytes by the ACR122's frame size (docs/acr122-pn532.md §4).
    public let maximumCommandLength = PN532HostFrame.maximumParameterLength - 1
    /// TgSetData's R-APDU limit, the frame's parameter bytes (docs/acr122-pn532.md §4).
    public let maximumResponseLength = PN532HostFrame.maximumParameterLength
    private let executor: BlockingExecutor
    private let box: PN532Box
    /// Opens the channel again after pcscd came back; nil for a backend made with `init`.
    private let reopen: (@Sendable () throws -> (channel: any CardChannel, close: @Sendable () -> Void))?

    /// - Parameters:
    ///   - readerName: the PC/SC reader name, as SCardListReaders gives it.
    ///   - pn532: the client over the reader's direct (escape) connection.
    ///   - executor: the thread every PN532 command and the release run on (never Swift's pool).
    ///   - mcuTimeout: the step: how long one TgInitAsTarget or TgGetData may block (`FF 00 41 TO 00`,
    ///     ACR122U API v2.04 §6.3); default one 5 s step.
    ///   - readerScope: the client's `PCSCClient.readerScope`, for the one-session-per-reader rule.
    ///   - sharedSocketPath: the client's `PCSCClient.sharedSocketPath`, for the same rule across processes.
    ///   - close: releases the connection (SCardDisconnect, then SCardReleaseContext), run once on
    ///     `executor` by ``close()`` or `deinit`; nil when the caller releases it.
    public convenience init(
        readerName: String, pn532: PN532, executor: BlockingExecutor, mcuTimeout: ACR122MCUTimeout = .fiveSecondSteps(1),
        readerScope: String = "", sharedSocketPath: String? = nil, close: (@Sendable () -> Void)? = nil
    ) {
        self.init(
            readerName: readerName, box: PN532Box(pn532: pn532, close: close), executor: executor, mcuTimeout: mcuTimeout,
            readerScope: readerScope, sharedSocketPath: sharedSocketPath, reopen: nil)
    }

    private init(
        readerName: String, box: PN532Box, executor: BlockingExecutor, mcuTimeout: ACR122MCUTimeout, readerScope: String,
        sharedSocketPath: String?, reopen: (@Sendable () throws -> (channel: any CardChannel, close: @Sendable () -> Void))?
    ) {
        self.readerName = readerName
        self.readerClaim = readerScope + readerName
        self.sharedSocketPath = sharedSocketPath
        self.support = .supported
        self.mcuTimeout = mcuTimeout
        self.executor = executor
        self.box = box
        self.reopen = reopen
    }

    private init(readerName: String, readerScope: String, unsupported reason: String, cause: UnderlyingCause?, executor: BlockingExecutor) {
        self.readerName = readerName
        self.readerClaim = readerScope + readerName
        self.sharedSocketPath = nil
        self.support = .unsupported(reason: reason, cause: cause)
        self.mcuTimeout = .fiveSecondSteps(1)
        self.executor = executor
        box = PN532Box(pn532: nil, close: nil)
        reopen = nil
    }

    /// A backend nobody closed releases its channel on the executor, without waiting; if the
    /// process exits meanwhile, that call races pcsc-lite's library destructor (see ``close()``).
    deinit {
        if let release = box.takeRelease() { executor.enqueue(release) }
    }

    /// Releases the channel (the `close` given to `open`/`init`: SCardDisconnect, then
    /// SCardReleaseContext) on the executor and returns once it ran; later calls do nothing.
    ///
    /// Call it before the command returns. A release left to `deinit` may still be inside
    /// pcsc-lite when the main thread calls exit(3): exit runs libpcsclite's destructor, which
    /// frees the client's context list (`list_destroy(&contextMapList)`, pcsc-lite
    /// src/winscard_clnt.c), and the release still using that list then dies of SIGSEGV after the
    /// command printed everything (docs/test-infrastructure.md, "pcsc-lite at exit").
    public func close() async {
        guard let release = box.takeRelease() else { return }
        // A stopped executor refuses the job: its owner is gone, and nothing may run there any more.
        _ = try? await executor.run { release() }
    }

    /// Opens `channel` (a DIRECT connection to `readerName`) as an ACR122U, or makes a backend
    /// whose `support` says why this reader cannot emulate: the ACR1252U/ACR1255U family (card
    /// emulation there is memory images only, docs/acr122-pn532.md §7), a reader whose firmware is not
    /// an ACR122U, escape commands refused by the CCID driver (docs/cases.md P09).
    /// - Parameters:
    ///   - readerName: the PC/SC reader name; an ACR1252U/ACR1255U name gives an unsupported backend
    ///     without connecting.
    ///   - executor: the thread `open`, every PN532 command and the release run on.
    ///   - mcuTimeout: how long one TgInitAsTarget or TgGetData may block (`FF 00 41 TO 00`,
    ///     ACR122U API v2.04 §6.3); default one 5 s step.
    ///   - readerScope: the client's `PCSCClient.readerScope`.
    ///   - sharedSocketPath: the client's `PCSCClient.sharedSocketPath` (nil: in-process readers).
    ///   - open: connects, on the executor thread; returns the channel and its release. What it
    ///     throws becomes an unsupported backend naming the cause, not an error of this call.
    public static func open(
        readerName: String, executor: BlockingExecutor, mcuTimeout: ACR122MCUTimeout = .fiveSecondSteps(1),
        readerScope: String = "", sharedSocketPath: String? = nil, channel open: @escaping @Sendable () throws -> (channel: any CardChannel, close: @Sendable () -> Void)
    ) async -> PN532EmulationBackend {
        let lowered = readerName.lowercased()
        if lowered.contains("acr1252") || lowered.contains("acr1255") {
            return PN532EmulationBackend(
                readerName: readerName, readerScope: readerScope,
                unsupported: "\(readerName) is an ACR1252U/ACR1255U: its card emulation serves MIFARE Ultralight or FeliCa memory images only, not host-routed ISO 14443-4 APDUs. Use an ACR122U for card emulation; this reader still works for reader sessions",
                cause: nil, executor: executor)
        }
        do {
            let box = try await executor.run {
                let (channel, close) = try open()
                do {
                    let link = try ACR122Link.open(channel: channel, readerName: readerName, path: .escape)
                    return PN532Box(pn532: PN532(link: link), close: close)
                } catch {
                    close()
                    throw error
                }
            }
            return PN532EmulationBackend(
                readerName: readerName, box: box, executor: executor, mcuTimeout: mcuTimeout, readerScope: readerScope,
                sharedSocketPath: sharedSocketPath, reopen: open)
        } catch {
            let cause = UnderlyingCause(error)
            let reason: String
            switch error {
            case ACR122Error.escapeCommandsNotEnabled:
                reason = "card emulation needs escape commands: " + ACR122Error.escapeCommandsNotEnabledMessage
            case ACR122Error.notAnACR122, ACR122Error.noEscapeCode:
                reason = "\(readerName) is not an ACR122-class reader (PN532 behind an ACR122U): card emulation is unavailable; reader sessions still work. \(error)"
            default:
                reason = "\(readerName) could not be opened for card emulation: \(cause)"
            }
            return PN532EmulationBackend(readerName: readerName, readerScope: readerScope, unsupported: reason, cause: cause, executor: executor)
        }
    }

    /// Whether `error` means that pcscd went away (``PCSCError/isServiceLostOrCut``), also when
    /// it comes wrapped in the link's errors.
    static func meansPcscdWentAway(_ error: any Error) -> Bool {
        guard case .pcsc(let code, _) = UnderlyingCause(error) else { return false }
        return PCSCError(code: code).isServiceLostOrCut
    }

    /// `body` with the client, on the executor. After pcscd went away the channel is opened again
    /// first; `whileGone` is returned when that fails (pcscd not back yet), or the failure thrown
    /// when `whileGone` is nil.
    private func run<T: Sendable>(whileGone: T? = nil, _ body: @escaping @Sendable (PN532) throws -> T) async throws -> T {
        let box = self.box
        let name = readerName
        let reopen = self.reopen
        let timeout = mcuTimeout
        return try await executor.run {
            if box.lost, let reopen {
                do {
                    let (channel, close) = try reopen()
                    do {
                        let link = try ACR122Link.open(channel: channel, readerName: name, path: .escape)
                        let pn532 = PN532(link: link)
                        try link.setMCUTimeout(timeout)
                        try pn532.prepareForCardEmulation()
                        box.install(pn532, close: close)
                    } catch {
                        close()
                        throw error
                    }
                } catch {
                    guard let whileGone else {
                        throw CredentialSessionError(.internalError, "\(name) could not be opened again after pcscd went away: \(UnderlyingCause(error))")
                    }
                    // A bounded step on this thread of the backend's own (never Swift's pool).
                    usleep(250_000)
                    return whileGone
                }
            }
            guard let pn532 = box.pn532 else {
                throw CredentialSessionError(.featureUnavailable, "\(name) cannot emulate a card")
            }
            do {
                return try body(pn532)
            } catch where reopen != nil && Self.meansPcscdWentAway(error) {
                box.lost = true
                box.takeRelease()?()
                throw CredentialSessionError(
                    .internalError, "pcscd went away under \(name); its channel is opened again when pcscd is back", cause: UnderlyingCause(error))
            }
        }
    }

    /// PICC polling off, the MCU timeout, RF off, SetParameters (docs/acr122-pn532.md §5).
    /// - Throws: the reader's errors (`ACR122Error`, `PN532Error`, `PCSCError`).
    public func prepare() async throws {
        let timeout = mcuTimeout
        try await run { pn532 in
            try pn532.link.setMCUTimeout(timeout)
            try pn532.prepareForCardEmulation()
        }
    }

    /// One TgInitAsTarget (PN532 UM0701-02 §7.3.14), at most one MCU timeout.
    /// - Throws: the reader's errors other than 63 00 (no terminal).
    public func waitForActivation(_ parameters: TargetParameters) async throws -> ActivationOutcome {
        try await run(whileGone: .noTerminal) { pn532 in
            do {
                let activation = try pn532.initAsTarget(
                    uid: parameters.uid, atqa: parameters.atqa, sak: parameters.sak, historicalBytes: parameters.historicalBytes)
                return ActivationOutcome(activation)
            } catch ACR122Error.operationFailed {
                // 63 00: the MCU timeout passed with no terminal (ACR122U API v2.04 §6.3).
                return .noTerminal
            } catch ACR122Error.emptyReply {
                // Some firmware answers nothing at all until a terminal comes: no terminal yet.
                return .noTerminal
            }
        }
    }

    /// One TgGetData (PN532 UM0701-02 §7.3.16): a C-APDU, a release (status 29/2B/25), or silence (63 00).
    /// - Throws: the reader's other errors.
    public func receiveCommand() async throws -> TargetReceiveOutcome {
        try await run { pn532 in
            do {
                return TargetReceiveOutcome(try pn532.receiveCommand())
            } catch ACR122Error.operationFailed {
                return .silent
            }
        }
    }

    /// One TgSetData (PN532 UM0701-02 §7.3.17) with the R-APDU.
    /// - Throws: the reader's errors other than a release.
    public func sendResponse(_ response: [UInt8]) async throws -> TargetSendOutcome {
        try await run { pn532 in
            return TargetSendOutcome(try pn532.sendResponse(response))
        }
    }

    /// `PN532.restoreReaderDefaults(_:onStep:)`, the one restore: InRelease 00 (leaves the target
    /// role, even when the last TgInitAsTarget was activated by another reader's polling or a late
    /// terminal: docs/acr122-pn532.md §5e), PICC parameter FF, and the MCU timeout back to one 5 s
    /// step when `prepare()` set another.
    public func restore() async throws {
        let steps: ACR122RestoreSteps = mcuTimeout == .restoredDefault
            ? [.releaseTargets, .piccParameter] : [.releaseTargets, .piccParameter, .mcuTimeout]
        _ = try await run { pn532 in try pn532.restoreReaderDefaults(steps) }
    }

    /// Nothing: an ACR122U command cannot be cancelled; the engine stops within one step.
    public func interrupt() {}
}

extension TargetReceiveOutcome {
    /// What TgGetData's typed result says, for the engine: status 25 (not activated) and 29/2B
    /// (released) are releases, with the PN532 status as their cause (UM0701-02 §7.1).
    init(_ result: PN532TargetReceiveResult) {
        switch result {
        case .command(let bytes): self = .command(bytes)
        case .notActivated: self = .released(.pn532(status: 0x25, meaning: PN532ErrorCode.invalidState.meaning))
        case .released(let code): self = .released(.pn532(status: code.rawValue, meaning: code.meaning))
        }
    }
}

extension TargetSendOutcome {
    /// What TgSetData's typed result says, for the engine (as `TargetReceiveOutcome.init(_:)`).
    init(_ result: PN532TargetSendResult) {
        switch result {
        case .delivered: self = .delivered
        case .notActivated: self = .released(.pn532(status: 0x25, meaning: PN532ErrorCode.invalidState.meaning))
        case .released(let code): self = .released(.pn532(status: code.rawValue, meaning: code.meaning))
        }
    }
}

extension ActivationOutcome {
    /// What TgInitAsTarget's answer says, for the engine: mode bit 08 (ISO/IEC 14443-4 PICC)
    /// without DEP (04) is an APDU reader; anything else (ATR_REQ from a peer-to-peer initiator)
    /// is no reader for this emulation (UM0701-02 §7.3.14).
    init(_ activation: PN532TargetActivation) {
        guard activation.mode.isISO14443_4PICC, !activation.mode.isDEP else {
            self = .notISODEP(mode: activation.mode.rawValue, initiatorCommand: activation.initiatorCommand)
            return
        }
        self = .activated(mode: activation.mode.rawValue, initiatorCommand: activation.initiatorCommand)
    }
}
