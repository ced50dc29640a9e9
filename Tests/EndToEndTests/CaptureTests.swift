import Foundation
import PCSCSandbox
import SecbridgeTesting
import Testing

// `secbridge capture` runs a program under pcsc-lite's own spy (libpcscspy.so.0 and the pcsc-spy
// viewer, Debian package libpcsclite-dev), so the importer meets the real tool's output here.

/// True when pcsc-lite's spy is installed.
let spyInstalled = FileManager.default.isExecutableFile(atPath: "/usr/bin/pcsc-spy")

extension SharedReader {
    @Suite(.enabled(if: spyInstalled, "pcsc-spy is not installed (package libpcsclite-dev)"))
    struct CaptureTests {
        func scratch(_ name: String) throws -> String {
            let path = NSTemporaryDirectory() + "secbridge-capture-test-\(name)-\(getpid())"
            try? FileManager.default.removeItem(atPath: path)
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            return path
        }

        @Test func capturesTheProjectsOwnCLI() async throws {
            let environment = try await sharedEnvironment()
            let dir = try scratch("send")
            defer { try? FileManager.default.removeItem(atPath: dir) }
            let out = dir + "/send.trn"
            let binary = try secbridgeBinary().path
            // `send` connects, reads the ATR and transmits: SCardConnect, SCardStatus, SCardTransmit
            // (the last crashed libpcscspy 1.9.9 while the receive PCI was NULL; it is passed now).
            let result = try await runBinary(
                ["capture", "-o", out, "--spy-log", dir + "/spy.log", "--", binary, "send", "--reader", environment.vpcdReaderName, "00A4000C023F00"],
                                             environment: ProcessInfo.processInfo.environment, timeout: .seconds(60))
            #expect(result.status == 0, "\(result.err)")
            let text = try String(contentsOfFile: out, encoding: .utf8)
            #expect(text.contains("# origin: imported\n"))
            #expect(text.contains("# tool: secbridge 0.1.0 capture\n"))
            // secbridge send asked SCardGetStatusChange about every reader, SCardStatus gave the ATR,
            // and the SELECT MF went through SCardTransmit.
            #expect(text.contains("event state-changed reader=\"\(environment.vpcdReaderName)\""))
            #expect(text.contains("# atr: 3B 95 13 81 01 80 73 FF 01 00 0B\n"))
            #expect(text.contains("> 00 A4 00 0C 02 3F 00\n"))
            #expect(text.contains("< 90 00\n"))
            let spyLog = try String(contentsOfFile: dir + "/spy.log", encoding: .utf8)
            #expect(spyLog.hasPrefix("SCardEstablishContext\n"), "pcsc-spy's own text was kept")
        }

        @Test(.enabled(if: Libnfc.isBuilt, "libnfc is not built: run scripts/build-libnfc.sh"))
        func capturesLibnfcsNfcList() async throws {
            let environment = try await resetSimulatedReaders()
            let dir = try scratch("nfc-list")
            defer { try? FileManager.default.removeItem(atPath: dir) }
            let out = dir + "/nfc-list.trn"
            var toolEnvironment = Libnfc.environment(reader: environment.simulatedReaderA, base: ProcessInfo.processInfo.environment)
            // The second example of `capture --help` as printed: nfc-list found on PATH.
            toolEnvironment["PATH"] = Libnfc.binDirectory! + ":" + (toolEnvironment["PATH"] ?? "/usr/bin:/bin")
            let result = try await runBinary(["capture", "--json", "-o", out, "--", "nfc-list"],
                                             environment: toolEnvironment, timeout: .seconds(60))
            #expect(result.status == 0, "\(result.err)")
            #expect(result.out.contains("\"status\": 0"))
            let text = try String(contentsOfFile: out, encoding: .utf8)
            // libnfc opens the ACR122U directly and asks its firmware version with the escape code.
            #expect(text.contains("event connected share=\"direct\" protocol=\"undefined\""))
            #expect(text.contains(" ctl 0x42000001 > FF 00 48 00 00\n"))
            #expect(text.contains(" ctl 0x42000001 < 41 43 52 31 32 32 55 32 30 37\n"))
            #expect(text.contains(" ctl 0x42000001 > FF 00 00 00 02 D4 02\n"), "PN532 GetFirmwareVersion")
            #expect(text.contains("(libpcscspy.so.0 preloaded, pcsc-spy -n)"), "nfc-list is linked with libpcsclite (through libnfc)")
        }

