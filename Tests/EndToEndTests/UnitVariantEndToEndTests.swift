import Foundation
import PCSCSandbox
import SecbridgeTesting
import Testing

// `read`, `emulate` and `doctor` through the shared private pcscd on the clone and the
// Touchatag-era personalities (docs/acr122-clones.md §3).

/// Switches `control`'s reader to `personality`; the returned closure puts the default back.
private func personality(_ name: String, on control: SimulatedReaderControl) throws -> () -> Void {
    try control.send("personality name=\(name)")
    return { _ = try? control.send("personality name=ccid-escape-enabled") }
}

/// The doctor check named `name` from `doctor --json` output.
private func doctorCheck(_ name: String, in output: String) throws -> [String: Any] {
    let checks = try #require(try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [[String: Any]])
    return try #require(checks.first { $0["check"] as? String == name })
}

/// `emulate` of uri-tag.json armed on reader A (genuine), with reader B switched to the clone; the
/// returned closure puts B's personality back.
private func emulationReadFromAClone(_ environment: TestEnvironment) async throws -> (BackgroundSecbridge, () -> Void) {
    let emulation = try await startEmulation(environment, credential: "Fixtures/credentials/uri-tag.json")
    let armed = try await emulation.waitForOutput(containing: "state: cardEmulation")
    #expect(armed, "\(emulation.outputSoFar)")
    return (emulation, try personality("clone", on: SimulatedReaders.controlB))
}

/// `emulate` of the worked example on reader A, read by the Android terminal model: the
/// terminal's verdict, after emulate exited 0.
private func emulateForAndroid(_ environment: TestEnvironment) async throws -> SimulatedReaderReply {
    try SimulatedReaders.controlA.send("place-terminal script=android-t4t-read id=android")
    let emulation = try await startEmulation(environment, credential: "Fixtures/credentials/worked-example-tag.json")
    let result = try await emulation.finish()
    #expect(result.status == 0, "\(result.err)\n\(result.out)")
    return try await terminalResult("android")
}

/// Waits (at most 10 s, checking every 10 ms) until `control`'s `status` reports `value` for `key`.
private func controlStatus(_ control: SimulatedReaderControl, _ key: String, becomes value: String) async throws -> Bool {
    let clock = ContinuousClock()
    let deadline = clock.now + .seconds(10)
    while clock.now < deadline {
        if try control.send("status")[key] == value { return true }
        try await Task.sleep(for: .milliseconds(10))
    }
    return false
}

extension SharedReader {
    @Suite struct UnitVariantEndToEndTests {
        // MARK: clone

        @Test func readOnACloneFallsBackToThePN532PathWithANote() async throws {
            let environment = try await resetSimulatedReaders()
            let (emulation, restore) = try await emulationReadFromAClone(environment)
            defer { restore() }
            let readerB = environment.simulatedReaderB
            let read = try await runCLI(["read", "--reader", readerB])
            let served = try await emulation.finish()
            #expect(read.status == 0, "\(read.out)\(read.err)")
            #expect(read.out.contains("note: \(readerB) is a clone (vendor \"RFCARD\", not ACS): its PC/SC side never reports a card; cards are read through the PN532 (InListPassiveTarget); reading with PN532 initiator commands, as with --pn532\n"), "\(read.out)")
            #expect(read.out.contains("UID 08 00 B0 0B  ATS 05 75 33 92 03"), "\(read.out)")
            #expect(read.out.contains("NDEF record 1: URI https://example.com\n"), "\(read.out)")
            #expect(served.status == 0, "\(served.err)\n\(served.out)")
            // The PN532 path restores the clone's polling (FF 00 51 FF 00).
            #expect(try SimulatedReaders.controlB.send("status")["picc"] == "FF")
        }

        @Test func readWithNoCardSaysWhyThePN532PathWasTakenOnACloneOnly() async throws {
            let environment = try await resetSimulatedReaders()
            let restore = try personality("clone", on: SimulatedReaders.controlA)
            defer { restore() }
            let readerA = environment.simulatedReaderA, readerB = environment.simulatedReaderB
            let onClone = try await runCLI(["read", "--reader", readerA])
            #expect(onClone.status == 1)
            #expect(onClone.err.contains("no ISO 14443-A card answered InListPassiveTarget on \(readerA) (8 polls); place the card or phone on the reader (\(readerA) is a clone (vendor \"RFCARD\", not ACS)"), "\(onClone.err)")
            #expect(try SimulatedReaders.controlA.send("status")["picc"] == "FF")
            // A genuine unit with no card keeps the PC/SC path's answer.
            let onGenuine = try await runCLI(["read", "--reader", readerB])
            #expect(onGenuine.status == 1)
            #expect(onGenuine.err.contains("no card in '\(readerB)': place a card or phone on the reader, or use --pn532"), "\(onGenuine.err)")
        }

