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

    /// The fields as given: `uid` (4, 7 or 10 bytes), `atqa` most significant byte first, `sak`.
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
    /// The C-APDUs received, the latest ``logCapacity`` of them.
    private let log = Mutex(BoundedLog<[UInt8]>(capacity: ISO14443_4Card.logCapacity))
    /// How many C-APDUs a card keeps for ``receivedAPDUs``: 4096 (a few hundred kilobytes at most);
    /// older ones are counted in ``receivedLog``'s `dropped`.
    public static let logCapacity = 4096
    /// The card leaves the field while it answers its `leavesAfter`-th C-APDU (the answer is lost):
    /// a card pulled away mid-exchange. nil: it stays.
    public let leavesAfter: Int?

    /// - Parameters:
    ///   - uid: 4, 7 or 10 bytes.
    ///   - atqa: most significant byte first, default 0x0004.
    ///   - sak: default 0x20 (ISO/IEC 14443-4 compliant).
    ///   - ats: the whole ATS, TL first; default `05 78 80 70 02` (TL 05, FSCI 8, no historical bytes).
    ///   - handler: answers one C-APDU with one R-APDU (SW1-SW2 included).
    ///   - leavesAfter: the card leaves the field during this C-APDU (1 = the first); nil stays.
    public convenience init(
        uid: [UInt8], atqa: UInt16 = 0x0004, sak: UInt8 = 0x20, ats: [UInt8] = [0x05, 0x78, 0x80, 0x70, 0x02],
        leavesAfter: Int? = nil, handler: @escaping @Sendable ([UInt8]) -> [UInt8]
    ) {
        self.init(
            identity: TypeAIdentity(uid: uid, atqa: atqa, sak: sak), ats: ats, replay: nil, leavesAfter: leavesAfter,
            handler: handler)
    }

    private init(
        identity: TypeAIdentity, ats: [UInt8], replay: TranscriptResponder?, leavesAfter: Int? = nil,
        handler: @escaping @Sendable ([UInt8]) -> [UInt8]
    ) {
        self.identity = identity
        self.ats = ats
        self.replay = replay
        self.leavesAfter = leavesAfter
        self.handler = handler
    }

    /// A card that answers from a transcript's channel-layer lines (`>` / `<`), in order, as
    /// `ReplayChannel` plays them. A command that does not match the recording is answered
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

    /// A card that answers from a checked transcript file's channel-layer lines (`>` / `<`), in
    /// order, as `ReplayChannel` plays them, reading the file as the APDUs come: memory does not
    /// grow with the file (a read buffer and the exchange the host is at). A command that does not
    /// match the recording is answered `6F 00`, and the mismatch is kept in ``replayErrors``.
    /// - Parameters:
    ///   - uid: 4, 7 or 10 bytes.
    ///   - atqa: most significant byte first, default 0x0004.
    ///   - sak: default 0x20 (ISO/IEC 14443-4 compliant).
    ///   - ats: the whole ATS, TL first; default `05 78 80 70 02`.
    ///   - transcriptFile: the file, checked when it was opened; its `channelID` is replayed.
    /// - Throws: `ReplayError` `unreadable` when the file no longer opens.
    public convenience init(
        uid: [UInt8], atqa: UInt16 = 0x0004, sak: UInt8 = 0x20, ats: [UInt8] = [0x05, 0x78, 0x80, 0x70, 0x02],
        transcriptFile: TranscriptReplayFile
    ) throws(ReplayError) {
        let replay = TranscriptResponder(try ReplayChannel(file: transcriptFile, transmissionProtocol: .t1))
        self.init(
            identity: TypeAIdentity(uid: uid, atqa: atqa, sak: sak), ats: ats, replay: replay,
            handler: { replay.answer($0) })
    }

    private let replay: TranscriptResponder?

    /// Mismatches met while answering from a transcript, oldest first.
    public var replayErrors: [String] { replay?.errors ?? [] }

    /// The C-APDUs the card received, oldest first: every one, or the latest ``logCapacity``.
    public var receivedAPDUs: [[UInt8]] { log.withLock { $0.elements } }

    /// The log as it stands (one consistent reading): the kept C-APDUs, how many were received in
    /// all (``BoundedLog/total``) and how many of them are no longer kept (``BoundedLog/dropped``).
    public var receivedLog: BoundedLog<[UInt8]> { log.withLock { $0 } }

    /// The ATS historical bytes T1…Tk (after TL, T0 and the interface bytes T0 announces), or []
    /// when the ATS is too short to hold any.
    public var historicalBytes: [UInt8] { ATSLayout.historicalBytes(of: ats) }

    public var peerDescription: String { "ISO 14443-4 card \(identity.uid.hexString)" }

    /// The R-APDU, or nil when the card leaves the field during this command (``leavesAfter``).
    func answer(_ apdu: [UInt8]) -> [UInt8]? {
        let count = log.withLock { log in
            log.append(apdu)
            return log.total
        }
        if let leavesAfter, count >= leavesAfter { return nil }
        return handler(apdu)
    }
}

