import Synchronization

/// A transaction run by `transactionTask(_:action:)`: the session's transaction calls, bound to a
/// configuration (Apple's `CredentialTransaction`).
public struct CredentialTransaction: Sendable {
    /// What a transaction task runs against: a session, until `invalidate()`.
    ///
    /// `invalidate()` ends wired mode or card emulation and returns the session to management
    /// (docs/session-model.md, "CredentialTransaction and transactionTask"). A configuration is used once:
    /// after `invalidate()` its transactions throw `invalidSessionState`; ask the session for a new
    /// one with `configuration()`.
    public final class Configuration: Sendable {
        /// The session the transactions run on.
        public let session: CredentialSession
        private let valid = Mutex(true)

        init(session: CredentialSession) { self.session = session }

        /// Whether `invalidate()` has not been called yet.
        public var isValid: Bool { valid.withLock { $0 } }

        /// Ends any wired or emulation state and returns the session to management. Idempotent.
        ///
        /// Apple's shape (`async throws`); here it never fails (docs/apple-api-map.md).
        public func invalidate() async throws(CredentialSessionError) {
            let wasValid = valid.withLock { v in
                defer { v = false }
                return v
            }
            if wasValid { await session.invalidateConfiguration() }
        }

        func checkValid() throws(CredentialSessionError) {
            guard isValid else {
                throw CredentialSessionError(
                    .invalidSessionState, "this transaction configuration was invalidated; ask the session for a new configuration()")
            }
        }
    }

    /// The configuration this transaction is bound to.
    public let configuration: Configuration

    /// The session's `performTransaction(using:options:)`, while the configuration is valid.
    public func performTransaction(
        using credential: Credential, options: CardEmulationOptions? = nil
    ) async throws(CredentialSessionError) {
        try configuration.checkValid()
        try await configuration.session.performTransaction(using: credential, options: options)
    }

    /// The session's `performCardEmulationTransactionWithCurrentCredential(options:)`, while the
    /// configuration is valid.
    public func performCardEmulationTransactionWithCurrentCredential(
        options: CardEmulationOptions? = nil
    ) async throws(CredentialSessionError) {
        try configuration.checkValid()
        try await configuration.session.performCardEmulationTransactionWithCurrentCredential(options: options)
    }
}

/// The contract of SwiftUI's `transactionTask(_:action:)` as a plain async entry point: when
/// `configuration` is non-nil, runs `action` with a `CredentialTransaction`; when the action
/// returns or throws, invalidates the configuration (the session goes back to management).
/// With a nil configuration nothing runs. The action runs in the caller's isolation (an app's
/// main actor or model actor), as the modifier's task does in its view's.
/// - Throws: what `action` throws, after the configuration is invalidated.
public func transactionTask(
    _ configuration: CredentialTransaction.Configuration?,
    isolation: isolated (any Actor)? = #isolation,
    action: (CredentialTransaction) async throws -> Void
) async rethrows {
    guard let configuration else { return }
    do {
        try await action(CredentialTransaction(configuration: configuration))
    } catch {
        try? await configuration.invalidate()
        throw error
    }
    try? await configuration.invalidate()
}
