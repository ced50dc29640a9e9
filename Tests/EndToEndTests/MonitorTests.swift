import Foundation
import PCSC
import PCSCSandbox
import Synchronization
import Testing

/// A value behind a mutex, shareable by reference (a `Mutex` itself cannot be captured).
final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>
    init(_ value: Value) { mutex = Mutex(value) }
    func withLock<T>(_ body: (inout Value) -> T) -> T { mutex.withLock { body(&$0) } }
}

/// Waits for events from a monitor's stream, each wait bounded.
final class EventCollector: Sendable {
    private let events = Locked<[ReaderEvent]>([])
    private let task: Task<Void, Never>

    init(_ monitor: ReaderMonitor) {
        let events = self.events
        task = Task.detached {
            for await event in monitor.events { events.withLock { $0.append(event) } }
        }
    }

    deinit { task.cancel() }

    var all: [ReaderEvent] { events.withLock { $0 } }

    /// Waits until an event satisfies `predicate` (at most `timeout`), and returns it.
    func wait(for description: String, timeout: Duration = .seconds(15), _ predicate: @escaping @Sendable (ReaderEvent) -> Bool)
        async throws -> ReaderEvent
    {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let match = events.withLock({ $0.first(where: predicate) }) { return match }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw HarnessError(code: .timeout, reason: "no \(description) event within \(timeout); saw \(all)")
    }

    func clear() { events.withLock { $0.removeAll() } }
}

