import Foundation
import PCSC
import PCSCSandbox
import SecbridgeTesting
import Testing
import Transcript

// `secbridge selftest --hardware` on the shared simulated ACR122U, and `--replay` of bundles against
// a fresh simulated unit: every bundle under Fixtures/hardware/ (recordings from real units) and
// Fixtures/simulated/selftest/ (the simulator's own, a regression of itself).

/// The bundle directories under `Fixtures/<directory>`, each a directory holding reader.trn.
func selftestBundles(under directory: String) throws -> [String] {
    guard let root = HarnessPaths.repositoryRoot else {
        throw HarnessError(code: .missingDependency, reason: "the repository root was not found")
    }
    let base = root.appendingPathComponent("Fixtures/\(directory)")
    let names = (try? FileManager.default.contentsOfDirectory(atPath: base.path)) ?? []
    return names.sorted().map { base.appendingPathComponent($0).path }
        .filter { FileManager.default.fileExists(atPath: $0 + "/reader.trn") }
}

/// Turns automatic polling of simulated reader B off (`FF 00 51 00 00` through the escape code) so
/// that B, sharing the field with A, does not activate A's emulation (docs/acr122-pn532.md §2, PICC
/// parameter bit 7); `personality` in ``resetSimulatedReaders()`` puts it back.
func stopPollingOnReaderB(_ environment: TestEnvironment) async throws {
    let answer = try await blocking {
        let context = try PCSCContext()
        defer { try? context.release() }
        let handle = try context.connect(to: environment.simulatedReaderB, share: .direct, protocols: .undefined)
        defer { try? handle.disconnect(.leave) }
        return try handle.control(code: 0x4200_0001, [0xFF, 0x00, 0x51, 0x00, 0x00])
    }
    #expect(answer == [0x90, 0x00])
}

func temporaryBundlePath() -> String {
    FileManager.default.temporaryDirectory.appendingPathComponent("secbridge-selftest-\(UUID().uuidString)").path
}

extension SharedReader {
    @Suite struct SelftestTests {
        @Test func hardwareSelftestOnTheSimulatedReaderMatchesTheDocumentsAndReplays() async throws {
            let environment = try await resetSimulatedReaders()
            try await stopPollingOnReaderB(environment)
            defer { _ = try? SimulatedReaders.controlB.send(.personality(name: "ccid-escape-enabled")) }
            let bundle = temporaryBundlePath()
            defer { try? FileManager.default.removeItem(atPath: bundle) }
            let run = try await runCLI(["selftest", "--hardware", "--reader", environment.simulatedReaderA, "--output", bundle, "--json"])
            #expect(run.status == 0, "\(run.err)")
            let json = try #require(try JSONSerialization.jsonObject(with: Data(run.out.utf8)) as? [String: Any])
            #expect(json["firmware"] as? String == "ACR122U207")
            #expect(json["driver"] as? String == "libccid")
            #expect(json["escapeCode"] as? String == "0x42000001")
            #expect(json["errors"] as? Int == 0)
            // The simulator answers every step as the ACR122U API and UM0701-02 say.
            let parts = try #require(json["parts"] as? [[String: Any]])
            let steps = parts.flatMap { ($0["steps"] as? [[String: Any]]) ?? [] }
            let differing = steps.filter { $0["verdict"] as? String != "ok" }.map { "\($0["step"] ?? "") → \($0["answer"] ?? "")" }
            #expect(differing.isEmpty, "\(differing)")
            let answers = Dictionary(steps.map { ($0["step"] as? String ?? "", $0["answer"] as? String ?? "") }, uniquingKeysWith: { a, _ in a })
            #expect(answers["feature request (CM_IOCTL_GET_FEATURE_REQUEST)"] == "120442330012130442000001", "FEATURE_GET_TLV_PROPERTIES, then FEATURE_CCID_ESC_COMMAND 0x42000001")
            #expect(answers["LEDs: both on"] == "9003")
            #expect(answers["InListPassiveTarget 106 kbit/s Type A"] == "D54B009000", "no card: NbTg 00")
            #expect(answers["TgInitAsTarget, no terminal: ends at the MCU timeout"] == "6300")
            #expect(answers["restore: automatic polling (PICC parameter FF)"] == "90FF")

            // The bundle: two transcripts with their provenance, replaying against a fresh unit.
            let reader = try Transcript(contentsOfFile: bundle + "/reader.trn")
            #expect(reader.header.reader == environment.simulatedReaderA)
            #expect(reader.header.firmware == "ACR122U207")
            #expect(reader.header.driver == "libccid")
            #expect(reader.header["selftest-part"] == "reader")
            #expect(reader.header["card"] == "none")
            #expect(reader.header.date != nil)
            let target = try Transcript(contentsOfFile: bundle + "/target.trn")
            #expect(target.header["selftest-part"] == "target")
            #expect(try SimulatedReaders.controlA.send(.status)["picc"] == "FF", "the selftest puts automatic polling back")

            let replay = try await runBinary(["selftest", "--replay", bundle], environment: ProcessInfo.processInfo.environment, timeout: .seconds(40))
            #expect(replay.status == 0, "\(replay.err)")
            #expect(replay.out.contains("\(bundle)/reader.trn: "))
            #expect(replay.out.contains("\(bundle)/target.trn: "))
        }

