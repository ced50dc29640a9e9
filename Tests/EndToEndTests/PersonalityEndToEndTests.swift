import ACR122Simulator
import Foundation
import PCSC
import PCSCSandbox
import SecbridgeCLI
import SecbridgeTesting
import SecbridgeTools
import Testing

// `doctor`, `read` (PC/SC part 3 and --pn532), `emulate` and `selftest` through the shared private
// pcscd, on every personality of the simulator's registry (docs/acr122-units.md): a personality
// added to `ACR122Personality.all` is picked up here without an edit.

/// Resets the shared readers, then gives reader A the personality `name` (B stays the default).
func simulatedReaders(withPersonality name: String) async throws -> TestEnvironment {
    let environment = try await resetSimulatedReaders()
    try SimulatedReaders.controlA.send("personality name=\(name)")
    if ACR122Personality.named(name)?.pseudoCardATR != nil {
        // A Touchatag-era unit shows its pseudo-card from power-up: wait until pcscd has seen it,
        // as it has on a real desk before any command runs (docs/acr122-clones.md §2).
        _ = try await waitForCard(in: environment.simulatedReaderA, present: true)
    }
    return environment
}

/// Whether `name`'s driver takes escape commands (every path of the product but a part 3 read
/// needs them).
func escapeCommandsWork(_ name: String) -> Bool {
    ACR122Personality.named(name).map { $0.driver != .ccidEscapeDisabled } ?? false
}

/// The `secbridge` commands in this process with the session's time scale `timeScale` (the
/// 60 s emulation window shrinks by it), against the shared pcscd.
func runCLI(_ arguments: [String], timeScale: Double) async throws -> (status: Int32, out: String, err: String) {
    try await blocking {
        let console = CapturingConsole(input: [])
        let status = SecbridgeTools.main(arguments: arguments, console: console, timeScale: timeScale)
        return (status, console.standardOutput, console.standardError)
    }
}

extension SharedReader {
    @Suite struct PersonalityEndToEndTests {
        static let personalities = ACR122Personality.names

        /// The personality doctor should name: the first registry entry with the same feature
        /// list and firmware (without a readable firmware, the first with the same list).
        static func expectedMatch(_ name: String) throws -> String {
            let personality = try #require(ACR122Personality.named(name))
            let sameList = ACR122Personality.all.filter { $0.personality.featureList == personality.featureList }
            let readable = personality.driver != .ccidEscapeDisabled
            return try #require((readable ? sameList.first { $0.personality.firmware == personality.firmware } : nil) ?? sameList.first).name
        }

        /// What pcscd hands a client for each personality: the driver's feature list and TLV
        /// properties (SCardControl) and attributes (SCardGetAttrib), byte for byte as libccid or
        /// acsccid computes them for 072F:2200 (docs/acr122-units.md §1, §2).
        @Test(arguments: personalities)
        func pcscdHandsOnTheDriversFeatureListTLVPropertiesAndAttributes(_ name: String) async throws {
            let environment = try await simulatedReaders(withPersonality: name)
            let personality = try #require(ACR122Personality.named(name))
            let reader = environment.simulatedReaderA
            let (features, properties, vendor, version, serial, channel, maxInput) = try await blocking {
                let context = try PCSCContext()
                defer { try? context.release() }
                let direct = try context.connect(to: reader, share: .direct, protocols: [])
                defer { try? direct.disconnect(.leave) }
                return (try direct.control(code: 0x4200_0D48, []), try direct.control(code: 0x4233_0012, []),
                        try direct.attribute(PCSCAttribute(rawValue: 0x0001_0100)), try direct.attribute(PCSCAttribute(rawValue: 0x0001_0102)),
                        try direct.attribute(PCSCAttribute(rawValue: 0x0001_0103)), try direct.attribute(PCSCAttribute(rawValue: 0x0002_0110)),
                        try direct.attribute(PCSCAttribute(rawValue: 0x0007_A007)))
            }
            switch personality.driver {
            case .ccidEscapeDisabled: #expect(features == hex("12 04 42 33 00 12"))
            case .ccidEscapeEnabled: #expect(features == hex("12 04 42 33 00 12 13 04 42 00 00 01"))
            case .acsDriver: #expect(features == hex("11 04 42 33 00 11 12 04 42 33 00 12 13 04 42 00 0D AC"))
            }
            let ppdu: UInt8 = personality.driver == .acsDriver ? 0x03 : personality.driver == .ccidEscapeEnabled ? 0x01 : 0x00
            #expect(properties == hex("01 02 00 00 03 01 00 09 01") + [ppdu] + hex("0B 02 2F 07 0C 02 00 22 0A 04 00 00 00 00"))
            #expect(vendor == Array(personality.vendorName.utf8) + [0])
            // bcdDevice << 16, little-endian: 2.07 → 00 00 07 02; ACR122U215 → 00 00 15 02.
            #expect(version == [0x00, 0x00, UInt8(personality.bcdDevice & 0xFF), UInt8(personality.bcdDevice >> 8)])
            #expect(serial.isEmpty)
            #expect(channel == hex("02 01 20 00"))
            #expect(maxInput == hex("05 01 00 00"))
        }

