import PCSC
import SecbridgeTesting
import Testing
@testable import SecureElementCredential

/// The state a row starts from.
enum StartState: String, Sendable, CaseIterable {
    case management, wiredA, emulatingA, invalid

    func machine() throws -> SessionStateMachine {
        var m = SessionStateMachine()
        switch self {
        case .management:
            break
        case .wiredA:
            _ = try m.commitWiredMode(m.check(.enterWiredMode(credentialA), now: .zero), credential: credentialA, now: .zero)
        case .emulatingA:
            _ = try m.commitWiredMode(m.check(.enterWiredMode(credentialA), now: .zero), credential: credentialA, now: .zero)
            _ = try m.commitCardEmulation(m.check(.performTransaction(credentialA), now: .zero), credential: credentialA, now: .zero)
        case .invalid:
            _ = m.invalidate(reason: .invalidatedByClient)
        }
        return m
    }
}

/// The call a row makes, committed as a success when the check passes.
enum TableCall: String, Sendable, CaseIterable {
    case listCredentials, enterWiredA, enterWiredB, transceive, endWiredMode, performA, performB
    case performCurrent, endCardEmulation, acquireAssertion, invalidateConfiguration

    var call: SessionStateMachine.Call {
        switch self {
        case .listCredentials: .listCredentials
        case .enterWiredA: .enterWiredMode(credentialA)
        case .enterWiredB: .enterWiredMode(credentialB)
        case .transceive: .transceive
        case .endWiredMode: .endWiredMode
        case .performA: .performTransaction(credentialA)
        case .performB: .performTransaction(credentialB)
        case .performCurrent: .performCardEmulationTransactionWithCurrentCredential
        case .endCardEmulation: .endCardEmulation
        case .acquireAssertion: .acquirePresentmentAssertion
        case .invalidateConfiguration: .invalidateConfiguration
        }
    }

    /// Commits the success of the call.
    func commit(_ m: inout SessionStateMachine, _ ticket: SessionStateMachine.Ticket) throws {
        switch self {
        case .listCredentials, .transceive: m.recordTransceive(now: .zero)
        case .enterWiredA: _ = try m.commitWiredMode(ticket, credential: credentialA, now: .zero)
        case .enterWiredB: _ = try m.commitWiredMode(ticket, credential: credentialB, now: .zero)
        case .endWiredMode: _ = try m.commitEndWiredMode(ticket)
        case .performA, .performCurrent: _ = try m.commitCardEmulation(ticket, credential: credentialA, now: .zero)
        case .performB: _ = try m.commitCardEmulation(ticket, credential: credentialB, now: .zero)
        case .endCardEmulation: _ = try m.commitEndCardEmulation(ticket)
        case .acquireAssertion: _ = try m.commitAssertion(ticket, now: .zero)
        case .invalidateConfiguration: _ = try m.commitInvalidateConfiguration(ticket)
        }
    }
}

enum Expected: Sendable, Equatable {
    case state(String)
    case error(CredentialSessionError.Code)
}

struct TableRow: Sendable, CustomTestStringConvertible {
    var from: StartState
    var call: TableCall
    var expected: Expected
    var testDescription: String { "\(from.rawValue) × \(call.rawValue)" }
}

private func row(_ from: StartState, _ call: TableCall, _ expected: Expected) -> TableRow {
    TableRow(from: from, call: call, expected: expected)
}

private let stateError = Expected.error(.invalidSessionState)
private let invalidated = Expected.error(.sessionInvalidated)

