import ISO7816
import PCSCCore
import PN53x

/// What a lower layer said when a session call failed: the cause a `CredentialSessionError` wraps.
public enum UnderlyingCause: Sendable, Hashable, CustomStringConvertible {
    /// A PC/SC return code, e.g. 0x8010000B `SCARD_E_SHARING_VIOLATION`.
    case pcsc(code: UInt32, name: String)
    /// A PN532 status byte's error code (PN532 UM0701-02 §7.1), e.g. 29 (target released).
    case pn532(status: UInt8, meaning: String)
    /// An ACR122U reader status word (ACR122U API v2.04 §4), e.g. 63 00.
    case readerStatusWord(UInt16)
    /// A card status word SW1-SW2 (ISO/IEC 7816-4 §5.6).
    case statusWord(StatusWord)
    /// Any other error, by its description.
    case other(String)

    /// Classifies an error thrown by a lower layer (PC/SC, PN53x, ISO 7816) or anything else.
    public init(_ error: any Error) {
        switch error {
        case let e as PCSCError:
            self = .pcsc(code: e.code, name: e.name)
        case let e as PN532Error:
            if let code = e.chipErrorCode {
                self = .pn532(status: code.rawValue, meaning: code.meaning)
            } else {
                self = .other(e.description)
            }
        case let e as ACR122Error:
            switch e {
            case .operationFailed: self = .readerStatusWord(0x6300)
            case .unsupported: self = .readerStatusWord(0x6A81)
            case .unexpectedStatusWord(let sw): self = .readerStatusWord(sw)
            default: self = .other(e.description)
            }
        case let e as CheckedResponseError:
            self = .statusWord(e.statusWord)
        case let e as any PCSCCodedError:
            self = .pcsc(code: e.pcscCode, name: PCSCError(code: e.pcscCode).name)
        default:
            self = .other(String(describing: error))
        }
    }

    /// One line: `PC/SC SCARD_E_SHARING_VIOLATION (0x8010000B)`, `PN532 status 29 (…)`, `status word 6A 82 (…)`.
    public var description: String {
        switch self {
        case .pcsc(let code, let name):
            return "PC/SC \(name) (0x\(String(code, radix: 16, uppercase: true)))"
        case .pn532(let status, let meaning):
            return "PN532 status \([status].hexString) (\(meaning))"
        case .readerStatusWord(let sw):
            return "reader status word \([UInt8(sw >> 8), UInt8(sw & 0xFF)].hexString)"
        case .statusWord(let sw):
            return "status word \(sw)"
        case .other(let text):
            return text
        }
    }
}

/// This package's older spelling of ``CredentialSession/ErrorCode``, kept so code written before
/// the Apple-shaped names compiles unchanged.
public typealias CredentialSessionError = CredentialSession.ErrorCode

extension CredentialSession {
/// A failed `CredentialSession` call, thrown by every session method (Apple's
/// `CredentialSession.ErrorCode`, docs/apple-api-map.md): the documented error code, a reason in
/// words, and the lower-layer cause when there is one.
///
/// Apple's type is an enum of codes; here it is a struct with one static member per code, so an
/// Apple client's `catch CredentialSession.ErrorCode.userCanceledAuthorization` and
/// `switch error { case .sessionInvalidated: … }` compile and match by code, while the reason
/// (`failureReason`) and the cause (a PC/SC return code, a PN532 status, a status word) travel
/// with the error. Two errors are equal when their codes are equal; the reason and the cause are
/// for people.
public struct ErrorCode: CodedError {
    /// The error codes of Apple's `CredentialSession.ErrorCode` (docs/session-model.md, "Error codes"),
    /// as an open set: every documented code is a static member, and codes not listed still fit.
    public struct Code: PCSCCore.ErrorCode {
        /// The code's name, Apple's case name, e.g. `resourceUnavailable`.
        public let rawValue: String
        /// A code by name (codes not listed still fit).
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The user may not use credentials on this host.
        public static let userNotAuthorized = Code(rawValue: "userNotAuthorized")
        /// The caller lacks the entitlement (here: a policy) for the credential.
        public static let accessDenied = Code(rawValue: "accessDenied")
        /// The client is not in the foreground (kept for parity; a CLI is always in the foreground).
        public static let clientNotInForeground = Code(rawValue: "clientNotInForeground")
        /// The authorizer declined the transaction.
        public static let userCanceledAuthorization = Code(rawValue: "userCanceledAuthorization")
        /// The authorizer did not answer within the authorization timeout.
        public static let userAuthorizationTimedOut = Code(rawValue: "userAuthorizationTimedOut")
        /// The reader cannot do what was asked (e.g. card emulation on a reader without it).
        public static let featureUnavailable = Code(rawValue: "featureUnavailable")
        /// The host or credential is not eligible.
        public static let ineligible = Code(rawValue: "ineligible")
        /// Conditions for the call are not met.
        public static let conditionsNotSatisfied = Code(rawValue: "conditionsNotSatisfied")
        /// The credential is in a state that does not allow the call.
        public static let invalidCredentialState = Code(rawValue: "invalidCredentialState")
        /// No credential with that identity.
        public static let credentialDoesNotExist = Code(rawValue: "credentialDoesNotExist")
        /// The secure element instance (card, reader) is not there.
        public static let instanceDoesNotExist = Code(rawValue: "instanceDoesNotExist")
        /// The call is not allowed in the session's current state.
        public static let invalidSessionState = Code(rawValue: "invalidSessionState")
        /// The session is invalid: start a new one.
        public static let sessionInvalidated = Code(rawValue: "sessionInvalidated")
        /// The secure element does not support the command.
        public static let commandNotSupported = Code(rawValue: "commandNotSupported")
        /// A network failure (kept for parity; nothing here uses the network).
        public static let network = Code(rawValue: "network")
        /// The presentment intent assertion expired.
        public static let presentmentIntentAssertionTimeout = Code(rawValue: "presentmentIntentAssertionTimeout")
        /// The view is not valid (kept for parity; there are no views here).
        public static let invalidView = Code(rawValue: "invalidView")
        /// Not enough space on the secure element.
        public static let insufficientSpace = Code(rawValue: "insufficientSpace")
        /// A resource (reader, assertion slot, card) is busy or gone.
        public static let resourceUnavailable = Code(rawValue: "resourceUnavailable")
        /// A resource the call held was relinquished while it ran.
        public static let acquiredResourceRelinquished = Code(rawValue: "acquiredResourceRelinquished")
        /// The input is not valid (e.g. bytes that are not an APDU).
        public static let invalidInput = Code(rawValue: "invalidInput")
        /// An internal error.
        public static let internalError = Code(rawValue: "internalError")
        /// Ours: the card serving as secure element was removed, put back or reset by another
        /// program since the session connected it; its state (the selected application) is lost.
        public static let secureElementChanged = Code(rawValue: "secureElementChanged")

