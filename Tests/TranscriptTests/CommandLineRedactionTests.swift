import SecbridgeTesting
import Testing
@testable import Transcript

/// A command line redacted by what the captured program parses (issue 30, item 1): APDUs given
/// one argument per byte (`secbridge send`'s own help), as one string (spaced, opensc-tool's
/// colons, `0x` bytes), and as lines of a script inside `sh -c` (scriptor, `secbridge run -`);
/// the four kinds of secret of docs/secrets.md §2: a PIN (VERIFY), a key (LOAD KEY, PUT KEY), an
/// authentication cryptogram (EXTERNAL AUTHENTICATE) and a tag password (NTAG PWD_AUTH).
@Suite("Command lines redacted as their programs parse them")
struct CommandLineRedactionTests {
    struct Case: Sendable, CustomStringConvertible {
        var id: String
        var arguments: [String]
        var expected: [String]
        var description: String { id }
    }

    /// VERIFY with the made-up PIN "1234" padded with FF (ISO/IEC 7816-4 §11.5.6).
    static let verifyWords = ["00", "20", "00", "80", "08", "31", "32", "33", "34", "FF", "FF", "FF", "FF"]

    static let cases: [Case] = [
        Case(id: "send, one word per byte (the issue's command line)",
             arguments: ["secbridge", "send", "--reader", "00 00"] + verifyWords,
             expected: ["secbridge", "send", "--reader", "00 00", "00", "20", "00", "80", "08", "[REDACTED 8]"]),
        Case(id: "send, words after an option value of two digits",
             arguments: ["secbridge", "send", "--reader", "12"] + verifyWords,
             expected: ["secbridge", "send", "--reader", "12", "00", "20", "00", "80", "08", "[REDACTED 8]"]),
        Case(id: "send, one spaced string",
             arguments: ["secbridge", "send", "00 20 00 80 08 31 32 33 34 FF FF FF FF"],
             expected: ["secbridge", "send", "00 20 00 80 08 [REDACTED 8]"]),
        Case(id: "send, a newline inside the string (a separator to send)",
             arguments: ["secbridge", "send", "00 20 00 80 08\n31 32 33 34 FF FF FF FF"],
             expected: ["secbridge", "send", "00 20 00 80 08\n[REDACTED 8]"]),
        Case(id: "opensc-tool, colons",
             arguments: ["opensc-tool", "-s", "00:20:00:80:08:31:32:33:34:FF:FF:FF:FF"],
             expected: ["opensc-tool", "-s", "00:20:00:80:08:[REDACTED 8]"]),
        Case(id: "opensc-tool, spaced string after --send-apdu=",
             arguments: ["opensc-tool", "--send-apdu=00 20 00 80 08 31 32 33 34 FF FF FF FF"],
             expected: ["opensc-tool", "--send-apdu=00 20 00 80 08 [REDACTED 8]"]),
        Case(id: "0x bytes with commas",
             arguments: ["tool", "0x00,0x20,0x00,0x80,0x08,0x31,0x32,0x33,0x34,0xFF,0xFF,0xFF,0xFF"],
             expected: ["tool", "0x00,0x20,0x00,0x80,0x08,[REDACTED 8]"]),
        Case(id: "scriptor fed by printf in sh -c (\\n in the shell string)",
             arguments: ["sh", "-c", "printf '00 A4 04 00 07 D2 76 00 00 85 01 01\\n00 20 00 80 08 31 32 33 34 FF FF FF FF\\n' | scriptor"],
             expected: ["sh", "-c", "printf '00 A4 04 00 07 D2 76 00 00 85 01 01\\n00 20 00 80 08 [REDACTED 8]\\n' | scriptor"]),
        Case(id: "a script in one argument, real newlines (secbridge run -)",
             arguments: ["sh", "-c", "secbridge run - <<EOF\n00 A4 04 00 07 D2 76 00 00 85 01 01 00\n00 20 00 80 08 31 32 33 34 FF FF FF FF\nEOF"],
             expected: ["sh", "-c", "secbridge run - <<EOF\n00 A4 04 00 07 D2 76 00 00 85 01 01 00\n00 20 00 80 08 [REDACTED 8]\nEOF"]),
        Case(id: "send words inside sh -c",
             arguments: ["sh", "-c", "secbridge send --reader 0 00 20 00 80 08 31 32 33 34 FF FF FF FF && echo done"],
             expected: ["sh", "-c", "secbridge send --reader 0 00 20 00 80 08 [REDACTED 8] && echo done"]),
        Case(id: "a key: ACR122U LOAD KEY, one word per byte",
             arguments: ["secbridge", "send", "FF", "82", "00", "00", "06", "A0", "A1", "A2", "A3", "A4", "A5"],
             expected: ["secbridge", "send", "FF", "82", "00", "00", "06", "[REDACTED 6]"]),
        Case(id: "a key: GlobalPlatform PUT KEY in one string",
             arguments: ["secbridge", "send", "80 D8 00 01 11 01 40 41 42 43 44 45 46 47 48 49 4A 4B 4C 4D 4E 4F"],
             expected: ["secbridge", "send", "80 D8 00 01 11 [REDACTED 17]"]),
        Case(id: "a cryptogram: EXTERNAL AUTHENTICATE, one word per byte",
             arguments: ["secbridge", "send"] + "84 82 33 00 10 C3 1F 8A 60 5E 92 47 B8 0D E6 39 A4 71 F2 8C 55".split(separator: " ").map(String.init),
             expected: ["secbridge", "send", "84", "82", "33", "00", "10", "[REDACTED 16]"]),
        Case(id: "a password: NTAG PWD_AUTH inside InCommunicateThru",
             arguments: ["secbridge", "send", "FF 00 00 00 07 D4 42 1B 5A 6B 7C 8D"],
             expected: ["secbridge", "send", "FF 00 00 00 07 D4 42 1B [REDACTED 4]"]),
        Case(id: "nothing secret: a SELECT by words and a reader name with digits",
             arguments: ["secbridge", "send", "--reader", "ACS ACR122U PICC Interface 00 00", "00", "A4", "04", "00", "07", "D2", "76", "00", "00", "85", "01", "01", "00"],
             expected: ["secbridge", "send", "--reader", "ACS ACR122U PICC Interface 00 00", "00", "A4", "04", "00", "07", "D2", "76", "00", "00", "85", "01", "01", "00"]),
        Case(id: "nothing secret: a script file's name",
             arguments: ["scriptor", "verify-pin.apdu"], expected: ["scriptor", "verify-pin.apdu"]),
    ]

