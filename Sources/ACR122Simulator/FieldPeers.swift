import ISO7816
import Synchronization
import Transcript

/// Something that can be placed in a ``SimulatedField``: a card, a tag or an external terminal.
///
/// Peers are reference types: the same peer object is placed, observed and removed. Their own
/// state is guarded by their own lock, so they can be read from any thread.
public protocol FieldPeer: AnyObject, Sendable {
    /// A short text naming the peer in field events, e.g. "ISO 14443-4 card 04 A1 B2 C3".
    var peerDescription: String { get }
}

/// The answer-to-select fields every Type A peer presents during ISO/IEC 14443-3 activation.
public struct TypeAIdentity: Sendable, Hashable {
    /// The UID: 4, 7 or 10 bytes (ISO/IEC 14443-3 §6.5.4).
    public var uid: [UInt8]
    /// ATQA (SENS_RES) as libnfc prints it, most significant byte first: 0x0004 for MIFARE Classic
    /// (on air `04 00`), 0x0344 for DESFire (on air `44 03`).
    public var atqa: UInt16
    /// SAK (SEL_RES): bit 0x20 = ISO/IEC 14443-4 compliant, 0x08 MIFARE Classic 1K, 0x00 Ultralight.
    public var sak: UInt8

    public init(uid: [UInt8], atqa: UInt16, sak: UInt8) {
        self.uid = uid
        self.atqa = atqa
        self.sak = sak
    }
}

/// An ISO/IEC 14443-4 (ISO-DEP) Type A card answering APDUs: a contactless smart card or a phone
/// in host card emulation.
///
/// The card answers each C-APDU with its handler (or the next recorded answer of a transcript). A
/// reader reaches it with InDataExchange (PN532 UM0701-02 §7.3.8) or, with automatic polling, with
/// plain SCardTransmit (ACR122U API v2.04 §4). The handler is called with the field locked: it must
/// return promptly and must not call back into the field or a simulated reader.
public final class ISO14443_4Card: FieldPeer {
    /// UID, ATQA, SAK (SAK should have bit 0x20).
    public let identity: TypeAIdentity
    /// The whole ATS, TL included (ISO/IEC 14443-4 §5.2), e.g. `06 75 77 81 02 80` for DESFire.
    public let ats: [UInt8]
    private let handler: @Sendable ([UInt8]) -> [UInt8]
    private let log = Mutex<[[UInt8]]>([])

    /// - Parameters:
    ///   - uid: 4, 7 or 10 bytes.
    ///   - atqa: most significant byte first, default 0x0004.
    ///   - sak: default 0x20 (ISO/IEC 14443-4 compliant).
    ///   - ats: the whole ATS, TL first; default `05 78 80 70 02` (TL 05, FSCI 8, no historical bytes).
    ///   - handler: answers one C-APDU with one R-APDU (SW1-SW2 included).
    public convenience init(
        uid: [UInt8], atqa: UInt16 = 0x0004, sak: UInt8 = 0x20, ats: [UInt8] = [0x05, 0x78, 0x80, 0x70, 0x02],
        handler: @escaping @Sendable ([UInt8]) -> [UInt8]
    ) {
        self.init(identity: TypeAIdentity(uid: uid, atqa: atqa, sak: sak), ats: ats, replay: nil, handler: handler)
    }

    private init(
        identity: TypeAIdentity, ats: [UInt8], replay: TranscriptResponder?,
        handler: @escaping @Sendable ([UInt8]) -> [UInt8]
    ) {
        self.identity = identity
        self.ats = ats
        self.replay = replay
        self.handler = handler
    }

    /// A card that answers from a transcript's channel-layer lines (`>` / `<`), in order, as
    /// ``ReplayChannel`` plays them. A command that does not match the recording is answered
    /// `6F 00` (no precise diagnosis), and the mismatch is kept in ``replayErrors``.
    public convenience init(
        uid: [UInt8], atqa: UInt16 = 0x0004, sak: UInt8 = 0x20, ats: [UInt8] = [0x05, 0x78, 0x80, 0x70, 0x02],
        transcript: Transcript, channel: String? = nil
    ) {
        let replay = TranscriptResponder(ReplayChannel(transcript, channel: channel, transmissionProtocol: .t1))
        self.init(
            identity: TypeAIdentity(uid: uid, atqa: atqa, sak: sak), ats: ats, replay: replay,
            handler: { replay.answer($0) })
    }

    private let replay: TranscriptResponder?

