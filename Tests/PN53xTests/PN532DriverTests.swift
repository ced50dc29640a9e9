import ISO7816
import SecbridgeTesting
import Testing
@testable import PN53x

/// `FF 00 00 00 Lc` + frame, for scripting.
private func wrapped(_ frame: String) -> [UInt8] {
    let bytes = hex(frame)
    return [0xFF, 0x00, 0x00, 0x00, UInt8(bytes.count)] + bytes
}

@Suite("PN532 driver")
struct PN532DriverTests {
    @Test("P10: emulation happy path through the driver (TgInitAsTarget, TgGetData, TgSetData)")
    func p10HappyPath() throws {
        let channel = ScriptedCardChannel(.undefined, [
            .control(code: 0x4200_0001, expect: p10InitAsTargetAPDU, reply: hex("D5 8D 08 E0 80 90 00")),
            .control(code: 0x4200_0001, expect: hex("FF 00 00 00 02 D4 86"),
                     reply: hex("D5 87 00 00 A4 04 00 07 D2 76 00 00 85 01 01 00 90 00")),
            .control(code: 0x4200_0001, expect: hex("FF 00 00 00 04 D4 8E 90 00"), reply: hex("D5 8F 00 90 00")),
        ])
        let pn532 = PN532(link: ACR122Link(channel: channel))
        let activation = try pn532.send(p10InitAsTarget)
        #expect(activation.initiatorCommand == hex("E0 80"))
        // SELECT of the NFC Forum Type 4 Tag application D2 76 00 00 85 01 01.
        #expect(try pn532.receiveCommand() == .command(hex("00 A4 04 00 07 D2 76 00 00 85 01 01 00")))
        #expect(try pn532.sendResponse(hex("90 00")) == .delivered)
        channel.assertFinished()
    }

    @Test("initAsTarget sends modes 05, ATQA LSB first, the UID without 08, SAK, zeros and the historical bytes (docs/acr122-pn532.md §5 step 4)")
    func initAsTarget() throws {
        let expected = wrapped("D4 8C 05 04 00 00 B0 0B 20" + String(repeating: " 00", count: 28) + " 00 01 80")
        let channel = ScriptedCardChannel(.undefined, [
            .control(code: 0x4200_0001, expect: expected, reply: hex("D5 8D 08 E0 80 90 00")),
        ])
        let pn532 = PN532(link: ACR122Link(channel: channel))
        let activation = try pn532.initAsTarget(uid: try EmulatedUID(hex("08 00 B0 0B")), historicalBytes: [0x80])
        #expect(activation.mode.isISO14443_4PICC)
        channel.assertFinished()
    }

    @Test("target status 25 = not activated, 29 and 2B = released: typed results, not thrown errors")
    func targetResults() throws {
        let channel = ScriptedCardChannel(.undefined, [
            .control(code: 0x4200_0001, expect: hex("FF 00 00 00 02 D4 86"), reply: hex("D5 87 25 90 00")),
            .control(code: 0x4200_0001, expect: hex("FF 00 00 00 02 D4 86"), reply: hex("D5 87 29 90 00")),
            .control(code: 0x4200_0001, expect: hex("FF 00 00 00 02 D4 86"), reply: hex("D5 87 2B 90 00")),
            .control(code: 0x4200_0001, expect: hex("FF 00 00 00 04 D4 8E 90 00"), reply: hex("D5 8F 29 90 00")),
            .control(code: 0x4200_0001, expect: hex("FF 00 00 00 04 D4 8E 90 00"), reply: hex("D5 8F 25 90 00")),
            .control(code: 0x4200_0001, expect: hex("FF 00 00 00 02 D4 86"), reply: hex("D5 87 01 90 00")),
        ])
        let pn532 = PN532(link: ACR122Link(channel: channel))
        #expect(try pn532.receiveCommand() == .notActivated)
        #expect(try pn532.receiveCommand() == .released(.targetReleased))
        #expect(try pn532.receiveCommand() == .released(.cardDisappeared))
        #expect(try pn532.sendResponse(hex("90 00")) == .released(.targetReleased))
        #expect(try pn532.sendResponse(hex("90 00")) == .notActivated)
        // Other chip errors are still thrown, with their meaning.
        #expect(throws: PN532Error.chipError(PN532Status(rawValue: 0x01), command: .tgGetData)) { try pn532.receiveCommand() }
        channel.assertFinished()
    }

