import Foundation
import PCSCSandbox
import Testing
import Transcript

// `secbridge demo` as a golden run: the client sequence of docs/session-model.md on a simulated ACR122U
// pair, read by Android's Type 4 Tag sequence (docs/iso14443-t4t-ndef.md §4). The demo starts its own
// private pcscd, so it runs as a subprocess.

extension SharedReader {
    @Suite struct DemoGoldenTests {
        /// The session events of docs/iso14443-t4t-ndef.md §4's full URI read, as the demo prints them.
        static let readEvents: [String] = {
            var events: [String] = ["fieldStateChanged(fieldPresent: TgInitAsTarget returned mode 08, initiator command E0 80)"]
            for exchange in workedExampleAndroidRead {
                events.append("apduExchanged(\(exchange.command) → \(exchange.response))")
            }
            events.append("fieldStateChanged(fieldAbsent: TgGetData: PN532 status 29 (the initiator released the target))")
            return events
        }()

        @Test func demoRunsTheClientSequenceAndRecordsBothReaders() async throws {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("secbridge-e2e5-demo-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            let path = directory.appendingPathComponent("demo.trn").path
            var environment = ProcessInfo.processInfo.environment
            environment["PCSCLITE_CSOCK_NAME"] = nil  // the demo's own pcscd, not the shared one
            let result = try await runBinary(["demo", "--time-scale", "0.01", "--record", path], environment: environment, timeout: .seconds(60))
            #expect(result.status == 0, "\(result.err)\n\(result.out)")
            let lines = result.out.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)

            #expect(lines.contains(
                "  states: startSession → management; enterWiredMode(using:) → wired(example-uri-tag); performTransaction(using:) → cardEmulation(example-uri-tag); endCardEmulation() → management; invalidate() → invalid"),
                "\(result.out)")

            let eventsLine = try #require(lines.first { $0.hasPrefix("  events: ") }, "\(result.out)")
            let events = eventsLine.dropFirst("  events: ".count).components(separatedBy: "; ")
            // The sequence is fixed: reader B's automatic polling stays off from before
            // performTransaction until after invalidate (the demo turns it off and restores it), so
            // nothing but the terminal's read activates A; and the demo ends card emulation only
            // after A has seen the release (status 29), so that fieldAbsent always comes first.
            let expectedHead = Self.readEvents
            #expect(Array(events.prefix(expectedHead.count)) == expectedHead, "\(events)")
            #expect(Array(events.dropFirst(expectedHead.count)) == ["sessionInvalidated(invalidate() was called)"], "\(events)")

            // The terminal's exchanges, as reader B saw them.
            let terminal = lines.filter { $0.hasPrefix("  terminal > ") || $0.hasPrefix("  terminal < ") }
            var expectedTerminal: [String] = []
            for exchange in workedExampleAndroidRead {
                expectedTerminal.append("  terminal > " + exchange.command)
                expectedTerminal.append("  terminal < " + exchange.response)
            }
            #expect(terminal == expectedTerminal)
            #expect(lines.contains("NDEF record: URI https://example.com"))
            #expect(lines.contains("  terminal exchanges: 6, NDEF: URI https://example.com"))
            #expect(lines.contains("escape control code: 0x42000001 (CM_IOCTL_GET_FEATURE_REQUEST, tag 0x13)"))
            #expect(lines.contains("billable event 1: credential example-uri-tag"))
            #expect(lines.contains("transcript: \(path)"))

            // The transcript parses, with both readers' channels and the APDU layer of both roles.
            let transcript = try Transcript(contentsOfFile: path)
            #expect(transcript.header.tool == "secbridge 0.1.0 demo")
            #expect(transcript.header.origin == .simulated)
            #expect(transcript.header.transmissionProtocol == .undefined)
            #expect(transcript.header["credential"] == "example-uri-tag")
            let records = transcript.lines.compactMap(\.record)
            let declared = records.compactMap { record -> String? in
                if case .reader = record.entry { return record.channel } else { return nil }
            }
            #expect(declared == ["a", "b"])
            let targetLines = records.filter { record -> Bool in
                if case .target = record.entry { return true } else { return false }
            }
            let initiatorLines = records.filter { record -> Bool in
                if case .initiator = record.entry { return true } else { return false }
            }
            #expect(Set(targetLines.map { $0.channel ?? "" }) == ["a"])
            #expect(Set(initiatorLines.map { $0.channel ?? "" }) == ["b"])
            let targetCommands = targetLines.compactMap { record -> String? in
                if case .target(.incoming, let bytes) = record.entry { return bytes.description } else { return nil }
            }
            let initiatorCommands = initiatorLines.compactMap { record -> String? in
                if case .initiator(.outgoing, let bytes) = record.entry { return bytes.description } else { return nil }
            }
            let commands: [String] = workedExampleAndroidRead.map { $0.command }
            #expect(targetCommands == commands)
            #expect(initiatorCommands == commands)
            let text = transcript.serialized()
            // TgInitAsTarget with the credential's UID tail 00 B0 0B and SAK 20 (docs/acr122-pn532.md §5 step 4).
            let zeros = [String](repeating: "00", count: 30).joined(separator: " ")
            let initAsTarget = "@a ctl 0x42000001 > FF 00 00 00 27 D4 8C 05 04 00 00 B0 0B 20 \(zeros)\n"
            #expect(text.contains(initAsTarget))
            #expect(text.contains("@a ctl 0x42000001 < D5 8D 08 E0 80 90 00\n"))
            #expect(text.contains("@a ctl 0x42000001 < D5 87 29 90 00\n"), "TgGetData after InRelease: status 29")
            #expect(text.contains("@b ctl 0x42000001 < D5 4B 01 01 00 04 20 04 08 00 B0 0B 05 75 33 92 03 90 00\n"))
            #expect(text.contains(" @a event field-on observed=\"TgInitAsTarget returned mode 08, initiator command E0 80\"\n"))
        }
    }
}
