import SecbridgeCLI
import ISO7816
import NFCTags
import PN53x
import SecureElementCredential
import Transcript
#if canImport(Glibc)
import Glibc
#endif

// The transcript viewer's dissector: what `secbridge transcript show` prints under each line
// (APDUs, ACR122U pseudo-APDUs, PN532 frames, status-word meanings from ISO7816's table, NDEF).

enum HexFormat {
    static func word(_ w: UInt16) -> String { [UInt8(w >> 8), UInt8(w & 0xFF)].hexString.replacingSpaces() }
    static func spacedWord(_ w: UInt16) -> String { [UInt8(w >> 8), UInt8(w & 0xFF)].hexString }
}

// MARK: - Pretty printing

/// The meaning of each transcript line, for `transcript show` (text, JSON and HTML).
enum TranscriptPresenter {
    struct Shown {
        var line: Int
        var record: TranscriptRecord?
        var comment: String?
        /// The line as written, without its note.
        var text: String
        /// What it means: the instruction, status word, ACR122U/PN532 command, NDEF records.
        var details: [String]
        /// Which lanes the line goes between in the timeline (terminal, reader, host, secure element).
        var from: Lane
        var to: Lane

        var json: JSONValue {
            var members: [(String, JSONValue)] = [("line", .int(line))]
            if let r = record {
                members.append(("offset", r.offset.map { .string($0.description) } ?? .null))
                members.append(("channel", r.channel.map { .string($0) } ?? .null))
                members.append(("kind", .string(TranscriptPresenter.kindName(r.entry))))
                switch r.entry {
                case .transmit(let d, let b), .target(let d, let b), .initiator(let d, let b), .control(_, let d, let b):
                    members.append(("direction", .string(d.rawValue)))
                    members.append(("hex", .string(b.description.replacingSpaces())))
                    if case .control(let code, _, _) = r.entry { members.append(("controlCode", .string(HexFormat.code(code)))) }
                default:
                    members.append(("text", .string(text)))
                }
                members.append(("note", r.note.map { .string($0) } ?? .null))
            } else {
                members.append(("kind", .string("comment")))
                members.append(("text", .string(comment ?? "")))
            }
            members.append(("meaning", .array(details.map { .string($0) })))
            return .object(members)
        }
    }

    enum Lane: Int { case terminal = 0, reader = 1, host = 2, secureElement = 3, none = -1 }

    static func kindName(_ e: TranscriptEntry) -> String {
        switch e {
        case .transmit: "transmit"
        case .control: "control"
        case .failure: "failure"
        case .target: "target"
        case .initiator: "initiator"
        case .event: "event"
        case .reader: "reader"
        }
    }

    static func lines(of transcript: Transcript) -> [Shown] {
        var reader = Reader()
        return transcript.lines.enumerated().compactMap { index, line in
            reader.show(line, number: transcript.lineNumber(ofBodyIndex: index))
        }
    }

    /// What ``lines(of:)`` does, one line at a time in file order (for a streamed transcript): the
    /// last command per channel is all it keeps.
    struct Reader {
        private var lastCommand: [String: [UInt8]] = [:]

