import ISO7816
import PCSCCore
import SecbridgeTesting
import Testing
@testable import PN53x

// Frame bytes from PN532 UM0701-02 §6.2 and the frames nfcpy's pn532 init sends and expects
// (docs/pn532-uart.md §1, §3).

@Suite("PN532 UART frames")
struct PN532UARTFrameTests {
    @Test("ACK, NACK and the error frame have the manual's bytes")
    func fixedFrames() throws {
        #expect(try PN532UARTFrame.ack.serialized() == hex("00 00 FF 00 FF 00"))
        #expect(try PN532UARTFrame.nack.serialized() == hex("00 00 FF FF 00 00"))
        #expect(try PN532UARTFrame.applicationError.serialized() == hex("00 00 FF 01 FF 7F 81 00"))
    }

    @Test("GetFirmwareVersion and SAMConfiguration as nfcpy writes them")
    func normalFrames() throws {
        #expect(try PN532UARTFrame.command(.getFirmwareVersion).serialized() == hex("00 00 FF 02 FE D4 02 2A 00"))
        #expect(try PN532UARTFrame.command(.samConfiguration, [0x01, 0x00, 0x00]).serialized()
            == hex("00 00 FF 05 FB D4 14 01 00 00 17 00"))
        #expect(try PN532UARTFrame.information(tfi: 0xD5, data: [0x15]).serialized() == hex("00 00 FF 02 FE D5 15 16 00"))
    }

    @Test("every frame kind parses back from its bytes")
    func parseEveryKind() throws {
        var parser = PN532UARTFrameParser()
        parser.append(hex("00 00 FF 00 FF 00  00 00 FF FF 00 00  00 00 FF 01 FF 7F 81 00  00 00 FF 06 FA D5 03 32 01 06 07 E8 00"))
        #expect(try parser.next() == .ack)
        #expect(try parser.next() == .nack)
        #expect(try parser.next() == .applicationError)
        #expect(try parser.next() == .information(tfi: 0xD5, data: hex("03 32 01 06 07")))
        #expect(try parser.next() == nil)
        #expect(parser.bufferedCount == 0)
    }

    @Test("an extended frame of 265 TFI and data bytes: FF FF 01 09 F6 header, round trip")
    func extendedFrame() throws {
        let data = (0..<264).map { UInt8($0 & 0xFF) }
        let frame = PN532UARTFrame.information(tfi: 0xD4, data: data)
        let bytes = try frame.serialized()
        #expect(bytes.count == 265 + 10)
        #expect(Array(bytes.prefix(8)) == hex("00 00 FF FF FF 01 09 F6"))
        #expect(bytes.last == 0x00)
        #expect((bytes[8..<(8 + 265 + 1)]).reduce(0, &+) == 0)  // TFI + PD + DCS ≡ 0
        var parser = PN532UARTFrameParser(receiving: 0xD4)
        // Fed one byte at a time: nothing before the last byte.
        for byte in bytes.dropLast() {
            parser.append([byte])
            #expect(try parser.next() == nil)
        }
        parser.append([bytes.last!])
        #expect(try parser.next() == frame)
        // One byte more does not fit any frame.
        #expect(throws: PN532UARTFrameError.tooLong(length: 266)) {
            try PN532UARTFrame.information(tfi: 0xD4, data: data + [0]).serialized()
        }
    }

    @Test("255 TFI and data bytes still go in a normal frame, 256 in an extended one")
    func normalExtendedBoundary() throws {
        let normal = try PN532UARTFrame.information(tfi: 0xD4, data: [UInt8](repeating: 1, count: 254)).serialized()
        #expect(Array(normal.prefix(5)) == hex("00 00 FF FF 01"))
        let extended = try PN532UARTFrame.information(tfi: 0xD4, data: [UInt8](repeating: 1, count: 255)).serialized()
        #expect(Array(extended.prefix(8)) == hex("00 00 FF FF FF 01 00 FF"))
    }

    @Test("noise and the 55 wake-up bytes before a frame are skipped and counted")
    func garbage() throws {
        var parser = PN532UARTFrameParser(receiving: 0xD4)
        parser.append(hex("55 55 00 00 00 00 13 37 FF") + hex("00 00 FF 02 FE D4 02 2A 00"))
        #expect(try parser.next() == .command(.getFirmwareVersion))
        #expect(parser.skippedBytes == 10)
    }

    @Test("a wrong LCS, DCS, TFI or postamble is a typed error, and the parser goes on after it")
    func errors() throws {
        var parser = PN532UARTFrameParser(receiving: 0xD5)
        parser.append(hex("00 00 FF 06 FB D5 03 32 01 06 07 E8 00"))
        #expect(throws: PN532UARTFrameError.badLengthChecksum(length: [0x06], lcs: 0xFB)) { try parser.next() }
        parser.reset()
        parser.append(hex("00 00 FF 06 FA D5 03 32 01 06 07 E9 00"))
        #expect(throws: PN532UARTFrameError.badDataChecksum(expected: 0xE8, found: 0xE9)) { try parser.next() }
        parser.reset()
        parser.append(hex("00 00 FF 02 FE D4 02 2A 00"))
        #expect(throws: PN532UARTFrameError.wrongTFI(expected: 0xD5, found: 0xD4)) { try parser.next() }
        parser.append(hex("00 00 FF 00 FF 01"))
        #expect(throws: PN532UARTFrameError.badPostamble(found: 0x01)) { try parser.next() }
        parser.append(hex("00 00 FF 00 00"))
        #expect(throws: PN532UARTFrameError.emptyFrame) { try parser.next() }
        parser.append(hex("00 00 FF FF FF 01 0A F5"))
        #expect(throws: PN532UARTFrameError.tooLong(length: 266)) { try parser.next() }
        // After the errors a good frame still parses.
        parser.reset()
        parser.append(hex("00 00 FF 02 FE D5 15 16 00"))
        #expect(try parser.next() == .information(tfi: 0xD5, data: [0x15]))
    }
}

