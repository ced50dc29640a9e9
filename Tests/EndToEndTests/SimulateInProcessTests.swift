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
}
