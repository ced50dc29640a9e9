import ACR122Simulator
import ISO7816
import PCSC
import PCSCCore
import PN53x
import SecbridgeTesting
import Testing

@testable import SecbridgeCLI
@testable import SecbridgeTools

/// `secbridge reset --device tty:…` (SerialReset.swift) and `secbridge selftest --hardware --device
/// tty:…` (SerialSelftest.swift) on the board above, and once each through the simulated board's
/// pseudo-terminal (`simulate --pn532-serial`'s control verb) with the CLI.
@Suite struct SerialResetSelftestTests {
    static func invocation(_ command: Command, _ arguments: [String]) throws -> (Invocation, CapturingConsole) {
        let console = CapturingConsole()
        let parsed = try parseArguments(arguments, options: command.options)
        return (Invocation(arguments: parsed, console: console, path: [command.name], client: PCSCLiteClient()), console)
    }

    /// An interrupted emulation left TgInitAsTarget pending (sent and acknowledged, never
    /// answered): the reset's ACK frame aborts it (UM0701-02 §6.2), the chip answers the wake-up
    /// and every step after it, and the RF field is off at the end.
    @Test func resetAbortsAPendingTgInitAsTargetAndLeavesTheFieldOff() throws {
        let board = SimulatedSerialBoard()
        let parameters = try PN532.TgInitAsTarget(
            modes: [.passiveOnly, .piccOnly], atqa: ATQA(rawValue: 0x0004), uid: try EmulatedUID([0x08, 0x12, 0x34, 0x56]),
            sak: 0x20, historicalBytes: []).parameters()
        // No time passes between the interrupted emulation and the reset: held, or virtual time
        // would run on to the simulated chip's own bound on TgInitAsTarget and end it first.
        board.time.hold()
        try board.run {
            let emulation = board.link()
            try emulation.wakeUp()
            try emulation.exchange(.rfConfiguration, [0x01, 0x01])
            try emulation.sendCommand(.tgInitAsTarget, parameters)
            board.time.waitUntilWaiting(2)
        }
        #expect(board.chip.commandInFlight?.prefix(2) == [0xD4, 0x8C])
        #expect(board.chip.isRFFieldOn)
        var lines: [String] = []
        var outcomes: [SerialReset.Outcome] = []
        let restored = board.run { () -> Bool in
            board.time.release()  // this thread runs as a participant now: time waits for it
            return SerialReset.run(on: board.link(), say: { lines.append($0) }, onOutcome: { outcomes.append($0) })
        }
        #expect(restored, "\(lines)")
        #expect(board.device.abortedCommands == 1)
        #expect(board.chip.commandInFlight == nil)
        #expect(!board.chip.isRFFieldOn)
        #expect(lines == [
            "abort a pending command (ACK frame): 00 00 FF 00 FF 00 → (nothing)  ok",
            "wake-up (55 preamble, SAMConfiguration): D4 14 01 00 00 → D5 15  ok",
            "confirm a PN532 (GetFirmwareVersion): D4 02 → D5 03 32 01 06 07  ok",
            "release targets (InRelease 00): D4 52 00 → D5 53 00  ok",
            "RF field off (RFConfiguration 01 00): D4 32 01 00 → D5 33  ok",
            "retries back to FF 01 FF (RFConfiguration 05): D4 32 05 FF 01 FF → D5 33  ok",
        ])
        // What the chip received after the emulation's TgInitAsTarget: the reset's commands.
        #expect(Array(board.device.receivedCommands.suffix(5)) == [
            hex("D4 14 01 00 00"), hex("D4 02"), hex("D4 52 00"), hex("D4 32 01 00"), hex("D4 32 05 FF 01 FF"),
        ])
    }

    /// A board that does not answer (nothing on the line): the wake-up fails within its bound
    /// (virtual time), nothing after it is tried, and the command says what checks it.
    @Test func resetOfABoardThatDoesNotAnswerNamesDoctor() throws {
        let time = VirtualTime()
        defer { time.close() }
        let clock = PN532SerialClock(virtualTime: time)
        let line = PN532InMemorySerialLine(clock: clock)
        defer { line.close() }
        let (invocation, console) = try Self.invocation(SecbridgeCLI.resetCommand, ["--device", "tty:USB0"])
        do {
            _ = try time.participate {
                try SecbridgeCLI.runSerialReset(invocation, path: "/dev/ttyUSB0") { PN532SerialLink(stream: line.host, clock: clock) }
            }
            Issue.record("a silent board was reset")
        } catch let error as CLIError {
            #expect(error.message.hasPrefix("tty:/dev/ttyUSB0 did not answer the wake-up: the PN532 did not acknowledge SAMConfiguration within 0.1 seconds"), "\(error.message)")
            #expect(error.message.hasSuffix("`secbridge doctor --device tty:/dev/ttyUSB0` checks the device node, its permissions and the wake-up"), "\(error.message)")
        }
        #expect(console.standardOutput.contains("wake-up (55 preamble, SAMConfiguration): (nothing sent)  FAILED: the PN532 did not acknowledge"), "\(console.standardOutput)")
        #expect(!console.standardOutput.contains("GetFirmwareVersion"), "\(console.standardOutput)")
    }

    /// The whole sequence on the board with an ISO 14443-3 tag in its field: every step ok, the
    /// tag's UID, ATQA and SAK found, TgInitAsTarget ended by the host's 1 s bound with an ACK
    /// (one aborted command), and the field off at the end.
    @Test func selftestOnTheBoardFindsTheTagAndEndsTheTargetPartAtTheHostBound() throws {
        let board = SimulatedSerialBoard()
        board.field.place(ISO14443_3Tag(uid: [0x04, 0xA1, 0xB2, 0xC3], atqa: 0x0004, sak: 0x08))
        var reported: [(HardwareSelftest.Part, SerialSelftest.Outcome)] = []
        let (parts, card) = board.run { SerialSelftest.runAll(on: board.link()) { reported.append(($0, $1)) } }
        let outcomes = parts.flatMap(\.outcomes)
        #expect(reported.count == outcomes.count)
        #expect(parts.map(\.part) == [.reader, .target])
        #expect(outcomes.allSatisfy { $0.verdict == "ok" }, "\(outcomes.filter { $0.verdict != "ok" }.map { "\($0.step.label): \($0.answerText)" })")
        #expect(BundleHeader.cardValue(card) == "uid=04A1B2C3 atqa=0004 sak=08")
        let answers = Dictionary(outcomes.map { ($0.step.label, $0.answerText) }, uniquingKeysWith: { first, _ in first })
        #expect(answers["PN532 GetFirmwareVersion"] == "D5 03 32 01 06 07")
        // Diagnose 00 gives NumTst 00 and the payload back (UM0701-02 §7.2.1).
        #expect(answers["Diagnose 00: communication line test"] == "D5 01 00 73 65 63 62 72 69 64 67 65")
        #expect(answers["TgGetData while not a target (status 25)"] == "D5 87 25")
        #expect(answers["TgInitAsTarget, no terminal: ends at the host's 1 s bound"] == "no response within 1 s; aborted (ACK frame)")
        #expect(board.device.abortedCommands == 1)
        #expect(!board.chip.isRFFieldOn)
        #expect(SerialSelftest.warnings(outcomes).isEmpty)
    }

    /// The selftest on a board that does not answer: one failed wake-up, a failure naming doctor.
    @Test func selftestOfABoardThatDoesNotAnswerStopsAtTheWakeUp() throws {
        let time = VirtualTime()
        defer { time.close() }
        let clock = PN532SerialClock(virtualTime: time)
        let line = PN532InMemorySerialLine(clock: clock)
        defer { line.close() }
        let (invocation, console) = try Self.invocation(SecbridgeCLI.selftestCommand, ["--hardware", "--device", "tty:USB0"])
        #expect(throws: CLIError.failure(
            "tty:/dev/ttyUSB0 did not answer the wake-up: the PN532 did not acknowledge SAMConfiguration within 0.1 seconds: check the wiring (TX to RX), the board's interface switches (HSU), the baud rate (115200) and that it was woken up (55 preamble); `secbridge doctor --device tty:/dev/ttyUSB0` checks the device node, its permissions and the wake-up")) {
            try time.participate {
                try SecbridgeCLI.runSerialSelftest(invocation, path: "/dev/ttyUSB0") { PN532SerialLink(stream: line.host, clock: clock) }
            }
        }
        #expect(console.standardOutput.contains("  error   wake-up (55 preamble, SAMConfiguration normal mode): the PN532 did not acknowledge"), "\(console.standardOutput)")
    }

    @Test func readerAndDeviceTogetherAndBundleOptionsAreUsageErrors() {
        let reset = run(["reset", "--device", "tty:USB0", "--reader", "0"])
        #expect(reset.status == 64)
        #expect(reset.err.hasPrefix("secbridge: error: --reader and --device name two readers: give one (--device tty:USB0 is a PN532 board on a serial line)"), "\(reset.err)")
        let selftest = run(["selftest", "--hardware", "--device", "tty:USB0", "--reader", "0"])
        #expect(selftest.status == 64)
        #expect(selftest.err.hasPrefix("secbridge: error: --reader and --device name two readers: give one"), "\(selftest.err)")
        let output = run(["selftest", "--hardware", "--device", "tty:USB0", "--output", "/tmp/none"])
        #expect(output.status == 64)
        #expect(output.err.hasPrefix("secbridge: error: --output applies to an ACR122U: with --device nothing is recorded"), "\(output.err)")
        let replay = run(["selftest", "--replay", "/tmp/none", "--device", "tty:USB0"])
        #expect(replay.err.hasPrefix("secbridge: error: --device applies to --hardware only"), "\(replay.err)")
        let missing = run(["reset", "--device", "tty:/nonexistent/ttyUSB9"])
        #expect(missing.status == 1)
        #expect(missing.err.contains("cannot open /nonexistent/ttyUSB9"), "\(missing.err)")
        #expect(missing.err.contains("`secbridge doctor --device tty:/nonexistent/ttyUSB9` checks the device"), "\(missing.err)")
    }

    /// The command's text on the board with a tag in its field, on virtual time: the steps that do
    /// not apply listed first, both roles, the card and the firmware, no error.
    @Test func selftestCommandPrintsBothRolesAndWhatDoesNotApply() throws {
        let board = SimulatedSerialBoard()
        board.field.place(ISO14443_3Tag(uid: [0x04, 0xA1, 0xB2, 0xC3], atqa: 0x0004, sak: 0x08))
        let (invocation, console) = try Self.invocation(SecbridgeCLI.selftestCommand, ["--hardware", "--device", "tty:USB0"])
        let status = try board.run { try SecbridgeCLI.runSerialSelftest(invocation, path: "/dev/ttyUSB0") { board.link() } }
        let out = console.standardOutput
        #expect(status == 0, "\(out)")
        #expect(out.hasPrefix("""
            reader: tty:/dev/ttyUSB0 (a bare PN532 on a serial line, 115200 baud)
            not on a bare board (the ACR122U's MCU or PC/SC driver):
              feature request (CM_IOCTL_GET_FEATURE_REQUEST): a PC/SC driver's; the board is reached without PC/SC

            """), "\(out)")
        #expect(out.contains("reader role:\n  ok      wake-up (55 preamble, SAMConfiguration normal mode): D5 15\n"), "\(out)")
        #expect(out.contains("  ok      InListPassiveTarget 106 kbit/s Type A: D5 4B 01 01 00 04 08 04 04 A1 B2 C3\n"), "\(out)")
        #expect(out.contains("target role (about 1 s, the host's bound):\n"), "\(out)")
        #expect(out.hasSuffix("""
            card in the field: uid=04A1B2C3 atqa=0004 sak=08
            firmware: PN532 v1.6 (IC 32, support 07)
            0 errors, 0 answers different from the documents

            """), "\(out)")
    }

    /// Through the pseudo-terminal of the desk's board (what `simulate --pn532-serial` serves),
    /// with the CLI: a tag placed through the ACR122U's control socket is in the board's field and
    /// released. (The selftest's target part waits out the host's 1 s bound, so it runs on the
    /// in-memory board on virtual time above, not here.)
    @Test func resetThroughThePseudoTerminal() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        _ = try desk.control().send("place-tag uid=04A1B2C3 id=tag")
        let path = try #require(try desk.control().send("pn532-serial")["path"])
        let executor = BlockingExecutor(name: "serial-list")
        defer { executor.shutdown() }
        let listed = try await executor.run { () throws -> [UInt8] in
            let link = PN532SerialLink(stream: try PN532TTY(path: path))
            try link.wakeUp()
            return try link.exchange(.inListPassiveTarget, [0x01, 0x00])
        }
        #expect(listed.prefix(2) == [0x01, 0x01], "\(listed.hexString)")
        let reset = try await SerialReadTests.runOnOwnThread(["reset", "--device", "tty:" + path, "--json"])
        #expect(reset.status == 0, "\(reset.err)")
        #expect(reset.out.contains(#""reader": "tty:\#(path)""#), "\(reset.out)")
        // InRelease 00 released the listed tag: status 00 (UM0701-02 §7.3.11).
        #expect(reset.out.contains(#""command": "D45200","#) && reset.out.contains(#""reply": "D55300""#), "\(reset.out)")
        #expect(reset.out.contains(#""restored": true"#), "\(reset.out)")
    }
}
