import Foundation
import PCSCCore
import SecbridgeTesting
import Synchronization
import Testing

/// Runs `body` while another program sends `command` to `reader` again and again (SCardTransmit
/// outside any transaction, on a thread of its own), at most `atMost` times; returns `body`'s
/// result once it stopped.
///
/// The bound keeps every command in the card's log (``ISO14443_4Card/logCapacity``, 4096): a
/// flood without one can push the body's own commands out of it while the test's task waits for
/// a thread on a loaded machine, and the test could then not tell what the card saw.
///
/// `body` starts once the other program has been served: connected before it, the other program
/// competes with every command `body` runs (a connect made while a transaction is held waits for
/// it, as pcscd's does, and a late thread could otherwise miss them all).
func whileAnotherProgramSends<T>(
    _ command: [UInt8], to reader: String, on desk: SimulatedDesk, atMost: Int = 2_000, _ body: () async throws -> T
) async throws -> T {
    let stop = Atomic(false)
    let other = BlockingExecutor(name: "other-program")
    defer { other.shutdown() }
    let client = desk.client
    let (served, servedOnce) = AsyncStream.makeStream(of: Void.self)
    let interloper = Task {
        try await other.run {
            defer { servedOnce.finish() }  // also when it could not connect: the test goes on and fails
            let context = try client.establishContext()
            let handle = try context.connect(to: reader, share: .shared, protocols: .any)
            for sent in 0..<atMost where !stop.load(ordering: .relaxed) {
                _ = try? handle.transmit(command)
                if sent == 0 { servedOnce.yield(()) }
            }
            try? handle.disconnect(.leave)
        }
    }
    for await _ in served { break }
    let result: Result<T, any Error>
    do { result = .success(try await body()) } catch { result = .failure(error) }
    stop.store(true, ordering: .relaxed)
    try await interloper.value
    return try result.get()
}

/// Sharing the card with other programs: multi-APDU commands run inside a PC/SC transaction, and
/// a card another program keeps is said to be kept, in process.
@Suite struct SharingCommandTests {
    /// Another program sends its own SELECT again and again while `read` runs three times; the
    /// card sees each read's sequence whole: nothing of the other program between its SELECT of
    /// the NDEF application and its last READ BINARY.
    @Test func anotherProgramsSelectNeverLandsInsideARead() async throws {
        // Scaled time: another program sends all the while from a thread of its own, and the
        // command's thread between its PC/SC calls is no participant of a virtual clock, which
        // would let the other program's 60 s transaction wait end at once (seen in a sharded run).
        let desk = try await SimulatedDesk.open(time: .scaled(SimulatedDesk.defaultTimeScale))
        defer { desk.close() }
        let reader = desk.names[0]
        try desk.control(.placeCard(uid: [0x04, 0xA1, 0xB2, 0xC3], applet: .t4tNDEF, id: "tag"))
        try await whileAnotherProgramSends([0x00, 0xA4, 0x04, 0x00, 0x05, 0xF0, 0x01, 0x02, 0x03, 0x04], to: reader, on: desk) {
            for _ in 0..<3 {
                let read = try await runTool(["read", "--reader", reader], on: desk)
                #expect(read.status == 0, "\(read.err)")
            }
        }
        let reply = try desk.control(.cardLog(peer: "tag"))
        let log = reply["all"]?.components(separatedBy: "; ") ?? []
        let dropped = Int(reply["dropped"] ?? "") ?? -1
        let ours = ["00 A4 04 00 07 D2 76 00 00 85 01 01 00", "00 A4 00 0C 02 E1 03", "00 B0 00 00 0F",
                    "00 A4 00 0C 02 E1 04", "00 B0 00 00 02", "00 B0 00 02 10"]
        let starts = log.indices.filter { log[$0] == ours[0] }
        // At most 2 000 of the other program's commands and 18 of ours: the card (4096) kept all.
        #expect(dropped == 0, "\(reply)")
        #expect(starts.count == 3, "\(log.count) commands")
        for start in starts {
            #expect(Array(log[start..<min(log.count, start + ours.count)]) == ours)
        }
        #expect(log.contains("00 A4 04 00 05 F0 01 02 03 04"), "the other program was served too")
    }

