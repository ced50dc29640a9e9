import ACR122Simulator
import Foundation
import ISO7816
import PCSC
import PN53x
import SecbridgeTesting
import Synchronization
import Testing
@testable import SecureElementCredential

@Suite("The ACR122U backend against SimulatedACR122U", .serialized)
struct SimulatorTests {
    static func backend(_ reader: SimulatedACR122U) async -> PN532EmulationBackend {
        await PN532EmulationBackend.open(readerName: reader.name, executor: BlockingExecutor(name: "test \(reader.name)")) {
            (try SimulatedReaderChannel(reader, protocol: .undefined), {})
        }
    }

    @Test("an Android phone (ExternalTerminal) reads the URI tag from our emulation; PICC polling restored afterwards")
    func androidReadsOurTag() async throws {
        let field = SimulatedField(clock: SimulationClock(scale: 0.001))
        let terminal = ExternalTerminal(script: .androidType4ReadExample)
        field.place(terminal)
        let reader = SimulatedACR122U(field: field, name: "ACS ACR122U PICC Interface 00 00 (session test)")
        let backend = await Self.backend(reader)
        #expect(backend.support == .supported)
        let credential = Credential(id: "uri-tag", secureElement: try exampleElement())
        let session = try CredentialSession.startSession(CredentialSessionOptions(
            credentials: [credential], emulationBackend: backend, authorizer: PolicyAuthorizer.approveAll))
        var events = session.eventStream.makeAsyncIterator()
        try await session.enterWiredMode(using: credential)
        try await session.performTransaction(using: credential)
        #expect(reader.piccOperatingParameter == 0x00, "automatic PICC polling off during emulation (FF 00 51 00 00)")
        #expect(reader.mcuTimeout == 0x01, "a bounded MCU timeout of one 5 s step")
        #expect(await nextEvent(&events, limit: 256, where: isField(.fieldPresent)) != nil)
        #expect(await nextEvent(&events, limit: 256, where: isField(.fieldAbsent)) != nil)
        #expect(terminal.result == .passed)
        #expect(terminal.exchanges.count == 6)
        try await session.endCardEmulation()
        #expect(reader.piccOperatingParameter == 0xFF, "restored with FF 00 51 FF 00")
        await session.invalidate()
        let kinds = reader.events.map(\.kind)
        #expect(kinds.contains(.targetActivated(mode: 0x08, initiatorCommand: hex("E0 80"))))
    }

    @Test("without a terminal the target is re-armed in bounded steps; endCardEmulation returns within one")
    func reArms() async throws {
        let field = SimulatedField(clock: SimulationClock(scale: 0.001))
        let reader = SimulatedACR122U(field: field, name: "ACS ACR122U PICC Interface 01 00 (session test)")
        let backend = await Self.backend(reader)
        let credential = Credential(id: "uri-tag", secureElement: try exampleElement())
        let session = try CredentialSession.startSession(CredentialSessionOptions(
            credentials: [credential], emulationBackend: backend, authorizer: PolicyAuthorizer.approveAll))
        try await session.enterWiredMode(using: credential)
        try await session.performCardEmulationTransactionWithCurrentCredential()
        // A terminal arriving later still finds an armed target.
        let terminal = ExternalTerminal(script: .iOSType4ReadExample)
        var events = session.eventStream.makeAsyncIterator()
        field.place(terminal)
        #expect(await nextEvent(&events, limit: 256, where: isField(.fieldAbsent)) != nil)
        #expect(terminal.result == .passed)
        try await session.endCardEmulation()
        #expect(await session.state == .management)
        #expect(reader.piccOperatingParameter == 0xFF)
        await session.invalidate()
    }

    @Test("a reader whose escape commands are refused cannot emulate: featureUnavailable says how to fix it (P09)")
    func escapeRefused() async throws {
        let reader = SimulatedACR122U(
            field: SimulatedField(clock: SimulationClock(scale: 0.001)), personality: .ccidEscapeDisabled,
            name: "ACS ACR122U PICC Interface 02 00 (session test)")
        let backend = await Self.backend(reader)
        guard case .unsupported(let reason, _) = backend.support else {
            Issue.record("escape commands are refused, yet the backend claims support")
            return
        }
        #expect(reason.contains("ifdDriverOptions"))
    }