/// A line, a device that answers GetFirmwareVersion `32 01 06 07` and SAMConfiguration, and a
/// link on virtual time.
private final class Bench {
    let time: VirtualTime
    let line: PN532InMemorySerialLine
    let device: PN532SerialDevice
    let link: PN532SerialLink
    var clock: PN532SerialClock { PN532SerialClock(virtualTime: time) }

    init(time: VirtualTime = VirtualTime(), awake: Bool = true, respond: (@Sendable ([UInt8]) -> [UInt8]?)? = nil) {
        self.time = time
        let clock = PN532SerialClock(virtualTime: time)
        line = PN532InMemorySerialLine(clock: clock)
        device = PN532SerialDevice(stream: line.device, clock: clock, awake: awake, respond: respond ?? { frame in
            switch frame {
            case [0xD4, 0x02]: [0xD5, 0x03, 0x32, 0x01, 0x06, 0x07]
            case [0xD4, 0x14, 0x01, 0x00, 0x00]: [0xD5, 0x15]
            default: nil
            }
        })
        link = PN532SerialLink(stream: line.host, clock: clock)
    }

    func run<R>(_ body: (PN532SerialLink) throws -> R) rethrows -> R {
        try time.participate { try body(link) }
    }

    deinit {
        line.close()
        time.close()
    }
}

@Suite("PN532 serial link")
struct PN532SerialLinkTests {
    @Test("GetFirmwareVersion: ACK, then D5 03 32 01 06 07")
    func firmwareVersion() throws {
        let bench = Bench()
        let version = try bench.run { try $0.send(PN532.GetFirmwareVersion()) }
        #expect(version == PN532FirmwareVersion(ic: 0x32, version: 0x01, revision: 0x06, support: 0x07))
        #expect(bench.device.receivedCommands == [hex("D4 02")])
    }

