import ISO7816
import PCSCCore
import Synchronization

/// Runs one card-emulation window: arms the target in bounded steps, relays each C-APDU to the
/// secure element, reports what the device observes, and restores the reader at the end.
///
/// It stops when `stop()` is called (within one device step), when the clock reaches `deadline`,
/// when the reader is lost, or after `maximumConsecutiveErrors` failing steps.
final class EmulationRunner: Sendable {
    enum Report: Sendable {
        case field(FieldStateInfo)
        case exchanged(command: [UInt8], response: [UInt8])
        case failed(String)
        case readerLost(String)
        /// The secure element's card changed (removed, reset): the command was answered 6F 00.
        case secureElementChanged(String)
    }

    let backend: any CardEmulationBackend
    let secureElement: any SecureElement
    let parameters: TargetParameters
    let clock: any SessionClock
    let deadline: Duration
    /// The command's activity on a desk on virtual time (`CredentialSessionOptions.activity`).
    let activity: VirtualTime.Activity?
    let report: @Sendable (Report) async -> Void
    static let maximumConsecutiveErrors = 3
    /// A hard bound on device steps per window, far above what a 60 s window can hold.
    static let maximumSteps = 100_000

    /// Whether `stop()` came, and the pause (after a release) that it ends early.
    private let control = Mutex<(stopped: Bool, pause: Task<Void, Never>?)>((false, nil))

    init(
        backend: any CardEmulationBackend, secureElement: any SecureElement, parameters: TargetParameters,
        clock: any SessionClock, deadline: Duration, activity: VirtualTime.Activity? = nil,
        report: @escaping @Sendable (Report) async -> Void
    ) {
        self.activity = activity
        self.backend = backend
        self.secureElement = secureElement
        self.parameters = parameters
        self.clock = clock
        self.deadline = deadline
        self.report = report
    }

    /// Asks the loop to end; it does within one device step.
    func stop() {
        let pause = control.withLock { c in
            c.stopped = true
            return c.pause
        }
        pause?.cancel()
        backend.interrupt()
    }

    private var shouldContinue: Bool {
        !control.withLock { $0.stopped } && clock.now < deadline && !Task.isCancelled
    }

    /// Waits on the session clock until `instant` (at most the window's end), or less when
    /// `stop()` or cancellation comes first. No device command runs meanwhile.
    private func pause(until instant: Duration) async {
        let clock = self.clock
        let end = min(instant, deadline)
        let activity = self.activity
        // With an activity the runner's hold goes with the sleep and comes back at its wake-up.
        let sleeper = Task<Void, Never> {
            if let activity { _ = try? await activity.sleep(until: end, handingOver: true) } else { _ = try? await clock.sleep(until: end) }
        }
        let stoppedAlready = control.withLock { c in
            c.pause = sleeper
            return c.stopped
        }
        if stoppedAlready { sleeper.cancel() }
        await withTaskCancellationHandler {
            await sleeper.value
        } onCancel: {
            sleeper.cancel()
        }
        control.withLock { $0.pause = nil }
    }

    func run() async {
        var errors = 0
        var steps = 0
        var splitter = ResponseSplitter(maximumLength: backend.maximumResponseLength)
        var active = false
        var released = false
        while shouldContinue, steps < Self.maximumSteps {
            steps += 1
            do {
                if released {
                    // The terminal is done: re-arm only after the grace, or never (no dead
                    // MCU-timeout step in front of an endCardEmulation that follows).
                    released = false
                    switch parameters.afterRelease {
                    case .afterGrace(let grace): await pause(until: clock.now + grace)
                    case .never: await pause(until: deadline)
                    }
                    continue
                }
                if !active {
                    switch try await backend.waitForActivation(parameters) {
                    case .noTerminal:
                        break
                    case .notISODEP(let mode, let command):
                        // Not an APDU reader (a peer-to-peer initiator's ATR_REQ): say so and
                        // arm the target again at the next step.
                        await report(.field(FieldStateInfo(
                            state: .fieldPresent,
                            observation: "TgInitAsTarget returned mode \([mode].hexString) (\(Self.describeMode(mode))), initiator command \(command.hexString)")))
                        await report(.field(FieldStateInfo(
                            state: .fieldAbsent,
                            observation: Self.notISODEPObservation(mode: mode, command: command))))
                    case .activated(let mode, let rats):
                        active = true
                        splitter.reset()
                        await secureElement.terminalActivated()
                        await report(.field(FieldStateInfo(
                            state: .fieldPresent,
                            observation: "TgInitAsTarget returned mode \([mode].hexString), initiator command \(rats.hexString)")))
                    }
                } else {
                    switch try await backend.receiveCommand() {
                    case .command(let command):
                        let response = await answer(command, splitter: &splitter)
                        await report(.exchanged(command: command, response: response))
                        if case .released(let cause) = try await backend.sendResponse(response) {
                            active = false
                            released = true
                            await report(.field(FieldStateInfo(state: .fieldAbsent, observation: "TgSetData: \(cause)")))
                        }
                    case .released(let cause):
                        active = false
                        released = true
                        await report(.field(FieldStateInfo(state: .fieldAbsent, observation: "TgGetData: \(cause)")))
                    case .silent:
                        active = false
                        released = true
                        await report(.field(FieldStateInfo(
                            state: .fieldAbsent, observation: "no command from the terminal within one MCU timeout")))
                    }
                }
                errors = 0
            } catch {
                let cause = UnderlyingCause(error)
                if case .pcsc(let code, _) = cause, CredentialSessionError.resourceCodes.contains(code) {
                    await report(.readerLost("\(cause)"))
                    break
                }
                errors += 1
                if active {
                    active = false
                    await report(.field(FieldStateInfo(state: .fieldAbsent, observation: "the reader failed: \(cause)")))
                }
                if errors >= Self.maximumConsecutiveErrors {
                    await report(.failed("\(errors) device steps failed in a row, the last with \(cause)"))
                    break
                }
            }
        }
        if active {
            await report(.field(FieldStateInfo(state: .fieldAbsent, observation: "card emulation ended")))
        }
        try? await backend.restore()
    }

