import Foundation
import PCSCCore
import SecbridgeCLI
import SecbridgeTesting
import Testing
import Transcript

/// `secbridge shell` and the script language it shares with `run`, against simulated ACR122U
/// readers in process (no pcscd; the real pcscd runs: EndToEndTests/ShellEndToEndTests).
@Suite struct ShellCommandTests {
    /// The firmware string of the simulated ACR122U (docs/acr122-pn532.md §2): "ACR122U207".
    static let firmwareExchange = """
        ctl 0x42000001 > FF 00 48 00 00
        ctl < 41 43 52 31 32 32 55 32 30 37
          firmware: ACR122U207

        """

    /// A shell reading a pipe (not a terminal) runs it as a script and prints exactly what `run -`
    /// prints for the same lines.
    @Test func aShellOnStandardInputPrintsWhatRunPrints() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        try desk.control(.placeCard(uid: [0x04, 0xA1, 0xB2, 0xC3], applet: .echo, id: "card"))
        let lines = ["# select, reset, then another command", "00 A4 04 00 01 AA", "reset", "00B0000001BB // echo"]
        let shell = try await runTool(["shell"], on: desk, input: lines)
        let run = try await runTool(["run", "-"], on: desk, input: lines)
        #expect(shell.status == 0, "\(shell.err)")
        #expect(run.status == 0, "\(run.err)")
        #expect(shell.out == run.out)
        #expect(shell.out.hasPrefix("> 00 A4 04 00 01 AA\n< 00 A4 04 00 01 AA 90 00\n  SW 90 00: "), "\(shell.out)")
        // docs/acr122-pn532.md §3: an ISO 14443-4 card without historical bytes, 3B 80 80 01 01.
        #expect(shell.out.contains("\nreset: ATR 3B 80 80 01 01\n> 00 B0 00 00 01 BB\n< 00 B0 00 00 01 BB 90 00\n"), "\(shell.out)")
        let log = try desk.control(.cardLog(peer: "card"))["all"]
        #expect(log == "00 A4 04 00 01 AA; 00 B0 00 00 01 BB; 00 A4 04 00 01 AA; 00 B0 00 00 01 BB", "\(log ?? "")")
    }

    /// With no card the shell opens the reader DIRECT: pseudo-APDUs and `control` lines go as
    /// escape commands (the code the reader announces, 0x42000001 for libccid).
    @Test func withoutACardPseudoAPDUsGoAsEscapeCommands() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        let result = try await runTool(["shell"], on: desk, input: ["FF 00 48 00 00", "CONTROL ff004800 00", "reader"])
        #expect(result.status == 0, "\(result.err)")
        #expect(result.out == Self.firmwareExchange + Self.firmwareExchange + """
            reader: \(desk.names[0]), no card (a DIRECT connection: pseudo-APDUs FF … and control only)

            """)
        #expect(result.err == "")
    }

    /// An APDU that needs a card, with none there, stops the script with what to do.
    @Test func anAPDUWithoutACardSaysItNeedsOne() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        let result = try await runTool(["shell"], on: desk, input: ["FF 00 48 00 00", "00 A4 04 00 00", "FF 00 48 00 00"])
        #expect(result.status == 1)
        #expect(result.out == Self.firmwareExchange)
        #expect(result.err == "secbridge: error: <stdin>:2: no card in '\(desk.names[0])': an APDU other than a pseudo-APDU (FF …) needs one; place a card or tag on the reader, or change readers with `reader NAME`\n")
    }

    /// `reader N` changes the session to another reader, with or without a card there.
    @Test func readerChangesBetweenReaders() async throws {
        let desk = try await SimulatedDesk.open(readers: 2, separateFields: true)
        defer { desk.close() }
        try desk.control(.placeCard(uid: [0x04, 0xA1, 0xB2, 0xC3], applet: .echo, id: "card"), reader: 1)
        let result = try await runTool(
            ["shell", "--reader", "0"], on: desk, input: ["reader", "reader 1", "00 A4 04 00 01 AA", "reader 0", "reset"])
        #expect(result.status == 1)
        let lines = result.out.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(Array(lines.prefix(4)) == [
            "reader: \(desk.names[0]), no card (a DIRECT connection: pseudo-APDUs FF … and control only)",
            "reader: \(desk.names[1]), card ATR 3B 80 80 01 01",
            "> 00 A4 04 00 01 AA", "< 00 A4 04 00 01 AA 90 00",
        ], "\(result.out)")
        #expect(result.out.hasSuffix("reader: \(desk.names[0]), no card (a DIRECT connection: pseudo-APDUs FF … and control only)\n"))
        #expect(result.err == "secbridge: error: <stdin>:5: no card in '\(desk.names[0])': reset needs one; place a card or tag on the reader, or change readers with `reader NAME`\n")
    }

    /// `record FILE` … `record off` writes a transcript of the exchanges between them.
    @Test func recordWritesATranscriptThatParses() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        try desk.control(.placeCard(uid: [0x04, 0xA1, 0xB2, 0xC3], applet: .echo, id: "card"))
        let directory = try scratchDirectory("shell-record")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = directory + "/session.trn"
        let result = try await runTool(
            ["shell"], on: desk, input: ["00 A4 04 00 01 01", "record \(file)", "00 A4 04 00 01 AA", "reset", "record off", "00 A4 04 00 01 BB"])
        #expect(result.status == 0, "\(result.err)")
        #expect(result.out.contains("recording to \(file)\n> 00 A4 04 00 01 AA\n"), "\(result.out)")
        #expect(result.out.contains("recorded to \(file)\n> 00 A4 04 00 01 BB\n"), "\(result.out)")
        let transcript = try Transcript(contentsOfFile: file)
        #expect(transcript.header.reader == desk.names[0])
        #expect(transcript.header.atr == [0x3B, 0x80, 0x80, 0x01, 0x01])
        let text = transcript.serialized()
        #expect(text.contains("> 00 A4 04 00 01 AA\n"), "\(text)")
        #expect(text.contains("< 00 A4 04 00 01 AA 90 00\n"), "\(text)")
        #expect(text.contains("event card-reset atr=\"3B 80 80 01 01\"\n"), "\(text)")
        #expect(!text.contains("01 01 90 00") && !text.contains("BB"), "\(text)")
    }

    @Test func recordRefusesASecondRecordingAndAnOffWithoutOne() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        let directory = try scratchDirectory("shell-record-twice")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let twice = try await runTool(["shell"], on: desk, input: ["record \(directory)/a.trn", "record \(directory)/b.trn"])
        #expect(twice.status == 1)
        #expect(twice.err == "secbridge: error: <stdin>:2: already recording to '\(directory)/a.trn'; `record off` first\n")
        let off = try await runTool(["shell"], on: desk, input: ["record off"])
        #expect(off.err == "secbridge: error: <stdin>:1: 'record off', but nothing is being recorded\n")
    }

    @Test func helpListsTheStatements() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        let result = try await runTool(["shell"], on: desk, input: ["help"])
        #expect(result.status == 0, "\(result.err)")
        #expect(result.out == ScriptInterpreter.languageHelp + "\n")
        #expect(result.out.contains("  record FILE      record every exchange to a new transcript FILE; `record off` stops\n"))
    }

    /// Lines are run as they are read: the APDU before a malformed line has gone out when the
    /// error stops the script.
    @Test func runSendsEachLineBeforeReadingTheNext() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        try desk.control(.placeCard(uid: [0x04, 0xA1, 0xB2, 0xC3], applet: .echo, id: "card"))
        let directory = try scratchDirectory("run-streaming")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let script = directory + "/script.txt"
        try "00 A4 04 00 01 AA\r\nnot hex\r\n00 A4 04 00 01 BB\r\n".write(toFile: script, atomically: true, encoding: .utf8)
        let result = try await runTool(["run", script], on: desk)
        #expect(result.status == 1)
        #expect(result.out.hasPrefix("> 00 A4 04 00 01 AA\n< 00 A4 04 00 01 AA 90 00\n"), "\(result.out)")
        #expect(result.err.hasPrefix("secbridge: error: \(script):2: 'not hex' is not an APDU in hex ('n' at character 0 is not a hex digit"), "\(result.err)")
        #expect(try desk.control(.cardLog(peer: "card"))["all"] == "00 A4 04 00 01 AA")
    }

    /// `run --json` with the shell's statements: one object each.
    @Test func runJSONReportsTheShellStatements() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        try desk.control(.placeCard(uid: [0x04, 0xA1, 0xB2, 0xC3], applet: .echo, id: "card"))
        let result = try await runTool(["run", "--json", "-"], on: desk, input: ["reader", "control FF 00 48 00 00"])
        #expect(result.status == 0, "\(result.err)")
        #expect(result.out.contains(#""reader": "\#(desk.names[0])",\#n    "atr": "3B80800101""#), "\(result.out)")
        #expect(result.out.contains(#""control": "0x42000001",\#n    "command": "FF00480000",\#n    "response": "41435231323255323037",\#n    "firmware": "ACR122U207""#), "\(result.out)")
    }
}

extension ShellCommandTests {
    /// A malformed line after an exchange: `run --json` prints the exchange and the error in one
    /// array (once), and the error goes to standard error too.
    @Test func runJSONShowsTheExchangesBeforeAMalformedLine() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        try desk.control(.placeCard(uid: [0x04, 0xA1, 0xB2, 0xC3], applet: .echo, id: "card"))
        let result = try await runTool(["run", "--json", "-"], on: desk, input: ["00 A4 04 00 01 AA", "nonsense"])
        #expect(result.status == 1)
        let array = try #require(try JSONSerialization.jsonObject(with: Data(result.out.utf8)) as? [[String: Any]], "\(result.out)")
        #expect(array.count == 2)
        #expect(array.first?["response"] as? String == "00A4040001AA9000")
        let error = try #require(array.last?["error"] as? String)
        #expect(error.hasPrefix("<stdin>:2: 'nonsense' is not an APDU in hex"), "\(error)")
        #expect(result.err == "secbridge: error: \(error)\n")
    }
}

/// The language's parser, line by line from bytes.
@Suite struct ScriptLanguageTests {
    @Test func theShellStatementsParse() throws {
        let script = try APDUScript(
            parsing: "\u{FEFF}control FF 00 48 00 00\nREADER 1\r\nreader\rrecord /tmp/x.trn # comment\nrecord OFF\nhelp\n0x00,0xA4,0x04,0x00,0x00\nquit\n00 A4 04 00 00",
            fileName: "s")
        #expect(script.steps == [
            .control([0xFF, 0x00, 0x48, 0x00, 0x00], line: 1), .reader("1", line: 2), .reader(nil, line: 3),
            .record("/tmp/x.trn", line: 4), .record(nil, line: 5), .help(line: 6), .apdu([0x00, 0xA4, 0x04, 0x00, 0x00], line: 7),
        ])
    }

    @Test(arguments: [
        ("reset now", "s:1: 'reset' takes nothing after it, got 'now'"),
        ("record", "s:1: 'record' needs a transcript file to write, or 'off' to stop recording"),
        ("control", "s:1: 'control' needs the escape command in hex, e.g. control FF 00 48 00 00"),
        ("00 A4 0", "s:1: '00 A4 0' is not an APDU in hex (the group of hex digits starting at character 6 has 1 digits; each byte needs two digits (write 0A, not A)); write one APDU per line, or reset, exit, or a # comment"),
        ("cafe", "s:1: 'cafe' has 2 bytes; an APDU has at least 4 (CLA INS P1 P2)"),
        ("00 A4 04 00 05 AA", "s:1: malformed APDU 00 A4 04 00 05 AA: Lc is 5 but only 1 data bytes follow"),
    ])
    func malformedLinesAreRefusedWithTheirLine(_ line: String, _ message: String) {
        #expect(throws: CLIError.failure(message)) { _ = try APDUScript(parsing: line, fileName: "s") }
    }
}

/// The shell's history: where it is kept, what goes in, and libedit's file round trip.
@Suite(.serialized) struct ShellHistoryTests {
    @Test func theHistoryFileFollowsTheXDGStateDirectory() {
        let both = ["XDG_STATE_HOME": "/state", "HOME": "/home/u"]
        #expect(ShellHistory.defaultPath { both[$0] } == "/state/secbridge/history")
        // Relative or empty XDG_STATE_HOME: ignored (docs/shell.md §2).
        let relative = ["XDG_STATE_HOME": "state", "HOME": "/home/u"]
        #expect(ShellHistory.defaultPath { relative[$0] } == "/home/u/.local/state/secbridge/history")
        let empty = ["XDG_STATE_HOME": "", "HOME": "/home/u"]
        #expect(ShellHistory.defaultPath { empty[$0] } == "/home/u/.local/state/secbridge/history")
        #expect(ShellHistory.defaultPath { _ in nil } == nil)
        #expect(ShellHistory.directories(of: "/home/u/.local/state/secbridge/history") == [
            "/home", "/home/u", "/home/u/.local", "/home/u/.local/state", "/home/u/.local/state/secbridge",
        ])
    }

    @Test func blankLinesAndRepeatsStayOutOfTheHistory() {
        #expect(ShellHistory.keeps("00 A4 04 00 00", after: nil))
        #expect(!ShellHistory.keeps(" \t", after: nil))
        #expect(!ShellHistory.keeps("reset", after: "reset"))
        #expect(ShellHistory.keeps("reset", after: "00 A4 04 00 00"))
    }

    /// The history goes to the file through libedit and comes back in a new session.
    @Test func theHistoryFileRoundTripsThroughLibedit() throws {
        let directory = try scratchDirectory("shell-history")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/state/secbridge/history"
        let console = CapturingConsole()
        let editor = LineEditor(console: console, historyPath: path)
        try #require(editor.isEditing, "libedit.so.2 could not be opened: \(console.standardError)")
        for line in ["00 A4 04 00 00", "", "00 A4 04 00 00", "reset", "reader 1"] { editor.remember(line) }
        #expect(editor.historyEntries == ["00 A4 04 00 00", "reset", "reader 1"])
        #expect(FileManager.default.fileExists(atPath: path))
        let next = LineEditor(console: console, historyPath: path)
        #expect(next.historyEntries == ["00 A4 04 00 00", "reset", "reader 1"])
        // The last line of the file counts as the previous one: no repeat across sessions.
        next.remember("reader 1")
        #expect(next.historyEntries.count == 3)
        #expect(console.standardError == "")
    }
}

/// The interpreter itself, on the in-process client: what a long interactive session meets.
@Suite struct ScriptInterpreterTests {
    static let select: [UInt8] = [0x00, 0xA4, 0x04, 0x00, 0x01, 0xAA]

    /// A card taken away mid-session: the failing APDU says so, the session goes back to the reader
    /// alone, and the next APDU connects to the card placed since.
    @Test func aCardTakenAwayAndPlacedAgainIsFoundByTheNextAPDU() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        try desk.control(.placeCard(uid: [0x04, 0xA1, 0xB2, 0xC3], applet: .echo, id: "first"))
        let executor = BlockingExecutor(name: "interpreter-test")
        defer { executor.shutdown() }
        try await executor.run {
            let console = CapturingConsole()
            let interpreter = try interactiveShellInterpreter(client: desk.client, console: console)
            defer { interpreter.close() }
            #expect(interpreter.readerDescription == "reader: \(desk.names[0]), card ATR 3B 80 80 01 01")
            #expect(try interpreter.execute(.apdu(Self.select, line: 1)))
            try desk.control(.remove(peer: "first"))
            do throws(CLIError) {
                _ = try interpreter.execute(.apdu(Self.select, line: 2))
                Issue.record("an APDU to a card that left succeeded")
            } catch {
                #expect(error.message.hasPrefix("shell:2: 00 A4 04 00 01 AA: the card was removed during the exchange"), "\(error.message)")
            }
            #expect(interpreter.readerDescription.hasSuffix(", no card (a DIRECT connection: pseudo-APDUs FF … and control only)"))
            try desk.control(.placeCard(uid: [0x04, 0xA1, 0xB2, 0xC3], applet: .echo, id: "second"))
            #expect(try interpreter.execute(.apdu(Self.select, line: 3)))
            #expect(try desk.control(.cardLog(peer: "second"))["all"] == "00 A4 04 00 01 AA")
        }
    }
}
