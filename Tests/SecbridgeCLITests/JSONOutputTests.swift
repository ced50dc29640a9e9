import Foundation
import SecbridgeTesting
import Testing

/// `--json` of `write-ndef` (one object) and `emulate` (JSON lines, one per event) against
/// simulated ACR122U readers in process.
@Suite struct JSONOutputTests {
    static func object(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], "\(text)")
    }

    /// NTAG213 (NXP NTAG213/215/216 data sheet §8.5: GET_VERSION 00 04 04 02 01 00 0F 03, CC
    /// E1 10 12 00 for 144 bytes); "Hello" (en) is D1 01 08 54 02 65 6E 48 65 6C 6C 6F
    /// (docs/iso14443-t4t-ndef.md §5), 12 bytes, in the TLV 03 0C … FE: 15 bytes on pages 4–7.
    @Test func writeNDEFJSONNamesTheTagAndWhatWasWritten() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        try desk.control(.placeTag(uid: [0x04, 0xA1, 0xB2, 0xC3, 0xD4, 0xE5, 0xF6], .type2(.ntag213), id: "t2"))
        let result = try await runTool(["write-ndef", "--reader", desk.names[0], "--text", "Hello", "--yes", "--json"], on: desk)
        #expect(result.status == 0, "\(result.err)\n\(result.out)")
        let json = try Self.object(result.out)
        #expect(json["reader"] as? String == desk.names[0])
        #expect((json["card"] as? String)?.hasPrefix("NTAG213 (GET_VERSION 00 04 04 02 01 00 0F 03; PC/SC part 3 name 00 03") == true, "\(json)")
        #expect(json["uid"] as? String == "04A1B2C3D4E5F6")
        #expect(json["capabilityContainer"] as? String == "E1101200")
        #expect(json["dataAreaSize"] as? Int == 144)
        #expect(json["readOnly"] as? Bool == false)
        let written = try #require(json["written"] as? [String: Any])
        #expect(written["bytes"] as? Int == 15)
        #expect(written["ndefBytes"] as? Int == 12)
        #expect(written["firstPage"] as? Int == 4)
        #expect(written["lastPage"] as? Int == 7)
        let records = try #require(json["ndef"] as? [[String: Any]])
        #expect(records.count == 1)
        #expect(records.first?["type"] as? String == "54")
        #expect(records.first?["payload"] as? String == "02656E48656C6C6F")
        // Nothing but the JSON object on standard output.
        #expect(!result.out.contains("reader: "))
    }

    @Test func writeNDEFJSONFailureIsAnErrorObject() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        try desk.control(.placeCard(uid: [0x04, 0xA1, 0xB2, 0xC3], applet: .t4tNDEF, id: "card"))
        let result = try await runTool(["write-ndef", "--reader", desk.names[0], "--uri", "https://example.com", "--yes", "--json"], on: desk)
        #expect(result.status == 1)
        let error = try #require(try Self.object(result.out)["error"] as? String)
        #expect(error.hasPrefix("write-ndef writes NFC Forum Type 2 Tags (NTAG21x, MIFARE Ultralight); the card in '\(desk.names[0])' is not a PC/SC part 3 storage card"), "\(error)")
    }

    /// One line per event: the wired state, the assertion, the approval, card emulation, the field
    /// coming on, the six APDUs of the Type 4 Tag full URI read (docs/iso14443-t4t-ndef.md §4) as
    /// the uri-tag credential answers them, the field going off, the end with 6 commands.
    @Test func emulateJSONIsOneLinePerEvent() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        try desk.control(.placeTerminal(id: "android"))
        let result = try await runTool(
            ["emulate", "--credential", EmulationExitTests.credential("uri-tag.json"), "--yes", "--json", "--reader", desk.names[0]], on: desk)
        #expect(result.status == 0, "\(result.err)\n\(result.out)")
        let lines = try result.out.split(separator: "\n").map { try Self.object(String($0)) }
        let events = lines.map { $0["event"] as? String ?? "?" }
        // Wired mode and the assertion first; the authorization comes with performTransaction.
        #expect(Array(events.prefix(4)) == ["state", "assertion", "authorization", "state"], "\(events)")
        guard lines.count > 4 else { return }
        #expect(lines[0]["state"] as? String == "wired(example-uri-tag)", "\(lines[0])")
        #expect(lines[1]["state"] as? String == "active")
        #expect(lines[2]["approved"] as? Bool == true)
        #expect(lines[2]["reason"] as? String == "--yes")
        #expect(lines[3]["reader"] as? String == desk.names[0])
        #expect((lines[3]["state"] as? String)?.hasPrefix("cardEmulation(") == true)
        let apdus = lines.filter { $0["event"] as? String == "apdu" }
        #expect(apdus.map { $0["command"] as? String ?? "" } == [
            "00A4040007D276000085010100", "00A4000C02E103", "00B000000F", "00A4000C02E104", "00B0000002", "00B0000210",
        ])
        #expect(apdus.first?["response"] as? String == "9000")
        #expect(apdus.last?["response"] as? String == "D1010C55046578616D706C652E636F6D9000")
        let fields = lines.filter { $0["event"] as? String == "field" }.map { $0["state"] as? String ?? "" }
        #expect(fields.first == "fieldPresent")
        #expect(fields.contains("fieldAbsent"))
        #expect(events.last == "end")
        #expect(lines.last?["commands"] as? Int == 6)
        #expect(lines.last?["status"] as? Int == 0)
    }

    /// A reader that cannot emulate: the stream is one line, the error object.
    @Test func emulateJSONFailureEndsTheStreamWithTheError() async throws {
        let desk = try await SimulatedDesk.open(personality: "ccid-escape-disabled")
        defer { desk.close() }
        let result = try await runTool(
            ["emulate", "--credential", EmulationExitTests.credential("uri-tag.json"), "--yes", "--json", "--reader", desk.names[0]], on: desk)
        #expect(result.status == 1)
        let lines = try result.out.split(separator: "\n").map { try Self.object(String($0)) }
        #expect(lines.count == 1, "\(result.out)")
        #expect(lines.first?["event"] as? String == "error")
        #expect((lines.first?["error"] as? String)?.contains("cannot emulate a card") == true, "\(result.out)")
    }
}
