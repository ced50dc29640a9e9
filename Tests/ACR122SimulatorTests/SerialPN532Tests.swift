import ACR122Simulator
import ISO7816
import PCSCCore
import PN53x
import SecbridgeTesting
import Testing

@Suite("Simulated PN532 on a serial line")
struct SerialPN532Tests {
    @Test("PowerDown D4 16 F0 → D5 17 00 (UM0701-02 §7.2.11), as libnfc's pn532_uart sends it on close")
    func powerDown() throws {
        let board = SimulatedSerialBoard()
        let status = try board.run { link in
            try link.wakeUp()
            return try link.exchange(.init(rawValue: 0x16), [0xF0])
        }
        #expect(status == [0x00])
        #expect(board.chip.respond(to: [0xD4, 0x16]) == nil, "WakeUpEnable is required")
    }

    @Test("wake-up, then GetFirmwareVersion D4 02 → D5 03 32 01 06 07 (PN532 v1.6, UM0701-02 §7.2.2)")
    func firmwareVersion() throws {
        let board = SimulatedSerialBoard()
        try board.run { try $0.wakeUp() }
        #expect(try board.run { try $0.exchange(.getFirmwareVersion) } == hex("32 01 06 07"))
        let version = try board.run { try $0.send(PN532.GetFirmwareVersion()) }
        #expect(version.description == "PN532 v1.6")
        #expect(board.device.receivedCommands == [hex("D4 14 01 00 00"), hex("D4 02"), hex("D4 02")])
    }

    @Test("a command the model refuses (ReadRegister with an odd length) gets the error frame")
    func refused() throws {
        let board = SimulatedSerialBoard()
        try board.run { try $0.wakeUp() }
        #expect(throws: PN532SerialError.applicationError(command: .readRegister)) {
            try board.run { try $0.exchange(.readRegister, [0x63]) }
        }
        #expect(try board.run { try $0.exchange(.readRegister, [0x63, 0x02]) }.count == 1)
    }

    @Test("an extended frame to the chip: WriteRegister of 87 registers, D4 08 and 261 bytes (LEN 264), read back")
    func extendedWriteRegister() throws {
        let board = SimulatedSerialBoard()
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
        let board = SimulatedSerialBoard()
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
