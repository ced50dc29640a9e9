import NFCTags

/// Where PN532 frames sit in ACR122U pseudo-APDUs, and where the card's bytes sit in those frames.
///
/// A host frame travels in the ACR122U Direct Transmit pseudo-APDU
/// `| FF | 00 | 00 | 00 | Lc | D4 cmd params |` (ACR122U API v2.04, Direct Transmit), over
/// SCardTransmit or SCardControl alike; the answer is `| D5 cmd+1 status data | 90 | 00 |`. The
/// commands that carry a card's or a terminal's bytes (PN532 UM0701-02 §7.3.8, §7.3.9, §7.3.16,
/// §7.3.17):
///
/// | Command | Host frame | Answer |
/// |---|---|---|
/// | InDataExchange | `D4 40 Tg <to the card>` | `D5 41 status <from the card>` |
/// | InCommunicateThru | `D4 42 <to the card>` | `D5 43 status <from the card>` |
/// | TgGetData | `D4 86` | `D5 87 status <the terminal's C-APDU>` |
/// | TgSetData | `D4 8E <the R-APDU to the terminal>` | `D5 8F status` |
enum PN532Frames {
    /// The PN532 command code of a Direct Transmit pseudo-APDU (`D4` at offset 5, the code at 6).
    static func directTransmitCommand(_ c: [UInt8]) -> UInt8? {
        guard c.count >= 7, c[0] == 0xFF, c[1] == 0x00, c[2] == 0x00, c[3] == 0x00, c[5] == 0xD4 else { return nil }
        return c[6]
    }

    /// Where the bytes for the card begin in a Direct Transmit of InDataExchange (offset 8, after
    /// `Tg`) or InCommunicateThru (offset 7); the bytes run to the end of the command.
    static func cardBytesStart(_ c: [UInt8]) -> Int? {
        switch directTransmitCommand(c) {
        case 0x40 where c.count > 8: 8
        case 0x42 where c.count > 7: 7
        default: nil
        }
    }

    /// The data of a PN532 answer `D5 code status data [90 00]` with the ACR122U's status word cut
    /// off; nil unless the answer starts with `D5 code`.
    static func answerData(_ r: [UInt8], code: UInt8) -> Range<Int>? {
        guard r.count > 3, r[0] == 0xD5, r[1] == code else { return nil }
        let end = r.count >= 5 && r[r.count - 2] == 0x90 && r[r.count - 1] == 0x00 ? r.count - 2 : r.count
        return end > 3 ? 3..<end : nil
    }

    /// `ranges` moved by `offset`.
    static func shifted(_ ranges: [Range<Int>], by offset: Int) -> [Range<Int>] {
        ranges.map { $0.lowerBound + offset..<$0.upperBound + offset }
    }
}

extension RedactionRule {
    /// The rules for a card's own commands (ISO/IEC 7816-4 and GlobalPlatform), the same wherever
    /// the command travels: VERIFY, CHANGE REFERENCE DATA, RESET RETRY COUNTER, PUT KEY and
    /// EXTERNAL/MUTUAL AUTHENTICATE. ``pn532CardCommand`` and ``ResponseRedactionRule/pn532TargetCommand``
    /// apply them to the C-APDUs inside PN532 frames.
    public static let cardCommandRules: [RedactionRule] = [
        .verify, .changeReferenceData, .resetRetryCounter, .putKey, .externalAuthenticate,
    ]

    /// MIFARE Classic WRITE of a sector trailer sent to the card itself (inside InDataExchange):
    /// `| A0 | block | key A (6) | access bits (3) | GPB | key B (6) |` (18 bytes, the block a trailer
    /// by NFCTags' `MifareClassicLayout.isSectorTrailer(_:)`): keys A and B (offsets 2–7 and 12–17) are
    /// masked (NXP MF1S50yyX, command set: WRITE A0; §8.7 sector trailer; PN532 UM0701-02 §7.3.8).
    /// Only meaningful for the bytes of an InDataExchange: a card APDU may have CLA A0 (GSM).
    public static let mifareNativeTrailerWrite = RedactionRule(
        id: "mifare-native-trailer-write", summary: "MIFARE Classic WRITE (A0) of a sector trailer inside InDataExchange: keys A and B"
    ) { c in
        guard c.count == 18, c[0] == 0xA0, MifareClassicLayout.isSectorTrailer(Int(c[1])) else { return [] }
        return [2..<8, 12..<18]
    }

    /// NTAG21x PWD_AUTH `| 1B | password (4) |` sent to the tag (inside InDataExchange or
    /// InCommunicateThru): the 32-bit password is masked (NXP NTAG213/215/216 data sheet §10.7
    /// PWD_AUTH). Only meaningful for bytes sent to a tag: `1B` is no ISO/IEC 7816 class of note,
    /// but the rule is applied to tag bytes only.
    public static let ntagPasswordAuthentication = RedactionRule(
        id: "ntag-pwd-auth", summary: "NTAG21x PWD_AUTH (1B) inside InDataExchange/InCommunicateThru: the password"
    ) { c in
        guard c.count == 5, c[0] == 0x1B else { return [] }
        return [1..<5]
    }

