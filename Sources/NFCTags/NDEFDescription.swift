/// A Smart Poster's parts (NFC Forum Smart Poster RTD 1.0; docs/iso14443-t4t-ndef.md §5): the
/// payload of a well-known record of type "Sp" is itself an NDEF message holding one URI record
/// and, optionally, titles (Text records, one a language), an action ("act", 1 byte), the size
/// of what the URI names ("s", 4 bytes big-endian), its MIME type ("t", UTF-8 text) and icons
/// (MIME records of an image/ or video/ type).
public struct SmartPoster: Sendable, Hashable {
    /// The URI of the nested URI record; nil when there is none (the RTD requires exactly one).
    public var uri: String?
    /// How many nested URI records there were (1 when well-formed).
    public var uriRecordCount: Int
    /// The titles in order, each with its language code.
    public var titles: [(text: String, language: String)]
    /// The action byte: 00 do the action (open, call, send), 01 save it for later, 02 open it for editing.
    public var action: UInt8?
    /// The size in bytes of the object the URI names.
    public var size: UInt32?
    /// The MIME type of the object the URI names.
    public var type: String?
    /// The icons: each MIME type and its payload size in bytes.
    public var icons: [(type: String, bytes: Int)]
    /// The nested records this type does not read (kept whole, shown by their summary).
    public var others: [NDEFRecord]

    public static func == (l: SmartPoster, r: SmartPoster) -> Bool {
        l.uri == r.uri && l.uriRecordCount == r.uriRecordCount && l.titles.map(\.text) == r.titles.map(\.text)
            && l.titles.map(\.language) == r.titles.map(\.language) && l.action == r.action && l.size == r.size
            && l.type == r.type && l.icons.map(\.type) == r.icons.map(\.type) && l.icons.map(\.bytes) == r.icons.map(\.bytes)
            && l.others == r.others
    }

    public func hash(into h: inout Hasher) {
        h.combine(uri)
        h.combine(titles.map(\.text))
        h.combine(action)
        h.combine(size)
    }

    /// What an action byte asks (Smart Poster RTD 1.0, the "act" record).
    public static func actionName(_ value: UInt8) -> String {
        switch value {
        case 0x00: "do the action (open, call, send)"
        case 0x01: "save for later"
        case 0x02: "open for editing"
        default: "reserved"
        }
    }
}

extension NDEFRecord {
    /// The type of an Android Application Record (TNF 4): its payload is a package name.
    public static let androidApplicationType = Array("android.com:pkg".utf8)

    /// The parts of a well-known "Sp" record; nil for other records.
    /// - Throws: `TagFormatError` from `NDEFMessage(parsing:)` when the payload is not an NDEF
    ///   message; `invalidPayload` for an "act" record that is not 1 byte, an "s" record that is
    ///   not 4, a "t" record or URI or title that does not decode.
    public func smartPosterValue() throws(TagFormatError) -> SmartPoster? {
        guard tnf == .wellKnown, type == Array("Sp".utf8) else { return nil }
        let nested = try NDEFMessage(parsing: payload)
        var poster = SmartPoster(uri: nil, uriRecordCount: 0, titles: [], action: nil, size: nil, type: nil, icons: [], others: [])
        for record in nested.records {
            if let uri = try record.uriValue() {
                poster.uriRecordCount += 1
                if poster.uri == nil { poster.uri = uri }
            } else if let title = try record.textValue() {
                poster.titles.append(title)
            } else if record.tnf == .wellKnown, record.type == Array("act".utf8) {
                guard record.payload.count == 1 else {
                    throw TagFormatError(.invalidPayload, "a Smart Poster's action record holds 1 byte; this one holds \(record.payload.count)")
                }
                poster.action = record.payload[0]
            } else if record.tnf == .wellKnown, record.type == [0x73] {
                guard record.payload.count == 4 else {
                    throw TagFormatError(.invalidPayload, "a Smart Poster's size record holds 4 bytes; this one holds \(record.payload.count)")
                }
                poster.size = record.payload.reduce(0) { $0 << 8 | UInt32($1) }
            } else if record.tnf == .wellKnown, record.type == [0x74] {
                guard let text = String(validating: record.payload, as: UTF8.self) else {
                    throw TagFormatError(.invalidPayload, "a Smart Poster's type record is not valid UTF-8")
                }
                poster.type = text
            } else if record.tnf == .mimeMedia, let mime = String(validating: record.type, as: UTF8.self),
                      mime.hasPrefix("image/") || mime.hasPrefix("video/") {
                poster.icons.append((mime, record.payload.count))
            } else {
                poster.others.append(record)
            }
        }
        return poster
    }

