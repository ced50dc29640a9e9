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

    /// `--tag-key -` takes the key from the first line of standard input; control requests written
    /// in the same breath are read by then (the line reader reads what the pipe holds) and are the
    /// first requests, not lost. Before, `a peers` and `a tag-memory` got no reply.
    @Test func requestsAfterAKeyOnStandardInputAreServed() async throws {
        let result = try await runBinary(
            ["simulate", "--in-process", "--readers", "1", "--tag", "04A1B2C3", "--tag-type", "classic1k", "--tag-key", "-", "--timeout", "0.5"],
            environment: ProcessInfo.processInfo.environment, input: "A0A1A2A3A4A5\na peers\na tag-memory peer=tag first=7 count=1\n")
        #expect(result.status == 0, "\(result.err)")
        let replies = result.out.split(separator: "\n").filter { $0.hasPrefix("ok ") || $0.hasPrefix("error ") }
        #expect(replies.count == 2, "\(result.out)")
        #expect(replies.first == #"ok count=1 list="tag: MIFARE Classic 1K 04 A1 B2 C3""#, "\(result.out)")
        // Sector 1's trailer: the keys read as 00, the transport access bits FF 07 80 69.
        #expect(replies.last?.hasPrefix("ok type=classic1k unit=16 first=7 count=1") == true, "\(result.out)")
        #expect(!result.out.contains("A0 A1 A2") && !result.out.contains("A0A1A2"), "the key is never shown: \(result.out)")
    }
}