    /// Mismatches met while answering from a transcript, oldest first.
    public var replayErrors: [String] { replay?.errors ?? [] }

    /// Every C-APDU the card received, oldest first.
    public var receivedAPDUs: [[UInt8]] { log.withLock { $0 } }

    /// The ATS historical bytes T1…Tk (after TL, T0 and the interface bytes T0 announces), or []
    /// when the ATS is too short to hold any.
    public var historicalBytes: [UInt8] { ATSLayout.historicalBytes(of: ats) }

    public var peerDescription: String { "ISO 14443-4 card \(identity.uid.hexString)" }

    func answer(_ apdu: [UInt8]) -> [UInt8] {
        log.withLock { $0.append(apdu) }
        return handler(apdu)
    }
}

/// Answers APDUs from a transcript replay (the replay channel is not Sendable: it lives behind a
/// mutex).
final class TranscriptResponder: Sendable {
    private let channel: Mutex<ReplayChannel>
    private let failures = Mutex<[String]>([])

    init(_ channel: sending ReplayChannel) {
        self.channel = Mutex(channel)
    }

    var errors: [String] { failures.withLock { $0 } }

    func answer(_ apdu: [UInt8]) -> [UInt8] {
        let result: Result<[UInt8], any Error> = channel.withLock { replay in
            Result { try replay.transmit(apdu) }
        }
        switch result {
        case .success(let answer): return answer
        case .failure(let error):
            failures.withLock { $0.append(String(describing: error)) }
            return [0x6F, 0x00]
        }
    }
}

/// Reads an ATS: `| TL | T0 | [TA(1)] | [TB(1)] | [TC(1)] | T1 … Tk |` (ISO/IEC 14443-4 §5.2).
enum ATSLayout {
    /// The historical bytes; [] for an ATS of TL only or one cut short.
    static func historicalBytes(of ats: [UInt8]) -> [UInt8] {
        guard ats.count >= 2 else { return [] }
        let length = min(Int(ats[0]), ats.count)
        let t0 = ats[1]
        var index = 2
        for bit in [UInt8(0x10), 0x20, 0x40] where t0 & bit != 0 { index += 1 }
        guard index < length else { return [] }
        return Array(ats[index..<length])
    }
}

/// An ISO/IEC 14443-3 Type A tag without ISO-DEP: MIFARE Classic, Ultralight, NTAG.
///
/// It answers anticollision, so InListPassiveTarget finds it, but it has no ISO 14443-4 layer:
/// InDataExchange of an APDU to it gets status 01 (timeout), as the PN532 reports a mute target.
/// A MIFARE Classic authentication (`60`/`61` block key UID) succeeds when the UID matches and the
/// key equals ``mifareKey`` (any key when nil); nothing else of MIFARE Classic is modelled.
public final class ISO14443_3Tag: FieldPeer {
    public let identity: TypeAIdentity
    /// The PC/SC part 3 card name bytes C0 C1 of the storage-card ATR (ACR122U API v2.04 §3.1):
    /// 00 01 MIFARE 1K, 00 02 MIFARE 4K, 00 03 Ultralight, 00 26 Mini.
    public let cardName: UInt16
    /// The key a MIFARE Classic authentication must present (6 bytes), nil for any key.
    public let mifareKey: [UInt8]?

    /// - Parameters:
    ///   - uid: 4, 7 or 10 bytes.
    ///   - atqa: most significant byte first; default 0x0004 (MIFARE Classic 1K).
    ///   - sak: default 0x08 (MIFARE Classic 1K); 0x00 for Ultralight/NTAG.
    ///   - cardName: default derived from the SAK: 08 → 0001, 18 → 0002, 09 → 0026, else 0003.
    public init(uid: [UInt8], atqa: UInt16 = 0x0004, sak: UInt8 = 0x08, cardName: UInt16? = nil, mifareKey: [UInt8]? = nil) {
        identity = TypeAIdentity(uid: uid, atqa: atqa, sak: sak)
        self.cardName = cardName ?? Self.cardName(forSAK: sak)
        self.mifareKey = mifareKey
    }

    static func cardName(forSAK sak: UInt8) -> UInt16 {
        switch sak {
        case 0x08, 0x88: 0x0001
        case 0x18: 0x0002
        case 0x09: 0x0026
        default: 0x0003
        }
    }

    public var peerDescription: String { "ISO 14443-3 tag \(identity.uid.hexString) SAK \([identity.sak].hexString)" }
}
