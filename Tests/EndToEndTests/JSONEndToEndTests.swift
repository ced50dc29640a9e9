import Foundation
import PCSCSandbox
import Testing

/// `demo --json` and `simulate --json` as subprocesses, in process (no pcscd).
@Suite struct JSONEndToEndTests {
    static func object(_ text: some StringProtocol) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], "\(text)")
    }

    /// One JSON object on standard output; the commentary on standard error.
    @Test func demoJSONHasTheSessionsStatesEventsAndTheRead() async throws {
        try requireBuiltBinaries()
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("secbridge-demo-\(UUID().uuidString).trn")
        defer { try? FileManager.default.removeItem(at: file) }
        let result = try await runBinary(
            ["demo", "--in-process", "--json", "--time-scale", "0.01", "--record", file.path], environment: ProcessInfo.processInfo.environment,
            timeout: .seconds(60))
        #expect(result.status == 0, "\(result.err)")
        let json = try Self.object(result.out)
        #expect(json["escapeControlCode"] as? String == "0x42000001")
        #expect((json["credential"] as? [String: Any])?["id"] as? String == "example-uri-tag")
        #expect(json["states"] as? [String] == [
            "startSession → management", "enterWiredMode(using:) → wired(example-uri-tag)",
            "performTransaction(using:) → cardEmulation(example-uri-tag)", "endCardEmulation() → management", "invalidate() → invalid",
        ])
        let events = try #require(json["events"] as? [String])
        #expect(Array(events.dropFirst().prefix(6)) == InProcessDemoTests.uriRead)
        #expect(events.last == "sessionInvalidated(invalidate() was called)")
        // docs/iso14443-t4t-ndef.md §4: the full URI read, as the terminal on reader B saw it.
        let exchanges = try #require(json["terminalExchanges"] as? [[String: String]])
        #expect(exchanges.count == 6)
        #expect(exchanges.first == ["command": "00A4040007D276000085010100", "response": "9000"])
        #expect(exchanges.last == ["command": "00B0000210", "response": "D1010C55046578616D706C652E636F6D9000"])
        let ndef = try #require((json["ndef"] as? [[String: Any]])?.first)
        #expect(ndef["uri"] as? String == "https://example.com")
        #expect(ndef["type"] as? String == "55")
        let billing = try #require(json["billableEvents"] as? [[String: Any]])
        #expect(billing.count == 1)
        #expect(billing.first?["sequence"] as? Int == 1)
        #expect(billing.first?["credential"] as? String == "example-uri-tag")
        #expect(json["transcript"] as? String == file.path)
        #expect(result.err.contains("secbridge demo: a credential session on a simulated ACR122U, read by a second one\n"))
    }

    /// JSON lines: started (no pcscd: socket and driver null), the escape-path exchange, the
    /// control reply, the card exchange, stopped.
    @Test func simulateInProcessJSONLines() async throws {
        try requireBuiltBinaries()
        let result = try await simulateInProcessThroughAPipe(
            ["--json", "--readers", "1", "--time-scale", "0.01", "--timeout", "60"],
            first: "send a FF 00 48 00 00\na place-card uid=04A1B2C3 applet=t4t-ndef\na frobnicate\n", firstDone: "frobnicate",
            then: "send a 00 A4 04 00 07 D2 76 00 00 85 01 01 00\n", thenDone: "\"event\":\"exchange\"")
        #expect(result.status == 0)
        let output = result.out
        let lines = try output.split(separator: "\n").map { try Self.object($0) }
        #expect(lines.map { $0["event"] as? String ?? "?" } == ["started", "exchange", "reply", "reply", "exchange", "stopped"], "\(output)")
        guard lines.count == 6 else { return }
        #expect(lines[0]["socket"] is NSNull)
        #expect(lines[0]["driver"] is NSNull)
        let reader = try #require((lines[0]["readers"] as? [[String: Any]])?.first)
        #expect(reader["reader"] as? String == "a")
        let controlSocket = reader["controlSocket"] as? String ?? ""
        #expect(controlSocket.hasSuffix("-inprocess/a/control.sock"), "\(controlSocket)")
        // ACR122U API v2.04: the firmware string, 10 ASCII bytes, no status word.
        #expect(lines[1]["path"] as? String == "control")
        #expect(lines[1]["command"] as? String == "FF00480000")
        #expect(lines[1]["response"] as? String == "41435231323255323037")
        #expect(lines[2]["ok"] as? Bool == true)
        #expect((lines[2]["fields"] as? [String: String])?["peer"] == "card-1")
        #expect(lines[3]["ok"] as? Bool == false)
        #expect(lines[3]["code"] as? String == "unknown-verb", "\(lines[3])")
        #expect(lines[4]["path"] as? String == "card")
        #expect(lines[4]["response"] as? String == "9000")
    }
}
