import ACR122Simulator
import ISO7816
import PCSCCore
import PN53x
import SecbridgeTesting
import Testing

/// The worked example's tag (CC E103, NDEF file E104 with NLEN 0010 + a URI record).
private func workedExampleApplet() -> NDEFApplet {
    NDEFApplet(capabilityContainer: ExternalTerminal.Script.exampleCapabilityContainer, ndefFile: ExternalTerminal.Script.exampleNDEFFile)
}

/// A reader emulating through the PN53x client, with `terminal` in its field.
private func emulatingReader(with terminal: ExternalTerminal) throws -> (PN532, SimulatedACR122U) {
    let field = fastField()
    field.place(terminal)
    let reader = SimulatedACR122U(field: field)
    let pn532 = try directPN532(reader)
    try pn532.prepareForCardEmulation()
    return (pn532, reader)
}

@Suite("Phones around the APDUs: field loss, re-tap, peer-to-peer, frame waiting time (docs/terminal-models.md §6)")
struct PhoneBehaviourTests {
    @Test("FWT from the ATS: the PN532's TB(1) 92 gives FWI 9, 154.7 ms; without S(WTX) a PCD gives up after 474.8 ms")
    func frameWaitingTime() {
        #expect(FrameWaitingTime.fwi(ats: hex("05 75 33 92 03")) == 9)
        // DESFire: T0 75, TA 77, TB 81 → FWI 8; an ATS without TB(1) → the default 4.
        #expect(FrameWaitingTime.fwi(ats: hex("06 75 77 81 02 80")) == 8)
        #expect(FrameWaitingTime.fwi(ats: hex("02 05")) == 4)
        #expect(FrameWaitingTime.fwt(fwi: 9) == .nanoseconds(154_657_227))
        #expect(FrameWaitingTime.fwt(fwi: 14) == .nanoseconds(4_949_031_268))
        #expect(FrameWaitingTime.deltaFWT == .nanoseconds(3_624_779))
        #expect(FrameWaitingTime.retransmissionBound(fwi: 9) == .nanoseconds(474_846_018))
    }

    @Test("field loss: Android leaves after NLEN (TgGetData 29), comes back at the next TgInitAsTarget and reads from the start")
    func fieldLossAndReturn() throws {
        let terminal = try #require(ExternalTerminal.named("android-t4t-read") { $0.leaveAfter = 5 })
        let (pn532, _) = try emulatingReader(with: terminal)
        let applet = workedExampleApplet()
        _ = try pn532.initAsTarget(uid: EmulatedUID(hex("08 00 B0 0B")))
        // Five exchanges (SELECT AID, SELECT CC, READ CC, SELECT E104, READ NLEN), then the phone is gone.
        #expect(try serve(pn532, applet: applet) == .released(.targetReleased))
        #expect(terminal.exchanges.count == 5)
        #expect(terminal.result == .leftField(step: 4))
        #expect(terminal.activationResults == ["1: left the field after exchange 5 (00 B0 00 00 02 → 00 10 90 00)"])
        // A new activation: a new RATS, the read from the start, to the end.
        let second = try pn532.initAsTarget(uid: EmulatedUID(hex("08 00 B0 0B")))
        #expect(second.initiatorCommand == hex("E0 80"))
        #expect(try serve(pn532, applet: applet) == .released(.targetReleased))
        #expect(terminal.result == .passed)
        #expect(terminal.activations == 2)
        #expect(terminal.exchanges.count == 11)
        #expect(terminal.exchanges[5].command == hex("00 A4 04 00 07 D2 76 00 00 85 01 01 00"))
        #expect(terminal.report?.ndefMessage == exampleMessage)
        #expect(terminal.activationResults.last == "2: passed: NDEF message, 1 record: URI https://example.com")
    }

