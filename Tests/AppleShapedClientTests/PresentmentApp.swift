// An iOS app's credential code, written against Apple's SecureElementCredential API as Apple's
// documentation lays it out (docs/apple-api-map.md): the `transactionTask` sequence of a SwiftUI
// app, and `performTransaction(using:over:options:)` of a UIKit app. It differs from what an
// iOS app writes only where UIKit or SwiftUI appear; each such place says so in a comment
// starting "UIKit:" or "SwiftUI:". Nothing here knows about the simulated reader: the tests run
// it inside `SimulatedSessionDesk.asDefault(_:)`, so `CredentialSession.startSession()` lands there.

import Foundation
import SecureElementCredential

/// The state behind the app's presentment screen (a SwiftUI app keeps it in an `@Observable`
/// model that its view reads).
// SwiftUI: `@MainActor @Observable final class`; no Observation or main actor here, so an actor.
actor PresentmentModel {
    private(set) var session: CredentialSession?
    private(set) var credential: CredentialSession.Credential?
    private(set) var configuration: CredentialTransaction.Configuration?
    private(set) var fieldStates: [CredentialSession.NFCFieldInformation] = []
    private(set) var wiredAnswer: Data?

    /// Starts the session and finds the credential (a view's `.task { await model.kickOff() }`).
    func kickOff() async throws {
        guard try await CredentialSession.isEligible else { return }
        let session = try await CredentialSession.startSession()
        self.session = session
        credential = try await session.listCredentials().first
    }

    /// The five steps of `transactionTask(_:action:)`'s discussion: (1) acquire the presentment
    /// intent assertion before showing the app's own presentment UI, (2) show it, (3) relinquish
    /// the assertion and fetch the configuration, (4) let the transaction task perform the
    /// transaction, (5) invalidate the configuration when it is done.
    func present() async throws {
        guard let session, let credential else { return }
        try await session.enterWiredMode(using: credential)
        wiredAnswer = try await session.transceive(Data([0x00, 0xA4, 0x04, 0x00, 0x07, 0xD2, 0x76, 0x00, 0x00, 0x85, 0x01, 0x01, 0x00]))
        // 1. Spelled as the sample on Apple's transactionTask(_:action:) page spells it.
        let assertion = try await session.acquirePresentmentIntentAssertion()
        // 2. SwiftUI: the app's presentment view appears here; there is no view to show.
        // 3.
        try await assertion.relinquish()
        let configuration = try await session.configuration()
        self.configuration = configuration
        // 4. SwiftUI: `.transactionTask(model.configuration) { transaction in … }` on the view;
        // without a view the same contract is the function `transactionTask(_:action:)`.
        await transactionTask(configuration) { transaction in
            do {
                try await transaction.performCardEmulationTransactionWithCurrentCredential()
                await self.waitForTheReader(session)
                // 5.
                try await configuration.invalidate()
            } catch {
                self.failed(error)
            }
        }
    }

    /// The UIKit flow: wired mode, the assertion around the app's UI, then
    /// `performTransaction(using:over:options:)`, the reader's read, and the end of card emulation.
    func presentFromUIKit() async throws {
        guard let session, let credential else { return }
        try await session.enterWiredMode(using: credential)
        let assertion = try await session.acquirePresentmentAssertion()
        try await assertion.relinquish()
        // UIKit: `over: view.window!.windowScene!`, the scene the authorization sheet appears
        // over; there is no scene, the session's authorizer stands for the sheet.
        try await session.performTransaction(using: credential)
        await waitForTheReader(session)
        try await session.endCardEmulation()
    }

    /// `performTransaction` as an app that handles the person dismissing the sheet.
    /// - Returns: whether the authorization was canceled.
    func presentAllowingCancel() async throws -> Bool {
        guard let session, let credential else { return false }
        try await session.enterWiredMode(using: credential)
        do {
            // UIKit: `over: scene` as above.
            try await session.performTransaction(using: credential)
        } catch CredentialSession.ErrorCode.userCanceledAuthorization {
            return true
        }
        return false
    }

    /// Ends the session when the screen goes away.
    func tearDown() async {
        await session?.invalidate()
    }

    /// Follows the field until the reader has read the credential and left (or the card emulation
    /// window ended).
    private func waitForTheReader(_ session: CredentialSession) async {
        for await event in session.eventStream {
            switch event {
            case .fieldStateChanged(let info):
                fieldStates.append(info)
                if info == .fieldAbsent { return }
            case .cardEmulationTimeout, .sessionInvalidated:
                return
            default:
                continue
            }
        }
    }

    private(set) var failure: (any Error)?
    private func failed(_ error: any Error) { failure = error }
}
