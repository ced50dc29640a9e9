import Synchronization

/// What the authorizer is asked to approve: a transaction that puts `credential` into card
/// emulation (the UIScene sheet on Apple platforms; docs/session-model.md).
public struct AuthorizationRequest: Sendable, Hashable, CustomStringConvertible {
    /// Which call asks.
    public enum Kind: String, Sendable, Hashable {
        /// `performTransaction(using:options:)`.
        case performTransaction
        /// `performCardEmulationTransactionWithCurrentCredential(options:)`.
        case performCardEmulationTransactionWithCurrentCredential
        /// `performWiredTransaction(using:instanceAID:)`: wired mode with the user's approval.
        case performWiredTransaction
    }

    /// The credential to present.
    public var credential: Credential
    /// Which call asks.
    public var kind: Kind
    /// The reader that will emulate the card.
    public var readerName: String

    /// A request for `credential` on `readerName`.
    public init(credential: Credential, kind: Kind, readerName: String) {
        self.credential = credential
        self.kind = kind
        self.readerName = readerName
    }

    /// `performTransaction: Present "Door badge" (badge-1) on …?`.
    public var description: String { "\(kind.rawValue): \(prompt)" }

    /// One line for a prompt, e.g. `Present "Door badge" (badge-1) on ACS ACR122U PICC Interface 00 00?`.
    public var prompt: String {
        "Present \"\(credential.displayName)\" (\(credential.id)) on \(readerName)?"
    }
}

/// The answer to an `AuthorizationRequest`.
public enum AuthorizationDecision: Sendable, Hashable {
    /// Go ahead.
    case approved
    /// Do not: the call throws `userCanceledAuthorization`.
    case declined
}

/// Decides whether a transaction may present a credential: a terminal prompt in the CLI (with
/// `--yes` to pre-approve), a policy object in code and tests.
///
/// The session bounds the wait by `SessionTimings.authorizationTimeout`: an authorizer that never
/// answers makes the call fail with `userAuthorizationTimedOut`, and is cancelled (it need not
/// honour the cancellation; the session does not wait for it).
public protocol TransactionAuthorizer: Sendable {
    /// The answer to `request`; the session stops waiting after the authorization timeout.
    func authorize(_ request: AuthorizationRequest) async -> AuthorizationDecision
}

/// An authorizer from a closure, with the two fixed policies.
public struct PolicyAuthorizer: TransactionAuthorizer {
    private let decide: @Sendable (AuthorizationRequest) async -> AuthorizationDecision

    /// An authorizer that answers with `decide`.
    public init(_ decide: @escaping @Sendable (AuthorizationRequest) async -> AuthorizationDecision) {
        self.decide = decide
    }

    /// `decide(request)`.
    public func authorize(_ request: AuthorizationRequest) async -> AuthorizationDecision {
        await decide(request)
    }

    /// Approves everything (the CLI's `--yes`).
    public static let approveAll = PolicyAuthorizer { _ in .approved }
    /// Declines everything.
    public static let declineAll = PolicyAuthorizer { _ in .declined }
}
