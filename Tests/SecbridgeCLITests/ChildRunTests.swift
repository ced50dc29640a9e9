import Foundation
import PCSCSandbox
import Testing

/// ``runChild(_:_:environment:timeout:)``'s bounds: a child that does not exit is killed and the
/// test told so; one that fills both pipes is read to its end.
@Suite struct ChildRunTests {
    @Test func aChildThatNeverExitsIsKilledAtTheBoundAndTheErrorSaysSo() async throws {
        do {
            _ = try await runChild(URL(fileURLWithPath: "/bin/sh"), ["-c", "trap '' INT TERM; echo started; exec sleep 30"], timeout: .milliseconds(300))
            Issue.record("runChild returned although the child runs 30 s")
        } catch let error as HarnessError {
            #expect(error.code == .timeout)
            #expect(error.reason.hasPrefix("`sh -c trap '' INT TERM; echo started; exec sleep 30` did not exit within 0.3 seconds; it was killed (SIGKILL); standard output: started\n"), "\(error.reason)")
        }
    }

    /// 1 MiB on standard error first, then 1 MiB on standard output.
    @Test func aChildThatFillsBothPipesIsReadWhole() async throws {
        let script = "head -c 1048576 /dev/zero | tr '\\0' e >&2; head -c 1048576 /dev/zero | tr '\\0' o"
        let result = try await runChild(URL(fileURLWithPath: "/bin/sh"), ["-c", script], timeout: .seconds(60))
        #expect(result.status == 0)
        #expect(result.out.utf8.count == 1_048_576 && result.out.utf8.allSatisfy { $0 == UInt8(ascii: "o") })
        #expect(result.err.utf8.count == 1_048_576 && result.err.utf8.allSatisfy { $0 == UInt8(ascii: "e") })
    }
}
