import ISO7816
import Synchronization
import SecbridgeTesting
import Testing
@testable import SecureElementCredential

/// A backend whose TgInitAsTarget cannot be cut short, as on the ACR122U: the wait parks until
/// `interrupt()` (called when the session stops the runner), and then it returns the activation
/// that arrived meanwhile (mode 08, RATS E0 80), as a terminal that came in the last moment does.
private final class LateActivation: CardEmulationBackend {
    let readerName = "late activation"
    let support = EmulationSupport.supported
    let maximumCommandLength = 252
    let maximumResponseLength = 252
    private let state = Mutex<(waiter: CheckedContinuation<Void, Never>?, interrupted: Bool, arms: Int)>((nil, false, 0))

    /// One element each time a wait parks; finishes at `giveUp()`.
    let parked: AsyncStream<Void>
    private let parkedContinuation: AsyncStream<Void>.Continuation

    init() { (parked, parkedContinuation) = AsyncStream.makeStream(of: Void.self) }

    var arms: Int { state.withLock { $0.arms } }

    /// Ends a wait for `parked` that would otherwise last for good.
    func giveUp() { parkedContinuation.finish() }

    func prepare() async throws {}
    func restore() async throws {}

    func interrupt() {
        let waiter = state.withLock { s in
            s.interrupted = true
            defer { s.waiter = nil }
            return s.waiter
        }
        waiter?.resume()
    }

    func waitForActivation(_ parameters: TargetParameters) async throws -> ActivationOutcome {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { s in
                s.arms += 1
                if s.interrupted { return true }
                s.waiter = continuation
                return false
            }
            if now { continuation.resume() } else { parkedContinuation.yield() }
        }
        return .activated(mode: 0x08, initiatorCommand: [0xE0, 0x80])
    }

    func receiveCommand() async throws -> TargetReceiveOutcome { .released(.pn532(status: 0x29, meaning: "released")) }
    func sendResponse(_ response: [UInt8]) async throws -> TargetSendOutcome { .delivered }
}

@Suite("What a runner observes while it stops is published")
struct StoppingRunnerReportTests {
    /// The defect behind a failed CI run (LibnfcSessionTests): the session moved to management
    /// before the runner stopped, and dropped the activation the TgInitAsTarget in flight returned.
    @Test("an activation returned after endCardEmulation began, and the runner's closing field absent, reach the event stream")
    func activationDuringEnd() async throws {
        let clock = VirtualSessionClock()
        let backend = LateActivation()
        let credential = Credential(id: "uri-tag", secureElement: try exampleElement())
        let session = try CredentialSession.startSession(CredentialSessionOptions(
            credentials: [credential], emulationBackend: backend, authorizer: PolicyAuthorizer.approveAll, clock: clock))
        var events = session.eventStream.makeAsyncIterator()
        try await session.enterWiredMode(using: credential)
        try await session.performTransaction(using: credential)
        // The runner's TgInitAsTarget is in flight before the end begins (30 s of real time at most).
        let watchdog = Task {
            try? await Task.sleep(for: .seconds(30))
            backend.giveUp()
        }
        var parked = backend.parked.makeAsyncIterator()
        let armed = await parked.next() != nil
        watchdog.cancel()
        try #require(armed, "the runner never armed the target within 30 s")
        try await session.endCardEmulation()
        #expect(await session.state == .management)
        // The stream finishes after sessionInvalidated: a dropped event fails at once, not after a bound.
        await session.invalidate()
        var observations: [String] = []
        while let event = await nextEvent(&events, where: { if case .fieldObserved = $0 { true } else { false } }),
              case .fieldObserved(let info) = event {
            observations.append("\(info)")
        }
        #expect(observations == ["fieldPresent: TgInitAsTarget returned mode 08, initiator command E0 80", "fieldAbsent: card emulation ended"])
        #expect(backend.arms == 1)
    }
}
