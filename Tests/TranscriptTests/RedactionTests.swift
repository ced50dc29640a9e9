import SecbridgeTesting
import Testing
@testable import Transcript

@Suite("Redaction of secrets")
struct RedactionTests {
    struct Vector: Sendable, CustomStringConvertible {
        var id: String
        var source: String
        var command: String
        var expected: String
        var description: String { id }
    }

    static let vectors: [Vector] = [
        Vector(id: "VERIFY PIN block", source: "ISO/IEC 7816-4 §11.5 VERIFY, made-up PIN 123456 padded with FF",
               command: "00 20 00 81 08 31 32 33 34 35 36 FF FF", expected: "00 20 00 81 08 [REDACTED 8]"),
        Vector(id: "VERIFY under secure messaging (CLA 0C)", source: "ISO/IEC 7816-4 §5.4.1 CLA bits b4-b3 = 11",
               command: "0C 20 00 81 04 11 22 33 44 00", expected: "0C 20 00 81 04 [REDACTED 4] 00"),
        Vector(id: "VERIFY on logical channel 1 with chaining bit", source: "ISO/IEC 7816-4 §5.4.1 CLA 11",
               command: "11 20 00 81 02 31 32", expected: "11 20 00 81 02 [REDACTED 2]"),
        Vector(id: "VERIFY odd INS 21 (BER-TLV data)", source: "ISO/IEC 7816-4 §11.5",
               command: "00 21 00 81 04 5F 2E 01 31", expected: "00 21 00 81 04 [REDACTED 4]"),
        Vector(id: "VERIFY extended Lc", source: "ISO/IEC 7816-4 §5.1 extended length, made-up PIN",
               command: "00 20 00 81 00 00 06 31 32 33 34 35 36", expected: "00 20 00 81 00 00 06 [REDACTED 6]"),
        Vector(id: "VERIFY status query (case 1) has no data", source: "ISO/IEC 7816-4 §11.5: empty VERIFY asks the retry counter",
               command: "00 20 00 81", expected: "00 20 00 81"),
        Vector(id: "VERIFY with Lc larger than the data", source: "malformed: a secret still",
               command: "00 20 00 81 08 31 32", expected: "00 20 00 81 08 [REDACTED 2]"),
        Vector(id: "CHANGE REFERENCE DATA old and new PIN", source: "ISO/IEC 7816-4 §11.5, OpenPGP card PW1 change",
               command: "00 24 00 81 0C 31 32 33 34 35 36 36 35 34 33 32 31", expected: "00 24 00 81 0C [REDACTED 12]"),
        Vector(id: "RESET RETRY COUNTER PUK and new PIN", source: "ISO/IEC 7816-4 §11.5, PIV P1 00 P2 80",
               command: "00 2C 00 80 10 31 32 33 34 35 36 37 38 31 32 33 34 FF FF FF FF",
               expected: "00 2C 00 80 10 [REDACTED 16]"),
        Vector(id: "PUT KEY with Le", source: "GlobalPlatform Card Specification §11.8, CLA 84 (secure channel)",
               command: "84 D8 01 81 0B 01 80 08 11 22 33 44 55 66 77 88 00", expected: "84 D8 01 81 0B [REDACTED 11] 00"),
        Vector(id: "EXTERNAL AUTHENTICATE host cryptogram and MAC", source: "GlobalPlatform SCP02, CLA 84, security level 33",
               command: "84 82 33 00 10 01 02 03 04 05 06 07 08 A1 A2 A3 A4 A5 A6 A7 A8",
               expected: "84 82 33 00 10 [REDACTED 16]"),
        Vector(id: "MUTUAL AUTHENTICATE with Le", source: "ISO/IEC 7816-4 §11.5, e.g. BAC: 32 bytes plus Le",
               command: "00 82 00 00 20 " + Array(repeating: "5A", count: 32).joined(separator: " ") + " 28",
               expected: "00 82 00 00 20 [REDACTED 32] 28"),
        Vector(id: "ACR122U LOAD KEY", source: "ACR122U API v2.04, Load Authentication Keys: FF 82 00 slot 06 key",
               command: "FF 82 00 00 06 FF FF FF FF FF FF", expected: "FF 82 00 00 06 [REDACTED 6]"),
        Vector(id: "P08 PN532 MIFARE authentication key A", source: "docs/cases.md P08 (nfc-pcsc issue 59)",
               command: "FF 00 00 00 0F D4 40 01 60 00 A0 A1 A2 A3 A4 A5 01 02 03 04",
               expected: "FF 00 00 00 0F D4 40 01 60 00 [REDACTED 6] 01 02 03 04"),
        Vector(id: "PN532 MIFARE authentication key B, block 7", source: "PN532 UM0701-02 §7.3.8, made-up key and UID",
               command: "FF 00 00 00 0F D4 40 01 61 07 B0 B1 B2 B3 B4 B5 08 00 B0 0B",
               expected: "FF 00 00 00 0F D4 40 01 61 07 [REDACTED 6] 08 00 B0 0B"),
        Vector(id: "PN532 MIFARE READ is not a secret", source: "PN532 UM0701-02 §7.3.8, MIFARE READ 30",
               command: "FF 00 00 00 05 D4 40 01 30 04", expected: "FF 00 00 00 05 D4 40 01 30 04"),
        Vector(id: "SELECT is not a secret", source: "docs/cases.md P14",
               command: "00 A4 04 00 06 D2 76 00 01 24 01 00", expected: "00 A4 04 00 06 D2 76 00 01 24 01 00"),
        Vector(id: "GET CHALLENGE is not a secret", source: "ISO/IEC 7816-4 §11.5 GET CHALLENGE (INS 84)",
               command: "00 84 00 00 08", expected: "00 84 00 00 08"),
        Vector(id: "reader pseudo-APDU with INS 20 is not VERIFY", source: "CLA FF is the reader class, ACR122U API v2.04",
               command: "FF 20 00 00 02 12 34", expected: "FF 20 00 00 02 12 34"),
        Vector(id: "firmware version pseudo-APDU", source: "ACR122U API v2.04",
               command: "FF 00 48 00 00", expected: "FF 00 48 00 00"),
    ]