        /// A card on the reader is recorded in either state pcscd leaves it in (docs/acr122-units.md
        /// §6), each made deterministic here: `powered` holds a SHARED connection through the run
        /// (pcscd never powers a card in use down), as pcscd holds a card for up to its 5 s grace
        /// period after insertion; otherwise the card is powered down first (SCardDisconnect
        /// UNPOWER: IFDHPowerICC IFD_POWER_DOWN, as pcscd's grace period ends), and pcscd powers it
        /// up again only at a SHARED connection. Both bundles replay.
        func recordAndReplayWithACard(powered: Bool) async throws {
            let environment = try await resetSimulatedReaders()
            // An NTAG-like tag (SAK 00) with a 7-byte UID.
            try await stopPollingOnReaderB(environment)
            try SimulatedReaders.controlA.send(.placeTag(uid: [0x04, 0xA1, 0xB2, 0xC3, 0xD4, 0xE5, 0xF6], .plain(atqa: 0x0044, sak: 0x00), id: "t2"))
            defer {
                _ = try? SimulatedReaders.controlA.send(.removeAll)
                _ = try? SimulatedReaders.controlB.send(.personality(name: "ccid-escape-enabled"))
            }
            _ = try await waitForCard(in: environment.simulatedReaderA, present: true)
            let reader = environment.simulatedReaderA
            // The handle keeps its context alive; it is released after the run.
            let holder = try await blocking { () -> CardHandle? in
                let handle = try PCSCContext().connect(to: reader, share: .shared, protocols: .any)
                guard powered else {
                    try handle.disconnect(.unpower)
                    return nil
                }
                return handle
            }
            defer { try? holder?.disconnect(.leave) }
            let bundle = temporaryBundlePath()
            defer { try? FileManager.default.removeItem(atPath: bundle) }
            let run = try await runCLI(["selftest", "--hardware", "--reader", reader, "--output", bundle, "--json"])
            #expect(run.status == 0, "\(run.err)\n\(run.out)")
            let json = try #require(try JSONSerialization.jsonObject(with: Data(run.out.utf8)) as? [String: Any])
            let steps = (json["parts"] as? [[String: Any]] ?? []).flatMap { ($0["steps"] as? [[String: Any]]) ?? [] }
            let status = steps.first { $0["step"] as? String == "PN532 GetGeneralStatus" }?["answer"] as? String
            // UM0701-02 §7.2.3: NbTg 01 with Tg 01 while pcscd holds the card powered, else NbTg 00.
            #expect(status == (powered ? "D50500000101000000809000" : "D505000000809000"))
            let transcript = try Transcript(contentsOfFile: bundle + "/reader.trn")
            #expect(transcript.header["card"] == "uid=04A1B2C3D4E5F6 atqa=0044 sak=00")
            let replay = try await runBinary(["selftest", "--replay", bundle], environment: ProcessInfo.processInfo.environment, timeout: .seconds(40))
            #expect(replay.status == 0, "\(replay.err)")
        }

