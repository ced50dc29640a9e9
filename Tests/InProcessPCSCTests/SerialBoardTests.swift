import ISO7816
import PCSCCore
import PN53x
import SecbridgeTesting
import Testing

/// The control verb `pn532-serial` (what `secbridge simulate --pn532-serial` sends): a bare PN532
/// board in the reader's field, reached through a real pseudo-terminal with the host's serial
/// link (PN532TTY, PN532SerialLink; docs/pn532-uart.md §6). No test waits for a timeout: every
/// exchange is answered at once.
@Suite struct SerialBoardTests {
    /// Wake-up, then GetFirmwareVersion `D4 02` through the pty: `D5 03 32 01 06 07`
    /// (IC 32 = PN532, firmware 1.6, support 07; UM0701-02 §7.2.2).
    @Test func theBoardAnswersGetFirmwareVersionThroughThePseudoTerminal() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        let reply = try desk.control(.pn532Serial)
        let path = try #require(reply["path"])
        #expect(path.hasPrefix("/dev/pts/"), "\(path)")
        #expect(reply["board"] == "pn532-1")
        let firmware = try await blocking("serial-board") {
            let link = PN532SerialLink(stream: try PN532TTY(path: path))
            try link.wakeUp()
            return try link.exchange(.getFirmwareVersion)
        }
        #expect(firmware == [0x32, 0x01, 0x06, 0x07])
        let list = try desk.control(.pn532SerialList)
        #expect(list["count"] == "1")
        #expect(list["list"] == "pn532-1: \(path)")
    }

    /// The board shares the field with the ACR122U reader: a card placed through the reader's
    /// control socket is found by the board's InListPassiveTarget `D4 4A 01 00` (one target,
    /// 106 kbps type A): `D5 4B 01 01 ATQA(2) SAK NFCIDLength NFCID ATS…` (UM0701-02 §7.3.5).
    @Test func theBoardFindsACardPlacedThroughTheReader() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        _ = try desk.control(.placeCard(uid: [0x04, 0xA1, 0xB2, 0xC3], id: "card"))
        let path = try #require(try desk.control(.pn532Serial)["path"])
        let answer = try await blocking("serial-board") {
            let link = PN532SerialLink(stream: try PN532TTY(path: path))
            try link.wakeUp()
            return try link.exchange(.inListPassiveTarget, [0x01, 0x00])
        }
        #expect(Array(answer.prefix(2)) == [0x01, 0x01], "one target, number 1: \(answer.hexString)")
        #expect(answer.count >= 10, "\(answer.hexString)")
        if answer.count >= 10 {
            #expect(answer[5] == 4, "NFCID length: \(answer.hexString)")
            #expect(Array(answer[6..<10]) == [0x04, 0xA1, 0xB2, 0xC3], "\(answer.hexString)")
        }
    }

    /// A bad request is refused naming what to send; a fifth board is refused.
    @Test func theVerbTakesOnlyList() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        let reply = try desk.control().exchange("pn532-serial baud=9600")
        #expect(reply.hasPrefix("error "), "\(reply)")
        for _ in 0..<4 { _ = try desk.control(.pn532Serial) }
        let fifth = try desk.control().exchange("pn532-serial")
        #expect(fifth.hasPrefix("error refused this field already has 4 serial PN532 boards"), "\(fifth)")
    }
}
