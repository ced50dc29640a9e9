import Foundation
import PCSCSandbox
import Testing

/// The subprocess helpers' bounds (SharedReader.swift): a child that does not exit is killed and
/// the test told so, and a child that fills both pipes is read to its end. Neither needs pcscd.
@Suite struct BoundedChildTests {
    /// A child with SIGINT and SIGTERM ignored (as a child started from a thread of Swift's pool
    /// has them blocked) that never exits: the bound kills it with SIGKILL and says what it was.
    @Test func aChildThatIgnoresSIGINTAndSIGTERMIsKilledAtTheBoundAndTheTestToldWhy() async throws {
        let child = try BinaryProcess(["-c", "trap '' INT TERM; echo ready; while :; do sleep 1; done"], environment: ProcessInfo.processInfo.environment,
                                      executable: URL(fileURLWithPath: "/bin/sh"))
        _ = try await child.wait(for: "ready")
        child.process.interrupt()
        child.process.terminate()
        do {
            try await child.exit(within: .milliseconds(300), after: "SIGINT and SIGTERM")
            Issue.record("exit(within:after:) returned although the child ignores both signals")
        } catch let error as HarnessError {
            #expect(error.code == .timeout)
            #expect(error.reason.hasPrefix("`sh -c trap '' INT TERM; echo ready; while :; do sleep 1; done` (pid \(child.process.processIdentifier)) did not exit within 0.3 seconds after SIGINT and SIGTERM; it was killed (SIGKILL)"), "\(error.reason)")
            #expect(error.reason.contains("standard output: [\"ready\"]"), "\(error.reason)")
        }
        #expect(!child.process.isRunning)
        #expect(child.process.terminationReason == .uncaughtSignal)
        #expect(child.process.terminationStatus == SIGKILL)
    }

    /// 1 MiB on standard error before 1 MiB on standard output: read one after the other, the
    /// child would block on the full error pipe while the reader waited for output's end.
    @Test func aChildThatFillsBothPipesIsReadWhole() async throws {
        let script = "head -c 1048576 /dev/zero | tr '\\0' e >&2; head -c 1048576 /dev/zero | tr '\\0' o; echo done >&2"
        let result = try await runProgram(URL(fileURLWithPath: "/bin/sh"), ["-c", script], environment: ProcessInfo.processInfo.environment)
        #expect(result.status == 0)
        #expect(result.out.utf8.count == 1_048_576)
        #expect(result.out.utf8.allSatisfy { $0 == UInt8(ascii: "o") })
        #expect(result.err.utf8.count == 1_048_576 + 5)
        #expect(result.err.hasSuffix("edone\n"))
    }
}
