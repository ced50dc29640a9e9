import Foundation
import PCSCCore
import SecbridgeCLI
import SecbridgeTesting
import SecbridgeTools
import Testing

/// Runs the whole tool in this process against `desk`'s simulated readers (the in-process PC/SC
/// client, no pcscd), on a thread of its own, and captures its output.
/// The 60 s card-emulation window is real unless `timeScale` shrinks it (a test that needs the
/// window to end passes e.g. 0.02: 1.2 s); the other session rules always keep real time.
func runTool(_ arguments: [String], on desk: SimulatedDesk, input: [String] = [], timeScale: Double = 1) async throws
    -> (status: Int32, out: String, err: String)
{
    let executor = BlockingExecutor(name: "cli-test")
    defer { executor.shutdown() }
    let client = desk.client
    let scale = timeScale
    return try await executor.run {
        let console = CapturingConsole(input: input)
        let status = SecbridgeTools.main(arguments: arguments, console: console, client: client, timeScale: scale)
        return (status, console.standardOutput, console.standardError)
    }
}

/// The tool's commands against simulated ACR122U readers in process: each test has a desk of its
/// own, so these run in parallel and need no pcscd.
@Suite struct InProcessCommandTests {
    @Test func readersListsTheSimulatedReaderAndThePlacedCardsATR() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        try desk.control(.placeCard(uid: [0x04, 0xA1, 0xB2, 0xC3], applet: .t4tNDEF, id: "card"))
        let result = try await runTool(["readers", "--json"], on: desk)
        #expect(result.status == 0, "\(result.err)")
        #expect(result.out.contains("\"name\": \"ACS ACR122U PICC Interface 00 00\""), "\(result.out)")
        // docs/acr122-pn532.md §3: an ISO 14443-4 card without historical bytes, 3B 80 80 01 01.
        #expect(result.out.contains("\"atr\": \"3B80800101\""), "\(result.out)")
    }

    @Test func sendSelectsTheNDEFApplicationOfAPlacedCard() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        try desk.control(.placeCard(uid: [0x04, 0xA1, 0xB2, 0xC3], applet: .t4tNDEF, id: "card"))
        // The NDEF Tag Application SELECT (docs/iso14443-t4t-ndef.md §4).
        let result = try await runTool(["send", "--reader", "0", "00A4040007D276000085010100"], on: desk)
        #expect(result.status == 0, "\(result.err)")
        #expect(result.out.contains("> 00 A4 04 00 07 D2 76 00 00 85 01 01 00\n"), "\(result.out)")
        #expect(result.out.contains("< 90 00\n"), "\(result.out)")
    }

    @Test func sendJSONGivesTheFirmwareStringWholeWithoutASW() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        try desk.control(.placeCard(uid: [0x04, 0xA1, 0xB2, 0xC3], applet: .t4tNDEF, id: "card"))
        // FF 00 48 00 00 answers "ACR122U207" alone (ACR122U API v2.04 §6.1): its last bytes 30 37
        // are "07", not a status word.
        let json = try await runTool(["send", "--reader", "0", "--json", "FF00480000"], on: desk)
        #expect(json.status == 0, "\(json.err)")
        #expect(json.out.contains(#""response": "41435231323255323037",\#n      "data": "41435231323255323037",\#n      "firmware": "ACR122U207","#), "\(json.out)")
        #expect(!json.out.contains("\"sw\""), "\(json.out)")
        let text = try await runTool(["send", "--reader", "0", "FF00480000"], on: desk)
        #expect(text.out.hasSuffix("< 41 43 52 31 32 32 55 32 30 37\n  firmware \"ACR122U207\"\n"), "\(text.out)")
        // Another pseudo-APDU keeps its status word: FF CA 00 00 00 gives the UID and 90 00.
        let uid = try await runTool(["send", "--reader", "0", "--json", "FFCA000000"], on: desk)
        #expect(uid.out.contains(#""data": "04A1B2C3",\#n      "sw": "9000","#), "\(uid.out)")
    }

    @Test func runJSONGivesTheFirmwareStringWithoutASW() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        try desk.control(.placeCard(uid: [0x04, 0xA1, 0xB2, 0xC3], applet: .t4tNDEF, id: "card"))
        let dir = try scratchDirectory("run-firmware")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let script = dir + "/firmware.script"
        try "FF 00 48 00 00   // firmware version\n".write(toFile: script, atomically: true, encoding: .utf8)
        let result = try await runTool(["run", "--reader", "0", "--json", script], on: desk)
        #expect(result.status == 0, "\(result.err)")
        #expect(result.out.contains(#""response": "41435231323255323037",\#n    "firmware": "ACR122U207""#), "\(result.out)")
        #expect(!result.out.contains("\"sw\""), "\(result.out)")
    }

    @Test func resetAfterPollingWasLeftOffRestoresEveryDefault() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        let reader = desk.names[0]
        // Automatic polling off: FF 00 51 00 00 (ACR122U API v2.04 §6), as an emulation leaves it.
        let context = try desk.client.establishContext()
        let direct = try context.connect(to: reader, share: .direct, protocols: .undefined)
        #expect(try direct.control(code: 0x4200_0001, [0xFF, 0x00, 0x51, 0x00, 0x00]) == [0x90, 0x00])
        try direct.disconnect(.leave)
        let result = try await runTool(["reset", "--reader", reader], on: desk)
        #expect(result.status == 0, "\(result.out)\(result.err)")
        #expect(result.out.split(separator: "\n").map(String.init) == [
            "reader: \(reader)",
            "connection: DIRECT, escape code 0x42000001, firmware ACR122U207",
            "abort a pending PN532 command (GetFirmwareVersion): FF 00 00 00 02 D4 02 → D5 03 32 01 06 07 90 00  ok",
            "release targets (InRelease 00): FF 00 00 00 03 D4 52 00 → D5 53 00 90 00  ok",
            "RF field on (RFConfiguration 01 01): FF 00 00 00 04 D4 32 01 01 → D5 33 90 00  ok",
            "PICC operating parameter FF (automatic polling on): FF 00 51 FF 00 → 90 FF  ok",
            "LEDs idle (red on, green off): FF 00 40 0D 04 00 00 00 00 → 90 01  ok",
            "MCU timeout one 5 s step: FF 00 41 01 00 → 90 00  ok",
            "reader restored",
        ], "\(result.out)")
        let status = try desk.control(.status)
        #expect(status["picc"] == "FF")
        #expect(status["led"] == "01")
        #expect(status["mcu-timeout"] == "01")
    }

    /// docs/cases.md P09 through the tool: libccid without ifdDriverOptions 0x0001.
    @Test func P09_resetWithEscapeCommandsRefusedNamesTheDriverOption() async throws {
        let desk = try await SimulatedDesk.open(personality: "ccid-escape-disabled")
        defer { desk.close() }
        let result = try await runTool(["reset", "--reader", desk.names[0]], on: desk)
        #expect(result.status == 1)
        #expect(result.err.contains("cannot be reached without a card: the CCID driver refuses escape commands"), "\(result.err)")
        #expect(!result.err.contains("unplug"), "replugging does not enable escape commands")
    }

    @Test func hardwareSelftestMatchesTheDocumentsWithoutPcscd() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        let bundle = FileManager.default.temporaryDirectory.appendingPathComponent("secbridge-selftest-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: bundle) }
        let result = try await runTool(["selftest", "--hardware", "--reader", desk.names[0], "--output", bundle, "--json"], on: desk)
        #expect(result.status == 0, "\(result.err)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(result.out.utf8)) as? [String: Any])
        #expect(json["firmware"] as? String == "ACR122U207")
        #expect(json["driver"] as? String == "libccid")
        #expect(json["escapeCode"] as? String == "0x42000001")
        #expect(json["errors"] as? Int == 0)
        let parts = try #require(json["parts"] as? [[String: Any]])
        let steps = parts.flatMap { ($0["steps"] as? [[String: Any]]) ?? [] }
        let answers = Dictionary(steps.map { ($0["step"] as? String ?? "", $0["answer"] as? String ?? "") }, uniquingKeysWith: { a, _ in a })
        // PC/SC part 10 §2.2 as libccid fills it: FEATURE_GET_TLV_PROPERTIES (12), then
        // FEATURE_CCID_ESC_COMMAND (13) = 0x42000001 (docs/acr122-units.md §1); PN532 UM0701-02
        // §7.3.5: no card, NbTg 00; the MCU ends a TgInitAsTarget without a terminal with 63 00.
        #expect(answers["feature request (CM_IOCTL_GET_FEATURE_REQUEST)"] == "120442330012130442000001")
        #expect(answers["InListPassiveTarget 106 kbit/s Type A"] == "D54B009000")
        #expect(answers["TgInitAsTarget, no terminal: ends at the MCU timeout"] == "6300")
        #expect(try desk.control(.status)["picc"] == "FF", "the selftest puts automatic polling back")
    }

    /// `emulate` in process: the session engine, the PN532 backend and the restore on the way out,
    /// all through the in-process client; the Android Type 4 Tag read of
    /// docs/iso14443-t4t-ndef.md §4 ("Full URI read") answered byte for byte.
    @Test func emulateServesAndroidsReadOfTheWorkedExampleInProcess() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        let reader = desk.names[0]
        try desk.control(.placeTerminal(id: "android"))
        let credential = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Fixtures/credentials/worked-example-tag.json").path
        let result = try await runTool(["emulate", "--credential", credential, "--yes", "--reader", reader], on: desk)
        #expect(result.status == 0, "\(result.err)\n\(result.out)")
        let reply = try desk.control(.terminalResult(peer: "android", waitMilliseconds: 5000))
        #expect(reply["result"] == "passed", "\(reply)")
        #expect(reply["exchanges"] == "6")
        #expect(reply["activations"] == "1")
        // The NDEF file's last read: the URI record https://example.com, then 90 00.
        #expect(result.out.contains("  host     < D1 01 0C 55 04 65 78 61 6D 70 6C 65 2E 63 6F 6D 90 00\n"), "\(result.out)")
        #expect(result.out.contains("event: fieldStateChanged(fieldAbsent: TgGetData: PN532 status 29 (the initiator released the target))\n"))
        // The reader is restored: automatic PICC polling on again (FF 00 51 FF 00).
        #expect(try desk.control(.status)["picc"] == "FF")
    }

    /// `read` over PC/SC in process: UID and ATS from the ACR122U's Get Data pseudo-APDUs (ACR122U
    /// API v2.04 §4), then Android's Type 4 Tag read (docs/iso14443-t4t-ndef.md §4), every exchange
    /// printed.
    @Test func readOverPCSCDecodesAPlacedType4TagInProcess() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        let reader = desk.names[0]
        try desk.control(.placeCard(uid: [0x04, 0xA1, 0xB2, 0xC3, 0xD4, 0xE5, 0xF6], applet: .t4tNDEF, id: "tag"))
        let read = try await runTool(["read", "--reader", reader], on: desk)
        #expect(read.status == 0, "\(read.err)")
        // The placed card's UID, and its whole ATS (the simulator's default 05 78 80 70 02).
        #expect(read.out.hasPrefix("reader: \(reader)\nUID 04 A1 B2 C3 D4 E5 F6  ATS 05 78 80 70 02\n"), "\(read.out)")
        let printed = read.out.split(separator: "\n").map(String.init).filter { $0.hasPrefix("> ") || $0.hasPrefix("< ") }
        #expect(printed == [
            "> FF CA 00 00 00", "< 04 A1 B2 C3 D4 E5 F6 90 00", "> FF CA 01 00 00", "< 05 78 80 70 02 90 00",
            "> 00 A4 04 00 07 D2 76 00 00 85 01 01 00", "< 90 00",
            "> 00 A4 00 0C 02 E1 03", "< 90 00",
            "> 00 B0 00 00 0F", "< 00 0F 20 00 7F 00 7F 04 06 E1 04 04 00 00 00 90 00",
            "> 00 A4 00 0C 02 E1 04", "< 90 00",
            "> 00 B0 00 00 02", "< 00 10 90 00",
            "> 00 B0 00 02 10", "< D1 01 0C 55 04 65 78 61 6D 70 6C 65 2E 63 6F 6D 90 00",
        ], "\(read.out)")
        #expect(read.out.hasSuffix("NDEF record 1: URI https://example.com\n"), "\(read.out)")
    }
}
