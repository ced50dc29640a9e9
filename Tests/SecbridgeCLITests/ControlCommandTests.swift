import Foundation
import SecbridgeTesting
import Testing

/// `secbridge control`: escape commands to a reader without a card, in process.
@Suite struct ControlCommandTests {
    /// The firmware string through the escape code the reader announces (libccid with escape
    /// commands enabled: 0x42000001), no card on the reader (docs/acr122-pn532.md §1, §2).
    @Test func theFirmwareStringOfAReaderWithoutACard() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        let result = try await runTool(["control", "FF 00 48 00 00"], on: desk)
        #expect(result.status == 0, "\(result.err)")
        #expect(result.out == """
            reader: \(desk.names[0])  control code: 0x42000001
            > FF 00 48 00 00
            < 41 43 52 31 32 32 55 32 30 37
              firmware: ACR122U207

            """, "\(result.out)")
        let json = try await runTool(["control", "--json", "FF 00 50 00 00"], on: desk)
        #expect(json.out.contains("\"response\": \"90FF\""), "\(json.out)")  // PICC parameter FF at power-up
        #expect(json.out.contains("\"code\": \"0x42000001\""))
    }

    /// --code sends any control code: CM_IOCTL_GET_FEATURE_REQUEST (0x42000D48) lists
    /// FEATURE_GET_TLV_PROPERTIES and FEATURE_CCID_ESC_COMMAND as libccid does,
    /// `12 04 42 33 00 12 13 04 42 00 00 01` (PC/SC part 10 §2.2; docs/acr122-units.md §1).
    @Test func anyControlCodeWithCode() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        let result = try await runTool(["control", "--code", "42000D48", "--json", "00"], on: desk)
        #expect(result.status == 0, "\(result.err)")
        #expect(result.out.contains("\"response\": \"120442330012130442000001\""), "\(result.out)")
    }

    /// libccid's default refuses escape commands: the tool says how to enable them (docs/cases.md P09).
    @Test func escapeCommandsDisabledSaysWhatToSet() async throws {
        let desk = try await SimulatedDesk.open(personality: "ccid-escape-disabled")
        defer { desk.close() }
        let result = try await runTool(["control", "FF 00 48 00 00"], on: desk)
        #expect(result.status == 1)
        #expect(result.err.contains("announces no escape command"), "\(result.err)")
        #expect(result.err.contains("ifdDriverOptions to 0x0001"), "\(result.err)")
        let forced = try await runTool(["control", "--code", "42000001", "FF 00 48 00 00"], on: desk)
        #expect(forced.status == 1)
        #expect(forced.err.contains("SCARD_E_NOT_TRANSACTED"), "\(forced.err)")
        #expect(forced.err.contains("ifdDriverOptions 0x0001"), "\(forced.err)")
    }
}

/// `--wait SECONDS`: commands that need a card wait for one (SCardGetStatusChange), bounded.
@Suite struct WaitForCardTests {
    @Test func sendWaitsForACardPlacedAfterItStarted() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        let control = desk.control()
        let placer = Task {
            try await Task.sleep(for: .milliseconds(150))
            try control.send("place-card uid=04A1B2C3 applet=ok id=late")
        }
        let result = try await runTool(["send", "--wait", "10", "00 A4 04 00 00"], on: desk)
        try await placer.value
        #expect(result.status == 0, "\(result.err)")
        #expect(result.out.contains("< 90 00\n"), "\(result.out)")
    }

    @Test func theWaitIsBoundedAndSaysSo() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        let result = try await runTool(["read", "--wait", "0.3"], on: desk)
        #expect(result.status == 1)
        #expect(result.err.contains("no card came to any reader within 0.3 s (--wait); place the card or tag on the reader"), "\(result.err)")
    }
}

extension WaitForCardTests {
    /// With --json a command that fails before its JSON still prints one object, {"error": …}.
    @Test func aFailureBeforeTheJSONStillPrintsAJSONError() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        let result = try await runTool(["send", "--json", "--wait", "0.1", "00 A4 04 00 00"], on: desk)
        #expect(result.status == 1)
        let object = try JSONSerialization.jsonObject(with: Data(result.out.utf8)) as? [String: Any]
        #expect((object?["error"] as? String)?.hasPrefix("no card came to any reader within 0.1 s") == true, "\(result.out)")
        // A command that printed its own JSON with an error is not given a second object.
        let control = try await runTool(["control", "--json", "--code", "12345678", "FF 00 48 00 00"], on: desk)
        #expect(control.status == 1)
        #expect(control.out.components(separatedBy: "\"error\"").count == 2, "\(control.out)")
    }
}

/// `reset --json`: every restore step with its exchanges, as a script reads them.
@Suite struct ResetJSONTests {
    @Test func resetJSONListsEachStepWithItsExchanges() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        // Polling off first, as an interrupted emulation leaves it.
        _ = try await runTool(["control", "FF 00 51 00 00"], on: desk)
        let result = try await runTool(["reset", "--json"], on: desk)
        #expect(result.status == 0, "\(result.err)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(result.out.utf8)) as? [String: Any], "\(result.out)")
        #expect(object["restored"] as? Bool == true)
        let steps = try #require(object["steps"] as? [[String: Any]])
        let picc = try #require(steps.first { ($0["name"] as? String)?.hasPrefix("PICC operating parameter FF") == true }, "\(steps)")
        let exchanges = try #require(picc["exchanges"] as? [[String: String]])
        #expect(exchanges.last?["command"] == "FF0051FF00" && exchanges.last?["reply"] == "90FF", "\(exchanges)")
        #expect(try desk.control(.status)["picc"] == "FF")
    }
}
