import Foundation
import PCSC
import PCSCSandbox
import PN53x
import SecbridgeCLI
import SecbridgeTesting
import SecbridgeTools
import Testing

// A reader unplugged while a call is under way (docs/faults.md §2), through the shared private
// pcscd: the simulated driver answers the call in flight IFD_NO_SUCH_DEVICE, as libccid does when
// the USB transfer fails because the device went away, and pcscd gives the client
// SCARD_E_READER_UNAVAILABLE.

/// Reader A as a target that B's automatic polling activated (docs/acr122-pn532.md §2), held by
/// the test: B's next command reaches A's host through TgGetData and waits there for an answer
/// that never comes, so B's SCardTransmit is under way until something ends it.
final class HeldTarget: @unchecked Sendable {
    // @unchecked: every member is used only inside `blocking` jobs, one at a time.
    let context: PCSCContext
    let handle: CardHandle
    let pn532: PN532
    let link: ACR122Link

    /// Arms A's TgInitAsTarget until B's polling activates it; pcscd then reports it as B's card.
    static func armOnA(_ environment: TestEnvironment) async throws -> HeldTarget {
        let readerA = environment.simulatedReaderA
        let held = try await blocking { () throws -> HeldTarget in
            let context = try PCSCContext()
            let handle = try context.connect(to: readerA, share: .direct, protocols: [])
            let link = try ACR122Link.open(channel: handle, readerName: readerA)
            let held = HeldTarget(context: context, handle: handle, link: link)
            _ = try link.setPICCOperatingParameter([])
            // 5 steps of 5 s: each TgInitAsTarget nobody activated ends with 63 00 and is sent
            // again; B's presence poll (about every 400 ms) activates one (at most 40 tries).
            try link.setMCUTimeout(.fiveSecondSteps(5))
            let target = PN532.TgInitAsTarget(
                modes: [.passiveOnly, .piccOnly], atqa: ATQA(rawValue: 0x0004), uid: EmulatedUID(nfcid1t: (0x12, 0x34, 0x56)), sak: 0x20)
            var activated = false
            for _ in 0..<40 where !activated {
                activated = (try? held.pn532.send(target)) != nil
            }
            try #require(activated, "B's polling never activated A's target")
            return held
        }
        _ = try await waitForCard(in: environment.simulatedReaderB, present: true)
        return held
    }

    private init(context: PCSCContext, handle: CardHandle, link: ACR122Link) {
        self.context = context
        self.handle = handle
        self.link = link
        pn532 = PN532(link: link)
    }

    /// The next C-APDU B's host sent, once it arrived (TgGetData): B's SCardTransmit is then
    /// waiting for A's answer. Each TgGetData is bounded by A's MCU timeout; at most 20 tries.
    func nextCommandFromB() async throws -> [UInt8] {
        try await blocking { [self] () throws -> [UInt8] in
            for _ in 0..<20 {
                if let command = try? pn532.send(PN532.TgGetData()) { return command.data }
            }
            throw HarnessError(code: .timeout, reason: "no command from B reached A's target")
        }
    }

    /// Leaves target mode and turns A's polling back on (the restore an emulation ends with).
    func release() async {
        _ = try? await blocking { [self] () throws -> Void in
            try? pn532.release()
            _ = try? link.setPICCOperatingParameter(.factoryDefault)
            try? handle.disconnect(.leave)
            try? context.release()
        }
    }
}

/// Sets the shared field's time scale to 1 until `body` ends (then back to the tests' scale), so
/// that a command blocked on simulated time waits for what the test does next (the unplug), not
/// for a device timeout scaled to a few milliseconds. Nothing waits for those timeouts here.
func atTimeScaleOne<T>(_ body: () async throws -> T) async throws -> T {
    try SimulatedReaders.controlA.send(.setTimescale(1))
    defer { _ = try? SimulatedReaders.controlA.send("timescale value=\(SimulatedReaders.testTimeScale)") }
    return try await body()
}

/// Waits (at most `timeout`) until the simulated reader behind `control` has a command under way
/// whose first 7 bytes hold `bytes` (its control socket's `status` field `busy`, e.g. `D4 8C` for
/// a Direct Transmit of TgInitAsTarget), asking every 20 ms.
func waitUntilBusy(_ control: SimulatedReaderControl, with bytes: String, timeout: Duration = .seconds(20)) async throws {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try control.send("status")["busy"]?.contains(bytes) == true { return }
        try await Task.sleep(for: .milliseconds(20))
    }
    throw HarnessError(code: .timeout, reason: "no command with \(bytes) under way within \(timeout)")
}

/// Waits (at most `timeout`) until pcscd no longer reports `reader` unavailable: after a `replug`,
/// its next presence poll (about every 400 ms) reaches the driver again.
func waitUntilAvailable(_ reader: String, timeout: Duration = .seconds(5)) async throws {
    try await blocking {
        let context = try PCSCContext()
        defer { try? context.release() }
        var states = [ReaderState(readerName: reader)]
        let deadline = ContinuousClock.now + timeout
        _ = try context.getStatusChange(&states, timeout: .zero)
        while states[0].eventFlags.contains(.unavailable) {
            let remaining = deadline - ContinuousClock.now
            guard remaining > .zero else {
                throw SimulatedReaderError(code: "timeout", reason: "\(reader) still unavailable after \(timeout)")
            }
            states[0].acknowledge()
            _ = try context.getStatusChange(&states, timeout: remaining)
        }
    }
}