        /// The first example of `capture --help`, as printed: opensc-tool loads libpcsclite with
        /// dlopen, so only the spy's replacement mode (libpcsclite.so.1 on LD_LIBRARY_PATH) sees it.
        @Test(.enabled(if: openscInstalled, "opensc-tool is not installed (package opensc)"))
        func capturesOpenscToolWhichLoadsPCSCLiteWithDlopen() async throws {
            let environment = try await resetSimulatedReaders()  // the ACR122Us empty: opensc-tool picks vicc's card
            let dir = try scratch("opensc")
            defer { try? FileManager.default.removeItem(atPath: dir) }
            let before = leftoverCaptureDirectories()
            let out = dir + "/select.trn"
            let result = try await runBinary(["capture", "-o", out, "--", "opensc-tool", "--send-apdu", "00A4040007D2760000850101"],
                                             environment: ProcessInfo.processInfo.environment, timeout: .seconds(60))
            #expect(result.status == 0, "\(result.err)")
            #expect(result.err.contains("Using reader with a card: \(environment.vpcdReaderName)"), "\(result.err)")
            #expect(result.out.contains("Received (SW1=0x6A, SW2=0x82)"), "\(result.out)")
            let text = try String(contentsOfFile: out, encoding: .utf8)
            #expect(text.contains("(libpcscspy.so.0 as libpcsclite.so.1 on LD_LIBRARY_PATH, pcsc-spy -n)"))
            // vicc's default card has no such application: 6A 82 (docs/test-infrastructure.md, "vpcd and vicc").
            #expect(text.contains("> 00 A4 04 00 07 D2 76 00 00 85 01 01\n"))
            #expect(text.contains("< 6A 82\n"))
            #expect(leftoverCaptureDirectories().subtracting(before).isEmpty, "the temporary HOME was removed")
        }

        /// nfc-list with a card: libnfc's acr122_pcsc driver calls SCardTransmit with a NULL receive
        /// PCI, and pcsc-lite 1.9.9's spy dereferences it (pcsc-lite issue #159, fixed in 2.0.1).
        @Test(.enabled(if: Libnfc.isBuilt, "libnfc is not built: run scripts/build-libnfc.sh"))
        func nfcListWithACardNamesTheKnownSpyCrash() async throws {
            let environment = try await resetSimulatedReaders()
            try SimulatedReaders.controlA.send(.placeCard(uid: [0x04, 0xA1, 0xB2, 0xC3], ats: [0x06, 0x75, 0x77, 0x81, 0x02, 0x80], applet: .echo, id: "capture-card"))
            defer { _ = try? SimulatedReaders.controlA.send(.removeAll) }
            _ = try await waitForCard(in: environment.simulatedReaderA, present: true)
            let dir = try scratch("nfc-list-card")
            defer { try? FileManager.default.removeItem(atPath: dir) }
            let before = leftoverCaptureDirectories()
            let out = dir + "/nfc-list.trn"
            let toolEnvironment = Libnfc.environment(reader: environment.simulatedReaderA, base: ProcessInfo.processInfo.environment)
            let result = try await runBinary(["capture", "-o", out, "--", Libnfc.tool("nfc-list")!], environment: toolEnvironment, timeout: .seconds(60))
            if result.status == 0 {
                // A spy of pcsc-lite 2.0.1 or later: no crash, the card's exchanges are in the file.
                #expect(try String(contentsOfFile: out, encoding: .utf8).contains("event connected share=\"exclusive\""))
            } else {
                #expect(result.status == 1)
                #expect(result.err.contains("was killed by SIGSEGV inside pcsc-lite's spy library, in SCardTransmit"), "\(result.err)")
                #expect(result.err.contains("pcsc-lite issue #159, fixed in pcsc-lite 2.0.1"))
                #expect(result.err.contains("the calls before the crash were saved in \(out)"))
                // What came before the crash: libnfc connected to the card exclusively and sent the
                // ACR122U's firmware pseudo-APDU, whose call never returned.
                let text = try String(contentsOfFile: out, encoding: .utf8)
                #expect(text.contains("event connected share=\"exclusive\" protocol=\"T=1\""), "\(text)")
                #expect(text.contains("; the log ends inside SCardTransmit"))
                #expect(text.contains("> FF 00 48 00 00"))
            }
            #expect(leftoverCaptureDirectories().subtracting(before).isEmpty, "the temporary HOME was removed")
        }

