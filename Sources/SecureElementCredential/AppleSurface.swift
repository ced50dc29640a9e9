import Foundation

extension CredentialSession {
    /// An applet's event during card emulation (Apple's `CredentialSession.ConnectivityEvent`):
    /// the instance AID and the data it received. On iOS these come from the secure element's
    /// applets; a Linux host with a PC/SC reader has no such channel, so the session never emits
    /// `Event.connectivityEvent(_:)` (docs/apple-api-map.md). Reader events are ``ReaderEvent``.
    public struct ConnectivityEvent: Sendable, Hashable, CustomStringConvertible {
        /// The AID of the applet instance the event is for (ISO/IEC 7816-4 §8.2.1.2, 5 to 16 bytes).
        public let instanceApplicationIdentifier: Data
        /// The event's data.
        public let data: Data

        /// An event for the applet instance `instanceApplicationIdentifier`.
        public init(instanceApplicationIdentifier: Data, data: Data) {
            self.instanceApplicationIdentifier = instanceApplicationIdentifier
            self.data = data
        }

        /// `AID <hex>: <hex>`.
        public var description: String {
            "AID \(Array(instanceApplicationIdentifier).hexString): \(Array(data).hexString)"
        }
    }

    /// Information about the secure element hardware (Apple's `CredentialSession.SecureElementInfo`,
    /// iOS 18.4): the platform signing certificate of its controlling authority security domain.
    /// A host applet or a PC/SC card has no such certificate: ``CredentialSession/secureElementInfo``
    /// throws `featureUnavailable` (docs/apple-api-map.md).
    public struct SecureElementInfo: Sendable, Hashable {
        /// The certificate (DER) to authenticate the secure element platform with.
        public let secureElementPlatformSigningCertificate: Data

        /// Information carrying `secureElementPlatformSigningCertificate`.
        public init(secureElementPlatformSigningCertificate: Data) {
            self.secureElementPlatformSigningCertificate = secureElementPlatformSigningCertificate
        }
    }
}

extension InvalidationReason {
    /// The reason as Apple's `Event.sessionInvalidated(reason:)` carries it: `sessionInvalidated`
    /// for `invalidate()` and the wired idle rule, `resourceUnavailable` for a lost reader; the
    /// error's `invalidation` is this reason, its text this reason's description.
    public var errorCode: CredentialSession.ErrorCode {
        switch self {
        case .invalidatedByClient, .wiredIdleTimeout:
            CredentialSession.ErrorCode(.sessionInvalidated, description, invalidation: self)
        case .readerLost:
            CredentialSession.ErrorCode(.resourceUnavailable, description, invalidation: self)
        }
    }
}