    @Test("TgGetData with MI: the parts are joined")
    func targetChaining() throws {
        let channel = ScriptedCardChannel(.undefined, [
            .control(code: 0x4200_0001, expect: hex("FF 00 00 00 02 D4 86"), reply: hex("D5 87 40 00 D6 00 00 90 00")),
            .control(code: 0x4200_0001, expect: hex("FF 00 00 00 02 D4 86"), reply: hex("D5 87 00 02 00 10 90 00")),
        ])
        let pn532 = PN532(link: ACR122Link(channel: channel))
        #expect(try pn532.receiveCommand() == .command(hex("00 D6 00 00 02 00 10")))
        channel.assertFinished()
    }

    @Test("InDataExchange MI chaining: status bit 6 means send again and append")
    func exchangeChaining() throws {
        let channel = ScriptedCardChannel(.t1, [
            .transmit(expect: wrapped("D4 40 01 00 B0 00 00 00"), reply: hex("D5 41 40 01 02 03 90 00")),
            .transmit(expect: wrapped("D4 40 01"), reply: hex("D5 41 40 04 05 90 00")),
            .transmit(expect: wrapped("D4 40 01"), reply: hex("D5 41 00 06 90 00 90 00")),
        ])
        let pn532 = PN532(link: ACR122Link(channel: channel))
        #expect(try pn532.exchangeAPDU(hex("00 B0 00 00 00")) == hex("01 02 03 04 05 06 90 00"))
        channel.assertFinished()
    }

