import Foundation
import PCSCSandbox
import Testing

/// The demo and the simulator without pcscd: the same driver entry points, driven in process.
@Suite struct InProcessDemoTests {
    /// docs/iso14443-t4t-ndef.md §4, the full URI read, as the emulated tag answers it.
    static let uriRead = [
        "apduExchanged(00 A4 04 00 07 D2 76 00 00 85 01 01 00 → 90 00)",
        "apduExchanged(00 A4 00 0C 02 E1 03 → 90 00)",
        "apduExchanged(00 B0 00 00 0F → 00 0F 20 00 7F 00 7F 04 06 E1 04 04 00 00 00 90 00)",
        "apduExchanged(00 A4 00 0C 02 E1 04 → 90 00)",
        "apduExchanged(00 B0 00 00 02 → 00 10 90 00)",
        "apduExchanged(00 B0 00 02 10 → D1 01 0C 55 04 65 78 61 6D 70 6C 65 2E 63 6F 6D 90 00)",
    ]

    @Test func demoRunsInProcessWithTheDocumentedSequence() async throws {
        try requireBuiltBinaries()
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("secbridge-demo-\(UUID().uuidString).trn")
        defer { try? FileManager.default.removeItem(at: file) }
        let result = try await runBinary(
            ["demo", "--in-process", "--time-scale", "0.01", "--record", file.path], environment: ProcessInfo.processInfo.environment,
            timeout: .seconds(60))
        #expect(result.status == 0, "\(result.err)")
        #expect(result.out.contains("readers: in this process (no pcscd; the same driver entry points, pcscd's rules)\n"))
        #expect(result.out.contains("escape control code: 0x42000001 (CM_IOCTL_GET_FEATURE_REQUEST, tag 0x13)\n"))
        #expect(result.out.contains(
            "  states: startSession → management; enterWiredMode(using:) → wired(example-uri-tag); performTransaction(using:) → cardEmulation(example-uri-tag); endCardEmulation() → management; invalidate() → invalid\n"))
        let events = try #require(result.out.split(separator: "\n").first { $0.hasPrefix("  events: ") })
        let list = events.dropFirst("  events: ".count).components(separatedBy: "; ")
        #expect(list.first == "fieldStateChanged(fieldPresent: TgInitAsTarget returned mode 08, initiator command E0 80)")
        #expect(Array(list.dropFirst().prefix(6)) == Self.uriRead)
        #expect(list.dropFirst(7).first == "fieldStateChanged(fieldAbsent: TgGetData: PN532 status 29 (the initiator released the target))")
        #expect(list.last == "sessionInvalidated(invalidate() was called)")
        #expect(result.out.contains("NDEF record: URI https://example.com\n"))
        #expect(result.out.contains("billable event 1: credential example-uri-tag\n"))
        // The transcript names both readers and holds both roles' APDUs.
        let text = try String(contentsOf: file, encoding: .utf8)
        #expect(text.contains("# origin: simulated\n"))
        #expect(text.contains("@a tgt < 00 A4 04 00 07 D2 76 00 00 85 01 01 00\n"))
        #expect(text.contains("@b ini < D1 01 0C 55 04 65 78 61 6D 70 6C 65 2E 63 6F 6D 90 00\n"))
        // The frame of docs/cases.md P10: TgInitAsTarget with Lc 27 through the escape path.
        #expect(text.contains("@a ctl 0x42000001 > FF 00 00 00 27 D4 8C 05 04 00 00 B0 0B 20"))
    }

    @Test func simulateInProcessAnswersSendAndControlRequests() async throws {
        try requireBuiltBinaries()
        // Firmware without a card (escape path), then a card placed and SELECTed.
        let result = try await simulateInProcessThroughAPipe(
            ["--readers", "1", "--time-scale", "0.01", "--timeout", "60"],
            first: "send a FF 00 48 00 00\na place-card uid=04A1B2C3 applet=t4t-ndef\n", firstDone: "ok peer=card-1",
            then: "send a 00 A4 04 00 07 D2 76 00 00 85 01 01 00\n", thenDone: "< 90 00")
        #expect(result.status == 0)
        // ACR122U API v2.04: the firmware string, 10 ASCII bytes, no status word.
        #expect(result.out.contains("ctl < 41 43 52 31 32 32 55 32 30 37\n"))
        #expect(result.out.contains("ok peer=card-1\n"))
        #expect(result.out.contains("> 00 A4 04 00 07 D2 76 00 00 85 01 01 00\n< 90 00\n"))
    }
}
