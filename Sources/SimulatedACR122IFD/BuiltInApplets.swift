import ACR122Simulator
import Synchronization

/// The card applications a placed ISO/IEC 14443-4 card can run (`place-card applet=<name>`).
package enum BuiltInApplet: String, CaseIterable, Sendable {
    /// An NFC Forum Type 4 Tag (mapping 2.0) holding the worked example of docs/iso14443-t4t-ndef.md §4:
    /// capability container E103 `00 0F 20 00 7F 00 7F 04 06 E1 04 04 00 00 00`, NDEF file E104
    /// holding a URI record for https://example.com. It answers what the Android and iOS reads send.
    case t4tNDEF = "t4t-ndef"
    /// A strict NFC Forum Type 4 Tag of mapping 1.0: only the 1.0 AID `D2 76 00 00 85 01 00`
    /// (the 2.0 AID gets 6A 82), CC version 10, and file SELECTs with P2 00 only (P2 0C gets 6A 86),
    /// holding the same URI record; what AOSP's fallback to 1.0 reads (docs/iso14443-t4t-ndef.md §4).
    case t4tNDEFVersion1 = "t4t-ndef-v1"
    /// Answers every C-APDU with `90 00`.
    case ok = "ok"
    /// Answers a C-APDU with its own bytes followed by `90 00` (for transport tests).
    case echo = "echo"
    /// A mute card: answers every C-APDU with an empty frame, which the reader passes on as a
    /// successful exchange of 0 bytes (no SW1 SW2). (U): no ACR122U byte log of such an answer was
    /// found; it models a reader that reports success with no bytes, which a client must survive.
    case mute = "mute"
    /// Answers any command but GET RESPONSE with a 2847-byte object (``LongObject``) in 256-byte
    /// parts chained with `61 XX` (ISO/IEC 7816-4 §5.1.3), whatever the command's Le said.
    case longObject = "long-object"
    /// As `long-object`, but the second GET RESPONSE is answered `6F 00`: a chain broken mid-way.
    case brokenChain = "broken-chain"
    /// A DESFire EV1 4K's native commands, natively and wrapped in CLA 90 (``DESFireEV1Applet``,
    /// docs/acr122-clones.md §6); GetVersion's third frame carries the recorded card's UID.
    case desfireEV1 = "desfire-ev1"

    /// A fresh handler (the T4T keeps its selection state per card).
    /// - Parameter ndef: for `t4t-ndef` and `t4t-ndef-v1`, the NDEF message to hold instead of the
    ///   worked example's (`place-card … ndef=<hex>`); the NDEF file grows to fit it.
    func makeHandler(ndef: [UInt8]? = nil) -> @Sendable ([UInt8]) -> [UInt8] {
        switch self {
        case .ok:
            return { _ in [0x90, 0x00] }
        case .echo:
            return { $0 + [0x90, 0x00] }
        case .mute:
            return { _ in [] }
        case .longObject:
            let object = LongObject(failingGetResponse: nil)
            return { object.answer($0) }
        case .brokenChain:
            let object = LongObject(failingGetResponse: 2)
            return { object.answer($0) }
        case .desfireEV1:
            let applet = DESFireEV1Applet(uid: [0x04, 0x1F, 0x5B, 0x92, 0xDA, 0x2C, 0x80])
            return { applet.respond($0) }
        case .t4tNDEF, .t4tNDEFVersion1:
            var cc = ExternalTerminal.Script.exampleCapabilityContainer
            var file = ExternalTerminal.Script.exampleNDEFFile
            if let ndef {
                file = [UInt8(ndef.count >> 8), UInt8(ndef.count & 0xFF)] + ndef
                let size = max(0x0400, file.count)
                (cc[11], cc[12]) = (UInt8(size >> 8), UInt8(size & 0xFF))
            }
            if self == .t4tNDEFVersion1 { cc[2] = 0x10 }
            let tag = Type4Tag(capabilityContainer: cc, ndefFile: file, mappingVersion1: self == .t4tNDEFVersion1)
            return { tag.answer($0) }
        }
    }
}

