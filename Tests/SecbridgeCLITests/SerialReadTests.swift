import PCSCCore
import SecbridgeTesting
import Testing

@testable import SecbridgeCLI
@testable import SecbridgeTools

/// `secbridge read --pn532 --device tty:/dev/pts/N` (Sources/SecbridgeTools/SerialRead.swift)
/// against the simulated serial PN532 board of an in-process desk (control verb `pn532-serial`),
/// reading the Type 4 Tag applet placed through the ACR122U's control socket in the shared field.
/// No PC/SC call: the serial path does not open a context.
@Suite struct SerialReadTests {
    /// The CLI on a thread of its own (its waits block; never on Swift's shared pool).
    static func runOnOwnThread(_ arguments: [String]) async throws -> (status: Int32, out: String, err: String) {
        let executor = BlockingExecutor(name: "serial-read")
        defer { executor.shutdown() }
        return try await executor.run { run(arguments) }
    }

    @Test func readThroughThePseudoTerminalDecodesTheNDEFURI() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        _ = try desk.control(.placeCard(uid: [0x04, 0xA1, 0xB2, 0xC3], applet: .t4tNDEF, id: "card"))
        let path = try #require(try desk.control(.pn532Serial)["path"])
        let result = try await Self.runOnOwnThread(["read", "--pn532", "--device", "tty:" + path])
        #expect(result.status == 0, "\(result.err)")
        #expect(result.out.hasPrefix("reader: tty:\(path)\nUID 04 A1 B2 C3  ATS "), "\(result.out)")
        // The Type 4 Tag sequence (NFC Forum T4T 2.0 §5.4): NDEF application SELECT first.
        #expect(result.out.contains("> 00 A4 04 00 07 D2 76 00 00 85 01 01 00\n< 90 00\n"), "\(result.out)")
        #expect(result.out.hasSuffix("NDEF record 1: URI https://example.com\n"), "\(result.out)")
    }

    @Test func theSerialPathRefusesWhatItDoesNotTake() async throws {
        let withoutPN532 = run(["read", "--device", "tty:USB0"])
        #expect(withoutPN532.status == 64)
        #expect(withoutPN532.err.hasPrefix("secbridge: error: --device tty:USB0 is a PN532 board on a serial line: add --pn532"), "\(withoutPN532.err)")
        let withRecord = run(["read", "--pn532", "--device", "tty:USB0", "--record", "/tmp/x.trn"])
        #expect(withRecord.err.hasPrefix("secbridge: error: --record is not available with --device yet"), "\(withRecord.err)")
        let withReader = run(["read", "--pn532", "--device", "tty:USB0", "--reader", "0"])
        #expect(withReader.status == 64)
        #expect(withReader.err.hasPrefix("secbridge: error: --reader and --device name two readers: give one (--device tty:USB0 is a PN532 board on a serial line)"), "\(withReader.err)")
        let missing = run(["read", "--pn532", "--device", "tty:/nonexistent/ttyUSB9"])
        #expect(missing.status == 1)
        #expect(missing.err.contains("cannot open /nonexistent/ttyUSB9"), "\(missing.err)")
        #expect(missing.err.contains("secbridge doctor --device tty:/nonexistent/ttyUSB9"), "\(missing.err)")
    }
}