/// Every call in every state (docs/session-model.md, "CredentialSession"; the table in
/// `SessionStateMachine`'s documentation). Source: docs/session-model.md.
let transitionTable: [TableRow] = [
    row(.management, .listCredentials, .state("management")),
    row(.management, .enterWiredA, .state("wired(A)")),
    row(.management, .enterWiredB, .state("wired(B)")),
    row(.management, .transceive, stateError),
    row(.management, .endWiredMode, stateError),
    row(.management, .performA, stateError),
    row(.management, .performB, stateError),
    row(.management, .performCurrent, stateError),
    row(.management, .endCardEmulation, stateError),
    row(.management, .acquireAssertion, .state("management")),
    row(.management, .invalidateConfiguration, .state("management")),

    row(.wiredA, .listCredentials, stateError),
    row(.wiredA, .enterWiredA, .state("wired(A)")),
    row(.wiredA, .enterWiredB, .state("wired(B)")),
    row(.wiredA, .transceive, .state("wired(A)")),
    row(.wiredA, .endWiredMode, .state("management")),
    row(.wiredA, .performA, .state("cardEmulation(A)")),
    row(.wiredA, .performB, stateError),
    row(.wiredA, .performCurrent, .state("cardEmulation(A)")),
    row(.wiredA, .endCardEmulation, stateError),
    row(.wiredA, .acquireAssertion, .state("wired(A)")),
    row(.wiredA, .invalidateConfiguration, .state("management")),

    row(.emulatingA, .listCredentials, stateError),
    row(.emulatingA, .enterWiredA, .state("wired(A)")),
    row(.emulatingA, .enterWiredB, .state("wired(B)")),
    row(.emulatingA, .transceive, stateError),
    row(.emulatingA, .endWiredMode, stateError),
    row(.emulatingA, .performA, stateError),
    row(.emulatingA, .performB, stateError),
    row(.emulatingA, .performCurrent, stateError),
    row(.emulatingA, .endCardEmulation, .state("management")),
    row(.emulatingA, .acquireAssertion, stateError),
    row(.emulatingA, .invalidateConfiguration, .state("management")),
] + TableCall.allCases.map { row(.invalid, $0, invalidated) }

@Suite("SessionStateMachine: the session rules as a pure value")
struct StateMachineTests {
    @Test("state × call → state or error", arguments: transitionTable)
    func table(_ row: TableRow) throws {
        var m = try row.from.machine()
        switch row.expected {
        case .state(let expected):
            let ticket = try m.check(row.call.call, now: .zero)
            try row.call.commit(&m, ticket)
            #expect(m.state.description == expected)
        case .error(let code):
            let before = m.state
            #expect(throws: CredentialSessionError(code, "")) { try m.check(row.call.call, now: .zero) }
            #expect(m.state == before, "a refused call leaves the state unchanged")
        }
    }

    @Test("the table covers every call in every state")
    func tableIsComplete() {
        #expect(transitionTable.count == StartState.allCases.count * TableCall.allCases.count)
    }

    @Test("resourceUnavailable returns to management; other errors leave the state unchanged", arguments: [
        (CredentialSessionError.Code.resourceUnavailable, "management"),
        (.userCanceledAuthorization, "wired(A)"),
        (.featureUnavailable, "wired(A)"),
        (.internalError, "wired(A)"),
    ])
    func failureRule(_ code: CredentialSessionError.Code, _ expected: String) throws {
        var m = try StartState.wiredA.machine()
        let ticket = try m.check(.performTransaction(credentialA), now: .zero)
        let actions = m.commitFailure(ticket, error: CredentialSessionError(code, "test"))
        #expect(m.state.description == expected)
        if code == .resourceUnavailable { #expect(actions == [.closeSecureElement(credentialA)]) }
    }

    @Test("a ticket goes stale when the state changes while the call runs")
    func staleTicket() throws {
        var m = try StartState.wiredA.machine()
        let ticket = try m.check(.performTransaction(credentialA), now: .zero)
        _ = try m.commitEndWiredMode(m.check(.endWiredMode, now: .zero))
        #expect(throws: CredentialSessionError(.invalidSessionState, "")) {
            try m.commitCardEmulation(ticket, credential: credentialA, now: .zero)
        }
        #expect(m.state == .management)
    }

