import ACR122Simulator
import PCSCCore
import SecbridgeTesting
import Testing

/// The test doubles of SecbridgeTesting do what their documentation says, so that a test built on
/// them can fail.
@Suite struct SecbridgeTestingTests {
    @Test("README: the SimulatedDesk example selects the NDEF application of a placed card")
    func readmeDeskExample() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        try desk.control().send("place-card uid=04A1B2C3 applet=t4t-ndef")
        let context = try desk.client.establishContext()
        let card = try context.connect(to: desk.names[0], share: .shared, protocols: .any)
        #expect(card.activeProtocol == .t1)
        #expect(try card.transmit(hex("00 A4 04 00 07 D2 76 00 00 85 01 01 00")) == [0x90, 0x00])
        // docs/acr122-pn532.md §3: an ISO 14443-4 card without historical bytes.
        #expect(try card.status().atr == hex("3B 80 80 01 01"))
    }

    @Test("a desk's status change reports a card placed while a call waits")
    func statusChangeSeesAPlacedCard() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        let context = try desk.client.establishContext()
        var states = [ReaderState(readerName: desk.names[0])]
        #expect(try context.getStatusChange(&states, timeout: .zero))
        #expect(states[0].eventFlags.contains(.empty))
        states[0].acknowledge()
        #expect(try context.getStatusChange(&states, timeout: .zero) == false)
        try desk.control(.placeCard(uid: [0x04, 0xA1, 0xB2, 0xC3]))
        #expect(try context.getStatusChange(&states, timeout: .seconds(2)))
        #expect(states[0].eventFlags.contains(.present))
        #expect(states[0].eventCounter == states[0].currentCounter + 1, "one insertion")
    }

    @Test("cancel with no call waiting cancels nothing later; transactions end with .leave by default")
    func cancelAndTransactionsThroughTheProtocols() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        try desk.control(.placeCard(uid: [0x04, 0xA1, 0xB2, 0xC3]))
        let context = try desk.client.establishContext()
        try context.cancel()
        var states = [ReaderState(readerName: desk.names[0])]
        #expect(try context.getStatusChange(&states, timeout: .zero))  // not SCARD_E_CANCELLED
        let card = try context.connect(to: desk.names[0], share: .shared, protocols: .any)
        try card.beginTransaction()
        try card.endTransaction()
        #expect(throws: PCSCError.notTransacted) { try card.endTransaction() }
        try card.disconnect()
    }

    @Test("ScriptedCardChannel reports leftovers and a call that differs from the script")
    func scriptedChannelReportsWhatWentWrong() throws {
        let channel = ScriptedCardChannel(.t1, exchanges: [("00 A4 04 00 00", "90 00"), ("00 B0 00 00 00", "6B 00")])
        // What the channel would record as issues, asserted here instead of recorded.
        channel.recordsIssues = false
        #expect(try channel.transmit(hex("00 A4 04 00 00")) == [0x90, 0x00])
        #expect(channel.leftovers.count == 1)
        channel.assertFinished()
        #expect(channel.problems == ["1 scripted step(s) were not used: > 00 B0 00 00 00"])
        // A command that differs from the script gets the step's answer all the same.
        #expect(try channel.transmit(hex("00 B0 00 00 10")) == [0x6B, 0x00])
        #expect(channel.problems.last == "step 2: > 00 B0 00 00 10, but the script expects > 00 B0 00 00 00")
        #expect(throws: ScriptedCardChannel.UnscriptedCall.self) { try channel.transmit(hex("00 C0 00 00 00")) }
        #expect(channel.problems.last == "unscripted call > 00 C0 00 00 00 after the script's 2 step(s)")
        #expect(channel.problems.count == 3)
        #expect(channel.commands.count == 3)
    }

    @Test("SimulatedReaderChannel connects as SCardConnect does: no card is SCARD_E_NO_SMARTCARD")
    func simulatedReaderChannelMapsAsPcscd() throws {
        let reader = SimulatedACR122U(field: SimulatedField(clock: SimulationClock(scale: 0.001)))
        #expect(throws: PCSCError.noSmartcard) { _ = try SimulatedReaderChannel(reader, protocol: .t1) }
        let direct = try SimulatedReaderChannel(reader, protocol: .undefined)
        // ACR122U API v2.04: the firmware string, 10 ASCII bytes, no status word.
        #expect(try direct.control(code: 0x4200_0001, hex("FF 00 48 00 00")) == Array("ACR122U207".utf8))
    }
}
