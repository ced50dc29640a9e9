import ISO7816
import Synchronization
import SecbridgeTesting
import Testing
@testable import SecureElementCredential

/// Bytes from "00 A4 04 00" (spaces optional).

/// A secure element that answers every command with 90 00 and counts what happens to it.
final class StubSecureElement: SecureElement {
    private let log = Mutex<[String]>([])
    let failOpen: CredentialSessionError?

    init(failOpen: CredentialSessionError? = nil) { self.failOpen = failOpen }

    var secureElementDescription: String { "stub" }
    var events: [String] { log.withLock { $0 } }

    func open() async throws(CredentialSessionError) {
        log.withLock { $0.append("open") }
        if let failOpen { throw failOpen }
    }

    func transceive(_ command: [UInt8]) async throws(CredentialSessionError) -> [UInt8] {
        log.withLock { $0.append("transceive \(command.hexString)") }
        return [0x90, 0x00]
    }

    func terminalActivated() async { log.withLock { $0.append("activated") } }
    func close() async { log.withLock { $0.append("close") } }
}

let credentialA = Credential(id: "A", secureElement: StubSecureElement())
let credentialB = Credential(id: "B", secureElement: StubSecureElement())

/// Reads events until `predicate` matches one (bounded by `limit` events); nil when the stream ends.
func nextEvent(
    _ iterator: inout AsyncStream<CredentialSessionEvent>.AsyncIterator, limit: Int = 64,
    where predicate: (CredentialSessionEvent) -> Bool
) async -> CredentialSessionEvent? {
    for _ in 0..<limit {
        guard let event = await boundedNext(&iterator) else { return nil }
        if predicate(event) { return event }
    }
    return nil
}

/// `iterator`'s next event, awaited at most `bound` of real time; nil when the stream ended.
///
/// Past the bound the test fails with an issue saying so, and the waiting task is cancelled (the
/// stream's `next()` then returns nil): an event that never comes, on a stream that never
/// finishes (a timer on a virtual clock nobody moves), ends the test instead of keeping it, and
/// the run, waiting for good.
func boundedNext(
    _ iterator: inout AsyncStream<CredentialSessionEvent>.AsyncIterator, within bound: Duration = .seconds(30)
) async -> CredentialSessionEvent? {
    guard let watchdog = withUnsafeCurrentTask(body: { $0.map(CancelWhenLate.init) }) else { return await iterator.next() }
    let timer = Task {
        try? await Task.sleep(for: bound)
        if !Task.isCancelled { watchdog.fire() }
    }
    let event = await iterator.next()
    timer.cancel()
    if watchdog.finish() {
        Issue.record("no session event within \(bound) of real time: the awaited event never came and the stream did not finish (the wait was cancelled)")
        return nil
    }
    return event
}

/// Cancels a waiting task once its bound passed, unless the wait ended first.
private final class CancelWhenLate: @unchecked Sendable {
    // `task` is used only while `finished` is false, under `state`'s lock: the task it names is
    // still inside the wait then, so the handle is valid.
    private let task: UnsafeCurrentTask
    private let state = Mutex<(finished: Bool, fired: Bool)>((false, false))

    init(_ task: UnsafeCurrentTask) { self.task = task }

    func fire() {
        state.withLock { s in
            guard !s.finished else { return }
            s.fired = true
            task.cancel()
        }
    }

    /// Ends the watch; true when the bound had passed (and the task was cancelled).
    func finish() -> Bool {
        state.withLock { s in
            s.finished = true
            return s.fired
        }
    }
}

/// Whether an event is a field state change to `state`.
func isField(_ state: CredentialSession.NFCFieldInformation) -> (CredentialSessionEvent) -> Bool {
    { event in
        if case .fieldStateChanged(let info) = event { return info == state }
        return false
    }
}