    /// close() returns only after the channel's release ran on the executor, and runs it once:
    /// a release left to deinit could still be inside pcsc-lite when the binary called exit
    /// (docs/test-infrastructure.md, "pcsc-lite at exit").
    @Test("close() has run the channel's release, on the executor, when it returns; once")
    func closeAwaitsTheRelease() async throws {
        let reader = SimulatedACR122U(field: SimulatedField(clock: SimulationClock(scale: 0.001)), name: "ACS ACR122U PICC Interface 00 00 (close test)")
        let executor = BlockingExecutor(name: "close test")
        defer { executor.shutdown() }
        let releases = Mutex<[String]>([])
        let gate = DispatchSemaphore(value: 0)
        do {
            let backend = await PN532EmulationBackend.open(readerName: reader.name, executor: executor) {
                (try SimulatedReaderChannel(reader, protocol: .undefined), {
                    // Held until the test lets go: close() must wait for it, however long it takes.
                    gate.wait()
                    let name = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? ""
                    releases.withLock { $0.append(name.trimmingCharacters(in: .newlines)) }
                })
            }
            #expect(backend.support == .supported)
            let closing = Task { await backend.close() }
            #expect(releases.withLock { $0 }.isEmpty)
            gate.signal()
            await closing.value
            #expect(releases.withLock { $0 } == ["close test"])
            await backend.close()
        }
        // deinit after close() enqueues nothing: a job behind it finds no second release.
        gate.signal()
        _ = try await executor.run { 0 }
        #expect(releases.withLock { $0 } == ["close test"])
    }

    @Test("an ACR1252U is reader-only for ISO-DEP emulation, with a clear message")
    func acr1252() async {
        let backend = await PN532EmulationBackend.open(readerName: "ACS ACR1252 Dual Reader PICC 00 00", executor: BlockingExecutor(name: "t")) {
            throw PCSCError(code: 0x8010_000C)
        }
        guard case .unsupported(let reason, _) = backend.support else {
            Issue.record("an ACR1252U claims card emulation")
            return
        }
        #expect(reason.contains("memory images"))
    }
}

@Suite("Reader sessions (the host as terminal) against SimulatedACR122U")
struct ReaderSessionTests {
    static func card() -> ISO14443_4Card {
        ISO14443_4Card(uid: hex("04 11 22 33 44 55 66")) { command in
            command == hex("00 A4 04 00 07 D2 76 00 00 85 01 01 00") ? hex("90 00") : hex("6A 82")
        }
    }

    @Test("PN532 initiator: polling off, InListPassiveTarget, InDataExchange, InRelease, polling restored")
    func pn532Initiator() async throws {
        let field = SimulatedField(clock: SimulationClock(scale: 0.001))
        let card = Self.card()
        field.place(card)
        let reader = SimulatedACR122U(field: field, name: "ACS ACR122U PICC Interface 03 00 (session test)")
        let session = ReaderSession(readerName: reader.name, path: .pn532Initiator) { (try SimulatedReaderChannel(reader, protocol: .undefined), {}) }
        let exchanges = try await session.run(script: [hex("00 A4 04 00 07 D2 76 00 00 85 01 01 00"), hex("00 A4 04 00 05 F0 00 00 00 01 00")])
        #expect(exchanges.map(\.response.hexString) == ["90 00", "6A 82"])
        #expect(card.receivedAPDUs.count == 2)
        #expect(reader.piccOperatingParameter == 0xFF)
    }

    @Test("plain PC/SC: the card found by automatic polling, SCardTransmit")
    func plainPCSC() async throws {
        let field = SimulatedField(clock: SimulationClock(scale: 0.001))
        field.place(Self.card())
        let reader = SimulatedACR122U(field: field, name: "ACS ACR122U PICC Interface 04 00 (session test)")
        let session = ReaderSession(readerName: reader.name, path: .pcsc) { (try SimulatedReaderChannel(reader, protocol: .t1), {}) }
        let (status, exchanges) = try await session.run { transceiver in
            try await transceiver.transceive(hex("00 A4 04 00 07 D2 76 00 00 85 01 01 00"))
        }
        #expect(status == hex("90 00"))
        #expect(exchanges.count == 1)
    }

    @Test("no card in the field: instanceDoesNotExist from the bounded poll")
    func noCard() async throws {
        let reader = SimulatedACR122U(field: SimulatedField(clock: SimulationClock(scale: 0.001)), name: "ACS ACR122U PICC Interface 05 00 (session test)")
        let session = ReaderSession(readerName: reader.name, path: .pn532Initiator) { (try SimulatedReaderChannel(reader, protocol: .undefined), {}) }
        await #expect(throws: CredentialSessionError(.instanceDoesNotExist, "")) { _ = try await session.run(script: [hex("00 A4 04 00 00")]) }
        #expect(reader.piccOperatingParameter == 0xFF, "restored even when the poll finds nothing")
    }
}
