import Foundation
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
    }
}
