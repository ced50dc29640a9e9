import SecbridgeTesting
import Testing

@testable import SecbridgeCLI

/// How the commands print secrets (docs/secrets.md §4): the transcript rules on screen and in
/// JSON, error-message echoes, and the shell history.
@Suite struct SecretDisplayTests {
    static let verify = hex("00 20 00 81 08 4B 71 37 23 5A 78 FF FF")

    @Test func textAndJSONMaskWhatTranscriptsMask() {
        #expect(SecretDisplay.masked.text(Self.verify) == "00 20 00 81 08 [REDACTED 8]")
        #expect(SecretDisplay.shown.text(Self.verify) == "00 20 00 81 08 4B 71 37 23 5A 78 FF FF")
        #expect(SecretDisplay.masked.json(Self.verify) == .object([("hex", .string("0020008108")), ("redacted", .int(8))]))
        #expect(SecretDisplay.shown.json(Self.verify) == .string("0020008108" + "4B7137235A78FFFF"))
        // A sector trailer read back: key B masked in the answer and in its data field.
        let read = hex("FF B0 00 07 10"), trailer = hex("00 00 00 00 00 00 FF 07 80 69 B0 B1 B2 B3 B4 B5 90 00")
        #expect(SecretDisplay.masked.text(response: trailer, answering: read) == "00 00 00 00 00 00 FF 07 80 69 [REDACTED 6] 90 00")
        #expect(SecretDisplay.masked.json(responseData: trailer, answering: read)
            == .object([("hex", .string("000000000000FF078069")), ("redacted", .int(6))]))
    }

    @Test func anEchoedArgumentThatStartsAsASecretIsMasked() {
        let display = SecretDisplay.masked
        #expect(display.argumentText("00 20 00 81 08 4B 71 37 23 5A 7G") == "00 20 00 81 08 [REDACTED 5] …")
        #expect(display.argumentText("0x00,0x20,0x00,0x81,0x08,0x4B,0x71,0x37,0x2Z") == "00 20 00 81 08 [REDACTED 3] …")
        #expect(display.argumentText("00 A4 04 00 0G") == "00 A4 04 00 0G", "no secret: as given")
        #expect(display.argumentText("hello") == "hello")
        #expect(SecretDisplay.shown.argumentText("00 20 00 81 08 4B 71 37 23 5A 7G") == "00 20 00 81 08 4B 71 37 23 5A 7G")
    }

    @Test func theShellHistoryKeepsNoLineWithASecret() {
        #expect(!ShellHistory.keeps("00 20 00 81 08 4B 71 37 23 5A 78 FF FF", after: nil))
        #expect(!ShellHistory.keeps("FF 82 00 00 06 5A 9C 3E 71 D4 2B", after: nil))
        #expect(!ShellHistory.keeps("FF 00 00 00 10 D4 40 01 00 20 00 81 08 4B 71 37 23 5A 78 FF FF", after: nil))
        #expect(ShellHistory.keeps("00 A4 04 00 07 D2 76 00 00 85 01 01 00", after: nil))
        #expect(ShellHistory.keeps("reset", after: nil))
    }
}