        /// The line's meaning; nil for a blank line.
        mutating func show(_ line: TranscriptLine, number: Int) -> Shown? {
            switch line {
            case .blank: return nil
            case .comment(let text):
                return Shown(line: number, comment: text, text: "; " + text, details: [], from: .none, to: .none)
            case .record(let r):
                var bare = r
                bare.note = nil
                var details: [String] = []
                if let note = r.note { details.append("note: \(note)") }
                let key = r.channel ?? ""
                var from = Lane.host, to = Lane.secureElement
                switch r.entry {
                case .transmit(.outgoing, let b):
                    if let bytes = b.bytes ?? concretePrefix(b) {
                        lastCommand[key] = bytes
                        details += describeCommand(bytes)
                        if bytes.first == 0xFF { to = .reader }
                    }
                case .transmit(.incoming, let b):
                    from = (lastCommand[key]?.first == 0xFF) ? .reader : .secureElement
                    to = .host
                    details += describeAnswer(b, to: lastCommand[key])
                case .control(_, .outgoing, let b):
                    to = .reader
                    if let bytes = b.bytes ?? concretePrefix(b) {
                        lastCommand[key] = bytes
                        details += describeCommand(bytes)
                    }
                case .control(_, .incoming, let b):
                    from = .reader; to = .host
                    details += describeAnswer(b, to: lastCommand[key])
                case .failure(let f):
                    from = .reader; to = .host
                    details.append("failed: \(f.name)\(f.message.map { " (\($0))" } ?? "")")
                case .target(let d, let b):
                    if d == .incoming {
                        from = .terminal; to = .host
                        if let bytes = b.bytes { details += describeAPDU(bytes) }
                    } else {
                        from = .host; to = .terminal
                        details += describeStatusWord(b)
                    }
                case .initiator(let d, let b):
                    if d == .outgoing {
                        if let bytes = b.bytes { details += describeAPDU(bytes) }
                    } else {
                        from = .secureElement; to = .host
                        details += describeStatusWord(b)
                    }
                case .event, .reader:
                    from = .none; to = .none
                }
                return Shown(line: number, record: r, text: bare.serialized(), details: details, from: from, to: to)
            }
        }
    }

    /// The concrete bytes before the first `??` or redaction mark (enough for a header).
    static func concretePrefix(_ b: TranscriptBytes) -> [UInt8]? {
        var out: [UInt8] = []
        for item in b.items {
            guard case .byte(let v) = item else { break }
            out.append(v)
        }
        return out.count >= 4 ? out : nil
    }

    /// Instruction names of ISO/IEC 7816-4 §11 (and GlobalPlatform where noted).
    static let instructions: [UInt8: String] = [
        0x0E: "ERASE BINARY", 0x20: "VERIFY", 0x21: "VERIFY", 0x22: "MANAGE SECURITY ENVIRONMENT", 0x24: "CHANGE REFERENCE DATA",
        0x2A: "PERFORM SECURITY OPERATION", 0x2C: "RESET RETRY COUNTER", 0x44: "ACTIVATE FILE", 0x46: "GENERATE ASYMMETRIC KEY PAIR",
        0x70: "MANAGE CHANNEL", 0x82: "EXTERNAL AUTHENTICATE", 0x84: "GET CHALLENGE", 0x86: "GENERAL AUTHENTICATE",
        0x87: "GENERAL AUTHENTICATE", 0x88: "INTERNAL AUTHENTICATE", 0xA4: "SELECT", 0xB0: "READ BINARY", 0xB1: "READ BINARY",
        0xB2: "READ RECORD", 0xB3: "READ RECORD", 0xC0: "GET RESPONSE", 0xC2: "ENVELOPE", 0xCA: "GET DATA", 0xCB: "GET DATA",
        0xD0: "WRITE BINARY", 0xD6: "UPDATE BINARY", 0xD8: "PUT KEY (GlobalPlatform)", 0xDA: "PUT DATA", 0xDB: "PUT DATA",
        0xDC: "UPDATE RECORD", 0xE2: "APPEND RECORD", 0xE4: "DELETE", 0xE6: "INSTALL (GlobalPlatform)", 0xE8: "LOAD (GlobalPlatform)",
        0xF2: "GET STATUS (GlobalPlatform)", 0x50: "INITIALIZE UPDATE (GlobalPlatform)",
    ]

    /// A command on a channel: an ACR122U pseudo-APDU (CLA FF) or a card APDU.
    static func describeCommand(_ c: [UInt8]) -> [String] {
        guard c.count >= 4 else { return [] }
        if c[0] == 0xFF { return describeACR122(c) }
        return describeAPDU(c)
    }

