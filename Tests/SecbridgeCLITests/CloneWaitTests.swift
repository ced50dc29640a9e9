import Foundation
import PCSCSandbox
import SecbridgeTesting
import Testing

/// `read --wait` on a unit whose PC/SC side never reports the card (the `clone` personality):
/// InListPassiveTarget polls up to the bound instead of SCardGetStatusChange (docs/acr122-clones.md §3).
@Suite struct CloneWaitTests {
    /// A card placed once the PN532 path has begun (automatic polling off), and after more polls
    /// than a read without --wait makes (8 × 33 attempts × 5 ms = 1.3 s simulated, 13 ms at the
    /// desk's scale 0.01), is read, with the fallback's note.
    @Test func readWaitOnAClonePollsUntilACardIsPlaced() async throws {
        let desk = try await SimulatedDesk.open(personality: "clone")
        defer { desk.close() }
        let control = desk.control()
        async let read = runTool(["read", "--wait", "30"], on: desk)
        try await placeCardOnceThePN532PathHasBegun(control)
        let result = try await read
        #expect(result.status == 0, "\(result.out)\(result.err)")
        #expect(result.out.contains("note: \(desk.names[0]) is a clone (vendor \"RFCARD\", not ACS)"), "\(result.out)")
        #expect(result.out.contains("UID 04 A1 B2 C3"), "\(result.out)")
        #expect(result.out.contains("NDEF record 1: "), "\(result.out)")
        #expect(try control.send("status")["picc"] == "FF")
    }

    /// The only reader, a clone, with no card: the wait ends at its bound through the PN532 (not
    /// pcscd's "no card came"), saying why that path was taken.
    @Test func readWaitOnACloneEndsAtTheBound() async throws {
        let desk = try await SimulatedDesk.open(personality: "clone")
        defer { desk.close() }
        let result = try await runTool(["read", "--wait", "0.3"], on: desk)
        #expect(result.status == 1)
        #expect(result.err.contains("no ISO 14443-A card answered InListPassiveTarget on \(desk.names[0]) within 0.3 s (--wait, "), "\(result.err)")
        #expect(result.err.contains("(\(desk.names[0]) is a clone (vendor \"RFCARD\", not ACS)"), "\(result.err)")
        #expect(try desk.control(.status)["picc"] == "FF")
    }

    /// --pn532 --wait on a genuine unit waits the same way (it used to ignore --wait).
    @Test func readPN532WaitPollsUntilACardIsPlaced() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        let control = desk.control()
        async let read = runTool(["read", "--pn532", "--wait", "30"], on: desk)
        try await placeCardOnceThePN532PathHasBegun(control)
        let result = try await read
        #expect(result.status == 0, "\(result.out)\(result.err)")
        #expect(!result.out.contains("note:"), "\(result.out)")
        #expect(result.out.contains("UID 04 A1 B2 C3"), "\(result.out)")
    }
}

/// Waits (at most 10 s, checking every 10 ms) until the reader's automatic polling is off (the
/// PN532 path has begun: FF 00 51 00 00), lets it poll for 300 ms more, then places a Type 4 Tag
/// with UID 04 A1 B2 C3.
private func placeCardOnceThePN532PathHasBegun(_ control: SimulatedReaderControl) async throws {
    let clock = ContinuousClock()
    let deadline = clock.now + .seconds(10)
    while try control.send("status")["picc"] != "00", clock.now < deadline {
        try await Task.sleep(for: .milliseconds(10))
    }
    try await Task.sleep(for: .milliseconds(300))
    try control.send("place-card uid=04A1B2C3 applet=t4t-ndef id=late")
}
