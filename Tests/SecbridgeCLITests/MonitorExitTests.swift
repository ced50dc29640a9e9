import PCSCCore
import SecbridgeTesting
import Synchronization
import Testing

@testable import SecbridgeCLI

/// `monitor` has released its context when it returns. In the binary, main calls exit(3) right
/// after, whose run of libpcsclite's destructor frees the context list: before, the monitor's
/// thread could still be inside SCardReleaseContext then, and `monitor` died of SIGSEGV after
/// printing everything (docs/test-infrastructure.md, "pcsc-lite at exit").
@Suite struct MonitorExitTests {
    /// The in-process client, whose context's release takes a while on the monitor's thread, as a
    /// release that pcscd answers late; it records when releases and the command returned.
    final class SlowReleaseClient: PCSCClient, @unchecked Sendable {
        let inner: any PCSCClient
        let log = Mutex<[String]>([])
        /// Opened when the command returned: a release still waiting ends then.
        private let returned = ConditionLock()
        private var hasReturned = false
        /// How long a release waits for the command to return before it goes on.
        let releaseTakes: Duration

        init(_ inner: any PCSCClient, releaseTakes: Duration) {
            self.inner = inner
            self.releaseTakes = releaseTakes
        }

        func establishContext() throws(PCSCError) -> any PCSCClientContext {
            try wrap(inner.establishContext())
        }

        private func wrap<Context: PCSCClientContext>(_ context: Context) -> any PCSCClientContext {
            SlowReleaseContext(context, client: self)
        }

        func commandReturned() {
            log.withLock { $0.append("command returned") }
            returned.lock()
            hasReturned = true
            returned.broadcast()
            returned.unlock()
        }

        /// Sleeps until the command returned or `releaseTakes` passed, whichever comes first.
        func releaseDelay() {
            let deadline = ContinuousClock.now + releaseTakes
            returned.lock()
            defer { returned.unlock() }
            while !hasReturned {
                let left = deadline - ContinuousClock.now
                if left <= .zero { return }
                _ = returned.wait(timeout: left)
            }
        }
    }

    final class SlowReleaseContext<Inner: PCSCClientContext>: PCSCClientContext, @unchecked Sendable {
        typealias Connection = Inner.Connection
        let inner: Inner
        let client: SlowReleaseClient
        init(_ inner: Inner, client: SlowReleaseClient) { (self.inner, self.client) = (inner, client) }
        func listReaders() throws(PCSCError) -> [String] { try inner.listReaders() }
        func getStatusChange(_ states: inout [ReaderState], timeout: Duration?) throws(PCSCError) -> Bool {
            try inner.getStatusChange(&states, timeout: timeout)
        }
        func connect(to reader: String, share: ShareMode, protocols: ProtocolSet) throws(PCSCError) -> Connection {
            try inner.connect(to: reader, share: share, protocols: protocols)
        }
        func cancel() throws(PCSCError) { try inner.cancel() }
        func release() throws(PCSCError) {
            client.releaseDelay()
            try inner.release()
            client.log.withLock { $0.append("context released") }
        }
    }

    /// A release of 300 ms on the monitor's thread (the monitor waits up to 1 s for it), after the
    /// N events of --count and after the --timeout: before, `monitor` returned right after asking
    /// its thread to stop, and the release ended after the command had returned.
    @Test(arguments: [["--count", "1"], ["--timeout", "0.1"]])
    func monitorReturnsAfterItsThreadReleasedItsContext(_ options: [String]) async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        let client = SlowReleaseClient(desk.client, releaseTakes: .milliseconds(300))
        let executor = BlockingExecutor(name: "cli-test")
        defer { executor.shutdown() }
        let (status, out) = try await executor.run {
            let console = CapturingConsole()
            let status = SecbridgeCLI.main(arguments: ["monitor"] + options, console: console, client: client)
            client.commandReturned()
            return (status, console.standardOutput)
        }
        #expect(status == 0)
        #expect(out.contains("ACS ACR122U PICC Interface 00 00"), "\(out)")
        // The first release is the start's look for a reader (`hasNoReader`), the second the thread's.
        #expect(client.log.withLock { $0 } == ["context released", "context released", "command returned"])
    }
}
