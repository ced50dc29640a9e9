// `secbridge selftest --hardware --device tty:…`: the hardware sequence on a bare PN532 board on a
// serial line (docs/pn532-uart.md §12): the ACR122U sequence's PN532 steps framed for the
// high-speed UART, the chip's own self tests (Diagnose) in place of the MCU's identification, and
// the host's 1 s bound in place of the MCU timeout.
import SecbridgeCLI
import ISO7816
import PN53x

/// The fixed sequence of `selftest --hardware --device tty:PATH`, and which steps of the ACR122U's
/// (``HardwareSelftest``) have no counterpart on a bare chip.
///
/// Each step is one PN532 command `D4 cmd params`; its expectation is on the data after
/// `D5 cmd+1`. As on the ACR122U, an answer other than the documented one is "differs" (noted, not
/// failed); "error" is a command the link could not complete (no ACK, the error frame, a line
/// failure). No bundle is written: bundles hold SCardControl exchanges and replay against the
/// simulated ACR122U.
enum SerialSelftest {
    enum Expectation: Sendable {
        /// Exactly these data bytes.
        case exactly([UInt8])
        /// Data starting with these bytes.
        case prefix([UInt8])
        /// Whatever comes (what is in the field).
        case recorded
        /// No response within the step's bound: the host aborts the command with the ACK frame.
        case noResponse

        var text: String {
            switch self {
            case .exactly(let bytes): bytes.isEmpty ? "no data" : bytes.hexString
            case .prefix(let bytes): bytes.hexString + " …"
            case .recorded: "(as the board answers)"
            case .noResponse: "no response; aborted with the ACK frame"
            }
        }
    }

    struct Step: Sendable {
        var label: String
        var code: PN532CommandCode
        var parameters: [UInt8]
        var expected: Expectation
        var source: String
        /// How long the chip may take to answer once it acknowledged.
        var timeout: Duration = .seconds(1)
        /// The 55 preamble goes before the command (the wake-up).
        var wakesUp = false

        var command: [UInt8] { [0xD4, code.rawValue] + parameters }
    }

    struct Outcome: Sendable {
        var step: Step
        /// The data after `D5 cmd+1`; nil when there was no response.
        var answer: [UInt8]?
        var error: PN532SerialError?

        var verdict: String {
            switch (step.expected, answer, error) {
            case (.noResponse, nil, .noResponse?): "ok"
            case (.noResponse, _?, _): "differs"
            case (_, nil, _): "error"
            case (.exactly(let bytes), let answer?, _): answer == bytes ? "ok" : "differs"
            case (.prefix(let bytes), let answer?, _): answer.starts(with: bytes) ? "ok" : "differs"
            case (.recorded, _?, _): "ok"
            }
        }

        /// The response frame `D5 cmd+1 data`, or what happened instead.
        var answerText: String {
            if let answer { return ([0xD5, step.code.responseCode] + answer).hexString }
            if case .noResponse(_, let bound)? = error { return "no response within \(secondsText(bound)) s; aborted (ACK frame)" }
            return error.map { "\($0)" } ?? ""
        }
    }

    /// Diagnose (UM0701-02 §7.2.1): not among PN53x's named codes.
    static let diagnose = PN532CommandCode(rawValue: 0x00)

    /// The communication line test's payload: Diagnose 00 answers NumTst and InParam back.
    static let echo = Array("secbridge".utf8)

