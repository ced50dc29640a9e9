import Foundation
import ISO7816
import PCSC
import PCSCSandbox
import PN53x
import SecbridgeCLI
import SecbridgeTesting
import SecureElementCredential
import Testing
import Transcript

// The credential session end to end: `secbridge emulate`, `read`, `credentials` and the
// CredentialSession API through the shared private pcscd and the simulated ACR122U pair
// (docs/session-model.md; docs/iso14443-t4t-ndef.md §4; docs/acr122-pn532.md §5, §5b).

/// The absolute path of a file of the repository, e.g. `Fixtures/credentials/uri-tag.json`.
func repositoryPath(_ relative: String) throws -> String {
    guard let root = HarnessPaths.repositoryRoot else {
        throw HarnessError(code: .missingDependency, reason: "the repository root (with Package.swift) was not found")
    }
    return root.appendingPathComponent(relative).path
}

/// Android's read of the worked example of docs/iso14443-t4t-ndef.md §4, byte for byte: C-APDU, R-APDU.
let workedExampleAndroidRead: [(command: String, response: String)] = [
    ("00 A4 04 00 07 D2 76 00 00 85 01 01 00", "90 00"),
    ("00 A4 00 0C 02 E1 03", "90 00"),
    ("00 B0 00 00 0F", "00 0F 20 00 7F 00 7F 04 06 E1 04 04 00 00 00 90 00"),
    ("00 A4 00 0C 02 E1 04", "90 00"),
    ("00 B0 00 00 02", "00 10 90 00"),
    ("00 B0 00 02 10", "D1 01 0C 55 04 65 78 61 6D 70 6C 65 2E 63 6F 6D 90 00"),
]

/// The `secbridge` binary running in the background, its standard input at end of file and its
/// output in files (no pipe can fill up and block it). ``finish(timeout:)`` bounds its run time.
final class BackgroundSecbridge: @unchecked Sendable {
    // @unchecked: `process` is started in init and afterwards only read (isRunning, status) or
    // terminated; the output files are read after it exited.
    private let process = Process()
    private let outURL: URL
    private let errURL: URL

    init(_ arguments: [String], environment: [String: String]) throws {
        let binary = try secbridgeBinary()
        let base = FileManager.default.temporaryDirectory
            .appendingPathComponent("secbridge-e2e5.\(getpid()).\(UUID().uuidString.prefix(8))")
        outURL = base.appendingPathExtension("out")
        errURL = base.appendingPathExtension("err")
        _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
        process.executableURL = binary
        process.arguments = arguments
        process.environment = environment
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = try FileHandle(forWritingTo: outURL)
        process.standardError = try FileHandle(forWritingTo: errURL)
        try process.run()
    }

    /// The process id, for signals.
    var processIdentifier: Int32 { process.processIdentifier }

    /// What it printed so far.
    var outputSoFar: String { (try? String(contentsOf: outURL, encoding: .utf8)) ?? "" }

    /// Waits (on a thread of its own, at most `timeout`) until standard output contains `text` or
    /// the process exited; returns whether the text came.
    func waitForOutput(containing text: String, timeout: Duration = .seconds(15)) async throws -> Bool {
        try await onOwnThread {
            let clock = ContinuousClock()
            let deadline = clock.now + timeout
            while clock.now < deadline {
                if self.outputSoFar.contains(text) { return true }
                if !self.process.isRunning { return self.outputSoFar.contains(text) }
                usleep(10_000)
            }
            return false
        }
    }

    /// Waits at most `timeout` for the exit, then SIGTERM, then SIGKILL; returns the status and
    /// both outputs.
    func finish(timeout: Duration = .seconds(30)) async throws -> (status: Int32, out: String, err: String) {
        try await onOwnThread {
            let clock = ContinuousClock()
            let deadline = clock.now + timeout
            while self.process.isRunning && clock.now < deadline { usleep(10_000) }
            if self.process.isRunning {
                self.process.terminate()
                let grace = clock.now + .seconds(2)
                while self.process.isRunning && clock.now < grace { usleep(10_000) }
                if self.process.isRunning { kill(self.process.processIdentifier, SIGKILL) }
            }
            self.process.waitUntilExit()
            let out = self.outputSoFar
            let err = (try? String(contentsOf: self.errURL, encoding: .utf8)) ?? ""
            try? FileManager.default.removeItem(at: self.outURL)
            try? FileManager.default.removeItem(at: self.errURL)
            return (self.process.terminationStatus, out, err)
        }
    }

