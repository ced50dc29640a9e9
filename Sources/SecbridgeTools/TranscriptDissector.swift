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
                        details += describeCommand(bytes, complete: b.bytes != nil)
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
                        details += describeCommand(bytes, complete: b.bytes != nil)
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

    // Every decoding below is the library's: CommandAPDU.summary (ISO7816), ACR122Command.summary,
    // PN532HostFrame.summary and PN532ChipFrame.summary (PN53x), NDEFMessage.lines (NFCTags). The
    // viewer only chooses which decoder a line goes to and prefixes the lines.

    /// A command on a channel: an ACR122U pseudo-APDU (CLA FF) or a card APDU. `complete` is false
    /// when `c` is only the concrete prefix of a partly redacted or wildcarded command.
    static func describeCommand(_ c: [UInt8], complete: Bool = true) -> [String] {
        guard c.count >= 4 else { return [] }
        if c[0] == 0xFF { return describeACR122(c, complete: complete) }
        return describeAPDU(c)
    }

    /// A card APDU: `CommandAPDU.summary`, or the instruction's name alone for bytes that do not
    /// parse as a command APDU (or are only its header).
    static func describeAPDU(_ c: [UInt8]) -> [String] {
        guard c.count >= 4 else { return [] }
        if let apdu = try? CommandAPDU(parsing: c) { return apdu.summary }
        return [CommandAPDU.instructionName(ins: c[1], p1: c[2])]
    }

    /// An ACR122U pseudo-APDU: `ACR122Command.summary` (and through it the PN532 frame's). The
    /// PC/SC part 3 storage-card commands the reader also takes (FF 82, FF 86, FF B0, FF D6; PC/SC
    /// part 3 §3.2.2.1, docs/iso14443-t4t-ndef.md §6) are named by INS: no library type parses them.
    static func describeACR122(_ c: [UInt8], complete: Bool) -> [String] {
        switch c[1] {
        case 0x82: return ["ACR122U: load authentication key"]
        case 0x86: return ["ACR122U: authenticate (MIFARE Classic)"]
        case 0xB0: return ["ACR122U: read binary block \(c[3])"]
        case 0xD6: return ["ACR122U: update binary block \(c[3])"]
        default: break
        }
        do {
            return [try ACR122Command(parsing: c).summary]
        } catch {
            if !complete, c.count >= 7, let frame = try? PN532HostFrame(parsing: Array(c[5...])) {
                // Only the prefix is known: the frame's command, not what a redacted tail would say.
                return ["ACR122U direct transmit: PN532 \(frame.command.name) (partly redacted)"]
            }
            return ["ACR122U pseudo-APDU that does not parse: \(error.reason)"]
        }
    }

    /// An answer: the firmware string, a PN532 answer (`PN532ChipFrame.summary`) with the reader's
    /// status word after a Direct Transmit or a T=0 unit's Get Response, else an R-APDU with its status word, the NDEF records
    /// of a READ BINARY and the FCP, FMD or FCI of a SELECT.
    static func describeAnswer(_ b: TranscriptBytes, to command: [UInt8]?) -> [String] {
        guard let bytes = b.bytes else { return describeStatusWord(b) }
        if let c = command, let firmware = firmwareVersionAnswer(command: c, answer: bytes) {
            return ["firmware \"\(firmware.text)\""]
        }
        if let c = command, fetchesChipAnswer(c),
           let reply = try? ACR122Reply(parsing: bytes), let frame = try? PN532ChipFrame(parsing: reply.data) {
            let sw = StatusWord(reply.statusWord)
            return frame.summary + ["reader: SW \(sw.bytes.hexString): \(sw.meaning)"]
        }
        var out = describeStatusWord(b)
        if let c = command, c.first != 0xFF, let apdu = try? CommandAPDU(parsing: c), apdu.ins == 0xB0, apdu.cla & 0x80 == 0,
           let response = try? ResponseAPDU(parsing: bytes), response.statusWord == .success, !response.data.isEmpty {
            out += describeNDEF(response.data)
        }
        // A SELECT's FCP, FMD or FCI, with the common parameters named (ISO/IEC 7816-4 §7.4.3).
        if bytes.count > 2, let objects = SecbridgeCLI.fileControlObjects(Array(bytes.dropLast(2))) {
            out += SecbridgeCLI.tlvLines(objects)
        }
        return out
    }

    /// Whether `c` is answered with a PN532 frame and the reader's status word: a Direct Transmit,
    /// or the Get Response `FF C0 00 00 xx` that fetches its answer on a T=0 unit after `61 xx`
    /// (docs/acr122-pn532.md §2).
    static func fetchesChipAnswer(_ c: [UInt8]) -> Bool {
        guard c.first == 0xFF else { return false }
        switch try? ACR122Command(parsing: c) {
        case .directTransmit?, .getResponse?: return true
        default: return false
        }
    }

    static func describeStatusWord(_ b: TranscriptBytes) -> [String] {
        let items = b.items
        guard items.count >= 2, case .byte(let sw1) = items[items.count - 2], case .byte(let sw2) = items[items.count - 1] else { return [] }
        let sw = StatusWord(sw1: sw1, sw2: sw2)
        return ["SW \(sw.bytes.hexString): \(sw.meaning)"]
    }

    /// NDEF records in data read from a tag (T4T: NLEN then the message, docs/iso14443-t4t-ndef.md
    /// §4; or the message alone), as `NDEFMessage.lines` gives them (the lines `read` prints). Data that starts with an
    /// NDEF header (MB set) but that `NDEFMessage(parsing:)` refuses is shown with the decoder's
    /// error, the NLEN-framed reading first; other data is not NDEF and gives no line.
    static func describeNDEF(_ data: [UInt8]) -> [String] {
        var candidates: [[UInt8]] = [data]
        if data.count > 2 {
            let nlen = Int(data[0]) << 8 | Int(data[1])
            if nlen > 0 && nlen <= data.count - 2 { candidates.insert(Array(data[2..<(2 + nlen)]), at: 0) }
        }
        var refusal: TagFormatError?
        for candidate in candidates {
            guard let first = candidate.first, first & 0x80 != 0 else { continue }
            do throws(TagFormatError) {
                let message = try NDEFMessage(parsing: candidate)
                return message.lines
            } catch {
                if refusal == nil { refusal = error }
            }
        }
        return refusal.map { ["NDEF message that does not decode: \($0)"] } ?? []
    }
}

extension HexFormat {
    static func code(_ v: UInt32) -> String {
        "0x" + [UInt8(v >> 24), UInt8((v >> 16) & 0xFF), UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)].hexString.replacingSpaces()
    }
}