        /// `read --wait` on a clone polls with InListPassiveTarget until the bound (pcscd never
        /// reports the card there): a card placed after more polls than a read without --wait
        /// makes (8 × 33 attempts × 5 ms, 1.3 s simulated, 13 ms at the shared scale 0.01) is read.
        @Test func readWaitOnAClonePollsThroughThePN532UntilACardComes() async throws {
            let environment = try await resetSimulatedReaders()
            let restore = try personality("clone", on: SimulatedReaders.controlA)
            defer { restore() }
            let readerA = environment.simulatedReaderA
            async let read = runCLI(["read", "--wait", "30", "--reader", readerA])
            // The PN532 path has begun once the automatic polling is off (FF 00 51 00 00).
            #expect(try await controlStatus(SimulatedReaders.controlA, "picc", becomes: "00"))
            try await Task.sleep(for: .milliseconds(300))
            try SimulatedReaders.controlA.send("place-card uid=04A1B2C3 applet=t4t-ndef id=late")
            let result = try await read
            #expect(result.status == 0, "\(result.out)\(result.err)")
            #expect(result.out.contains("note: \(readerA) is a clone (vendor \"RFCARD\", not ACS): its PC/SC side never reports a card; cards are read through the PN532 (InListPassiveTarget); reading with PN532 initiator commands, as with --pn532\n"), "\(result.out)")
            #expect(result.out.contains("UID 04 A1 B2 C3"), "\(result.out)")
            #expect(result.out.contains("NDEF record 1: "), "\(result.out)")
            #expect(try SimulatedReaders.controlA.send("status")["picc"] == "FF")
        }

        /// The wait on a clone ends at its bound, with the reason the PN532 path was taken, and
        /// the reader restored.
        @Test func readWaitOnACloneIsBoundedAndSaysWhy() async throws {
            let environment = try await resetSimulatedReaders()
            let restore = try personality("clone", on: SimulatedReaders.controlA)
            defer { restore() }
            let readerA = environment.simulatedReaderA
            let result = try await runCLI(["read", "--wait", "0.5", "--json", "--reader", readerA])
            #expect(result.status == 1)
            let object = try #require(try JSONSerialization.jsonObject(with: Data(result.out.utf8)) as? [String: Any], "\(result.out)")
            let error = try #require(object["error"] as? String, "\(result.out)")
            #expect(error.hasPrefix("no ISO 14443-A card answered InListPassiveTarget on \(readerA) within 0.5 s (--wait, "), "\(error)")
            #expect(error.contains("polls); place the card or phone on the reader (\(readerA) is a clone (vendor \"RFCARD\", not ACS)"), "\(error)")
            #expect(try SimulatedReaders.controlA.send("status")["picc"] == "FF")
        }

        @Test func readPN532OnACloneReadsOurEmulationToo() async throws {
            let environment = try await resetSimulatedReaders()
            let (emulation, restore) = try await emulationReadFromAClone(environment)
            defer { restore() }
            let read = try await runCLI(["read", "--pn532", "--json", "--reader", environment.simulatedReaderB])
            let served = try await emulation.finish()
            #expect(read.status == 0, "\(read.out)\(read.err)")
            // --pn532 given: no fallback, so no note.
            #expect(!read.out.contains("\"note\""), "\(read.out)")
            #expect(read.out.contains("\"uid\": \"0800B00B\""), "\(read.out)")
            #expect(served.status == 0, "\(served.err)\n\(served.out)")
        }

        @Test func emulateOnACloneServesAndroid() async throws {
            let environment = try await resetSimulatedReaders()
            let restore = try personality("clone", on: SimulatedReaders.controlA)
            defer { restore() }
            let reply = try await emulateForAndroid(environment)
            #expect(reply["result"] == "passed", "\(reply)")
            #expect(reply["exchanges"] == "6", "\(reply)")
            #expect(try SimulatedReaders.controlA.send("status")["picc"] == "FF")
        }