    /// Runs blocking waits on a dedicated thread (not the shared pool, not ``pcscExecutor``, which
    /// the foreground CLI run of the same test may need meanwhile).
    private func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        let executor = BlockingExecutor(name: "e2e5 subprocess wait")
        defer { executor.shutdown() }
        return try await executor.run(body)
    }
}

/// `secbridge emulate` on reader A in the background, with B's automatic polling off (an
/// auto-polling ACR122U in the same field would activate A's target itself: docs/acr122-pn532.md §2).
func startEmulation(_ environment: TestEnvironment, credential: String, extra: [String] = []) async throws -> BackgroundSecbridge {
    let readerB = environment.simulatedReaderB
    try await blocking { try stopAutomaticPolling(on: readerB) }
    return try BackgroundSecbridge(
        ["emulate", "--credential", try repositoryPath(credential), "--yes", "--reader", environment.simulatedReaderA] + extra,
        environment: environment.environmentForSubprocesses)
}

/// The `terminal-result` of `peer` once its run ended (waits at most 20 s).
func terminalResult(_ peer: String) async throws -> SimulatedReaderReply {
    try await blocking { try SimulatedReaders.controlA.send(.terminalResult(peer: "\(peer)", waitMilliseconds: 20000), timeout: .seconds(25)) }
}

/// Collects session events until `stop` says so (at most `limit` events).
func collectEvents(
    _ stream: AsyncStream<CredentialSessionEvent>, limit: Int = 64, until stop: @Sendable (CredentialSessionEvent) -> Bool
) async -> [CredentialSessionEvent] {
    var events: [CredentialSessionEvent] = []
    for await event in stream {
        events.append(event)
        if stop(event) || events.count >= limit { break }
    }
    return events
}

extension SharedReader {
    @Suite struct SessionEndToEndTests {
        // MARK: secbridge emulate

        @Test func emulateServesAndroidsReadOfTheWorkedExampleByteForByte() async throws {
            let environment = try await resetSimulatedReaders()
            try SimulatedReaders.controlA.send(.placeTerminal(id: "android"))
            let emulation = try await startEmulation(environment, credential: "Fixtures/credentials/worked-example-tag.json")
            let result = try await emulation.finish()
            #expect(result.status == 0, "\(result.err)\n\(result.out)")
            let reply = try await terminalResult("android")
            #expect(reply["result"] == "passed", "\(reply)")
            #expect(reply["exchanges"] == "6")
            #expect(reply["activations"] == "1")
            // emulate's whole output: the client sequence, the field events, the exchanges in
            // order and byte for byte, then management again.
            let readerA = environment.simulatedReaderA
            // The field event comes from the emulation runner, the state line from the client
            // sequence: either may be printed first when the terminal is already in the field.
            let head = """
                state: wired(worked-example-tag)
                presentment assertion: active
                authorization: Present "URI tag https://example.com, read/write (iso14443-t4t-ndef.md §4 byte for byte)" (worked-example-tag) on \(readerA)? → approved (--yes)

                """
            let stateLine = "state: cardEmulation(worked-example-tag) on \(readerA): present the reader to the terminal (Ctrl-C stops)\n"
            let presentLine = "event: fieldStateChanged(fieldPresent: TgInitAsTarget returned mode 08, initiator command E0 80)\n"
            var expected = ""
            for exchange in workedExampleAndroidRead {
                expected += "  terminal > " + exchange.command + "\n"
                expected += "  host     < " + exchange.response + "\n"
            }
            expected += """
                event: fieldStateChanged(fieldAbsent: TgGetData: PN532 status 29 (the initiator released the target))
                state: management
                event: sessionInvalidated(reason: invalidate() was called)
                terminal: 6 APDUs; the NDEF file was read to the end (NLEN 16, 18 bytes)
                  simulated external terminal (Android Type 4 Tag read (android-15.0.0_r23)) [android]: passed: NDEF message, 1 record: URI https://example.com

                """
            // The state line is printed by the client sequence when performTransaction returns,
            // while the runner prints the field's events and exchanges: it may fall anywhere after
            // the authorization (with a fast simulated field, even between two exchanges). The
            // rest is checked in order, byte for byte, and the state line exactly once.
            let withoutState = result.out.replacingOccurrences(of: stateLine, with: "")
            #expect(withoutState == head + presentLine + expected, "\(result.out)")
            #expect(result.out.components(separatedBy: stateLine).count == 2, "\(result.out)")
            #expect(result.out.range(of: stateLine).map { result.out[..<$0.lowerBound].hasPrefix(head) } == true, "\(result.out)")
            // The reader is restored: automatic PICC polling on again (FF 00 51 FF 00).
            let status = try SimulatedReaders.controlA.send(.status)
            #expect(status["picc"] == "FF")
        }

