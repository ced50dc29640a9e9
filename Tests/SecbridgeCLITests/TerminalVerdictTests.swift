import ISO7816
import NFCTags
import SecbridgeTesting
import SecureElementCredential
import Testing
@testable import SecbridgeTools

/// emulate's read accounting (`TerminalVerdict`) for a READ BINARY answered `61 XX`: the
/// emulation splits an answer longer than one TgSetData frame into 250 bytes + `61 XX`, and a
/// terminal that follows it with GET RESPONSE (ISO/IEC 7816-4 §5.1.3) to the final 90 00 has read
/// those bytes (issue 34 item 4).
@Suite struct TerminalVerdictTests {
    /// A tag built past the loader (MLe FF), its NDEF file of NLEN + a 302-byte message.
    static func bigTag() throws -> (Credential, [UInt8]) {
        let message = try NDEFMessage(records: [NDEFRecord(tnf: .mimeMedia, type: Array("x/y".utf8), payload: [UInt8](repeating: 0x41, count: 293))])
        let cc = try Type4CapabilityContainer(mle: 0xFF, maximumNDEFFileSize: 600, readOnly: true)
        let tag = try Type4TagApplet(message: message, capabilityContainer: cc)
        let credential = Credential(id: "big", secureElement: HostSecureElement(applets: [tag]))
        return (credential, tag.ndefFileContents)
    }

    /// Android's detection, NLEN, then the message from offset 2 with Le FF: 250 bytes + `61 05`.
    static func detectionAndFirstChunk(_ file: [UInt8]) -> [(command: [UInt8], response: [UInt8])] {
        [
            (hex("00 A4 04 00 07 D2 76 00 00 85 01 01 00"), hex("90 00")),
            (hex("00 A4 00 0C 02 E1 03"), hex("90 00")),
            (hex("00 B0 00 00 0F"), hex("00 0F 20 00 FF 00 7F 04 06 E1 04 02 58 00 FF 90 00")),
            (hex("00 A4 00 0C 02 E1 04"), hex("90 00")),
            (hex("00 B0 00 00 02"), Array(file[0..<2]) + [0x90, 0x00]),
            (hex("00 B0 00 02 FF"), Array(file[2..<252]) + [0x61, 0x05]),
        ]
    }

    @Test func aReadThatFollows61XXWithGetResponseToTheEndIsReadToTheEnd() async throws {
        let (credential, file) = try Self.bigTag()
        #expect(file[0..<2] == [0x01, 0x2E])  // NLEN 302: the file's first 304 bytes are read
        let exchanges = Self.detectionAndFirstChunk(file) + [
            (hex("00 C0 00 00 05"), Array(file[252..<257]) + [0x90, 0x00]),
            (hex("00 B0 01 01 2F"), Array(file[257..<304]) + [0x90, 0x00]),
        ]
        let verdict = await TerminalVerdict.evaluate(exchanges, credential: credential)
        #expect(verdict.line == "terminal: 8 APDUs; the NDEF file was read to the end (NLEN 302, 304 bytes)")
        #expect(verdict.succeeded)
        #expect(TerminalVerdict.readToTheEndOrWritten(exchanges, credential: credential))
    }

    /// GET RESPONSE in two steps (`61 02` in between) counts as well.
    @Test func aGetResponseChainOfTwoStepsCounts() async throws {
        let (credential, file) = try Self.bigTag()
        let exchanges = Self.detectionAndFirstChunk(file) + [
            (hex("00 C0 00 00 03"), Array(file[252..<255]) + [0x61, 0x02]),
            (hex("00 C0 00 00 02"), Array(file[255..<257]) + [0x90, 0x00]),
            (hex("00 B0 01 01 2F"), Array(file[257..<304]) + [0x90, 0x00]),
        ]
        #expect(await TerminalVerdict.evaluate(exchanges, credential: credential).succeeded)
    }

    /// A terminal that stops at `61 05`, or leaves the GET RESPONSE chain before its 90 00, has
    /// not read those bytes: NOT read to the end, as a phone that gives up there.
    @Test func aChainLeftBefore9000CountsForNothing() async throws {
        let (credential, file) = try Self.bigTag()
        let stopped = Self.detectionAndFirstChunk(file)
        let verdict = await TerminalVerdict.evaluate(stopped, credential: credential)
        #expect(!verdict.succeeded)
        #expect(verdict.line.hasPrefix("terminal: 6 APDUs; the NDEF file was NOT read to the end: the terminal stopped after 00 B0 00 02 FF → "))
        #expect(verdict.line.hasSuffix(" 61 05"), "\(verdict.line)")
        let leftChain = stopped + [
            (hex("00 C0 00 00 03"), Array(file[252..<255]) + [0x61, 0x02]),
            (hex("00 B0 01 01 2F"), Array(file[257..<304]) + [0x90, 0x00]),
        ]
        #expect(!TerminalVerdict.readToTheEndOrWritten(leftChain, credential: credential))
    }
}

/// The verdict for a credential that is no Type 4 Tag (issue 34 item 4): the terminal's last
/// answer decides, as the host sees no more of its outcome.
extension TerminalVerdictTests {
    static func doorBadge() throws -> Credential {
        try CredentialFile(contentsOfFile: EmulationExitTests.credential("door-badge-auth.json")).makeCredential()
    }

    @Test func aDeclarativeCredentialWhoseTerminalEndsOn9000Succeeded() async throws {
        let exchanges = [
            (hex("00 A4 04 00 07 F0 53 42 41 44 47 45 00"), hex("6F 09 84 07 F0 53 42 41 44 47 45 90 00")),
            (hex("00 82 00 00 08 4B 78 69 1E 0F 3C 2D D2"), hex("90 00")),
        ]
        let verdict = await TerminalVerdict.evaluate(exchanges, credential: try Self.doorBadge())
        #expect(verdict.line == "terminal: 2 APDUs")
        #expect(verdict.succeeded)
    }

    /// EXTERNAL AUTHENTICATE refused (63 00, ISO/IEC 7816-4: a warning, "no information given")
    /// and a SELECT of an absent application (6A 82): failed, the answer named.
    @Test(arguments: [
        ("00 82 00 00 08 01 02 03 04 05 06 07 08", "63 00", "terminal: 2 APDUs; the terminal stopped after 00 82 00 00 08 [REDACTED 8] → 63 00 (warning processing: "),
        ("00 A4 04 00 07 F0 00 00 00 09 09 09 00", "6A 82", "terminal: 2 APDUs; the terminal stopped after 00 A4 04 00 07 F0 00 00 00 09 09 09 00 → 6A 82 (checking error: "),
    ])
    func aDeclarativeCredentialWhoseTerminalEndsOnAnErrorFailed(_ command: String, _ response: String, _ line: String) async throws {
        let exchanges = [
            (hex("00 A4 04 00 07 F0 53 42 41 44 47 45 00"), hex("6F 09 84 07 F0 53 42 41 44 47 45 90 00")),
            (hex(command), hex(response)),
        ]
        let verdict = await TerminalVerdict.evaluate(exchanges, credential: try Self.doorBadge())
        #expect(verdict.line.hasPrefix(line), "\(verdict.line)")
        #expect(!verdict.succeeded)
    }
}