        @Test func doctorNamesTheClone() async throws {
            let environment = try await resetSimulatedReaders()
            let restore = try personality("clone", on: SimulatedReaders.controlA)
            defer { restore() }
            let result = try await runCLI(["doctor", "--json", "--reader", environment.simulatedReaderA])
            #expect(result.status == 0, "\(result.out)\(result.err)")
            let variant = try doctorCheck("variant", in: result.out)
            #expect(variant["verdict"] as? String == "warning", "\(variant)")
            #expect((variant["detail"] as? String)?.contains("; a clone (vendor \"RFCARD\", not ACS): its PC/SC side never reports a card") == true, "\(variant)")
            let firmware = try doctorCheck("firmware", in: result.out)
            #expect((firmware["detail"] as? String)?.hasPrefix("ACR122U214 (version 2.14)") == true, "\(firmware)")
        }

        @Test func doctorOnAGenuineUnitSaysSo() async throws {
            let environment = try await resetSimulatedReaders()
            let result = try await runCLI(["doctor", "--json", "--reader", environment.simulatedReaderA])
            let variant = try doctorCheck("variant", in: result.out)
            #expect(variant["verdict"] as? String == "ok", "\(variant)")
            #expect((variant["detail"] as? String)?.contains("; no sign of a clone or a Touchatag-era unit") == true, "\(variant)")
        }

        // MARK: card families

        @Test func sendReachesADESFireEV1WithWrappedGetVersion() async throws {
            let environment = try await resetSimulatedReaders()
            try await placeInSharedField(
                "place-card uid=041F5B92DA2C80 atqa=\"03 44\" ats=\"06 75 77 81 02 80\" applet=desfire-ev1 id=desfire", environment: environment)
            // libfreefare's mifare_desfire_connect SELECT of D2 76 00 00 85 01 00 first (docs/acr122-clones.md §6).
            let result = try await runCLI(["send", "--reader", environment.simulatedReaderA, "00 A4 04 00 07 D2 76 00 00 85 01 00", "90 60 00 00 00"])
            #expect(result.status == 0, "\(result.out)\(result.err)")
            #expect(result.out.contains("> 00 A4 04 00 07 D2 76 00 00 85 01 00\n< 90 00\n"), "\(result.out)")
            #expect(result.out.contains("04 01 01 01 00 18 05 91 AF"), "\(result.out)")
        }

        /// An ISO/IEC 14443-B Type 4 Tag: the reader's polling reports it with ACS's ATQB ATR,
        /// `read` gets the PUPI from Get Data and the NDEF message through SCardTransmit, which the
        /// MCU forwards (docs/acr122-clones.md §4b).
        @Test func readReadsAnISO14443BType4Tag() async throws {
            let environment = try await resetSimulatedReaders()
            try await placeInSharedField("place-target family=typeb applet=t4t-ndef id=b", environment: environment)
            let result = try await runCLI(["read", "--reader", environment.simulatedReaderA])
            #expect(result.status == 0, "\(result.out)\(result.err)")
            #expect(result.out.contains("UID 12 23 45 56"), "\(result.out)")
            #expect(result.out.contains("NDEF record 1: "), "\(result.out)")
            try SimulatedReaders.controlA.send("remove peer=b")
        }

        /// A FeliCa card and a Topaz tag: `read` names them from the part 3 ATR and shows the IDm
        /// and the JEWELID that Get Data returns.
        @Test(arguments: [("felica", "01 01 05 01 86 04 02 02", "FeliCa"), ("jewel", "B5 7A 2C 00", "Topaz (PC/SC part 3 name F0 04")])
        func readNamesAFeliCaCardAndATopazTag(_ family: String, _ uid: String, _ name: String) async throws {
            let environment = try await resetSimulatedReaders()
            try await placeInSharedField("place-target family=\(family) id=t", environment: environment)
            let result = try await runCLI(["read", "--reader", environment.simulatedReaderA])
            #expect(result.status == 0, "\(result.out)\(result.err)")
            #expect(result.out.contains("card: \(name)"), "\(result.out)\(result.err)")
            #expect(result.out.contains("UID \(uid)\n"), "\(result.out)\(result.err)")
            try SimulatedReaders.controlA.send("remove peer=t")
        }

