import Foundation
import PCSC
import PCSCSandbox
import SecureElementCredential
import SecbridgeTesting
import Testing

// A card in a PC/SC reader as the secure element (docs/session-model.md, "Relaying to a PC/SC card"):
// vicc's iso7816 card behind vpcd, wired and relayed to a terminal through card emulation on the
// simulated ACR122U A. vicc answers in about 48 ms per APDU (vpcd's two TCP segments, Nagle and
// delayed ACK), so each test sends two or three APDUs.

extension SharedReader {
    @Suite struct RelayTests {
        static let credentialPath = "Fixtures/credentials/vicc-relay.json"

        static func viccCredential(_ environment: TestEnvironment) throws -> Credential {
            try #require(environment.vpcdReaderName == "Virtual PCD 00 00", "the credential file names vicc's reader")
            return try CredentialFile(contentsOfFile: try repositoryPath(credentialPath)).makeCredential()
        }

        @Test func wiredTransceiveReachesViccOverPCSC() async throws {
            let environment = try await sharedEnvironment()
            let credential = try Self.viccCredential(environment)
            let session = try CredentialSession.startSession(
                CredentialSessionOptions(credentials: [credential], authorizer: PolicyAuthorizer.declineAll))
            try await session.enterWiredMode(using: credential)
            #expect(await session.state == .wired(credential: credential))
            // SELECT the MF by file identifier 3F 00, no answer data (ISO/IEC 7816-4 §11.2.2).
            let select = try await session.transceive(hex("00 A4 00 0C 02 3F 00"))
            #expect(select.hexString == "90 00")
            // GET CHALLENGE, Le 8: eight bytes of the card's random number, then 90 00.
            let challenge = try await session.transceive(hex("00 84 00 00 08"))
            #expect(challenge.count == 10)
            #expect(Array(challenge.suffix(2)).hexString == "90 00")
            try await session.endWiredMode()
            #expect(await session.state == .management)
            await session.invalidate()
        }

        @Test func cardEmulationRelaysTheTerminalsAPDUsToVicc() async throws {
            let environment = try await resetSimulatedReaders()
            let credential = try Self.viccCredential(environment)
            let readerA = environment.simulatedReaderA
            try await blocking { try stopAutomaticPolling(on: environment.simulatedReaderB) }
            // The terminal's side: vicc's answers, GET CHALLENGE's random bytes as wildcards, and a
            // SELECT of an application vicc does not hold (6A 82 passes through unchanged).
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("secbridge-e2e5-relay-\(UUID().uuidString).trn")
            defer { try? FileManager.default.removeItem(at: file) }
            try """
                # secbridge-transcript: 1
                # origin: simulated
                tgt < 00 A4 00 0C 02 3F 00
                tgt > 90 00
                tgt < 00 84 00 00 08
                tgt > ?? ?? ?? ?? ?? ?? ?? ?? 90 00
                tgt < 00 A4 04 00 07 D2 76 00 00 85 01 01 00
                tgt > 6A 82

                """.write(to: file, atomically: true, encoding: .utf8)
            try SimulatedReaders.controlA.send(.placeTerminal(transcript: "\(file.path)", id: "relay"))

            let executor = BlockingExecutor(name: "e2e5 relay A")
            defer { executor.shutdown() }
            let backend = await PN532EmulationBackend.open(readerName: readerA, executor: executor) {
                let context = try PCSCContext()
                let handle = try context.connect(to: readerA, share: .direct, protocols: .undefined)
                return (handle, { try? handle.disconnect(.leave); try? context.release() })
            }
            let session = try CredentialSession.startSession(
                CredentialSessionOptions(credentials: [credential], emulationBackend: backend, authorizer: PolicyAuthorizer.approveAll))
            let events = Task {
                await collectEvents(session.eventStream) {
                    if case .fieldStateChanged(let info) = $0 { return info == .fieldAbsent }
                    return false
                }
            }
            try await session.enterWiredMode(using: credential)
            try await session.performTransaction(using: credential)
            let seen = try await value(of: events, within: .seconds(30), "the field-absent event after the relayed transcript")
            let reply = try await terminalResult("relay")
            try await session.endCardEmulation()
            await session.invalidate()

            #expect(reply["result"] == "passed", "\(reply)")
            #expect(reply["exchanges"] == "3")
            var commands: [String] = []
            var responses: [[UInt8]] = []
            for event in seen {
                if case .apduExchanged(let command, let response) = event {
                    commands.append(command.hexString)
                    responses.append(response)
                }
            }
            #expect(commands == ["00 A4 00 0C 02 3F 00", "00 84 00 00 08", "00 A4 04 00 07 D2 76 00 00 85 01 01 00"], "\(seen)")
            try #require(responses.count == 3)
            #expect(responses[0].hexString == "90 00")
            #expect(responses[1].count == 10)
            #expect(Array(responses[1].suffix(2)).hexString == "90 00")
            #expect(responses[2].hexString == "6A 82")
            #expect(try SimulatedReaders.controlA.send(.status)["picc"] == "FF")
        }

        @Test func credentialsDescribesTheRelay() async throws {
            let result = try await runCLI(["credentials", try repositoryPath(Self.credentialPath)])
            #expect(result.status == 0, "\(result.err)")
            #expect(result.out.contains(
                "  secure element: the card in PC/SC reader \"Virtual PCD 00 00\" (relay, status words passed through)\n"),
                "\(result.out)")
        }
    }
}
