import SecbridgeTesting
import Testing
@testable import Transcript

/// MIFARE Classic keys in PC/SC part 3 Update Binary commands and Read Binary answers of sector
/// trailers (ACR122U API v2.04 §5; NXP MF1S50yyX §8.7: `| key A (6) | access bits (3) | GPB | key B (6) |`).
@Suite("Redaction of MIFARE Classic sector trailers")
struct MifareRedactionTests {
    static let trailer = "A0 A1 A2 A3 A4 A5 FF 07 80 69 B0 B1 B2 B3 B4 B5"

    struct CommandVector: Sendable, CustomStringConvertible {
        var id: String
        var command: String
        var expected: String
        var description: String { id }
    }

    static let commandVectors: [CommandVector] = [
        CommandVector(id: "Update Binary of trailer block 3", command: "FF D6 00 03 10 " + trailer,
                      expected: "FF D6 00 03 10 [REDACTED 6] FF 07 80 69 [REDACTED 6]"),
        CommandVector(id: "Update Binary of trailer block 127 (last 4-block sector)", command: "FF D6 00 7F 10 " + trailer,
                      expected: "FF D6 00 7F 10 [REDACTED 6] FF 07 80 69 [REDACTED 6]"),
        CommandVector(id: "Update Binary of 4K trailer block 143 (16-block sector 32)", command: "FF D6 00 8F 10 " + trailer,
                      expected: "FF D6 00 8F 10 [REDACTED 6] FF 07 80 69 [REDACTED 6]"),
        CommandVector(id: "Update Binary of 4K data block 131 is not a trailer", command: "FF D6 00 83 10 " + trailer,
                      expected: "FF D6 00 83 10 " + trailer),
        CommandVector(id: "Update Binary of data block 4", command: "FF D6 00 04 10 " + trailer,
                      expected: "FF D6 00 04 10 " + trailer),
        CommandVector(id: "Type 2 Tag page 3 write (Lc 04) is not a trailer", command: "FF D6 00 03 04 E1 10 12 00",
                      expected: "FF D6 00 03 04 E1 10 12 00"),
    ]

    @Test("Update Binary of a sector trailer: keys A and B masked, access bits kept", arguments: commandVectors)
    func trailerWrite(_ v: CommandVector) {
        let redacted = Redactor.default.redact(hex(v.command))
        #expect(redacted.description == v.expected)
        #expect(redacted.count == hex(v.command).count)
    }

    struct ResponseVector: Sendable, CustomStringConvertible {
        var id: String
        var command: String
        var response: String
        var expected: String
        var description: String { id }
    }

    static let responseVectors: [ResponseVector] = [
        ResponseVector(id: "Read Binary of trailer block 7: key B masked", command: "FF B0 00 07 10",
                       response: "00 00 00 00 00 00 FF 07 80 69 B0 B1 B2 B3 B4 B5 90 00",
                       expected: "00 00 00 00 00 00 FF 07 80 69 [REDACTED 6] 90 00"),
        ResponseVector(id: "Read Binary of 4K trailer block 255", command: "FF B0 00 FF 10",
                       response: "00 00 00 00 00 00 FF 07 80 69 B0 B1 B2 B3 B4 B5 90 00",
                       expected: "00 00 00 00 00 00 FF 07 80 69 [REDACTED 6] 90 00"),
        ResponseVector(id: "Read Binary of data block 4 is kept", command: "FF B0 00 04 10",
                       response: "00 00 00 00 00 00 FF 07 80 69 B0 B1 B2 B3 B4 B5 90 00",
                       expected: "00 00 00 00 00 00 FF 07 80 69 B0 B1 B2 B3 B4 B5 90 00"),
        ResponseVector(id: "a failed read 63 00 is kept", command: "FF B0 00 03 10", response: "63 00", expected: "63 00"),
        ResponseVector(id: "Type 2 Tag CC read with Le 04 is kept", command: "FF B0 00 03 04",
                       response: "E1 10 12 00 90 00", expected: "E1 10 12 00 90 00"),
    ]

