import SecureElementCredential

/// Presents the first credential of a session to a reader: the app's code under test.
public struct BadgePresenter: Sendable {
    /// A presenter.
    public init() {}

    /// Starts a session, enters wired mode with the first credential, takes and gives back the
    /// presentment intent assertion around the app's UI, performs the transaction and waits until
    /// the reader has read the badge and left (or the card emulation window ended).
    /// - Returns: the field states seen, in order.
    /// - Throws: `CredentialSession.ErrorCode` from the session.
    public func presentFirstCredential() async throws -> [CredentialSession.NFCFieldInformation] {
        let session = try await CredentialSession.startSession()
        guard let credential = try await session.listCredentials().first else { return [] }
        try await session.enterWiredMode(using: credential)
        let assertion = try await session.acquirePresentmentAssertion()
        try await assertion.relinquish()
        try await session.performTransaction(using: credential)
        var seen: [CredentialSession.NFCFieldInformation] = []
        events: for await event in session.eventStream {
            switch event {
            case .fieldStateChanged(let info):
                seen.append(info)
                if info == .fieldAbsent { break events }
            case .cardEmulationTimeout, .sessionInvalidated:
                break events
            default:
                continue
            }
        }
        try await session.endCardEmulation()
        await session.invalidate()
        return seen
    }
}
