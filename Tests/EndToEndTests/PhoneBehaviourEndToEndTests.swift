import Foundation
import ISO7816
import PCSCSandbox
import SecbridgeCLI
import SecbridgeTesting
import SecbridgeTools
import Testing

// Phones around the APDUs (docs/terminal-models.md §6) against `secbridge emulate` on reader A,
// through the shared private pcscd and the simulated ACR122U pair.

private let workedExample = "Fixtures/credentials/worked-example-tag.json"

/// The worked example's message (one URI record, https://example.com), as `terminal-result` prints it.
private let workedExampleMessage = "D1 01 0C 55 04 65 78 61 6D 70 6C 65 2E 63 6F 6D"

/// `secbridge emulate` in this process (it talks to the shared pcscd) with the 60 s window scaled
/// by `timeScale` (0.05: 3 s), for runs that last the whole window (`--keep`).
private func emulateInProcess(_ environment: TestEnvironment, credential: String, extra: [String], timeScale: Double)
    async throws -> (status: Int32, out: String, err: String)
{
    let readerA = environment.simulatedReaderA
    let readerB = environment.simulatedReaderB
    let path = try repositoryPath(credential)
    try await blocking { try stopAutomaticPolling(on: readerB) }
    return try await blocking {
        let console = CapturingConsole(input: [])
        let status = SecbridgeTools.main(
            arguments: ["emulate", "--credential", path, "--yes", "--reader", readerA] + extra, console: console, timeScale: timeScale)
        return (status, console.standardOutput, console.standardError)
    }
}

extension SharedReader {
    @Suite struct PhoneBehaviourEndToEndTests {
        /// Android leaves after the first 127-byte chunk of a 410-byte message (field loss:
        /// TgGetData 29), comes back, and reads the file from the start; emulate re-arms, the
        /// second read completes, and the output and the transcript show both activations.
        @Test func aPhoneThatLeavesMidReadIsServedWhenItComesBack() async throws {
            let environment = try await resetSimulatedReaders()
            try SimulatedReaders.controlA.send(.placeTerminal(.init(leaveAfter: 6), id: "phone"))
            let directory = FileManager.default.temporaryDirectory
            let record = directory.appendingPathComponent("phones-\(getpid())-field-loss.trn").path
            let credential = directory.appendingPathComponent("phones-\(getpid())-long-text.json").path
            defer {
                try? FileManager.default.removeItem(atPath: record)
                try? FileManager.default.removeItem(atPath: credential)
            }
            // One text record of 400 characters: a 410-byte message, read in chunks of MLe 007F.
            try #"{"secbridge-credential": 1, "id": "long-text", "name": "Long text", "applets": [{"type": "ndef-tag", "readOnly": false, "maxFileSize": 1024, "records": [{"text": "\#(String(repeating: "0123456789", count: 40))", "language": "en"}]}]}"#
                .write(toFile: credential, atomically: true, encoding: .utf8)
            let readerB = environment.simulatedReaderB
            try await blocking { try stopAutomaticPolling(on: readerB) }
            let emulation = try BackgroundSecbridge(
                ["emulate", "--credential", credential, "--yes", "--reader", environment.simulatedReaderA, "--record", record],
                environment: environment.environmentForSubprocesses)
            let result = try await emulation.finish()
            #expect(result.status == 0, "\(result.err)\n\(result.out)")
            #expect(result.out.contains("event: fieldStateChanged(fieldAbsent: TgGetData: "), "\(result.out)")
            #expect(result.out.components(separatedBy: "fieldStateChanged(fieldPresent: TgInitAsTarget returned mode 08, initiator command E0 80)").count == 3,
                    "\(result.out)")
            #expect(result.out.contains("terminal: 15 APDUs; the NDEF file was read to the end (NLEN 410, 412 bytes)"), "\(result.out)")
            #expect(result.out.contains("  activation 1: 6 APDUs; stopped after 00 B0 00 02 7F → "), "\(result.out)")
            #expect(result.out.contains("  activation 2: 9 APDUs; the NDEF file was read to the end\n"), "\(result.out)")
            #expect(result.out.contains("    activation 1: left the field after exchange 6 (00 B0 00 02 7F → "), "\(result.out)")
            #expect(result.out.contains("    activation 2: passed: NDEF message, 1 record: "), "\(result.out)")
            let reply = try await terminalResult("phone")
            #expect(reply["result"] == "passed", "\(reply)")
            #expect(reply["activations"] == "2", "\(reply)")
            #expect(reply["ndef"]?.hasPrefix("C1 01 00 00 01 93 54 02 65 6E 30 31") == true, "\(reply)")
            let transcript = try String(contentsOfFile: record, encoding: .utf8)
            #expect(transcript.contains("activation 1: 6 APDUs; stopped after 00 B0 00 02 7F → "), "\(transcript)")
            #expect(transcript.contains("activation 2: passed: NDEF message, 1 record: "), "\(transcript)")
        }

