import ISO7816

/// What `PN532.restoreReaderDefaults(_:onStep:)` puts back, one bit per step, run in the order of
/// the table (docs/acr122-pn532.md §2, §4, §5b, §5d).
///
/// | Step | Sent | Expected answer |
/// |---|---|---|
/// | `abortPendingCommand` | `FF 00 00 00 02 D4 02` (GetFirmwareVersion) | `D5 03 IC Ver Rev Support 90 00`; replies without that echo are late answers and discarded (at most `resynchronizationAttempts` tries) |
/// | `releaseTargets` | `FF 00 00 00 03 D4 52 00` (InRelease, all targets) | `D5 53 Status 90 00` |
/// | `rfFieldOn` | `FF 00 00 00 04 D4 32 01 01` (RFConfiguration item 01, field on) | `D5 33 90 00` |
/// | `piccParameter` | `FF 00 51 FF 00` | `90 FF` (or `FF` alone (U)) |
/// | `idleLEDs` | `FF 00 40 0D 04 00 00 00 00` (red final on, green final off, both masked, no blink, no buzzer) | `90 01` |
/// | `mcuTimeout` | `FF 00 41 01 00` (one 5 s step) | `90 00` |
///
/// - GetFirmwareVersion first: the PN532 ACK/abort frame cannot pass the ACR122U, so libnfc aborts
///   a pending command (e.g. a TgInitAsTarget left by an interrupted emulation) this way (§1, §5b).
/// - The idle LED state is red on, green off: what an ACR122U shows when it is plugged in with no
///   card (the firmware turns green on by itself for a polled card while automatic polling runs).
/// - The MCU timeout has no read command and the ACR122U API states no power-up value; one 5 s step
///   is what the simulated ACR122U assumes at power-up (U) and what card emulation here uses, so it
///   is the value put back.
public struct ACR122RestoreSteps: OptionSet, Sendable, Hashable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// GetFirmwareVersion (`D4 02`), discarding late replies: aborts a pending PN532 command.
    public static let abortPendingCommand = ACR122RestoreSteps(rawValue: 0x01)
    /// InRelease of all targets (`D4 52 00`).
    public static let releaseTargets = ACR122RestoreSteps(rawValue: 0x02)
    /// RF field on (`D4 32 01 01`).
    public static let rfFieldOn = ACR122RestoreSteps(rawValue: 0x04)
    /// PICC operating parameter back to FF (`FF 00 51 FF 00`): automatic polling on.
    public static let piccParameter = ACR122RestoreSteps(rawValue: 0x08)
    /// LEDs back to idle: red on, green off (`FF 00 40 0D 04 00 00 00 00`).
    public static let idleLEDs = ACR122RestoreSteps(rawValue: 0x10)
    /// MCU timeout back to one 5 s step (`FF 00 41 01 00`).
    public static let mcuTimeout = ACR122RestoreSteps(rawValue: 0x20)

    /// Everything: what `secbridge reset` and the clean-up after Ctrl-C or an error send.
    public static let all: ACR122RestoreSteps = [
        .abortPendingCommand, .releaseTargets, .rfFieldOn, .piccParameter, .idleLEDs, .mcuTimeout,
    ]

    /// The steps in the order they run, with their names.
    public static let ordered: [(step: ACR122RestoreSteps, name: String)] = [
        (.abortPendingCommand, "abort a pending PN532 command (GetFirmwareVersion)"),
        (.releaseTargets, "release targets (InRelease 00)"),
        (.rfFieldOn, "RF field on (RFConfiguration 01 01)"),
        (.piccParameter, "PICC operating parameter FF (automatic polling on)"),
        (.idleLEDs, "LEDs idle (red on, green off)"),
        (.mcuTimeout, "MCU timeout one 5 s step"),
    ]
}

/// The LED/buzzer control of the idle state: P2 0D = final red on, final green off, red and green
/// masked (both take their final state), T1 = T2 = 0, no repetitions, buzzer off.
extension ACR122LEDBuzzerControl {
    /// `FF 00 40 0D 04 00 00 00 00`: the LEDs of an idle reader (red on, green off), no buzzer.
    public static let idle = try! ACR122LEDBuzzerControl(led: [.finalRed, .redMask, .greenMask])
}

extension ACR122MCUTimeout {
    /// One 5 s step: the value put back after card emulation (see `ACR122RestoreSteps`).
    public static let restoredDefault = ACR122MCUTimeout.fiveSecondSteps(1)
}

/// One step of a restore: what was sent, what came back, and whether it is what the step expects.
public struct ACR122RestoreOutcome: Sendable, Hashable, CustomStringConvertible {
    /// Which step this is (one member of ``ACR122RestoreSteps``).
    public var step: ACR122RestoreSteps
    /// The step's name in words, as ``ACR122RestoreSteps/ordered`` gives it.
    public var name: String
    /// Every exchange of the step, in order (more than one when late replies were discarded).
    public var exchanges: [(command: [UInt8], reply: [UInt8])]
    /// nil when the step succeeded; else why not.
    public var failure: String?

