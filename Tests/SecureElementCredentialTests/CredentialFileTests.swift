import Foundation
import ISO7816
import SecbridgeTesting
import Testing
@testable import SecureElementCredential

/// Fixtures/credentials in this checkout.
let credentialsDirectory = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("Fixtures/credentials").path

/// The error `CredentialFile(json:)` throws for `json`; nil, with an issue recorded, when it
/// accepts the file.
private func refusal(_ json: String, sourceLocation: SourceLocation = #_sourceLocation) -> CredentialFileError? {
    do {
        _ = try CredentialFile(json: Array(json.utf8))
        Issue.record("accepted: \(json)", sourceLocation: sourceLocation)
        return nil
    } catch {
        return error
    }
}

@Suite("Credential files (Fixtures/credentials/README.md)")
struct CredentialFileTests {
    @Test("uri-tag.json serves the full URI read of docs/iso14443-t4t-ndef.md §4 (read-only CC ends 04 00 00 FF)")
    func uriTag() async throws {
        let file = try CredentialFile(contentsOfFile: credentialsDirectory + "/uri-tag.json")
        #expect(file.id == "example-uri-tag")
        #expect(file.emulation.uid.bytes == hex("08 00 B0 0B"))
        let element = try file.makeCredential().secureElement
        for (command, response) in type4FullURIRead {
            let expected = command == hex("00 B0 00 00 0F") ? hex("00 0F 20 00 7F 00 7F 04 06 E1 04 04 00 00 FF 90 00") : response
            #expect(try await element.transceive(command) == expected)
        }
    }

    @Test("text-tag.json holds \"Hello\" (en) in a writable 256-byte NDEF file")
    func textTag() async throws {
        let element = try CredentialFile(contentsOfFile: credentialsDirectory + "/text-tag.json").makeCredential().secureElement
        _ = try await element.transceive(hex("00 A4 04 00 07 D2 76 00 00 85 01 01 00"))
        _ = try await element.transceive(hex("00 A4 00 0C 02 E1 03"))
        #expect(try await element.transceive(hex("00 B0 00 00 0F")).hexString == "00 0F 20 00 7F 00 7F 04 06 E1 04 01 00 00 00 90 00")
        _ = try await element.transceive(hex("00 A4 00 0C 02 E1 04"))
        #expect(try await element.transceive(hex("00 B0 00 00 0E")).hexString == "00 0C D1 01 08 54 02 65 6E 48 65 6C 6C 6F 90 00")
        #expect(try await element.transceive(hex("00 D6 00 00 02 00 00")).hexString == "90 00")
    }

    @Test("access-badge.json: a declarative applet answers by rule", arguments: [
        ("00 A4 04 00 07 F0 53 42 41 44 47 45 00", "6F 09 84 07 F0 53 42 41 44 47 45 90 00"),
        // P2 0C: no response data (ISO/IEC 7816-4 §11.2.2), so no FCI; the SW stays.
        ("00 A4 04 0C 07 F0 53 42 41 44 47 45", "90 00"),
        ("00 A4 04 0C 07 F0 53 42 41 44 47 45 00", "90 00"),
        ("80 CA 00 42 00", "00 00 00 42 90 00"),
        ("80 CA 9F 7F 00", "9F 7F 04 01 02 03 04 90 00"),
        ("80 AA 00 00 08 01 02 03 04 05 06 07 08 00", "69 82"),
        // The rule gives 80 AA 00 00 with Lc 08 only: wrong length (ISO/IEC 7816-4 §5.6).
        ("80 AA 00 00 04 01 02 03 04", "67 00"),
        ("80 AB 00 00 04 01 02 03 04", "6D 00"),
    ])
    func accessBadge(_ command: String, _ response: String) async throws {
        let file = try CredentialFile(contentsOfFile: credentialsDirectory + "/access-badge.json")
        #expect(file.emulation.historicalBytes == hex("80 73 C0 21 C0"))
        let element = try file.makeCredential().secureElement
        if !command.hasPrefix("00 A4") { _ = try await element.transceive(hex("00 A4 04 00 07 F0 53 42 41 44 47 45 00")) }
        #expect(try await element.transceive(hex(command)).hexString == response)
    }