        /// The same with --json: both activations are field events, and the terminal event's
        /// details list what each read.
        @Test func theFieldLossInJSON() async throws {
            let environment = try await resetSimulatedReaders()
            try SimulatedReaders.controlA.send(.placeTerminal(script: "ios-t4t-read", .init(leaveAfter: 9), id: "phone"))
            let emulation = try await startEmulation(environment, credential: workedExample, extra: ["--json"])
            let result = try await emulation.finish()
            #expect(result.status == 0, "\(result.err)\n\(result.out)")
            let events = result.out.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            let present = events.filter { $0["event"] as? String == "field" && $0["state"] as? String == "fieldPresent" }
            #expect(present.count == 2, "\(result.out)")
            let terminal = try #require(events.first { $0["event"] as? String == "terminal" })
            let details = terminal["details"] as? [String] ?? []
            #expect(details.contains("activation 1: 9 APDUs; stopped after 00 B0 00 00 10 → 00 10 D1 01 0C 55 04 65 78 61 6D 70 6C 65 2E 63 90 00"), "\(details)")
            #expect(details.contains("activation 2: 10 APDUs; the NDEF file was read to the end"), "\(details)")
            #expect(terminal["succeeded"] as? Bool == true)
            #expect(events.last?["event"] as? String == "end")
        }

        /// A slip during detection (issue 34): Android leaves after READ CC and is back 1 s later
        /// (simulated); with the default options emulate serves it and exits 0.
        @Test func aPhoneThatSlipsAfterReadCCIsServedWhenItComesBack() async throws {
            let environment = try await resetSimulatedReaders()
            try SimulatedReaders.controlA.send(.placeTerminal(.init(leaveAfter: 3, returnAfterMilliseconds: 1000), id: "phone"))
            let emulation = try await startEmulation(environment, credential: workedExample)
            let result = try await emulation.finish()
            #expect(result.status == 0, "\(result.err)\n\(result.out)")
            #expect(result.out.contains("terminal: 9 APDUs; the NDEF file was read to the end (NLEN 16, 18 bytes)\n"), "\(result.out)")
            #expect(result.out.contains("  activation 1: 3 APDUs; stopped after 00 B0 00 00 0F → 00 0F 20 00 7F 00 7F 04 06 E1 04 04 00 00 00 90 00\n"), "\(result.out)")
            let reply = try await terminalResult("phone")
            #expect(reply["result"] == "passed", "\(reply)")
            #expect(reply["activations"] == "2", "\(reply)")
            #expect(reply["ndef"] == workedExampleMessage, "\(reply)")
        }

        /// A re-tap within the window: with --keep both taps are served and reported.
        @Test func aReTapWithKeepIsServedTwice() async throws {
            let environment = try await resetSimulatedReaders()
            try SimulatedReaders.controlA.send(.placeTerminal(.init(taps: 2), id: "phone"))
            let result = try await emulateInProcess(environment, credential: workedExample, extra: ["--keep"], timeScale: 0.05)
            #expect(result.status == 0, "\(result.err)\n\(result.out)")
            #expect(result.out.contains("  activation 1: 6 APDUs; the NDEF file was read to the end\n"), "\(result.out)")
            #expect(result.out.contains("  activation 2: 6 APDUs; the NDEF file was read to the end\n"), "\(result.out)")
            let reply = try await terminalResult("phone")
            #expect(reply["result"] == "passed", "\(reply)")
            #expect(reply["activations"] == "2", "\(reply)")
            #expect(reply["activation-results"] == "1: passed: NDEF message, 1 record: URI https://example.com; 2: passed: NDEF message, 1 record: URI https://example.com", "\(reply)")
        }

        /// Without --keep emulate serves one complete read: the phone's second tap finds no target.
        @Test func aReTapWithoutKeepFindsTheEmulationEnded() async throws {
            let environment = try await resetSimulatedReaders()
            try SimulatedReaders.controlA.send(.placeTerminal(.init(taps: 2), id: "phone"))
            let emulation = try await startEmulation(environment, credential: workedExample)
            let result = try await emulation.finish()
            #expect(result.status == 0, "\(result.err)\n\(result.out)")
            #expect(result.out.contains("terminal: 6 APDUs; the NDEF file was read to the end"), "\(result.out)")
            let reply = try await terminalResult("phone")
            #expect(reply["result"] == "passed", "\(reply)")
            #expect(reply["activations"] == "1", "\(reply)")
        }