    /// The record in a few words, as this type decodes it (docs/iso14443-t4t-ndef.md §5):
    ///
    /// | Record | Summary |
    /// |---|---|
    /// | TNF 0 | `empty record` |
    /// | URI (``uriValue()``) | `URI https://example.com` |
    /// | Text (``textValue()``, UTF-8 or UTF-16) | `text "Hello" (en)` |
    /// | Smart Poster (``smartPosterValue()``) | `smart poster https://example.com`; its parts in ``details`` |
    /// | Android Application Record | `Android application "com.example.app"` |
    /// | TNF 4 (external) | `external type "example.com:t": "payload"` |
    /// | TNF 2 (MIME) | `MIME "text/plain": "payload"` |
    /// | URI, Text or Smart Poster that does not decode | `text record that does not decode: <reason>` |
    /// | any other | `TNF 5, type "", 2-byte payload 01 02` |
    ///
    /// A payload is shown as quoted text when it is valid UTF-8 without control characters but
    /// tab, CR and LF (written `\t`, `\r`, `\n`; `"` and `\` are escaped), else as hex (the first 64
    /// bytes and the count when longer). A record with an ID ends `, ID "…"`. The type and ID are
    /// quoted when they are printable ASCII (20…7E), in hex otherwise.
    public var summary: String {
        var text: String
        if tnf == .empty {
            text = "empty record"
        } else {
            do throws(TagFormatError) {
                if let uri = try uriValue() {
                    text = "URI \(uri)"
                } else if let value = try textValue() {
                    text = "text \"\(value.text)\" (\(value.language))"
                } else if let poster = try smartPosterValue() {
                    text = "smart poster" + (poster.uri.map { " \($0)" } ?? " without a URI record")
                } else if tnf == .external, type == Self.androidApplicationType {
                    text = "Android application \(Self.textOrHex(payload))"
                } else if tnf == .external {
                    text = "external type \(Self.quotedOrHex(type)): \(Self.textOrHex(payload))"
                } else if tnf == .mimeMedia {
                    text = "MIME \(Self.quotedOrHex(type)): \(Self.textOrHex(payload))"
                } else {
                    text = "TNF \(tnf.rawValue), type \(Self.quotedOrHex(type)), \(payload.count)-byte payload"
                    if !payload.isEmpty { text += " " + Self.hexShown(payload) }
                }
            } catch {
                let kind = type == [0x55] ? "URI" : type == [0x54] ? "text" : "smart poster"
                text = "\(kind) record that does not decode: \(error.reason)"
            }
        }
        if !id.isEmpty { text += ", ID \(Self.quotedOrHex(id))" }
        return text
    }

    /// The lines under ``summary``: a Smart Poster's parts (`URI …`, `title "…" (en)`, `action 00:
    /// do the action (open, call, send)`, `size 1024 bytes`, `type "text/html"`, `icon "image/png",
    /// 68 bytes`, `record: <summary>` for other nested records, and a `warning:` when the URI
    /// record is missing or repeated); empty for other records or one that does not decode.
    public var details: [String] {
        guard let poster = try? smartPosterValue() else { return [] }
        var lines: [String] = []
        if let uri = poster.uri { lines.append("URI \(uri)") }
        if poster.uriRecordCount != 1 {
            lines.append("warning: \(poster.uriRecordCount) URI records; a Smart Poster holds exactly one (Smart Poster RTD 1.0)")
        }
        for title in poster.titles { lines.append("title \"\(title.text)\" (\(title.language))") }
        if let action = poster.action { lines.append("action \([action].hexString): \(SmartPoster.actionName(action))") }
        if let size = poster.size { lines.append("size \(size) bytes") }
        if let type = poster.type { lines.append("type \"\(type)\"") }
        for icon in poster.icons { lines.append("icon \"\(icon.type)\", \(icon.bytes) bytes") }
        for other in poster.others { lines.append("record: \(other.summary)") }
        return lines
    }

    /// `"abc"` for printable ASCII (20…7E), the hex otherwise (and for no bytes, `""`).
    static func quotedOrHex(_ bytes: [UInt8]) -> String {
        if bytes.allSatisfy({ (0x20...0x7E).contains($0) }) { return "\"" + String(decoding: bytes, as: UTF8.self) + "\"" }
        return bytes.hexString
    }

    /// A payload as quoted, escaped text when it is valid UTF-8 with no control character but tab,
    /// CR and LF; otherwise ``hexShown(_:)``.
    static func textOrHex(_ bytes: [UInt8]) -> String {
        guard let text = String(validating: bytes, as: UTF8.self),
              text.unicodeScalars.allSatisfy({ !($0.properties.generalCategory == .control) || $0 == "\t" || $0 == "\n" || $0 == "\r" })
        else { return hexShown(bytes) }
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    /// Hex, whole up to 64 bytes; beyond, the first 64 and `… (N bytes)`.
    static func hexShown(_ bytes: [UInt8]) -> String {
        bytes.count <= 64 ? bytes.hexString : Array(bytes.prefix(64)).hexString + " … (\(bytes.count) bytes)"
    }
}

extension NDEFMessage {
    /// The message as `read` and `transcript show` print it: `NDEF record N: <summary>` for each
    /// record, its ``NDEFRecord/details`` below it indented by two spaces.
    public var lines: [String] {
        var out: [String] = []
        for (index, record) in records.enumerated() {
            out.append("NDEF record \(index + 1): \(record.summary)")
            out += record.details.map { "  " + $0 }
        }
        return out
    }
}
