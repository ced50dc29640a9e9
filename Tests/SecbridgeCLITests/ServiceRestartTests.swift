import Foundation
import PCSCCore
import SecbridgeCLI
import SecbridgeTesting
import Synchronization
import Testing

/// A client over a desk's that plays pcscd restarts as pcsc-lite's client shows them: after
/// ``restart()`` every context and connection made before fails with SCARD_E_NO_SERVICE, as one
/// whose socket goes to the pcscd that went away (docs/cases.md P12), before reaching the readers;
/// contexts made after it work. While ``isDown`` establishing fails with SCARD_E_NO_SERVICE too.
final class RestartingClient: PCSCClient, Sendable {
    private let inner: any PCSCClient
    private let state = Mutex<(epoch: Int, down: Bool, established: Int)>((0, false, 0))

    init(_ inner: any PCSCClient) { self.inner = inner }

    /// pcscd stops (and, with `down` false, is back at once).
    func restart(down: Bool = false) { state.withLock { $0.epoch += 1; $0.down = down } }
    func comeBack() { state.withLock { $0.down = false } }
    /// How many contexts were established.
    var established: Int { state.withLock { $0.established } }

    func check(_ epoch: Int) throws(PCSCError) {
        guard state.withLock({ $0.epoch == epoch }) else { throw .noService }
    }

    func establishContext() throws(PCSCError) -> any PCSCClientContext {
        let epoch = try state.withLock { state throws(PCSCError) -> Int in
            if state.down { throw .noService }
            state.established += 1
            return state.epoch
        }
        return Context(try inner.establishContext(), client: self, epoch: epoch)
    }

    final class Context: PCSCClientContext, Sendable {
        let inner: any PCSCClientContext
        let client: RestartingClient
        let epoch: Int
        init(_ inner: any PCSCClientContext, client: RestartingClient, epoch: Int) { (self.inner, self.client, self.epoch) = (inner, client, epoch) }

        func listReaders() throws(PCSCError) -> [String] {
            try client.check(epoch)
            return try inner.listReaders()
        }
        func getStatusChange(_ states: inout [ReaderState], timeout: Duration?) throws(PCSCError) -> Bool {
            try client.check(epoch)
            return try inner.getStatusChange(&states, timeout: timeout)
        }
        func connect(to reader: String, share: ShareMode, protocols: ProtocolSet) throws(PCSCError) -> Connection {
            try client.check(epoch)
            let handle: any PCSCConnection = try inner.connect(to: reader, share: share, protocols: protocols)
            return Connection(handle, client: client, epoch: epoch)
        }
        func cancel() throws(PCSCError) { try inner.cancel() }
        func release() throws(PCSCError) { try inner.release() }
    }

    final class Connection: PCSCConnection, Sendable {
        let inner: any PCSCConnection
        let client: RestartingClient
        let epoch: Int
        init(_ inner: any PCSCConnection, client: RestartingClient, epoch: Int) { (self.inner, self.client, self.epoch) = (inner, client, epoch) }

        var readerName: String { inner.readerName }
        var activeProtocol: ProtocolSet { inner.activeProtocol }
        var transmissionProtocol: TransmissionProtocol { inner.transmissionProtocol }
        func transmit(_ command: [UInt8]) throws -> [UInt8] {
            try client.check(epoch)
            return try inner.transmit(command)
        }
        func control(code: UInt32, _ command: [UInt8]) throws -> [UInt8] {
            try client.check(epoch)
            return try inner.control(code: code, command)
        }
        func status() throws(PCSCError) -> CardStatus {
            try client.check(epoch)
            return try inner.status()
        }
        func attribute(_ attribute: PCSCAttribute) throws(PCSCError) -> [UInt8] {
            try client.check(epoch)
            return try inner.attribute(attribute)
        }
        func reconnect(share: ShareMode, protocols: ProtocolSet, initialization: Disposition) throws(PCSCError) {
            try client.check(epoch)
            try inner.reconnect(share: share, protocols: protocols, initialization: initialization)
        }
        func disconnect(_ disposition: Disposition) throws(PCSCError) {
            // The real one frees its handle even when pcscd is gone; here the desk's handle is freed.
            try? inner.disconnect(disposition)
            try client.check(epoch)
        }
        func beginTransaction() throws(PCSCError) {
            try client.check(epoch)
            try inner.beginTransaction()
        }
        func endTransaction(_ disposition: Disposition) throws(PCSCError) {
            try client.check(epoch)
            try inner.endTransaction(disposition)
        }
        func features() throws -> [PCSCFeature] {
            try client.check(epoch)
            return try inner.features()
        }
    }
}