    static let readerSteps: [Step] = [
        Step(label: "wake-up (55 preamble, SAMConfiguration normal mode)", code: .samConfiguration, parameters: [0x01, 0x00, 0x00],
             expected: .exactly([]), source: "docs/pn532-uart.md §3 (libnfc pn532_uart; AN10609)", wakesUp: true),
        Step(label: "PN532 GetFirmwareVersion", code: .getFirmwareVersion, parameters: [],
             expected: .prefix([0x32]), source: "PN532 UM0701-02 §7.2.2 (IC 32)"),
        Step(label: "Diagnose 00: communication line test", code: diagnose, parameters: [0x00] + echo,
             expected: .exactly([0x00] + echo), source: "PN532 UM0701-02 §7.2.1; libnfc pn53x_check_communication"),
        Step(label: "Diagnose 01: ROM test", code: diagnose, parameters: [0x01],
             expected: .exactly([0x00]), source: "PN532 UM0701-02 §7.2.1 (00: the check passed)"),
        Step(label: "Diagnose 02: RAM test", code: diagnose, parameters: [0x02],
             expected: .exactly([0x00]), source: "PN532 UM0701-02 §7.2.1 (00: the check passed)"),
        Step(label: "PN532 GetGeneralStatus", code: .getGeneralStatus, parameters: [],
             expected: .prefix([0x00]), source: "PN532 UM0701-02 §7.2.3 (Err 00)"),
        Step(label: "PN532 SetParameters 14", code: .setParameters, parameters: [0x14],
             expected: .exactly([]), source: "PN532 UM0701-02 §7.2.9"),
        Step(label: "RF field off", code: .rfConfiguration, parameters: [0x01, 0x00],
             expected: .exactly([]), source: "PN532 UM0701-02 §7.3.1"),
        Step(label: "RF field on", code: .rfConfiguration, parameters: [0x01, 0x01],
             expected: .exactly([]), source: "PN532 UM0701-02 §7.3.1"),
        Step(label: "passive activation retries 02 (bounded polling)", code: .rfConfiguration, parameters: [0x05, 0x00, 0x01, 0x02],
             expected: .exactly([]), source: "PN532 UM0701-02 §7.3.1 (MxRtyPassiveActivation)"),
        Step(label: "InListPassiveTarget 106 kbit/s Type A", code: .inListPassiveTarget, parameters: [0x01, 0x00],
             expected: .recorded, source: "PN532 UM0701-02 §7.3.5", timeout: .seconds(2)),
    ]

    static func probeSteps(cardFound: Bool) -> [Step] {
        var steps: [Step] = []
        if cardFound {
            steps.append(Step(label: "InRelease target 1", code: .inRelease, parameters: [0x01],
                              expected: .exactly([0x00]), source: "PN532 UM0701-02 §7.3.11"))
        }
        steps.append(Step(label: "TgGetData while not a target (status 25)", code: .tgGetData, parameters: [],
                          expected: .exactly([0x25]), source: "PN532 UM0701-02 §7.1 (error 25)"))
        return steps
    }

    /// The target part: TgInitAsTarget with no terminal, ended by the host's 1 s bound and the ACK
    /// frame (docs/pn532-uart.md §9), then GetFirmwareVersion (the chip took the abort) and TgGetData.
    static let targetSteps: [Step] = [
        Step(label: "RF field off", code: .rfConfiguration, parameters: [0x01, 0x00],
             expected: .exactly([]), source: "PN532 UM0701-02 §7.3.1"),
        Step(label: "SetParameters 30 (automatic RATS, ISO 14443-4 PICC)", code: .setParameters, parameters: [0x30],
             expected: .exactly([]), source: "PN532 UM0701-02 §7.2.9"),
        Step(label: "TgInitAsTarget, no terminal: ends at the host's 1 s bound",
             code: .tgInitAsTarget,
             parameters: [0x05, 0x04, 0x00, 0x12, 0x34, 0x56, 0x20] + [UInt8](repeating: 0, count: 18) + [UInt8](repeating: 0, count: 10) + [0x00, 0x00],
             expected: .noResponse, source: "PN532 UM0701-02 §7.3.14; UM0701-02 §6.2 (ACK aborts); docs/pn532-uart.md §9"),
        Step(label: "PN532 GetFirmwareVersion (the chip took the abort)", code: .getFirmwareVersion, parameters: [],
             expected: .prefix([0x32]), source: "docs/pn532-uart.md §2"),
        Step(label: "TgGetData, not activated (status 25)", code: .tgGetData, parameters: [],
             expected: .exactly([0x25]), source: "PN532 UM0701-02 §7.1 (error 25)"),
    ]

    /// What `secbridge reset --device` leaves (``SerialReset``): targets released, RF field off,
    /// the retries back to the chip's defaults.
    static let restoreSteps: [Step] = [
        Step(label: "restore: InRelease 00", code: .inRelease, parameters: [0x00],
             expected: .exactly([0x00]), source: "PN532 UM0701-02 §7.3.11; libnfc pn53x_idle"),
        Step(label: "restore: RF field off", code: .rfConfiguration, parameters: [0x01, 0x00],
             expected: .exactly([]), source: "PN532 UM0701-02 §7.3.1; libnfc pn53x_idle"),
        Step(label: "restore: retries FF 01 FF (the chip's defaults)", code: .rfConfiguration, parameters: [0x05, 0xFF, 0x01, 0xFF],
             expected: .exactly([]), source: "PN532 UM0701-02 §7.3.1; libnfc pn53x.c"),
    ]

