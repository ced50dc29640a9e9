import Foundation
import PCSCCore
import SecbridgeTesting
import Testing

/// Control requests of a simulated reader that cannot be carried out: each reply names what was
/// wrong once, and a request never changes the device silently (the control protocol of
/// Sources/SimulatedACR122IFD/ControlProtocol.swift, through an in-process desk's socket).
@Suite struct ControlRefusalTests {
    /// `place-terminal transcript=` with a path it cannot use: the reason is given once (it was
    /// wrapped twice: "transcript P: bad-argument: transcript P: …").
    @Test func aTerminalTranscriptThatCannotBeReadIsNamedOnce() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        let relative = try desk.control().exchange("place-terminal transcript=relative.trn")
        #expect(relative == "error bad-argument transcript path 'relative.trn' must be absolute (pcscd's working directory is not yours)")
        let missing = try desk.control().exchange("place-terminal transcript=/nonexistent/secbridge-terminal.trn")
        #expect(missing.hasPrefix("error bad-argument transcript /nonexistent/secbridge-terminal.trn: "), "\(missing)")
        #expect(!missing.contains("bad-argument:"), "\(missing)")
        #expect(missing.components(separatedBy: "transcript /nonexistent").count == 2, "the path once: \(missing)")
    }
}
