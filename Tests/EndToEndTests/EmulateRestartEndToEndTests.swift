import Foundation
import PCSCSandbox
import SecbridgeCLI
import Testing

/// Issue 33 item 1 for `emulate --keep`: a private pcscd of this test's own with one simulated
/// ACR122U, restarted while emulate keeps its target armed between terminals. A phone before the
/// restart and one after it both read the tag; emulate says once that pcscd came back.
///
/// Real-time check: pcscd's restart and its presence poll take wall-clock time; the reader's
/// device waits (the 5 s MCU timeout) run at a time scale of 0.01, and emulate's 60 s window is
/// the bound of the whole test (it is ended with SIGINT well before).
@Suite struct EmulateRestartEndToEndTests {
    @Test func emulateKeepServesAPhoneAfterPcscdRestarts() async throws {
        try requireBuiltBinaries()
        let directory = NSTemporaryDirectory() + "secbridge-emulate-restart.\(getpid())"
        try? FileManager.default.removeItem(atPath: directory)
        try FileManager.default.createDirectory(atPath: directory + "/a", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // A reader of this test's own (not the shared reader's control directory).
        let reader = ReaderConfEntry(
            friendlyName: SimulatedReaders.friendlyName, deviceName: directory + "/a:field=emulate-restart:timescale=0.01",
            libraryPath: SimulatedReaders.libraryPath)
        let pcscd = try PrivatePCSCD(readers: [reader])
        defer { pcscd.stop() }
        _ = try await blocking { try pcscd.start() }
        let control = SimulatedReaderControl(socketPath: directory + "/a/control.sock")
        let environment = ProcessInfo.processInfo.environment.merging(pcscd.environment) { $1 }
        let emulate = try BinaryProcess(
            ["emulate", "--credential", try repositoryPath("Fixtures/credentials/uri-tag.json"), "--yes", "--keep",
             "--reader", SimulatedReaders.friendlyName],
            environment: environment)
        defer { emulate.stop() }
        /// The simulated phone `id`'s verdict, waited for (bounded).
        func phoneReads(_ id: String) async throws -> SimulatedReaderReply {
            try await blocking { () throws -> SimulatedReaderReply in
                try control.send("place-terminal script=android-t4t-read id=\(id)")
                return try control.send("terminal-result peer=\(id) wait-ms=20000", timeout: .seconds(25))
            }
        }
        let before = try await phoneReads("before")
        #expect(before["result"] == "passed", "\(before) \(emulate.output) \(emulate.standardError)")

        _ = try await blocking { try pcscd.restart() }
        let after = try await phoneReads("after")
        #expect(after["result"] == "passed", "\(after) \(emulate.output) \(emulate.standardError)\n\(pcscd.logTail())")
        #expect(emulate.process.isRunning)
        #expect(emulate.standardError.components(separatedBy: pcscdCameBackLine).count - 1 == 1, "\(emulate.standardError)")

        emulate.process.interrupt()
        try await emulate.exit(after: "SIGINT")
        let output = emulate.finalOutputText()
        // Both phones' APDUs: the Type 4 Tag read twice (6 APDUs each).
        #expect(output.components(separatedBy: "00 A4 04 00 07 D2 76 00 00 85 01 01 00").count - 1 == 2, "\(output)")
        _ = try await blocking { emulate.stop(); pcscd.stop() }
    }
}
