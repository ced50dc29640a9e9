import Foundation
import PCSC
import PCSCSandbox
import PN53x
import SecbridgeCLI
import SecbridgeTesting
import Testing

// `secbridge doctor` and `secbridge reset` against the simulated ACR122U in the shared pcscd, and
// the reader clean-up of `secbridge emulate` on Ctrl-C (docs/acr122-pn532.md §1, §2, §5b, §5d).

/// Reads reader A's PICC operating parameter: `FF 00 50 00 00` → `90 pp` (ACR122U API v2.04 §6.4).
func piccOperatingParameterReply(_ reader: String) throws -> [UInt8] {
    let context = try PCSCContext()
    defer { try? context.release() }
    let direct = try context.connect(to: reader, share: .direct, protocols: [])
    defer { try? direct.disconnect(.leave) }
    return try direct.control(code: ACR122ControlCode.ccidEscape, [0xFF, 0x00, 0x50, 0x00, 0x00])
}

extension SharedReader {
    @Suite struct DoctorResetEndToEndTests {
        @Test func doctorOnAHealthySimulatedReader() async throws {
            let environment = try await resetSimulatedReaders()
            let result = try await runCLI(["doctor", "--reader", environment.simulatedReaderA])
            #expect(result.status == 0, "\(result.out)\(result.err)")
            #expect(result.out.contains("ok       reader in PC/SC: \(environment.simulatedReaderA) (ACR122-class name); firmware ACR122U207 confirms an ACR122U\n"), "\(result.out)")
            #expect(result.out.contains("ok       driver: CCID driver (libccid): escape code 0x42000001 (CM_IOCTL_GET_FEATURE_REQUEST, tag 0x13)"), "\(result.out)")
            #expect(result.out.contains("ok       escape commands: SCardControl 0x42000001 carries pseudo-APDUs\n"), "\(result.out)")
            #expect(result.out.contains("ok       firmware: ACR122U207 (version 2.07); "), "\(result.out)")
            #expect(result.out.contains("ok       PICC parameter: FF 00 50 00 00 → 90 FF (automatic polling on, the default)\n"), "\(result.out)")
            #expect(result.out.contains("ok       card in the field: none"), "\(result.out)")
            #expect(!result.out.contains("fail "), "\(result.out)")
        }

        @Test func doctorOnTheEscapeDisabledPersonalityGivesThePlistEdit() async throws {
            let environment = try await resetSimulatedReaders()
            let root = FileManager.default.temporaryDirectory.appendingPathComponent("secbridge-doctor-e2e-\(UUID().uuidString)").path
            try FileManager.default.createDirectory(atPath: root + "/etc", withIntermediateDirectories: true)
            try "<plist><dict>\n<key>ifdDriverOptions</key>\n<string>0x0000</string>\n</dict></plist>\n"
                .write(toFile: root + "/etc/libccid_Info.plist", atomically: true, encoding: .utf8)
            defer { try? FileManager.default.removeItem(atPath: root) }
            try SimulatedReaders.controlA.send(.personality(name: "ccid-escape-disabled"))
            var variables = environment.environmentForSubprocesses
            variables["SECBRIDGE_DOCTOR_ROOT"] = root
            let result = try await runBinary(["doctor", "--json", "--reader", environment.simulatedReaderA], environment: variables)
            try SimulatedReaders.controlA.send(.personality(name: "ccid-escape-enabled"))
            #expect(result.status == 1, "\(result.out)\(result.err)")
            let checks = try #require(try JSONSerialization.jsonObject(with: Data(result.out.utf8)) as? [[String: Any]])
            let escape = try #require(checks.first { $0["check"] as? String == "escape commands" })
            #expect(escape["verdict"] as? String == "fail")
            #expect((escape["detail"] as? String)?.hasPrefix("refused: SCardControl 0x42000001 gave SCARD_E_NOT_TRANSACTED (0x80100016)") == true, "\(escape)")
            #expect(escape["fix"] as? String == "edit /etc/libccid_Info.plist: after <key>ifdDriverOptions</key>, change <string>0x0000</string> to <string>0x0001</string> (bit 0x0001 enables escape commands; the other bits are kept), then run `systemctl restart pcscd`")
            // libccid without the option announces no escape feature (tag 0x13 absent).
            let driver = try #require(checks.first { $0["check"] as? String == "driver" })
            #expect((driver["detail"] as? String)?.hasPrefix("no escape code announced") == true, "\(driver)")
            // The firmware cannot be read either; its fix points at the driver option, not at reset.
            let firmware = try #require(checks.first { $0["check"] as? String == "firmware" })
            #expect(firmware["verdict"] as? String == "skipped")
            #expect((firmware["fix"] as? String)?.hasPrefix("enable escape commands") == true, "\(firmware)")
        }

        // `reset` after polling was left off, and with escape commands refused (docs/cases.md P09),
        // run in process against simulated desks: SecbridgeCLITests/InProcessCommandTests.

        @Test func emulateInterruptedBySIGINTLeavesTheReaderRestored() async throws {
            let environment = try await resetSimulatedReaders()
            let emulation = try await startEmulation(environment, credential: "Fixtures/credentials/uri-tag.json")
            let armed = try await emulation.waitForOutput(containing: "state: cardEmulation")
            #expect(armed, "\(emulation.outputSoFar)")
            // Emulation turned automatic polling off (FF 00 51 00 00) on A.
            #expect(try SimulatedReaders.controlA.send(.status)["picc"] == "00")
            kill(emulation.processIdentifier, SIGINT)
            let result = try await emulation.finish(timeout: .seconds(30))
            #expect(result.status == 130, "\(result.out)\(result.err)")
            #expect(result.out.contains("interrupted: ending card emulation (within one MCU timeout)\nstate: management\n"), "\(result.out)")
            #expect(result.err.contains("restoring \(environment.simulatedReaderA) (interrupted):\n"), "\(result.err)")
            #expect(result.err.contains("PICC operating parameter FF (automatic polling on): FF 00 51 FF 00 → 90 FF  ok\n"), "\(result.err)")
            #expect(try await blocking { try piccOperatingParameterReply(environment.simulatedReaderA) } == [0x90, 0xFF])
            #expect(try SimulatedReaders.controlA.send(.status)["led"] == "01")
            // startEmulation turned B's polling off; put it back.
            try await blocking { () throws -> Void in
                let link = try ACR122Link.open(
                    channel: try PCSCContext().connect(to: environment.simulatedReaderB, share: .direct, protocols: []),
                    readerName: environment.simulatedReaderB)
                try link.setPICCOperatingParameter(.factoryDefault)
            }
        }
    }
}