    /// The card's bytes inside a PN532 InDataExchange (`FF 00 00 00 Lc D4 40 Tg …`, the path of
    /// libnfc-based programs and `read --pn532`) or InCommunicateThru (`FF 00 00 00 Lc D4 42 …`)
    /// Direct Transmit: ``cardCommandRules`` apply to them as a C-APDU, and so do
    /// ``mifareNativeTrailerWrite`` and ``ntagPasswordAuthentication``; for InCommunicateThru also
    /// after an ISO/IEC 14443-4 I-block PCB (`02`/`03`, or `0A`/`0B` followed by a CID), which a
    /// host sending raw frames puts first (ISO/IEC 14443-4 §7.1.1). The MIFARE authentication key
    /// is ``pn532MifareAuthentication``'s (PN532 UM0701-02 §7.3.8, §7.3.9; ACR122U API v2.04, Direct Transmit).
    public static let pn532CardCommand = RedactionRule(
        id: "pn532-card-command",
        summary: "PN532 InDataExchange/InCommunicateThru in a Direct Transmit (FF 00 00 00 … D4 40/42): the card APDU's secrets"
    ) { c in
        guard let start = PN532Frames.cardBytesStart(c) else { return [] }
        let rules = cardCommandRules + [.mifareNativeTrailerWrite, .ntagPasswordAuthentication]
        var starts = [start]
        if c[6] == 0x42 {
            switch c[start] {
            case 0x02, 0x03: starts.append(start + 1)
            case 0x0A, 0x0B: starts.append(start + 2)
            default: break
            }
        }
        return starts.filter { $0 < c.count }.flatMap { s in
            let inner = Array(c[s...])
            return PN532Frames.shifted(rules.flatMap { $0.ranges(in: inner) }, by: s)
        }
    }.readerCommandsOnly()
}

extension ResponseRedactionRule {
    /// TgGetData's answer `| D5 87 | status | C-APDU | 90 00 |`, the terminal's command to the
    /// emulated card, answering `FF 00 00 00 02 D4 86` (or an ACR122U GET RESPONSE `FF C0 00 00 xx`
    /// on a T=0 link): ``RedactionRule/cardCommandRules`` apply to the C-APDU, so a terminal's
    /// VERIFY is masked here as on its `tgt <` line (PN532 UM0701-02 §7.3.16; ACR122U API v2.04).
    public static let pn532TargetCommand = ResponseRedactionRule(
        id: "pn532-target-command", summary: "TgGetData's answer (D5 87): the terminal's C-APDU's secrets"
    ) { c, r in
        let getData = PN532Frames.directTransmitCommand(c) == 0x86
        let getResponse = c.count == 5 && c[0] == 0xFF && c[1] == 0xC0
        guard getData || getResponse, let data = PN532Frames.answerData(r, code: 0x87) else { return [] }
        let inner = Array(r[data])
        return PN532Frames.shifted(RedactionRule.cardCommandRules.flatMap { $0.ranges(in: inner) }, by: data.lowerBound)
    }.readerCommandsOnly()

    /// InDataExchange's answer `| D5 41 | status | card data | 90 00 |` to a MIFARE Classic READ of
    /// a sector trailer (`FF 00 00 00 05 D4 40 Tg 30 block`, the block a trailer by
    /// NFCTags' `MifareClassicLayout.isSectorTrailer(_:)`): key B (card data bytes 10–15) is masked, as
    /// ``mifareSectorTrailerRead`` does for Read Binary; and the PACK (2 bytes) answering an NTAG21x
    /// PWD_AUTH (`… D4 40 Tg 1B pwd`, or through InCommunicateThru `… D4 42 1B pwd` → `D5 43 00
    /// PACK`) (NXP MF1S50yyX, command set: READ 30; §8.7; NXP NTAG213/215/216 §10.7; PN532 UM0701-02 §7.3.8, §7.3.9).
    public static let pn532CardAnswer = ResponseRedactionRule(
        id: "pn532-card-answer", summary: "InDataExchange/InCommunicateThru answer (D5 41/43): key B of a MIFARE trailer READ, the PACK of PWD_AUTH"
    ) { c, r in
        guard let code = PN532Frames.directTransmitCommand(c), let start = PN532Frames.cardBytesStart(c),
              let data = PN532Frames.answerData(r, code: code + 1), r[2] == 0x00
        else { return [] }
        let inner = c[start...], d = data.lowerBound
        if inner.count == 2, inner.first == 0x30, MifareClassicLayout.isSectorTrailer(Int(inner.last!)), data.count >= 16 {
            return [d + 10..<d + 16]
        }
        if inner.count == 5, inner.first == 0x1B { return [data] }
        return []
    }.readerCommandsOnly()
}