/// Issue 33 item 1: a long-running command's context (``ReestablishingContext``) outlives a pcscd
/// restart; the interactive shell answers the first line after it.
@Suite struct ServiceRestartTests {
    static let select: [UInt8] = [0x00, 0xA4, 0x04, 0x00, 0x01, 0xAA]

    /// The interpreter of an interactive shell on the card (as `runShell` makes it).
    static func shell(on client: RestartingClient, console: CapturingConsole) throws -> ScriptInterpreter {
        let invocation = Invocation(
            arguments: try parseArguments([], options: SecbridgeCLI.shellCommand.options), console: console, path: ["shell"],
            client: client)
        var options = ScriptInterpreter.Options()
        options.holdsTransaction = false
        options.command = "shell"
        return try ScriptInterpreter(
            invocation: invocation, context: try openReestablishingContext(invocation), fileName: "shell", options: options,
            reader: nil, needsCard: false, wait: nil)
    }

    /// Runs `body` on a thread of its own (PC/SC calls block) with a desk whose reader holds an
    /// echo card, the restarting client over it and a console; returns the card's log after.
    static func onEchoCard(
        _ body: @escaping @Sendable (SimulatedDesk, RestartingClient, CapturingConsole) throws -> Void
    ) async throws -> String? {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        try desk.control(.placeCard(uid: [0x04, 0xA1, 0xB2, 0xC3], applet: .echo, id: "card"))
        let client = RestartingClient(desk.client)
        let executor = BlockingExecutor(name: "restart-test")
        defer { executor.shutdown() }
        try await executor.run { try body(desk, client, CapturingConsole()) }
        return try desk.control(.cardLog(peer: "card"))["all"]
    }

    /// pcscd restarted between two lines with the card in place: the next line is answered, once
    /// (the card sees each SELECT once), with one line saying pcscd came back; a second restart
    /// likewise.
    @Test func theFirstLineAfterARestartIsAnswered() async throws {
        let log = try await Self.onEchoCard { desk, client, console in
            let interpreter = try Self.shell(on: client, console: console)
            defer { interpreter.close() }
            #expect(try interpreter.execute(.apdu(Self.select, line: 1)))
            client.restart()
            #expect(try interpreter.execute(.apdu(Self.select, line: 2)))
            #expect(console.standardError == pcscdCameBackLine)
            #expect(interpreter.readerDescription == "reader: \(desk.names[0]), card ATR 3B 80 80 01 01")
            client.restart()
            #expect(try interpreter.execute(.apdu(Self.select, line: 3)))
            #expect(console.standardError == pcscdCameBackLine + pcscdCameBackLine)
            #expect(client.established == 3)
            #expect(console.standardOutput.components(separatedBy: "< 00 A4 04 00 01 AA 90 00\n").count == 4, "\(console.standardOutput)")
        }
        #expect(log == "00 A4 04 00 01 AA; 00 A4 04 00 01 AA; 00 A4 04 00 01 AA")
    }

    /// pcscd gone and not back yet: the line fails naming SCARD_E_NO_SERVICE, without the
    /// came-back line; once it is back the next line is answered and the line comes once.
    @Test func aLineWhilePcscdIsGoneFailsAndTheNextAfterItsReturnIsAnswered() async throws {
        let log = try await Self.onEchoCard { desk, client, console in
            let interpreter = try Self.shell(on: client, console: console)
            defer { interpreter.close() }
            client.restart(down: true)
            for line in 1...2 {
                do throws(CLIError) {
                    _ = try interpreter.execute(.apdu(Self.select, line: line))
                    Issue.record("line \(line) was answered with pcscd gone")
                } catch {
                    #expect(error.message.hasPrefix("shell:\(line): "), "\(error.message)")
                    #expect(error.message.contains("SCARD_E_NO_SERVICE (0x8010001D)"), "\(error.message)")
                }
            }
            #expect(console.standardError == "")
            client.comeBack()
            #expect(try interpreter.execute(.apdu(Self.select, line: 3)))
            #expect(console.standardError == pcscdCameBackLine)
        }
        #expect(log == "00 A4 04 00 01 AA")
    }

