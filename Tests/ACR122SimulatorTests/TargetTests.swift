import ACR122Simulator
import Dispatch
import ISO7816
import PN53x
import SecbridgeTesting
import Testing
import Transcript

/// Runs the emulating host until the terminal releases the target: TgGetData → applet → TgSetData.
/// Bounded by `rounds`.
func serve(_ pn532: PN532, applet: NDEFApplet, rounds: Int = 32) throws -> PN532TargetReceiveResult {
    for _ in 0..<rounds {
        let received = try pn532.receiveCommand()
        guard case .command(let apdu) = received else { return received }
        let sent = try pn532.sendResponse(applet.respond(apdu))
        guard sent == .delivered else { return received }
    }
    Issue.record("the terminal did not release the target within \(rounds) rounds")
    return .notActivated
}

@Suite("PN532 target role: card emulation against terminals and other readers")
struct TargetTests {
    @Test("P10 byte for byte: TgInitAsTarget → D5 8D 08 E0 80, TgGetData gives the SELECT, TgSetData → D5 8F 00")
    func p10() throws {
        let field = fastField()
        let terminal = ExternalTerminal(script: .init(name: "P10", steps: [
            .init(hex("00 A4 04 00 07 D2 76 00 00 85 01 01 00"), expect: hex("90 00")),
        ]))
        field.place(terminal)
        let reader = SimulatedACR122U(field: field)
        let initAsTarget = hex("""
            FF 00 00 00 27 D4 8C 00 08 00 12 34 56 60 01 FE A2 A3 A4 A5 A6 A7 C0 C1 C2 C3 C4 C5 C6 C7
            FF FF AA 99 88 77 66 55 44 33 22 11 00 00
            """)
        #expect(text(try reader.control(code: 0x4200_0001, initAsTarget)) == "D5 8D 08 E0 80 90 00")
        #expect(text(try reader.control(code: 0x4200_0001, hex("FF 00 00 00 02 D4 86")))
            == "D5 87 00 00 A4 04 00 07 D2 76 00 00 85 01 01 00 90 00")
        #expect(text(try reader.control(code: 0x4200_0001, hex("FF 00 00 00 04 D4 8E 90 00"))) == "D5 8F 00 90 00")
        #expect(terminal.result == .passed)
        // The terminal released the target: status 29; TgGetTargetStatus says released.
        #expect(text(try reader.control(code: 0x4200_0001, hex("FF 00 00 00 02 D4 86"))) == "D5 87 29 90 00")
        #expect(text(try reader.control(code: 0x4200_0001, wrapped("D4 8A"))) == "D5 8B 02 00 90 00")
        let kinds = reader.events.map(\.kind)
        #expect(kinds.contains(.targetActivated(mode: 0x08, initiatorCommand: hex("E0 80"))))
        #expect(kinds.contains(.targetReleased))
    }

    @Test("the same P10 exchange through the PN53x client")
    func p10ThroughClient() throws {
        let field = fastField()
        let terminal = ExternalTerminal(script: .init(name: "P10", steps: [
            .init(hex("00 A4 04 00 07 D2 76 00 00 85 01 01 00"), expect: hex("90 00")),
        ]))
        field.place(terminal)
        let reader = SimulatedACR122U(field: field)
        let pn532 = try directPN532(reader)
        #expect(try pn532.receiveCommand() == .notActivated)
        try pn532.prepareForCardEmulation()
        #expect(reader.piccOperatingParameter == 0x00)
        let activation = try pn532.initAsTarget(uid: EmulatedUID(hex("08 12 34 56")))
        #expect(activation.mode.isISO14443_4PICC)
        #expect(activation.initiatorCommand == hex("E0 80"))
        #expect(try pn532.receiveCommand() == .command(hex("00 A4 04 00 07 D2 76 00 00 85 01 01 00")))
        #expect(try pn532.sendResponse(hex("90 00")) == .delivered)
        #expect(try pn532.receiveCommand() == .released(.targetReleased))
        #expect(try pn532.sendResponse(hex("90 00")) == .released(.targetReleased))
        try pn532.restoreReaderDefaults()
        #expect(reader.piccOperatingParameter == 0xFF)
    }

    @Test("Android and iOS Type 4 Tag reads (docs/iso14443-t4t-ndef.md §4) against an emulating reader", arguments: [
        ExternalTerminal.Script.androidType4ReadExample, .iOSType4ReadExample,
    ])
    func type4Read(_ script: ExternalTerminal.Script) throws {
        let field = fastField()
        let terminal = ExternalTerminal(script: script)
        field.place(terminal)
        let reader = SimulatedACR122U(field: field)
        let pn532 = try directPN532(reader)
        try pn532.prepareForCardEmulation()
        _ = try pn532.initAsTarget(uid: EmulatedUID(hex("08 00 B0 0B")))
        let applet = NDEFApplet(
            capabilityContainer: ExternalTerminal.Script.exampleCapabilityContainer,
            ndefFile: ExternalTerminal.Script.exampleNDEFFile)
        #expect(try serve(pn532, applet: applet) == .released(.targetReleased))
        #expect(terminal.result == .passed)
        #expect(terminal.exchanges.count == script.steps.count)
    }

    @Test("the Android script is the §4 sequence byte for byte (the CC's write-access byte any)")
    func androidScriptBytes() {
        let steps = ExternalTerminal.Script.androidType4ReadExample.steps
        #expect(steps.map { text($0.command) } == [
            "00 A4 04 00 07 D2 76 00 00 85 01 01 00", "00 A4 00 0C 02 E1 03", "00 B0 00 00 0F",
            "00 A4 00 0C 02 E1 04", "00 B0 00 00 02", "00 B0 00 02 10",
        ])
        #expect(steps.map { $0.expectedResponse?.description ?? "" } == [
            "90 00", "90 00", "00 0F 20 00 7F 00 7F 04 06 E1 04 04 00 00 ?? 90 00", "90 00", "00 10 90 00",
            "D1 01 0C 55 04 65 78 61 6D 70 6C 65 2E 63 6F 6D 90 00",
        ])
        let ios = ExternalTerminal.Script.iOSType4ReadExample.steps.map { text($0.command) }
        #expect(Array(ios.suffix(2)) == ["00 B0 00 00 10", "00 B0 00 10 02"])
    }

    @Test("a wrong answer is recorded as a mismatch at that step, and the target is released")
    func mismatch() throws {
        let field = fastField()
        let terminal = ExternalTerminal(script: .androidType4ReadExample)
        field.place(terminal)
        let reader = SimulatedACR122U(field: field)
        let pn532 = try directPN532(reader)
        _ = try pn532.initAsTarget(uid: EmulatedUID(hex("08 00 B0 0B")))
        _ = try pn532.receiveCommand()
        #expect(try pn532.sendResponse(hex("6A 82")) == .delivered)
        #expect(terminal.result == .mismatch(step: 0, expected: "90 00", actual: hex("6A 82")))
        #expect(try pn532.receiveCommand() == .released(.targetReleased))
    }

    @Test("a terminal leaving the field mid-script: target left, status 29")
    func terminalLeaves() throws {
        let field = fastField()
        let terminal = ExternalTerminal(script: .androidType4ReadExample)
        field.place(terminal)
        let reader = SimulatedACR122U(field: field)
        let pn532 = try directPN532(reader)
        _ = try pn532.initAsTarget(uid: EmulatedUID(hex("08 00 B0 0B")))
        _ = try pn532.receiveCommand()
        field.remove(terminal)
        #expect(terminal.result == .targetLeft(step: 0))
        #expect(try pn532.sendResponse(hex("90 00")) == .released(.targetReleased))
    }

    @Test("TgInitAsTarget without a terminal: 63 00 when the MCU timeout passes; TgGetData then 25")
    func initAsTargetTimeout() throws {
        let reader = SimulatedACR122U(field: fastField())
        let pn532 = try directPN532(reader)
        #expect(throws: ACR122Error.operationFailed) { try pn532.initAsTarget(uid: EmulatedUID(hex("08 00 B0 0B"))) }
        #expect(try pn532.receiveCommand() == .notActivated)
    }

    @Test("a terminal from a transcript: tgt lines become the script")
    func terminalFromTranscript() throws {
        let transcript = Transcript(lines: [
            .record(TranscriptRecord(.target(.incoming, TranscriptBytes(hex("00 A4 04 00 07 D2 76 00 00 85 01 01 00"))))),
            .record(TranscriptRecord(.target(.outgoing, TranscriptBytes(items: [.wildcard, .byte(0x00)])))),
        ])
        let terminal = try ExternalTerminal(transcript: transcript)
        #expect(terminal.script?.steps.count == 1)
        let field = fastField()
        field.place(terminal)
        let reader = SimulatedACR122U(field: field)
        let pn532 = try directPN532(reader)
        _ = try pn532.initAsTarget(uid: EmulatedUID(hex("08 00 B0 0B")))
        _ = try pn532.receiveCommand()
        _ = try pn532.sendResponse(hex("6A 00"))
        #expect(terminal.result == .passed)
        #expect(throws: ExternalTerminalError.self) { try ExternalTerminal(transcript: Transcript()) }
    }

    @Test("two readers in one field: one emulates, the other reads it as an ISO 14443-4 card 08xxxxxx")
    func twoReaders() throws {
        // A tenth of real time: the 30 s driver timeout bounds every wait at 3 s; nothing waits that long.
        let field = SimulatedField(clock: SimulationClock(scale: 0.1))
        let emulator = SimulatedACR122U(field: field, name: "ACS ACR122U PICC Interface 00 00")
        let poller = SimulatedACR122U(field: field, name: "ACS ACR122U PICC Interface 01 00")
        #expect(try emulator.control(code: 0x4200_0001, hex("FF 00 41 FF 00")) == hex("90 00"))
        #expect(try poller.control(code: 0x4200_0001, hex("FF 00 41 FF 00")) == hex("90 00"))

        let done = DispatchSemaphore(value: 0)
        let outcome = EmulatorOutcome()
        DispatchQueue.global().async {
            defer { done.signal() }
            do {
                let emulatorPN532 = try directPN532(emulator)
                try emulatorPN532.prepareForCardEmulation()
                let activation = try emulatorPN532.initAsTarget(
                    uid: EmulatedUID(hex("08 12 34 56")), atqa: ATQA(rawValue: 0x0004), sak: 0x20, historicalBytes: [0x80])
                outcome.record("activated \(text(activation.serialized()))")
                let applet = NDEFApplet(
                    capabilityContainer: ExternalTerminal.Script.exampleCapabilityContainer,
                    ndefFile: ExternalTerminal.Script.exampleNDEFFile)
                outcome.record("ended \(try serve(emulatorPN532, applet: applet))")
            } catch {
                outcome.record("error \(error)")
            }
        }

        // The poller waits (infinite retries, bounded by the driver timeout) for the emulation.
        #expect(try poller.control(code: 0x4200_0001, wrapped("D4 32 05 00 01 FF")) == hex("D5 33 90 00"))
        let listed = try poller.control(code: 0x4200_0001, wrapped("D4 4A 01 00"))
        #expect(text(listed) == "D5 4B 01 01 00 04 20 04 08 12 34 56 06 75 33 92 03 80 90 00")
        let pn532 = try directPN532(poller)
        #expect(try pn532.exchangeAPDU(hex("00 A4 04 00 07 D2 76 00 00 85 01 01 00")) == hex("90 00"))
        #expect(try pn532.exchangeAPDU(hex("00 A4 00 0C 02 E1 03")) == hex("90 00"))
        #expect(try pn532.exchangeAPDU(hex("00 B0 00 00 0F")) == ExternalTerminal.Script.exampleCapabilityContainer + hex("90 00"))
        try pn532.release()
        #expect(done.wait(timeout: .now() + .seconds(10)) == .success)
        #expect(outcome.lines == ["activated 08 E0 80", "ended \(PN532TargetReceiveResult.released(.targetReleased))"])
    }
}

/// Lines written by the emulating thread, read by the test after it finished.
final class EmulatorOutcome: @unchecked Sendable {
    private let lock = DispatchSemaphore(value: 1)
    private var stored: [String] = []
    func record(_ line: String) {
        lock.wait()
        stored.append(line)
        lock.signal()
    }
    var lines: [String] {
        lock.wait()
        defer { lock.signal() }
        return stored
    }
}
