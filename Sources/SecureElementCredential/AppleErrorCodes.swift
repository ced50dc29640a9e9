import Foundation

// Apple's `CredentialSession.ErrorCode` cases, as values (docs/apple-api-map.md, "Types").
// Each static member is an error with that code and a reason saying what the code means here; an
// error thrown by a session call carries its own reason and cause and matches these by code.
extension CredentialSession.ErrorCode {
    /// `userNotAuthorized`: the user may not use credentials on this host.
    public static let userNotAuthorized = Self(.userNotAuthorized, "the user is not authorized to use credentials on this host")
    /// `accessDenied`: a policy denied access to the credential.
    public static let accessDenied = Self(.accessDenied, "access to the credential was denied")
    /// `clientNotInForeground`: never thrown here (a process on a Linux host has no foreground).
    public static let clientNotInForeground = Self(.clientNotInForeground, "the client is not in the foreground")
    /// `userCanceledAuthorization`: the authorizer (a terminal prompt, a policy) declined.
    public static let userCanceledAuthorization = Self(.userCanceledAuthorization, "the authorization was declined")
    /// `userAuthorizationTimedOut`: the authorizer did not answer within `SessionTimings.authorizationTimeout`.
    public static let userAuthorizationTimedOut = Self(.userAuthorizationTimedOut, "the authorization was not answered in time")
    /// `featureUnavailable`: the reader cannot do what was asked (e.g. no ACR122-class reader for card emulation).
    public static let featureUnavailable = Self(.featureUnavailable, "the feature is not available with this reader")
    /// `ineligible`: the host or credential is not eligible.
    public static let ineligible = Self(.ineligible, "not eligible")
    /// `conditionsNotSatisfied`: the conditions for the call are not met.
    public static let conditionsNotSatisfied = Self(.conditionsNotSatisfied, "the conditions for the call are not satisfied")
    /// `invalidCredentialState`: the credential's state does not allow the call.
    public static let invalidCredentialState = Self(.invalidCredentialState, "the credential's state does not allow the call")
    /// `credentialDoesNotExist`: no credential with that identity in the session.
    public static let credentialDoesNotExist = Self(.credentialDoesNotExist, "no such credential")
    /// `instanceDoesNotExist`: the secure element instance (card, reader) is not there.
    public static let instanceDoesNotExist = Self(.instanceDoesNotExist, "the secure element instance is not there")
    /// `invalidSessionState`: the session's state does not allow the call.
    public static let invalidSessionState = Self(.invalidSessionState, "the session's state does not allow the call")
    /// `sessionInvalidated`: the session is invalid; start a new one.
    public static let sessionInvalidated = Self(.sessionInvalidated, "the session was invalidated")
    /// `commandNotSupported`: the secure element does not support the command.
    public static let commandNotSupported = Self(.commandNotSupported, "the command is not supported")
    /// `network`: never thrown here (nothing uses the network).
    public static let network = Self(.network, "a network error")
    /// `presentmentIntentAssertionTimeout`: the presentment intent assertion expired.
    public static let presentmentIntentAssertionTimeout = Self(.presentmentIntentAssertionTimeout, "the presentment intent assertion expired")
    /// `invalidView`: never thrown here (there are no views).
    public static let invalidView = Self(.invalidView, "the view is not valid")
    /// `insufficientSpace`: not enough space on the secure element.
    public static let insufficientSpace = Self(.insufficientSpace, "not enough space on the secure element")
    /// `resourceUnavailable`: a resource (reader, assertion slot, card) is busy or gone.
    public static let resourceUnavailable = Self(.resourceUnavailable, "a resource is busy or gone")
    /// `acquiredResourceRelinquished`: a resource the call held was given up while it ran.
    public static let acquiredResourceRelinquished = Self(.acquiredResourceRelinquished, "a resource the call held was relinquished")
    /// `invalidInput`: the input is not valid (e.g. bytes that are not a command APDU).
    public static let invalidInput = Self(.invalidInput, "the input is not valid")
    /// `internalError`: an internal error.
    public static let internalError = Self(.internalError, "an internal error")
    /// Ours: the card serving as secure element was removed, put back or reset by another program.
    public static let secureElementChanged = Self(.secureElementChanged, "the secure element changed under the session")

    /// Every documented code (``Code/documented``), in the order docs/session-model.md lists them.
    public static var documented: [Code] { Code.documented }

    /// Whether `error` is a `CredentialSession.ErrorCode` with `pattern`'s code: what makes
    /// `catch CredentialSession.ErrorCode.userCanceledAuthorization` match a thrown error whatever
    /// its reason and cause.
    public static func ~= (pattern: Self, error: any Error) -> Bool {
        (error as? Self)?.code == pattern.code
    }

    /// Whether `value` has `pattern`'s code (`switch error { case .sessionInvalidated: … }`).
    public static func ~= (pattern: Self, value: Self) -> Bool {
        pattern.code == value.code
    }

    /// The reason in words (Apple's errors answer `failureReason` as `LocalizedError`).
    public var failureReason: String? { reason }
}

extension CredentialSession.ErrorCode: LocalizedError {
    /// The one-line ``description``.
    public var errorDescription: String? { description }
}