        @Test func aCardInTheFieldIsRecordedAndPlacedAgainOnReplay() async throws {
            try await recordAndReplayWithACard(powered: false)
        }

        /// Issue 13's CI failure made deterministic: the card still powered by pcscd when the
        /// sequence runs (a user who runs the selftest right after putting the card down).
        @Test func aCardPcscdStillHoldsPoweredIsRecordedListedAndReplays() async throws {
            try await recordAndReplayWithACard(powered: true)
        }

        @Test func phonePartRecordsATerminalReadingTheBuiltInTagAndReplaysAgainstTheCredential() async throws {
            let environment = try await resetSimulatedReaders()
            try await stopPollingOnReaderB(environment)
            defer {
                _ = try? SimulatedReaders.controlA.send(.removeAll)
                _ = try? SimulatedReaders.controlB.send(.personality(name: "ccid-escape-enabled"))
            }
            let bundle = temporaryBundlePath()
            defer { try? FileManager.default.removeItem(atPath: bundle) }
            let run = Task {
                try await runCLI(["selftest", "--hardware", "--phone", "--reader", environment.simulatedReaderA, "--output", bundle])
            }
            // The phone comes once the target part (no terminal) is written.
            let clock = ContinuousClock()
            let deadline = clock.now + .seconds(30)
            while !FileManager.default.fileExists(atPath: bundle + "/target.trn") && clock.now < deadline {
                try await Task.sleep(for: .milliseconds(50))
            }
            try SimulatedReaders.controlA.send(.placeTerminal(id: "phone"))
            let result = try await run.value
            #expect(result.status == 0, "\(result.err)\n\(result.out)")
            #expect(result.out.contains("phone: 6 APDU exchanges with the terminal"), "\(result.out)")
            let phone = try Transcript(contentsOfFile: bundle + "/phone.trn")
            #expect(phone.header["selftest-part"] == "phone")
            #expect(phone.header["credential"] == "example-uri-tag")
            // The last answer: the NDEF message https://example.com (docs/iso14443-t4t-ndef.md §4).
            let hostAnswers = phone.lines.compactMap { line -> [UInt8]? in
                if case .target(.outgoing, let bytes)? = line.record?.entry { return bytes.bytes }
                return nil
            }
            #expect(hostAnswers.last == [0xD1, 0x01, 0x0C, 0x55, 0x04] + Array("example.com".utf8) + [0x90, 0x00])
            let replay = try await runBinary(["selftest", "--replay", bundle], environment: ProcessInfo.processInfo.environment, timeout: .seconds(40))
            #expect(replay.status == 0, "\(replay.err)")
            #expect(replay.out.contains("\(bundle)/phone.trn: 6 exchanges, every answer matches"))
        }

