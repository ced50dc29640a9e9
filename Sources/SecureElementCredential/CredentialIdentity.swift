import Foundation

extension CredentialSession.Credential {
    /// A credential's installation state (Apple's `CredentialSession.Credential.State`).
    public enum State: Sendable, Hashable, CustomStringConvertible {
        /// Provisioning was requested and has not finished (never the case here).
        case installationPending
        /// Installation failed (never the case here).
        case installationFailed
        /// Installed, with the applet instances that belong to the credential.
        case installed(instances: [InstanceInfo])

        /// `installationPending`, `installationFailed` or `installed(<n> instances)`.
        public var description: String {
            switch self {
            case .installationPending: "installationPending"
            case .installationFailed: "installationFailed"
            case .installed(let instances): "installed(\(instances.count) instance\(instances.count == 1 ? "" : "s"))"
            }
        }
    }

    /// An applet instance of a credential (Apple's `CredentialSession.Credential.InstanceInfo`): its
    /// AIDs (ISO/IEC 7816-4 §8.2.1.2, 5 to 16 bytes each) and where it lives.
    public struct InstanceInfo: Sendable, Hashable, CustomStringConvertible {
        /// Where an instance lives. Apple's cases are not in the public pages this package rests
        /// on; these are this host's two kinds of secure element (docs/apple-api-map.md).
        public enum InstanceType: String, Sendable, Hashable {
            /// An applet in this process (`HostSecureElement`).
            case hostApplet
            /// An applet on a PC/SC card whose APDUs are relayed (`CardSecureElement`).
            case pcscCard
        }

        /// The AID the instance is selected by.
        public let instanceAID: Data
        /// The AID of the package the instance was installed from (empty when unknown).
        public let packageAID: Data
        /// The AID of the module inside that package (empty when unknown).
        public let moduleAID: Data
        /// Where the instance lives.
        public let instanceType: InstanceType

        /// An instance selected by `instanceAID`.
        public init(instanceAID: Data, packageAID: Data = Data(), moduleAID: Data = Data(), instanceType: InstanceType) {
            self.instanceAID = instanceAID
            self.packageAID = packageAID
            self.moduleAID = moduleAID
            self.instanceType = instanceType
        }

        /// `hostApplet D2 76 00 00 85 01 01`.
        public var description: String { "\(instanceType.rawValue) \(Array(instanceAID).hexString)" }
    }

    /// The UUID for a credential id: the id itself when it is a UUID string
    /// (`6F1C…-…`), otherwise a name-based UUID of version 8 (RFC 9562 §5.8: the layout is ours)
    /// whose 122 free bits are two 64-bit FNV-1a hashes of the id's UTF-8 bytes. The same id gives
    /// the same UUID in every process and release.
    public static func identifier(for id: String) -> UUID {
        if let uuid = UUID(uuidString: id) { return uuid }
        func fnv1a(_ basis: UInt64) -> UInt64 {
            var hash = basis
            for byte in id.utf8 {
                hash ^= UInt64(byte)
                hash &*= 0x0000_0100_0000_01B3
            }
            return hash
        }
        var bytes = withUnsafeBytes(of: fnv1a(0xCBF2_9CE4_8422_2325).bigEndian, Array.init)
            + withUnsafeBytes(of: fnv1a(0x6C62_272E_07BB_0142).bigEndian, Array.init)
        bytes[6] = (bytes[6] & 0x0F) | 0x80  // version 8
        bytes[8] = (bytes[8] & 0x3F) | 0x80  // variant 10 (RFC 9562 §4.1)
        return UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                           bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
    }
}
