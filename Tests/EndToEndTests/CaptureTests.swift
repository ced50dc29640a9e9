import Foundation
import PCSCSandbox
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
            let toolEnvironment = Libnfc.environment(reader: environment.simulatedReaderA, base: ProcessInfo.processInfo.environment)
            let result = try await runBinary(["capture", "--json", "-o", out, "--", Libnfc.tool("nfc-list")!],
                                             environment: toolEnvironment, timeout: .seconds(60))
            #expect(result.status == 0, "\(result.err)")
            #expect(result.out.contains("\"status\": 0"))
            let text = try String(contentsOfFile: out, encoding: .utf8)
            // libnfc opens the ACR122U directly and asks its firmware version with the escape code.
            #expect(text.contains("event connected share=\"direct\" protocol=\"undefined\""))
            #expect(text.contains(" ctl 0x42000001 > FF 00 48 00 00\n"))
            #expect(text.contains(" ctl 0x42000001 < 41 43 52 31 32 32 55 32 30 37\n"))
            #expect(text.contains(" ctl 0x42000001 > FF 00 00 00 02 D4 02\n"), "PN532 GetFirmwareVersion")
        }

        @Test func programWithoutPCSCCallsIsAClearErrorAndNoFile() async throws {
            let dir = try scratch("none")
            defer { try? FileManager.default.removeItem(atPath: dir) }
            let result = try await runBinary(["capture", "-o", dir + "/x.trn", "--", "/bin/true"],
                                             environment: ProcessInfo.processInfo.environment)
            #expect(result.status == 1)
            #expect(result.err.contains("'/bin/true' made no PC/SC call through the spy"))
            #expect(!FileManager.default.fileExists(atPath: dir + "/x.trn"))
        }
    }
}