    static func describeAPDU(_ c: [UInt8]) -> [String] {
        guard c.count >= 4 else { return [] }
        var name = instructions[c[1]] ?? "INS \([c[1]].hexString)"
        if c[1] == 0xA4 {
            switch c[2] {
            case 0x04: name += " by DF name (AID)"
            case 0x00: name += " by file identifier"
            case 0x02: name += " EF under the current DF"
            case 0x08: name += " by path from the MF"
            default: break
            }
        }
        var out = [name]
        if let apdu = try? CommandAPDU(parsing: c) {
            out[0] += " (case \(apdu.case.rawValue), Nc \(apdu.nc), Ne \(apdu.ne))"
            if c[1] == 0xA4 && c[2] == 0x04, !apdu.data.isEmpty { out.append("AID \(apdu.data.hexString)\(aidName(apdu.data).map { ": \($0)" } ?? "")") }
            if (c[1] == 0xB0 || c[1] == 0xD6) && c[0] & 0x80 == 0 { out.append("offset \(Int(c[2] & 0x7F) << 8 | Int(c[3]))") }
        }
        return out
    }

    static func aidName(_ aid: [UInt8]) -> String? {
        switch aid {
        case [0xD2, 0x76, 0x00, 0x00, 0x85, 0x01, 0x01]: "NFC Forum Type 4 Tag application v2"
        case [0xD2, 0x76, 0x00, 0x00, 0x85, 0x01, 0x00]: "NFC Forum Type 4 Tag application v1"
        case [0xD2, 0x76, 0x00, 0x01, 0x24, 0x01]: "OpenPGP"
        case [0xA0, 0x00, 0x00, 0x03, 0x08, 0x00, 0x00, 0x10, 0x00, 0x01, 0x00]: "PIV"
        default: nil
        }
    }

    /// ACR122U pseudo-APDUs (ACR122U API v2.04 §4–§6) and the PN532 frame of Direct Transmit.
    static func describeACR122(_ c: [UInt8]) -> [String] {
        switch (c[1], c[2]) {
        case (0x00, 0x48): return ["ACR122U: get firmware version"]
        case (0x00, 0x40): return ["ACR122U: LED and buzzer control"]
        case (0x00, 0x51): return ["ACR122U: set PICC operating parameter"]
        case (0x00, 0x50): return ["ACR122U: get PICC operating parameter"]
        case (0xCA, _): return ["ACR122U: get data (\(c[2] == 0 ? "UID" : "ATS"))"]
        case (0x82, _): return ["ACR122U: load authentication key"]
        case (0x86, _): return ["ACR122U: authenticate (MIFARE Classic)"]
        case (0xB0, _): return ["ACR122U: read binary block \(c[3])"]
        case (0xD6, _): return ["ACR122U: update binary block \(c[3])"]
        case (0x00, 0x00) where c.count > 6 && c[5] == 0xD4:
            return ["ACR122U direct transmit: PN532 " + describePN532Command(Array(c[6...]))]
        default: return ["ACR122U pseudo-APDU"]
        }
    }

    /// `cmd params` after D4 (PN532 UM0701-02 §7).
    static func describePN532Command(_ frame: [UInt8]) -> String {
        guard let code = frame.first else { return "frame" }
        let name = PN532CommandCode(rawValue: code).name
        switch code {
        case 0x40 where frame.count > 2:
            let inner = Array(frame[2...])
            let apdu = describeAPDU(inner).first.map { ": \($0)" } ?? ""
            return "\(name) target \(frame[1])\(apdu)"
        case 0x8E where frame.count >= 3:
            return "\(name): R-APDU ending \(frame.suffix(2).hexString)"
        default:
            return name
        }
    }

