import SecbridgeTesting
import Testing
@testable import Transcript

/// Secrets inside PN532 frames carried by the ACR122U Direct Transmit (`FF 00 00 00 Lc D4 …`), in
/// both directions, and in command lines of transcript headers (issue 15, "Secrets").
@Suite("Redaction inside PN532 frames and of command lines")
struct PN532RedactionTests {
    typealias Vector = RedactionTests.Vector

    static let commands: [Vector] = [
        Vector(id: "VERIFY inside InDataExchange (read --pn532, libnfc)", source: "PN532 UM0701-02 §7.3.8; ISO/IEC 7816-4 §11.5, made-up PIN 123456",
               command: "FF 00 00 00 10 D4 40 01 00 20 00 81 08 31 32 33 34 35 36 FF FF",
               expected: "FF 00 00 00 10 D4 40 01 00 20 00 81 08 [REDACTED 8]"),
        Vector(id: "EXTERNAL AUTHENTICATE inside InDataExchange", source: "GlobalPlatform SCP02, made-up cryptogram and MAC",
               command: "FF 00 00 00 18 D4 40 01 84 82 33 00 10 01 02 03 04 05 06 07 08 A1 A2 A3 A4 A5 A6 A7 A8",
               expected: "FF 00 00 00 18 D4 40 01 84 82 33 00 10 [REDACTED 16]"),
        Vector(id: "VERIFY inside InCommunicateThru", source: "PN532 UM0701-02 §7.3.9",
               command: "FF 00 00 00 0F D4 42 00 20 00 81 08 31 32 33 34 35 36 FF FF",
               expected: "FF 00 00 00 0F D4 42 00 20 00 81 08 [REDACTED 8]"),
        Vector(id: "VERIFY in an I-block inside InCommunicateThru", source: "ISO/IEC 14443-4 §7.1.1 PCB 02",
               command: "FF 00 00 00 10 D4 42 02 00 20 00 81 08 31 32 33 34 35 36 FF FF",
               expected: "FF 00 00 00 10 D4 42 02 00 20 00 81 08 [REDACTED 8]"),
        Vector(id: "VERIFY chained over two InDataExchange frames (Lc does not fit)", source: "malformed: a secret still",
               command: "FF 00 00 00 0B D4 40 41 00 20 00 81 08 31 32 33",
               expected: "FF 00 00 00 0B D4 40 41 00 20 00 81 08 [REDACTED 3]"),
        Vector(id: "MIFARE WRITE of a sector trailer inside InDataExchange", source: "NXP MF1S50yyX WRITE A0, §8.7; made-up keys",
               command: "FF 00 00 00 15 D4 40 01 A0 07 A0 A1 A2 A3 A4 A5 FF 07 80 69 B0 B1 B2 B3 B4 B5",
               expected: "FF 00 00 00 15 D4 40 01 A0 07 [REDACTED 6] FF 07 80 69 [REDACTED 6]"),
        Vector(id: "MIFARE WRITE of a data block is not a secret", source: "NXP MF1S50yyX WRITE A0",
               command: "FF 00 00 00 15 D4 40 01 A0 04 00 01 02 03 04 05 06 07 08 09 0A 0B 0C 0D 0E 0F",
               expected: "FF 00 00 00 15 D4 40 01 A0 04 00 01 02 03 04 05 06 07 08 09 0A 0B 0C 0D 0E 0F"),
        Vector(id: "NTAG21x PWD_AUTH inside InCommunicateThru", source: "NXP NTAG213/215/216 §10.7, made-up password",
               command: "FF 00 00 00 07 D4 42 1B 11 22 33 44", expected: "FF 00 00 00 07 D4 42 1B [REDACTED 4]"),
        Vector(id: "SELECT inside InDataExchange is not a secret", source: "docs/cases.md P14",
               command: "FF 00 00 00 0F D4 40 01 00 A4 04 00 07 D2 76 00 00 85 01 01 00",
               expected: "FF 00 00 00 0F D4 40 01 00 A4 04 00 07 D2 76 00 00 85 01 01 00"),
        Vector(id: "the MIFARE authentication key still", source: "docs/cases.md P08",
               command: "FF 00 00 00 0F D4 40 01 60 00 A0 A1 A2 A3 A4 A5 01 02 03 04",
               expected: "FF 00 00 00 0F D4 40 01 60 00 [REDACTED 6] 01 02 03 04"),
        Vector(id: "TgSetData's R-APDU is left alone", source: "PN532 UM0701-02 §7.3.17",
               command: "FF 00 00 00 04 D4 8E 90 00", expected: "FF 00 00 00 04 D4 8E 90 00"),
        Vector(id: "InListPassiveTarget is left alone", source: "PN532 UM0701-02 §7.3.5",
               command: "FF 00 00 00 04 D4 4A 01 00", expected: "FF 00 00 00 04 D4 4A 01 00"),
    ]