    /// The ACR122U sequence's steps without a counterpart on a bare chip, and why.
    static let notApplicable: [(step: String, reason: String)] = [
        ("feature request (CM_IOCTL_GET_FEATURE_REQUEST)", "a PC/SC driver's; the board is reached without PC/SC"),
        ("firmware version (FF 00 48 00 00)", "the ACR122U MCU's firmware string; GetFirmwareVersion and Diagnose test the chip itself"),
        ("PICC parameter (automatic polling)", "the MCU polls; a bare chip polls only when told (InListPassiveTarget)"),
        ("LEDs and buzzer", "driven by the ACR122U's MCU"),
        ("Direct Transmit with Lc one too long", "the MCU's framing; the serial frame carries its own length and checksums"),
        ("Get Data (UID) pseudo-APDU", "a PC/SC part 3 pseudo-APDU the MCU answers"),
        ("MCU timeout", "a bare chip has none: the host bounds TgInitAsTarget at 1 s and aborts it with the ACK frame"),
    ]

    static func run(_ step: Step, on link: PN532SerialLink) -> Outcome {
        do throws(PN532SerialError) {
            if step.wakesUp {
                do { try link.stream.write(PN532SerialLink.wakeUpPreamble) } catch { throw .line(error) }
            }
            return Outcome(step: step, answer: try link.exchange(step.code, step.parameters, timeout: step.timeout))
        } catch {
            return Outcome(step: step, error: error)
        }
    }

    /// Runs the reader part, then the target part, each followed by the restore; `report` sees
    /// each outcome, with its part, as it comes. `stop` (Ctrl-C) leaves out the remaining steps
    /// but not the restore.
    /// - Returns: every outcome by part and the card InListPassiveTarget found, if any; nil
    ///   outcomes when the wake-up failed (nothing else was tried).
    static func runAll(
        on link: PN532SerialLink, stop: () -> Bool = { false }, report: (HardwareSelftest.Part, Outcome) -> Void
    ) -> (parts: [(part: HardwareSelftest.Part, outcomes: [Outcome])], card: ISO14443ATarget?) {
        var card: ISO14443ATarget?
        var parts: [(part: HardwareSelftest.Part, outcomes: [Outcome])] = []
        func runSteps(_ steps: [Step], _ part: HardwareSelftest.Part, into outcomes: inout [Outcome], stoppable: Bool = true) {
            for step in steps where !(stoppable && stop()) {
                let outcome = run(step, on: link)
                outcomes.append(outcome)
                report(part, outcome)
                if step.code == .inListPassiveTarget, let answer = outcome.answer {
                    card = try? PN532.InListPassiveTarget().response(parsing: answer).first
                }
            }
        }
        var reader: [Outcome] = []
        runSteps(readerSteps, .reader, into: &reader)
        guard reader.first?.verdict == "ok" else { return ([(.reader, reader)], nil) }
        runSteps(probeSteps(cardFound: card != nil), .reader, into: &reader)
        runSteps(restoreSteps, .reader, into: &reader, stoppable: false)
        parts.append((.reader, reader))
        guard !stop() else { return (parts, card) }
        var target: [Outcome] = []
        runSteps(targetSteps, .target, into: &target)
        runSteps(restoreSteps, .target, into: &target, stoppable: false)
        parts.append((.target, target))
        return (parts, card)
    }

    /// An external RF field (GetGeneralStatus Field 01, UM0701-02 §7.2.3) or a terminal that
    /// activated the target: another reader or a phone was near, so the answers are not the
    /// board's alone.
    static func warnings(_ outcomes: [Outcome]) -> [String] {
        var warnings: [String] = []
        for outcome in outcomes {
            guard let answer = outcome.answer else { continue }
            if outcome.step.code == .getGeneralStatus, answer.count >= 2, answer[1] == 0x01 {
                warnings.append("an external RF field was present (GetGeneralStatus: Field 01): another reader or a phone is near the board")
            }
            if outcome.step.code == .tgInitAsTarget {
                warnings.append("a terminal activated the target part's TgInitAsTarget (\(([0xD5, 0x8D] + answer).hexString)): a phone or another reader was near; run again with nothing near the board")
            }
        }
        return warnings
    }
}