    @Test("InDataExchange MI chaining is bounded")
    func exchangeChainingBounded() {
        let channel = ScriptedCardChannel(.t1, [
            .transmit(expect: wrapped("D4 40 01 00 B0 00 00 00"), reply: hex("D5 41 40 01 90 00")),
            .transmit(expect: wrapped("D4 40 01"), reply: hex("D5 41 40 02 90 00")),
            .transmit(expect: wrapped("D4 40 01"), reply: hex("D5 41 40 03 90 00")),
        ])
        let pn532 = PN532(link: ACR122Link(channel: channel))
        pn532.chainingLimit = 3
        #expect(throws: PN532Error.chainingLimitExceeded(command: .inDataExchange, limit: 3)) {
            try pn532.exchangeAPDU(hex("00 B0 00 00 00"))
        }
        channel.assertFinished()
    }

    @Test("a command longer than one frame goes out in parts with Tg's MI bit")
    func exchangeOutgoingChaining() throws {
        let apdu = [0x00, 0xD6, 0x00, 0x00, 0xFF] + (0..<255).map { UInt8(truncatingIfNeeded: $0) }
        let first = Array(apdu.prefix(251))
        let second = Array(apdu.dropFirst(251))
        let channel = ScriptedCardChannel(.t1, [
            .transmit(expect: [0xFF, 0x00, 0x00, 0x00, 0xFE, 0xD4, 0x40, 0x41] + first, reply: hex("D5 41 00 90 00")),
            .transmit(expect: [0xFF, 0x00, 0x00, 0x00, UInt8(3 + second.count), 0xD4, 0x40, 0x01] + second,
                      reply: hex("D5 41 00 90 00 90 00")),
        ])
        let pn532 = PN532(link: ACR122Link(channel: channel))
        #expect(try pn532.exchangeAPDU(apdu) == hex("90 00"))
        channel.assertFinished()
    }

    @Test("late reply: GetFirmwareVersion until the echo is right, discarding the late answer, then a desync error")
    func lateReplyResync() throws {
        let channel = ScriptedCardChannel(.undefined, [
            // TgGetTargetStatus is answered by the RFConfiguration reply that came late.
            .control(code: 0x4200_0001, expect: wrapped("D4 8A"), reply: hex("D5 33 90 00")),
            // The first GetFirmwareVersion gets TgGetTargetStatus's own answer: discarded.
            .control(code: 0x4200_0001, expect: wrapped("D4 02"), reply: hex("D5 8B 01 00 90 00")),
            .control(code: 0x4200_0001, expect: wrapped("D4 02"), reply: hex("D5 03 32 01 06 07 90 00")),
            // Back in step: the next command gets its own answer.
            .control(code: 0x4200_0001, expect: wrapped("D4 8A"), reply: hex("D5 8B 01 00 90 00")),
        ])
        let pn532 = PN532(link: ACR122Link(channel: channel))
        #expect(throws: PN532Error.desynchronized(sent: .tgGetTargetStatus, received: hex("D5 33"))) {
            try pn532.send(PN532.TgGetTargetStatus())
        }
        #expect(try pn532.send(PN532.TgGetTargetStatus()) == PN532TargetStatus(state: 0x01, bitRates: 0x00))
        channel.assertFinished()
    }

    @Test("resynchronisation is bounded")
    func resyncBounded() {
        let channel = ScriptedCardChannel(.t1, [
            .transmit(expect: wrapped("D4 02"), reply: hex("D5 4B 00 90 00")),
            .transmit(expect: wrapped("D4 02"), reply: hex("D5 41 00 90 00")),
            .transmit(expect: wrapped("D4 02"), reply: hex("D5 41 00 90 00")),
        ])
        let pn532 = PN532(link: ACR122Link(channel: channel))
        pn532.resynchronizationAttempts = 2
        #expect(throws: PN532Error.resynchronizationFailed(attempts: 2)) {
            try pn532.send(PN532.GetFirmwareVersion())
        }
        channel.assertFinished()
    }

    @Test("poll: RFConfiguration item 05 bounds the retries, then InListPassiveTarget")
    func poll() throws {
        let channel = ScriptedCardChannel(.t1, [
            .transmit(expect: wrapped("D4 32 05 00 01 02"), reply: hex("D5 33 90 00")),
            .transmit(expect: wrapped("D4 4A 01 00"), reply: hex("D5 4B 01 01 00 04 08 04 DE AD BE EF 90 00")),
            .transmit(expect: wrapped("D4 32 05 00 01 02"), reply: hex("D5 33 90 00")),
            .transmit(expect: wrapped("D4 4A 01 00"), reply: hex("D5 4B 00 90 00")),
            .transmit(expect: wrapped("D4 52 00"), reply: hex("D5 53 00 90 00")),
        ])
        let pn532 = PN532(link: ACR122Link(channel: channel))
        let target = try #require(try pn532.pollISO14443A())
        #expect(target.atqa == ATQA(rawValue: 0x0004))
        #expect(target.uid == hex("DE AD BE EF"))
        #expect(try pn532.pollISO14443A() == nil)
        try pn532.release()
        #expect(throws: PN532Error.self) { try pn532.pollISO14443A(passiveActivationRetries: 0xFF) }
        channel.assertFinished()
    }

    @Test("prepare for emulation and restore (docs/acr122-pn532.md §5 steps 2–3, §5d)")
    func prepareAndRestore() throws {
        let channel = ScriptedCardChannel(.undefined, [
            .control(code: 0x4200_0001, expect: hex("FF 00 51 00 00"), reply: hex("90 00")),
            .control(code: 0x4200_0001, expect: wrapped("D4 32 01 00"), reply: hex("D5 33 90 00")),
            .control(code: 0x4200_0001, expect: wrapped("D4 12 30"), reply: hex("D5 13 90 00")),
            .control(code: 0x4200_0001, expect: hex("FF 00 51 FF 00"), reply: hex("FF")),
        ])
        let pn532 = PN532(link: ACR122Link(channel: channel))
        try pn532.prepareForCardEmulation()
        try pn532.restoreReaderDefaults()
        channel.assertFinished()
    }

    @Test("an R-APDU above 252 bytes is refused before anything is sent")
    func responseTooLong() {
        let channel = ScriptedCardChannel(.undefined, [])
        let pn532 = PN532(link: ACR122Link(channel: channel))
        #expect(throws: ACR122Error.frameTooLong(length: 255)) {
            try pn532.sendResponse(Array(repeating: 0x00, count: 253))
        }
        channel.assertFinished()
    }
}