    /// The R-APDU for one C-APDU: 67 00 above the device's frame limit, GET RESPONSE served from
    /// a response that did not fit one frame, otherwise the secure element's answer.
    private func answer(_ command: [UInt8], splitter: inout ResponseSplitter) async -> [UInt8] {
        if command.count > backend.maximumCommandLength {
            return StatusWord.wrongLength.bytes
        }
        if let pending = splitter.getResponse(command) { return pending }
        let response: [UInt8]
        do {
            response = try await secureElement.transceive(command)
        } catch {
            if error.code == .secureElementChanged { await report(.secureElementChanged(error.reason)) }
            // The secure element could not answer at all: "no precise diagnosis".
            return [0x6F, 0x00]
        }
        return splitter.split(response)
    }
}

/// Splits R-APDUs longer than one frame: the first part goes with 61 XX, and GET RESPONSE
/// (`00 C0 00 00 Le`) fetches the rest (ISO/IEC 7816-4 §5.1.3, §7.6.1). Nothing is truncated.
struct ResponseSplitter: Sendable {
    let maximumLength: Int
    private var remaining: [UInt8] = []
    private var finalStatus: [UInt8] = []

    init(maximumLength: Int) { self.maximumLength = max(3, maximumLength) }

    mutating func reset() {
        remaining = []
        finalStatus = []
    }

    /// The response as sent: whole when it fits, else the first part + 61 XX.
    mutating func split(_ response: [UInt8]) -> [UInt8] {
        guard response.count > maximumLength, response.count >= 2 else {
            reset()
            return response
        }
        let data = Array(response.dropLast(2))
        finalStatus = Array(response.suffix(2))
        let first = maximumLength - 2
        remaining = Array(data[first...])
        return Array(data[..<first]) + pendingStatus()
    }

    /// Serves a GET RESPONSE from the pending data; nil when `command` is not one or nothing waits.
    mutating func getResponse(_ command: [UInt8]) -> [UInt8]? {
        guard !remaining.isEmpty, command.count >= 4, command[1] == 0xC0, command[2] == 0, command[3] == 0 else {
            if !remaining.isEmpty { reset() }
            return nil
        }
        let le = command.count == 5 ? (command[4] == 0 ? 256 : Int(command[4])) : 256
        let count = min(le, remaining.count, maximumLength - 2)
        let part = Array(remaining[..<count])
        remaining.removeFirst(count)
        if remaining.isEmpty {
            let status = finalStatus
            reset()
            return part + status
        }
        return part + pendingStatus()
    }

    private func pendingStatus() -> [UInt8] {
        [0x61, remaining.count >= 256 ? 0x00 : UInt8(remaining.count)]
    }
}

extension EmulationRunner {
    /// TgInitAsTarget's mode byte in words (UM0701-02 §7.3.14; docs/acr122-pn532.md §4): bits 6–4
    /// the bit rate, bit 3 ISO/IEC 14443-4 PICC, bit 2 DEP, bits 1–0 the framing. E.g. 04 →
    /// "NFC-DEP, passive, 106 kbit/s"; 08 → "ISO/IEC 14443-4 PICC, 106 kbit/s".
    static func describeMode(_ mode: UInt8) -> String {
        let rate = ["106", "212", "424"].indices.contains(Int(mode >> 4 & 0x07)) ? ["106", "212", "424"][Int(mode >> 4 & 0x07)] + " kbit/s" : "bit rate \(mode >> 4 & 0x07)"
        var parts: [String] = []
        if mode & 0x04 != 0 { parts.append("NFC-DEP") }
        if mode & 0x08 != 0 { parts.append("ISO/IEC 14443-4 PICC") }
        if parts.isEmpty { parts.append("Type A without ISO-DEP") }
        switch mode & 0x03 {
        case 0x01: parts.append("active")
        case 0x02: parts.append("FeliCa")
        default: if mode & 0x04 != 0 { parts.append("passive") }
        }
        return (parts + [rate]).joined(separator: ", ")
    }

    /// The observation for an activation that is no APDU reader: what it was, and that the target
    /// is armed again.
    static func notISODEPObservation(mode: UInt8, command: [UInt8]) -> String {
        // ATR_REQ: `D4 00` after the 106 kbit/s start byte F0 and LEN, or after LEN alone.
        let atrRequest = command.starts(with: [0xF0]) && command.count > 3 && command[2...3] == [0xD4, 0x00]
            || command.count > 2 && command[1...2] == [0xD4, 0x00]
        let what = mode & 0x04 != 0 || atrRequest
            ? "a peer-to-peer (NFC-DEP) initiator sent ATR_REQ"
            : "an initiator without ISO-DEP (no RATS)"
        return "\(what): not an ISO-DEP reader, no APDUs to serve; the target is armed again"
    }
}