        /// uri-tag.json is read-only: its CC's write access byte is FF (docs/iso14443-t4t-ndef.md §4).
        /// A reading phone looks at the read-access byte only, so the Android script reads it whole.
        @Test func androidScriptReadsTheReadOnlyURITagWhole() async throws {
            let environment = try await resetSimulatedReaders()
            try SimulatedReaders.controlA.send(.placeTerminal(id: "android"))
            let emulation = try await startEmulation(environment, credential: "Fixtures/credentials/uri-tag.json")
            let result = try await emulation.finish()
            #expect(result.status == 0, "\(result.err)")
            let reply = try await terminalResult("android")
            #expect(reply["result"] == "passed", "\(reply)")
            #expect(reply["exchanges"] == "6", "\(reply)")
        }

        @Test func readPN532OnBDecodesOurEmulationOnA() async throws {
            let environment = try await resetSimulatedReaders()
            let emulation = try await startEmulation(environment, credential: "Fixtures/credentials/uri-tag.json")
            let armed = try await emulation.waitForOutput(containing: "state: cardEmulation")
            #expect(armed, "\(emulation.outputSoFar)")
            let read = try await runCLI(["read", "--pn532", "--reader", environment.simulatedReaderB])
            let served = try await emulation.finish()
            #expect(read.status == 0, "\(read.err)")
            // The PN532 target's identity: UID from the credential, the PN532's own ATS (docs/acr122-pn532.md §5).
            #expect(read.out.contains("UID 08 00 B0 0B  ATS 05 75 33 92 03"), "\(read.out)")
            #expect(read.out.contains("NDEF record 1: URI https://example.com\n"), "\(read.out)")
            #expect(read.out.contains("> 00 B0 00 02 10\n< D1 01 0C 55 04 65 78 61 6D 70 6C 65 2E 63 6F 6D 90 00\n"), "\(read.out)")
            #expect(served.status == 0, "\(served.err)\n\(served.out)")
            #expect(served.out.contains("  terminal > 00 A4 04 00 07 D2 76 00 00 85 01 01 00\n  host     < 90 00\n"))
            #expect(try SimulatedReaders.controlA.send(.status)["picc"] == "FF")
        }

