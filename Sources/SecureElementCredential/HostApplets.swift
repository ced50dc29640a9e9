import ISO7816
import Synchronization

/// An AID an applet answers to: exactly, or as a prefix (Android's `AID*` registration: any
/// selected AID that starts with these bytes).
public struct AIDRegistration: Sendable, Hashable, CustomStringConvertible {
    /// The AID bytes, 5 to 16 (ISO/IEC 7816-4 §8.2.1.2).
    public var bytes: [UInt8]
    /// Whether any selected AID starting with `bytes` matches.
    public var isPrefix: Bool

    /// - Throws: `ISO7816Error` `valueOutOfRange` unless 5…16 bytes.
    public init(_ bytes: [UInt8], isPrefix: Bool = false) throws(ISO7816Error) {
        _ = try AID(bytes)
        self.bytes = bytes
        self.isPrefix = isPrefix
    }

    init(unchecked bytes: [UInt8], isPrefix: Bool = false) {
        self.bytes = bytes
        self.isPrefix = isPrefix
    }

    /// Parses `"F0 01 02 03 04"` or, with a trailing `*`, a prefix `"F0 01 02 03 04*"`.
    public init(text: String) throws(ISO7816Error) {
        var body = Substring(text)
        let prefix = body.hasSuffix("*")
        if prefix { body = body.dropLast() }
        try self.init(HexBytes.parse(String(body)), isPrefix: prefix)
    }

    /// `F0 53 42 41 44 47 45`, with `*` for a prefix.
    public var description: String { bytes.hexString + (isPrefix ? "*" : "") }
}

/// An applet that answers APDUs in this process (host card emulation, like Android's
/// `HostApduService`). The router (`HostSecureElement`) handles SELECT by AID and hands the
/// applet the commands that follow. Applets are used from one task at a time (the router's lock).
public protocol HostApplet: AnyObject {
    /// A name for messages.
    var name: String { get }
    /// The AIDs that select this applet.
    var aids: [AIDRegistration] { get }
    /// The SELECT by AID (`00 A4 04 P2 Lc AID [Le]`) that chose this applet; its answer.
    func select(_ command: CommandAPDU) -> ResponseAPDU
    /// Any later command while this applet is selected.
    func process(_ command: CommandAPDU) -> ResponseAPDU
    /// Another applet was selected, or the terminal went away.
    func deselect()
}

/// Routes C-APDUs to host applets by AID (ISO/IEC 7816-4 §11.2.2; Android HCE routing).
///
/// - SELECT by DF name (`CLA 00–7F, INS A4, P1 04`): an applet registered with exactly that AID,
///   else the one with the longest prefix registration the AID starts with, else one whose AID
///   starts with the requested bytes (selection by partial DF name). None: 6A 82, and the current
///   selection stays.
/// - Other commands go to the selected applet. With none selected: 6A 82 for SELECT by file,
///   6D 00 otherwise (a polite answer to a probe such as `90 60 00 00 00`).
/// - Bytes that are not a command APDU: 67 00.
public struct AppletRouter {
    /// The applets, in the order they were given.
    public private(set) var applets: [any HostApplet]
    private var selected: Int?

    /// Routes to `applets`; the first whose AID matches a SELECT wins.
    public init(applets: [any HostApplet]) {
        self.applets = applets
    }

    /// The applet currently selected.
    public var selectedApplet: (any HostApplet)? { selected.map { applets[$0] } }

    /// Answers one C-APDU.
    public mutating func route(_ bytes: [UInt8]) -> [UInt8] {
        guard let command = try? CommandAPDU(parsing: bytes) else { return StatusWord.wrongLength.bytes }
        if command.cla & 0x80 == 0, command.ins == 0xA4, command.p1 == 0x04 {
            guard let index = match(command.data) else { return StatusWord.fileNotFound.bytes }
            if let current = selected, current != index { applets[current].deselect() }
            selected = index
            return applets[index].select(command).serialized()
        }
        if let current = selected { return applets[current].process(command).serialized() }
        if command.ins == 0xA4 { return StatusWord.fileNotFound.bytes }
        return StatusWord.insNotSupported.bytes
    }

    /// Forgets the selection (a terminal activated the card, or wired mode began).
    public mutating func reset() {
        if let current = selected { applets[current].deselect() }
        selected = nil
    }

    private func match(_ aid: [UInt8]) -> Int? {
        guard !aid.isEmpty else { return nil }
        for (i, applet) in applets.enumerated() where applet.aids.contains(where: { !$0.isPrefix && $0.bytes == aid }) {
            return i
        }
        var best: (index: Int, length: Int)?
        for (i, applet) in applets.enumerated() {
            for registration in applet.aids where registration.isPrefix && aid.starts(with: registration.bytes) {
                if registration.bytes.count > (best?.length ?? -1) { best = (i, registration.bytes.count) }
            }
        }
        if let best { return best.index }
        for (i, applet) in applets.enumerated() where applet.aids.contains(where: { !$0.isPrefix && $0.bytes.starts(with: aid) }) {
            return i
        }
        return nil
    }
}

/// Host applets as a secure element: in-process, AID-routed (docs/session-model.md, "SecureElement").
public final class HostSecureElement: SecureElement, @unchecked Sendable {
    // @unchecked: the applets are classes with their own state, touched only under `lock`.
    private let lock = Mutex(())
    private var router: AppletRouter

    /// Routes to `applets`; the first whose AID matches a SELECT wins.
    public init(applets: [any HostApplet]) {
        router = AppletRouter(applets: applets)
    }

    /// `host applets (<names>)`.
    public var secureElementDescription: String {
        "host applets (" + router.applets.map(\.name).joined(separator: ", ") + ")"
    }

    /// The applets, in routing order.
    public var applets: [any HostApplet] { lock.withLock { _ in router.applets } }

    /// Nothing to open: the applets live in this process.
    public func open() async throws(CredentialSessionError) {}

    /// The router's answer to one C-APDU, SW1 SW2 included; never throws.
    public func transceive(_ command: [UInt8]) async throws(CredentialSessionError) -> [UInt8] {
        lock.withLock { _ in router.route(command) }
    }

    /// Forgets the selection, as a card does at power-up.
    public func terminalActivated() async {
        lock.withLock { _ in router.reset() }
    }

    /// Forgets the selection.
    public func close() async {
        lock.withLock { _ in router.reset() }
    }
}
