import PCSCCore
import Synchronization
import Testing

/// `CallGate`, which the binaries close before exit(3) so that no PC/SC call is inside libpcsclite
/// on another thread when its destructor frees the context list (docs/test-infrastructure.md,
/// "pcsc-lite at exit"). The call "inside pcsc-lite" is a thread held in the gate by a latch; the
/// order of its return and the close's is recorded, so nothing here waits for a time to pass.
@Suite struct CallGateTests {
    /// A one-shot latch a thread waits on until another opens it.
    final class Latch: @unchecked Sendable {
        private let condition = ConditionLock()
        private var isOpen = false
        func open() {
            condition.lock()
            isOpen = true
            condition.broadcast()
            condition.unlock()
        }
        /// Waits until ``open()``, at most 60 s (a bound that only keeps a broken gate from hanging
        /// the test run; it never passes when the gate works).
        @discardableResult
        func wait() -> Bool {
            let deadline = ContinuousClock.now + .seconds(60)
            condition.lock()
            defer { condition.unlock() }
            while !isOpen {
                let left = deadline - ContinuousClock.now
                if left <= .zero { return false }
                _ = condition.wait(timeout: left)
            }
            return true
        }
    }

    /// What happened, in order, on any thread.
    final class Log: Sendable {
        private let entries = Mutex<[String]>([])
        func append(_ entry: String) { entries.withLock { $0.append(entry) } }
        var all: [String] { entries.withLock { $0 } }
    }

    /// Starts a thread that makes one call through `gate` and stays inside it until `release`
    /// opens; returns once the call is counted in.
    static func callHeld(in gate: CallGate, until release: Latch, log: Log) -> Latch {
        let entered = Latch()
        let finished = Latch()
        startThread(name: "gate-test-call") {
            gate.call {
                entered.open()
                release.wait()
                log.append("call returned")
            }
            finished.open()
        }
        entered.wait()
        return finished
    }

    @Test func closingWithNoCallInProgressReturnsAtOnceAndKeepsNewCallsOut() {
        let gate = CallGate()
        #expect(gate.enter())
        gate.leave()
        #expect(gate.close(waitingAtMost: .zero))
        #expect(gate.isClosed)
        #expect(!gate.enter())
        #expect(gate.callsInProgress == 0)
    }

    /// Before, the binaries called exit(3) while such a call was in progress: its thread then met
    /// the freed context list.
    @Test func closeReturnsOnlyAfterTheCallInProgressReturned() {
        let gate = CallGate()
        let log = Log()
        let release = Latch()
        let finished = Self.callHeld(in: gate, until: release, log: log)
        #expect(gate.callsInProgress == 1)
        // The call is let go only once close is waiting for it.
        let drained = gate.close(waitingAtMost: .seconds(60), beforeWaiting: { release.open() })
        log.append("closed")
        #expect(drained)
        #expect(log.all == ["call returned", "closed"])
        #expect(gate.callsInProgress == 0)
        #expect(!gate.enter())
        release.open()
        finished.wait()
    }

    /// A call that does not return (pcscd stopped): close gives up after its bound and says so;
    /// the call still counts until it returns.
    @Test func closeGivesUpOnACallThatDoesNotReturnWithinTheBound() {
        let gate = CallGate()
        let log = Log()
        let release = Latch()
        let finished = Self.callHeld(in: gate, until: release, log: log)
        #expect(!gate.close(waitingAtMost: .zero))
        #expect(gate.callsInProgress == 1)
        #expect(log.all.isEmpty)
        release.open()
        finished.wait()
        #expect(gate.callsInProgress == 0)
        #expect(gate.close(waitingAtMost: .zero))
    }
}
