import Testing
@testable import SecureElementCredential

/// The relay's call bound: `SECBRIDGE_CALL_TIMEOUT` whole seconds 1…3600, else 40 s (the binaries
/// refuse other values before any command runs: SecbridgeCLITests/DaemonLossMessageTests).
@Suite struct CallBoundTests {
    @Test func theRelayTakesTheBoundOfSECBRIDGE_CALL_TIMEOUT() {
        #expect(CardSecureElement.callBound(fromEnvironment: nil) == .seconds(40))
        #expect(CardSecureElement.callBound(fromEnvironment: "90") == .seconds(90))
        #expect(CardSecureElement.callBound(fromEnvironment: "1") == .seconds(1))
        #expect(CardSecureElement.callBound(fromEnvironment: "3600") == .seconds(3600))
        for refused in ["abc", "0", "2.5", "3601", "", "-5"] {
            #expect(CardSecureElement.callBound(fromEnvironment: refused) == .seconds(40), "\(refused)")
        }
        #expect(CardSecureElement.pcsc(readerName: "r", callBound: .seconds(7)).callBound == .seconds(7))
    }
}