        @Test(arguments: personalities)
        func doctorNamesTheVariantAndWhatWorks(_ name: String) async throws {
            let environment = try await simulatedReaders(withPersonality: name)
            let personality = try #require(ACR122Personality.named(name))
            let result = try await runCLI(["doctor", "--json", "--reader", environment.simulatedReaderA])
            let checks = try #require(try JSONSerialization.jsonObject(with: Data(result.out.utf8)) as? [[String: Any]], "\(result.err)")
            let variant = try #require(checks.first { $0["check"] as? String == "variant" })
            let detail = try #require(variant["detail"] as? String)
            let expected = ["clone", "touchatag"].contains(name) ? name : try Self.expectedMatch(name)
            #expect(detail.contains("simulator personality \(expected)"), "\(detail)")
            switch personality.driver {
            case .ccidEscapeDisabled:
                #expect(result.status == 1, "escape commands refused is a failing check")
                #expect(detail.contains("libccid (escape option off)"), "\(detail)")
                #expect(detail.contains("does not work: card emulation"), "\(detail)")
                #expect(variant["verdict"] as? String == "warning")
            case .ccidEscapeEnabled:
                let family = switch name {
                case "clone": "ACR122U clone (vendor \"RFCARD\")"
                case "touchatag": "Touchatag-era unit (pseudo-card ATR 3B 00)"
                default: "genuine ACR122U"
                }
                #expect(detail.hasPrefix("\(family), firmware \(personality.firmware), libccid (escape option on)"), "\(detail)")
                #expect(variant["verdict"] as? String == (family == "genuine ACR122U" ? "ok" : "warning"))
            case .acsDriver:
                #expect(detail.hasPrefix("genuine ACR122U, firmware \(personality.firmware), acsccid"), "\(detail)")
                #expect(variant["verdict"] as? String == "ok")
            }
        }

        @Test(arguments: personalities)
        func readsAPlacedType4TagOnBothPaths(_ name: String) async throws {
            let environment = try await simulatedReaders(withPersonality: name)
            let reader = environment.simulatedReaderA
            let place = "place-card uid=\"04 A1 B2 C3 D4 E5 F6\" applet=t4t-ndef id=tag"
            let personality = try #require(ACR122Personality.named(name))
            if personality.reportsCardsToPCSC && personality.pseudoCardATR == nil {
                try await placeInSharedField(place, environment: environment)
            } else {
                // A clone never shows the card to pcscd: nothing to wait for (docs/acr122-clones.md §1).
                try SimulatedReaders.controlA.send(place)
            }
            let part3 = try await runCLI(["read", "--reader", reader])
            #expect(part3.status == 0, "\(part3.err)")
            if !personality.reportsCardsToPCSC {
                #expect(part3.out.contains("note: "), "read says why it took the PN532 path: \(part3.out)")
            }
            #expect(part3.out.contains("NDEF record 1: URI https://example.com\n"), "\(part3.out)")
            let pn532 = try await runCLI(["read", "--pn532", "--reader", reader])
            if escapeCommandsWork(name) {
                #expect(pn532.status == 0, "\(pn532.err)")
                #expect(pn532.out.contains("NDEF record 1: URI https://example.com\n"), "\(pn532.out)")
            } else {
                #expect(pn532.status == 1)
                #expect(pn532.err.contains("ifdDriverOptions"), "\(pn532.err)")
            }
            #expect(try SimulatedReaders.controlA.send("status")["picc"] == "FF", "the reader is left polling")
            try SimulatedReaders.controlA.send("remove peer=tag")
        }