    /// GET CHALLENGE (ISO/IEC 7816-4 §11.5.3) answers fresh random bytes: access-badge.json
    /// declares `11 22 … 88 90 00` unpinned, so each answer is 8 new bytes + 90 00 (issue 34).
    @Test("access-badge.json's GET CHALLENGE is 8 random bytes + 90 00, new each time")
    func accessBadgeChallengeIsRandom() async throws {
        let element = try CredentialFile(contentsOfFile: credentialsDirectory + "/access-badge.json").makeCredential().secureElement
        _ = try await element.transceive(hex("00 A4 04 00 07 F0 53 42 41 44 47 45 00"))
        var answers: Set<[UInt8]> = []
        for _ in 0..<4 {
            let answer = try await element.transceive(hex("00 84 00 00 08"))
            #expect(answer.count == 10)
            #expect(answer.suffix(2) == [0x90, 0x00])
            #expect(answer != hex("11 22 33 44 55 66 77 88 90 00"))
            answers.insert(answer)
        }
        // Four 64-bit draws: a repeat would mean the bytes are not random.
        #expect(answers.count == 4, "\(answers)")
    }

    /// door-badge-auth.json pins its challenge (`"pinned": true`): its EXTERNAL AUTHENTICATE rule
    /// holds the cryptogram over exactly these bytes.
    @Test("door-badge-auth.json's pinned GET CHALLENGE answers the declared bytes every time")
    func doorBadgeChallengeIsPinned() async throws {
        let element = try CredentialFile(contentsOfFile: credentialsDirectory + "/door-badge-auth.json").makeCredential().secureElement
        _ = try await element.transceive(hex("00 A4 04 00 07 F0 53 42 41 44 47 45 00"))
        for _ in 0..<2 {
            #expect(try await element.transceive(hex("00 84 00 00 08")).hexString == "11 22 33 44 55 66 77 88 90 00")
        }
    }