        /// Slowed-time check: the shared field runs at `timescale=0.4` here, so that the target
        /// part's TgInitAsTarget is still waiting out its MCU timeout (5 s simulated, 2 s here) when
        /// SIGINT arrives 300 ms after the part began; the restore then waits for the rest of it.
        @Test func ctrlCDuringTheTargetPartRestoresTheReaderAndKeepsWhatWasRecorded() async throws {
            let environment = try await resetSimulatedReaders()
            try SimulatedReaders.controlA.send(.setTimescale(0.4))
            defer { _ = try? SimulatedReaders.controlA.send("timescale value=\(SimulatedReaders.testTimeScale)") }
            try await stopPollingOnReaderB(environment)
            defer { _ = try? SimulatedReaders.controlB.send(.personality(name: "ccid-escape-enabled")) }
            let bundle = temporaryBundlePath()
            defer { try? FileManager.default.removeItem(atPath: bundle) }
            let selftest = try BackgroundSecbridge(
                ["selftest", "--hardware", "--reader", environment.simulatedReaderA, "--output", bundle],
                environment: environment.environmentForSubprocesses)
            // The target part waits in TgInitAsTarget for the MCU timeout, polling off.
            let waiting = try await selftest.waitForOutput(containing: "target role (about 5 s, the MCU timeout):")
            #expect(waiting, "\(selftest.outputSoFar)")
            try await Task.sleep(for: .milliseconds(300))
            kill(selftest.processIdentifier, SIGINT)
            let result = try await selftest.finish(timeout: .seconds(30))
            #expect(result.status == 130, "\(result.out)\(result.err)")
            // No "0 errors" summary over a part cut short: it says it was interrupted.
            #expect(result.out.contains("interrupted: 2 of 2 parts recorded, the last as far as it went"), "\(result.out)")
            #expect(!result.out.contains("answers different from the documents"), "\(result.out)")
            // The sequence's own restore ran (PICC parameter FF, idle LEDs), then the full reset.
            #expect(result.out.contains("restore: automatic polling (PICC parameter FF): 90 FF"), "\(result.out)")
            #expect(result.err.contains("PICC operating parameter FF (automatic polling on): FF 00 51 FF 00 → 90 FF  ok\n"), "\(result.err)")
            #expect(try SimulatedReaders.controlA.send(.status)["picc"] == "FF")
            // Both parts are kept: the reader part whole, the target part as far as it went.
            #expect(FileManager.default.fileExists(atPath: bundle + "/reader.trn"))
            let target = try Transcript(contentsOfFile: bundle + "/target.trn")
            #expect(target.header["selftest-part"] == "target")
        }

        @Test func aDifferentAnswerInABundleFailsTheReplayWithTheLine() async throws {
            _ = try await sharedEnvironment()
            let source = try #require(try selftestBundles(under: "simulated").first, "Fixtures/simulated/ holds a selftest bundle")
            let bundle = temporaryBundlePath()
            try FileManager.default.createDirectory(atPath: bundle, withIntermediateDirectories: false)
            defer { try? FileManager.default.removeItem(atPath: bundle) }
            // A unit whose LED status byte differs: 90 02 where the document says 90 03.
            let original = try String(contentsOfFile: source + "/reader.trn", encoding: .utf8)
            let edited = original.replacingOccurrences(of: "ctl 0x42000001 < 90 03", with: "ctl 0x42000001 < 90 02")
            #expect(edited != original)
            try edited.write(toFile: bundle + "/reader.trn", atomically: true, encoding: .utf8)
            let replay = try await runBinary(["selftest", "--replay", bundle], environment: ProcessInfo.processInfo.environment, timeout: .seconds(40))
            #expect(replay.status == 1)
            #expect(replay.err.contains("\(bundle)/reader.trn: the simulator answers differently"))
            #expect(replay.err.contains("expected: ctl 0x42000001 < 90 02"))
            #expect(replay.err.contains("actual:   ctl 0x42000001 < 90 03"))
        }

        @Test func aFileThatIsNotATranscriptIsReportedAsUnusableNotAsADifference() async throws {
            _ = try await sharedEnvironment()
            let source = try #require(try selftestBundles(under: "simulated").first)
            let bundle = temporaryBundlePath()
            try FileManager.default.createDirectory(atPath: bundle, withIntermediateDirectories: false)
            defer { try? FileManager.default.removeItem(atPath: bundle) }
            // Cut short inside its last line (no final newline: Fixtures/README.md grammar).
            var text = try String(contentsOfFile: source + "/reader.trn", encoding: .utf8)
            text.removeLast(3)
            try text.write(toFile: bundle + "/reader.trn", atomically: true, encoding: .utf8)
            let replay = try await runBinary(["selftest", "--replay", bundle, "--json"], environment: ProcessInfo.processInfo.environment, timeout: .seconds(40))
            #expect(replay.status == 1)
            let json = try #require(try JSONSerialization.jsonObject(with: Data(replay.out.utf8)) as? [[String: Any]])
            #expect(json.first?["result"] as? String == "unusable")
            let error = try #require(json.first?["error"] as? String)
            #expect(error.contains("reader.trn:54:"), "\(error)")
            #expect(error.contains("the last line does not end with a newline"), "\(error)")
            #expect(!error.hasPrefix("failure("))
        }