    @Test("commands: the card APDU inside the frame", arguments: commands)
    func command(_ v: Vector) {
        let redacted = Redactor.default.redact(hex(v.command))
        #expect(redacted.description == v.expected, "\(v.source)")
        #expect(redacted.count == hex(v.command).count)
    }

    typealias AnswerVector = MifareRedactionTests.ResponseVector

    static let answers: [AnswerVector] = [
        AnswerVector(id: "TgGetData's answer holds the terminal's VERIFY (PN532 UM0701-02 §7.3.16; the emulate --record line)",
                     command: "FF 00 00 00 02 D4 86",
                     response: "D5 87 00 00 20 00 81 08 31 32 33 34 35 36 FF FF 90 00",
                     expected: "D5 87 00 00 20 00 81 08 [REDACTED 8] 90 00"),
        AnswerVector(id: "TgGetData's answer fetched by GET RESPONSE (T=0 ACR122U) (ACR122U API v2.04, FF C0)",
                     command: "FF C0 00 00 12",
                     response: "D5 87 00 00 20 00 81 08 31 32 33 34 35 36 FF FF 90 00",
                     expected: "D5 87 00 00 20 00 81 08 [REDACTED 8] 90 00"),
        AnswerVector(id: "TgGetData's answer with a SELECT is not a secret (docs/cases.md P10)",
                     command: "FF 00 00 00 02 D4 86",
                     response: "D5 87 00 00 A4 04 00 07 D2 76 00 00 85 01 01 00 90 00",
                     expected: "D5 87 00 00 A4 04 00 07 D2 76 00 00 85 01 01 00 90 00"),
        AnswerVector(id: "a card's own answer starting D5 87 is data (the rule needs TgGetData as the command)",
                     command: "00 B0 00 00 00",
                     response: "D5 87 00 00 20 00 81 02 31 32 90 00",
                     expected: "D5 87 00 00 20 00 81 02 31 32 90 00"),
        AnswerVector(id: "PN532 READ of a sector trailer: key B (NXP MF1S50yyX READ 30, §8.7; made-up key B)",
                     command: "FF 00 00 00 05 D4 40 01 30 07",
                     response: "D5 41 00 00 00 00 00 00 00 FF 07 80 69 B0 B1 B2 B3 B4 B5 90 00",
                     expected: "D5 41 00 00 00 00 00 00 00 FF 07 80 69 [REDACTED 6] 90 00"),
        AnswerVector(id: "PN532 READ of a data block is not a secret (NXP MF1S50yyX READ 30)",
                     command: "FF 00 00 00 05 D4 40 01 30 04",
                     response: "D5 41 00 00 00 00 00 00 00 FF 07 80 69 B0 B1 B2 B3 B4 B5 90 00",
                     expected: "D5 41 00 00 00 00 00 00 00 FF 07 80 69 B0 B1 B2 B3 B4 B5 90 00"),
        AnswerVector(id: "the PACK answering PWD_AUTH (NXP NTAG213/215/216 §10.7)",
                     command: "FF 00 00 00 07 D4 42 1B 11 22 33 44", response: "D5 43 00 80 80 90 00",
                     expected: "D5 43 00 [REDACTED 2] 90 00"),
    ]

    @Test("answers: the bytes inside D5 87 and D5 41", arguments: answers)
    func answer(_ v: AnswerVector) {
        let redacted = Redactor.default.redact(response: hex(v.response), answering: hex(v.command))
        #expect(redacted.description == v.expected)
        #expect(redacted.count == hex(v.response).count)
    }