        /// Every documented code, in the order docs/session-model.md lists them.
        public static let documented: [Code] = [
            .userNotAuthorized, .accessDenied, .clientNotInForeground, .userCanceledAuthorization,
            .userAuthorizationTimedOut, .featureUnavailable, .ineligible, .conditionsNotSatisfied,
            .invalidCredentialState, .credentialDoesNotExist, .instanceDoesNotExist, .invalidSessionState,
            .sessionInvalidated, .commandNotSupported, .network, .presentmentIntentAssertionTimeout,
            .invalidView, .insufficientSpace, .resourceUnavailable, .acquiredResourceRelinquished,
            .invalidInput, .internalError,
        ]
    }

    /// Which of the documented codes this is.
    public let code: Code
    /// What went wrong and what to do, in words.
    public let reason: String
    /// The lower-layer cause (a PC/SC code, a PN532 status, a status word), when there is one.
    public let cause: UnderlyingCause?
    /// Ours: why the session became invalid, on the reason of `Event.sessionInvalidated(reason:)`;
    /// nil on errors a call throws.
    public let invalidation: InvalidationReason?

    /// An error with `code`, a reason that says what to do, and the lower-layer cause if any.
    public init(_ code: Code, _ reason: String, cause: UnderlyingCause? = nil) {
        self.init(code, reason, cause: cause, invalidation: nil)
    }

    /// An error that also says why the session became invalid (see ``invalidation``).
    public init(_ code: Code, _ reason: String, cause: UnderlyingCause? = nil, invalidation: InvalidationReason?) {
        self.code = code
        self.reason = reason
        self.cause = cause
        self.invalidation = invalidation
    }

    /// Wraps a lower-layer error: `CredentialSessionError` passes through unchanged; PC/SC codes
    /// that mean the reader or card is busy or gone become `resourceUnavailable`; everything else
    /// becomes `fallback`.
    public static func wrapping(_ error: any Error, as fallback: Code, _ context: String) -> CredentialSessionError {
        if let own = error as? CredentialSessionError { return own }
        let cause = UnderlyingCause(error)
        if case .pcsc(let code, _) = cause, Self.resourceCodes.contains(code) {
            return CredentialSessionError(.resourceUnavailable, "\(context): \(cause)", cause: cause)
        }
        return CredentialSessionError(fallback, "\(context): \(cause)", cause: cause)
    }

    /// PC/SC codes that mean "busy or gone": sharing violation, no smart card, removed card, reader
    /// unavailable, unknown reader, no service, service stopped, no readers available.
    static let resourceCodes: Set<UInt32> = [
        0x8010_000B, 0x8010_000C, 0x8010_0069, 0x8010_0017, 0x8010_0009, 0x8010_001D, 0x8010_001E, 0x8010_002E,
    ]


    /// One line: `code: reason`, and ` [cause: …]` when there is a lower-layer cause, e.g.
    /// `resourceUnavailable: opening … failed [cause: PC/SC SCARD_E_SHARING_VIOLATION (0x8010000B)]`.
    public var description: String {
        if let cause { return "\(code): \(reason) [cause: \(cause)]" }
        return "\(code): \(reason)"
    }
}
}