    @Test("leaving card emulation stops the emulation loop and closes the secure element")
    func leavingActions() throws {
        var m = try StartState.emulatingA.machine()
        #expect(try m.commitEndCardEmulation(m.check(.endCardEmulation, now: .zero))
            == [.stopEmulation, .closeSecureElement(credentialA)])
        m = try StartState.emulatingA.machine()
        // Back to wired mode with the same credential: the secure element stays open.
        #expect(try m.commitWiredMode(m.check(.enterWiredMode(credentialA), now: .zero), credential: credentialA, now: .zero)
            == [.stopEmulation])
        m = try StartState.emulatingA.machine()
        let actions = m.invalidate(reason: .invalidatedByClient)
        #expect(actions == [
            .stopEmulation, .closeSecureElement(credentialA),
            .emit(.sessionInvalidated(reason: InvalidationReason.invalidatedByClient.errorCode)), .finishSession,
        ])
        #expect(m.invalidate(reason: .invalidatedByClient) == [], "invalidate is idempotent")
    }

    @Test("a billable event for each successful activation of card emulation")
    func billing() throws {
        var m = try StartState.wiredA.machine()
        _ = try m.commitCardEmulation(m.check(.performTransaction(credentialA), now: .zero), credential: credentialA, now: .seconds(3))
        _ = try m.commitWiredMode(m.check(.enterWiredMode(credentialA), now: .seconds(4)), credential: credentialA, now: .seconds(4))
        _ = try m.commitCardEmulation(
            m.check(.performCardEmulationTransactionWithCurrentCredential, now: .seconds(5)), credential: credentialA, now: .seconds(5))
        #expect(m.billingLog == [
            BillableEvent(sequence: 1, credentialID: "A", time: .seconds(3)),
            BillableEvent(sequence: 2, credentialID: "A", time: .seconds(5)),
        ])
    }
}

@Suite("Session deadlines on a virtual clock: assertions, card emulation, wired idle")
struct DeadlineTests {
    @Test("at most two app assertions in any 80 s span; the third is refused with resourceUnavailable")
    func assertionRate() throws {
        var m = SessionStateMachine()
        let first = try m.commitAssertion(m.check(.acquirePresentmentAssertion, now: .zero), now: .zero)
        _ = m.relinquishAssertion(id: first)
        let second = try m.commitAssertion(m.check(.acquirePresentmentAssertion, now: .seconds(10)), now: .seconds(10))
        _ = m.relinquishAssertion(id: second)
        #expect(throws: CredentialSessionError(.resourceUnavailable, "")) {
            try m.check(.acquirePresentmentAssertion, now: .seconds(79))
        }
        // At 80 s the first acquisition (at 0 s) leaves the span.
        _ = try m.commitAssertion(m.check(.acquirePresentmentAssertion, now: .seconds(80)), now: .seconds(80))
        #expect(m.activeAssertion?.id == 3)
    }

    @Test("one assertion at a time; a transaction needs the app's assertion relinquished")
    func oneAtATime() throws {
        var m = try StartState.wiredA.machine()
        let id = try m.commitAssertion(m.check(.acquirePresentmentAssertion, now: .zero), now: .zero)
        #expect(throws: CredentialSessionError(.resourceUnavailable, "")) { try m.check(.acquirePresentmentAssertion, now: .zero) }
        #expect(throws: CredentialSessionError(.resourceUnavailable, "")) { try m.check(.performTransaction(credentialA), now: .zero) }
        #expect(m.relinquishAssertion(id: id) == [.endAssertion(id: id)])
        _ = try m.check(.performTransaction(credentialA), now: .zero)
    }

    @Test("an assertion expires after 60 s with presentmentIntentAssertionTimeout")
    func assertionLifetime() throws {
        var m = SessionStateMachine()
        let id = try m.commitAssertion(m.check(.acquirePresentmentAssertion, now: .seconds(1)), now: .seconds(1))
        #expect(m.advance(to: .seconds(60.999)) == [])
        #expect(m.advance(to: .seconds(61)) == [.endAssertion(id: id), .emit(.presentmentIntentAssertionTimeout)])
        #expect(m.activeAssertion == nil)
    }

    @Test("card emulation expires after 60 s: management and cardEmulationTimeout")
    func emulationWindow() throws {
        var m = try StartState.wiredA.machine()
        _ = try m.commitCardEmulation(m.check(.performTransaction(credentialA), now: .seconds(2)), credential: credentialA, now: .seconds(2))
        #expect(m.nextDeadline == .seconds(62))
        #expect(m.advance(to: .seconds(61)) == [])
        #expect(m.advance(to: .seconds(62)) == [.emit(.cardEmulationTimeout), .stopEmulation, .closeSecureElement(credentialA)])
        #expect(m.state == .management)
    }

    @Test("an options time limit shortens the window but never lengthens it")
    func emulationLimit() throws {
        var m = try StartState.wiredA.machine()
        _ = try m.commitCardEmulation(
            m.check(.performTransaction(credentialA), now: .zero), credential: credentialA, now: .zero, timeLimit: .seconds(10))
        #expect(m.emulationDeadline == .seconds(10))
        m = try StartState.wiredA.machine()
        _ = try m.commitCardEmulation(
            m.check(.performTransaction(credentialA), now: .zero), credential: credentialA, now: .zero, timeLimit: .seconds(600))
        #expect(m.emulationDeadline == .seconds(60))
    }

    @Test("wired idle rule: 15 s without transceive invalidates the session; a transceive restarts it")
    func wiredIdle() throws {
        var m = try StartState.wiredA.machine()
        m.recordTransceive(now: .seconds(10))
        #expect(m.advance(to: .seconds(24.9)) == [])
        let actions = m.advance(to: .seconds(25))
        #expect(actions.contains { action in
            if case .emit(.sessionInvalidated(let reason)) = action { return reason.invalidation == .wiredIdleTimeout(.seconds(15)) }
            return false
        })
        #expect(actions.last == .finishSession)
        #expect(m.state == .invalid)
    }

    @Test("every duration is configuration")
    func injectableTimings() throws {
        var timings = SessionTimings()
        timings.assertionsPerWindow = 1
        timings.assertionRateWindow = .seconds(5)
        timings.wiredIdleTimeout = .seconds(1)
        var m = SessionStateMachine(timings: timings)
        let id = try m.commitAssertion(m.check(.acquirePresentmentAssertion, now: .zero), now: .zero)
        _ = m.relinquishAssertion(id: id)
        #expect(throws: CredentialSessionError(.resourceUnavailable, "")) { try m.check(.acquirePresentmentAssertion, now: .seconds(4)) }
        _ = try m.check(.acquirePresentmentAssertion, now: .seconds(5))
        _ = try m.commitWiredMode(m.check(.enterWiredMode(credentialA), now: .zero), credential: credentialA, now: .zero)
        #expect(m.advance(to: .seconds(1)).last == .finishSession)
    }
}

