import Foundation
import PCSCSandbox
import Testing
import Transcript

/// Every transcript under Fixtures/vicc (recorded against vicc's iso7816 card).
func viccFixtures() throws -> [URL] {
    guard let root = HarnessPaths.repositoryRoot else {
        throw HarnessError(code: .missingDependency, reason: "the repository root (with Package.swift) was not found")
    }
    let directory = root.appendingPathComponent("Fixtures/vicc")
    return try FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: nil)
        .filter { $0.pathExtension == "trn" }
        .sorted { $0.path < $1.path }
}

extension SharedReader {
    /// The `secbridge` commands against the shared pcscd with vpcd and vicc.
    @Suite struct CLIEndToEndTests {
        @Test func readersJSONListsTheCard() async throws {
            let environment = try await sharedEnvironment()
            let result = try await runCLI(["readers", "--json"])
            #expect(result.status == 0, "\(result.err)")
            #expect(result.out.contains("""
                    "name": "\(environment.vpcdReaderName)",
                    "state": [
                      "present"
                    ],
                    "atr": "3B951381018073FF01000B",
                    "protocol": "T=1"
                """))
        }

        @Test func sendSelectShowsTheStatusWordMeaning() async throws {
            let environment = try await sharedEnvironment()
            let result = try await runCLI(["send", "--reader", environment.vpcdReaderName, "00", "A4", "04", "00", "07", "D2", "76", "00", "00", "85", "01", "01", "00"])
            #expect(result.status == 0, "\(result.err)")
            #expect(result.out == """
                > 00 A4 04 00 07 D2 76 00 00 85 01 01 00
                < 6A 82
                  SW 6A 82: file or application not found

                """)
        }

        @Test func sendToAnUnknownReaderListsTheReaders() async throws {
            let environment = try await sharedEnvironment()
            let result = try await runCLI(["send", "--reader", "no such reader", "00A4000C023F00"])
            #expect(result.status == 1)
            #expect(result.err.hasPrefix("secbridge: error: no reader name contains 'no such reader'; the readers are:\n"))
            #expect(result.err.contains(environment.vpcdReaderName))
        }

        @Test func sendToAnEmptySlotSaysNoCard() async throws {
            _ = try await sharedEnvironment()
            // vpcd's slot 1 has no vicc behind it.
            let result = try await runCLI(["send", "--reader", "Virtual PCD 00 01", "00A4000C023F00"])
            #expect(result.status == 1)
            #expect(result.err.hasPrefix("secbridge: error: no card in 'Virtual PCD 00 01': SCardConnect failed: SCARD_E_NO_SMARTCARD (0x8010000C)"))
        }

        @Test(arguments: try viccFixtures())
        func replayFixtureAgainstVicc(_ fixture: URL) async throws {
            _ = try await sharedEnvironment()
            let result = try await runCLI(["replay", fixture.path])
            #expect(result.status == 0, "\(result.err)")
            #expect(result.out.contains("every answer matches"))
        }

        @Test func recordThenReplayRoundTrip() async throws {
            let environment = try await sharedEnvironment()
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("secbridge-e2e-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            let script = directory.appendingPathComponent("script.txt")
            try "# select MF, then an absent application\n00 A4 00 0C 02 3F 00\nreset\n00A4040007D276000085010100\n"
                .write(to: script, atomically: true, encoding: .utf8)
            let recording = directory.appendingPathComponent("session.trn")
            let run = try await runCLI(["run", "--record", recording.path, script.path])
            #expect(run.status == 0, "\(run.err)")
            let transcript = try Transcript(contentsOfFile: recording.path)
            #expect(transcript.header.reader == environment.vpcdReaderName)
            #expect(transcript.header.atr == viccATR)
            #expect(transcript.header.transmissionProtocol == .t1)
            let text = transcript.serialized()
            #expect(text.contains("> 00 A4 00 0C 02 3F 00\n"))
            #expect(text.contains("< 90 00\n"))
            #expect(text.contains("event card-reset atr=\"3B 95 13 81 01 80 73 FF 01 00 0B\"\n"))
            #expect(text.contains("< 6A 82\n"))
            let replay = try await runCLI(["replay", recording.path])
            #expect(replay.status == 0, "\(replay.err)")
            #expect(replay.out.contains("replayed 2 exchanges"))
        }

        @Test func replayStopsAtTheFirstDifference() async throws {
            _ = try await sharedEnvironment()
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("secbridge-diverge-\(UUID().uuidString).trn")
            defer { try? FileManager.default.removeItem(at: file) }
            try """
                # secbridge-transcript: 1
                # protocol: T=1
                +0ms > 00 A4 00 0C 02 3F 00
                +40ms < 90 00
                +41ms > 00 B0 00 00 00
                +80ms < 90 00

                """.write(to: file, atomically: true, encoding: .utf8)
            let result = try await runCLI(["replay", file.path])
            #expect(result.status == 1)
            #expect(result.err == """
                secbridge: error: \(file.path):6: the device answered differently than recorded (first difference at byte 0)
                  expected: < 90 00
                  actual:   < 69 86

                """)
        }

        @Test func monitorRecordsEventsToATranscript() async throws {
            let environment = try await sharedEnvironment()
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("secbridge-monitor-\(UUID().uuidString).trn")
            defer { try? FileManager.default.removeItem(at: file) }
            let result = try await runCLI(["monitor", "--json", "--count", "1", "--timeout", "10", "--record", file.path])
            #expect(result.status == 0, "\(result.err)")
            #expect(result.out.hasPrefix(#"{"event":"reader-attached","reader":""#))
            let transcript = try Transcript(contentsOfFile: file.path)
            #expect(transcript.header.tool == "secbridge 0.1.0 monitor")
            let text = transcript.serialized()
            #expect(text.contains(" event reader-added name=\""))
            #expect(environment.readerNames.contains { text.contains("name=\"\($0)\"") })
        }

        @Test func replayRefusesARedactedVerify() async throws {
            _ = try await sharedEnvironment()
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("secbridge-verify-\(UUID().uuidString).trn")
            defer { try? FileManager.default.removeItem(at: file) }
            try """
                # secbridge-transcript: 1
                +0ms > 00 20 00 81 06 [REDACTED 6]
                +40ms < 90 00

                """.write(to: file, atomically: true, encoding: .utf8)
            let result = try await runCLI(["replay", file.path])
            #expect(result.status == 1)
            #expect(result.err.hasPrefix("secbridge: error: \(file.path):2: refusing a live replay: this command was redacted"))
        }
    }
}
