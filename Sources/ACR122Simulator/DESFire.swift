import ISO7816
import Synchronization

/// A MIFARE DESFire EV1 4K's native command set, as far as public recordings show it
/// (docs/acr122-clones.md §6): GetVersion (60, then AF twice), SelectApplication (5A) and
/// GetApplicationIDs (6A) of an empty card, in both framings a reader uses:
/// - native: `cmd data…` → `status data…` (the status byte first);
/// - wrapped in ISO/IEC 7816-4 (CLA 90): `90 cmd 00 00 [Lc data] 00` → `data… 91 status`.
///
/// Status bytes: 00 OK, AF additional frame, A0 application not found, 1C illegal command code,
/// 7E length error.
///
/// In ISO 7816 form (CLA 00) the card answers the SELECT by AID of DESFire's registered ISO AID
/// `D2 76 00 00 85 01 00` (`00 A4 04 00 07 D2 76 00 00 85 01 00`, with or without Le 00) with
/// `90 00` and no data: libfreefare's `mifare_desfire_connect` sends it and gives up on anything
/// else (libfreefare/mifare_desfire.c, "selecting this AID selects the MF"), and an EV1's answer
/// `9000` to it is recorded in chemicstry/eacs-tag-auth's README (docs/acr122-clones.md §6). Any
/// other SELECT (another AID, a file identifier such as the CC file E103 this empty card does not
/// have) gets `6A 82` and any other ISO command `6D 00` (decision, (U): no recording of those
/// answers was used).
public final class DESFireEV1Applet: Sendable {
    /// GetVersion's three frames of a recorded EV1 4K (skjolber/desfire-tools-for-android,
    /// AESEncryptionTest): hardware `04 01 01 01 00 18 05` (vendor NXP, type 01, subtype 01,
    /// version 1.0, storage 18 = 4 KiB, protocol 05 = ISO/IEC 14443-2 and -3); software
    /// `04 01 01 01 04 18 05` (version 1.4); then UID (7), batch number (5), production week and
    /// year (BCD).
    public let versionFrames: [[UInt8]]
    private let state = Mutex(State())

    private struct State {
        var pendingFrames: [[UInt8]] = []
    }

    /// - Parameters:
    ///   - uid: the 7-byte UID the third GetVersion frame carries.
    ///   - batch: the 5-byte batch number of the third frame (default the recording's).
    ///   - week: the production week, BCD (`0x29` = week 29, the recording's).
    ///   - year: the production year, BCD (`0x12` = 2012, the recording's).
    public init(uid: [UInt8], batch: [UInt8] = [0xBA, 0x34, 0x98, 0xBA, 0xD0], week: UInt8 = 0x29, year: UInt8 = 0x12) {
        versionFrames = [
            [0x04, 0x01, 0x01, 0x01, 0x00, 0x18, 0x05],
            [0x04, 0x01, 0x01, 0x01, 0x04, 0x18, 0x05],
            uid + batch + [week, year],
        ]
    }

    /// An ISO 14443-4 card answering with this applet: ATQA 0x0344, SAK 20, ATS `06 75 77 81 02 80`
    /// (a DESFire EV1's, docs/acr122-pn532.md §3).
    public static func card(uid: [UInt8] = [0x04, 0x1F, 0x5B, 0x92, 0xDA, 0x2C, 0x80]) -> ISO14443_4Card {
        let applet = DESFireEV1Applet(uid: uid)
        return ISO14443_4Card(uid: uid, atqa: 0x0344, sak: 0x20, ats: [0x06, 0x75, 0x77, 0x81, 0x02, 0x80]) { applet.respond($0) }
    }

    /// One command in either framing → its answer.
    public func respond(_ command: [UInt8]) -> [UInt8] {
        if command.count >= 5, command[0] == 0x90, command[2] == 0x00, command[3] == 0x00 {
            // Wrapped: 90 cmd 00 00 [Lc data] Le.
            let lc = command.count > 5 ? Int(command[4]) : 0
            guard command.count == 5 || command.count == 6 + lc else { return [0x67, 0x00] }
            let data = command.count > 5 ? Array(command[5..<5 + lc]) : []
            let (status, body) = native(command[1], data)
            return body + [0x91, status]
        }
        if let first = command.first, first != 0x00 {
            let (status, body) = native(first, Array(command.dropFirst()))
            return [status] + body
        }
        // ISO/IEC 7816-4 with CLA 00.
        guard command.count >= 4 else { return [0x67, 0x00] }
        guard command[1] == 0xA4 else { return [0x6D, 0x00] }
        let selectsDESFire = command[2] == 0x04 && command[3] == 0x00 && command.count >= 12 && command[4] == 0x07
            && Array(command[5..<12]) == Self.isoAID && (command.count == 12 || (command.count == 13 && command[12] == 0x00))
        guard selectsDESFire else { return [0x6A, 0x82] }
        // Selecting the MF: the PICC level, as SelectApplication 00 00 00 would.
        state.withLock { $0.pendingFrames = [] }
        return [0x90, 0x00]
    }

    /// DESFire's registered ISO/IEC 7816-4 AID, `D2 76 00 00 85 01 00` (the one libfreefare's
    /// `mifare_desfire_connect` selects).
    static let isoAID: [UInt8] = [0xD2, 0x76, 0x00, 0x00, 0x85, 0x01, 0x00]

    private func native(_ code: UInt8, _ data: [UInt8]) -> (UInt8, [UInt8]) {
        state.withLock { state in
            let continuing = code == 0xAF && !state.pendingFrames.isEmpty
            if !continuing { state.pendingFrames = [] }
            switch code {
            case 0x60:
                guard data.isEmpty else { return (0x7E, []) }
                state.pendingFrames = Array(versionFrames.dropFirst())
                return (0xAF, versionFrames[0])
            case 0xAF where continuing:
                let frame = state.pendingFrames.removeFirst()
                return (state.pendingFrames.isEmpty ? 0x00 : 0xAF, frame)
            case 0x5A:
                guard data.count == 3 else { return (0x7E, []) }
                return data == [0x00, 0x00, 0x00] ? (0x00, []) : (0xA0, [])
            case 0x6A:
                guard data.isEmpty else { return (0x7E, []) }
                return (0x00, [])
            default:
                return (0x1C, [])
            }
        }
    }
}