        /// Two `emulate` processes on one reader: the second is refused at once, naming the first's
        /// pid (the cross-process claim, docs/session-model.md), and the first serves its terminal
        /// as if nothing happened.
        @Test func aSecondEmulateOnTheSameReaderIsRefused() async throws {
            let environment = try await resetSimulatedReaders()
            let emulation = try await startEmulation(environment, credential: "Fixtures/credentials/uri-tag.json")
            let armed = try await emulation.waitForOutput(containing: "state: cardEmulation")
            #expect(armed, "\(emulation.outputSoFar)")
            let second = try await runCLI(
                ["emulate", "--credential", try repositoryPath("Fixtures/credentials/uri-tag.json"), "--yes", "--reader", environment.simulatedReaderA])
            #expect(second.status == 1)
            #expect(second.err.contains("another process (pid \(emulation.processIdentifier)) holds the reader \"\(environment.simulatedReaderA)\""), "\(second.err)")
            #expect(!second.out.contains("state: cardEmulation"), "\(second.out)")
            let read = try await runCLI(["read", "--pn532", "--reader", environment.simulatedReaderB])
            let served = try await emulation.finish()
            #expect(read.out.contains("NDEF record 1: URI https://example.com\n"), "\(read.out)")
            #expect(served.status == 0, "\(served.err)\n\(served.out)")
            #expect(try SimulatedReaders.controlA.send(.status)["picc"] == "FF")
        }

        // `read` over PC/SC of a placed Type 4 Tag runs in process:
        // SecbridgeCLITests/InProcessCommandTests.readOverPCSCDecodesAPlacedType4TagInProcess.

        // MARK: Fixtures/flows replayed

        @Test func readFlowReplaysLiveOnB() async throws {
            let environment = try await resetSimulatedReaders()
            let readerB = environment.simulatedReaderB
            try SimulatedReaders.controlB.send(.placeCard(uid: [0x04, 0xA1, 0xB2, 0xC3, 0xD4, 0xE5, 0xF6], applet: .t4tNDEF, id: "tag"))
            _ = try await waitForCard(in: readerB, present: true)
            let result = try await runCLI(["replay", "--reader", readerB, try repositoryPath("Fixtures/flows/read-pcsc-t4t.trn")])
            #expect(result.status == 0, "\(result.err)")
            #expect(result.out.contains("every answer matches"), "\(result.out)")
            #expect(result.out.contains("replayed 8 exchanges"), "\(result.out)")
            try SimulatedReaders.controlB.send(.remove(peer: "tag"))
        }

        /// The terminal's side (`tgt <` commands, `tgt >` expected answers) of a recorded flow,
        /// played by an external terminal against a live `secbridge emulate`.
        @Test(arguments: [("Fixtures/flows/emulate-worked-example.trn", nil), ("Fixtures/flows/demo.trn", "a")])
        func recordedFlowPlaysAsATerminalAgainstALiveEmulation(_ flow: String, _ channel: String?) async throws {
            let environment = try await resetSimulatedReaders()
            try SimulatedReaders.controlA.send(.placeTerminal(transcript: try repositoryPath(flow), channel: channel, id: "flow"))
            let emulation = try await startEmulation(environment, credential: "Fixtures/credentials/worked-example-tag.json")
            let result = try await emulation.finish()
            #expect(result.status == 0, "\(result.err)")
            let reply = try await terminalResult("flow")
            #expect(reply["result"] == "passed", "\(reply)")
            #expect(reply["exchanges"] == "6")
        }

        // MARK: secbridge credentials