    @Test("APDUs in a command line, each way a program takes them", arguments: cases)
    func redaction(_ c: Case) {
        let redacted = CommandLineRedaction.redact(arguments: c.arguments)
        #expect(redacted == c.expected)
        #expect(CommandLineRedaction.redact(arguments: c.arguments, redactor: .disabled) == c.arguments)
    }

    /// The same in the header's `source` line, which `transcript redact` masks again: the result
    /// holds no byte of the PIN in any form (SecretScan).
    @Test("a header's source line holds no PIN byte in any form")
    func headerSource() {
        let line = "secbridge capture -- secbridge send --reader 00 00 " + Self.verifyWords.joined(separator: " ")
        let redacted = CommandLineRedaction.redact(commandLine: line)
        #expect(redacted == "secbridge capture -- secbridge send --reader 00 00 00 20 00 80 08 [REDACTED 8]")
        #expect(SecretScan([("PIN", [0x31, 0x32, 0x33, 0x34, 0xFF, 0xFF, 0xFF, 0xFF])]).leaks(in: redacted, what: "source").isEmpty)
    }

    /// A hex run longer than ``CommandLineRedaction/longestRun`` bytes is masked whole, in bounded work.
    @Test func anOverlongRunIsMaskedWhole() {
        let blob = String(repeating: "00 ", count: CommandLineRedaction.longestRun + 1) + "00"
        #expect(CommandLineRedaction.redact(arguments: ["tool", blob]) == ["tool", "[REDACTED \(CommandLineRedaction.longestRun + 2)]"])
    }
}
