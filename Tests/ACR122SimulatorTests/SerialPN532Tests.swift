import ACR122Simulator
import ISO7816
import PCSCCore
import PN53x
import SecbridgeTesting
import Testing

/// The simulated PN532 behind the UART framing, on one virtual time (docs/pn532-uart.md §5), with
/// a host link on the line's other end.
private final class SerialBoard {
    let board: SimulatedSerialPN532
    let link: PN532SerialLink
    var time: VirtualTime { board.time }
    var chip: SimulatedPN532 { board.chip }
    var device: PN532SerialDevice { board.device }

    init(awake: Bool = false) {
        board = SimulatedSerialPN532(awake: awake)
        link = PN532SerialLink(stream: board.line.host, clock: board.clock)
    }

    func run<R>(_ body: (PN532SerialLink) throws -> R) rethrows -> R { try time.participate { try body(link) } }

    deinit { board.close() }
}

@Suite("Simulated PN532 on a serial line")
struct SerialPN532Tests {
    @Test("PowerDown D4 16 F0 → D5 17 00 (UM0701-02 §7.2.11), as libnfc's pn532_uart sends it on close")
    func powerDown() throws {
        let board = SerialBoard()
        let status = try board.run { link in
            try link.wakeUp()
            return try link.exchange(.init(rawValue: 0x16), [0xF0])
        }
        #expect(status == [0x00])
        #expect(board.chip.respond(to: [0xD4, 0x16]) == nil, "WakeUpEnable is required")
    }

