import Foundation
import PCSCCore
import SecbridgeTesting
import Testing

@testable import SecbridgeCLI
@testable import SecbridgeTools

/// `secbridge emulate --device tty:/dev/pts/N` (SerialPN532EmulationBackend): the credential
/// presented by the simulated serial PN532 board of an in-process desk (control verb
/// `pn532-serial`), read by the model of Android's reader placed in the same field.
@Suite struct SerialEmulateTests {
    static func credential(_ name: String) -> String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Fixtures/credentials/\(name)").path
    }

    /// The host runs on real time here (a serial line is no PC/SC reader of the desk's clock),
    /// so the desk is on scaled time as well: the board's TgInitAsTarget waits for the phone in
    /// simulated time that passes.
    @Test func androidReadsTheURITagTheBoardEmulates() async throws {
        let desk = try await SimulatedDesk.open(time: .scaled(SimulatedDesk.defaultTimeScale))
        defer { desk.close() }
        let path = try #require(try desk.control(.pn532Serial)["path"])
        try desk.control(.placeTerminal(id: "phone"))
        let result = try await runTool(["emulate", "--credential", Self.credential("uri-tag.json"), "--yes", "--device", "tty:" + path], on: desk)
        #expect(result.status == 0, "\(result.err)\n\(result.out)")
        #expect(result.out.contains("state: cardEmulation(example-uri-tag) on tty:\(path)"), "\(result.out)")
        // Android's Type 4 Tag sequence through the board: the NDEF application SELECT first
        // (NFC Forum T4T 2.0 §5.4), and the whole file read.
        #expect(result.out.contains("  terminal > 00 A4 04 00 07 D2 76 00 00 85 01 01 00\n  host     < 90 00\n"), "\(result.out)")
        // The NDEF message of uri-tag.json: one URI record, prefix 04 (https://), example.com.
        #expect(result.out.contains("  host     < D1 01 0C 55 04 65 78 61 6D 70 6C 65 2E 63 6F 6D 90 00\n"), "\(result.out)")
        // Released by the phone (status 29, UM0701-02 §7.1), then the restore: no second arming.
        #expect(result.out.contains("event: fieldStateChanged(fieldAbsent: TgGetData: PN532 status 29"), "\(result.out)")
        #expect(result.out.contains("terminal: 6 APDUs; the NDEF file was read to the end (NLEN 16, 18 bytes)\n"), "\(result.out)")
        let reply = try desk.control(.terminalResult(peer: "phone", waitMilliseconds: 5000))
        #expect(reply["result"] == "passed", "\(reply)")
    }

    @Test func aDeviceAndAReaderTogetherAreAUsageErrorAndAMissingDeviceSaysWhatToCheck() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        let both = try await runTool(
            ["emulate", "--credential", Self.credential("uri-tag.json"), "--yes", "--device", "tty:USB0", "--reader", "0"], on: desk)
        #expect(both.status == 64)
        #expect(both.err.hasPrefix("secbridge: error: --reader and --device name two readers: give one"), "\(both.err)")
        let missing = try await runTool(
            ["emulate", "--credential", Self.credential("uri-tag.json"), "--yes", "--device", "tty:/nonexistent/ttyUSB9"], on: desk)
        #expect(missing.status == 1)
        #expect(missing.err.contains("the PN532 board on /nonexistent/ttyUSB9 could not be opened or did not answer its wake-up"), "\(missing.err)")
        #expect(missing.err.contains("`secbridge doctor --device tty:/nonexistent/ttyUSB9` checks the device"), "\(missing.err)")
    }
}
