import Testing

@testable import SecbridgeCLI
@testable import SecbridgeTools

/// `secbridge simulate --tag … --tag-type …`: the control request it sends, and what it refuses
/// before any pcscd starts (NXP NTAG213/215/216 data sheet: 7-byte UID, data areas 144/496/872
/// bytes; MIFARE Ultralight 48; MIFARE Classic: 4- or 7-byte UID).
@Suite struct SimulateTagOptionTests {
    func line(_ arguments: [String]) throws(CLIError) -> String? {
        try SecbridgeCLI.simulatedTagLine(try parseArguments(arguments, options: SecbridgeCLI.simulateCommand.options))
    }

    @Test func requestsAreNormalized() throws {
        #expect(try line(["--tag", "04 a1 b2 c3"]) == "place-tag uid=04A1B2C3 id=tag")
        // https://example.com as one URI record: D1 01 0C 55 04 "example.com" (docs/iso14443-t4t-ndef.md §5).
        #expect(try line(["--tag", "0x04A1B2C3D4E5F6", "--tag-type", "ntag213", "--tag-uri", "https://example.com"])
            == "place-tag uid=04A1B2C3D4E5F6 id=tag type=ntag213 ndef=D1010C55046578616D706C652E636F6D")
        #expect(try line(["--tag", "04A1B2C3", "--tag-type", "classic1k", "--tag-key", "0xA0A1A2A3A4A5"])
            == "place-tag uid=04A1B2C3 id=tag type=classic1k key=A0A1A2A3A4A5")
        #expect(try line([]) == nil)
    }

    struct Refusal: Sendable, CustomTestStringConvertible {
        var arguments: [String]
        var message: String
        var testDescription: String { arguments.joined(separator: " ") }
    }

    static let refusals: [Refusal] = [
        Refusal(arguments: ["--tag", "04A1B2C3", "--tag-type", "ntag213"], message: "a Type 2 tag needs a 7-byte UID, got 4 bytes"),
        Refusal(arguments: ["--tag", "04A1B2C3D4E5F6A1B2C3", "--tag-type", "classic1k"], message: "needs a 4- or 7-byte UID, got 10 bytes"),
        Refusal(arguments: ["--tag", "04A1B2C3D4E5F6", "--tag-type", "ultralight", "--tag-text", String(repeating: "e", count: 60)],
                message: "does not fit the 48-byte data area"),
        Refusal(arguments: ["--tag", "04A1B2C3D4E5F6", "--tag-type", "ntag213", "--tag-key", "FFFFFFFFFFFF"], message: "--tag-key is for a MIFARE Classic tag"),
        Refusal(arguments: ["--tag", "04A1B2C3", "--tag-type", "classic1k", "--tag-uri", "https://example.com"], message: "--tag-uri is for a Type 2 tag"),
        Refusal(arguments: ["--tag", "04A1B2C3", "--tag-type", "classic1k", "--tag-key", "A0A1A2A3A4"], message: "--tag-key takes 6 bytes"),
        Refusal(arguments: ["--tag", "04A1B2C3", "--tag-type", "NTAG213"], message: "unknown --tag-type 'NTAG213'"),
        Refusal(arguments: ["--tag-type", "ntag213"], message: "add --tag"),
        Refusal(arguments: ["--tag", "04A1B2C3D4E5F6", "--tag-type", "ntag213", "--tag-uri", ""], message: "--tag-uri is empty"),
        Refusal(arguments: ["--tag", "04A1B2C3D4E5F6", "--tag-type", "ntag213", "--tag-text", "a\nb"], message: "--tag-text contains a control character (U+000A)"),
    ]

    @Test(arguments: refusals) func refused(_ refusal: Refusal) {
        #expect(throws: CLIError.self) { try line(refusal.arguments) }
        do {
            _ = try line(refusal.arguments)
        } catch {
            guard case .usage(let message) = error else { Issue.record("not a usage error: \(error)"); return }
            #expect(message.contains(refusal.message), "\(message)")
            #expect(!message.contains("A0A1A2A3A4"), "a key is never repeated")
        }
    }
}