    /// True when the step got the answer it expects (``failure`` is nil).
    public var succeeded: Bool { failure == nil }

    /// `FF 00 51 FF 00 → 90 FF  ok`, one line per exchange, then the verdict.
    public var description: String {
        var parts = exchanges.map { "\(HexBytes.format($0.command)) → \($0.reply.isEmpty ? "(nothing)" : HexBytes.format($0.reply))" }
        if parts.isEmpty { parts = ["(nothing sent)"] }
        return parts.joined(separator: "; ") + (failure.map { "  FAILED: \($0)" } ?? "  ok")
    }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.step == rhs.step && lhs.failure == rhs.failure
            && lhs.exchanges.map(\.command) == rhs.exchanges.map(\.command)
            && lhs.exchanges.map(\.reply) == rhs.exchanges.map(\.reply)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(step)
        hasher.combine(failure)
    }
}

/// Thrown by `PN532.restoreReaderDefaults(_:onStep:)` when a step failed; every step was tried.
public struct ACR122RestoreError: Error, Sendable, CustomStringConvertible {
    /// The outcome of every step tried, in order, the successful ones included.
    public var outcomes: [ACR122RestoreOutcome]
    public var description: String {
        let failed = outcomes.filter { !$0.succeeded }
        return "restoring the reader's defaults failed at " + failed.map { "\($0.name): \($0.failure ?? "")" }.joined(separator: "; ")
    }
}

/// A channel that remembers the raw exchanges going through it (for `ACR122RestoreOutcome`).
final class CapturingCardChannel: CardChannel {
    let inner: any CardChannel
    var exchanges: [(command: [UInt8], reply: [UInt8])] = []
    init(_ inner: any CardChannel) { self.inner = inner }
    var transmissionProtocol: TransmissionProtocol { inner.transmissionProtocol }
    func transmit(_ command: [UInt8]) throws -> [UInt8] {
        let reply = try inner.transmit(command)
        exchanges.append((command, reply))
        return reply
    }
    func control(code: UInt32, _ command: [UInt8]) throws -> [UInt8] {
        do {
            let reply = try inner.control(code: code, command)
            exchanges.append((command, reply))
            return reply
        } catch {
            exchanges.append((command, []))
            throw error
        }
    }
}

extension PN532 {
    /// Brings the ACR122U back to a usable state: the one implementation every restore uses
    /// (`secbridge reset`, the clean-up after Ctrl-C or an error, the end of a card emulation and
    /// of a PN532 reader session). Without it the reader looks dead after an interrupted emulation
    /// until it is replugged (docs/acr122-pn532.md §5d).
    ///
    /// Every selected step is tried, in the order of `ACR122RestoreSteps.ordered`, even after one
    /// fails (a refused step must not keep the others from running). The default, `.piccParameter`,
    /// sends `FF 00 51 FF 00` alone.
    ///
    /// - Parameters:
    ///   - steps: what to put back (see `ACR122RestoreSteps` for the bytes).
    ///   - onStep: called after each step with its outcome, e.g. to print it.
    /// - Returns: each step's outcome.
    /// - Throws: `ACR122RestoreError` (carrying every outcome) when a step failed.
    @discardableResult
    public func restoreReaderDefaults(
        _ steps: ACR122RestoreSteps = .piccParameter, onStep: (ACR122RestoreOutcome) -> Void = { _ in }
    ) throws -> [ACR122RestoreOutcome] {
        var outcomes: [ACR122RestoreOutcome] = []
        for (step, name) in ACR122RestoreSteps.ordered where steps.contains(step) {
            let capture = CapturingCardChannel(link.channel)
            let probe = PN532(link: ACR122Link(channel: capture, escapeCode: link.escapeCode, path: link.path))
            probe.resynchronizationAttempts = resynchronizationAttempts
            var failure: String?
            do {
                switch step {
                case .abortPendingCommand:
                    try probe.resynchronize()
                case .releaseTargets:
                    try probe.send(InRelease(target: 0))
                case .rfFieldOn:
                    try probe.send(RFConfiguration(.rfField(on: true)))
                case .piccParameter:
                    let now = try probe.link.setPICCOperatingParameter(.factoryDefault)
                    if now != .factoryDefault {
                        failure = "the reader reports PICC parameter \(HexBytes.format(now.rawValue)), not FF"
                    }
                case .idleLEDs:
                    let state = try probe.link.setLEDAndBuzzer(.idle)
                    if state != .red {
                        failure = "the reader reports LED state \(HexBytes.format(state.rawValue)), not 01 (red on, green off)"
                    }
                default:
                    try probe.link.setMCUTimeout(.restoredDefault)
                }
            } catch {
                failure = "\(error)"
            }
            let outcome = ACR122RestoreOutcome(step: step, name: name, exchanges: capture.exchanges, failure: failure)
            outcomes.append(outcome)
            onStep(outcome)
        }
        if outcomes.contains(where: { !$0.succeeded }) { throw ACR122RestoreError(outcomes: outcomes) }
        return outcomes
    }
}
