import PCSCCore
import SecbridgeTesting
import Testing

@testable import SecbridgeCLI

/// The shell's statements on a PN532 board on a serial line (docs/shell.md §4): `reader tty:PATH`
/// changes to the desk's simulated board (control verb `pn532-serial`, a pseudo-terminal), `control
/// D4 …` and Direct Transmit `FF 00 00 00 Lc D4 …` reach it, `reader 0` changes back. No statement
/// here waits for a timeout: every frame is answered at once.
/// An interpreter as an interactive shell opens it (no transaction held), on `client`'s first
/// reader, printing to `console`.
func interactiveShellInterpreter(client: any PCSCClient, console: CapturingConsole) throws -> ScriptInterpreter {
    let invocation = Invocation(
        arguments: try parseArguments([], options: SecbridgeCLI.shellCommand.options), console: console, path: ["shell"], client: client)
    var options = ScriptInterpreter.Options()
    options.holdsTransaction = false
    options.command = "shell"
    return try ScriptInterpreter(
        invocation: invocation, context: try client.establishContext(), fileName: "shell", options: options,
        reader: nil, needsCard: false, wait: nil)
}

@Suite struct ShellSerialTests {
    @Test func readerTTYChangesToTheBoardAndBackToThePCSCReader() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        let path = try #require(try desk.control().send("pn532-serial")["path"])
        let executor = BlockingExecutor(name: "shell-serial")
        defer { executor.shutdown() }
        let reader = desk.names[0]
        try await executor.run {
            let console = CapturingConsole()
            let interpreter = try interactiveShellInterpreter(client: desk.client, console: console)
            defer { interpreter.close() }
            #expect(interpreter.readerDescription.hasPrefix("reader: \(reader), no card"))
            _ = try interpreter.execute(.reader("tty:" + path, line: 1))
            #expect(interpreter.reader == "tty:" + path)
            // A tag placed now is in the board's field too (the field is shared).
            try desk.control().send("place-tag uid=04A1B2C3 id=tag")
            _ = try interpreter.execute(.control([0xD4, 0x02], line: 2))
            _ = try interpreter.execute(.apdu([0xFF, 0x00, 0x00, 0x00, 0x04, 0xD4, 0x4A, 0x01, 0x00], line: 3))
            _ = try interpreter.execute(.control([0xD4, 0x52, 0x00], line: 4))
            do throws(CLIError) {
                _ = try interpreter.execute(.reset(line: 5))
                Issue.record("reset on a serial board succeeded")
            } catch {
                #expect(error.message.hasPrefix("shell:5: `reset` resets a card in a PC/SC reader; on the PN532 board tty:\(path) send InRelease"), "\(error.message)")
            }
            do throws(CLIError) {
                _ = try interpreter.execute(.control([0xFF, 0x00, 0x48, 0x00, 0x00], line: 6))
                Issue.record("a pseudo-APDU went to a serial board as a frame")
            } catch {
                #expect(error.message.hasPrefix("shell:6: a PN532 board takes PN532 command frames: D4, the command code and its parameters"), "\(error.message)")
            }
            _ = try interpreter.execute(.reader("0", line: 7))
            #expect(interpreter.reader == reader)
            #expect(console.standardOutput == """
                reader: tty:\(path), a PN532 board on a serial line (PN532 frames: control D4 …, or Direct Transmit FF 00 00 00 Lc D4 …)
                > D4 02
                < D5 03 32 01 06 07
                > FF 00 00 00 04 D4 4A 01 00
                < D5 4B 01 01 00 04 08 04 04 A1 B2 C3 90 00
                > D4 52 00
                < D5 53 00
                \(interpreter.readerDescription)

                """)
            #expect(interpreter.readerDescription.hasPrefix("reader: \(reader), "), "\(interpreter.readerDescription)")
        }
    }

    @Test func theDeviceOptionRefusesAReaderAndNamesDoctorForAMissingDevice() {
        let both = run(["shell", "--device", "tty:USB0", "--reader", "0"])
        #expect(both.status == 64)
        #expect(both.err.hasPrefix("secbridge: error: --reader and --device name two readers: give one"), "\(both.err)")
        let missing = run(["shell", "--device", "tty:/nonexistent/ttyUSB9"])
        #expect(missing.status == 1)
        #expect(missing.err.contains("cannot open /nonexistent/ttyUSB9"), "\(missing.err)")
        #expect(missing.err.contains("`secbridge doctor --device tty:/nonexistent/ttyUSB9` checks the device"), "\(missing.err)")
    }
}