/// A 2847-byte data object served through GET RESPONSE: the first 256 bytes with `61 00`, then
/// each `00 C0 00 00 Le` gets min(Le, what is left) bytes with `61 XX` (XX = what is left, 00 for
/// 256 or more) until the last part, which ends `90 00`. Byte i of the object is `i × 7 mod 256`.
final class LongObject: Sendable {
    static let length = 2847
    static let bytes: [UInt8] = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 7) }
    private let offset = Mutex<Int?>(nil)
    private let getResponses = Mutex(0)
    /// Which GET RESPONSE (1 = the first) is answered `6F 00` instead; nil: none.
    let failingGetResponse: Int?

    init(failingGetResponse: Int?) { self.failingGetResponse = failingGetResponse }

    func answer(_ apdu: [UInt8]) -> [UInt8] {
        guard apdu.count >= 4 else { return [0x67, 0x00] }
        if apdu[1] != 0xC0 {
            getResponses.withLock { $0 = 0 }
            return part(from: 0, le: 256)
        }
        let number = getResponses.withLock { count in
            count += 1
            return count
        }
        if number == failingGetResponse {
            offset.withLock { $0 = nil }
            return [0x6F, 0x00]
        }
        guard let start = offset.withLock({ $0 }) else { return [0x69, 0x85] }  // nothing pending
        let le = apdu.count >= 5 ? (apdu[4] == 0 ? 256 : Int(apdu[4])) : 256
        return part(from: start, le: le)
    }

    private func part(from start: Int, le: Int) -> [UInt8] {
        let end = min(Self.length, start + le)
        let left = Self.length - end
        offset.withLock { $0 = left > 0 ? end : nil }
        let status: [UInt8] = left == 0 ? [0x90, 0x00] : [0x61, left >= 256 ? 0x00 : UInt8(left)]
        return Array(Self.bytes[start..<end]) + status
    }
}

/// A read-only NFC Forum Type 4 Tag (T4T mapping 2.0; ISO/IEC 7816-4 SELECT and READ BINARY).
///
/// | Command | Answer |
/// |---|---|
/// | `00 A4 04 00 07 D2 76 00 00 85 01 01 [00]` (SELECT NDEF application) | `90 00` |
/// | `00 A4 00 0C 02 E1 03` / `… E1 04` (SELECT file, P2 0C or 00, after the application) | `90 00`; other files `6A 82` |
/// | `00 B0 P1 P2 Le` (READ BINARY at offset P1P2) | up to Le bytes + `90 00`; offset past the end `6B 00` |
/// | anything else | `6D 00` (INS) / `6E 00` (CLA) / `6A 82` (unknown AID) |
final class Type4Tag: Sendable {
    private enum Selection { case none, application, file([UInt8]) }
    private let selection = Mutex<Selection>(.none)
    private let files: [[UInt8]: [UInt8]]
    /// A strict mapping 1.0 tag: the 1.0 AID only, file SELECTs with P2 00 only.
    private let mappingVersion1: Bool

    init(capabilityContainer: [UInt8], ndefFile: [UInt8], mappingVersion1: Bool = false) {
        self.mappingVersion1 = mappingVersion1
        let ndefID: [UInt8] = capabilityContainer.count >= 11 ? [capabilityContainer[9], capabilityContainer[10]] : [0xE1, 0x04]
        files = [[0xE1, 0x03]: capabilityContainer, ndefID: ndefFile]
    }

    func answer(_ apdu: [UInt8]) -> [UInt8] {
        guard apdu.count >= 4 else { return [0x67, 0x00] }
        guard apdu[0] == 0x00 else { return [0x6E, 0x00] }
        let (ins, p1, p2) = (apdu[1], apdu[2], apdu[3])
        let body = Array(apdu.dropFirst(4))
        return selection.withLock { selection -> [UInt8] in
            switch ins {
            case 0xA4:
                guard let lc = body.first, body.count >= 1 + Int(lc) else { return [0x67, 0x00] }
                let data = Array(body[1..<(1 + Int(lc))])
                if p1 == 0x04 {
                    let aid = mappingVersion1 ? [0xD2, 0x76, 0x00, 0x00, 0x85, 0x01, 0x00] : ExternalTerminal.Script.ndefApplicationAID
                    guard data == aid else { return [0x6A, 0x82] }
                    selection = .application
                    return [0x90, 0x00]
                }
                guard p1 == 0x00, p2 == 0x00 || (p2 == 0x0C && !mappingVersion1) else { return [0x6A, 0x86] }
                if case .none = selection { return [0x6A, 0x82] }
                guard files[data] != nil else { return [0x6A, 0x82] }
                selection = .file(data)
                return [0x90, 0x00]
            case 0xB0:
                guard case .file(let id) = selection, let file = files[id] else { return [0x69, 0x86] }
                let offset = Int(p1) << 8 | Int(p2)
                guard offset <= file.count else { return [0x6B, 0x00] }
                let le = body.first.map { $0 == 0 ? 256 : Int($0) } ?? 256
                return Array(file[offset..<min(file.count, offset + le)]) + [0x90, 0x00]
            default:
                return [0x6D, 0x00]
            }
        }
    }
}