        /// A peer-to-peer initiator in the field with an Android reader: the PN532 armed for ISO-DEP
        /// only does not answer its ATR_REQ, so it reports `ignored`; the reader then reads the tag.
        @Test func aPeerToPeerInitiatorIsNoReaderAndTheEmulationWaitsOn() async throws {
            let environment = try await resetSimulatedReaders()
            try SimulatedReaders.controlA.send(.placeTerminal(script: "android-beam-p2p", id: "beam"))
            try SimulatedReaders.controlA.send(.placeTerminal(id: "phone"))
            let emulation = try await startEmulation(environment, credential: workedExample)
            let result = try await emulation.finish()
            #expect(result.status == 0, "\(result.err)\n\(result.out)")
            #expect(result.out.contains(
                "simulated external terminal (Android Beam peer-to-peer initiator) [beam]: ignored: no NFC-DEP target: TgInitAsTarget allows ISO/IEC 14443-4 PICC activation only (Mode bit PICCOnly 04): the PN532 does not answer ATR_REQ"),
                "\(result.out)")
            let beam = try await terminalResult("beam")
            #expect(beam["result"] == "ignored", "\(beam)")
            #expect(beam["activations"] == "0", "\(beam)")
            let phone = try await terminalResult("phone")
            #expect(phone["result"] == "passed", "\(phone)")
        }

        /// A host slower than Android's 1000 ms response timer (S(WTX) from the PN532), and one
        /// slower than the FWT bound of 474.8 ms without S(WTX): Android gives up at READ BINARY of
        /// the CC; TgSetData gets 29; emulate (--once: not waiting out the window for another
        /// phone) reports the simulated failure and exits 1.
        @Test(arguments: [("host-delay-ms=1200 host-delay-at=3", "the reader's response timer of 1000.0 ms (RW_T4T_TOUT_RESP) expired"),
                          ("host-delay-ms=500 host-delay-at=3 wtx=no", "no block within FWT (FWI 9 from the ATS: 154.7 ms, + ΔFWT) after two R(NAK) retransmissions: 474.8 ms")])
        func aSlowHostMakesAndroidGiveUp(_ options: String, _ rule: String) async throws {
            let environment = try await resetSimulatedReaders()
            try SimulatedReaders.controlA.send("place-terminal script=android-t4t-read \(options) id=phone")
            let emulation = try await startEmulation(environment, credential: workedExample, extra: ["--once"])
            let result = try await emulation.finish()
            #expect(result.status == 1, "\(result.err)\n\(result.out)")
            #expect(result.out.contains("event: fieldStateChanged(fieldAbsent: TgSetData: "), "\(result.out)")
            #expect(result.out.contains("[phone]: failed at waiting for the answer to 00 B0 00 00 0F, exchange 2: timeout: \(rule)"), "\(result.out)")
            let reply = try await terminalResult("phone")
            #expect(reply["result"] == "failed", "\(reply)")
            #expect(reply["stage"] == "waiting for the answer to 00 B0 00 00 0F", "\(reply)")
        }

        /// The same delay within the limit: with S(WTX) 500 ms is in time and the read completes.
        @Test func aHostWithinTheResponseTimerIsInTime() async throws {
            let environment = try await resetSimulatedReaders()
            try SimulatedReaders.controlA.send(.placeTerminal(.init(hostDelayMilliseconds: 500, hostDelayAt: 3), id: "phone"))
            let emulation = try await startEmulation(environment, credential: workedExample)
            let result = try await emulation.finish()
            #expect(result.status == 0, "\(result.err)\n\(result.out)")
            let reply = try await terminalResult("phone")
            #expect(reply["result"] == "passed", "\(reply)")
        }

        /// Bad options are refused with what to send instead.
        @Test func badPhoneOptionsAreRefused() async throws {
            _ = try await resetSimulatedReaders()
            #expect(throws: (any Error).self) { try SimulatedReaders.controlA.send("place-terminal script=android-t4t-read wtx=maybe") }
            #expect(throws: (any Error).self) { try SimulatedReaders.controlA.send("place-terminal script=android-t4t-recording taps=2") }
            #expect(throws: (any Error).self) { try SimulatedReaders.controlA.send("place-terminal script=android-t4t-read host-delay-at=2") }
        }
    }
}
