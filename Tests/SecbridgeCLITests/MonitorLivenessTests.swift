import SecbridgeTesting
import Testing

@testable import SecbridgeCLI

/// `monitor --liveness` below 0.1 s: a usage error. Before, `--liveness 0.0001` was taken and
/// monitor reported "pcscd gave no answer within 0.000 s" at once, about a pcscd that answered.
@Suite struct MonitorLivenessTests {
    @Test func aLivenessPeriodBelowATenthOfASecondIsRefused() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        let result = try await runTool(["monitor", "--liveness", "0.0001", "--count", "1"], on: desk)
        #expect(result.status == 64)
        #expect(result.err.contains("--liveness takes a number of seconds from 0.1 to 3600, not '0.0001'"), "\(result.err)")
        #expect(!result.out.contains("service-unresponsive"))
        let options = [OptionSpec.value("liveness", "SECONDS", "", .seconds(limit: 3600, atLeast: 0.1))]
        #expect(try parseArguments(["--liveness", "0.1"], options: options).seconds("liveness") == .milliseconds(100))
        #expect(try parseArguments(["--liveness", "0.5"], options: options).seconds("liveness") == .milliseconds(500))
    }
}