    /// Another program keeps a transaction: `send` of two APDUs waits the bound (60 simulated
    /// seconds) and then says who holds the card, not that pcscd stopped answering.
    @Test func aTransactionAnotherProgramKeepsIsReportedAsSuch() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        let reader = desk.names[0]
        try desk.control(.placeCard(uid: [0x04, 0xA1, 0xB2, 0xC3], id: "card"))
        let context = try desk.client.establishContext()
        let handle = try context.connect(to: reader, share: .shared, protocols: .any)
        try handle.beginTransaction()
        defer { try? handle.endTransaction(.leave) }
        let result = try await runTool(["send", "00 A4 04 00 00", "00 B0 00 00 00"], on: desk)
        #expect(result.status == 1)
        #expect(result.err.contains("another program holds the card in '\(reader)' (a PC/SC transaction of its own, or exclusive access)"), "\(result.err)")
        #expect(result.err.contains("SCARD_E_TIMEOUT"), "\(result.err)")
    }

    /// Another program has the card exclusively: `read` says so in `send`'s words.
    @Test func aSharingViolationInReadGetsSendsMessage() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        let reader = desk.names[0]
        try desk.control(.placeCard(uid: [0x04, 0xA1, 0xB2, 0xC3], applet: .t4tNDEF, id: "tag"))
        let context = try desk.client.establishContext()
        let handle = try context.connect(to: reader, share: .exclusive, protocols: .any)
        defer { try? handle.disconnect(.leave) }
        let read = try await runTool(["read", "--reader", reader], on: desk)
        let send = try await runTool(["send", "--reader", reader, "00 A4 04 00 00"], on: desk)
        #expect(read.status == 1 && send.status == 1)
        #expect(send.err.contains("could not connect to '\(reader)': SCardConnect failed: SCARD_E_SHARING_VIOLATION"), "\(send.err)")
        #expect(read.err == send.err, "read:\n\(read.err)\nsend:\n\(send.err)")
    }
}

extension SharingCommandTests {
    /// `run` holds one transaction over its script, a `reset` line included: the card is reset
    /// (SCardReconnect with SCARD_RESET_CARD) and the lines after it still go through.
    @Test func aScriptWithAResetLineRunsWholeInsideItsTransaction() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        try desk.control(.placeCard(uid: [0x04, 0xA1, 0xB2, 0xC3], applet: .echo, id: "card"))
        let script = desk.directory + "/script.txt"
        try Data("00 A4 04 00 01 AA\nreset\n00 B0 00 00 01 BB\n".utf8).write(to: URL(fileURLWithPath: script))
        let result = try await runTool(["run", script], on: desk)
        #expect(result.status == 0, "\(result.err)")
        // docs/acr122-pn532.md §3: an ISO 14443-4 card without historical bytes, 3B 80 80 01 01.
        #expect(result.out.contains("reset: ATR 3B 80 80 01 01\n"), "\(result.out)")
        let reply = try desk.control(.cardLog(peer: "card"))
        #expect(reply["all"] == "00 A4 04 00 01 AA; 00 B0 00 00 01 BB", "\(reply["all"] ?? "")")
        // Every APDU is still kept (the ring buffer holds 4096): none dropped.
        #expect(reply["count"] == "2" && reply["dropped"] == "0")
    }
}

extension SharingCommandTests {
    /// `run -` takes the script from standard input, as scriptor does.
    @Test func runReadsItsScriptFromStandardInput() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        try desk.control(.placeCard(uid: [0x04, 0xA1, 0xB2, 0xC3], applet: .echo, id: "card"))
        let result = try await runTool(["run", "-"], on: desk, input: ["# from stdin", "00 A4 04 00 01 AA"])
        #expect(result.status == 0, "\(result.err)")
        #expect(result.out.contains("> 00 A4 04 00 01 AA\n< 00 A4 04 00 01 AA 90 00\n"), "\(result.out)")
    }
}
