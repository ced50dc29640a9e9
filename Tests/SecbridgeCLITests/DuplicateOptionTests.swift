import SecbridgeTesting
import Testing

@testable import SecbridgeCLI

/// An option with a value given twice: a usage error naming both values, never the last one
/// silently (before, `send -r 0 -r 1` sent on reader 1 without a word).
@Suite struct DuplicateOptionTests {
    @Test func aValueGivenTwiceIsAUsageErrorAndAFlagTwiceIsTheFlag() throws {
        let options: [OptionSpec] = [.reader("the reader"), .flag("json", "JSON"),
                                     OptionSpec.value("key", "HEX12", "a key", .hex(lengths: [6], takes: "6 bytes", secret: true)).secret()]
        #expect(throws: CLIError.usage("--reader is given twice ('0' and '1'); give it once")) {
            try parseArguments(["-r", "0", "--reader=1"], options: options)
        }
        // A secret's values are never shown.
        #expect(throws: CLIError.usage("--key is given twice; give it once")) {
            try parseArguments(["--key", "A0A1A2A3A4A5", "--key", "B0B1B2B3B4B5"], options: options)
        }
        let parsed = try parseArguments(["--json", "--json", "-r", "0"], options: options)
        #expect(parsed.has("json") && parsed.value("reader") == "0")
    }

    @Test func sendWithTheReaderGivenTwiceSendsNothing() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        try desk.control(.placeCard(uid: [0x04, 0xA1, 0xB2, 0xC3], id: "card"))
        let result = try await runTool(["send", "-r", "0", "-r", "1", "00 A4 04 00 00"], on: desk)
        #expect(result.status == 64)
        #expect(result.err.contains("--reader is given twice ('0' and '1'); give it once"), "\(result.err)")
        #expect(try desk.control(.cardLog(peer: "card"))["count"] == "0")
    }
}
