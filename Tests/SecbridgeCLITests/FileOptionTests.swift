import Foundation
import SecbridgeTesting
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Files that are not what an option wants: a FIFO as the credential.
@Suite struct FileOptionTests {
    /// A FIFO (or a device) as `--credential` or a `credentials` argument is said to be one; before,
    /// it was "no permission".
    @Test func aCredentialThatIsAFIFOIsSaidToBeOne() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        let fifo = desk.directory + "/credential.fifo"
        #expect(mkfifo(fifo, 0o600) == 0)
        let words = "cannot read \(fifo): it is not a regular file (a FIFO, a device or a socket); give the path of a credential file (*.json)"
        let emulate = try await runTool(["emulate", "--credential", fifo, "--yes"], on: desk)
        #expect(emulate.status == 1)
        #expect(emulate.err.contains(words), "\(emulate.err)")
        let list = try await runTool(["credentials", fifo], on: desk)
        #expect(list.status == 1)
        #expect(list.err.contains(words), "\(list.err)")
        #expect(!list.err.contains("no permission"))
    }
}
