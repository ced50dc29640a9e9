import ISO7816
import Synchronization
import SecbridgeTesting
import Testing
@testable import SecureElementCredential

/// A session on a virtual clock with the in-memory backend and the worked example's URI tag.
struct Harness {
    let clock = VirtualSessionClock()
    let backend: InMemoryEmulationBackend
    let credential: Credential
    let session: CredentialSession

    init(
        reader: String = #function, authorizer: any TransactionAuthorizer = PolicyAuthorizer.approveAll,
        timings: SessionTimings = .standard, support: EmulationSupport = .supported
    ) throws {
        backend = InMemoryEmulationBackend(readerName: "in-memory \(reader)", clock: clock, support: support)
        credential = Credential(id: "uri-tag", secureElement: try exampleElement())
        session = try CredentialSession.startSession(CredentialSessionOptions(
            credentials: [credential], emulationBackend: backend, authorizer: authorizer, clock: clock, timings: timings))
    }

    /// Waits until at least `count` tasks sleep on the clock (the clock resumes it when the last
    /// one registers; 10 s of real time at most).
    /// - Throws: when they did not: moving the clock then would wake nobody, and a timer that
    ///   registered later would wait for good (and the test with it) for a move that never comes.
    func waitForSleepers(_ count: Int) async throws {
        guard await clock.untilSleepers(count, within: .seconds(10)) else {
            struct SleepersMissing: Error, CustomStringConvertible { var description: String }
            throw SleepersMissing(description: "\(count) tasks were awaited asleep on the virtual clock within 10 s; \(clock.sleeperCount) were")
        }
    }
}

/// An authorizer that never answers.
struct SilentAuthorizer: TransactionAuthorizer {
    func authorize(_ request: AuthorizationRequest) async -> AuthorizationDecision {
        await withCheckedContinuation { (_: CheckedContinuation<Void, Never>) in }
        return .approved
    }
}

@Suite("CredentialSession with the in-memory backend on a virtual clock")
struct SessionTests {
    @Test("the client sequence: wired → assertion → relinquish → performTransaction → the Android URI read → endCardEmulation")
    func clientSequence() async throws {
        let h = try Harness()
        var events = h.session.eventStream.makeAsyncIterator()
        #expect(await h.session.state == .management)
        #expect(try await h.session.listCredentials() == [h.credential])
        try await h.session.enterWiredMode(using: h.credential)
        #expect(try await h.session.transceive(hex("00 A4 04 00 07 D2 76 00 00 85 01 01 00")) == hex("90 00"))
        let assertion = try await h.session.acquirePresentmentAssertion()
        #expect(assertion.state == .active)
        try await assertion.relinquish()
        #expect(assertion.state == .invalid)
        try await h.session.performTransaction(using: h.credential)
        #expect(await h.session.state == .cardEmulation(credential: h.credential))
        #expect(await h.session.billingLog.map(\.credentialID) == ["uri-tag"])

        let terminal = InMemoryTerminal(commands: type4FullURIRead.map(\.command))
        h.backend.present(terminal)
        #expect(await nextEvent(&events, where: isField(.fieldPresent)) != nil)
        #expect(await nextEvent(&events, where: isField(.fieldAbsent)) != nil)
        #expect(terminal.responses == type4FullURIRead.map(\.response))

        try await h.session.endCardEmulation()
        #expect(await h.session.state == .management)
        #expect(h.backend.calls.first == "prepare")
        #expect(h.backend.calls.last == "restore")
        #expect(!h.backend.isPrepared)
        // A second app assertion within 80 s is allowed.
        let again = try await h.session.acquirePresentmentAssertion()
        try await again.relinquish()
        await h.session.invalidate()
    }

    /// A session in card emulation whose one terminal sent a SELECT and released the target;
    /// returns once the runner pauses for its grace.
    static func releasedAfterOneCommand() async throws -> Harness {
        let h = try Harness(reader: "\(#function) \(UInt64.random(in: 0...UInt64.max))")
        var events = h.session.eventStream.makeAsyncIterator()
        try await h.session.enterWiredMode(using: h.credential)
        try await h.session.performTransaction(using: h.credential)
        h.backend.present(InMemoryTerminal(commands: [hex("00 A4 04 00 07 D2 76 00 00 85 01 01 00")]))
        #expect(await nextEvent(&events, where: isField(.fieldAbsent)) != nil)
        // The runner's grace is the earliest sleeper: 250 ms on a clock still at zero.
        #expect(await h.clock.untilSleeper(until: .milliseconds(250), within: .seconds(10)))
        #expect(h.clock.nextDeadline == .milliseconds(250))
        return h
    }

