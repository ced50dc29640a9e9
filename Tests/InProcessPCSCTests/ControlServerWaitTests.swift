import Foundation
import PCSCCore
import SecbridgeTesting
import Testing

@testable import SimulatedACR122IFD

/// The control server of an in-process simulated reader sleeps until a connection or stop():
/// its accept loop wakes once for the stop and never on its own (no poll step).
@Suite struct ControlServerWaitTests {
    @Test func acceptLoopWakesOnlyForTheStop() async throws {
        let directory = NSTemporaryDirectory() + "control-wait-" + UUID().uuidString
        let server = ControlServer(socketPath: directory + "/c.sock") { _ in ControlReply([("pong", "1")]) }
        try server.start(directory: directory)
        #expect(FileManager.default.fileExists(atPath: directory + "/c.sock"))
        // Longer than the old 200 ms poll step, which would have woken the loop at least once.
        let (idle, afterStop) = try await onOwnThread {
            sleepThread(.milliseconds(250))
            let idle = server.acceptWakeCount
            server.stop()
            return (idle, server.acceptWakeCount)
        }
        #expect(idle == 0)
        #expect(afterStop == 1)
        #expect(!FileManager.default.fileExists(atPath: directory + "/c.sock"), "the socket file is removed when stop() returns")
    }
}
