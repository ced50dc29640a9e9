import PCSCCore
import PN53x
import Synchronization

/// Holds the serial link, which only the executor's thread touches.
final class SerialLinkBox: @unchecked Sendable {
    // @unchecked: `link` (not thread-safe) is used only inside jobs of one BlockingExecutor.
    var link: PN532SerialLink?
    init(link: PN532SerialLink?) { self.link = link }
}

/// Card emulation on a bare PN532 board on a serial line (a breakout board or USB-serial module,
/// libnfc's `pn532_uart`, nfcpy's `tty:`): the same target commands as ``PN532EmulationBackend``,
/// framed for the high-speed UART (docs/pn532-uart.md) instead of wrapped in an ACR122U's Direct
/// Transmit.
///
/// A bare PN532 has no MCU timeout: TgInitAsTarget and TgGetData wait until an initiator acts. The
/// host bounds each step instead, and a step that ends without an answer is aborted with an ACK
/// frame, which makes the chip drop the command (UM0701-02 §6.2.1.3; libnfc's `pn532_uart_abort_command`
/// and nfcpy's `pn532` driver do the same):
/// - `prepare()`: RF field off (RFConfiguration 01 00), SetParameters 30 (automatic RATS,
///   ISO/IEC 14443-4 PICC emulation), as for the ACR122U (docs/acr122-pn532.md §5).
/// - `waitForActivation`: TgInitAsTarget (passive ISO/IEC 14443-4 PICC only), at most
///   ``activationStep``; no initiator by then is a step without a terminal.
/// - `receiveCommand` / `sendResponse`: TgGetData (at most ``commandStep``; silence is "fell
///   silent") / TgSetData; status 29, 2B and 25 mean the terminal released the target.
/// - `restore()`: InRelease 00 (the chip leaves the target role), then the line is closed.
///
/// All calls run on `executor`, never on Swift's shared pool.
public final class SerialPN532EmulationBackend: CardEmulationBackend {
    /// `tty:` and the device path, e.g. `tty:/dev/ttyUSB0`.
    public let readerName: String
    /// Whether the board answered its wake-up, and why not.
    public let support: EmulationSupport
    /// How long one TgInitAsTarget waits for an initiator before it is aborted: 1 s, so that a
    /// stop (the window's end, Ctrl-C) is honoured within about a second.
    public let activationStep: Duration
    /// How long one TgGetData waits for the initiator's next C-APDU: 5 s, the ACR122U's default MCU
    /// timeout, so that a terminal falls silent after the same time on both kinds of hardware.
    public let commandStep: Duration
    /// TgGetData's C-APDU limit, kept at the ACR122U's (docs/acr122-pn532.md §4), so that a
    /// credential behaves the same on both.
    public let maximumCommandLength = PN532HostFrame.maximumParameterLength - 1
    /// TgSetData's R-APDU limit (docs/acr122-pn532.md §4).
    public let maximumResponseLength = PN532HostFrame.maximumParameterLength
    private let executor: BlockingExecutor
    private let box: SerialLinkBox

    private init(readerName: String, support: EmulationSupport, activationStep: Duration, commandStep: Duration, executor: BlockingExecutor, link: PN532SerialLink?) {
        self.readerName = readerName
        self.support = support
        self.activationStep = activationStep
        self.commandStep = commandStep
        self.executor = executor
        box = SerialLinkBox(link: link)
    }

    /// Opens the board on `path` and wakes it (the 55 preamble and SAMConfiguration,
    /// docs/pn532-uart.md §3), on `executor`, on real time (CLOCK_MONOTONIC). A device that cannot
    /// be opened or does not answer gives a backend whose `support` says why and what to check.
    /// - Parameters:
    ///   - path: the device node, e.g. `/dev/ttyUSB0` or a pseudo-terminal.
    ///   - executor: the thread every command runs on.
    ///   - activationStep: see ``activationStep``.
    ///   - commandStep: see ``commandStep``.
    public static func open(
        path: String, executor: BlockingExecutor, activationStep: Duration = .seconds(1), commandStep: Duration = .seconds(5)
    ) async -> SerialPN532EmulationBackend {
        await open(
            readerName: "tty:" + path, what: "the PN532 board on \(path)", executor: executor,
            activationStep: activationStep, commandStep: commandStep
        ) { PN532SerialLink(stream: try PN532TTY(path: path)) }
    }

    /// Wakes the board at the other end of `stream` (the 55 preamble and SAMConfiguration,
    /// docs/pn532-uart.md §3), on `executor`, with every bound (the ACK's 100 ms, ``activationStep``,
    /// ``commandStep``) measured on `clock`: for a PN532 served in memory, e.g. the simulated
    /// PN532 behind a `PN532SerialDevice` on a `PN532InMemorySerialLine` (PN53x) on the test's
    /// `VirtualTime`, so that a session on it runs without a tty and without waiting in real time.
    /// A board that does not answer gives a backend whose `support` says why.
    /// - Parameters:
    ///   - stream: the host's end of the line (`PN532InMemorySerialLine.host`).
    ///   - clock: the line's clock; on a virtual time, every command's thread takes part in it
    ///     while the command runs.
    ///   - readerName: the name the session gives the reader (``readerName``), e.g. `tty:simulated`.
    ///   - executor: the thread every command runs on.
    ///   - activationStep: see ``activationStep``.
    ///   - commandStep: see ``commandStep``.
    public static func open(
        stream: any PN532ByteStream, clock: PN532SerialClock, readerName: String, executor: BlockingExecutor,
        activationStep: Duration = .seconds(1), commandStep: Duration = .seconds(5)
    ) async -> SerialPN532EmulationBackend {
        await open(
            readerName: readerName, what: "the PN532 board \(readerName)", executor: executor,
            activationStep: activationStep, commandStep: commandStep
        ) { PN532SerialLink(stream: stream, clock: clock) }
    }