        @Test(arguments: personalities)
        func emulateServesATerminalAndRestoresTheReader(_ name: String) async throws {
            let environment = try await simulatedReaders(withPersonality: name)
            try SimulatedReaders.controlA.send("place-terminal script=android-t4t-read id=android")
            let emulation = try await startEmulation(environment, credential: "Fixtures/credentials/uri-tag.json")
            let result = try await emulation.finish(timeout: .seconds(30))
            if escapeCommandsWork(name) {
                #expect(result.status == 0, "\(result.err)\n\(result.out)")
                let reply = try await terminalResult("android")
                #expect(reply["result"] == "passed", "\(reply)")
            } else {
                #expect(result.status == 1)
                #expect(result.err.contains("ifdDriverOptions"), "\(result.err)")
            }
            #expect(try SimulatedReaders.controlA.send("status")["picc"] == "FF", "\(result.err)")
        }

        /// No terminal comes: whatever the unit answers at each MCU timeout (63 00, or nothing at
        /// all on `empty-target-wait`), the window (60 s × 0.005: 0.3 s, six of the shared readers'
        /// 50 ms MCU steps) ends with cardEmulationTimeout, no device step failed, and the reader
        /// is restored.
        @Test(arguments: personalities.filter(escapeCommandsWork))
        func emulateWithNoTerminalWaitsOutTheWindowAndRestoresTheReader(_ name: String) async throws {
            let environment = try await simulatedReaders(withPersonality: name)
            try await blocking { try stopAutomaticPolling(on: environment.simulatedReaderB) }
            let result = try await runCLI(
                ["emulate", "--credential", try repositoryPath("Fixtures/credentials/uri-tag.json"), "--yes", "--reader", environment.simulatedReaderA],
                timeScale: 0.005)
            #expect(result.status == 1, "no terminal exchanged APDUs: \(result.err)\n\(result.out)")
            #expect(result.out.contains("event: cardEmulationTimeout"), "\(result.out)")
            #expect(!result.out.contains("failed") && !result.err.contains("failed"), "\(result.err)\n\(result.out)")
            #expect(try SimulatedReaders.controlA.send("status")["picc"] == "FF")
        }

        /// `selftest --hardware` records a bundle on the personality, and `--replay` picks the
        /// matching personality from the recorded feature list and firmware, so every answer
        /// matches.
        @Test(arguments: personalities)
        func selftestBundlesReplayAgainstTheMatchingPersonality(_ name: String) async throws {
            let environment = try await simulatedReaders(withPersonality: name)
            try await stopPollingOnReaderB(environment)
            let bundle = temporaryBundlePath()
            defer { try? FileManager.default.removeItem(atPath: bundle) }
            let run = try await runCLI(["selftest", "--hardware", "--reader", environment.simulatedReaderA, "--output", bundle])
            guard escapeCommandsWork(name) else {
                #expect(run.status != 0)
                #expect(run.err.contains("ifdDriverOptions"), "\(run.err)")
                return
            }
            #expect(run.status == 0, "\(run.err)")
            let replay = try await runBinary(["selftest", "--replay", bundle], environment: ProcessInfo.processInfo.environment, timeout: .seconds(60))
            #expect(replay.status == 0, "\(replay.err)\n\(replay.out)")
            #expect(try SimulatedReaders.controlA.send("status")["picc"] == "FF")
        }
    }
}