    @Test("after a release the target is armed again only after the grace: an endCardEmulation within it restores at once")
    func rearmGrace() async throws {
        let h = try await Self.releasedAfterOneCommand()
        // The runner pauses on the virtual clock; nothing arms while the clock stands still.
        #expect(h.backend.calls.suffix(2) == ["set", "get"], "\(h.backend.calls)")
        try await h.session.endCardEmulation()
        #expect(h.backend.calls.suffix(3) == ["set", "get", "restore"], "\(h.backend.calls)")
        await h.session.invalidate()
    }

    @Test("after a release the grace passes (250 ms) and the target is armed for the next terminal")
    func rearmAfterGrace() async throws {
        let h = try await Self.releasedAfterOneCommand()
        h.clock.advance(by: .milliseconds(250))
        for _ in 0..<100_000 where h.backend.calls.last != "arm" { await Task.yield() }
        #expect(h.backend.calls.suffix(3) == ["set", "get", "arm"], "\(h.backend.calls)")
        await h.session.invalidate()
    }

    @Test("every APDU is reported, and fieldStateChanged comes only from device observations")
    func fieldEvents() async throws {
        let h = try Harness()
        var events = h.session.eventStream.makeAsyncIterator()
        try await h.session.enterWiredMode(using: h.credential)
        try await h.session.performTransaction(using: h.credential)
        h.backend.present(InMemoryTerminal(commands: [hex("00 A4 04 00 07 D2 76 00 00 85 01 01 00")], departure: .silence))
        var seen: [String] = []
        for _ in 0..<8 {
            guard let event = await boundedNext(&events) else { break }
            switch event {
            case .fieldStateChanged(let info): seen.append(info.rawValue)
            case .fieldObserved(let info): seen.append("observed \(info.state)")
            case .apduExchanged(let command, let response): seen.append("\(command.hexString) → \(response.hexString)")
            default: seen.append("\(event)")
            }
            if seen.last == "fieldAbsent" { break }
        }
        #expect(seen == [
            "fieldPresent", "observed fieldPresent", "00 A4 04 00 07 D2 76 00 00 85 01 01 00 → 90 00", "fieldAbsent",
        ])
        await h.session.invalidate()
    }

    @Test("declining gives userCanceledAuthorization and leaves the session wired")
    func declined() async throws {
        let h = try Harness(authorizer: PolicyAuthorizer.declineAll)
        try await h.session.enterWiredMode(using: h.credential)
        await #expect(throws: CredentialSessionError(.userCanceledAuthorization, "")) {
            try await h.session.performTransaction(using: h.credential)
        }
        #expect(await h.session.state == .wired(credential: h.credential))
        #expect(await h.session.billingLog.isEmpty)
        #expect(h.backend.calls.isEmpty, "the reader is not touched before authorization")
        await h.session.invalidate()
    }

    @Test("an authorizer that never answers: userAuthorizationTimedOut after the authorization timeout")
    func authorizationTimeout() async throws {
        var timings = SessionTimings()
        timings.authorizationTimeout = .seconds(30)
        timings.wiredIdleTimeout = .seconds(600)
        let h = try Harness(authorizer: SilentAuthorizer(), timings: timings)
        try await h.session.enterWiredMode(using: h.credential)
        let session = h.session
        let credential = h.credential
        let attempt = Task { () async -> CredentialSessionError? in
            do throws(CredentialSessionError) { try await session.performTransaction(using: credential) } catch { return error }
            return nil
        }
        try await h.waitForSleepers(2)  // the wired idle timer and the authorization timeout
        h.clock.advance(by: .seconds(30))
        #expect(await attempt.value?.code == .userAuthorizationTimedOut)
        #expect(await h.session.state == .wired(credential: h.credential))
        await h.session.invalidate()
    }

    @Test("card emulation expires after 60 s with cardEmulationTimeout and returns to management")
    func emulationTimeout() async throws {
        let h = try Harness()
        var events = h.session.eventStream.makeAsyncIterator()
        try await h.session.enterWiredMode(using: h.credential)
        try await h.session.performTransaction(using: h.credential)
        try await h.waitForSleepers(2)  // the emulation deadline and the runner's first 5 s step
        h.clock.advance(by: .seconds(59))
        h.clock.advance(by: .seconds(1))
        let timeout = await nextEvent(&events) { $0 == .cardEmulationTimeout }
        #expect(timeout == .cardEmulationTimeout)
        #expect(await h.session.state == .management)
        await h.session.invalidate()
        #expect(h.backend.calls.last == "restore")
    }

    @Test("endCardEmulation returns while the device waits for a terminal (in-memory waits can be interrupted)")
    func endDuringWait() async throws {
        let h = try Harness()
        try await h.session.enterWiredMode(using: h.credential)
        try await h.session.performTransaction(using: h.credential)
        try await h.waitForSleepers(2)
        try await h.session.endCardEmulation()
        #expect(await h.session.state == .management)
        #expect(h.backend.calls.last == "restore")
        await h.session.invalidate()
    }

    @Test("the wired idle rule invalidates the session after 15 s without transceive")
    func wiredIdle() async throws {
        let h = try Harness()
        var events = h.session.eventStream.makeAsyncIterator()
        try await h.session.enterWiredMode(using: h.credential)
        try await h.waitForSleepers(1)
        h.clock.advance(by: .seconds(15))
        let event = await nextEvent(&events) {
            if case .sessionInvalidated = $0 { return true }
            return false
        }
        guard case .sessionInvalidated(let reason) = event else {
            Issue.record("no sessionInvalidated: \(String(describing: event))")
            return
        }
        #expect(reason.code == .sessionInvalidated)
        #expect(reason.invalidation == .wiredIdleTimeout(.seconds(15)))
        #expect(await boundedNext(&events) == nil, "the stream finishes after sessionInvalidated")
        #expect(await h.session.state == .invalid)
        await #expect(throws: CredentialSessionError(.sessionInvalidated, "")) { try await h.session.listCredentials() }
    }

    @Test("assertions: the third within 80 s is refused; one expires after 60 s with presentmentIntentAssertionTimeout")
    func assertions() async throws {
        let h = try Harness()
        var events = h.session.eventStream.makeAsyncIterator()
        let first = try await h.session.acquirePresentmentAssertion()
        try await first.relinquish()
        let second = try await h.session.acquirePresentmentAssertion()
        await #expect(throws: CredentialSessionError(.resourceUnavailable, "")) { try await h.session.acquirePresentmentAssertion() }
        try await h.waitForSleepers(1)
        h.clock.advance(by: .seconds(60))
        #expect(await nextEvent(&events) { $0 == .presentmentIntentAssertionTimeout } != nil)
        #expect(second.state == .invalid)
        await #expect(throws: CredentialSessionError(.resourceUnavailable, "")) { try await h.session.acquirePresentmentAssertion() }
        h.clock.advance(by: .seconds(20))
        let third = try await h.session.acquirePresentmentAssertion()
        #expect(third.state == .active)
        await h.session.invalidate()
        #expect(third.state == .invalid, "invalidate ends a held assertion")
    }

    @Test("a transaction while the app holds an assertion fails with resourceUnavailable and returns to management")
    func transactionWithAssertion() async throws {
        let h = try Harness()
        try await h.session.enterWiredMode(using: h.credential)
        let assertion = try await h.session.acquirePresentmentAssertion()
        await #expect(throws: CredentialSessionError(.resourceUnavailable, "")) {
            try await h.session.performCardEmulationTransactionWithCurrentCredential()
        }
        #expect(assertion.state == .active)
        await h.session.invalidate()
    }

    @Test("a reader that cannot emulate: featureUnavailable with the reason; wired mode still works")
    func featureUnavailable() async throws {
        let h = try Harness(support: .unsupported(reason: "ACR1252U: memory images only", cause: nil))
        try await h.session.enterWiredMode(using: h.credential)
        do {
            try await h.session.performTransaction(using: h.credential)
            Issue.record("performTransaction succeeded on a reader that cannot emulate")
        } catch {
            #expect(error.code == .featureUnavailable)
            #expect(error.reason.contains("ACR1252U"))
        }
        #expect(await h.session.state == .wired(credential: h.credential))
        #expect(try await h.session.transceive(hex("00 A4 04 00 07 D2 76 00 00 85 01 01 00")) == hex("90 00"))
        await h.session.invalidate()

        let noReader = try CredentialSession.startSession(CredentialSessionOptions(
            credentials: [h.credential], authorizer: PolicyAuthorizer.approveAll, clock: VirtualSessionClock()))
        try await noReader.enterWiredMode(using: h.credential)
        await #expect(throws: CredentialSessionError(.featureUnavailable, "")) {
            try await noReader.performCardEmulationTransactionWithCurrentCredential()
        }
        await noReader.invalidate()
    }

    @Test("one session per reader: a second gets resourceUnavailable until the first is invalidated")
    func onePerReader() async throws {
        let h = try Harness()
        let options = CredentialSessionOptions(
            credentials: [], readerName: h.backend.readerName, authorizer: PolicyAuthorizer.approveAll, clock: h.clock)
        #expect(throws: CredentialSessionError(.resourceUnavailable, "")) { try CredentialSession.startSession(options) }
        await h.session.invalidate()
        let second = try CredentialSession.startSession(options)
        await second.invalidate()
    }

    @Test("resourceUnavailable from the secure element returns to management; other errors leave the state")
    func secureElementErrors() async throws {
        let busy = Credential(id: "busy", secureElement: StubSecureElement(failOpen: CredentialSessionError(.resourceUnavailable, "sharing violation")))
        let gone = Credential(id: "gone", secureElement: StubSecureElement(failOpen: CredentialSessionError(.instanceDoesNotExist, "no card")))
        let clock = VirtualSessionClock()
        let session = try CredentialSession.startSession(CredentialSessionOptions(
            credentials: [credentialA, busy, gone], authorizer: PolicyAuthorizer.approveAll, clock: clock))
        try await session.enterWiredMode(using: credentialA)
        await #expect(throws: CredentialSessionError(.instanceDoesNotExist, "")) { try await session.enterWiredMode(using: gone) }
        #expect(await session.state == .wired(credential: credentialA))
        await #expect(throws: CredentialSessionError(.resourceUnavailable, "")) { try await session.enterWiredMode(using: busy) }
        #expect(await session.state == .management)
        await #expect(throws: CredentialSessionError(.credentialDoesNotExist, "")) { try await session.enterWiredMode(using: credentialB) }
        try await session.enterWiredMode(using: credentialA)
        await #expect(throws: CredentialSessionError(.invalidInput, "")) { try await session.transceive([0x00, 0xA4]) }
        await session.invalidate()
    }

    @Test("transactionTask runs the action with a transaction, then invalidates the configuration (back to management)")
    func transactionTaskContract() async throws {
        let h = try Harness()
        try await h.session.enterWiredMode(using: h.credential)
        let configuration = try await h.session.configuration()
        let session = h.session
        try await transactionTask(configuration) { transaction in
            try await transaction.performTransaction(using: h.credential)
            #expect(await session.state == .cardEmulation(credential: h.credential))
        }
        #expect(await h.session.state == .management)
        #expect(!configuration.isValid)
        let stale = CredentialTransaction(configuration: configuration)
        await #expect(throws: CredentialSessionError(.invalidSessionState, "")) {
            try await stale.performCardEmulationTransactionWithCurrentCredential()
        }
        // A nil configuration runs nothing; a throwing action still invalidates.
        await transactionTask(nil) { _ in Issue.record("ran without a configuration") }
        try await h.session.enterWiredMode(using: h.credential)
        struct Stop: Error {}
        await #expect(throws: Stop.self) {
            try await transactionTask(try await h.session.configuration()) { _ in throw Stop() }
        }
        #expect(await h.session.state == .management)
        await h.session.invalidate()
    }
}