    @Test("a sleeping chip ignores commands until the 55 wake-up; wakeUp() sends it and SAMConfiguration")
    func wakeUp() throws {
        let bench = Bench(awake: false)
        let start = bench.time.now
        #expect(throws: PN532SerialError.noAcknowledgement(command: .getFirmwareVersion, bound: .milliseconds(100))) {
            try bench.run { try $0.exchange(.getFirmwareVersion) }
        }
        #expect(bench.time.now - start == .milliseconds(100))  // the ACK bound, on virtual time
        try bench.run { try $0.wakeUp() }
        #expect(bench.device.isAwake)
        #expect(bench.device.receivedCommands == [hex("D4 14 01 00 00")])
        #expect(try bench.run { try $0.exchange(.getFirmwareVersion) } == hex("32 01 06 07"))
    }

    @Test("a NACK from the chip makes the link send the command again")
    func nackAndResend() throws {
        let bench = Bench()
        bench.device.inject(.nackNextCommand)
        #expect(try bench.run { try $0.exchange(.getFirmwareVersion) } == hex("32 01 06 07"))
        #expect(bench.device.receivedCommands == [hex("D4 02")])  // the NACKed send was not taken
    }

    @Test("a chip that keeps answering NACK: rejected after 3 sends")
    func nackEveryTime() throws {
        let bench = Bench()
        for _ in 0..<3 { bench.device.inject(.nackNextCommand) }
        #expect(throws: PN532SerialError.rejected(command: .getFirmwareVersion, attempts: 3)) {
            try bench.run { try $0.exchange(.getFirmwareVersion) }
        }
        #expect(bench.device.receivedCommands.isEmpty)
    }

    @Test("a response with a corrupted DCS is asked for again with NACK")
    func corruptedChecksum() throws {
        let bench = Bench()
        bench.device.inject(.corruptNextResponse)
        #expect(try bench.run { try $0.exchange(.getFirmwareVersion) } == hex("32 01 06 07"))
        #expect(bench.device.receivedCommands.count == 1)  // answered again, not run again
    }

    @Test("a lost ACK: noAcknowledgement after the 100 ms bound, on virtual time")
    func lostACK() throws {
        let bench = Bench()
        bench.device.inject(.dropNextCommand)
        let start = bench.time.now
        let error = #expect(throws: PN532SerialError.self) { try bench.run { try $0.exchange(.getFirmwareVersion) } }
        #expect(error == .noAcknowledgement(command: .getFirmwareVersion, bound: .milliseconds(100)))
        #expect(error?.description.contains("did not acknowledge GetFirmwareVersion within 0.1 seconds") == true)
        #expect(bench.time.now - start == .milliseconds(100))
        // The next command goes through.
        #expect(try bench.run { try $0.exchange(.getFirmwareVersion) } == hex("32 01 06 07"))
    }

    @Test("a refused command gets the error frame: applicationError")
    func applicationError() throws {
        let bench = Bench()
        #expect(throws: PN532SerialError.applicationError(command: .readRegister)) {
            try bench.run { try $0.exchange(.readRegister, [0x63]) }
        }
    }

    @Test("no response in time: the link aborts with ACK and says so; the device drops the command")
    func noResponse() throws {
        let time = VirtualTime()
        // A model that takes 5 s (virtual) to answer.
        let bench = Bench(time: time, respond: { frame in
            time.sleepThread(.seconds(5))
            return [0xD5, 0x03, 0x32, 0x01, 0x06, 0x07]
        })
        // Measured inside the participation: outside it the clock may move on to the model's 5 s.
        let (error, elapsed) = bench.run { link in
            let start = time.now
            let error = #expect(throws: PN532SerialError.self) { try link.exchange(.getFirmwareVersion, timeout: .seconds(1)) }
            return (error, time.now - start)
        }
        #expect(error == .noResponse(command: .getFirmwareVersion, bound: .seconds(1)))
        #expect(elapsed == .seconds(1))
        #expect(bench.link.pendingCommand == nil)
        // The abort reached the device: the late answer is dropped and the next command is answered.
        #expect(try bench.run { try $0.exchange(.getFirmwareVersion, timeout: .seconds(10)) } == hex("32 01 06 07"))
        #expect(bench.device.abortedCommands == 1)
    }

    @Test("an abort mid-command: ACK while the chip works; the chip drops it and takes the next")
    func abortMidCommand() throws {
        let time = VirtualTime()
        let bench = Bench(time: time, respond: { frame in
            if frame == [0xD4, 0x8C] {
                time.sleepThread(.seconds(30))  // a TgInitAsTarget no reader answers
                return [0xD5, 0x8D, 0x08, 0xE0, 0x80]
            }
            return frame == [0xD4, 0x02] ? [0xD5, 0x03, 0x32, 0x01, 0x06, 0x07] : nil
        })
        try bench.run { link in
            try link.sendCommand(.tgInitAsTarget)
            #expect(link.pendingCommand == .tgInitAsTarget)
            #expect(bench.device.isBusy)
            try link.abortCommand()
            #expect(link.pendingCommand == nil)
        }
        #expect(try bench.run { try $0.exchange(.getFirmwareVersion) } == hex("32 01 06 07"))
        #expect(bench.device.abortedCommands == 1)
        #expect(bench.device.receivedCommands == [hex("D4 8C"), hex("D4 02")])
        #expect(throws: PN532SerialError.noCommandPending) { try bench.run { try $0.receiveResponse(timeout: .seconds(1)) } }
    }
}

