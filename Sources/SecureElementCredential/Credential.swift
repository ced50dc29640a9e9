import Foundation
import ISO7816
import PN53x

/// Where a credential's applets live and answer APDUs (docs/session-model.md, "How the Apple model maps"):
/// host applets in this process (`HostSecureElement`) or a PC/SC card whose APDUs are relayed
/// (`CardSecureElement`).
///
/// The session opens the secure element when wired mode starts, sends it APDUs (`transceive`) in
/// wired mode and during card emulation, tells it when a terminal activates the emulated card
/// (`terminalActivated`), and closes it when the session returns to management. Calls never
/// overlap; implementations that block (PC/SC) run on their own `BlockingExecutor` thread.
public protocol SecureElement: AnyObject, Sendable {
    /// A short description for messages, e.g. "host applets (NFC Forum Type 4 Tag)".
    var secureElementDescription: String { get }
    /// Makes the secure element ready (connects a card). Idempotent.
    /// - Throws: `CredentialSessionError` (`resourceUnavailable` when the card or reader is busy or
    ///   gone, `instanceDoesNotExist` when it is not there).
    func open() async throws(CredentialSessionError)
    /// Sends one C-APDU and returns the R-APDU (data + SW1 SW2).
    ///
    /// `| CLA | INS | P1 | P2 | [Lc data] | [Le] |` → `| data | SW1 | SW2 |`
    /// - Throws: `CredentialSessionError` when the secure element cannot answer at all (a status
    ///   word is an answer, not an error).
    func transceive(_ command: [UInt8]) async throws(CredentialSessionError) -> [UInt8]
    /// A terminal activated the emulated card (or wired mode began): host applets forget their
    /// selection, as a card does at power-up.
    func terminalActivated() async
    /// Releases what `open()` took. Idempotent.
    func close() async
}

/// This package's older spelling of ``CredentialSession/Credential``.
public typealias Credential = CredentialSession.Credential
/// This package's older spelling of ``CredentialSession/CardEmulationOptions``.
public typealias CardEmulationOptions = CredentialSession.CardEmulationOptions

extension CredentialSession {
/// A credential (Apple's `CredentialSession.Credential`): an identity, a name, the secure element
/// that holds it and its card-emulation defaults. Two credentials are equal when their `id`s are
/// equal.
///
/// Apple's members are `identifier` (a UUID) and `state` (`installed(instances:)` with each applet
/// instance's AIDs); ours add `id` (the credential file's name for it), `displayName`, the
/// `secureElement` and `emulationDefaults` (docs/apple-api-map.md).
public struct Credential: Sendable, Hashable, CustomStringConvertible {
    /// A stable identifier, e.g. the credential file's `id`.
    public let id: String
    /// Apple's identifier: the UUID `id` spells, or one derived from `id` (``identifier(for:)``).
    public let identifier: UUID
    /// A name for people.
    public let displayName: String
    /// The secure element that answers for this credential.
    public let secureElement: any SecureElement
    /// The target parameters used when card emulation starts without options.
    public let emulationDefaults: CardEmulationOptions
    /// The installation state: always `installed(instances:)` here (a credential comes from a
    /// file and its secure element exists), with the applet instances the file names.
    public let state: State

    /// A credential named `id` whose applets `secureElement` answers.
    /// - Parameters:
    ///   - id: the stable identifier (a credential file's `id`); `identifier` derives from it.
    ///   - displayName: a name for people; default `id`.
    ///   - secureElement: the secure element that answers the credential's APDUs in wired mode and
    ///     card emulation (a PC/SC card, or host applets).
    ///   - emulationDefaults: the target parameters (UID, ATQA, SAK, historical bytes, time limit)
    ///     used when card emulation starts without options; default `CardEmulationOptions()`
    ///     (UID 08 00 B0 0B, ATQA 00 04, SAK 20).
    ///   - instances: the applet instances (AIDs) for `state`; default none listed.
    public init(
        id: String, displayName: String? = nil, secureElement: any SecureElement,
        emulationDefaults: CardEmulationOptions = CardEmulationOptions(), instances: [InstanceInfo] = []
    ) {
        self.id = id
        self.identifier = Self.identifier(for: id)
        self.displayName = displayName ?? id
        self.secureElement = secureElement
        self.emulationDefaults = emulationDefaults
        self.state = .installed(instances: instances)
    }