        /// Slowed-time check: reader B's automatic polling is pcscd's presence poll (every 400 ms of
        /// real time), so the field runs at `timescale=0.2` here: the target part's 5 s MCU timeout
        /// takes 1 s, long enough for B to find A's target.
        @Test func anotherReadersFieldIsWarnedAbout() async throws {
            // Reader B shares A's field and polls (the simulated pair's default): GetGeneralStatus
            // reports the external field, and B activates A's target.
            let environment = try await resetSimulatedReaders()
            try SimulatedReaders.controlA.send(.setTimescale(0.2))
            defer { _ = try? SimulatedReaders.controlA.send("timescale value=\(SimulatedReaders.testTimeScale)") }
            let bundle = temporaryBundlePath()
            defer { try? FileManager.default.removeItem(atPath: bundle) }
            let run = try await runCLI(["selftest", "--hardware", "--reader", environment.simulatedReaderA, "--output", bundle])
            #expect(run.status == 0, "\(run.err)")
            #expect(run.out.contains("warning: a terminal activated the target part's TgInitAsTarget (D5 8D"), "\(run.out)")
        }

        /// Every bundle recorded on a real unit (Fixtures/hardware/) and the simulator's own
        /// (Fixtures/simulated/) replays against the simulator: a real unit's recording that stops
        /// matching is a fidelity regression.
        @Test func everyCommittedBundleReplaysAgainstTheSimulator() async throws {
            _ = try await sharedEnvironment()
            let bundles = try selftestBundles(under: "hardware") + selftestBundles(under: "simulated")
            #expect(!bundles.isEmpty)
            for bundle in bundles {
                let replay = try await runBinary(["selftest", "--replay", bundle], environment: ProcessInfo.processInfo.environment, timeout: .seconds(60))
                #expect(replay.status == 0, "\(bundle): \(replay.err)")
            }
        }

        @Test func usageErrors() async throws {
            _ = try await sharedEnvironment()
            #expect(try await runCLI(["selftest"]).status == 64)
            #expect(try await runCLI(["selftest", "--hardware", "--replay", "x"]).status == 64)
            #expect(try await runCLI(["selftest", "--replay", "x", "--phone"]).status == 64)
            let missing = try await runCLI(["selftest", "--replay", "/nonexistent-bundle"])
            #expect(missing.status == 1)
            #expect(missing.err.contains("/nonexistent-bundle does not exist"))
            let empty = temporaryBundlePath()
            try FileManager.default.createDirectory(atPath: empty + "/b1", withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: empty) }
            let notABundle = try await runCLI(["selftest", "--replay", empty])
            #expect(notABundle.status == 1)
            #expect(notABundle.err.contains("holds no bundle (no reader.trn, target.trn or phone.trn)"))
            // A directory of bundles (as Fixtures/hardware/) names them.
            try Data().write(to: URL(fileURLWithPath: empty + "/b1/reader.trn"))
            let parent = try await runCLI(["selftest", "--replay", empty])
            #expect(parent.status == 1)
            #expect(parent.err.contains("holds bundle directories, not a bundle: give them, e.g. `secbridge selftest --replay \(empty)/b1`"), "\(parent.err)")
            let parentMissing = try await runCLI(["selftest", "--hardware", "--output", "/nonexistent-parent/bundle"])
            #expect(parentMissing.status == 1)
            #expect(parentMissing.err.contains("its parent directory does not exist"), "\(parentMissing.err)")
        }
    }
}