/// Both simulated readers plugged in and answering pcscd, then ``resetSimulatedReaders()``: a test
/// that unplugged one and failed before its replug leaves none unplugged for the next.
func replugAndResetSimulatedReaders() async throws -> TestEnvironment {
    let environment = try await sharedEnvironment()
    for (control, reader) in [(SimulatedReaders.controlA, environment.simulatedReaderA), (SimulatedReaders.controlB, environment.simulatedReaderB)] {
        // Refused ("the reader is plugged in") unless an earlier test left it unplugged.
        _ = try? control.send("replug")
        try await waitUntilAvailable(reader)
    }
    return try await resetSimulatedReaders()
}

extension SharedReader {
    @Suite struct UnplugEndToEndTests {
        static let selectScript = "00 A4 04 00 07 D2 76 00 00 85 01 01 00\n"

        /// `arguments` (a `read` or `run` on reader B) as a subprocess, with B unplugged while the
        /// command's first APDU to the card waits for its answer: exit status, output and the
        /// C-APDU that was in flight.
        static func unplugBDuringACall(_ arguments: [String], _ environment: TestEnvironment) async throws
            -> (status: Int32, out: String, err: String, inFlight: [UInt8])
        {
            try await atTimeScaleOne {
                let held = try await HeldTarget.armOnA(environment)
                let command = try BinaryProcess(arguments, environment: environment.environmentForSubprocesses)
                defer { command.stop() }
                let inFlight: [UInt8]
                do {
                    inFlight = try await held.nextCommandFromB()
                } catch {
                    await held.release()
                    throw error
                }
                // B's SCardTransmit waits for A's answer: the cable is pulled now.
                #expect(try SimulatedReaders.controlB.send(.status)["busy"] != "no")
                #expect(try SimulatedReaders.controlB.send(.unplug)["plugged"] == "no")
                do {
                    try await command.exit(after: "its reader was unplugged")
                } catch {
                    await held.release()
                    throw error
                }
                await held.release()
                return (command.process.terminationStatus, command.output.joined(separator: "\n"), command.finalStandardError(), inFlight)
            }
        }

        static func unavailable(_ reader: String) -> String {
            "'\(reader)' is unavailable: pcscd cannot reach it (the reader was unplugged, or its driver reports no device); plug it in again and retry (pcscd finds it again by itself)"
        }

        /// After `replug` reader B reads a card again.
        static func expectBWorksAgain(_ environment: TestEnvironment) async throws {
            #expect(try SimulatedReaders.controlB.send(.replug)["plugged"] == "yes")
            try await waitUntilAvailable(environment.simulatedReaderB)
            try await placeInSharedField("place-card uid=\"04 A1 B2 C3\" applet=t4t-ndef id=tag", environment: environment)
            let again = try await runCLI(["read", "--reader", environment.simulatedReaderB])
            #expect(again.status == 0, "\(again.out)\(again.err)")
            #expect(again.out.contains("NDEF record 1: URI https://example.com"), "\(again.out)")
        }

        /// `arguments` on reader B with its SELECT of the NDEF application (docs/iso14443-t4t-ndef.md
        /// §4) in flight when B is unplugged: it says B went away, exit 1, and B works after the replug.
        static func expectTheReaderGoneDuringTheSelect(_ arguments: [String], _ environment: TestEnvironment) async throws {
            let readerB = environment.simulatedReaderB
            let result = try await unplugBDuringACall(arguments, environment)
            #expect(result.inFlight == [0x00, 0xA4, 0x04, 0x00, 0x07, 0xD2, 0x76, 0x00, 0x00, 0x85, 0x01, 0x01, 0x00])
            #expect(result.status == 1, "\(result.out)\(result.err)")
            #expect(result.err.contains(unavailable(readerB)), "\(result.err)")
            #expect(!result.err.contains("security violation"), "\(result.err)")
            try await expectBWorksAgain(environment)
        }

        @Test func readWithAnAPDUInFlightWhenTheReaderIsUnpluggedSaysItWentAway() async throws {
            let environment = try await replugAndResetSimulatedReaders()
            defer { _ = try? SimulatedReaders.controlB.send(.replug) }
            try await Self.expectTheReaderGoneDuringTheSelect(["read", "--reader", environment.simulatedReaderB], environment)
        }

        @Test func runWithAnAPDUInFlightWhenTheReaderIsUnpluggedSaysItWentAway() async throws {
            let environment = try await replugAndResetSimulatedReaders()
            defer { _ = try? SimulatedReaders.controlB.send(.replug) }
            let directory = try faultTestDirectory("unplug-run")
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let script = directory + "/select.apdu"
            try Self.selectScript.write(toFile: script, atomically: true, encoding: .utf8)
            try await Self.expectTheReaderGoneDuringTheSelect(["run", "--reader", environment.simulatedReaderB, script], environment)
        }

