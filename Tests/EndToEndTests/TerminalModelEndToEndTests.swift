import Foundation
import ISO7816
import NFCTags
import PCSCSandbox
import SecureElementCredential
import SecbridgeTesting
import Testing

// The terminal models (docs/terminal-models.md) against `secbridge emulate` on reader A, through
// the shared private pcscd and the simulated ACR122U pair.

/// The NDEF message a credential file's Type 4 Tag holds, serialized.
private func storedMessage(_ path: String) throws -> [UInt8] {
    let credential = try CredentialFile(contentsOfFile: try repositoryPath(path)).makeCredential()
    let tag = try #require((credential.secureElement as? HostSecureElement)?.applets.compactMap { $0 as? Type4TagApplet }.first)
    return try #require(try tag.currentMessage()).serialized()
}

/// Every credential of Fixtures/credentials holding an NFC Forum Type 4 Tag (applet `ndef-tag`).
private let ndefTagCredentials = ["Fixtures/credentials/text-tag.json", "Fixtures/credentials/uri-tag.json", "Fixtures/credentials/worked-example-tag.json"]

extension SharedReader {
    @Suite struct TerminalModelEndToEndTests {
        @Test func everyNDEFTagFixtureIsListed() throws {
            let directory = try repositoryPath("Fixtures/credentials")
            let holding = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".json") }.sorted()
                .filter { try String(contentsOfFile: directory + "/" + $0, encoding: .utf8).contains("\"ndef-tag\"") }
            #expect(holding.map { "Fixtures/credentials/" + $0 } == ndefTagCredentials)
        }

        /// The Android and iOS models read each NDEF tag fixture to the end; the message they
        /// decoded equals the credential's records; emulate says so and exits 0.
        @Test(arguments: ndefTagCredentials, ["android-t4t-read", "android11-t4t-read", "ios-t4t-read"])
        func modelsReadEveryNDEFTagFixture(_ credential: String, _ script: String) async throws {
            let environment = try await resetSimulatedReaders()
            try SimulatedReaders.controlA.send(.placeTerminal(script: "\(script)", id: "phone"))
            let emulation = try await startEmulation(environment, credential: credential)
            let result = try await emulation.finish()
            #expect(result.status == 0, "\(result.err)\n\(result.out)")
            #expect(result.out.contains("; the NDEF file was read to the end (NLEN "), "\(result.out)")
            let reply = try await terminalResult("phone")
            #expect(reply["result"] == "passed", "\(reply)")
            #expect(reply["ndef"] == (try storedMessage(credential)).hexString, "\(reply)")
        }

        /// A tag whose CC names the reserved file id E102: Android reads the CC and stops there
        /// (rw_t4t_validate_cc_file); emulate names the step and the reason and exits 1. (--once:
        /// by default the target would be armed again for another phone until the window ends.)
        @Test func androidRefusesAReservedFileIDAndEmulateExitsOne() async throws {
            let environment = try await resetSimulatedReaders()
            try SimulatedReaders.controlA.send(.placeTerminal(id: "phone"))
            let record = FileManager.default.temporaryDirectory.appendingPathComponent("terminals-\(getpid())-refused.trn").path
            defer { try? FileManager.default.removeItem(atPath: record) }
            let emulation = try await startEmulation(environment, credential: "Fixtures/credentials/refused/reserved-file-id.json", extra: ["--once", "--record", record])
            let result = try await emulation.finish()
            #expect(result.status == 1, "\(result.err)\n\(result.out)")
            // The verdict is in the transcript too.
            let transcript = try String(contentsOfFile: record, encoding: .utf8)
            #expect(transcript.contains("terminal: 3 APDUs; the NDEF file was NOT read to the end"), "\(transcript)")
            #expect(transcript.contains("Android (android-15.0.0_r23 rules) refuses this tag at capability container check"), "\(transcript)")
            let reply = try await terminalResult("phone")
            #expect(reply["result"] == "failed", "\(reply)")
            #expect(reply["stage"] == "capability container check", "\(reply)")
            #expect(reply["step"] == "2", "\(reply)")
            #expect(reply["reason"]?.hasPrefix("NDEF file id E102 is reserved") == true, "\(reply)")
            #expect(result.out.contains("terminal: 3 APDUs; the NDEF file was NOT read to the end: the terminal stopped after 00 B0 00 00 0F"), "\(result.out)")
            #expect(result.out.contains("Android (android-15.0.0_r23 rules) refuses this tag at capability container check: NDEF file id E102 is reserved"), "\(result.out)")
            // The simulated terminal's own verdict, from the simulator's control socket.
            #expect(result.out.contains(
                "  simulated external terminal (Android Type 4 Tag read (android-15.0.0_r23)) [phone]: failed at capability container check, exchange 2: NDEF file id E102 is reserved"),
                "\(result.out)")
        }

        /// libnfc's capability container (maximum NDEF size FFFE): the android-15 model refuses
        /// it, the android-11 model reads it (docs/terminal-models.md §1). (--once: emulate ends
        /// after the refusal instead of waiting out the window for another phone.)
        @Test(arguments: [("android-t4t-read", "failed"), ("android11-t4t-read", "passed")])
        func libnfcsCapabilityContainer(_ script: String, _ expected: String) async throws {
            let environment = try await resetSimulatedReaders()
            try SimulatedReaders.controlA.send(.placeTerminal(script: "\(script)", id: "phone"))
            let emulation = try await startEmulation(environment, credential: "Fixtures/credentials/refused/libnfc-forum-tag4-cc.json", extra: ["--once"])
            let result = try await emulation.finish()
            #expect(result.status == (expected == "passed" ? 0 : 1), "\(result.err)\n\(result.out)")
            let reply = try await terminalResult("phone")
            #expect(reply["result"] == expected, "\(reply)")
            if expected == "failed" {
                #expect(reply["reason"]?.hasPrefix("maximum NDEF size FFFE is outside 0005…7FFF") == true, "\(reply)")
            }
        }
    }
}

