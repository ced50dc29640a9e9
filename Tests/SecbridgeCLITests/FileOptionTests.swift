import Foundation
import SecbridgeTesting
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Files that are not what an option wants: a FIFO as the credential, a directory, a FIFO or an
/// empty name as the recording.
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

    /// `--record` naming a directory, a FIFO or nothing: the error says which, and nothing is sent
    /// (before: "File exists … a recording is never overwritten" for a directory, and "cannot
    /// create : No such file or directory" for an empty name).
    @Test func aRecordingOntoADirectoryAFIFOOrAnEmptyNameIsSaidSo() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        try desk.control(.placeCard(uid: [0x04, 0xA1, 0xB2, 0xC3], id: "card"))
        let directory = desk.directory + "/recordings"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
        let fifo = desk.directory + "/record.fifo"
        #expect(mkfifo(fifo, 0o600) == 0)
        let cases: [(String, String)] = [
            (directory, "cannot create \(directory): File exists (errno 17): a directory has that name; give the path of a new file (e.g. \(directory)/session.trn)"),
            (fifo, "cannot create \(fifo): File exists (errno 17): something that is not a regular file (a FIFO, a device or a socket) has that name; choose another name"),
            ("", "cannot create a file with an empty name: give the path of a new file"),
        ]
        for (path, words) in cases {
            let result = try await runTool(["send", "--record", path, "00 A4 04 00 00"], on: desk)
            #expect(result.status == 1, "\(path)")
            #expect(result.err.contains(words), "\(path): \(result.err)")
            #expect(!result.err.contains("never overwritten"), "\(path): \(result.err)")
        }
        #expect(try desk.control(.cardLog(peer: "card"))["count"] == "0", "nothing was sent")
    }
}