        @Test func credentialsListsEveryFixture() async throws {
            let directory = try repositoryPath("Fixtures/credentials")
            let files = try FileManager.default.contentsOfDirectory(atPath: directory)
                .filter { $0.hasSuffix(".json") }.sorted().map { directory + "/" + $0 }
            let result = try await runCLI(["credentials"] + files)
            #expect(result.status == 0, "\(result.err)")
            let headings = result.out.split(separator: "\n").filter { !$0.hasPrefix(" ") }
            #expect(headings.count == files.count)
            #expect(result.out.contains("""
                example-uri-tag: URI tag https://example.com   (\(directory)/uri-tag.json)
                  emulation: UID 08 00 B0 0B, ATQA 00 04, SAK 20, historical bytes none
                  applet ndef-tag: NFC Forum Type 4 Tag, AID D2 76 00 00 85 01 01, 1 NDEF record(s), read-only

                """), "\(result.out)")
            #expect(result.out.contains("""
                example-text-tag: Text tag "Hello"   (\(directory)/text-tag.json)
                  emulation: UID 08 00 B0 0B, ATQA 00 04, SAK 20, historical bytes none
                  applet ndef-tag: NFC Forum Type 4 Tag, AID D2 76 00 00 85 01 01, 1 NDEF record(s), read/write

                """), "\(result.out)")
            #expect(result.out.contains("""
                access-badge-0042: Door access badge 0042   (\(directory)/access-badge.json)
                  emulation: UID 08 42 00 42, ATQA 00 04, SAK 20, historical bytes 80 73 C0 21 C0
                  applet access badge: declarative, AIDs F0 53 42 41 44 47 45, 6 rule(s)

                """), "\(result.out)")
        }

        // MARK: emulate refused

        @Test func emulateDeclinedWithoutAnAnswerExitsOne() async throws {
            let environment = try await resetSimulatedReaders()
            let result = try await runCLI(
                ["emulate", "--credential", try repositoryPath("Fixtures/credentials/uri-tag.json"), "--reader", environment.simulatedReaderA],
                input: [])
            #expect(result.status == 1)
            #expect(result.out.contains("no answer on standard input: declined (use --yes to approve without asking)"), "\(result.out)")
            #expect(result.err.hasPrefix("secbridge: error: userCanceledAuthorization"), "\(result.err)")
            // Declined before the reader was touched for emulation: polling still on.
            #expect(try SimulatedReaders.controlA.send(.status)["picc"] == "FF")
        }

        @Test func emulateOnTheVpcdReaderSaysItCannotEmulate() async throws {
            let environment = try await sharedEnvironment()
            let result = try await runCLI(
                ["emulate", "--credential", try repositoryPath("Fixtures/credentials/uri-tag.json"), "--yes",
                 "--reader", environment.vpcdReaderName])
            #expect(result.status == 1)
            #expect(result.err.hasPrefix(
                "secbridge: error: \(environment.vpcdReaderName) cannot emulate a card: \(environment.vpcdReaderName) is not an ACR122-class reader (PN532 behind an ACR122U): card emulation is unavailable; reader sessions still work."),
                "\(result.err)")
        }

        /// docs/cases.md P09: libccid without ifdDriverOptions 0x0001 refuses escape commands.
        @Test func emulateWithEscapeDisabledNamesIfdDriverOptions_P09() async throws {
            let environment = try await resetSimulatedReaders()
            try SimulatedReaders.controlA.send(.personality(name: "ccid-escape-disabled"))
            defer { _ = try? SimulatedReaders.controlA.send(.personality(name: "ccid-escape-enabled")) }
            let result = try await runCLI(
                ["emulate", "--credential", try repositoryPath("Fixtures/credentials/uri-tag.json"), "--yes",
                 "--reader", environment.simulatedReaderA])
            #expect(result.status == 1)
            #expect(result.err.contains(
                "cannot emulate a card: card emulation needs escape commands: escape commands are not enabled in the CCID driver: set ifdDriverOptions to 0x0001 in /etc/libccid_Info.plist and restart pcscd (`systemctl restart pcscd`)"),
                "\(result.err)")
        }

        // MARK: The session API on reader A

        @Test func sessionAPIServesATerminalThenEndCardEmulationReturns() async throws {
            let environment = try await resetSimulatedReaders()
            let readerA = environment.simulatedReaderA
            try await blocking { try stopAutomaticPolling(on: environment.simulatedReaderB) }
            let executor = BlockingExecutor(name: "e2e5 session A")
            defer { executor.shutdown() }
            let backend = await PN532EmulationBackend.open(readerName: readerA, executor: executor) {
                let context = try PCSCContext()
                let handle = try context.connect(to: readerA, share: .direct, protocols: .undefined)
                return (handle, { try? handle.disconnect(.leave); try? context.release() })
            }
            #expect(backend.support == .supported)
            let credential = try CredentialFile(contentsOfFile: try repositoryPath("Fixtures/credentials/worked-example-tag.json")).makeCredential()
            let session = try CredentialSession.startSession(
                CredentialSessionOptions(credentials: [credential], emulationBackend: backend, authorizer: PolicyAuthorizer.approveAll))
            let events = Task {
                await collectEvents(session.eventStream) {
                    if case .fieldStateChanged(let info) = $0 { return info == .fieldAbsent }
                    return false
                }
            }
            try SimulatedReaders.controlA.send(.placeTerminal(id: "api"))
            try await session.enterWiredMode(using: credential)
            try await session.performTransaction(using: credential)
            #expect(await session.state == .cardEmulation(credential: credential))
            let seen = try await value(of: events, within: .seconds(30), "the field-absent event after the terminal's read")
            let reply = try await terminalResult("api")
            #expect(reply["result"] == "passed", "\(reply)")
            try await session.endCardEmulation()
            #expect(await session.state == .management)
            await session.invalidate()
            #expect(await session.state == .invalid)
            let present = FieldStateInfo(state: .fieldPresent, observation: "TgInitAsTarget returned mode 08, initiator command E0 80")
            #expect(Array(seen.prefix(2)) == [.fieldStateChanged(info: .fieldPresent), .fieldObserved(present)])
            var commands: [String] = []
            var responses: [String] = []
            for event in seen {
                if case .apduExchanged(let command, let response) = event {
                    commands.append(command.hexString)
                    responses.append(response.hexString)
                }
            }
            let expectedCommands: [String] = workedExampleAndroidRead.map { $0.command }
            let expectedResponses: [String] = workedExampleAndroidRead.map { $0.response }
            #expect(commands == expectedCommands)
            #expect(responses == expectedResponses)
            #expect(await session.billingLog.count == 1)
            #expect(try SimulatedReaders.controlA.send(.status)["picc"] == "FF")
        }

        /// Ctrl-C's equivalent: invalidate during emulation (no terminal) returns within one MCU
        /// timeout (docs/acr122-pn532.md §5b) and restores the reader. Only the outcome is asserted.
        @Test func invalidateDuringEmulationEndsItAndRestoresTheReader() async throws {
            let environment = try await resetSimulatedReaders()
            let readerA = environment.simulatedReaderA
            try await blocking { try stopAutomaticPolling(on: environment.simulatedReaderB) }
            let executor = BlockingExecutor(name: "e2e5 session A")
            defer { executor.shutdown() }
            let backend = await PN532EmulationBackend.open(readerName: readerA, executor: executor) {
                let context = try PCSCContext()
                let handle = try context.connect(to: readerA, share: .direct, protocols: .undefined)
                return (handle, { try? handle.disconnect(.leave); try? context.release() })
            }
            let credential = try CredentialFile(contentsOfFile: try repositoryPath("Fixtures/credentials/uri-tag.json")).makeCredential()
            let session = try CredentialSession.startSession(
                CredentialSessionOptions(credentials: [credential], emulationBackend: backend, authorizer: PolicyAuthorizer.approveAll))
            let events = Task { await collectEvents(session.eventStream) { _ in false } }
            try await session.enterWiredMode(using: credential)
            try await session.performTransaction(using: credential)
            #expect(try SimulatedReaders.controlA.send(.status)["picc"] == "00", "automatic polling off while emulating")
            await session.invalidate()
            #expect(await session.state == .invalid)
            let seen = try await value(of: events, within: .seconds(30), "the event stream finishing on invalidate()")
            guard case .sessionInvalidated(let reason)? = seen.last else {
                Issue.record("the stream did not end with sessionInvalidated: \(seen)")
                return
            }
            #expect(reason.invalidation == .invalidatedByClient)
            var exchangedCount = 0
            for event in seen {
                if case .apduExchanged = event { exchangedCount += 1 }
            }
            #expect(exchangedCount == 0)
            #expect(try SimulatedReaders.controlA.send(.status)["picc"] == "FF")
            do {
                try await session.enterWiredMode(using: credential)
                Issue.record("an invalid session accepted enterWiredMode")
            } catch {
                let code: CredentialSessionError.Code = error.code
                let allowed: Set<CredentialSessionError.Code> = [.sessionInvalidated, .invalidSessionState]
                #expect(allowed.contains(code), "\(error)")
            }
        }
    }
}
