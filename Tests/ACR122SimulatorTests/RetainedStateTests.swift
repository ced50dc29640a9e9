import ACR122Simulator
import ISO7816
import PN53x
import SecbridgeTesting
import Testing

/// What the simulator keeps while it serves many APDUs: the card's log, the terminal's log and
/// the field's events are bounded by count (issue 16: pcscd under `secbridge simulate` must not
/// grow over a million APDUs), whatever the number of exchanges.
@Suite struct RetainedStateTests {
    /// A reader's card APDUs through automatic polling (ACR122U API v2.04 §4): after more APDUs
    /// than a card keeps, the card holds its latest ``ISO14443_4Card/logCapacity`` and counts
    /// every one, and the field's event log is no longer than after the first APDU.
    @Test func readerAndCardKeepTheSameStateAfterManyAPDUs() throws {
        let field = fastField()
        let card = ISO14443_4Card(uid: hex("04 A1 B2 C3")) { _ in [0x90, 0x00] }
        field.place(card)
        let reader = SimulatedACR122U(field: field)
        let channel = try SimulatedReaderChannel(reader, protocol: .t1)
        let select = hex("00 A4 04 00 07 D2 76 00 00 85 01 01 00")
        #expect(try channel.transmit(select) == hex("90 00"))
        let eventsAfterOne = field.events().count
        let total = ISO14443_4Card.logCapacity + 1000
        for _ in 1..<total {
            guard try channel.transmit(select) == hex("90 00") else {
                Issue.record("the card stopped answering 90 00")
                return
            }
        }
        let log = card.receivedLog
        #expect(log.total == total)
        #expect(log.count == ISO14443_4Card.logCapacity)
        #expect(log.dropped == 1000)
        #expect(field.events().count == eventsAfterOne)
    }

    /// A terminal that sends more C-APDUs than it keeps, to an emulating reader (TgGetData /
    /// TgSetData, PN532 UM0701-02 §7.3.16–17): it passes, keeps its latest
    /// ``ExternalTerminal/logCapacity`` exchanges and counts every one.
    @Test func terminalKeepsItsLatestExchangesAndCountsEveryOne() throws {
        let extra = 10
        let steps = (0..<(ExternalTerminal.logCapacity + extra)).map { n in
            ExternalTerminal.Step(hex("00 B0") + [UInt8(truncatingIfNeeded: n >> 8), UInt8(truncatingIfNeeded: n), 0x02], expect: hex("00 10 90 00"))
        }
        let field = fastField()
        let terminal = ExternalTerminal(script: .init(name: "long read", steps: steps))
        field.place(terminal)
        let reader = SimulatedACR122U(field: field)
        let pn532 = try directPN532(reader)
        try pn532.prepareForCardEmulation()
        _ = try pn532.initAsTarget(uid: EmulatedUID(hex("08 12 34 56")))
        var received = try pn532.receiveCommand()
        while case .command = received {
            guard try pn532.sendResponse(hex("00 10 90 00")) == .delivered else { break }
            received = try pn532.receiveCommand()
        }
        #expect(received == .released(.targetReleased))
        #expect(terminal.result == .passed)
        let log = terminal.exchangeLog
        #expect(terminal.exchangeCount == steps.count)
        #expect(log.count == ExternalTerminal.logCapacity && log.dropped == extra)
        #expect(log.elements.first?.command == steps[extra].command)
        #expect(log.last?.command == steps[steps.count - 1].command)
        #expect(log.last?.response == hex("00 10 90 00"))
    }
}
