import Foundation
import PCSCCore
import Testing

@testable import SecbridgeCLI

/// How the CLI words a pcscd that went away during a call, and an invalid call bound.
@Suite struct DaemonLossMessageTests {
    /// SCARD_F_COMM_ERROR from SCardTransmit with nothing listening on the socket (what pcsc-lite
    /// 1.9.9 returns when pcscd is killed during the call, measured with the simulated ACR122U):
    /// the message says pcscd went away, not "an internal communications error".
    @Test func commErrorWithTheSocketGoneSaysPcscdWentAway() {
        let error = PCSCError(code: 0x8010_0013, function: "SCardTransmit")
        let text = describe(error, socketAnswers: { _ in false })
        #expect(text.hasPrefix("SCardTransmit failed: pcscd went away during the call (SCARD_F_COMM_ERROR, and nothing listens on "))
        #expect(!text.contains("internal communications error"))
        let violation = describe(PCSCError(code: 0x8010_006A, function: "SCardTransmit"), socketAnswers: { _ in false })
        #expect(violation.contains("pcscd went away during the call (SCARD_W_SECURITY_VIOLATION"))
        #expect(!violation.contains("security violation"))
    }

    /// With pcscd still answering, the code keeps its own meaning: it was not the daemon.
    @Test func commErrorWithTheSocketAnsweringKeepsItsMeaning() {
        let text = describe(PCSCError(code: 0x8010_0013, function: "SCardControl"), socketAnswers: { _ in true })
        #expect(text == "SCardControl failed: SCARD_F_COMM_ERROR (0x80100013): an internal communications error has been detected")
    }

    /// The socket probe itself: a path where nothing exists does not answer; a listening Unix
    /// socket does.
    @Test func theSocketProbeTellsAListenerFromNothing() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("secbridge-probe-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("s.sock").path
        #expect(!unixSocketAnswers(path))
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listener) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            buffer.copyBytes(from: Array(path.utf8))
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        #expect(bound == 0)
        #expect(listen(listener, 1) == 0)
        #expect(unixSocketAnswers(path))
    }

    /// SECBRIDGE_CALL_TIMEOUT: unset means 40 s, 1…3600 whole seconds are taken, anything else is
    /// refused with a message naming the value (issue: `abc` and `0` silently meant 40 s).
    @Test func callBoundAcceptsWholeSecondsAndRefusesTheRest() {
        #expect(SecbridgeCLI.callBound(fromEnvironment: nil) == .success(.seconds(40)))
        #expect(SecbridgeCLI.callBound(fromEnvironment: "90") == .success(.seconds(90)))
        #expect(SecbridgeCLI.callBound(fromEnvironment: "3600") == .success(.seconds(3600)))
        for bad in ["abc", "0", "3601", "2.5", "", "-5"] {
            guard case .failure(let error) = SecbridgeCLI.callBound(fromEnvironment: bad) else {
                Issue.record("\(bad) was accepted")
                continue
            }
            #expect(error.message.hasPrefix("SECBRIDGE_CALL_TIMEOUT=\"\(bad)\" is not a whole number of seconds from 1 to 3600"))
        }
    }
}
