import Foundation
import PCSCSandbox
import Testing

/// `secbridge replay --against simulated`: a transcript's host side against a simulated ACR122U in
/// the tool's own process (no pcscd).
@Suite struct ReplaySimulatedTests {
    func fixture(_ name: String) throws -> String {
        guard let root = HarnessPaths.repositoryRoot else {
            throw HarnessError(code: .missingDependency, reason: "the repository root was not found")
        }
        return root.appendingPathComponent("Fixtures/\(name)").path
    }

    @Test func readerLevelTranscriptMatchesAFreshSimulatedReader() async throws {
        try requireBuiltBinaries()
        let result = try await runBinary(
            ["replay", "--against", "simulated", try fixture("simulated/reader-basics.trn")],
            environment: ProcessInfo.processInfo.environment)
        #expect(result.status == 0, "\(result.err)")
        // ACR122U API v2.04: firmware string (no SW), LED 90 03, PICC parameters FF at power-up;
        // PN532: GetFirmwareVersion 32 01 06 07; the feature TLV 13 04 42 00 00 01.
        #expect(result.out.contains("replayed 5 exchanges from "))
        #expect(result.out.contains("(the reader itself, DIRECT): every answer matches"))
    }

    /// A DIRECT replay serves no control socket (its reader is opened with `control=none`): it makes
    /// no directory under /tmp, so a file where the socket's directory would go does not stop it,
    /// and the driver logs no socket. The shell writes its pid, makes the file for that pid and
    /// then execs the tool, which keeps the pid: with a control server the driver's `mkdir` of
    /// `<that file>/a` fails and the replay ends "cannot create the in-process simulated reader".
    /// `replay --against simulated FIXTURE` run by a shell that first makes, with `command`
    /// (`: >` a file, `mkdir` a directory), the path `/tmp/secbridge-replay-simulated.<pid>` the
    /// replay's reader directory once had, then execs the tool, which keeps the pid. Returns the
    /// result and that path.
    func replay(_ fixtureName: String, after command: String) async throws -> (result: (status: Int32, out: String, err: String), path: String) {
        try requireBuiltBinaries()
        let script = #"echo $$; "# + command + #" /tmp/secbridge-replay-simulated.$$ && exec "$0" replay --against simulated "$1""#
        let result = try await runProgram(
            URL(fileURLWithPath: "/bin/sh"), ["-c", script, try secbridgeBinary().path, try fixture(fixtureName)],
            environment: ProcessInfo.processInfo.environment)
        let pid = try #require(result.out.split(separator: "\n").first.flatMap { Int32($0) }, "\(result.out)")
        return (result, "/tmp/secbridge-replay-simulated.\(pid)")
    }

    @Test func aDirectReplayStartsNoControlServer() async throws {
        let (result, inTheWay) = try await replay("simulated/reader-basics.trn", after: ": >")
        defer { unlink(inTheWay) }
        #expect(result.status == 0, "\(result.err)")
        #expect(result.out.contains("(the reader itself, DIRECT): every answer matches"), "\(result.out)")
        #expect(!result.err.contains("control socket"), "\(result.err)")
        var info = stat()
        #expect(lstat(inTheWay, &info) == 0 && info.st_mode & S_IFMT == S_IFREG)  // left as it was
    }

    /// A card-session replay serves a control socket (to place its card). Its directory is made by
    /// mkdtemp: a directory another local user made beforehand at the old predictable name
    /// (`/tmp/secbridge-replay-simulated.<pid>`, mode 0777) is neither used for the socket nor
    /// removed afterwards.
    @Test func aCardSessionReplaysControlSocketIsNotInAPredictableDirectory() async throws {
        let (result, premade) = try await replay("vicc/select-read.trn", after: "mkdir -m 777")
        defer { _ = rmdir(premade + "/a"); _ = rmdir(premade) }
        #expect(result.status == 0, "\(result.err)")
        var info = stat()
        #expect(lstat(premade, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR)  // left as it was
        #expect(lstat(premade + "/a", &info) != 0)  // nothing made in it
    }

    @Test func aDifferentFirmwareIsReportedWithTheLine() async throws {
        try requireBuiltBinaries()
        let original = try String(contentsOfFile: try fixture("simulated/reader-basics.trn"), encoding: .utf8)
        // A recording from a unit with firmware 2.14 ("ACR122U214").
        let edited = original.replacingOccurrences(
            of: "< 41 43 52 31 32 32 55 32 30 37", with: "< 41 43 52 31 32 32 55 32 31 34")
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("secbridge-fw214-\(UUID().uuidString).trn")
        defer { try? FileManager.default.removeItem(at: file) }
        try edited.write(to: file, atomically: true, encoding: .utf8)
        let result = try await runBinary(
            ["replay", "--against", "simulated", file.path], environment: ProcessInfo.processInfo.environment)
        #expect(result.status == 1)
        #expect(result.err.contains("\(file.path):15: the device answered differently than recorded (first difference at byte 8)\n"))
        #expect(result.err.contains("  expected: ctl 0x42000001 < 41 43 52 31 32 32 55 32 31 34\n"))
        #expect(result.err.contains("  actual:   ctl 0x42000001 < 41 43 52 31 32 32 55 32 30 37\n"))
    }

    @Test func cardSessionReplaysThroughTheSimulatedReader() async throws {
        try requireBuiltBinaries()
        let result = try await runBinary(
            ["replay", "--against", "simulated", "--json", try fixture("vicc/select-read.trn")],
            environment: ProcessInfo.processInfo.environment)
        #expect(result.status == 0, "\(result.err)")
        #expect(result.out.contains("\"against\": \"simulated\""))
        #expect(result.out.contains("\"exchanges\": 3"))
        #expect(result.out.contains("\"result\": \"match\""))
    }

    @Test func readerAndRecordDoNotApply() async throws {
        try requireBuiltBinaries()
        let result = try await runBinary(
            ["replay", "--against", "simulated", "--reader", "0", try fixture("simulated/reader-basics.trn")],
            environment: ProcessInfo.processInfo.environment)
        #expect(result.status == 64)
    }
}
