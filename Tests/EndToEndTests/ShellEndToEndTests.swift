import Foundation
import PCSC
import PCSCCore
import PCSCSandbox
import Testing
import Transcript

// `secbridge shell` driven through a pipe: the `secbridge` binary as a subprocess on the shared
// private pcscd, with the simulated ACR122U's driver (docs/test-infrastructure.md).

extension SharedReader {
    @Suite struct ShellEndToEndTests {
        /// The simulated ACR122U's firmware string (docs/acr122-pn532.md §2).
        static let firmwareLines = "ctl 0x42000001 > FF 00 48 00 00\nctl < 41 43 52 31 32 32 55 32 30 37\n  firmware: ACR122U207\n"

        /// Reader A with the echo applet's card ("shell-card") in its field, once pcscd sees it.
        static func readerWithEchoCard() async throws -> (TestEnvironment, String) {
            let environment = try await resetSimulatedReaders()
            let reader = environment.simulatedReaderA
            try SimulatedReaders.controlA.send("place-card uid=04A1B2C3 applet=echo id=shell-card")
            _ = try await waitForCard(in: reader, present: true)
            return (environment, reader)
        }

        @Test func anEscapeCommandWithNoCardGivesTheFirmwareString() async throws {
            let environment = try await resetSimulatedReaders()
            let reader = environment.simulatedReaderA
            let result = try await runBinary(
                ["shell", "--reader", reader], environment: environment.environmentForSubprocesses,
                input: "FF 00 48 00 00\ncontrol FF 00 48 00 00\n")
            #expect(result.status == 0, "\(result.err)")
            #expect(result.out == Self.firmwareLines + Self.firmwareLines, "\(result.out)")
            #expect(result.err == "")
        }

        /// An APDU to a simulated card and a `reset`: the card's real answers, the same as `run -`.
        @Test func anAPDUAndAResetFromAPipeMatchRun() async throws {
            let (environment, reader) = try await Self.readerWithEchoCard()
            defer { _ = try? SimulatedReaders.controlA.send("remove peer=shell-card") }
            let script = "# a select to the echo applet, a reset, the firmware\n00 A4 04 00 01 AA\nreset\nFF 00 48 00 00\n"
            let shell = try await runBinary(["shell", "--reader", reader], environment: environment.environmentForSubprocesses, input: script)
            #expect(shell.status == 0, "\(shell.err)")
            #expect(shell.out.hasPrefix("> 00 A4 04 00 01 AA\n< 00 A4 04 00 01 AA 90 00\n  SW 90 00: "), "\(shell.out)")
            // docs/acr122-pn532.md §3: an ISO 14443-4 card without historical bytes, 3B 80 80 01 01;
            // with a card, FF 00 48 00 00 goes through SCardTransmit.
            #expect(shell.out.hasSuffix("reset: ATR 3B 80 80 01 01\n> FF 00 48 00 00\n< 41 43 52 31 32 32 55 32 30 37\n  firmware: ACR122U207\n"), "\(shell.out)")
            let run = try await runBinary(["run", "--reader", reader, "-"], environment: environment.environmentForSubprocesses, input: script)
            #expect(run.status == 0, "\(run.err)")
            #expect(run.out == shell.out)
            #expect(try SimulatedReaders.controlA.send("card-log peer=shell-card")["all"] == "00 A4 04 00 01 AA; 00 A4 04 00 01 AA")
        }

