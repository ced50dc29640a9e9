import Foundation
import Testing

/// `simulate --in-process` as a user starts it: peers placed by options go to its own readers'
/// sockets, and its directory is gone after it stops. No pcscd is involved.
@Suite struct SimulateInProcessTests {
    @Test func placedPeersGoToItsOwnReadersAndItCleansUp() async throws {
        let result = try await runBinary(
            ["simulate", "--in-process", "--card", "04A1B2C3", "--timeout", "0.5"], environment: ProcessInfo.processInfo.environment)
        #expect(result.status == 0, "\(result.err)")
        let socket = try #require(result.out.split(separator: "\n").first { $0.hasPrefix("reader a: ") }?
            .split(separator: "(control socket ").last?.dropLast(), "\(result.out)")
        let directory = URL(fileURLWithPath: String(socket)).deletingLastPathComponent().deletingLastPathComponent().path
        #expect(directory.hasSuffix("-inprocess"), "\(directory)")
        #expect(!FileManager.default.fileExists(atPath: directory), "\(directory) is left behind")
    }

    /// acsccid names 072F:2200 `ACS ACR122U` (acsccid src/supported_readers.txt), libccid
    /// `ACS ACR122U PICC Interface`: the readers of `--personality acs-driver` carry acsccid's name
    /// (docs/acr122-units.md §2).
    @Test func theACSDriverPersonalityNamesTheReadersAsAcsccidDoes() async throws {
        let result = try await runBinary(
            ["simulate", "--in-process", "--personality", "acs-driver", "--timeout", "0.5"], environment: ProcessInfo.processInfo.environment)
        #expect(result.status == 0, "\(result.err)")
        #expect(result.out.contains("reader a: ACS ACR122U 00 00  (control socket "), "\(result.out)")
        let libccid = try await runBinary(
            ["simulate", "--in-process", "--personality", "acr122u215", "--timeout", "0.5"], environment: ProcessInfo.processInfo.environment)
        #expect(libccid.out.contains("reader a: ACS ACR122U PICC Interface 00 00  (control socket "), "\(libccid.out)")
    }
}
