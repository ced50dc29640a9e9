import Foundation
import PCSCCore
import SecbridgeCLI
import SecbridgeTesting
import Testing

/// `send` against cards that misbehave as real ones do, in process: a long object behind a 61 XX
/// chain, a chain broken by an error SW, a mute card (0 bytes), a card pulled away mid-exchange.
@Suite struct TransportCommandTests {
    /// The simulator's `long-object` applet: byte i is i × 7 mod 256, 2847 bytes.
    static let longObject: [UInt8] = (0..<2847).map { UInt8(truncatingIfNeeded: $0 &* 7) }

    static func placed(_ options: String) async throws -> SimulatedDesk {
        let desk = try await SimulatedDesk.open()
        try desk.control().send("place-card uid=04A1B2C3 id=card " + options)
        return desk
    }

    @Test func aLongObjectReadWithLe00ArrivesWholeThroughItsGetResponseChain() async throws {
        let desk = try await Self.placed("applet=long-object")
        defer { desk.close() }
        let result = try await runTool(["send", "--json", "00 CB 3F FF 05 5C 03 5F C1 05 00"], on: desk)
        #expect(result.status == 0, "\(result.err)")
        #expect(result.out.contains("\"data\": \"\(hex: Self.longObject)\""), "\(result.out.prefix(400))")
        #expect(result.out.contains("\"sw\": \"9000\""))
        // 1 command + 11 GET RESPONSEs (10 × 256 bytes, then the last 31 asked with P3 1F).
        #expect(result.out.components(separatedBy: "\"command\": \"00C00000").count - 1 == 11, "\(result.out.suffix(600))")
        #expect(result.out.contains("\"command\": \"00C000001F\""))
    }

    @Test func stopAtNeStopsAfterLesBytesAndShowsTheCardsRemaining61XX() async throws {
        let desk = try await Self.placed("applet=long-object")
        defer { desk.close() }
        let result = try await runTool(["send", "--stop-at-ne", "00 CB 3F FF 05 5C 03 5F C1 05 00"], on: desk)
        #expect(result.status == 0, "\(result.err)")
        let lines = result.out.split(separator: "\n").map(String.init)
        #expect(lines.filter { $0.hasPrefix("> ") }.count == 1, "\(result.out)")
        #expect(lines.last == "  SW 61 00: \(lines.last?.dropFirst(12) ?? "")", "\(result.out)")
        #expect(lines.contains { $0.hasPrefix("< ") && $0.hasSuffix(" 61 00") })
    }

    @Test func aChainBrokenByAnErrorStatusWordReportsThePartialDataNotAnAnswer() async throws {
        let desk = try await Self.placed("applet=broken-chain")
        defer { desk.close() }
        let result = try await runTool(["send", "--json", "00 CB 3F FF 05 5C 03 5F C1 05 00"], on: desk)
        #expect(result.status == 1)
        #expect(result.err.contains("GET RESPONSE 2 was answered 6F 00"), "\(result.err)")
        #expect(result.err.contains("512 bytes arrived before it (partial data, not the answer)"), "\(result.err)")
        // The JSON still lists the raw exchanges made, and the error; no "data" as if answered.
        #expect(result.out.contains("\"error\": "), "\(result.out.prefix(300))")
        #expect(result.out.contains("\"response\": \"6F00\""))
        // The partial data as its own member, with the SW that ended the chain; no "data" as if answered.
        #expect(result.out.contains("\"partial\": \"\(hex: Array(Self.longObject.prefix(512)))\""), "\(result.out.prefix(300))")
        #expect(result.out.contains("\"sw\": \"6F00\""))
        #expect(!result.out.contains("\"data\": "))
    }

    @Test func aMuteCardIsATypedErrorAndTheExchangesBeforeItStay() async throws {
        let desk = try await Self.placed("applet=mute")
        defer { desk.close() }
        let result = try await runTool(["send", "--json", "00 A4 04 00 07 D2 76 00 00 85 01 01 00"], on: desk)
        #expect(result.status == 1)
        #expect(result.err.contains("the card answered 00 A4 04 00 07 D2 76 00 00 85 01 01 00 with no bytes at all, not even SW1 SW2"), "\(result.err)")
        #expect(result.out.contains("\"response\": \"\""), "\(result.out)")
        #expect(result.out.contains("\"error\": "), "\(result.out)")
    }