        /// SIGTERM to capture reaches the captured program (no orphan), and what was captured up to
        /// then is written; the exit status is 128 + 15.
        @Test func aSignalIsPassedOnAndTheCaptureWritten() async throws {
            let environment = try await sharedEnvironment()
            let dir = try scratch("signal")
            defer { try? FileManager.default.removeItem(atPath: dir) }
            let before = leftoverCaptureDirectories()
            let out = dir + "/monitor.trn"
            let binary = try secbridgeBinary().path
            let capture = try BinaryProcess(["capture", "-o", out, "--", binary, "monitor"], environment: ProcessInfo.processInfo.environment)
            defer { capture.stop() }
            // monitor reports the readers it found: it made its PC/SC calls.
            _ = try await capture.wait(for: environment.vpcdReaderName)
            capture.process.terminate()
            try await capture.exit(after: "SIGTERM")
            let errors = capture.finalStandardError()
            #expect(capture.process.terminationStatus == 143, "\(errors)")
            #expect(errors.contains("was stopped by SIGTERM (passed on to it); its session so far was saved in \(out)"), "\(errors)")
            let text = try String(contentsOfFile: out, encoding: .utf8)
            #expect(text.contains("event state-changed reader=\"\(environment.vpcdReaderName)\""))
            #expect(leftoverCaptureDirectories().subtracting(before).isEmpty, "the temporary HOME was removed")
        }

        /// A program that does not exist gets capture's one error line; ldd's own complaint came
        /// first ("ldd: /nonexistent/…: No such file or directory").
        @Test func aMissingProgramGetsOneClearError() async throws {
            let dir = try scratch("missing")
            defer { try? FileManager.default.removeItem(atPath: dir) }
            let program = "/nonexistent/secbridge-no-such-program"
            let result = try await runBinary(["capture", "-o", dir + "/x.trn", "--", program],
                                             environment: ProcessInfo.processInfo.environment)
            #expect(result.status == 1)
            #expect(result.err == "secbridge: error: cannot run '\(program)': No such file or directory: no such program on PATH\n", "\(result.err)")
            #expect(!FileManager.default.fileExists(atPath: dir + "/x.trn"))
        }

        @Test func programWithoutPCSCCallsIsAClearErrorAndNoFile() async throws {
            let dir = try scratch("none")
            defer { try? FileManager.default.removeItem(atPath: dir) }
            let before = leftoverCaptureDirectories()
            let result = try await runBinary(["capture", "-o", dir + "/x.trn", "--", "/bin/true"],
                                             environment: ProcessInfo.processInfo.environment)
            #expect(result.status == 1)
            #expect(result.err.contains("'/bin/true' made no PC/SC call through the spy"))
            #expect(!FileManager.default.fileExists(atPath: dir + "/x.trn"))
            #expect(leftoverCaptureDirectories().subtracting(before).isEmpty, "the temporary HOME was removed after the failure")
        }
    }
}