    @Test("default policy, byte-exact output", arguments: vectors)
    func defaultPolicy(_ v: Vector) {
        let redacted = Redactor.default.redact(hex(v.command))
        #expect(redacted.description == v.expected, "\(v.source)")
        #expect(redacted.count == hex(v.command).count, "the mark keeps the length")
        // The redacted form still matches the real command, so a simulated replay accepts it.
        #expect(redacted.matches(hex(v.command)))
    }

    @Test("disabled policy keeps every byte")
    func disabled() {
        let pin = hex("00 20 00 81 08 31 32 33 34 35 36 FF FF")
        #expect(Redactor.disabled.redact(pin) == TranscriptBytes(pin))
    }

    @Test("a custom rule set: only LOAD KEY")
    func customRules() {
        let r = Redactor(rules: [.acr122LoadKey])
        #expect(r.redact(hex("00 20 00 81 02 31 32")).description == "00 20 00 81 02 31 32")
        #expect(r.redact(hex("FF 82 00 01 06 01 02 03 04 05 06")).description == "FF 82 00 01 06 [REDACTED 6]")
        let own = RedactionRule(id: "general-authenticate", summary: "GENERAL AUTHENTICATE data") { c in
            c.count > 5 && c[1] == 0x87 ? [5..<c.count] : []
        }
        #expect(Redactor(rules: [own]).redact(hex("00 87 07 9B 04 7C 02 81 00")).description == "00 87 07 9B 04 [REDACTED 4]")
    }

    @Test("command lines of every kind are redacted, answers are not")
    func recordKinds() {
        let pin = TranscriptBytes(hex("00 20 00 81 02 31 32"))
        let r = Redactor.default
        #expect(r.redact(TranscriptRecord(.transmit(.outgoing, pin))).entry.payload?.description == "00 20 00 81 02 [REDACTED 2]")
        #expect(r.redact(TranscriptRecord(.target(.incoming, pin))).entry.payload?.description == "00 20 00 81 02 [REDACTED 2]")
        #expect(r.redact(TranscriptRecord(.initiator(.outgoing, pin))).entry.payload?.description == "00 20 00 81 02 [REDACTED 2]")
        let loadKey = TranscriptBytes(hex("FF 82 00 00 06 FF FF FF FF FF FF"))
        #expect(r.redact(TranscriptRecord(.control(code: 0x4200_0001, .outgoing, loadKey))).entry.payload?.description == "FF 82 00 00 06 [REDACTED 6]")
        // An answer that happens to look like a VERIFY stays as it is.
        #expect(r.redact(TranscriptRecord(.transmit(.incoming, pin))).entry.payload == pin)
        #expect(r.redact(TranscriptRecord(.target(.outgoing, pin))).entry.payload == pin)
    }

    @Test("redacting a whole transcript (after an import)")
    func wholeTranscript() throws {
        let text = versionLine + "> 00 20 00 81 02 31 32 ; PIN\n< 90 00\n"
        let t = Redactor.default.redact(try Transcript(parsing: text, fileName: "import"))
        #expect(t.serialized() == versionLine + "> 00 20 00 81 02 [REDACTED 2] ; PIN\n< 90 00\n")
    }
}