extension SharedReader {
    /// Monitoring of the shared pcscd: readers and vicc's card coming and going.
    @Suite struct MonitorTests {
        @Test func reportsPresentReadersAndCardThenRemovalAndInsertion() async throws {
            let environment = try await sharedEnvironment()
            let reader = environment.vpcdReaderName
            let monitor = ReaderMonitor()
            // Its thread ended before the test does: none left inside pcsc-lite when the test process
            // exits (docs/test-infrastructure.md, "pcsc-lite at exit"); the bound fails the test.
            defer { #expect(monitor.stop(waitingAtMost: .seconds(10)), "the monitor's thread was still in a PC/SC call 10 s after stop()") }
            let events = EventCollector(monitor)
            // Initial state: the reader is attached and vicc's card is in it.
            _ = try await events.wait(for: "reader-attached") { $0 == .readerAttached(reader: reader) }
            let inserted = try await events.wait(for: "card-inserted") { $0.kind == "card-inserted" && $0.reader == reader }
            #expect(inserted == .cardInserted(reader: reader, atr: viccATR))
            events.clear()
            try await blocking { try environment.card.stop() }
            _ = try await events.wait(for: "card-removed") { $0 == .cardRemoved(reader: reader) }
            _ = try await blocking { try environment.card.start() }
            let again = try await events.wait(for: "card-inserted again") { $0.kind == "card-inserted" }
            #expect(again == .cardInserted(reader: reader, atr: viccATR))
            // Exactly one removal and one insertion (docs/cases.md P11: the event counter is not a change by itself).
            #expect(events.all.filter { $0.reader == reader } == [.cardRemoved(reader: reader), .cardInserted(reader: reader, atr: viccATR)])
        }

        @Test func reportsACardPlacedOnTheSimulatedACR122U() async throws {
            // A known state whatever earlier tests did: no peers, fresh devices (PICC polling on),
            // and pcscd reporting both readers empty. Without that wait a card an earlier test left
            // could still be "present" on B when this card came (pcscd looks every ~400 ms), and B
            // then saw no insertion: seen after `unplugAndReplugUnderMonitorReadRunAndEmulate`.
            let environment = try await resetSimulatedReaders()
            let reader = environment.simulatedReaderA
            let other = environment.simulatedReaderB
            let monitor = ReaderMonitor()
            // Its thread ended before the test does: none left inside pcsc-lite when the test process
            // exits (docs/test-infrastructure.md, "pcsc-lite at exit"); the bound fails the test.
            defer { #expect(monitor.stop(waitingAtMost: .seconds(10)), "the monitor's thread was still in a PC/SC call 10 s after stop()") }
            let events = EventCollector(monitor)
            _ = try await events.wait(for: "reader-attached") { $0 == .readerAttached(reader: reader) }
            events.clear()
            try await blocking { _ = try SimulatedReaders.controlA.request("place-card", ["uid": "04A1B2C3", "id": "monitor-card"]) }
            defer { _ = try? SimulatedReaders.controlA.request("remove", ["peer": "monitor-card"]) }
            // Both readers share one field and poll automatically: each sees the card (docs/acr122-pn532.md §3 ATR).
            let inserted = try await events.wait(for: "card-inserted") { $0.kind == "card-inserted" && $0.reader == reader }
            #expect(inserted == .cardInserted(reader: reader, atr: [0x3B, 0x80, 0x80, 0x01, 0x01]))
            _ = try await events.wait(for: "card-inserted on B") { $0.kind == "card-inserted" && $0.reader == other }
            try await blocking { _ = try SimulatedReaders.controlA.request("remove", ["peer": "monitor-card"]) }
            _ = try await events.wait(for: "card-removed") { $0 == .cardRemoved(reader: reader) }
        }

        @Test func stopFinishesTheStream() async throws {
            _ = try await sharedEnvironment()
            let monitor = ReaderMonitor()
            let finished = Task { () -> Int in
                var count = 0
                for await _ in monitor.events { count += 1 }
                return count
            }
            try await Task.sleep(for: .milliseconds(100))
            monitor.stop()
            let count = try await value(of: finished, within: .seconds(10), "the monitor's event stream finishing after stop()")
            #expect(count >= 1)
        }
    }
}

/// `secbridge monitor` as a subprocess against a pcscd of its own, which the test stops, restarts
/// with other readers, and kills: reader arrival and removal, and recovery after pcscd restarts
/// (docs/cases.md P12), without disturbing the shared pcscd of this process.
@Suite(.serialized, .needsPrivatePCSCD) struct MonitorRecoveryTests {
    /// Real-time check: pcscd is started, restarted and killed for real, and the monitor's reconnect
    /// back-off runs on the wall clock (about 1 s alone; more while the rest of the suite runs).
    @Test func readersComeAndGoAndMonitoringSurvivesRestarts() async throws {
        try requireBuiltBinaries()  // a pcscd of its own: the shared one is not needed
        let first = ReaderConfEntry.vpcd(port: try FreePort.pick(), friendlyName: "Monitor First")
        let second = ReaderConfEntry.vpcd(port: try FreePort.pick(), friendlyName: "Monitor Second")
        let pcscd = try PrivatePCSCD(readers: [first])
        defer { pcscd.stop() }
        _ = try await blocking { try pcscd.start() }
        let monitor = try BinaryProcess(["monitor", "--json", "--timeout", "60"], environment: pcscd.environment)
        defer { monitor.stop() }

        var at = try await monitor.wait(for: #""event":"reader-attached","reader":"Monitor First 00 00""#)
        // A reader arrives: pcscd comes back with a second vpcd entry.
        _ = try await blocking { try pcscd.restart(readers: [first, second]) }
        at = try await monitor.wait(for: #""event":"service-lost""#, after: at)
        at = try await monitor.wait(for: #""event":"reader-attached","reader":"Monitor Second 00 00""#, after: at)
        // And leaves.
        _ = try await blocking { try pcscd.restart(readers: [first]) }
        at = try await monitor.wait(for: #""event":"reader-detached","reader":"Monitor Second 00 00""#, after: at)
        // A crash: pcscd killed, then started again at the same socket.
        let killed = await (try? blocking { pcscd.kill() }) ?? false
        #expect(killed)
        at = try await monitor.wait(for: #""event":"service-lost""#, after: at)
        _ = try await blocking { try pcscd.start() }
        at = try await monitor.wait(for: #""event":"service-restored""#, after: at)
        #expect(monitor.process.isRunning)
        // The first reader never left for good: no detach of it was reported.
        #expect(!monitor.output.contains { $0.contains(#""event":"reader-detached","reader":"Monitor First 00 00""#) })
        // Stopped off Swift's shared pool (the defers then find both stopped).
        _ = try await blocking { monitor.stop(); pcscd.stop() }
    }

    /// Real-time check: a pcscd stopped with SIGSTOP answers nothing, which to a waiting
    /// SCardGetStatusChange looks like a quiet pcscd; the liveness probe (every 0.5 s here) says so,
    /// and says when it answers again after SIGCONT. Before, monitor printed nothing at all.
    @Test func aFrozenPcscdIsReportedAndItsReturnToo() async throws {
        try requireBuiltBinaries()  // a pcscd of its own: it is stopped and continued
        let reader = ReaderConfEntry.vpcd(port: try FreePort.pick(), friendlyName: "Monitor Frozen")
        let pcscd = try PrivatePCSCD(readers: [reader])
        defer { pcscd.stop() }
        _ = try await blocking { try pcscd.start() }
        let monitor = try BinaryProcess(["monitor", "--json", "--liveness", "0.5", "--timeout", "60"], environment: pcscd.environment)
        defer { monitor.stop() }
        var at = try await monitor.wait(for: #""event":"reader-attached","reader":"Monitor Frozen 00 00""#)
        let pid = try #require(PrivatePCSCD.daemonPID(socketPath: pcscd.socketPath))
        #expect(kill(pid, SIGSTOP) == 0)
        var continued = false
        defer { if !continued { kill(pid, SIGCONT) } }
        at = try await monitor.wait(for: #""event":"service-unresponsive""#, after: at)
        #expect(monitor.output[at].contains("pcscd gave no answer within 0.500 s"), "\(monitor.output[at])")
        #expect(kill(pid, SIGCONT) == 0)
        continued = true
        at = try await monitor.wait(for: #""event":"service-answering""#, after: at)
        #expect(monitor.process.isRunning)
        // No reader left while pcscd was stopped.
        #expect(!monitor.output.contains { $0.contains(#""event":"reader-detached""#) })
        _ = try await blocking { monitor.stop(); pcscd.stop() }
    }

    @Test func noPcscdIsAClearErrorNotAHang() async throws {
        try requireBuiltBinaries()  // a socket where no pcscd runs: the shared one is not needed
        var environment = ProcessInfo.processInfo.environment
        environment["PCSCLITE_CSOCK_NAME"] = "/nonexistent/secbridge-test/pcscd.comm"
        let readers = try await runBinary(["readers"], environment: environment)
        #expect(readers.status == 1)
        #expect(readers.err.hasPrefix("secbridge: error: SCardEstablishContext failed: SCARD_E_NO_SERVICE (0x8010001D)"))
        #expect(readers.err.contains("PCSCLITE_CSOCK_NAME=/nonexistent/secbridge-test/pcscd.comm"))
        let send = try await runBinary(["send", "00 A4 00 0C 02 3F 00"], environment: environment)
        #expect(send.status == 1)
        #expect(send.err.contains("SCARD_E_NO_SERVICE"))
        // monitor keeps retrying with backoff and reports the lost service once; --timeout ends it.
        let monitor = try await runBinary(["monitor", "--json", "--timeout", "1"], environment: environment)
        #expect(monitor.status == 0)
        #expect(monitor.out.hasPrefix(#"{"event":"service-lost","reader":null,"error":"SCARD_E_NO_SERVICE""#))
    }
}

/// `secbridge simulate` as a user runs it: a private pcscd with the simulated pair, the export line,
/// control requests on standard input, and a clean stop on Ctrl-C.
@Suite(.serialized, .needsPrivatePCSCD) struct SimulateCommandTests {
    @Test func simulateServesReadersUntilInterrupted() async throws {
        try requireBuiltBinaries()  // `simulate` starts a pcscd of its own
        let simulate = try BinaryProcess(
            ["simulate", "--card", "04A1B2C3", "--applet", "t4t-ndef", "--time-scale", "0.01", "--timeout", "60"],
            environment: ProcessInfo.processInfo.environment, input: true)
        let process = simulate.process
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }  // SIGTERM may be blocked in it
        let export = try await simulate.line(containing: "export PCSCLITE_CSOCK_NAME=")
        let socket = String(export.dropFirst("export PCSCLITE_CSOCK_NAME=".count))
        _ = try await simulate.wait(for: "type control requests")
        var environment = ProcessInfo.processInfo.environment
        environment["PCSCLITE_CSOCK_NAME"] = socket
        // pcscd sees the placed card within its ~400 ms presence poll: ask until it does (bounded).
        var readers = try await runBinary(["readers", "--json"], environment: environment)
        for _ in 0..<20 where !readers.out.contains("\"present\"") {
            try await Task.sleep(for: .milliseconds(100))
            readers = try await runBinary(["readers", "--json"], environment: environment)
        }
        #expect(readers.status == 0)
        #expect(readers.out.contains("\"name\": \"ACS ACR122U PICC Interface 00 00\""))
        // docs/acr122-pn532.md §3: an ISO 14443-4 card without historical bytes.
        #expect(readers.out.contains("\"atr\": \"3B80800101\""))
        // The built-in Type 4 Tag applet answers the NDEF application SELECT.
        let send = try await runBinary(["send", "--reader", "0", "00A4040007D276000085010100"], environment: environment)
        #expect(send.status == 0, "\(send.err)")
        #expect(send.out.contains("< 90 00\n"))
        // A control request on standard input.
        try? simulate.input?.fileHandleForWriting.write(contentsOf: Data("a peers\n".utf8))
        _ = try await simulate.wait(for: "ok count=1")
        _ = try await blocking { simulate.stop() }
        #expect(process.terminationStatus == 0)
        #expect(simulate.output.last == "stopping the simulated readers")
        // The private pcscd is gone with it.
        let after = try await runBinary(["readers"], environment: environment)
        #expect(after.status == 1)
    }

    /// SIGKILL of `simulate` (a CI timeout, the OOM killer) takes its private pcscd with it: the
    /// daemon's lifeline (its standard input, a pipe only `simulate` held) ends, and its watcher
    /// stops it. Before, that pcscd ran on for good.
    @Test func simulateKilledTakesItsPcscdWithIt() async throws {
        try requireBuiltBinaries()  // `simulate` starts a pcscd of its own
        let simulate = try BinaryProcess(
            ["simulate", "--readers", "1", "--time-scale", "0.01", "--timeout", "60"], environment: ProcessInfo.processInfo.environment, input: true)
        let process = simulate.process
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }  // SIGTERM may be blocked in it
        let export = try await simulate.line(containing: "export PCSCLITE_CSOCK_NAME=")
        let socket = export.dropFirst("export PCSCLITE_CSOCK_NAME=".count)
        let pcscd = try #require(PrivatePCSCD.daemonPID(socketPath: String(socket)))
        #expect(kill(pcscd, 0) == 0, "pcscd \(pcscd) should run while simulate does")
        kill(process.processIdentifier, SIGKILL)
        try await simulate.exit(after: "SIGKILL")
        let exited = try await blocking { waitForExit(of: pcscd, upTo: .seconds(10)) }
        #expect(exited, "pcscd \(pcscd) still runs after simulate was killed")
        var environment = ProcessInfo.processInfo.environment
        environment["PCSCLITE_CSOCK_NAME"] = String(socket)
        let after = try await runBinary(["readers"], environment: environment)
        #expect(after.status == 1)
        #expect(after.err.contains("SCARD_E_NO_SERVICE"), "\(after.err)")
    }
}

/// Waits until the process `pid` (not necessarily a child) has exited, at most `bound`.
///
/// It is not this process's child, so there is nothing to wait(2) on, and pidfd_open(2) is
/// reachable only through the variadic syscall(2), which Swift cannot call: kill(pid, 0) every
/// 20 ms, bounded.
func waitForExit(of pid: Int32, upTo bound: Duration) -> Bool {
    let deadline = ContinuousClock.now + bound
    while ContinuousClock.now < deadline {
        if kill(pid, 0) != 0 && errno == ESRCH { return true }
        usleep(20_000)
    }
    return false
}