/// Answers APDUs from a transcript replay (the replay channel is not Sendable: it lives behind a
/// mutex).
final class TranscriptResponder: Sendable {
    private let channel: Mutex<ReplayChannel>
    /// The latest mismatches (a replay that went wrong early mismatches on every later APDU).
    private let failures = Mutex(BoundedLog<String>(capacity: 256))

    init(_ channel: sending ReplayChannel) {
        self.channel = Mutex(channel)
    }

    var errors: [String] {
        failures.withLock { log in
            log.dropped == 0 ? log.elements : ["(\(log.dropped) earlier mismatches dropped)"] + log.elements
        }
    }

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
/// InDataExchange of an APDU to it gets status 01 (timeout) from a plain tag, as the PN532 reports
/// a mute target, and status 13 from a tag with memory (the tag NAKs an unknown command).
///
/// Three kinds, by initialiser:
/// - ``init(uid:atqa:sak:cardName:mifareKey:)``: no memory. A MIFARE Classic authentication
///   (`60`/`61` block key UID) succeeds when the UID matches and the key equals ``mifareKey`` (any
///   key when nil); nothing else is answered.
/// - ``init(type2:uid:ndefMessage:)``: an NFC Forum Type 2 tag with memory (``Type2TagMemory``):
///   READ 30, WRITE A2, GET_VERSION 60.
/// - ``init(classic:uid:keyA:keyB:)``: a MIFARE Classic card with sectors, keys and access
///   conditions (``MIFAREClassicMemory``): AUTH 60/61, READ 30, WRITE A0.
///
/// How the PN532 reports what the tag did (InDataExchange `D4 40 Tg cmd…` → `D5 41 Status data`;
/// UM0701-02 §7.3.8): a data frame → status 00 and the data; the 4-bit ACK → status 00 and no data;
/// a 4-bit NAK → status 13 (decision, after libnfc: its mifare.c reads a NAK to a READ/WRITE the
/// access bits forbid as "Invalid received frame", EINVRXFRAM = 13h; UM0701-02 gives no code for a
/// NAK); a failed MIFARE authentication → status 14; silence → status 01.
public final class ISO14443_3Tag: FieldPeer {
    /// What the tag answers during ISO/IEC 14443-3 activation: UID, ATQA and SAK.
    public let identity: TypeAIdentity
    /// The PC/SC part 3 card name bytes C0 C1 of the storage-card ATR (ACR122U API v2.04 §3.1):
    /// 00 01 MIFARE 1K, 00 02 MIFARE 4K, 00 03 Ultralight, 00 26 Mini, `FF SAK` for a SAK the
    /// reader has no name for.
    public let cardName: UInt16
    /// The key a MIFARE Classic authentication must present (6 bytes), nil for any key. Used by
    /// tags without memory only.
    public let mifareKey: [UInt8]?
    private let storage: Mutex<StorageCardMemory>
    /// The commands on air received so far, and the one during which the tag leaves the field.
    private let tearing = Mutex<(received: Int, leavesAt: Int?)>((0, nil))

    /// A tag without memory.
    /// - Parameters:
    ///   - uid: 4, 7 or 10 bytes.
    ///   - atqa: most significant byte first; default 0x0004 (MIFARE Classic 1K).
    ///   - sak: default 0x08 (MIFARE Classic 1K); 0x00 for Ultralight/NTAG.
    ///   - cardName: default derived from the SAK: 08 → 0001, 18 → 0002, 09 → 0026, 00 → 0003,
    ///     any other SAK → FF followed by the SAK.
    ///   - mifareKey: the 6-byte key an authentication must present; nil accepts any key.
    public init(uid: [UInt8], atqa: UInt16 = 0x0004, sak: UInt8 = 0x08, cardName: UInt16? = nil, mifareKey: [UInt8]? = nil) {
        identity = TypeAIdentity(uid: uid, atqa: atqa, sak: sak)
        self.cardName = cardName ?? Self.cardName(forSAK: sak)
        self.mifareKey = mifareKey
        storage = Mutex(.none)
    }

    /// An NFC Forum Type 2 tag (NTAG213/215/216, MIFARE Ultralight) with memory: ATQA 0x0044, SAK
    /// 00, ATR card name 00 03 (NTAG21x data sheet §8.4, PC/SC part 3).
    /// - Parameters:
    ///   - model: the tag type (page count, CC, GET_VERSION).
    ///   - uid: exactly 7 bytes.
    ///   - ndefMessage: NDEF message bytes written as `03 len msg FE` from page 4; nil for an empty
    ///     NDEF tag (`03 00 FE`).
    /// - Throws: ``StorageCardError`` for a UID that is not 7 bytes or a message too large.
    public init(type2 model: Type2TagModel, uid: [UInt8], ndefMessage: [UInt8]? = nil) throws(StorageCardError) {
        let memory = try Type2TagMemory(model: model, uid: uid, ndefMessage: ndefMessage)
        identity = TypeAIdentity(uid: uid, atqa: 0x0044, sak: 0x00)
        cardName = 0x0003
        mifareKey = nil
        storage = Mutex(.type2(memory))
    }

