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
        guard let event = await iterator.next() else { return nil }
        if predicate(event) { return event }
    }
    return nil
}

/// Whether an event is a field state change to `state`.
func isField(_ state: CredentialSession.NFCFieldInformation) -> (CredentialSessionEvent) -> Bool {
    { event in
        if case .fieldStateChanged(let info) = event { return info == state }
        return false
    }
}
