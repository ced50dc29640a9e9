import Foundation
import PCSCCore
import SecbridgeTesting
import Testing

@testable import SecbridgeCLI
@testable import SecbridgeTools

/// Another program on the reader the tool wants, in process: one that keeps a PC/SC transaction
/// open (pcscd 1.9.9 then lets every SCardConnect wait until it ends: winscard.c, "wait until a
/// possible transaction is finished"; docs/faults.md §2), or one that holds the reader exclusively.
/// Each command that connects ends within the bound and names the other program; a reader the
/// command never reached is not "restored" and is not called broken.
@Suite struct OtherProgramTests {
    static let credential = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fixtures/credentials/worked-example-tag.json").path

    /// Another program's transaction: `send`, `control`, `read`, `read --pn532`, `emulate`,
    /// `reset` and `selftest --hardware` each stop at the bound (60 s on the desk's time scale)
    /// with exit 1 and say that another program holds a transaction; before, `read`,
    /// `read --pn532`, `emulate` and `selftest --hardware` connected with no bound at all (through
    /// pcscd they waited as long as the other program kept its transaction), and the others
    /// blamed pcscd or the card. Once the transaction ends, `send` goes through.
    @Test func anotherProgramsTransactionIsNamedByEveryCommandThatConnects() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        let reader = desk.names[0]
        try desk.control(.placeCard(uid: [0x04, 0xA1, 0xB2, 0xC3], applet: .t4tNDEF, id: "card"))
        let context = try desk.client.establishContext()
        let holder = try context.connect(to: reader, share: .shared, protocols: .any)
        try holder.beginTransaction()
        let transaction = "another program holds a PC/SC transaction on the reader and did not let go"
        let held = "another program holds the card in '\(reader)' (a PC/SC transaction of its own, or exclusive access) and did not let go"
        let commands: [([String], String)] = [
            (["send", "--reader", reader, "00 A4 04 00 00"], held),
            (["control", "--reader", reader, "FF 00 48 00 00"], transaction),
            (["read", "--reader", reader], held),
            (["read", "--reader", reader, "--pn532"], held),
            (["emulate", "--credential", Self.credential, "--yes", "--reader", reader], transaction),
            (["reset", "--reader", reader], "was not reset: another program holds it (exclusive access, or a PC/SC transaction it keeps), so nothing was sent"),
            (["selftest", "--hardware", "--reader", reader, "--output", desk.directory + "/bundle"], transaction),
        ]
        for (arguments, words) in commands {
            let result = try await runTool(arguments, on: desk)
            #expect(result.status == 1, "\(arguments): \(result.out)\n\(result.err)")
            #expect(result.err.contains(words), "\(arguments): \(result.err)")
            #expect(!result.err.contains("restoring"), "\(arguments): nothing was changed, so nothing is restored: \(result.err)")
            #expect(!result.err.contains("unplug"), "\(arguments): the reader is not at fault: \(result.err)")
        }
        // The card never saw a command while the transaction was held.
        #expect(try desk.control(.cardLog(peer: "card"))["count"] == "0")
        try holder.endTransaction(.leave)
        let send = try await runTool(["send", "--reader", reader, "00 A4 04 00 07 D2 76 00 00 85 01 01 00"], on: desk)
        #expect(send.status == 0, "\(send.err)")
        #expect(send.out.contains("< 90 00\n"), "\(send.out)")
        try holder.disconnect(.leave)
    }

    /// Another program holds the reader exclusively: `emulate` says so and what to do (before: the
    /// bare code), `read --pn532` no longer "restores" a reader it never reached and calls it not
    /// fully restored (before: "run `secbridge reset`, or unplug and replug it"), and `reset` says
    /// that another program has the reader instead of "unplug the reader and plug it in again".
    @Test func anExclusiveHolderIsNamedAndTheReaderIsNotCalledBroken() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        let reader = desk.names[0]
        try desk.control(.placeCard(uid: [0x04, 0xA1, 0xB2, 0xC3], applet: .t4tNDEF, id: "card"))
        let context = try desk.client.establishContext()
        let holder = try context.connect(to: reader, share: .exclusive, protocols: .any)
        defer { try? holder.disconnect(.leave) }
        let exclusive = "SCARD_E_SHARING_VIOLATION (0x8010000B): the card cannot be accessed because of other connections outstanding; another program holds the card exclusively; close it and retry"
        let emulate = try await runTool(["emulate", "--credential", Self.credential, "--yes", "--reader", reader], on: desk)
        #expect(emulate.status == 1)
        #expect(emulate.err.contains("\(reader) cannot emulate a card: could not connect to it directly: SCardConnect failed: \(exclusive)"), "\(emulate.err)")
        let read = try await runTool(["read", "--reader", reader, "--pn532"], on: desk)
        #expect(read.status == 1)
        #expect(read.err.contains(exclusive), "\(read.err)")
        #expect(!read.err.contains("restoring") && !read.err.contains("not fully restored"), "\(read.err)")
        let reset = try await runTool(["reset", "--reader", reader], on: desk)
        #expect(reset.status == 1)
        #expect(reset.err.contains("\(reader) was not reset: another program holds it"), "\(reset.err)")
        #expect(!reset.err.contains("unplug"), "\(reset.err)")
        // The reader itself was never touched: automatic PICC polling still on.
        #expect(try desk.control(.status)["picc"] == "FF")
    }

    /// `doctor` with the DIRECT connection refused because another program keeps the reader: the
    /// driver and firmware checks say to close it, not to reset or replug the reader.
    @Test func doctorSaysToCloseTheProgramThatHoldsTheReader() throws {
        var findings = DoctorPCSCFindings()
        findings.readers = ["ACS ACR122U PICC Interface 00 00"]
        findings.reader = findings.readers[0]
        findings.directError = "SCardConnect failed: SCARD_E_SHARING_VIOLATION (0x8010000B)"
        findings.firmwareError = "SCardConnect failed: SCARD_E_SHARING_VIOLATION (0x8010000B)"
        findings.heldByAnotherProgram = true
        let checks = Doctor.evaluate(system: DoctorSystem(root: try DoctorTests.fakeRoot([:]), environment: [:]), pcsc: findings)
        let close = "another program holds the reader (exclusive access, or a PC/SC transaction it keeps): close it (pcsc_scan, a browser or a middleware that keeps the card) and run `secbridge doctor` again"
        #expect(DoctorTests.check(checks, "driver")?.fix == close)
        #expect(DoctorTests.check(checks, "firmware")?.fix == close)
        findings.heldByAnotherProgram = false
        let other = Doctor.evaluate(system: DoctorSystem(root: try DoctorTests.fakeRoot([:]), environment: [:]), pcsc: findings)
        #expect(DoctorTests.check(other, "firmware")?.fix == "run `secbridge reset`; if that fails, unplug and replug the reader")
    }

    /// Through pcscd there is no SCARD_E_TIMEOUT: the call watchdog ends an SCardConnect that
    /// outlives the bound, and says what most likely holds it (before: "pcscd or the card stopped
    /// answering … remove and replace the card" for every call).
    @Test func theWatchdogNamesAnotherProgramsTransactionForAStalledConnect() {
        #expect(CallWatchdog.stalledWords("SCardConnect").hasPrefix(
            "another program holds a PC/SC transaction on the reader (pcscd lets SCardConnect wait until it ends): close that program"))
        #expect(CallWatchdog.stalledWords("SCardTransmit").hasPrefix("pcscd or the card stopped answering"))
    }
}