extension SharedReader.TerminalModelEndToEndTests {
    /// The payment terminal against payment-test-card.json: the credit AID (priority 1) over the
    /// debit one (priority 2), GPO with the PDOL data, the AFL's three records.
    @Test func paymentTerminalCompletesAgainstTheTestCard() async throws {
        let environment = try await resetSimulatedReaders()
        try SimulatedReaders.controlA.send(.placeTerminal(script: "emv-payment", id: "pos"))
        let emulation = try await startEmulation(environment, credential: "Fixtures/credentials/payment-test-card.json")
        let result = try await emulation.finish()
        #expect(result.status == 0, "\(result.err)\n\(result.out)")
        let reply = try await terminalResult("pos")
        #expect(reply["result"] == "passed", "\(reply)")
        #expect(reply["read"] == "payment application F0 00 00 00 01 10 10: 3 record(s) read", "\(reply)")
        #expect(reply["items"]?.hasPrefix("AID F0 00 00 00 01 10 10 (TEST CREDIT), priority 1 of 2 in the PPSE; AIP 19 80, AFL 08 01 01 00 10 01 02 00") == true, "\(reply)")
        #expect(result.out.contains("  terminal > 80 A8 00 00 12 83 10 36 00 40 00 00 00 00 00 01 00 11 22 33 44 09 78 00\n"), "\(result.out)")
        #expect(result.out.contains("terminal: 6 APDUs\n"), "\(result.out)")
    }

    /// The access-control reader, which parses the FCI as BER-TLV: granted by both access
    /// examples (docs/terminal-models.md §4 names access-badge.json; issue 30 item 3, issue 34).
    @Test(arguments: [("Fixtures/credentials/door-badge-auth.json", "passed"), ("Fixtures/credentials/access-badge.json", "passed")])
    func accessControlReader(_ credential: String, _ expected: String) async throws {
        let environment = try await resetSimulatedReaders()
        try SimulatedReaders.controlA.send(.placeTerminal(script: "access-control", id: "door"))
        let emulation = try await startEmulation(environment, credential: credential)
        let result = try await emulation.finish()
        // A declarative applet cannot tell a refusal itself: the simulated terminal's verdict decides.
        #expect(result.status == (expected == "passed" ? 0 : 1), "\(result.err)\n\(result.out)")
        #expect(result.out.contains("simulated external terminal (access-control reader) [door]: \(expected)"), "\(result.out)")
        let reply = try await terminalResult("door")
        #expect(reply["result"] == expected, "\(reply)")
        if expected == "passed" {
            #expect(reply["items"]?.hasSuffix("access granted") == true, "\(reply)")
        } else {
            #expect(reply["stage"] == "INTERNAL AUTHENTICATE", "\(reply)")
            #expect(reply["reason"]?.hasPrefix("SW 6D 00") == true, "\(reply)")
        }
    }
}

extension SharedReader.TerminalModelEndToEndTests {
    /// Android writing an NDEF message: text-tag.json is writable, so the write completes and
    /// emulate says the terminal wrote the file; uri-tag.json is read-only (write access FF), so
    /// the model stops after NLEN, as RW_T4tUpdateNDef refuses it (--once: emulate ends then,
    /// instead of waiting out the window for another phone).
    @Test(arguments: [("Fixtures/credentials/text-tag.json", "passed"), ("Fixtures/credentials/uri-tag.json", "failed")])
    func androidWritesAWritableTag(_ credential: String, _ expected: String) async throws {
        let environment = try await resetSimulatedReaders()
        try SimulatedReaders.controlA.send(.placeTerminal(script: "android-t4t-write", id: "writer"))
        let emulation = try await startEmulation(environment, credential: credential, extra: ["--once"])
        let result = try await emulation.finish()
        let reply = try await terminalResult("writer")
        #expect(reply["result"] == expected, "\(reply)")
        if expected == "passed" {
            #expect(result.status == 0, "\(result.err)\n\(result.out)")
            #expect(reply["read"] == "wrote NDEF message, 1 record: URI https://example.org/written", "\(reply)")
            #expect(result.out.contains("terminal: 8 APDUs; the terminal wrote the NDEF file (NLEN now 24)"), "\(result.out)")
        } else {
            #expect(result.status == 1, "\(result.err)\n\(result.out)")
            #expect(reply["reason"] == "the NDEF file is read-only (write access FF)", "\(reply)")
        }
    }
}