        @Test func recordWritesATranscriptThatParses() async throws {
            let (environment, reader) = try await Self.readerWithEchoCard()
            defer { _ = try? SimulatedReaders.controlA.send("remove peer=shell-card") }
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("secbridge-shell-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            let file = directory.appendingPathComponent("shell.trn").path
            let result = try await runBinary(
                ["shell", "--reader", reader], environment: environment.environmentForSubprocesses,
                input: "record \(file)\n00 A4 04 00 01 AA\nreset\ncontrol FF 00 48 00 00\nrecord off\n")
            #expect(result.status == 0, "\(result.err)")
            #expect(result.out.hasPrefix("recording to \(file)\n"), "\(result.out)")
            #expect(result.out.hasSuffix("recorded to \(file)\n"), "\(result.out)")
            let transcript = try Transcript(contentsOfFile: file)
            #expect(transcript.header.reader == reader)
            #expect(transcript.header.atr == [0x3B, 0x80, 0x80, 0x01, 0x01])
            #expect(transcript.header.tool?.hasSuffix(" shell") == true, "\(String(describing: transcript.header.tool))")
            let text = transcript.serialized()
            #expect(text.contains("> 00 A4 04 00 01 AA\n"), "\(text)")
            #expect(text.contains("< 00 A4 04 00 01 AA 90 00\n"), "\(text)")
            #expect(text.contains("event card-reset atr=\"3B 80 80 01 01\"\n"), "\(text)")
            #expect(text.contains("41 43 52 31 32 32 55 32 30 37"), "\(text)")
        }

        /// `run -` fed by a pipe that pauses after its first line: another program (a pcsc-lite
        /// client in this process) connects and begins its transaction during the pause, within
        /// the run's 200 ms hold and pcsc-lite's 100 ms retry, instead of waiting for the whole
        /// pause; the run then sends its last line, and its recording marks the pause.
        @Test func anotherProgramReachesTheCardWhileAPipedRunPauses() async throws {
            let (environment, reader) = try await Self.readerWithEchoCard()
            defer { _ = try? SimulatedReaders.controlA.send("remove peer=shell-card") }
            let directory = try faultTestDirectory("paused-run")
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let file = directory + "/paused.trn"
            let run = try BinaryProcess(
                ["run", "--reader", reader, "--record", file, "-"], environment: environment.environmentForSubprocesses, input: true)
            defer { run.stop() }
            let input = run.input!.fileHandleForWriting
            try input.write(contentsOf: Data("00 A4 04 00 01 AA\n".utf8))
            _ = try await run.wait(for: "< 00 A4 04 00 01 AA 90 00")
            // The run waits for its next line now. Should the other program not get the card, the
            // input ends after 5 s (the run then ends and lets go), and the wait below says so.
            let ender = Task {
                try await Task.sleep(for: .seconds(5))
                try? input.close()
                // Should the run hold the card on after its input ended, its death lets the other
                // program go (pcscd ends a dead client's transaction), and the checks below fail,
                // instead of the other program's SCardBeginTransaction waiting for good.
                try await Task.sleep(for: .seconds(15))
                if run.process.isRunning { kill(run.process.processIdentifier, SIGKILL) }
            }
            let other = BlockingExecutor(name: "other-program")
            defer { other.shutdown() }
            let waited = try await other.run { () throws -> Duration in
                let context = try PCSCLiteClient().establishContext()
                defer { try? context.release() }
                let start = ContinuousClock.now
                // pcscd lets SCardConnect wait for a transaction held on the reader, too.
                let handle = try context.connect(to: reader, share: .shared, protocols: .any)
                try handle.beginTransaction()
                let waited = ContinuousClock.now - start
                _ = try handle.transmit([0x00, 0xA4, 0x04, 0x00, 0x01, 0xCC])
                try handle.endTransaction(.leave)
                try handle.disconnect(.leave)
                return waited
            }
            ender.cancel()
            #expect(waited < .seconds(2), "the other program waited \(waited) for the card while the run's input paused")
            // (When the 5 s ended the input, the write fails and the checks below say what is missing.)
            try? input.write(contentsOf: Data("00 B0 00 00 01 BB\n".utf8))
            try? input.close()
            let status = try await other.run { () throws -> Int32 in
                try run.waitForExit(after: "its input ended")
                return run.process.terminationStatus
            }
            #expect(status == 0, "\(run.finalStandardError())")
            #expect(run.finalOutput().contains("< 00 B0 00 00 01 BB 90 00"), "\(run.output)")
            #expect(run.finalStandardError().hasPrefix("secbridge: note: <stdin>:2: the PC/SC transaction was released to wait for input (no line within 0.2 s after line 1) and begun again for this line"))
            #expect(try SimulatedReaders.controlA.send("card-log peer=shell-card")["all"] == "00 A4 04 00 01 AA; 00 A4 04 00 01 CC; 00 B0 00 00 01 BB")
            let records = try Transcript(contentsOfFile: file).serialized().split(separator: "\n").compactMap { line -> String? in
                guard line.hasPrefix("+"), let space = line.firstIndex(of: " ") else { return nil }
                return String(line[line.index(after: space)...])
            }
            #expect(records == [
                "> 00 A4 04 00 01 AA", "< 00 A4 04 00 01 AA 90 00",
                "event transaction-ended reason=\"waiting for input\"", "event transaction-began",
                "> 00 B0 00 00 01 BB", "< 00 B0 00 00 01 BB 90 00",
            ])
        }
    }
}