    /// Equal `id`s.
    public static func == (lhs: Credential, rhs: Credential) -> Bool { lhs.id == rhs.id }
    /// Hashes `id`, consistent with `==`.
    public func hash(into hasher: inout Hasher) { hasher.combine(id) }
    /// `Door badge (badge-1)`: the display name and the id.
    public var description: String { "\(displayName) (\(id))" }
}

/// How the emulated card presents itself to a terminal, and how long the emulation may last
/// (docs/session-model.md, `CardEmulationOptions`: Apple documents no members; these are ours).
///
/// The PN532 as target fixes the UID's first byte at 08 (4-byte UID only) and answers RATS itself
/// with ATS `05 75 33 92 03` + `historicalBytes` (docs/acr122-pn532.md §4).
public struct CardEmulationOptions: Sendable, Hashable, CustomStringConvertible {
    /// The UID, 08 + 3 bytes (TgInitAsTarget NFCID1t). Default 08 00 B0 0B (libnfc's example).
    public var uid: EmulatedUID
    /// ATQA (SENS_RES), default 0x0004.
    public var atqa: ATQA
    /// SAK (SEL_RES), default 20 (ISO/IEC 14443-4 compliant).
    public var sak: UInt8
    /// Historical bytes appended to the PN532's ATS, at most 48.
    public var historicalBytes: [UInt8]
    /// The emulation window; nil uses the session's (60 s by default). Never longer than it.
    public var timeLimit: Duration?
    /// What happens after a terminal released the target or left the field. Default: armed
    /// again after a 250 ms grace on the session clock, in which `endCardEmulation()` wins.
    public var afterRelease: TargetRearm

    /// These options with `afterRelease` replaced.
    public func rearming(_ afterRelease: TargetRearm) -> CardEmulationOptions {
        var copy = self
        copy.afterRelease = afterRelease
        return copy
    }

    /// Options for card emulation; every parameter has the default documented on its property.
    public init(
        uid: EmulatedUID = EmulatedUID(nfcid1t: (0x00, 0xB0, 0x0B)), atqa: ATQA = ATQA(rawValue: 0x0004),
        sak: UInt8 = 0x20, historicalBytes: [UInt8] = [], timeLimit: Duration? = nil,
        afterRelease: TargetRearm = .afterGrace(.milliseconds(250))
    ) {
        self.uid = uid
        self.atqa = atqa
        self.sak = sak
        self.historicalBytes = historicalBytes
        self.timeLimit = timeLimit
        self.afterRelease = afterRelease
    }

    /// `UID 08 00 B0 0B, ATQA 00 04, SAK 20`, and the historical bytes and time limit when set.
    public var description: String {
        var parts = ["UID \(uid)", "ATQA \(atqa)", "SAK \([sak].hexString)"]
        if !historicalBytes.isEmpty { parts.append("historical bytes \(historicalBytes.hexString)") }
        if let timeLimit { parts.append("time limit \(timeLimit)") }
        return parts.joined(separator: ", ")
    }
}
}

/// Whether card emulation arms the target again for the next terminal.
///
/// Arming is a TgInitAsTarget that the ACR122U cannot cancel: it blocks until a terminal comes or
/// the MCU timeout passes (5 s by default, docs/acr122-pn532.md §5). An `endCardEmulation()` that
/// arrives just after the re-arm therefore waits out that step; the grace lets it win first, and
/// `.never` avoids the step altogether when one terminal is all the app wants.
public enum TargetRearm: Sendable, Hashable {
    /// Arm again once `grace` (session clock) has passed without `endCardEmulation()`.
    case afterGrace(Duration)
    /// Do not arm again: the window stays open with the PN532 idle, until `endCardEmulation()`,
    /// `invalidate()` or the window's end, all of which then restore the reader at once.
    case never
}