    @Test("a board just powered up answers without the 55 (nfcpy's 00 preamble); after PowerDown only the 55 wakes it")
    func sleepsAfterPowerDown() throws {
        let board = SerialBoard(awake: true)
        #expect(try board.run { try $0.exchange(.getFirmwareVersion) } == hex("32 01 06 07"))
        #expect(try board.run { try $0.exchange(.init(rawValue: 0x16), [0xB0, 0x00]) } == [0x00])
        #expect(!board.device.isAwake)
        // nfcpy's next open: 00 bytes and GetFirmwareVersion get no ACK (nfcpy issue #186 on a real board).
        #expect(throws: PN532SerialError.noAcknowledgement(command: .getFirmwareVersion, bound: .milliseconds(100))) {
            try board.run { try $0.exchange(.getFirmwareVersion) }
        }
        try board.run { try $0.wakeUp() }
        #expect(try board.run { try $0.exchange(.getFirmwareVersion) } == hex("32 01 06 07"))
    }

    @Test("SetSerialBaudRate D4 10 00…08 → D5 11 (UM0701-02 §7.2.8); a rate index past 08 is refused")
    func setSerialBaudRate() {
        let chip = SimulatedPN532()
        #expect(chip.respond(to: hex("D4 10 07")) == hex("D5 11"))  // 921 600, nfcpy's first choice
        #expect(chip.respond(to: hex("D4 10 04")) == hex("D5 11"))  // 115 200, nfcpy's close
        #expect(chip.respond(to: hex("D4 10 09")) == nil)
        chip.detach()
    }

    @Test("a Type 4A card activated with a raw RATS answers ISO-DEP blocks through InCommunicateThru, as nfcpy sends them")
    func rawISODEPBlocks() {
        let field = SimulatedField()
        let card = ISO14443_4Card(uid: hex("04 A1 B2 C3")) { apdu in apdu.count > 4 && apdu[1] == 0xB0 ? Array(repeating: 0x5A, count: 300) + [0x90, 0x00] : [0x90, 0x00]
        }
        field.place(card)
        let chip = SimulatedPN532(field: field)
        defer { chip.detach() }
        // nfcpy: SetParameters 00 (no automatic RATS), InListPassiveTarget, then RATS E0 80 raw.
        #expect(chip.respond(to: hex("D4 12 00")) == hex("D5 13"))
        #expect(chip.respond(to: hex("D4 4A 01 00")).map { Array($0.prefix(3)) } == hex("D5 4B 01"))
        #expect(chip.respond(to: hex("D4 42 E0 80")) == hex("D5 43 00 05 78 80 70 02"))
        // I-block 02 (block 0): the answer I-block 02 with the R-APDU.
        #expect(chip.respond(to: hex("D4 42 02 00 A4 04 00 07 D2 76 00 00 85 01 01 00")) == hex("D5 43 00 02 90 00"))
        // R(NAK) for block 0: the last block again.
        #expect(chip.respond(to: hex("D4 42 B2")) == hex("D5 43 00 02 90 00"))
        // A 302-byte R-APDU: chained I-blocks (13 = chaining, block 1) of 250 bytes (FSD 256 allows
        // 253; the chip's answer frame holds 251 bytes after the status), the rest on R(ACK) of block 0.
        let first = chip.respond(to: hex("D4 42 03 00 B0 00 00 00"))
        #expect(first.map { Array($0.prefix(4)) } == hex("D5 43 00 13"))
        #expect(first?.count == 4 + 250)
        let rest = chip.respond(to: hex("D4 42 A2"))
        #expect(rest.map { Array($0.prefix(4)) } == hex("D5 43 00 02"))
        #expect(rest.map { Array($0.dropFirst(4)) } == Array(repeating: 0x5A, count: 50) + [0x90, 0x00])
        // A chained C-APDU: R(ACK) for the first part, the whole APDU to the card with the last.
        #expect(chip.respond(to: hex("D4 42 13 00 D6 00")) == hex("D5 43 00 A3"))
        #expect(chip.respond(to: hex("D4 42 02 00 01 AA")) == hex("D5 43 00 02 90 00"))
        // S(DESELECT) answered C2; the card then answers no block.
        #expect(chip.respond(to: hex("D4 42 C2")) == hex("D5 43 00 C2"))
        #expect(chip.respond(to: hex("D4 42 03 00 A4 00 0C 02 E1 03")) == hex("D5 43 01"))
        #expect(card.receivedAPDUs == [hex("00 A4 04 00 07 D2 76 00 00 85 01 01 00"), hex("00 B0 00 00 00"), hex("00 D6 00 00 01 AA")])
    }

    @Test("wake-up, then GetFirmwareVersion D4 02 → D5 03 32 01 06 07 (PN532 v1.6, UM0701-02 §7.2.2)")
    func firmwareVersion() throws {
        let board = SerialBoard()
        try board.run { try $0.wakeUp() }
        #expect(try board.run { try $0.exchange(.getFirmwareVersion) } == hex("32 01 06 07"))
        let version = try board.run { try $0.send(PN532.GetFirmwareVersion()) }
        #expect(version.description == "PN532 v1.6")
        #expect(board.device.receivedCommands == [hex("D4 14 01 00 00"), hex("D4 02"), hex("D4 02")])
    }

    @Test("a command the model refuses (ReadRegister with an odd length) gets the error frame")
    func refused() throws {
        let board = SerialBoard()
        try board.run { try $0.wakeUp() }
        #expect(throws: PN532SerialError.applicationError(command: .readRegister)) {
            try board.run { try $0.exchange(.readRegister, [0x63]) }
        }
        #expect(try board.run { try $0.exchange(.readRegister, [0x63, 0x02]) }.count == 1)
    }

    @Test("an extended frame to the chip: WriteRegister of 87 registers, D4 08 and 261 bytes (LEN 264), read back")
    func extendedWriteRegister() throws {
        let board = SerialBoard()
        try board.run { try $0.wakeUp() }
        // 87 × (address high, low, value) at 0x6100…; the model keeps a value for any address.
        let addresses = (0..<87).map { UInt16(0x6100 + $0) }
        let parameters = addresses.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF), UInt8($0 & 0xFF) ^ 0x5A] }
        #expect(parameters.count == 261)
        #expect(try board.run { try $0.exchange(.writeRegister, parameters) }.isEmpty)
        #expect(board.device.receivedCommands.last?.count == 263)
        let values = try board.run { try $0.exchange(.readRegister, addresses.prefix(4).flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }) }
        #expect(values == [0x5A, 0x5B, 0x58, 0x59])
        // One more register makes 266 bytes: more than an extended frame carries.
        #expect(throws: PN532SerialError.commandTooLong(command: .writeRegister, length: 265)) {
            try board.run { try $0.exchange(.writeRegister, parameters + [0x61, 0x57, 0x00]) }
        }
    }

    @Test("TgInitAsTarget with no reader, aborted with ACK: the chip stops waiting and answers the next command")
    func abortTgInitAsTarget() throws {
        let board = SerialBoard()
        try board.run { try $0.wakeUp() }
        let parameters = try PN532.TgInitAsTarget(
            modes: [.passiveOnly, .piccOnly], atqa: ATQA(rawValue: 0x0004), uid: try EmulatedUID([0x08, 0x12, 0x34, 0x56]),
            sak: 0x20, historicalBytes: []).parameters()
        try board.run { link in
            try link.sendCommand(.tgInitAsTarget, parameters)
            // The model waits for a reader: the serve thread and the command thread both wait.
            board.time.waitUntilWaiting(2)
            #expect(board.chip.commandInFlight?.prefix(2) == [0xD4, 0x8C])
            try link.abortCommand()
        }
        #expect(try board.run { try $0.exchange(.getFirmwareVersion) } == hex("32 01 06 07"))
        #expect(board.device.abortedCommands == 1)
        #expect(board.chip.commandInFlight == nil)
    }
}