@Suite("CredentialSession.ErrorCode")
struct ErrorCodeTests {
    @Test("every documented case exists, with its Apple name")
    func documented() {
        #expect(CredentialSession.ErrorCode.documented.map(\.rawValue) == [
            "userNotAuthorized", "accessDenied", "clientNotInForeground", "userCanceledAuthorization",
            "userAuthorizationTimedOut", "featureUnavailable", "ineligible", "conditionsNotSatisfied",
            "invalidCredentialState", "credentialDoesNotExist", "instanceDoesNotExist", "invalidSessionState",
            "sessionInvalidated", "commandNotSupported", "network", "presentmentIntentAssertionTimeout",
            "invalidView", "insufficientSpace", "resourceUnavailable", "acquiredResourceRelinquished",
            "invalidInput", "internalError",
        ])
    }

    @Test("a PC/SC sharing violation becomes resourceUnavailable and keeps its code as the cause")
    func wrapsPCSC() {
        let error = CredentialSessionError.wrapping(PCSCError(code: 0x8010_000B), as: .internalError, "connecting")
        #expect(error.code == .resourceUnavailable)
        #expect(error.cause == .pcsc(code: 0x8010_000B, name: "SCARD_E_SHARING_VIOLATION"))
        #expect(error.description.contains("0x8010000B"))
    }

    @Test("other lower-layer errors keep the fallback code and name their cause")
    func wrapsOther() {
        let error = CredentialSessionError.wrapping(PCSCError(code: 0x8010_0016), as: .internalError, "escape")
        #expect(error.code == .internalError)
        #expect(error.cause == .pcsc(code: 0x8010_0016, name: "SCARD_E_NOT_TRANSACTED"))
    }
}
