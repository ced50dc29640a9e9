// `secbridge reset --device tty:…`: a PN532 board on a serial line put back in its idle state
// (docs/pn532-uart.md §11): what is still running stopped, every target released, the RF field off.
import SecbridgeCLI
import ISO7816
import PN53x

/// The reset of a bare PN532 on a serial line, step by step.
///
/// | Step | Sent | Expected answer | Source |
/// |---|---|---|---|
/// | abort a pending command | ACK frame `00 00 FF 00 FF 00` | (none) | UM0701-02 §6.2; docs/pn532-uart.md §2 |
/// | wake-up | `55 55 00…00`, then `D4 14 01 00 00` (SAMConfiguration normal) | `D5 15` | docs/pn532-uart.md §3 |
/// | GetFirmwareVersion | `D4 02` | `D5 03 32 Ver Rev Support` (IC 32 = PN532) | UM0701-02 §7.2.2 |
/// | InRelease | `D4 52 00` (every target) | `D5 53 Status` | UM0701-02 §7.3.11 |
/// | RF field off | `D4 32 01 00` (RFConfiguration item 01) | `D5 33` | UM0701-02 §7.3.1 |
/// | retries back to the defaults | `D4 32 05 FF 01 FF` (MxRtyATR, MxRtyPSL, MxRtyPassiveActivation) | `D5 33` | UM0701-02 §7.3.1; libnfc pn53x.c's defaults |
///
/// InRelease and RF off are what libnfc's `pn53x_idle` does when it closes a PN532 in either role
/// ("Standby mode", "Disable RF field to avoid heating"). The retries go back to the chip's power-up
/// values, which `read --pn532 --device` changes (MxRtyPassiveActivation 20). Nothing else is
/// changed: no PowerDown (the next host wakes the chip anyway), and the ACR122U's own steps (PICC
/// operating parameter, LEDs, MCU timeout: its MCU's settings) have no counterpart on a bare chip.
/// An ACR122U's reset turns the RF field on, since its MCU polls with it; a bare chip idles with
/// the field off.
enum SerialReset {
    /// One step: its name, what was sent and answered (`D4 …` → `D5 …`; the raw bytes for the ACK
    /// frame), and why it failed, nil when it got the expected answer.
    struct Outcome: Sendable, CustomStringConvertible {
        var name: String
        var exchanges: [(command: [UInt8], reply: [UInt8])]
        var failure: String?

        var succeeded: Bool { failure == nil }

        /// `D4 52 00 → D5 53 00  ok`, as the ACR122U reset prints its steps.
        var description: String {
            var parts = exchanges.map { "\(HexBytes.format($0.command)) → \($0.reply.isEmpty ? "(nothing)" : HexBytes.format($0.reply))" }
            if parts.isEmpty { parts = ["(nothing sent)"] }
            return parts.joined(separator: "; ") + (failure.map { "  FAILED: \($0)" } ?? "  ok")
        }
    }

    /// The ACR122U reset steps a bare board has no counterpart for, and why.
    static let notApplicable = "PICC operating parameter, LEDs and MCU timeout are the ACR122U's MCU settings: a bare PN532 has none"

    /// Runs the steps on `link`, saying each (`name: command → answer  ok`) and handing each
    /// outcome to `onOutcome`; the steps after a failed wake-up are not tried.
    /// - Returns: whether every step got its expected answer.
    static func run(on link: PN532SerialLink, say: (String) -> Void, onOutcome: (Outcome) -> Void = { _ in }) -> Bool {
        var restored = true
        func report(_ outcome: Outcome) {
            if !outcome.succeeded { restored = false }
            say("\(outcome.name): \(outcome)")
            onOutcome(outcome)
        }
        // The host's ACK aborts a command the chip still runs (an interrupted emulation's
        // TgInitAsTarget); a chip that is idle or asleep ignores it.
        do {
            try link.stream.write(PN532UARTFrame.ackBytes)
            report(Outcome(name: "abort a pending command (ACK frame)", exchanges: [(PN532UARTFrame.ackBytes, [])]))
        } catch {
            report(Outcome(name: "abort a pending command (ACK frame)", exchanges: [], failure: "\(error)"))
            return false
        }
        do {
            try link.wakeUp()
            report(Outcome(name: "wake-up (55 preamble, SAMConfiguration)", exchanges: [([0xD4, 0x14, 0x01, 0x00, 0x00], [0xD5, 0x15])]))
        } catch {
            report(Outcome(name: "wake-up (55 preamble, SAMConfiguration)", exchanges: [], failure: "\(error)"))
            return false
        }
        func step(_ name: String, _ code: PN532CommandCode, _ parameters: [UInt8], check: ([UInt8]) -> String?) {
            let command = [0xD4, code.rawValue] + parameters
            do {
                let data = try link.exchange(code, parameters)
                report(Outcome(name: name, exchanges: [(command, [0xD5, code.responseCode] + data)], failure: check(data)))
            } catch {
                report(Outcome(name: name, exchanges: [], failure: "\(error)"))
            }
        }
        step("confirm a PN532 (GetFirmwareVersion)", .getFirmwareVersion, []) { data in
            data.count == 4 && data[0] == 0x32 ? nil : "expected IC 32 (a PN532) and 4 bytes IC Ver Rev Support"
        }
        step("release targets (InRelease 00)", .inRelease, [0x00]) { data in
            data == [0x00] ? nil : "expected status 00"
        }
        step("RF field off (RFConfiguration 01 00)", .rfConfiguration, [0x01, 0x00]) { data in
            data.isEmpty ? nil : "expected no data"
        }
        step("retries back to FF 01 FF (RFConfiguration 05)", .rfConfiguration, [0x05, 0xFF, 0x01, 0xFF]) { data in
            data.isEmpty ? nil : "expected no data"
        }
        return restored
    }
}

extension SecbridgeCLI {
    /// `reset --device tty:PATH` on the board at `path`, through the line `open` gives (a
    /// ``PN532TTY`` normally; an in-memory line in tests).
    /// - Throws: a failure naming the device and `doctor --device` when the port does not open,
    ///   the board does not answer, or a step failed.
    static func runSerialReset(_ invocation: Invocation, path: String, open: () throws -> PN532SerialLink) throws -> Int32 {
        let reader = "tty:" + path
        let json = invocation.json
        if !json { invocation.out("reader: \(reader)") }
        let link: PN532SerialLink
        do {
            link = try open()
        } catch {
            throw CLIError.failure("cannot open \(path): \(error); `secbridge doctor --device \(reader)` checks the device")
        }
        var lines: [String] = []
        var outcomes: [SerialReset.Outcome] = []
        let connection = "serial line \(path), 115200 baud (a bare PN532: \(SerialReset.notApplicable))"
        if json { lines.append(connection) } else { invocation.out("connection: \(connection)") }
        let restored = SerialReset.run(on: link, say: { line in if json { lines.append(line) } else { invocation.out(line) } }, onOutcome: { outcomes.append($0) })
        var failure: String?
        if !restored {
            let wokeUp = outcomes.count >= 2 && outcomes[1].succeeded
            failure = wokeUp
                ? "\(reader) was not fully reset: power the board off and on again (unplug the adapter), then `secbridge doctor --device \(reader)`"
                : "\(reader) did not answer the wake-up: \(outcomes.last?.failure ?? "no answer"); `secbridge doctor --device \(reader)` checks the device node, its permissions and the wake-up"
        }
        return try finishReset(
            invocation, reader: reader, connection: connection,
            steps: outcomes.map { ($0.name, $0.exchanges, $0.failure) }, restored: restored, failure: failure)
    }
}
