import ACR122Simulator
import ISO7816
import PCSCCore
import PN53x
import SecbridgeTesting
import Testing

/// The simulated PN532 behind the UART framing, on one virtual time (docs/pn532-uart.md §5).
private final class SerialBoard {
    let time = VirtualTime()
    let field: SimulatedField
    let chip: SimulatedPN532
    let line: PN532InMemorySerialLine
    let device: PN532SerialDevice
    let link: PN532SerialLink

    init() {
        let clock = PN532SerialClock(virtualTime: time)
        field = SimulatedField(clock: SimulationClock(virtualTime: time))
        chip = SimulatedPN532(field: field)
        line = PN532InMemorySerialLine(clock: clock)
        let chip = chip
        device = PN532SerialDevice(
            stream: line.device, clock: clock, respond: { chip.respond(to: $0) }, abort: { chip.abortCommand() })
        link = PN532SerialLink(stream: line.host, clock: clock)
    }

    func run<R>(_ body: (PN532SerialLink) throws -> R) rethrows -> R { try time.participate { try body(link) } }

    deinit {
        line.close()
        chip.detach()
        time.close()
    }
}

@Suite("Simulated PN532 on a serial line")
struct SerialPN532Tests {
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