    @Test("Read Binary answer of a sector trailer: key B masked", arguments: responseVectors)
    func trailerRead(_ v: ResponseVector) {
        let redacted = Redactor.default.redact(response: hex(v.response), answering: hex(v.command))
        #expect(redacted.description == v.expected)
        #expect(redacted.matches(hex(v.response)), "a replay still accepts the real answer")
    }

    @Test("a recording channel masks the trailer's key B in the answer, the caller gets the real bytes")
    func recordingChannel() throws {
        let answer = hex("00 00 00 00 00 00 FF 07 80 69 B0 B1 B2 B3 B4 B5 90 00")
        let card = ScriptedChannel([
            hex("FF 82 00 00 06 A0 A1 A2 A3 A4 A5"): .bytes(hex("90 00")),
            hex("FF B0 00 03 10"): .bytes(answer),
            hex("FF D6 00 03 10 " + Self.trailer): .bytes(hex("90 00")),
        ])
        let buffer = try TranscriptBuffer(header: TranscriptHeader(origin: .recorded, transmissionProtocol: .t1), fileName: "rec")
        let recorder = TranscriptRecorder(sink: buffer, clock: VirtualClock().read)
        let channel = RecordingChannel(wrapping: card, recorder: recorder)
        _ = try channel.transmit(hex("FF 82 00 00 06 A0 A1 A2 A3 A4 A5"))
        #expect(try channel.transmit(hex("FF B0 00 03 10")) == answer)
        _ = try channel.transmit(hex("FF D6 00 03 10 " + Self.trailer))
        let text = buffer.transcript.serialized()
        #expect(text.contains("> FF 82 00 00 06 [REDACTED 6]\n"))
        #expect(text.contains("< 00 00 00 00 00 00 FF 07 80 69 [REDACTED 6] 90 00\n"))
        #expect(text.contains("> FF D6 00 03 10 [REDACTED 6] FF 07 80 69 [REDACTED 6]\n"))
        #expect(!text.contains("B0 B1"))
        #expect(!text.contains("A0 A1"))
        // A replay cannot make the masked key B up: the recording is for reading, not for replaying
        // this answer (the ReplayChannel refuses answers holding [REDACTED n]).
    }

    @Test("redacting a whole transcript pairs each answer with its command (same kind, same channel)")
    func wholeTranscript() throws {
        let text = versionLine + """
            > FF B0 00 07 10
            < 00 00 00 00 00 00 FF 07 80 69 B0 B1 B2 B3 B4 B5 90 00
            ctl 0x42000001 > FF B0 00 07 10
            ctl 0x42000001 < 00 00 00 00 00 00 FF 07 80 69 B0 B1 B2 B3 B4 B5 90 00
            > FF B0 00 04 10
            < 00 00 00 00 00 00 FF 07 80 69 B0 B1 B2 B3 B4 B5 90 00

            """
        let t = Redactor.default.redact(try Transcript(parsing: text, fileName: "import"))
        #expect(t.serialized() == versionLine + """
            > FF B0 00 07 10
            < 00 00 00 00 00 00 FF 07 80 69 [REDACTED 6] 90 00
            ctl 0x42000001 > FF B0 00 07 10
            ctl 0x42000001 < 00 00 00 00 00 00 FF 07 80 69 [REDACTED 6] 90 00
            > FF B0 00 04 10
            < 00 00 00 00 00 00 FF 07 80 69 B0 B1 B2 B3 B4 B5 90 00

            """)
    }

    @Test("the default rule set holds the new rules; the disabled one none")
    func ruleSets() {
        #expect(Redactor.default.rules.contains { $0.id == "mifare-trailer-write" })
        #expect(Redactor.default.responseRules.map(\.id) == ["mifare-trailer-read", "pn532-target-command", "pn532-card-answer"])
        #expect(Redactor.disabled.responseRules.isEmpty)
        let answer = hex("00 00 00 00 00 00 FF 07 80 69 B0 B1 B2 B3 B4 B5 90 00")
        #expect(Redactor.disabled.redact(response: answer, answering: hex("FF B0 00 03 10")) == TranscriptBytes(answer))
    }
}