    /// A MIFARE Classic card (Mini, 1K, 4K) with sectors, keys and access conditions; ATQA, SAK
    /// and card name from the model (``MIFAREClassicModel``).
    /// - Parameters:
    ///   - model: Mini, 1K or 4K.
    ///   - uid: 4 or 7 bytes.
    ///   - keyA: 6 bytes, set in every sector trailer; default FF FF FF FF FF FF.
    ///   - keyB: 6 bytes, set in every sector trailer; default FF FF FF FF FF FF.
    /// - Throws: ``StorageCardError`` for a bad UID or key length.
    public init(classic model: MIFAREClassicModel, uid: [UInt8],
                keyA: [UInt8] = MIFAREClassicMemory.transportKey,
                keyB: [UInt8] = MIFAREClassicMemory.transportKey) throws(StorageCardError) {
        let memory = try MIFAREClassicMemory(model: model, uid: uid, keyA: keyA, keyB: keyB)
        identity = TypeAIdentity(uid: uid, atqa: model.atqa(uidLength: uid.count), sak: model.sak)
        cardName = model.cardName
        mifareKey = nil
        storage = Mutex(.classic(memory))
    }

    /// The card name bytes the ACR122U puts in the storage-card ATR for a SAK: 08 → 00 01, 18 →
    /// 00 02, 09 → 00 26, 00 → 00 03; a SAK it has no name for → `FF SAK`, as pcsc-tools'
    /// smartcard_list.txt records from readers (`… 03 FF 88 …` for SAK 88, `… 03 FF 28 …` for
    /// SAK 28; docs/acr122-pn532.md §3).
    static func cardName(forSAK sak: UInt8) -> UInt16 {
        switch sak {
        case 0x08: 0x0001
        case 0x18: 0x0002
        case 0x09: 0x0026
        case 0x00: 0x0003
        default: 0xFF00 | UInt16(sak)
        }
    }

    /// The tag's memory now (for a Classic card: keys included; show ``displayBytes`` instead of
    /// printing it).
    public var memory: StorageCardMemory { storage.withLock { $0 } }

    /// Whether the tag has memory (a Type 2 tag or a MIFARE Classic card).
    public var hasMemory: Bool {
        if case .none = memory { return false }
        return true
    }

    /// The memory as bytes for display: Type 2 pages as stored; Classic blocks with both keys of
    /// every trailer shown as 00 bytes (keys never leave the simulator as text); [] without memory.
    public var displayBytes: [UInt8] {
        switch memory {
        case .none: []
        case .type2(let m): m.bytes
        case .classic(let m): m.bytesWithKeysMasked
        }
    }

    public var peerDescription: String {
        switch memory {
        case .none: "ISO 14443-3 tag \(identity.uid.hexString) SAK \([identity.sak].hexString)"
        case .type2(let m): "\(m.model.productName) \(identity.uid.hexString)"
        case .classic(let m): "\(m.model.productName) \(identity.uid.hexString)"
        }
    }

    /// Makes a tag with memory leave the field during its `count`-th command on air from now
    /// (1: the next one): a tag pulled away in the middle of a write. The command it leaves during
    /// is lost (no page or block written, no answer); every command before it took effect, as on a
    /// real tag whose write of one page or block completes or does not happen (decision: the
    /// partial page a tear within one WRITE's EEPROM cycle can leave is not modelled; NTAG21x data
    /// sheet §9.3 gives a page write as one programming cycle). The reader sees the tag go as if
    /// it had been removed; `tag-memory` still reads it.
    /// - Parameter count: 1 or more; nil: the tag stays.
    public func leave(duringCommand count: Int?) {
        tearing.withLock { state in state.leavesAt = count.map { state.received + max(1, $0) } }
    }

    /// How many commands on air (READ, WRITE, GET_VERSION, an authentication, …) the tag has
    /// received, the one it left during included.
    public var commandsReceived: Int { tearing.withLock { $0.received } }

    /// One command on air, for tags with memory (nil for a tag without memory); ``TagAnswer/left``
    /// when the tag leaves the field during it (``leave(duringCommand:)``).
    func transceive(_ command: [UInt8]) -> TagAnswer? {
        if hasMemory {
            let leaves = tearing.withLock { state -> Bool in
                state.received += 1
                return state.leavesAt.map { state.received >= $0 } ?? false
            }
            if leaves { return .left }
        }
        return storage.withLock { memory -> TagAnswer? in
            switch memory {
            case .none: return nil
            case .type2(var m):
                let answer = m.transceive(command)
                memory = .type2(m)
                return answer
            case .classic(var m):
                let answer = m.transceive(command)
                memory = .classic(m)
                return answer
            }
        }
    }

    /// Forgets a MIFARE Classic authentication (the tag was activated anew).
    func resetSession() {
        storage.withLock { memory in
            if case .classic(var m) = memory {
                m.resetAuthentication()
                memory = .classic(m)
            }
        }
    }

    /// Whether the tag is a MIFARE Classic card with memory.
    var isClassic: Bool {
        if case .classic = memory { return true }
        return false
    }
}
