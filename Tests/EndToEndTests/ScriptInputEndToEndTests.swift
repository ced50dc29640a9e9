import Foundation
import Testing

/// `run -` and `shell` given a standard input that cannot be read: the binary as a user starts it
/// from a shell. No reader is needed: the script's first line is read before a reader is opened.
@Suite struct ScriptInputEndToEndTests {
    /// A directory as standard input (`secbridge run - < DIR`): read(2) fails with EISDIR, which
    /// is no end of the script. Before, the tool ran nothing and exited 0, as for an empty script.
    @Test(arguments: [["run", "-"], ["shell"]])
    func aDirectoryAsStandardInputIsAnError(command: [String]) async throws {
        try requireBuiltBinaries()
        let result = try await runProgram(
            URL(fileURLWithPath: "/bin/sh"), ["-c", #"exec "$0" "$@" < /"#, try secbridgeBinary().path] + command,
            environment: ProcessInfo.processInfo.environment)
        #expect(result.status == 1, "\(result.err)")
        #expect(
            result.err == "secbridge: error: <stdin>: cannot read standard input: Is a directory (errno 21); give the script through a pipe, "
                + "a regular file (`< FILE`) or as `secbridge run FILE`\n", "\(result.err)")
        #expect(result.out == "")
    }
}