@Suite("PN532 serial connection (async)")
struct PN532SerialConnectionTests {
    @Test("GetFirmwareVersion from async code runs on the connection's own thread")
    func asyncExchange() async throws {
        let bench = Bench()
        let connection = PN532SerialConnection(bench.link)
        let version = try await connection.send(PN532.GetFirmwareVersion())
        #expect(version.serialized() == hex("32 01 06 07"))
        bench.device.inject(.dropNextCommand)
        await #expect(throws: PN532SerialError.noAcknowledgement(command: .getFirmwareVersion, bound: .milliseconds(100))) {
            try await connection.exchange(.getFirmwareVersion)
        }
    }
}

#if canImport(Glibc)
import Glibc

@Suite("PN532 serial port (tty)")
struct PN532TTYTests {
    @Test("a missing device names ENOENT and what to check")
    func missingDevice() {
        let error = #expect(throws: PN532SerialLineError.self) { try PN532TTY(path: "/dev/secbridge-no-such-tty") }
        #expect(error == .system(operation: "open", path: "/dev/secbridge-no-such-tty", errno: ENOENT))
        #expect(error?.description.contains("is the USB-serial adapter plugged in?") == true)
    }

    @Test("on a pseudo-terminal: raw 115200 8N1, bytes pass unchanged both ways (no waiting: they are already there)")
    func pseudoTerminal() throws {
        // /dev/ptmx with TIOCSPTLCK (unlock) and TIOCGPTN (the pty's number): what posix_openpt,
        // unlockpt and ptsname do on Linux (pty(7)), which Glibc's Swift module does not export.
        let master = open("/dev/ptmx", O_RDWR | O_NOCTTY)
        try #require(master >= 0)
        defer { close(master) }
        var unlock: Int32 = 0
        var number: UInt32 = 0
        try #require(ioctl(master, 0x4004_5431, &unlock) == 0)  // TIOCSPTLCK
        try #require(ioctl(master, 0x8004_5430, &number) == 0)  // TIOCGPTN
        let path = "/dev/pts/\(number)"
        let port = try PN532TTY(path: path)
        var settings = termios()
        let slave = open(path, O_RDWR | O_NOCTTY)
        defer { close(slave) }
        try #require(tcgetattr(slave, &settings) == 0)
        #expect(cfgetospeed(&settings) == speed_t(B115200))
        #expect(settings.c_cflag & tcflag_t(CSIZE) == tcflag_t(CS8))
        #expect(settings.c_cflag & tcflag_t(PARENB) == 0)
        #expect(settings.c_lflag & tcflag_t(ICANON) == 0)  // raw: 00 and FF are not line discipline
        // Host → board: a GetFirmwareVersion frame arrives on the master unchanged.
        let command = try PN532UARTFrame.command(.getFirmwareVersion).serialized()
        try port.write(command)
        var buffer = [UInt8](repeating: 0, count: 64)
        let count = buffer.withUnsafeMutableBytes { Glibc.read(master, $0.baseAddress, $0.count) }
        #expect(Array(buffer.prefix(max(0, count))) == hex("00 00 FF 02 FE D4 02 2A 00"))
        // Board → host: ACK and the answer, read back through the port.
        let answer = hex("00 00 FF 00 FF 00 00 00 FF 06 FA D5 03 32 01 06 07 E8 00")
        _ = answer.withUnsafeBytes { Glibc.write(master, $0.baseAddress, $0.count) }
        var parser = PN532UARTFrameParser(receiving: PN532UARTFrame.chipTFI)
        var frames: [PN532UARTFrame] = []
        let deadline = PN532SerialClock.monotonic.deadline(after: .seconds(5))
        while frames.count < 2 {
            let bytes = try port.read(maximumCount: 64, until: deadline)
            try #require(!bytes.isEmpty)
            parser.append(bytes)
            while let frame = try parser.next() { frames.append(frame) }
        }
        #expect(frames == [.ack, .information(tfi: 0xD5, data: hex("03 32 01 06 07"))])
    }
}
#endif
