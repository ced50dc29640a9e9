import SecbridgeTesting
import Testing

/// `read` of Type 4 Tags holding the records phones write, and of a strict mapping 1.0 tag
/// (docs/iso14443-t4t-ndef.md §4–§5), on in-process desks.
@Suite struct ReadNDEFRecordTests {
    @Test func readPrintsASmartPostersURITitleAndParts() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        // The Smart Poster RTD layout: U, T (en), act 00, s 1024, t "text/html", an image/png icon.
        let poster = "D1024A5370" + "91010C55046578616D706C652E636F6D" + "11010A5402656E4578616D706C65"
            + "11030161637400" + "1101047300000400" + "11010974746578742F68746D6C" + "520904696D6167652F706E6789504E47"
        try desk.control(.placeCard(uid: [0x04, 0xA1, 0xB2, 0xC3], applet: .t4tNDEF, ndef: hex(poster)))
        let read = try await runTool(["read", "--reader", desk.names[0]], on: desk)
        #expect(read.status == 0, "\(read.err)")
        #expect(read.out.hasSuffix("""
            NDEF record 1: smart poster https://example.com
              URI https://example.com
              title "Example" (en)
              action 00: do the action (open, call, send)
              size 1024 bytes
              type "text/html"
              icon "image/png", 4 bytes

            """), "\(read.out)")
        let json = try await runTool(["read", "--reader", desk.names[0], "--json"], on: desk)
        #expect(json.out.contains(#""summary": "smart poster https://example.com""#), "\(json.out)")
        #expect(json.out.contains(#""title \"Example\" (en)""#), "\(json.out)")
    }

    @Test func readPrintsAnAARsPackageAndJoinsChunks() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        // A Text record "Hi" (en) in two chunks, then an AAR for com.example.app.
        let message = "B101035402656E" + "1600024869"
            + "540F0F616E64726F69642E636F6D3A706B67636F6D2E6578616D706C652E617070"
        try desk.control(.placeCard(uid: [0x04, 0xA1, 0xB2, 0xC3], applet: .t4tNDEF, ndef: hex(message)))
        let read = try await runTool(["read", "--reader", desk.names[0]], on: desk)
        #expect(read.status == 0, "\(read.err)")
        #expect(read.out.hasSuffix("NDEF record 1: text \"Hi\" (en)\nNDEF record 2: Android application \"com.example.app\"\n"), "\(read.out)")
    }

    /// A strict 1.0 tag refuses the 2.0 AID (6A 82) and P2 0C (6A 86): `read` falls back to the
    /// 1.0 AID without Le and selects files with P2 00 (AOSP rw_t4t_select_file), to the end.
    @Test func readReadsAMappingOneTagThatRefusesP2_0C() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        try desk.control(.placeCard(uid: [0x04, 0xA1, 0xB2, 0xC3], applet: .t4tNDEFVersion1))
        let read = try await runTool(["read", "--reader", desk.names[0]], on: desk)
        #expect(read.status == 0, "\(read.out)\n\(read.err)")
        let printed = read.out.split(separator: "\n").map(String.init).filter { $0.hasPrefix("> ") || $0.hasPrefix("< ") }
        #expect(Array(printed.dropFirst(4)) == [
            "> 00 A4 04 00 07 D2 76 00 00 85 01 01 00", "< 6A 82",
            "> 00 A4 04 00 07 D2 76 00 00 85 01 00", "< 90 00",
            "> 00 A4 00 00 02 E1 03", "< 90 00",
            "> 00 B0 00 00 0F", "< 00 0F 10 00 7F 00 7F 04 06 E1 04 04 00 00 00 90 00",
            "> 00 A4 00 00 02 E1 04", "< 90 00",
            "> 00 B0 00 00 02", "< 00 10 90 00",
            "> 00 B0 00 02 10", "< D1 01 0C 55 04 65 78 61 6D 70 6C 65 2E 63 6F 6D 90 00",
        ], "\(read.out)")
        #expect(read.out.hasSuffix("NDEF record 1: URI https://example.com\n"), "\(read.out)")
        // The same tag answers P2 0C with 6A 86, as a strict 1.0 tag does.
        let strict = try await runTool(["run", "--reader", desk.names[0], "-"], on: desk,
                                       input: ["00A4040007D276000085010000", "00A4000C02E103"])
        #expect(strict.out.contains("6A 86"), "\(strict.out)\n\(strict.err)")
    }

    @Test func ndefGoesOnlyWithTheType4Applets() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        let refused = try desk.control().exchange("place-card uid=04A1B2C3 applet=echo ndef=D00000")
        #expect(refused == "error bad-argument ndef= goes with applet=t4t-ndef or applet=t4t-ndef-v1")
        // A request line holds at most 4096 bytes, so ndef= carries about 2 000 bytes of hex at most.
        let big = String(repeating: "00", count: 2100)
        let tooLarge = try desk.control().exchange("place-card uid=04A1B2C3 applet=t4t-ndef ndef=\(big)")
        #expect(tooLarge == "error too-long a request line holds at most 4096 bytes")
    }
}