    @Test func aCardRemovedDuringTheExchangeIsSaidSoAndEarlierExchangesAreKept() async throws {
        let desk = try await Self.placed("applet=ok leave-after=2")
        defer { desk.close() }
        let record = desk.directory + "/send.trn"
        let result = try await runTool(
            ["send", "--json", "--record", record, "00 A4 04 00 07 D2 76 00 00 85 01 01 00", "00 B0 00 00 0F", "00 B0 00 0F 0F"], on: desk)
        #expect(result.status == 1)
        #expect(result.err.contains("00 B0 00 00 0F: the card was removed during the exchange; the exchanges before it are shown and recorded"), "\(result.err)")
        #expect(result.out.contains("\"command\": \"00A4040007D276000085010100\""), "\(result.out)")
        #expect(result.out.contains("\"sw\": \"9000\""))
        let transcript = try String(contentsOfFile: record, encoding: .utf8)
        #expect(transcript.contains("> 00 A4 04 00 07 D2 76 00 00 85 01 01 00\n"), "\(transcript)")
        #expect(transcript.contains("< 90 00\n"), "\(transcript)")
    }
}

extension TransportCommandTests {
    /// The simulated Type 4 Tag answers SELECT of its application with a bare 90 00 (no FCI): the
    /// application counts as selected, unverified (ISO/IEC 7816-4 §7.1.1 lets the FCI be absent).
    @Test func aSelectAnsweredWithABare9000IsSelectedWithoutFCIUnverified() async throws {
        let desk = try await Self.placed("applet=t4t-ndef")
        defer { desk.close() }
        let text = try await runTool(["read", "--aid", "D2760000850101"], on: desk)
        #expect(text.status == 0, "\(text.err)")
        #expect(text.out.hasSuffix("SELECT D2 76 00 00 85 01 01: SW 90 00 (normal processing, no further qualification)\nselected without FCI (a bare 90 00): unverified, the card did not say which application answered\n"), "\(text.out)")
        let json = try await runTool(["read", "--aid", "D2760000850101", "--json"], on: desk)
        #expect(json.out.contains("\"selected\": \"unverified\""), "\(json.out)")
    }
}

extension String.StringInterpolation {
    /// Uppercase hex without spaces, as the tool's JSON writes bytes.
    mutating func appendInterpolation(hex bytes: [UInt8]) {
        appendLiteral(bytes.map { String(format: "%02X", $0) }.joined())
    }
}

extension TransportCommandTests {
    /// A Type 4 Tag taken away during Android's fourth command (SELECT E104): `read` says the
    /// card was removed, and the exchanges before it stay in the text and the JSON.
    @Test func aTagRemovedMidReadKeepsTheExchangesBeforeIt() async throws {
        let desk = try await Self.placed("applet=t4t-ndef leave-after=4")
        defer { desk.close() }
        let text = try await runTool(["read"], on: desk)
        #expect(text.status == 1)
        #expect(text.err.contains("the card was removed during the exchange"), "\(text.err)")
        #expect(text.out.contains("> 00 B0 00 00 0F\n< 00 0F 20 00 7F 00 7F 04 06 E1 04 04 00 00 00 90 00\n"), "\(text.out)")
        try desk.control(.placeCard(uid: [0x04, 0xA1, 0xB2, 0xC3], applet: .t4tNDEF, leaveAfter: 4, id: "card2"))
        let json = try await runTool(["read", "--json"], on: desk)
        #expect(json.status == 1)
        #expect(json.out.contains("\"command\": \"00B000000F\""), "\(json.out)")
        #expect(json.out.contains("\"error\": \"the card was removed during the exchange"), "\(json.out)")
    }
}