    /// The emulate --record lines the issue names: the TgGetData answer above the `tgt <` line,
    /// both masked, when recording and in `transcript redact`.
    @Test("an emulation transcript: the ctl answer and the tgt line alike")
    func emulationTranscript() throws {
        let text = versionLine + """
            +0.000ms ctl 0x42000001 > FF 00 00 00 02 D4 86
            +1.000ms ctl 0x42000001 < D5 87 00 00 20 00 81 08 31 32 33 34 35 36 FF FF 90 00
            +1.000ms tgt < 00 20 00 81 08 31 32 33 34 35 36 FF FF
            +1.100ms tgt > 90 00
            +1.200ms ctl 0x42000001 > FF 00 00 00 04 D4 8E 90 00
            +1.300ms ctl 0x42000001 < D5 8F 00 90 00

            """
        let redacted = Redactor.default.redact(try Transcript(parsing: text, fileName: "emulate")).serialized()
        #expect(redacted == versionLine + """
            +0.000ms ctl 0x42000001 > FF 00 00 00 02 D4 86
            +1.000ms ctl 0x42000001 < D5 87 00 00 20 00 81 08 [REDACTED 8] 90 00
            +1.000ms tgt < 00 20 00 81 08 [REDACTED 8]
            +1.100ms tgt > 90 00
            +1.200ms ctl 0x42000001 > FF 00 00 00 04 D4 8E 90 00
            +1.300ms ctl 0x42000001 < D5 8F 00 90 00

            """)
        #expect(!redacted.contains("31 32 33 34 35 36"))
    }

    @Test("the recorder masks the TgGetData answer as it writes it")
    func recorder() throws {
        let buffer = try TranscriptBuffer()
        let recorder = TranscriptRecorder(sink: buffer, clock: { .zero })
        let getData = hex("FF 00 00 00 02 D4 86")
        try recorder.record(.control(code: 0x4200_0001, .outgoing, TranscriptBytes(getData)))
        try recorder.record(.control(code: 0x4200_0001, .incoming, TranscriptBytes(hex("D5 87 00 00 20 00 81 04 31 32 33 34 90 00"))),
                            answering: getData)
        let text = buffer.transcript.serialized()
        #expect(text.contains("< D5 87 00 00 20 00 81 04 [REDACTED 4] 90 00"), "\(text)")
    }

    struct CommandLine: Sendable, CustomStringConvertible {
        var arguments: [String]
        var expected: [String]
        var description: String { arguments.joined(separator: " ") }
    }

    static let commandLines: [CommandLine] = [
        CommandLine(arguments: ["pkcs11-tool", "--login", "--pin", "123456", "--list-objects"],
                    expected: ["pkcs11-tool", "--login", "--pin", "[REDACTED]", "--list-objects"]),
        CommandLine(arguments: ["pkcs11-tool", "--so-pin=12345678", "--init-pin", "--new-pin", "0000"],
                    expected: ["pkcs11-tool", "--so-pin=[REDACTED]", "--init-pin", "--new-pin", "[REDACTED]"]),
        CommandLine(arguments: ["yubico-piv-tool", "-a", "verify-pin", "-P", "123456"],
                    expected: ["yubico-piv-tool", "-a", "verify-pin", "-P", "[REDACTED]"]),
        CommandLine(arguments: ["gp", "--key-enc", "404142434445464748494A4B4C4D4E4F", "--list"],
                    expected: ["gp", "--key-enc", "[REDACTED]", "--list"]),
        CommandLine(arguments: ["mfoc", "-k", "A0A1A2A3A4A5", "-O", "card.mfd"],
                    expected: ["mfoc", "-k", "[REDACTED]", "-O", "card.mfd"]),
        CommandLine(arguments: ["opensc-tool", "--send-apdu", "0020008106313233343536"],
                    expected: ["opensc-tool", "--send-apdu", "0020008106[REDACTED 6]"]),
        CommandLine(arguments: ["secbridge", "send", "--reader", "0", "00A4040007D2760000850101"],
                    expected: ["secbridge", "send", "--reader", "0", "00A4040007D2760000850101"]),
        CommandLine(arguments: ["nfc-list", "-v"], expected: ["nfc-list", "-v"]),
    ]

    @Test("command lines: a PIN or key argument is masked", arguments: commandLines)
    func commandLine(_ v: CommandLine) {
        #expect(CommandLineRedaction.redact(arguments: v.arguments) == v.expected)
        #expect(CommandLineRedaction.redact(arguments: v.arguments, redactor: .disabled).contains("[REDACTED]") == false)
    }

    @Test("transcript headers: the source line's PIN is masked, provenance fields are not")
    func header() throws {
        let text = versionLine + """
            # tool: secbridge 0.1.0 capture
            # atr: 3B 8F 80 01 80 4F 0C A0 00 00 03 06 03 00 01 00 00 00 00 6A
            # source: secbridge capture -- pkcs11-tool --pin 123456 -O (libpcscspy.so.0 preloaded, pcsc-spy -n)
            > 00 A4 04 00 00

            """
        let redacted = Redactor.default.redact(try Transcript(parsing: text, fileName: "capture")).serialized()
        #expect(redacted.contains("# source: secbridge capture -- pkcs11-tool --pin [REDACTED] -O (libpcscspy.so.0 preloaded, pcsc-spy -n)\n"), "\(redacted)")
        #expect(redacted.contains("# atr: 3B 8F 80 01 80 4F 0C A0 00 00 03 06 03 00 01 00 00 00 00 6A\n"))
        #expect(!redacted.contains("123456"))
    }
}
