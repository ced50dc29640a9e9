import Foundation
import PCSC
import PCSCSandbox
import PN53x
import SecbridgeCLI
import SecbridgeTesting
import SecbridgeTools
import SecureElementCredential
import Testing
import Transcript

// Faults that must not lose data, hang or leave a reader behind (docs/faults.md), staged through
// the shared private pcscd and the simulated ACR122U pair.

/// A fresh directory under the temporary directory, for a test's files.
func faultTestDirectory(_ name: String) throws -> String {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("secbridge-\(name)-\(UUID().uuidString.prefix(8))").path
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

/// `/bin/sh` arguments that run the `secbridge` binary with `arguments` under a file-size limit of
/// `blocks` × 512 bytes (RLIMIT_FSIZE through the shell's `ulimit -f`) with SIGXFSZ ignored, so that
/// a write past the limit fails with EFBIG as write(2) fails on a full disk: the real write path,
/// without root or a small file system.
func underFileSizeLimit(blocks: Int, _ arguments: [String]) throws -> [String] {
    ["-c", "ulimit -f \(blocks) && trap '' XFSZ && exec \"$@\"", "sh", try secbridgeBinary().path] + arguments
}

/// `emulate` of uri-tag.json on `reader`, run in this process through the shared pcscd with the
/// card-emulation window shrunk to 3 s (time scale 0.05): exit status, standard output and error.
func emulateInProcess(_ reader: String) async throws -> (Int32, String, String) {
    try await blocking {
        let console = CapturingConsole(input: [])
        let status = SecbridgeTools.main(
            arguments: ["emulate", "--credential", try repositoryPath("Fixtures/credentials/uri-tag.json"), "--yes", "--reader", reader],
            console: console, timeScale: 0.05)
        return (status, console.standardOutput, console.standardError)
    }
}

/// The body lines of a transcript file, once it parsed.
func transcriptLines(at path: String) throws -> [TranscriptLine] {
    try Transcript(parsing: String(contentsOfFile: path, encoding: .utf8), fileName: path).lines
}

extension SharedReader {
    @Suite struct FaultEndToEndTests {
        // MARK: a full disk under --record

        @Test func aFullDiskDuringEmulateRecordStopsTheRecordingNotTheEmulation() async throws {
            let environment = try await resetSimulatedReaders()
            let readerA = environment.simulatedReaderA
            let readerB = environment.simulatedReaderB
            try await blocking { try stopAutomaticPolling(on: readerB) }
            defer { _ = try? SimulatedReaders.controlB.send(.removeAll) }
            let directory = try faultTestDirectory("full-disk-emulate")
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let path = directory + "/emulate.transcript"
            try SimulatedReaders.controlA.send(.placeTerminal(id: "android"))
            let result = try await runProgram(
                URL(fileURLWithPath: "/bin/sh"),
                try underFileSizeLimit(blocks: 2, [
                    "emulate", "--credential", try repositoryPath("Fixtures/credentials/worked-example-tag.json"), "--yes",
                    "--reader", readerA, "--record", path,
                ]),
                environment: environment.environmentForSubprocesses, timeout: .seconds(90))
            // The recording failed: exit 1, with the reason (EFBIG, as a full disk gives ENOSPC).
            #expect(result.status == 1, "\(result.out)\(result.err)")
            #expect(result.err.contains("secbridge: error: cannot record to '\(path)': cannot append to \(path): File too large (errno 27); the file keeps every line before; the recording stopped, the emulation goes on\n"), "\(result.err)")
            #expect(result.err.contains("secbridge: error: the recording to '\(path)' is incomplete: "), "\(result.err)")
            // The emulation went on: the terminal read the whole tag, as without --record.
            #expect(result.out.contains("terminal: 6 APDUs; the NDEF file was read to the end (NLEN 16, 18 bytes)\n"), "\(result.out)")
            let reply = try await terminalResult("android")
            #expect(reply["result"] == "passed", "\(reply)")
            // The restore ran: automatic polling on again, target role left.
            let status = try SimulatedReaders.controlA.send(.status)
            #expect(status["picc"] == "FF", "\(status)")
            // The file stops at a whole line under the limit and parses.
            let size = try #require(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
            #expect(size <= 1024)
            let lines = try transcriptLines(at: path)
            #expect(!lines.isEmpty)
            try await blocking { () throws -> Void in
                let link = try ACR122Link.open(channel: try PCSCContext().connect(to: readerB, share: .direct, protocols: []), readerName: readerB)
                try link.setPICCOperatingParameter(.factoryDefault)
            }
        }

        @Test func aFullDiskDuringMonitorRecordStopsTheMonitorWithAnError() async throws {
            let environment = try await resetSimulatedReaders()
            let directory = try faultTestDirectory("full-disk-monitor")
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let path = directory + "/monitor.transcript"
            let monitor = try BinaryProcess(
                try underFileSizeLimit(blocks: 2, ["monitor", "--record", path, "--timeout", "60"]),
                environment: environment.environmentForSubprocesses, executable: URL(fileURLWithPath: "/bin/sh"))
            defer { monitor.stop() }
            // Card events on A until the file is full and the monitor stops (at most 40 rounds).
            for round in 0..<40 where monitor.process.isRunning {
                try SimulatedReaders.controlA.send("place-tag uid=04A1B2C3D4E5\(String(format: "%02X", round)) atqa=0044 sak=00 id=t")
                _ = try await waitForCard(in: environment.simulatedReaderA, present: true)
                try SimulatedReaders.controlA.send(.remove(peer: "t"))
                _ = try await waitForCard(in: environment.simulatedReaderA, present: false)
            }
            try await monitor.exit(after: "40 rounds of card events (its record file should have filled)")
            let errors = monitor.finalStandardError()
            #expect(monitor.process.terminationStatus == 1, "\(monitor.output) \(errors)")
            #expect(errors.contains("secbridge: error: cannot record to '\(path)': cannot append to \(path): File too large (errno 27)"), "\(errors)")
            #expect(errors.hasSuffix("secbridge: error: monitoring stopped: the recording holds every event before the one it could not take\n"), "\(errors)")
            // No hole: the file holds exactly the events shown before the last, in order; the last
            // one shown is the event it could not take, and nothing came after it.
            let events = try transcriptLines(at: path).compactMap { line -> TranscriptEvent? in
                if case .record(let record) = line, case .event(let event) = record.entry { return event }
                return nil
            }
            let shown = monitor.output
            #expect(shown.count == events.count + 1, "\(shown) \(events)")
            let kinds = events.map { $0.kind.rawValue }
            let shownKinds = shown.dropLast().map { String($0.split(separator: " ").first ?? "") }
            let monitorNames = ["reader-added": "reader-attached", "reader-removed": "reader-detached"]
            #expect(kinds.map { monitorNames[$0] ?? $0 } == shownKinds, "\(kinds) \(shownKinds)")
        }

        // MARK: a recording cut by a signal

        /// `monitor --record` killed by SIGTERM or SIGKILL after six card events: every event it
        /// showed is in the file (an event is written, one write and flush per line, before it is
        /// shown), the file ends on a whole line, and it parses.
        @Test(arguments: [SIGTERM, SIGKILL])
        func aMonitorRecordingCutByASignalEndsOnAWholeLineAndParses(_ signal: Int32) async throws {
            let environment = try await resetSimulatedReaders()
            let directory = try faultTestDirectory("record-signal")
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let path = directory + "/monitor.transcript"
            let monitor = try BinaryProcess(["monitor", "--record", path, "--timeout", "60"], environment: environment.environmentForSubprocesses)
            defer { monitor.stop() }
            let readerA = environment.simulatedReaderA
            var last = try await monitor.wait(for: "reader-attached \"\(readerA)\"")
            for round in 0..<3 {
                try SimulatedReaders.controlA.send("place-tag uid=04A1B2C3D4E5\(String(format: "%02X", round)) atqa=0044 sak=00 id=t")
                last = try await monitor.wait(for: "card-inserted \"\(readerA)\"", after: last + 1)
                try SimulatedReaders.controlA.send(.remove(peer: "t"))
                last = try await monitor.wait(for: "card-removed \"\(readerA)\"", after: last + 1)
            }
            #expect(kill(monitor.process.processIdentifier, signal) == 0)
            try await monitor.exit(after: "signal \(signal)")
            let text = try String(contentsOfFile: path, encoding: .utf8)
            #expect(text.hasSuffix("\n"), "\(text)")
            let events = try transcriptLines(at: path).compactMap { line -> TranscriptEvent? in
                if case .record(let record) = line, case .event(let event) = record.entry { return event }
                return nil
            }
            let ofA = events.filter { $0.attributes.contains { $0.value == readerA } }.map(\.kind.rawValue)
            #expect(Array(ofA.prefix(7)) == ["reader-added"] + Array(repeating: ["card-inserted", "card-removed"], count: 3).flatMap { $0 }, "\(text)")
        }

        // MARK: two programs on one card

        /// Two `send` processes at once, 40 each, on a card whose every answer is a 2847-byte object
        /// behind a 61 XX chain (the simulator's `long-object` applet: byte i is i × 7 mod 256):
        /// each process runs its command and GET RESPONSE chain inside its own transaction, so
        /// every one of the 80 answers is the whole object (issue 15 measured 78 of 80 wrong).
        @Test func twoProcessesSendingAtOnceEachGetTheirWholeGetResponseChain() async throws {
            let environment = try await resetSimulatedReaders()
            let readerA = environment.simulatedReaderA
            try await placeInSharedField("place-card uid=\"04 A1 B2 C3\" applet=long-object id=long", environment: environment)
            defer { _ = try? SimulatedReaders.controlA.send(.removeAll) }
            let object = (0..<2847).map { String(format: "%02X", UInt8(truncatingIfNeeded: $0 &* 7)) }.joined()
            let subprocesses = environment.environmentForSubprocesses
            let statuses = try await withThrowingTaskGroup(of: [(Int32, Bool, String)].self) { group in
                for _ in 0..<2 {
                    group.addTask {
                        var results: [(Int32, Bool, String)] = []
                        for _ in 0..<40 {
                            let result = try await runBinary(
                                ["send", "--json", "--reader", readerA, "00 CB 3F FF 05 5C 03 5F C1 05 00"], environment: subprocesses, timeout: .seconds(60))
                            results.append((result.status, result.out.contains("\"data\": \"\(object)\""), result.err))
                        }
                        return results
                    }
                }
                return try await group.reduce(into: []) { $0 += $1 }
            }
            #expect(statuses.count == 80)
            #expect(statuses.filter { $0.0 == 0 && $0.1 }.count == 80, "\(statuses.filter { $0.0 != 0 || !$0.1 }.map(\.2).prefix(3))")
        }

        // MARK: write-ndef killed

        /// The NDEF message in an NTAG213's memory from page 4 (the TLV `03 len message`, NFC Forum
        /// Type 2 Tag; docs/iso14443-t4t-ndef.md §6), or nil when page 4 holds no well-formed one.
        static func ndefMessage(ofTag peer: String) throws -> [UInt8]? {
            let data = try SimulatedReaders.controlA.send(.tagMemory(peer: "\(peer)", first: 4, count: 36))["data"] ?? ""
            let bytes = data.split(separator: " ").compactMap { UInt8($0, radix: 16) }
            guard bytes.count >= 2, bytes[0] == 0x03, Int(bytes[1]) + 2 <= bytes.count else { return nil }
            return Array(bytes[2..<(2 + Int(bytes[1]))])
        }

        /// `write-ndef` killed (SIGKILL) at 4 points spread over half the time a whole write takes here:
        /// every time the tag holds a well-formed NDEF message, the old one, the empty one the write
        /// puts first, or the new one, never a torn one (page 4 is written first as an empty message
        /// and last with the real start). That a stop after every one of the write's commands leaves
        /// such a tag is proven in process and deterministically, by a tag that leaves the field
        /// (StorageCardCommandsInProcessTests.writeNDEFWhoseTagLeavesDuringAnyCommandLeavesAWellFormedTag);
        /// this test keeps a real process killed through pcscd.
        @Test func writeNDEFKilledAtAnyPointLeavesAWellFormedTag() async throws {
            let environment = try await resetSimulatedReaders()
            let readerA = environment.simulatedReaderA
            // URI https://example.com (prefix 04), as the tag holds it first.
            let old: [UInt8] = [0xD1, 0x01, 0x0C, 0x55, 0x04] + Array("example.com".utf8)
            func placeTheOldTag() async throws {
                try await placeInSharedField(
                    "place-tag type=ntag213 uid=\"04 A1 B2 C3 D4 E5 F6\" ndef=\(old.map { String(format: "%02X", $0) }.joined()) id=ntag", environment: environment)
            }
            try await placeTheOldTag()
            defer { _ = try? SimulatedReaders.controlA.send(.removeAll) }
            let rest = "example.org/a/path/long/enough/to/span/many/pages/of/the/tag"
            let new: [UInt8] = [0xD1, 0x01, UInt8(1 + rest.utf8.count), 0x55, 0x04] + Array(rest.utf8)
            let arguments = ["write-ndef", "--reader", readerA, "--uri", "https://" + rest, "--yes"]
            let subprocesses = environment.environmentForSubprocesses
            // One whole write, timed: the kills are spread over its length on this machine now.
            let started = ContinuousClock.now
            let whole = try await runBinary(arguments, environment: subprocesses, timeout: .seconds(60))
            let length = ContinuousClock.now - started
            #expect(whole.status == 0, "\(whole.out)\(whole.err)")
            #expect(try Self.ndefMessage(ofTag: "ntag") == new)
            for step in 0..<4 {
                // Each round starts from the old message.
                _ = try SimulatedReaders.controlA.send(.remove(peer: "ntag"))
                _ = try await waitForCard(in: readerA, present: false)
                try await placeTheOldTag()
                // Over the first half of a whole write's time: a later run, started warm, is quicker.
                let delay = length * Double(step) / 8
                let process = try BinaryProcess(arguments, environment: subprocesses)
                try await Task.sleep(for: delay)
                kill(process.process.processIdentifier, SIGKILL)
                try await process.exit(after: "SIGKILL")
                let message = try Self.ndefMessage(ofTag: "ntag")
                #expect(message == old || message == [] || message == new, "step \(step): \(message.map { $0.map { String(format: "%02X", $0) }.joined() } ?? "no NDEF TLV")")
            }
        }

        // MARK: an activated target left behind

        /// A TgInitAsTarget on A that B's automatic polling activates (docs/acr122-pn532.md §2):
        /// afterwards A is an activated target, which reports no card (§5e).
        static func leaveAnActivatedTargetOnA(_ environment: TestEnvironment) async throws {
            let readerA = environment.simulatedReaderA
            try await blocking { () throws -> Void in
                let context = try PCSCContext()
                defer { try? context.release() }
                let direct = try context.connect(to: readerA, share: .direct, protocols: [])
                defer { try? direct.disconnect(.leave) }
                let link = try ACR122Link.open(channel: direct, readerName: readerA)
                try link.setPICCOperatingParameter([])
                // 5 steps of 5 s in simulated time: under the simulated libccid timeout, so each
                // TgInitAsTarget ends with 63 00 when no initiator came; armed again until B's
                // presence poll (about every 400 ms) activates one (at most 40 tries).
                try link.setMCUTimeout(.fiveSecondSteps(5))
                let pn532 = PN532(link: link)
                let target = PN532.TgInitAsTarget(
                    modes: [.passiveOnly, .piccOnly], atqa: ATQA(rawValue: 0x0004), uid: EmulatedUID(nfcid1t: (0x12, 0x34, 0x56)), sak: 0x20)
                var activated = false
                for _ in 0..<40 where !activated {
                    activated = (try? pn532.send(target)) != nil
                }
                try #require(activated, "B's polling never activated A's target")
                try link.setPICCOperatingParameter(.factoryDefault)
            }
            // B found A's target and reports it as its card.
            _ = try await waitForCard(in: environment.simulatedReaderB, present: true)
        }

        @Test func resetLeavesAnActivatedTargetAndTheReaderReportsCardsAgain() async throws {
            let environment = try await resetSimulatedReaders()
            let readerA = environment.simulatedReaderA
            try await Self.leaveAnActivatedTargetOnA(environment)
            try SimulatedReaders.controlA.send(.placeTag(uid: [0x04, 0xA1, 0xB2, 0xC3, 0xD4, 0xE5, 0xF6], .plain(atqa: 0x0044, sak: 0x00), id: "t2"))
            // As the chip does: an activated target polls no card, polling on or not.
            await #expect(throws: SimulatedReaderError.self) { _ = try await waitForCard(in: readerA, present: true, timeout: .seconds(2)) }
            let result = try await runCLI(["reset", "--reader", readerA])
            #expect(result.status == 0, "\(result.out)\(result.err)")
            #expect(result.out.contains("release targets (InRelease 00): FF 00 00 00 03 D4 52 00 → D5 53 00 90 00  ok"), "\(result.out)")
            _ = try await waitForCard(in: readerA, present: true)
        }

        @Test func anEmulationWhoseTargetAnotherReaderActivatedLeavesTargetMode() async throws {
            // B polls for cards (the default): it activates A's TgInitAsTarget as soon as it is armed.
            let environment = try await resetSimulatedReaders()
            let readerA = environment.simulatedReaderA
            let status = try await emulateInProcess(readerA)
            #expect(status.1.contains("event: fieldStateChanged(fieldPresent: TgInitAsTarget returned mode 08"), "\(status.1)\(status.2)")
            // The end of the emulation released the target: A reports a card put in its field.
            try SimulatedReaders.controlA.send(.placeTag(uid: [0x04, 0xA1, 0xB2, 0xC3, 0xD4, 0xE5, 0xF6], .plain(atqa: 0x0044, sak: 0x00), id: "t2"))
            _ = try await waitForCard(in: readerA, present: true)
            #expect(try SimulatedReaders.controlA.send(.status)["picc"] == "FF")
        }

        // MARK: a relayed card that stops answering

        /// The vicc card stopped (SIGSTOP) inside SCardTransmit: vpcd waits for its answer, and so
        /// do pcscd and the relay's SCardTransmit. The bound (40 s here on a virtual clock: no real
        /// wait) ends the relayed call; the element stays refused while the call blocks.
        @Test func aRelayedCardThatStopsAnsweringIsBoundedByTheCallBound() async throws {
            let environment = try await sharedEnvironment()
            let clock = VirtualSessionClock()
            let element = CardSecureElement.pcsc(readerName: environment.vpcdReaderName, callBound: .seconds(40), clock: clock)
            try await element.open()
            let select: [UInt8] = [0x00, 0xA4, 0x04, 0x00, 0x07, 0xD2, 0x76, 0x00, 0x00, 0x85, 0x01, 0x01, 0x00]
            let answered = try await element.transceive(select)
            #expect(answered.count >= 2)
            let pid = try #require(environment.card.processIdentifier)
            #expect(kill(pid, SIGSTOP) == 0)
            var continued = false
            defer { if !continued { kill(pid, SIGCONT) } }
            let call = Task { try await element.transceive(select) }
            // The relayed call is on its way once its bound sleeps on the clock (the clock resumes
            // this wait when it registers; at most 5 s of real time).
            guard await clock.untilSleepers(1, within: .seconds(5)) else {
                // Moving the clock would end nothing: the call, stuck in the stopped vicc, would
                // wait for good. vicc answers again, so the call ends, and the test fails here.
                kill(pid, SIGCONT)
                continued = true
                Issue.record("the relayed SCardTransmit's 40 s bound did not sleep on the virtual clock within 5 s")
                _ = await call.result
                await element.close()
                return
            }
            #expect(clock.sleeperCount == 1)
            clock.advance(by: .seconds(40))
            let outcome = await call.result
            guard case .failure(let error as CredentialSessionError) = outcome else {
                Issue.record("the relayed call did not fail at the bound: \(outcome)")
                return
            }
            #expect(error.code == .secureElementChanged)
            #expect(error.reason == "the card serving as secure element (PC/SC card in \(environment.vpcdReaderName)) did not answer SCardTransmit of 00 A4 04 00 07 D2 76 00 00 85 01 01 00 within 40 s (the bound SECBRIDGE_CALL_TIMEOUT sets): it stopped answering, or its reader or pcscd is stuck; remove the card and put it back, or replug its reader", "\(error.reason)")
            // While that call blocks, the next is refused at once, naming the same cause.
            await #expect(throws: CredentialSessionError.self) { _ = try await element.transceive(select) }
            #expect(clock.sleeperCount == 0)
            kill(pid, SIGCONT)
            continued = true
            // close() does not wait for the blocked call; the release follows it.
            await element.close()
            _ = try await waitForCard(in: environment.vpcdReaderName, present: true)
        }

        /// `emulate` of vicc-relay.json end to end: the terminal's SELECT is relayed to vicc, which
        /// was stopped (SIGSTOP) once the relay's connection was open; the call bound runs on a
        /// virtual clock that the test moves past 40 s (no real wait). The terminal gets 6F 00,
        /// emulate says the card did not answer, exits 1, and the reader is restored.
        @Test func anEmulationRelayingToACardThatStopsAnsweringAnswers6F00AndRestoresTheReader() async throws {
            let environment = try await resetSimulatedReaders()
            try #require(environment.vpcdReaderName == "Virtual PCD 00 00", "vicc-relay.json names vicc's reader")
            let readerA = environment.simulatedReaderA
            let readerB = environment.simulatedReaderB
            // The terminal placed on A activates the target, not B's automatic polling.
            try await blocking { try stopAutomaticPolling(on: readerB) }
            defer { _ = try? SimulatedReaders.controlA.send(.removeAll) }
            let pid = try #require(environment.card.processIdentifier)
            let clock = VirtualSessionClock()
            // A thread of its own: the test's PC/SC calls do not queue behind the emulation.
            let executor = BlockingExecutor(name: "emulate-relay")
            defer { executor.shutdown() }
            let credential = try repositoryPath("Fixtures/credentials/vicc-relay.json")
            let emulation = Task {
                try await executor.run { () -> (Int32, String, String) in
                    let console = CapturingConsole(input: [])
                    let status = SecbridgeTools.main(
                        arguments: ["emulate", "--credential", credential, "--yes", "--reader", readerA], console: console, relayClock: clock)
                    return (status, console.standardOutput, console.standardError)
                }
            }
            // TgInitAsTarget waits on A: wired mode opened the relay's connection to vicc before.
            try await waitUntilBusy(SimulatedReaders.controlA, with: "D4 8C")
            #expect(kill(pid, SIGSTOP) == 0)
            var continued = false
            defer { if !continued { kill(pid, SIGCONT) } }
            try SimulatedReaders.controlA.send(.placeTerminal(id: "android"))
            // The relayed SCardTransmit blocks in vicc: its bound sleeps on the clock.
            if await !clock.untilSleepers(1, within: .seconds(20)) {
                // The bound did not start: moving the clock would end nothing, and the relayed
                // call, stuck in the stopped vicc, would keep the emulation (and this wait) going
                // for good. vicc answers again, so the emulation can end, and the test fails here.
                kill(pid, SIGCONT)
                continued = true
                Issue.record("the relayed SCardTransmit's 40 s bound did not sleep on the virtual clock within 20 s: the terminal's SELECT was not relayed to vicc")
            }
            clock.advance(by: .seconds(40))
            let (status, out, err) = try await emulation.value
            kill(pid, SIGCONT)
            continued = true
            let select = "00 A4 04 00 07 D2 76 00 00 85 01 01 00"
            #expect(status == 1, "\(out)\(err)")
            let reason = "the card serving as secure element (PC/SC card in Virtual PCD 00 00) did not answer SCardTransmit of \(select) within 40 s (the bound SECBRIDGE_CALL_TIMEOUT sets)"
            // The terminal's SELECT answered 6F 00 at the bound, and said so.
            #expect(out.contains("event: secure element changed: \(reason): it stopped answering, or its reader or pcscd is stuck; remove the card and put it back, or replug its reader\n  terminal > \(select)\n  host     < 6F 00\n"), "\(out)")
            #expect(err.contains("secbridge: error: the terminal's transaction could not continue: \(reason)"), "\(err)")
            let reply = try await terminalResult("android")
            #expect(reply["result"] == "failed", "\(reply)")
            // The reader restored: polling back on, and the target left (a tag placed on A is seen).
            #expect(try SimulatedReaders.controlA.send(.status)["picc"] == "FF")
            #expect(try SimulatedReaders.controlA.send(.status)["busy"] == "no")
            try SimulatedReaders.controlA.send(.removeAll)
            try SimulatedReaders.controlA.send(.placeTag(uid: [0x04, 0xA1, 0xB2, 0xC3, 0xD4, 0xE5, 0xF6], .plain(atqa: 0x0044, sak: 0x00), id: "t2"))
            _ = try await waitForCard(in: readerA, present: true)
            // vicc answers again once continued.
            _ = try await waitForCard(in: environment.vpcdReaderName, present: true)
            try await blocking { () throws -> Void in
                let link = try ACR122Link.open(channel: try PCSCContext().connect(to: readerB, share: .direct, protocols: []), readerName: readerB)
                _ = try link.setPICCOperatingParameter(.factoryDefault)
            }
        }

        // MARK: presence and transmit consistent in the simulated reader

        /// SELECT of the NFC Forum Type 4 Tag application (docs/iso14443-t4t-ndef.md §4) on a
        /// fresh shared connection to `reader`: the answer's status word.
        static func selectNDEFApplication(_ reader: String) async throws -> [UInt8] {
            try await blocking {
                let context = try PCSCContext()
                defer { try? context.release() }
                let handle = try context.connect(to: reader, share: .shared, protocols: .any)
                defer { try? handle.disconnect(.leave) }
                return Array(try handle.transmit([0x00, 0xA4, 0x04, 0x00, 0x07, 0xD2, 0x76, 0x00, 0x00, 0x85, 0x01, 0x01, 0x00]).suffix(2))
            }
        }

        /// After `change` let the powered card go while it stays in the field, pcscd still reports
        /// it and a transmit through pcscd reaches it (the chip activates it again).
        static func expectPresentAndReachable(_ reader: String, after change: () async throws -> Void) async throws {
            #expect(try await selectNDEFApplication(reader) == [0x90, 0x00])
            try await change()
            #expect(try SimulatedReaders.controlA.send(.status)["card"] == "present")
            #expect(try await selectNDEFApplication(reader) == [0x90, 0x00])
            _ = try await waitForCard(in: reader, present: true)
        }

        /// After `change` swapped the powered card, pcscd sees it leave and the new one come, and a
        /// transmit reaches the new one.
        static func expectRemovalAndInsertion(_ reader: String, after change: () async throws -> Void) async throws {
            #expect(try await selectNDEFApplication(reader) == [0x90, 0x00])
            try await change()
            _ = try await waitForCard(in: reader, present: false)
            _ = try await waitForCard(in: reader, present: true)
            #expect(try await selectNDEFApplication(reader) == [0x90, 0x00])
        }

        @Test func resetOnAReaderHoldingACardKeepsPresenceAndTransmitConsistent() async throws {
            let environment = try await resetSimulatedReaders()
            let readerA = environment.simulatedReaderA
            try await placeInSharedField("place-card uid=\"04 A1 B2 C3\" applet=t4t-ndef id=tag", environment: environment)
            try await Self.expectPresentAndReachable(readerA) {
                let result = try await runCLI(["reset", "--reader", readerA])
                #expect(result.status == 0, "\(result.out)\(result.err)")
            }
        }

        @Test func readPN532OnAReaderHoldingACardKeepsPresenceAndTransmitConsistent() async throws {
            let environment = try await resetSimulatedReaders()
            let readerA = environment.simulatedReaderA
            try await placeInSharedField("place-card uid=\"04 A1 B2 C3\" applet=t4t-ndef id=tag", environment: environment)
            try await Self.expectPresentAndReachable(readerA) {
                let result = try await runCLI(["read", "--pn532", "--reader", readerA])
                #expect(result.status == 0, "\(result.out)\(result.err)")
                #expect(result.out.contains("NDEF record 1: URI https://example.com"), "\(result.out)")
            }
        }

        @Test func aQuickCardSwapIsSeenAsARemovalAndAnInsertion() async throws {
            let environment = try await resetSimulatedReaders()
            let readerA = environment.simulatedReaderA
            try await placeInSharedField("place-card uid=\"04 A1 B2 C3\" applet=t4t-ndef id=first", environment: environment)
            try await Self.expectRemovalAndInsertion(readerA) {
                // Two requests in a row: well inside one of pcscd's 400 ms presence polls.
                try SimulatedReaders.controlA.send(.remove(peer: "first"))
                try SimulatedReaders.controlA.send(.placeCard(uid: [0x04, 0xD4, 0xE5, 0xF6], applet: .t4tNDEF, id: "second"))
            }
        }

        // MARK: USB unplug and replug

        @Test func unplugAndReplugUnderMonitorReadRunAndEmulate() async throws {
            let environment = try await replugAndResetSimulatedReaders()
            let readerA = environment.simulatedReaderA
            try await placeInSharedField("place-card uid=\"04 A1 B2 C3\" applet=t4t-ndef id=tag", environment: environment)
            let directory = try faultTestDirectory("unplug")
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let script = directory + "/select.apdu"
            try "00 A4 04 00 07 D2 76 00 00 85 01 01 00\n".write(toFile: script, atomically: true, encoding: .utf8)
            let monitor = try BinaryProcess(["monitor", "--json", "--timeout", "60"], environment: environment.environmentForSubprocesses)
            defer { monitor.stop() }
            _ = try await monitor.wait(for: "card-inserted")
            let before = monitor.output.count
            #expect(try SimulatedReaders.controlA.send(.unplug)["plugged"] == "no")
            defer { _ = try? SimulatedReaders.controlA.send(.replug) }
            // pcscd marks the reader unavailable at its next presence poll (pcsc-lite 1.9.9
            // eventhandler.c: SCARD_UNKNOWN, which clients see as SCARD_STATE_UNAVAILABLE) and
            // keeps it listed (no hot-plug for a reader.conf reader).
            let marked = try await blocking { () throws -> Bool in
                let context = try PCSCLiteClient().establishContext()
                defer { try? context.release() }
                var unavailable = false
                for _ in 0..<5 where !unavailable { unavailable = readerIsUnavailable(readerA, context: context) }
                let listed = try context.listReaders().contains(readerA)
                return unavailable && listed
            }
            #expect(marked)
            let read = try await runCLI(["read", "--reader", readerA])
            let run = try await runCLI(["run", "--reader", readerA, script])
            let emulate = try await emulateInProcess(readerA)
            // Each says the reader is unavailable, at once (no wait for a device timeout), exit 1.
            let unavailable = "secbridge: error: '\(readerA)' is unavailable: pcscd cannot reach it (the reader was unplugged, or its driver reports no device); plug it in again and retry (pcscd finds it again by itself)\n"
            #expect(read.status == 1 && read.err == unavailable, "\(read.out)\(read.err)")
            #expect(run.status == 1 && run.err == unavailable, "\(run.out)\(run.err)")
            #expect(emulate.0 == 1 && emulate.2.hasSuffix(unavailable), "\(emulate.1)\(emulate.2)")
            #expect(try SimulatedReaders.controlA.send(.replug)["plugged"] == "yes")
            _ = try await waitForCard(in: readerA, present: true)
            let again = try await runCLI(["read", "--reader", readerA])
            #expect(again.status == 0, "\(again.out)\(again.err)")
            // monitor, across it: the card leaves with the reader and comes back with it (pcscd
            // keeps a reader.conf reader listed while it is unavailable).
            let removed = try await monitor.wait(for: "\"event\":\"card-removed\",\"reader\":\"\(readerA)\"", after: before)
            _ = try await monitor.wait(for: "\"event\":\"card-inserted\",\"reader\":\"\(readerA)\"", after: removed)
            #expect(!monitor.output[before...].contains { $0.contains("reader-detached") }, "\(monitor.output)")
        }
    }
}

/// The processes descending from `pid` (children, their children, …) with their command names,
/// from the `ppid` field of every /proc/PID/stat (proc(5)).
func descendants(of pid: Int32) -> [(pid: Int32, name: String)] {
    var parents: [Int32: (parent: Int32, name: String)] = [:]
    for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
        guard let child = Int32(entry), let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
              let open = stat.firstIndex(of: "("), let close = stat.lastIndex(of: ")") else { continue }
        // "pid (comm) state ppid …": comm may hold spaces and parentheses, so split after the last ')'.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 1, let parent = Int32(fields[1]) else { continue }
        parents[child] = (parent, String(stat[stat.index(after: open)..<close]))
    }
    var found: [(pid: Int32, name: String)] = []
    var frontier: Set<Int32> = [pid]
    while !frontier.isEmpty {
        let next = parents.filter { frontier.contains($0.value.parent) }
        found += next.map { ($0.key, $0.value.name) }
        frontier = Set(next.keys)
    }
    return found
}