        @Test func sendRunsValueBlockPseudoAPDUsOnAMIFAREClassic() async throws {
            let environment = try await resetSimulatedReaders()
            try await placeInSharedField("place-tag type=classic1k uid=04A1B2C3 id=mf", environment: environment)
            let result = try await runCLI([
                "send", "--reader", environment.simulatedReaderA, "FF 82 00 00 06 FF FF FF FF FF FF", "FF 86 00 00 05 01 00 04 60 00",
                "FF D7 00 04 05 00 00 00 00 64", "FF D7 00 04 05 01 00 00 00 05", "FF B1 00 04 04",
            ])
            #expect(result.status == 0, "\(result.out)\(result.err)")
            #expect(result.out.contains("00 00 00 69 90 00"), "\(result.out)")
            // libfreefare's increment through pcscd: InDataExchange C1 (amount LSB first), B0, then
            // READ 30 shows the block (docs/acr122-clones.md §5): 105 + 1 = 106 = 6A.
            let freefare = try await runCLI([
                "send", "--reader", environment.simulatedReaderA, "FF 00 00 00 04 D4 4A 01 00",
                "FF 00 00 00 0F D4 40 01 60 04 FF FF FF FF FF FF 04 A1 B2 C3", "FF 00 00 00 09 D4 40 01 C1 04 01 00 00 00",
                "FF 00 00 00 05 D4 40 01 B0 04", "FF 00 00 00 05 D4 40 01 30 04",
            ])
            #expect(freefare.status == 0, "\(freefare.out)\(freefare.err)")
            #expect(freefare.out.contains("< D5 41 00 6A 00 00 00 95 FF FF FF 6A 00 00 00 04 FB 04 FB 90 00\n"), "\(freefare.out)")
            try SimulatedReaders.controlA.send("remove peer=mf")
        }

        // MARK: Touchatag-era unit

        @Test func readWithoutReaderSkipsThePseudoCardAndFallsBackOnIt() async throws {
            let environment = try await resetSimulatedReaders()
            let restore = try personality("touchatag", on: SimulatedReaders.controlA)
            defer { restore() }
            let readerA = environment.simulatedReaderA, readerB = environment.simulatedReaderB
            // pcscd shows A's pseudo-card at once, with no tag.
            _ = try await waitForCard(in: readerA, present: true)
            try SimulatedReaders.controlA.send("place-card uid=04A1B2C3 applet=t4t-ndef id=t4t")
            _ = try await waitForCard(in: readerB, present: true)
            // "The first reader with a card" is never A with its pseudo-card (the shared pcscd's
            // vpcd reader holds a card too; readers are listed A, B, then the vpcd reader).
            let first = try await runCLI(["read"])
            #expect(!first.out.hasPrefix("reader: \(readerA)\n"), "\(first.out)")
            #expect(!first.err.contains(readerA), "\(first.err)")
            if first.out.hasPrefix("reader: \(readerB)\n") {
                #expect(first.status == 0, "\(first.out)\(first.err)")
                #expect(first.out.contains("NDEF record 1: "), "\(first.out)")
            }
            // A itself: the PN532 path, with the reason.
            let onA = try await runCLI(["read", "--reader", readerA])
            #expect(onA.status == 0, "\(onA.out)\(onA.err)")
            #expect(onA.out.contains("note: \(readerA) is a Touchatag-era unit: it always reports a pseudo-card (ATR 3B 00) with no tag"), "\(onA.out)")
            #expect(onA.out.contains("UID 04 A1 B2 C3"), "\(onA.out)")
            #expect(onA.out.contains("NDEF record 1: "), "\(onA.out)")
            #expect(try SimulatedReaders.controlA.send("status")["picc"] == "FF")
        }

        @Test func doctorNamesTheTouchatagAndItsPseudoCard() async throws {
            let environment = try await resetSimulatedReaders()
            let restore = try personality("touchatag", on: SimulatedReaders.controlA)
            defer { restore() }
            _ = try await waitForCard(in: environment.simulatedReaderA, present: true)
            let result = try await runCLI(["doctor", "--json", "--reader", environment.simulatedReaderA])
            let variant = try doctorCheck("variant", in: result.out)
            #expect(variant["verdict"] as? String == "warning", "\(variant)")
            #expect((variant["detail"] as? String)?.contains("; a Touchatag-era unit: it always reports a pseudo-card (ATR 3B 00)") == true, "\(variant)")
            let card = try doctorCheck("card in the field", in: result.out)
            #expect((card["detail"] as? String)?.hasPrefix("none: the reader shows its pseudo-card (ATR 3B 00)") == true, "\(card)")
            let firmware = try doctorCheck("firmware", in: result.out)
            #expect((firmware["detail"] as? String)?.hasPrefix("ACR122U102 (version 1.02)") == true, "\(firmware)")
        }

        @Test func emulateOnATouchatagServesAndroid() async throws {
            let environment = try await resetSimulatedReaders()
            let restore = try personality("touchatag", on: SimulatedReaders.controlA)
            defer { restore() }
            _ = try await waitForCard(in: environment.simulatedReaderA, present: true)
            let reply = try await emulateForAndroid(environment)
            #expect(reply["result"] == "passed", "\(reply)")
        }
    }
}