extension SecbridgeCLI {
    /// `selftest --hardware --device tty:PATH` through the line `open` gives (a ``PN532TTY``
    /// normally; an in-memory line in tests).
    /// - Throws: a usage error for --output or --phone; a failure naming `doctor --device` when
    ///   the port does not open or the board does not answer the wake-up.
    static func runSerialSelftest(_ invocation: Invocation, path: String, open: () throws -> PN532SerialLink) throws -> Int32 {
        for option in ["output", "phone"] where invocation.arguments.value(option) != nil || invocation.arguments.has(option) {
            throw CLIError.usage("--\(option) applies to an ACR122U: with --device nothing is recorded (a bundle holds SCardControl exchanges and replays against the simulated ACR122U)")
        }
        let reader = "tty:" + path
        let link: PN532SerialLink
        do {
            link = try open()
        } catch {
            throw CLIError.failure("cannot open \(path): \(error); `secbridge doctor --device \(reader)` checks the device")
        }
        let json = invocation.json
        if !json {
            invocation.out("reader: \(reader) (a bare PN532 on a serial line, 115200 baud)")
            invocation.out("not on a bare board (the ACR122U's MCU or PC/SC driver):")
            for item in SerialSelftest.notApplicable { invocation.out("  \(item.step): \(item.reason)") }
        }
        var announced: HardwareSelftest.Part?
        let (parts, card) = SerialSelftest.runAll(on: link, stop: interrupted) { part, outcome in
            guard !json else { return }
            if announced != part {
                announced = part
                invocation.out(part == .reader ? "reader role:" : "target role (about 1 s, the host's bound):")
            }
            invocation.out("  \(outcome.verdict.padding(7)) \(outcome.step.label): \(outcome.answerText)")
            if outcome.verdict == "differs" {
                invocation.out("          documented: \(outcome.step.expected.text) (\(outcome.step.source))")
            }
        }
        let outcomes = parts.flatMap(\.outcomes)
        if let wakeUp = outcomes.first, wakeUp.verdict != "ok" {
            let message = "\(reader) did not answer the wake-up: \(wakeUp.answerText); `secbridge doctor --device \(reader)` checks the device node, its permissions and the wake-up"
            if json { invocation.out(JSONValue.object([("reader", .string(reader)), ("error", .string(message))]).prettySerialized()) }
            throw CLIError.failure(message)
        }
        let firmware = outcomes.first { $0.step.code == .getFirmwareVersion }?.answer.flatMap { answer in
            answer.count == 4 ? "PN532 v\(answer[1]).\(answer[2]) (IC \(HexBytes.format(answer[0])), support \(HexBytes.format(answer[3])))" : nil
        }
        let warnings = SerialSelftest.warnings(outcomes)
        let failed = outcomes.filter { $0.verdict == "error" }.count
        let differing = outcomes.filter { $0.verdict == "differs" }.count
        if json {
            invocation.out(JSONValue.object([
                ("reader", .string(reader)), ("firmware", firmware.map { .string($0) } ?? .null),
                ("card", .string(BundleHeader.cardValue(card))),
                ("parts", .array(parts.map { part in
                    .object([
                        ("part", .string(part.part.rawValue)),
                        ("steps", .array(part.outcomes.map { outcome in
                            .object([
                                ("step", .string(outcome.step.label)), ("command", .hex(outcome.step.command)),
                                ("answer", outcome.answer.map { .hex([0xD5, outcome.step.code.responseCode] + $0) } ?? .null),
                                ("error", outcome.error.map { .string("\($0)") } ?? .null),
                                ("verdict", .string(outcome.verdict)), ("documented", .string(outcome.step.expected.text)),
                                ("source", .string(outcome.step.source)),
                            ])
                        })),
                    ])
                })),
                ("notApplicable", .array(SerialSelftest.notApplicable.map { .object([("step", .string($0.step)), ("reason", .string($0.reason))]) })),
                ("errors", .int(failed)), ("differences", .int(differing)), ("warnings", .array(warnings.map { .string($0) })),
            ]).prettySerialized())
        } else {
            if let card { invocation.out("card in the field: \(BundleHeader.cardValue(card))") }
            for warning in warnings { invocation.out("warning: \(warning)") }
            if let firmware { invocation.out("firmware: \(firmware)") }
            if interrupted() {
                invocation.out("interrupted: the sequence stopped where Ctrl-C found it (the board was restored); this is no verdict on the board")
            } else {
                invocation.out("\(failed) error\(failed == 1 ? "" : "s"), \(differing) answer\(differing == 1 ? "" : "s") different from the documents")
            }
        }
        return failed == 0 ? exitSuccess : exitFailure
    }
}