    private static func open(
        readerName name: String, what: String, executor: BlockingExecutor, activationStep: Duration, commandStep: Duration,
        link makeLink: @escaping @Sendable () throws -> PN532SerialLink
    ) async -> SerialPN532EmulationBackend {
        do {
            let link = try await executor.run { () throws -> SerialLinkBox in
                let link = try makeLink()
                try link.clock.participate { () throws(PN532SerialError) in try link.wakeUp() }
                return SerialLinkBox(link: link)
            }
            return SerialPN532EmulationBackend(
                readerName: name, support: .supported, activationStep: activationStep, commandStep: commandStep,
                executor: executor, link: link.link)
        } catch {
            return SerialPN532EmulationBackend(
                readerName: name,
                support: .unsupported(
                    reason: "\(what) could not be opened or did not answer its wake-up: \(error); `secbridge doctor --device \(name)` checks the device",
                    cause: .other("\(error)")),
                activationStep: activationStep, commandStep: commandStep, executor: executor, link: nil)
        }
    }

    /// Runs `body` on the executor, the thread taking part in the link's virtual time (if any)
    /// while it runs.
    private func run<T: Sendable>(_ body: @escaping @Sendable (PN532SerialLink) throws -> T) async throws -> T {
        let box = self.box
        let name = readerName
        return try await executor.run {
            guard let link = box.link else {
                throw CredentialSessionError(.featureUnavailable, "\(name) cannot emulate a card")
            }
            return try link.clock.participate { () throws -> T in try body(link) }
        }
    }

    /// RF field off and SetParameters 30 (docs/acr122-pn532.md §5).
    /// - Throws: `PN532SerialError`, `PN532Error`.
    public func prepare() async throws {
        try await run { link in
            _ = try link.send(PN532.RFConfiguration(.rfField(on: false)))
            _ = try link.send(PN532.SetParameters([.automaticRATS, .iso14443_4PICC]))
        }
    }

    /// One TgInitAsTarget (PN532 UM0701-02 §7.3.14), aborted after ``activationStep``.
    /// - Throws: the board's errors other than no initiator within the step.
    public func waitForActivation(_ parameters: TargetParameters) async throws -> ActivationOutcome {
        let step = activationStep
        return try await run { link in
            let activation: PN532TargetActivation
            do {
                activation = try link.send(
                    PN532.cardEmulationTarget(
                        uid: parameters.uid, atqa: parameters.atqa, sak: parameters.sak, historicalBytes: parameters.historicalBytes),
                    timeout: step)
            } catch PN532SerialError.noResponse {
                // The link aborted the command with an ACK: no initiator in this step.
                return .noTerminal
            }
            return ActivationOutcome(activation)
        }
    }

    /// One TgGetData (PN532 UM0701-02 §7.3.16), aborted after ``commandStep``.
    /// - Throws: the board's other errors.
    public func receiveCommand() async throws -> TargetReceiveOutcome {
        let step = commandStep
        return try await run { link in
            do {
                return TargetReceiveOutcome(try PN532.receiveCommand(chainingLimit: 16, { try link.send(PN532.TgGetData(), timeout: step) }))
            } catch PN532SerialError.noResponse {
                return .silent
            }
        }
    }

    /// One TgSetData (PN532 UM0701-02 §7.3.17) with the R-APDU.
    /// - Throws: the board's errors other than a release.
    public func sendResponse(_ response: [UInt8]) async throws -> TargetSendOutcome {
        try await run { link in
            return TargetSendOutcome(try PN532.sendResponse({ _ = try link.send(PN532.TgSetData(response)) }))
        }
    }

    /// InRelease 00 (the chip leaves the target role), then the line is closed; later calls fail
    /// with `featureUnavailable`.
    /// - Throws: the board's errors (the line is closed all the same).
    public func restore() async throws {
        let box = self.box
        try await executor.run {
            defer { box.link = nil }
            guard let link = box.link else { return }
            try link.clock.participate { () throws in try link.send(PN532.InRelease(target: 0)) }
        }
    }

    /// Closes the line (on the executor, where the link lives) without a command; later calls fail
    /// with `featureUnavailable`. For a backend whose session never ran, or to be sure: the
    /// restore closes it too.
    public func close() async {
        let box = self.box
        _ = try? await executor.run { box.link = nil }
    }

    /// Nothing: every step is bounded (``activationStep``, ``commandStep``), so the engine stops
    /// within one step.
    public func interrupt() {}
}