    @Test("malformed files: a clear error naming the JSON path", arguments: [
        (#"{"secbridge-credential": 1, "applets": []}"#, CredentialFileError.Code.missingField, "$.id"),
        (#"{"secbridge-credential": 2, "id": "x", "applets": []}"#, .unsupportedVersion, "$.secbridge-credential"),
        (#"{"secbridge-credential": 1, "id": "x""#, .syntax, "$"),
        (#"{"secbridge-credential": 1, "id": "x", "applets": [{"type": "ndef-tag", "readOnly": "yes"}]}"#, .wrongType, "$.applets[0].readOnly"),
        (#"{"secbridge-credential": 1, "id": "x", "applets": [{"type": "ndef-tag", "recrods": []}]}"#, .unknownField, "$.applets[0].recrods"),
        (#"{"secbridge-credential": 1, "id": "x", "applets": [{"type": "ndef-tag", "records": [{"uri": "a"}, {"txt": "b"}]}]}"#, .unknownField, "$.applets[0].records[1].txt"),
        (#"{"secbridge-credential": 1, "id": "x", "applets": [{"type": "declarative", "aids": ["F0 01 02 03 04", "F0 01"]}]}"#, .invalidValue, "$.applets[0].aids[1]"),
        (#"{"secbridge-credential": 1, "id": "x", "applets": [{"type": "declarative", "aids": ["F0 01 02 03 04"], "rules": [{"command": "80 CA", "response": "9G 00"}]}]}"#, .invalidValue, "$.applets[0].rules[0].response"),
        (#"{"secbridge-credential": 1, "id": "x", "applets": [{"type": "applet"}]}"#, .invalidValue, "$.applets[0].type"),
        (#"{"secbridge-credential": 1, "id": "x", "applets": [{"type": "declarative", "aids": ["F0 01 02 03 04"], "rules": [{"command": "80 CA 00 42 00", "response": "00 42 90 00", "pinned": true}]}]}"#, .invalidValue, "$.applets[0].rules[0].pinned"),
        (#"{"secbridge-credential": 1, "id": "x", "applets": [{"type": "declarative", "aids": ["F0 01 02 03 04"], "rules": [{"command": "00 84 00 00 08", "response": "90 00", "pinned": "yes"}]}]}"#, .wrongType, "$.applets[0].rules[0].pinned"),
        (#"{"secbridge-credential": 1, "id": "x", "emulation": {"uid": "09 00 00 00"}, "applets": [{"type": "ndef-tag"}]}"#, .invalidValue, "$.emulation.uid"),
        (#"{"secbridge-credential": 1, "id": "x"}"#, .missingField, "$.applets"),
        (#"{"secbridge-credential": 1, "id": "x", "pcscCard": {}}"#, .missingField, "$.pcscCard.reader"),
    ])
    func malformed(_ json: String, _ code: CredentialFileError.Code, _ path: String) {
        if let error = refusal(json) {
            #expect(error.code == code, "\(error)")
            #expect(error.path == path, "\(error)")
            #expect(!error.reason.isEmpty)
        }
    }

    /// A number that is not a whole number, or too large for one, is a mistake in that field, not
    /// in the JSON: the error names the field (it said "$: not valid JSON" for a valid file).
    @Test("a fractional or huge number names its field", arguments: [
        (#"{"secbridge-credential": 1, "id": "x", "emulation": {"timeLimitSeconds": 1.5}, "applets": [{"type": "ndef-tag"}]}"#, "$.emulation.timeLimitSeconds"),
        (#"{"secbridge-credential": 1, "id": "x", "applets": [{"type": "ndef-tag", "maxFileSize": 1e30}]}"#, "$.applets[0].maxFileSize"),
        (#"{"secbridge-credential": 1, "id": "x", "applets": [{"type": "ndef-tag", "records": [{"tnf": 0.5}]}]}"#, "$.applets[0].records[0].tnf"),
        (#"{"secbridge-credential": 1.5, "id": "x", "applets": [{"type": "ndef-tag"}]}"#, "$.secbridge-credential"),
    ])
    func fractionalNumber(_ json: String, _ path: String) {
        if let error = refusal(json) {
            #expect(error.code == .invalidValue, "\(error)")
            #expect(error.path == path, "\(error)")
            #expect(error.reason.contains("whole number"), "\(error)")
        }
    }

    /// Each field of the capability container is blamed for its own value (an MLe Android refuses
    /// was reported at maxFileSize), and a value that does not fit its two bytes is refused as
    /// given, never clamped to FFFF or 0000 (an MLe of 100000 was served as FFFF).
    @Test("a capability-container field Android refuses is named, with the value given", arguments: [
        (#"{"type": "ndef-tag", "mle": 5}"#, "$.applets[0].mle", "MLe is 5"),
        (#"{"type": "ndef-tag", "mlc": 0}"#, "$.applets[0].mlc", "MLc is 0"),
        (#"{"type": "ndef-tag", "fileID": "E1 03"}"#, "$.applets[0].fileID", "E103 is reserved"),
        (#"{"type": "ndef-tag", "mle": 100000}"#, "$.applets[0].mle", "100000"),
        (#"{"type": "ndef-tag", "mlc": -1}"#, "$.applets[0].mlc", "-1"),
        (#"{"type": "ndef-tag", "maxFileSize": 70000}"#, "$.applets[0].maxFileSize", "70000"),
        (#"{"type": "ndef-tag", "maxFileSize": 4}"#, "$.applets[0].maxFileSize", "0005 … 7FFF"),
    ])
    func capabilityContainerField(_ applet: String, _ path: String, _ reason: String) {
        let json = #"{"secbridge-credential": 1, "id": "x", "applets": ["# + applet + "]}"
        if let error = refusal(json) {
            #expect(error.code == .invalidValue, "\(error)")
            #expect(error.path == path, "\(error)")
            #expect(error.reason.contains(reason), "\(error)")
        }
    }

    /// A record is one of its four kinds, with that kind's fields only: a record giving "uri" and
    /// "text" was served as the URI alone, and a "language" beside a "uri" was dropped, silently.
    @Test("a record of two kinds, or with another kind's field, is refused", arguments: [
        (#"{"uri": "https://example.com", "text": "Hello"}"#, CredentialFileError.Code.invalidValue, "$.applets[0].records[0].text"),
        (#"{"mime": "text/plain", "tnf": 2}"#, .invalidValue, "$.applets[0].records[0].tnf"),
        (#"{"uri": "https://example.com", "language": "fr"}"#, .unknownField, "$.applets[0].records[0].language"),
        (#"{"text": "Hello", "payload": "00"}"#, .unknownField, "$.applets[0].records[0].payload"),
        (#"{"mime": "text/plain", "type": "55"}"#, .unknownField, "$.applets[0].records[0].type"),
    ])
    func recordOfTwoKinds(_ record: String, _ code: CredentialFileError.Code, _ path: String) throws {
        let json = #"{"secbridge-credential": 1, "id": "x", "applets": [{"type": "ndef-tag", "records": ["# + record + "]}]}"
        if let error = refusal(json) {
            #expect(error.code == code, "\(error)")
            #expect(error.path == path, "\(error)")
        }
        // One kind with its own fields still reads (the README's table).
        for good in [#"{"text": "Hello", "language": "en"}"#, #"{"mime": "text/plain", "payload": "68 69"}"#, #"{"tnf": 1, "type": "55", "id": "01", "payload": "00"}"#] {
            _ = try CredentialFile(json: Array(#"{"secbridge-credential": 1, "id": "x", "applets": [{"type": "ndef-tag", "records": ["#.utf8) + Array(good.utf8) + Array("]}]}".utf8))
        }
    }

    /// A directory given as a credential file says so (it said "no such file, or no permission").
    @Test("a directory is not a credential file, and the error says it is a directory")
    func directoryIsNotACredentialFile() {
        do {
            _ = try CredentialFile(contentsOfFile: credentialsDirectory)
            Issue.record("a directory was read as a credential file")
        } catch {
            #expect(error.code == .unreadable, "\(error)")
            #expect(error.reason.contains("is a directory"), "\(error)")
        }
        do {
            _ = try CredentialFile(contentsOfFile: credentialsDirectory + "/no-such-credential.json")
            Issue.record("a missing file was read")
        } catch {
            #expect(error.reason.hasSuffix(": no such file"), "\(error)")
        }
    }

    /// Two applets registering one AID: routing picks the first, so the second was silently never
    /// selected. Overlapping prefixes stay allowed.
    @Test("an AID two applets register is refused at the second", arguments: [
        (#"[{"type": "declarative", "aids": ["F0 01 02 03 04"]}, {"type": "declarative", "aids": ["F0 01 02 03 05", "F0 01 02 03 04"]}]"#, "$.applets[1].aids[1]"),
        (#"[{"type": "ndef-tag"}, {"type": "ndef-tag"}]"#, "$.applets[1].type"),
        (#"[{"type": "declarative", "aids": ["D2 76 00 00 85 01 01"]}, {"type": "ndef-tag"}]"#, "$.applets[1].type"),
    ])
    func repeatedAID(_ applets: String, _ path: String) throws {
        let json = #"{"secbridge-credential": 1, "id": "x", "applets": "# + applets + "}"
        if let error = refusal(json) {
            #expect(error.code == .invalidValue, "\(error)")
            #expect(error.path == path, "\(error)")
            #expect(error.reason.contains("is registered by applets[0] too"), "\(error)")
        }
        let prefixes = #"[{"type": "declarative", "aids": ["F0 01 02 03 04*"]}, {"type": "declarative", "aids": ["F0 01 02 03 04 05*", "F0 01 02 03 04 05"]}]"#
        _ = try CredentialFile(json: Array((#"{"secbridge-credential": 1, "id": "x", "applets": "# + prefixes + "}").utf8))
    }

    @Test("a transcript applet answers from a recorded transcript, in order")
    func transcriptApplet() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("secbridge-session-\(getpid())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let transcript = """
            # secbridge-transcript: 1
            # origin: recorded
            tgt < 00 A4 04 00 07 F0 00 00 00 01 02 03 00
            tgt > 90 00
            tgt < 80 10 00 00 00
            tgt > 01 90 00
            tgt < 80 10 00 00 00
            tgt > 02 90 00

            """
        try transcript.write(toFile: directory + "/counter.trn", atomically: true, encoding: .utf8)
        let json = #"{"secbridge-credential": 1, "id": "t", "applets": [{"type": "transcript", "file": "counter.trn"}]}"#
        let element = try CredentialFile(json: Array(json.utf8), baseDirectory: directory).makeCredential().secureElement
        #expect(try await element.transceive(hex("00 A4 04 00 07 F0 00 00 00 01 02 03 00")) == hex("90 00"))
        #expect(try await element.transceive(hex("80 10 00 00 00")) == hex("01 90 00"))
        #expect(try await element.transceive(hex("80 10 00 00 00")) == hex("02 90 00"))
        #expect(try await element.transceive(hex("80 20 00 00 00")) == hex("6D 00"))

        let missing = #"{"secbridge-credential": 1, "id": "t", "applets": [{"type": "transcript", "file": "absent.trn"}]}"#
        #expect(throws: CredentialFileError(.invalidValue, path: "$.applets[0].file", "")) {
            try CredentialFile(json: Array(missing.utf8), baseDirectory: directory).makeCredential()
        }
    }
}
