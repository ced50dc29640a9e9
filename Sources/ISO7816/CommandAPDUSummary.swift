// What a command APDU is, in words: the instruction names of ISO/IEC 7816-4 §11 (and of
// GlobalPlatform where noted), the SELECT modes of §11.2.2 and a few well-known AIDs. One table for
// every view (`secbridge transcript show` and its HTML page among them).

extension CommandAPDU {
    /// Instruction names of ISO/IEC 7816-4 §11 (odd INS codes are the BER-TLV forms of §5.1) and
    /// of the GlobalPlatform Card Specification §11 where noted.
    static let instructionNames: [UInt8: String] = [
        0x0E: "ERASE BINARY", 0x20: "VERIFY", 0x21: "VERIFY", 0x22: "MANAGE SECURITY ENVIRONMENT", 0x24: "CHANGE REFERENCE DATA",
        0x2A: "PERFORM SECURITY OPERATION", 0x2C: "RESET RETRY COUNTER", 0x44: "ACTIVATE FILE", 0x46: "GENERATE ASYMMETRIC KEY PAIR",
        0x70: "MANAGE CHANNEL", 0x82: "EXTERNAL AUTHENTICATE", 0x84: "GET CHALLENGE", 0x86: "GENERAL AUTHENTICATE",
        0x87: "GENERAL AUTHENTICATE", 0x88: "INTERNAL AUTHENTICATE", 0xA4: "SELECT", 0xB0: "READ BINARY", 0xB1: "READ BINARY",
        0xB2: "READ RECORD", 0xB3: "READ RECORD", 0xC0: "GET RESPONSE", 0xC2: "ENVELOPE", 0xCA: "GET DATA", 0xCB: "GET DATA",
        0xD0: "WRITE BINARY", 0xD6: "UPDATE BINARY", 0xD8: "PUT KEY (GlobalPlatform)", 0xDA: "PUT DATA", 0xDB: "PUT DATA",
        0xDC: "UPDATE RECORD", 0xE2: "APPEND RECORD", 0xE4: "DELETE", 0xE6: "INSTALL (GlobalPlatform)", 0xE8: "LOAD (GlobalPlatform)",
        0xF2: "GET STATUS (GlobalPlatform)", 0x50: "INITIALIZE UPDATE (GlobalPlatform)",
    ]

    /// The instruction named from the header alone: `| CLA | INS | P1 | P2 |`.
    ///
    /// The ISO/IEC 7816-4 §11 name of INS ("READ BINARY"), with the selection mode of a SELECT
    /// (P1 04 "by DF name (AID)", 00 "by file identifier", 02 "EF under the current DF", 08 "by
    /// path from the MF", §11.2.2); "INS 12" for a code the table does not hold. The class byte is
    /// not looked at: a reader's pseudo-APDU (CLA FF) is not named here.
    public static func instructionName(ins: UInt8, p1: UInt8) -> String {
        var name = instructionNames[ins] ?? "INS \([ins].hexString)"
        if ins == 0xA4 {
            switch p1 {
            case 0x04: name += " by DF name (AID)"
            case 0x00: name += " by file identifier"
            case 0x02: name += " EF under the current DF"
            case 0x08: name += " by path from the MF"
            default: break
            }
        }
        return name
    }

    /// The command in words, one line a fact:
    ///
    /// 1. the instruction (``instructionName(ins:p1:)``), its case and Nc and Ne (ISO/IEC 7816-3
    ///    §12.1.3): `SELECT by DF name (AID) (case 4S, Nc 7, Ne 256)`;
    /// 2. for a SELECT by DF name, the AID and its name when it is well known
    ///    (``AID/wellKnownName(of:)``): `AID D2 76 00 00 85 01 01: NFC Forum Type 4 Tag application v2`;
    /// 3. for READ BINARY or UPDATE BINARY with an offset in P1–P2 (INS B0 / D6, CLA bit 8 clear,
    ///    P1 bit 8 clear, §11.3.3), the 15-bit offset: `offset 2`.
    public var summary: [String] {
        var lines = ["\(Self.instructionName(ins: ins, p1: p1)) (case \(self.case.rawValue), Nc \(nc), Ne \(ne))"]
        if ins == 0xA4 && p1 == 0x04 && !data.isEmpty {
            lines.append("AID \(data.hexString)\(AID.wellKnownName(of: data).map { ": \($0)" } ?? "")")
        }
        if (ins == 0xB0 || ins == 0xD6) && cla & 0x80 == 0 && p1 & 0x80 == 0 {
            lines.append("offset \(Int(p1 & 0x7F) << 8 | Int(p2))")
        }
        return lines
    }
}

extension AID {
    /// Applications named by their registered AIDs: the NFC Forum Type 4 Tag application (mapping
    /// 2.0 and 1.0; docs/iso14443-t4t-ndef.md §4), the OpenPGP card application (RID D2 76 00 01 24,
    /// application 01) and the PIV card application (NIST SP 800-73, with its version bytes).
    static let wellKnownNames: [[UInt8]: String] = [
        [0xD2, 0x76, 0x00, 0x00, 0x85, 0x01, 0x01]: "NFC Forum Type 4 Tag application v2",
        [0xD2, 0x76, 0x00, 0x00, 0x85, 0x01, 0x00]: "NFC Forum Type 4 Tag application v1",
        [0xD2, 0x76, 0x00, 0x01, 0x24, 0x01]: "OpenPGP",
        [0xA0, 0x00, 0x00, 0x03, 0x08, 0x00, 0x00, 0x10, 0x00, 0x01, 0x00]: "PIV",
    ]

    /// The name of a well-known application whose AID is exactly `bytes`, e.g. "OpenPGP" for
    /// `D2 76 00 01 24 01`; nil for any other bytes.
    public static func wellKnownName(of bytes: [UInt8]) -> String? { wellKnownNames[bytes] }
}