    /// The same interpreter on a plain context (`run`, a shell reading a script) keeps today's
    /// rule: the line fails and nothing is established again.
    @Test func aPlainContextIsNotEstablishedAgain() async throws {
        let log = try await Self.onEchoCard { desk, client, console in
            let invocation = Invocation(
                arguments: try parseArguments([], options: SecbridgeCLI.runCommand.options), console: console, path: ["run"],
                client: client)
            var options = ScriptInterpreter.Options()
            options.holdsTransaction = false
            let interpreter = try ScriptInterpreter(
                invocation: invocation, context: try client.establishContext(), fileName: "s", options: options,
                reader: nil, needsCard: true, wait: nil)
            defer { interpreter.close() }
            client.restart()
            #expect(throws: CLIError.self) { try interpreter.execute(.apdu(Self.select, line: 1)) }
            #expect(client.established == 1)
        }
        #expect(log == "")
    }

    /// The type's own rule: a service-lost error drops the context it came from once; the next
    /// call establishes a new one and says so once; a connection from before the restart, failing
    /// after it, leaves the new context alone; other errors drop nothing.
    @Test func aLossDropsOnlyTheContextItCameFrom() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        let client = RestartingClient(desk.client)
        let restored = Mutex(0)
        let executor = BlockingExecutor(name: "restart-test")
        defer { executor.shutdown() }
        try await executor.run {
            let context = try ReestablishingContext(
                establish: { () throws(PCSCError) in try client.establishContext() }, restored: { restored.withLock { $0 += 1 } })
            let old = try context.connect(to: desk.names[0], share: .direct, protocols: .undefined)
            #expect(throws: PCSCError.unknownReader) { _ = try context.connect(to: "no such reader", share: .direct, protocols: .undefined) }
            #expect(context.losses == 0)
            client.restart()
            #expect(throws: PCSCError.noService) { _ = try context.listReaders() }
            #expect(context.losses == 1)
            #expect(try context.listReaders() == desk.names)
            #expect(restored.withLock { $0 } == 1)
            #expect(throws: PCSCError.noService) { try old.disconnect(.leave) }
            #expect(context.losses == 1)
            #expect(try context.listReaders() == desk.names)
            #expect(client.established == 2)
            #expect(restored.withLock { $0 } == 1)
            try context.release()
        }
    }
}

/// A client over a desk's whose pcscd lists no reader: SCardListReaders answers none, and a wait
/// (only the PnP entry is then watched) goes to the desk, bounded and cancellable as there.
final class NoReaderClient: PCSCClient, Sendable {
    let inner: any PCSCClient
    init(_ inner: any PCSCClient) { self.inner = inner }
    func establishContext() throws(PCSCError) -> any PCSCClientContext { Context(try inner.establishContext()) }

    final class Context: PCSCClientContext, Sendable {
        let inner: any PCSCClientContext
        init(_ inner: any PCSCClientContext) { self.inner = inner }
        func listReaders() throws(PCSCError) -> [String] { [] }
        func getStatusChange(_ states: inout [ReaderState], timeout: Duration?) throws(PCSCError) -> Bool {
            try inner.getStatusChange(&states, timeout: timeout)
        }
        func connect(to reader: String, share: ShareMode, protocols: ProtocolSet) throws(PCSCError) -> RestartingClient.Connection {
            throw .unknownReader
        }
        func cancel() throws(PCSCError) { try inner.cancel() }
        func release() throws(PCSCError) { try inner.release() }
    }
}

/// Issue 33 item 5: `monitor` with no reader at all says that it waits for the first one.
@Suite struct MonitorNoReaderTests {
    @Test func monitorWithNoReaderSaysItWaitsForTheFirst() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        let client = NoReaderClient(desk.client)
        let executor = BlockingExecutor(name: "cli-test")
        defer { executor.shutdown() }
        let (status, out, err) = try await executor.run {
            let console = CapturingConsole()
            let status = SecbridgeCLI.main(arguments: ["monitor", "--timeout", "0.1"], console: console, client: client)
            return (status, console.standardOutput, console.standardError)
        }
        #expect(status == 0)
        #expect(out == "")
        #expect(err == SecbridgeCLI.noReaderYetLine)
    }

    /// With a reader there is no such note: the reader's event says it.
    @Test func monitorWithAReaderSaysNothingOfWaiting() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        let client = desk.client
        let executor = BlockingExecutor(name: "cli-test")
        defer { executor.shutdown() }
        let (out, err) = try await executor.run {
            let console = CapturingConsole()
            _ = SecbridgeCLI.main(arguments: ["monitor", "--count", "1"], console: console, client: client)
            return (console.standardOutput, console.standardError)
        }
        #expect(out == "reader-attached \"\(desk.names[0])\"\n")
        #expect(err == "")
    }
}