extension TransportCommandTests {
    /// A card another program reset (SCARD_W_RESET_CARD on our next call): the hint says its
    /// state is lost and to start again from the SELECT. The reset is made by a second handle.
    @Test func aCardResetByAnotherProgramGetsTheHintThatItsStateIsLost() async throws {
        let desk = try await Self.placed("applet=ok")
        defer { desk.close() }
        let executor = BlockingExecutor(name: "reset-test")
        defer { executor.shutdown() }
        let client = desk.client
        let reader = desk.names[0]
        let message = try await executor.run { () throws -> String in
            let context = try client.establishContext()
            let session = try CardSession.open(context: context, reader: reader, record: nil, command: "test", recordings: nil)
            defer { session.close() }
            let other = try client.establishContext().connect(to: reader, share: .shared, protocols: .any)
            try other.reconnect(share: .shared, protocols: .any, initialization: .reset)
            do {
                _ = try session.channel.transmit([0x00, 0xA4, 0x04, 0x00, 0x00])
                return "no error"
            } catch {
                return session.explainFailure(error, sending: [0x00, 0xA4, 0x04, 0x00, 0x00])
            }
        }
        #expect(message.hasPrefix("00 A4 04 00 00: the card was reset by another program (SCARD_W_RESET_CARD): its state is lost"), "\(message)")
    }
}

extension TransportCommandTests {
    /// `read` of a mute card says it is mute, as `send` does.
    @Test func readOfAMuteCardSaysTheCardIsMute() async throws {
        let desk = try await Self.placed("applet=mute")
        defer { desk.close() }
        let result = try await runTool(["read"], on: desk)
        #expect(result.status == 1)
        #expect(result.err.contains("the card is mute"), "\(result.err)")
    }
}

extension TransportCommandTests {
    /// ISO/IEC 7816-4 §5.1: Ne is the most response data a command asks for. The `echo` applet
    /// answers a command with its own bytes, so READ BINARY with Le 02 gets 5 data bytes: the
    /// answer is shown whole, and a note says it is longer than Ne. Le 05 (exactly Ne) gets none.
    @Test func anAnswerLongerThanNeIsShownWholeWithANote() async throws {
        let desk = try await Self.placed("applet=echo")
        defer { desk.close() }
        let result = try await runTool(["send", "00 B0 00 00 02", "00 B0 00 00 05"], on: desk)
        #expect(result.status == 0, "\(result.err)")
        let lines = result.out.split(separator: "\n").map(String.init)
        #expect(
            lines.prefix(4) == [
                "> 00 B0 00 00 02", "< 00 B0 00 00 02 90 00",
                "  note: the card answered 5 data bytes, more than Ne 2 of the command's Le (ISO/IEC 7816-4 §5.1); shown whole",
                "  SW 90 00: \(lines.dropFirst(3).first?.dropFirst(12) ?? "")",
            ], "\(result.out)")
        #expect(lines.filter { $0.hasPrefix("  note:") }.count == 1, "\(result.out)")
    }

    /// The cases of the note's rule, by ISO/IEC 7816-4 §5.1's encodings of Ne.
    @Test func theNeNoteFollowsEachEncodingOfLe() {
        let note = { (command: String, dataCount: Int) in
            TracingChannel.longerThanNeNote(
                command: hexBytes(command), answer: [UInt8](repeating: 0xAB, count: dataCount) + [0x90, 0x00])
        }
        // Short Le 02: Ne 2.
        #expect(note("00 B0 00 00 02", 3)?.contains("3 data bytes, more than Ne 2") == true)
        #expect(note("00 B0 00 00 02", 2) == nil)
        // Short Le 00: Ne 256.
        #expect(note("00 B0 00 00 00", 256) == nil)
        #expect(note("00 B0 00 00 00", 257)?.contains("more than Ne 256") == true)
        // Case 4 short: Lc 01, data, Le 04.
        #expect(note("00 A4 04 00 01 AA 04", 5)?.contains("more than Ne 4") == true)
        // Extended Le 00 00 04 (case 2E, Ne 4) and 00 00 00 (Ne 65 536).
        #expect(note("00 B0 00 00 00 00 04", 5)?.contains("more than Ne 4") == true)
        #expect(note("00 B0 00 00 00 00 00", 300) == nil)
        // No Le (case 1, case 3): Ne 0, no note; a reader pseudo-APDU, no note; bytes that are no APDU, none.
        #expect(note("00 A4 04 00", 15) == nil)
        #expect(note("00 A4 04 00 02 3F 00", 15) == nil)
        #expect(note("FF CA 00 00 04", 7) == nil)
        #expect(note("00 B0 00", 7) == nil)
    }
}

private func hexBytes(_ text: String) -> [UInt8] {
    text.split(separator: " ").map { UInt8($0, radix: 16)! }
}