    /// An answer: a PN532 response (D5), else an R-APDU with its status word.
    static func describeAnswer(_ b: TranscriptBytes, to command: [UInt8]?) -> [String] {
        guard let bytes = b.bytes else { return describeStatusWord(b) }
        if let c = command, let firmware = firmwareVersionAnswer(command: c, answer: bytes) {
            return ["firmware \"\(firmware.text)\""]
        }
        if let c = command, c.count > 6, c[0] == 0xFF, c[5] == 0xD4, bytes.count >= 2, bytes[0] == 0xD5 {
            var out = ["PN532 \(PN532CommandCode(rawValue: bytes[1] &- 1).name) answer"]
            let code = bytes[1] &- 1
            if (code == 0x40 || code == 0x86 || code == 0x8E) && bytes.count >= 3 {
                let status = bytes[2] & 0x3F
                out[0] += status == 0 ? ", status 00 (success)" : ", status \([bytes[2]].hexString)\(status == 0x29 ? " (released by the initiator)" : " (error)")"
                if code == 0x86 && status == 0 && bytes.count > 5 {
                    out.append("terminal's C-APDU: " + (describeAPDU(Array(bytes[3..<(bytes.count - 2)])).first ?? ""))
                }
                if code == 0x40 && status == 0 && bytes.count >= 7 {
                    let inner = Array(bytes[3..<(bytes.count - 2)])
                    out += describeStatusWord(TranscriptBytes(inner)).map { "card: " + $0 }
                }
            }
            if bytes.count >= 2 { out += describeStatusWord(TranscriptBytes(Array(bytes.suffix(2)))).map { "reader: " + $0 } }
            return out
        }
        var out = describeStatusWord(b)
        if let c = command, c.count >= 4, c[1] == 0xB0, c[0] & 0x80 == 0, bytes.count > 2, bytes.suffix(2) == [0x90, 0x00] {
            out += describeNDEF(Array(bytes.dropLast(2)))
        }
        // A SELECT's FCP, FMD or FCI, with the common parameters named (ISO/IEC 7816-4 §7.4.3).
        if bytes.count > 2, let objects = SecbridgeCLI.fileControlObjects(Array(bytes.dropLast(2))) {
            out += SecbridgeCLI.tlvLines(objects)
        }
        return out
    }

    static func describeStatusWord(_ b: TranscriptBytes) -> [String] {
        let items = b.items
        guard items.count >= 2, case .byte(let sw1) = items[items.count - 2], case .byte(let sw2) = items[items.count - 1] else { return [] }
        let sw = StatusWord(sw1: sw1, sw2: sw2)
        return ["SW \(sw.bytes.hexString): \(sw.meaning)"]
    }

    /// NDEF records in data read from a tag (NFC Forum NDEF 1.0 §3; T4T: NLEN then the message).
    static func describeNDEF(_ data: [UInt8]) -> [String] {
        var candidates: [[UInt8]] = [data]
        if data.count > 2 {
            let nlen = Int(data[0]) << 8 | Int(data[1])
            if nlen > 0 && nlen <= data.count - 2 { candidates.insert(Array(data[2..<(2 + nlen)]), at: 0) }
        }
        for candidate in candidates {
            guard let first = candidate.first, first & 0x80 != 0, let message = try? NDEFMessage(parsing: candidate) else { continue }
            return message.records.enumerated().map { i, r in
                var text = "NDEF record \(i + 1): TNF \(r.tnf.rawValue)"
                if !r.type.isEmpty { text += ", type \"\(String(decoding: r.type, as: UTF8.self))\"" }
                if let uri = try? r.uriValue() {
                    text += ", URI \(uri)"
                } else if r.tnf == .wellKnown && r.type == [0x54], let status = r.payload.first, r.payload.count > Int(status & 0x3F) {
                    let language = String(decoding: r.payload[1..<(1 + Int(status & 0x3F))], as: UTF8.self)
                    text += ", text [\(language)] \"\(String(decoding: r.payload[(1 + Int(status & 0x3F))...], as: UTF8.self))\""
                } else {
                    text += ", \(r.payload.count) payload bytes"
                }
                return text
            }
        }
        return []
    }
}

extension HexFormat {
    static func code(_ v: UInt32) -> String {
        "0x" + [UInt8(v >> 24), UInt8((v >> 16) & 0xFF), UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)].hexString.replacingSpaces()
    }
}