    @Test("a slip during detection: Android leaves after READ CC and is back 1 s later (virtual time), not at once; the next TgInitAsTarget waits for it")
    func slipAfterReadCCAndReturnOneSecondLater() throws {
        let time = VirtualTime()
        defer { time.close() }
        let field = SimulatedField(clock: SimulationClock(virtualTime: time))
        let terminal = try #require(ExternalTerminal.named("android-t4t-read") {
            $0.leaveAfter = 3
            $0.returnAfter = .seconds(1)
        })
        field.place(terminal)
        let reader = SimulatedACR122U(field: field)
        let pn532 = try directPN532(reader)
        let applet = workedExampleApplet()
        try time.participate {
            try pn532.prepareForCardEmulation()
            _ = try pn532.initAsTarget(uid: EmulatedUID(hex("08 00 B0 0B")))
            // SELECT AID, SELECT CC, READ CC (00 B0 00 00 0F), then the phone is gone.
            #expect(try serve(pn532, applet: applet) == .released(.targetReleased))
            #expect(terminal.result == .leftField(step: 2))
            #expect(terminal.activationResults == [
                "1: left the field after exchange 3 (00 B0 00 00 0F → 00 0F 20 00 7F 00 7F 04 06 E1 04 04 00 00 00 90 00)",
            ])
            let left = time.now
            // Armed again at once: the target waits (virtual time) until the phone is back.
            let second = try pn532.initAsTarget(uid: EmulatedUID(hex("08 00 B0 0B")))
            #expect(time.now - left == .seconds(1))
            #expect(second.initiatorCommand == hex("E0 80"))
            #expect(try serve(pn532, applet: applet) == .released(.targetReleased))
        }
        #expect(terminal.result == .passed)
        #expect(terminal.activations == 2)
        #expect(terminal.exchanges.count == 9)
        #expect(terminal.report?.ndefMessage == exampleMessage)
    }

    @Test("re-tap: taps=2 reads to the end twice, each in its own activation")
    func retap() throws {
        let terminal = try #require(ExternalTerminal.named("ios-t4t-read") { $0.taps = 2 })
        let (pn532, _) = try emulatingReader(with: terminal)
        let applet = workedExampleApplet()
        for _ in 0..<2 {
            _ = try pn532.initAsTarget(uid: EmulatedUID(hex("08 00 B0 0B")))
            #expect(try serve(pn532, applet: applet) == .released(.targetReleased))
            #expect(terminal.result == .passed)
        }
        #expect(terminal.activations == 2)
        #expect(terminal.activationResults.count == 2)
        #expect(terminal.activationResults.allSatisfy { $0.hasSuffix("passed: NDEF message, 1 record: URI https://example.com") })
    }

    @Test("a peer-to-peer initiator: TgInitAsTarget with PICCOnly is not activated by ATR_REQ; without it, mode 04 + F0 LEN ATR_REQ")
    func peerToPeerInitiator() throws {
        let terminal = try #require(ExternalTerminal.named("android-beam-p2p"))
        let field = fastField()
        field.place(terminal)
        let reader = SimulatedACR122U(field: field)
        // The product's TgInitAsTarget (modes PassiveOnly | PICCOnly, SAK 20): the phone finds no
        // NFC-DEP target; the MCU timeout (scaled) passes with no activation → 63 00.
        _ = try reader.control(code: 0x4200_0001, hex("FF 00 41 01 00"))
        let picc = hex("FF 00 00 00 27 D4 8C 05 04 00 12 34 56 20") + [UInt8](repeating: 0, count: 30)
        #expect(text(try reader.control(code: 0x4200_0001, picc)) == "63 00")
        guard case .ignored(let reason) = terminal.result else {
            Issue.record("expected ignored, got \(terminal.result)")
            return
        }
        #expect(reason.hasPrefix("no NFC-DEP target: TgInitAsTarget allows ISO/IEC 14443-4 PICC activation only"))

        // Modes 00 (any) and SEL_RES 60 (ISO-DEP and NFC-DEP): a fresh phone activates it in DEP.
        let dep = try #require(ExternalTerminal.named("android-beam-p2p"))
        field.place(dep)
        let any = hex("FF 00 00 00 27 D4 8C 00 04 00 12 34 56 60") + [UInt8](repeating: 0, count: 30)
        #expect(text(try reader.control(code: 0x4200_0001, any)) == "D5 8D 04 " + text(PeerToPeerInitiator.atrRequest) + " 90 00")
        #expect(PeerToPeerInitiator.atrRequest.count == 31 && PeerToPeerInitiator.atrRequest[1] == 0x1E)
        #expect(reader.events.map(\.kind).contains(.targetActivated(mode: 0x04, initiatorCommand: PeerToPeerInitiator.atrRequest)))
        // The host arms the target again (a new TgInitAsTarget): the initiator was turned away.
        #expect(text(try reader.control(code: 0x4200_0001, picc)) == "63 00")
        if case .ignored = dep.result {} else { Issue.record("expected ignored, got \(dep.result)") }
    }

    @Test("a slow host: Android gives up past RW_T4T_TOUT_RESP (with S(WTX)) or past the FWT bound (without); TgSetData 29", arguments: [
        (1200, true, "timeout: the reader's response timer of 1000.0 ms (RW_T4T_TOUT_RESP) expired while the PN532 extended the frame with S(WTX); the answer came 1200.0 ms after the command"),
        (500, false, "timeout: no block within FWT (FWI 9 from the ATS: 154.7 ms, + ΔFWT) after two R(NAK) retransmissions: 474.8 ms; the answer came 500.0 ms after the command"),
    ])
    func slowHost(_ delay: Int, _ wtx: Bool, _ reason: String) throws {
        let terminal = try #require(ExternalTerminal.named("android-t4t-read") {
            $0.hostDelay = .init(command: 3, delay: .milliseconds(delay))
            $0.pn532SendsWTX = wtx
        })
        let (pn532, _) = try emulatingReader(with: terminal)
        let applet = workedExampleApplet()
        _ = try pn532.initAsTarget(uid: EmulatedUID(hex("08 00 B0 0B")))
        for _ in 0..<2 {
            guard case .command(let apdu) = try pn532.receiveCommand() else { Issue.record("no command"); return }
            #expect(try pn532.sendResponse(applet.respond(apdu)) == .delivered)
        }
        guard case .command(let readCC) = try pn532.receiveCommand() else { Issue.record("no READ BINARY"); return }
        #expect(readCC == hex("00 B0 00 00 0F"))
        #expect(try pn532.sendResponse(applet.respond(readCC)) == .released(.targetReleased))
        #expect(terminal.result == .failed(step: 2, stage: "waiting for the answer to 00 B0 00 00 0F", reason: reason))
        #expect(terminal.exchanges[2].response == nil)
    }

    @Test("a host slower than the FWT bound is still in time while the PN532 sends S(WTX) (500 ms < 1000 ms)")
    func slowHostWithinWTX() throws {
        let terminal = try #require(ExternalTerminal.named("android-t4t-read") { $0.hostDelay = .init(command: 3, delay: .milliseconds(500)) })
        let (pn532, _) = try emulatingReader(with: terminal)
        _ = try pn532.initAsTarget(uid: EmulatedUID(hex("08 00 B0 0B")))
        #expect(try serve(pn532, applet: workedExampleApplet()) == .released(.targetReleased))
        #expect(terminal.result == .passed)
    }
}