        @Test func emulateWithTgInitAsTargetPendingWhenTheReaderIsUnpluggedSaysItWentAway() async throws {
            let environment = try await replugAndResetSimulatedReaders()
            let readerA = environment.simulatedReaderA
            let readerB = environment.simulatedReaderB
            defer { _ = try? SimulatedReaders.controlA.send(.replug) }
            // Nobody activates A's target: B's automatic polling is off.
            try await blocking { try stopAutomaticPolling(on: readerB) }
            let emulate = try await atTimeScaleOne { () async throws -> BinaryProcess in
                let emulate = try BinaryProcess(
                    ["emulate", "--credential", try repositoryPath("Fixtures/credentials/uri-tag.json"), "--yes", "--reader", readerA],
                    environment: environment.environmentForSubprocesses)
                // TgInitAsTarget (D4 8C) waits for a terminal on A: the cable is pulled now.
                do {
                    try await waitUntilBusy(SimulatedReaders.controlA, with: "D4 8C")
                } catch {
                    emulate.stop()
                    throw error
                }
                #expect(try SimulatedReaders.controlA.send(.unplug)["plugged"] == "no")
                try await emulate.exit(after: "its reader was unplugged")
                return emulate
            }
            let errors = emulate.finalStandardError()
            #expect(emulate.process.terminationStatus == 1, "\(emulate.output) \(errors)")
            #expect(errors.contains(Self.unavailable(readerA)), "\(emulate.output) \(errors)")
            #expect(!errors.contains("security violation"), "\(errors)")
            #expect(!emulate.process.isRunning)
            // Replugged: a fresh unit (polling on at power-up), and an emulation serves a terminal again.
            #expect(try SimulatedReaders.controlA.send(.replug)["plugged"] == "yes")
            try await waitUntilAvailable(readerA)
            #expect(try SimulatedReaders.controlA.send(.status)["picc"] == "FF")
            try SimulatedReaders.controlA.send(.placeTerminal(id: "android"))
            let again = try await emulateInProcess(readerA)
            #expect(again.0 == 0, "\(again.1)\(again.2)")
            #expect(again.1.contains("terminal: 6 APDUs; the NDEF file was read to the end"), "\(again.1)")
            try await blocking { () throws -> Void in
                let link = try ACR122Link.open(channel: try PCSCContext().connect(to: readerB, share: .direct, protocols: []), readerName: readerB)
                _ = try link.setPICCOperatingParameter(.factoryDefault)
            }
        }

        /// monitor across an unplug and a replug of a reader holding a card: its own events for the
        /// reader becoming unavailable and available again, in text and in --json, the card leaving
        /// and coming back with it, and the reader never reported detached (pcscd keeps it listed).
        @Test(arguments: [false, true])
        func monitorReportsAReaderThatBecomesUnavailableAndAvailableAgain(json: Bool) async throws {
            let environment = try await replugAndResetSimulatedReaders()
            let readerA = environment.simulatedReaderA
            defer { _ = try? SimulatedReaders.controlA.send(.replug) }
            try await placeInSharedField("place-card uid=\"04 A1 B2 C3\" applet=t4t-ndef id=tag", environment: environment)
            let monitor = try BinaryProcess(["monitor", "--timeout", "60"] + (json ? ["--json"] : []), environment: environment.environmentForSubprocesses)
            defer { monitor.stop() }
            let quoted = json ? "\"reader\":\"\(readerA)\"" : "\"\(readerA)\""
            let inserted = json ? "\"event\":\"card-inserted\",\(quoted)" : "card-inserted \(quoted)"
            let start = try await monitor.wait(for: inserted)
            #expect(try SimulatedReaders.controlA.send(.unplug)["plugged"] == "no")
            let gone = try await monitor.wait(for: json ? "\"event\":\"reader-unavailable\",\(quoted)" : "reader-unavailable \(quoted)", after: start)
            #expect(try SimulatedReaders.controlA.send(.replug)["plugged"] == "yes")
            let back = try await monitor.wait(for: json ? "\"event\":\"reader-available\",\(quoted)" : "reader-available \(quoted)", after: gone)
            let again = try await monitor.wait(for: inserted, after: back)
            let lines = Array(monitor.output[start...again])
            // Of reader A, in order: the card, the reader gone (its card with it), back, the card again.
            let ofA = lines.filter { $0.contains(quoted) }.map { line -> String in
                json ? String(line.split(separator: "\"")[3]) : String(line.split(separator: " ")[0])
            }
            #expect(ofA == ["card-inserted", "reader-unavailable", "card-removed", "reader-available", "card-inserted"], "\(lines)")
            #expect(!lines.contains { $0.contains("reader-detached") }, "\(lines)")
            if !json { #expect(lines.contains("reader-unavailable \"\(readerA)\""), "\(lines)") }
        }
    }
}