/// Faults of a private pcscd of its own (`simulate`, `demo`): the shared pcscd stays up for the
/// other suites.
@Suite(.needsPrivatePCSCD) struct PrivateDaemonFaultTests {
    /// SIGKILL of `demo` as soon as its private pcscd runs (the demo itself is over in a moment)
    /// takes that pcscd with it, as for `simulate` (`MonitorTests.swift`
    /// `simulateKilledTakesItsPcscdWithIt`): the lifeline ends with it.
    @Test func demoKilledTakesItsPcscdWithIt() async throws {
        try requireBuiltBinaries()
        let demo = try BinaryProcess(["demo", "--time-scale", "1"], environment: ProcessInfo.processInfo.environment, input: true)
        let process = demo.process
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }  // SIGTERM may be blocked in it
        // Its pcscd among its descendants, asking /proc every millisecond (no notification exists
        // for another process's children), on a thread of its own: on the shared PC/SC executor,
        // busy with other suites, the watch started after the demo (over in about 100 ms) had
        // ended. The demo is stopped (SIGSTOP) the moment its pcscd is seen, so it cannot end on
        // its own before the SIGKILL.
        let demoPID = process.processIdentifier
        let daemons = await withCheckedContinuation { (continuation: CheckedContinuation<[Int32], Never>) in
            Thread {
                let deadline = ContinuousClock.now + .seconds(20)
                while ContinuousClock.now < deadline && process.isRunning {
                    let found = descendants(of: demoPID).filter { $0.name == "pcscd" }.map(\.pid)
                    if !found.isEmpty {
                        kill(demoPID, SIGSTOP)
                        continuation.resume(returning: found)
                        return
                    }
                    usleep(1_000)
                }
                continuation.resume(returning: [])
            }.start()
        }
        try #require(!daemons.isEmpty, "no pcscd seen under demo \(demoPID): \(demo.output)")
        kill(demoPID, SIGKILL)
        try await demo.exit(after: "SIGKILL")
        for pcscd in daemons {
            let exited = try await blocking { waitForExit(of: pcscd, upTo: .seconds(10)) }
            #expect(exited, "pcscd \(pcscd) still runs after demo was killed")
        }
    }

    /// TgInitAsTarget `D4 8C`, PICC only, passive only (mode 05), SENS_RES 04 00, NFCID1t 12 34 56,
    /// SEL_RES 20, no FeliCa or NFC-DEP parameters (PN532 UM0701-02 §7.3.14), as a Direct Transmit
    /// through the escape path (docs/acr122-pn532.md §2): it waits for a terminal that never comes.
    static let tgInitAsTarget = "FF 00 00 00 27 D4 8C 05 04 00 12 34 56 20" + String(repeating: " 00", count: 30)

    @Test func pcscdKilledDuringAControlCallSaysPcscdWentAway() async throws {
        try requireBuiltBinaries()
        // Time scale 1: the TgInitAsTarget waits (up to libccid's 30 s) for what the test does next.
        let simulate = try BinaryProcess(
            ["simulate", "--json", "--readers", "1", "--time-scale", "1", "--timeout", "60"],
            environment: ProcessInfo.processInfo.environment, input: true)
        defer { simulate.stop() }
        let started = try await simulate.line(containing: "\"event\":\"started\"")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(started.utf8)) as? [String: Any])
        let socket = try #require(object["socket"] as? String)
        let reader = try #require((object["readers"] as? [[String: Any]])?.first)
        let name = try #require(reader["name"] as? String)
        let controlSocket = try #require(reader["controlSocket"] as? String)
        let pcscd = try #require(PrivatePCSCD.daemonPID(socketPath: socket))
        var environment = ProcessInfo.processInfo.environment
        environment["PCSCLITE_CSOCK_NAME"] = socket
        let control = try BinaryProcess(["control", "--reader", name] + Self.tgInitAsTarget.split(separator: " ").map(String.init), environment: environment)
        defer { control.stop() }
        try await waitUntilBusy(SimulatedReaderControl(socketPath: controlSocket), with: "D4 8C")
        // SCardControl is under way in pcscd: it dies now.
        #expect(kill(pcscd, SIGKILL) == 0)
        try await control.exit(after: "pcscd was killed during its SCardControl")
        let errors = control.finalStandardError()
        #expect(control.process.terminationStatus == 1, "\(control.output) \(errors)")
        #expect(errors.contains("SCardControl failed: pcscd went away during the call (SCARD_"), "\(errors)")
        #expect(errors.contains(", and nothing listens on \(socket) any more); start pcscd again"), "\(errors)")
        #expect(!errors.contains("security violation"), "\(errors)")
    }
}
