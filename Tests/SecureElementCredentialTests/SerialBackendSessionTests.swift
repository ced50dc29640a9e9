import ACR122Simulator
import ISO7816
import PCSCCore
import PN53x
import SecbridgeTesting
import Synchronization
import Testing
@testable import SecureElementCredential

@Suite("A CredentialSession on a simulated serial PN532, on virtual time")
struct SerialBackendSessionTests {
    @Test("an Android phone placed at 2.5 s reads the URI tag: two TgInitAsTarget aborted by ACK at 1 s and 2 s, the third activated at 2.5 s")
    func androidReadsOverTheSerialLine() async throws {
        let board = SimulatedSerialPN532(name: "PN532 board (session test)")
        defer { board.close() }
        let time = board.time
        // This test's task is the activity's first flow: time moves only while it and every other
        // flow of the session wait on the clock (CredentialSessionOptions.activity).
        let activity = time.beginActivity()
        defer { activity.end() }
        let executor = BlockingExecutor(name: "serial session", activity: activity)
        defer { executor.shutdown() }

        let backend = await SerialPN532EmulationBackend.open(
            stream: board.line.host, clock: board.clock, readerName: "tty:in-memory", executor: executor)
        #expect(backend.support == .supported)
        #expect(backend.readerName == "tty:in-memory")
        let credential = Credential(id: "uri-tag", secureElement: try exampleElement())
        var options = CredentialSessionOptions(
            credentials: [credential], emulationBackend: backend, authorizer: PolicyAuthorizer.approveAll, clock: time)
        options.activity = activity
        let session = try CredentialSession.startSession(options)

        // Every event holds time until it is handled: the consumer releases each, except the first
        // field-absent one, whose hold it hands to this task (time stays where the phone left).
        let (seen, seenContinuation) = AsyncStream.makeStream(of: (event: CredentialSessionEvent, at: Duration).self)
        let consumer = Task {
            var handedOver = false
            for await event in session.eventStream {
                seenContinuation.yield((event, time.now))
                if !handedOver, isField(.fieldAbsent)(event) {
                    handedOver = true
                } else {
                    activity.release()
                }
            }
            seenContinuation.finish()
        }

        try await session.enterWiredMode(using: credential)
        try await session.performTransaction(using: credential)
        // No terminal yet: each TgInitAsTarget is aborted with ACK after the 1 s activation step.
        try await activity.sleep(until: .milliseconds(2500), handingOver: true)
        #expect(time.now == .milliseconds(2500))
        let phone = try #require(ExternalTerminal.named("android-t4t-read"))
        board.field.place(phone)
        activity.release()

        var observed: [(event: CredentialSessionEvent, at: Duration)] = []
        for await entry in seen {
            observed.append(entry)
            if isField(.fieldAbsent)(entry.event) { break }
        }
        // This task holds again (the field-absent event's hold): the runner waits in its grace.
        try await session.endCardEmulation()
        await session.invalidate()
        await consumer.value

        #expect(phone.result == .passed)
        let uri = [0xD1, 0x01, 0x0C, 0x55, 0x04] + Array("example.com".utf8)
        #expect(phone.report?.ndefMessage == uri, "D1 01 0C 55 04 example.com: the URI record https://example.com")
        let present = observed.first { isField(.fieldPresent)($0.event) }
        #expect(present?.at == .milliseconds(2500), "activated when the phone came, not at a step boundary")
        let exchanged = observed.compactMap { entry -> [UInt8]? in
            if case .apduExchanged(let command, _) = entry.event { return command }
            return nil
        }
        #expect(exchanged == phone.exchanges.map(\.command))
        #expect(exchanged.first == hex("00 A4 04 00 07 D2 76 00 00 85 01 01 00"), "NDEF Tag Application select (v2 AID)")
        #expect(observed.allSatisfy { $0.at == .milliseconds(2500) }, "the read takes no virtual time: the phone answers at once")

        // On the line: wake-up, RF off, SetParameters 30, three TgInitAsTarget (two aborted),
        // a TgGetData/TgSetData pair per C-APDU, the TgGetData that met the release (status 29), InRelease.
        let commands = board.device.receivedCommands
        let codes = commands.map { $0.count > 1 ? $0[1] : 0 }
        #expect(commands.prefix(3) == [hex("D4 14 01 00 00"), hex("D4 32 01 00"), hex("D4 12 30")])
        #expect(codes.filter { $0 == 0x8C } == [0x8C, 0x8C, 0x8C])
        #expect(board.device.abortedCommands == 2)
        #expect(codes.filter { $0 == 0x8E }.count == exchanged.count, "one TgSetData per R-APDU")
        #expect(codes.filter { $0 == 0x86 }.count == exchanged.count + 1, "one TgGetData per C-APDU, and the one the release answered")
        #expect(commands.last == hex("D4 52 00"), "InRelease 00 (UM0701-02 §7.3.11) makes the chip leave the target role")
        #expect(time.stallCount == 0, "every wait was on the clock")
    }
}
