import ISO7816
import PCSCCore

/// A parse or validation error of an NDEF message or a Type 4 Tag capability container: an open
/// code, the offending offset and a reason. Equal when the codes are equal.
public struct TagFormatError: CodedError {
    /// The open set of ``TagFormatError`` codes; its static members name the known ones.
    public struct Code: ErrorCode {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The input ends inside a record or before the structure is complete.
        public static let truncated = Code(rawValue: "truncated")
        /// Bytes follow the record that has ME set.
        public static let trailingBytes = Code(rawValue: "trailingBytes")
        /// MB missing on the first record or set on a later one.
        public static let messageBegin = Code(rawValue: "messageBegin")
        /// A malformed chain of chunks (CF, TNF 6): a later chunk with a type, an ID or a TNF other
        /// than 6, or ME set on a chunk with CF (NFC Forum NDEF 1.0 §3.2.4; docs/iso14443-t4t-ndef.md §5).
        public static let chunked = Code(rawValue: "chunked")
        /// A payload (a record's, or a chunked record's reassembled) larger than
        /// ``NDEFMessage/maximumPayloadSize``.
        public static let tooLarge = Code(rawValue: "tooLarge")
        /// A TNF that does not allow what the record holds (empty with data, 6 outside chunks, 7).
        public static let invalidTNF = Code(rawValue: "invalidTNF")
        /// A value that is out of range (a field built in code, a CC field Android rejects).
        public static let valueOutOfRange = Code(rawValue: "valueOutOfRange")
        /// A payload that does not decode (a text record's language length, bad UTF-8).
        public static let invalidPayload = Code(rawValue: "invalidPayload")
    }

    public let code: Code
    /// The offset of the offending byte in the parsed input, when the error is about a position.
    public let offset: Int?
    public let reason: String

    /// An error with its code, the offset of the offending byte when there is one, and a reason that
    /// says what was wrong and what to do.
    public init(_ code: Code, offset: Int? = nil, _ reason: String) {
        self.code = code
        self.offset = offset
        self.reason = reason
    }

    public var description: String {
        if let offset { return "\(code) at offset \(offset): \(reason)" }
        return "\(code): \(reason)"
    }
}

/// An NDEF record (NFC Forum NDEF 1.0; docs/iso14443-t4t-ndef.md §5).
///
/// `| header | TYPE LENGTH | PAYLOAD LENGTH (1 if SR, else 4) | [ID LENGTH] | TYPE | [ID] | PAYLOAD |`
/// with the header `| MB 80 | ME 40 | CF 20 | SR 10 | IL 08 | TNF (3 bits) |`. MB, ME, SR and IL
/// follow from the record's place in its message and its contents, so they are not stored.
public struct NDEFRecord: Sendable, Hashable {
    /// The type name format, bits 2–0 of the header.
    public struct TNF: RawRepresentable, Sendable, Hashable {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue & 0x07 }
        /// TNF 0: an empty record, no type, id or payload (NFC Forum NDEF 1.0 §3.2.6).
        public static let empty = TNF(rawValue: 0)
        /// TNF 1: an NFC Forum well-known type, e.g. "U" (URI RTD) or "T" (Text RTD).
        public static let wellKnown = TNF(rawValue: 1)
        /// TNF 2: a media type of RFC 2046, e.g. "text/plain".
        public static let mimeMedia = TNF(rawValue: 2)
        /// TNF 3: an absolute URI of RFC 3986 as the type.
        public static let absoluteURI = TNF(rawValue: 3)
        /// TNF 4: an NFC Forum external type ("example.com:mytype").
        public static let external = TNF(rawValue: 4)
        /// TNF 5: an unknown payload type; the type field is empty.
        public static let unknown = TNF(rawValue: 5)
        /// TNF 6: the chunk of a chunked record after the first; the type field is empty.
        public static let unchanged = TNF(rawValue: 6)
        /// TNF 7: reserved by the NFC Forum.
        public static let reserved = TNF(rawValue: 7)
    }

    /// The type name format: how to read ``type`` (the 3 low bits of the record header byte).
    public var tnf: TNF
    /// The record type, 0…255 bytes (e.g. `55` "U" for a well-known URI record).
    public var type: [UInt8]
    /// The record identifier, 0…255 bytes; present on the wire only with the IL flag.
    public var id: [UInt8]
    /// The payload, 0…2³²−1 bytes (SR, the short-record form, up to 255).
    public var payload: [UInt8]

    /// A record; the header flags (MB, ME, CF, SR, IL) are derived when the message is serialized
    /// (docs/iso14443-t4t-ndef.md §5).
    public init(tnf: TNF, type: [UInt8] = [], id: [UInt8] = [], payload: [UInt8] = []) {
        self.tnf = tnf
        self.type = type
        self.id = id
        self.payload = payload
    }

    /// The empty record `D0 00 00` (as a whole message).
    public static let empty = NDEFRecord(tnf: .empty)

    // MARK: URI records (NFC Forum URI RTD)

    /// The URI identifier codes 00…23: the prefix each code abbreviates.
    public static let uriPrefixes: [String] = [
        "", "http://www.", "https://www.", "http://", "https://", "tel:", "mailto:",
        "ftp://anonymous:anonymous@", "ftp://ftp.", "ftps://", "sftp://", "smb://", "nfs://", "ftp://",
        "dav://", "news:", "telnet://", "imap:", "rtsp://", "urn:", "pop:", "sip:", "sips:", "tftp:",
        "btspp://", "btl2cap://", "btgoep://", "tcpobex://", "irdaobex://", "file://", "urn:epc:id:",
        "urn:epc:tag:", "urn:epc:pat:", "urn:epc:raw:", "urn:epc:", "urn:nfc:",
    ]

    /// A well-known 'U' record; the longest matching prefix is abbreviated by its code.
    /// `https://example.com` → payload `04 65 78 61 6D 70 6C 65 2E 63 6F 6D`.
    public static func uri(_ uri: String) -> NDEFRecord {
        var best = 0
        for (code, prefix) in uriPrefixes.enumerated() where code > 0 && uri.hasPrefix(prefix) {
            if prefix.count > uriPrefixes[best].count { best = code }
        }
        let rest = uri.dropFirst(uriPrefixes[best].count)
        return NDEFRecord(tnf: .wellKnown, type: [0x55], payload: [UInt8(best)] + Array(rest.utf8))
    }

    /// The URI of a well-known 'U' record; nil for other records.
    /// - Throws: `TagFormatError` `invalidPayload` for an empty payload, an unknown code or bad UTF-8.
    public func uriValue() throws(TagFormatError) -> String? {
        guard tnf == .wellKnown, type == [0x55] else { return nil }
        guard let code = payload.first else { throw TagFormatError(.invalidPayload, "a URI record's payload starts with the identifier code; it is empty") }
        guard Int(code) < Self.uriPrefixes.count else {
            throw TagFormatError(.invalidPayload, offset: 0, "URI identifier code \([code].hexString) is reserved (known: 00 … 23)")
        }
        guard let rest = String(validating: payload.dropFirst(), as: UTF8.self) else {
            throw TagFormatError(.invalidPayload, offset: 1, "the URI is not valid UTF-8")
        }
        return Self.uriPrefixes[Int(code)] + rest
    }

    // MARK: Text records (NFC Forum Text RTD)

    /// A well-known 'T' record in UTF-8: `| status (b7 UTF-16 = 0, b5–b0 language length) | language | text |`.
    /// "Hello" in "en" → payload `02 65 6E 48 65 6C 6C 6F`.
    /// - Throws: `TagFormatError` `valueOutOfRange` for a language code longer than 63 bytes.
    public static func text(_ text: String, language: String = "en") throws(TagFormatError) -> NDEFRecord {
        let lang = Array(language.utf8)
        guard lang.count <= 0x3F else {
            throw TagFormatError(.valueOutOfRange, "a language code is at most 63 bytes; \"\(language)\" has \(lang.count)")
        }
        return NDEFRecord(tnf: .wellKnown, type: [0x54], payload: [UInt8(lang.count)] + lang + Array(text.utf8))
    }

    /// The text and language of a well-known 'T' record; nil for other records.
    ///
    /// Payload: `| status | language (b5–b0 of status bytes, US-ASCII) | text |`, where status bit 7
    /// gives the text's encoding (0 UTF-8, 1 UTF-16) and bit 6 is reserved (NFC Forum Text RTD 1.0;
    /// docs/iso14443-t4t-ndef.md §5). UTF-16 text may start with a byte order mark, `FE FF`
    /// (big-endian) or `FF FE` (little-endian), which is not part of the text; without one it is
    /// big-endian (the "UTF-16" charset of RFC 2781 §4.3). "Hi" in "en" as UTF-16 is the payload
    /// `82 65 6E 00 48 00 69`.
    /// - Throws: `TagFormatError` `invalidPayload` for an empty payload, a language longer than the
    ///   payload, UTF-16 text of an odd number of bytes, or text or language that does not decode
    ///   (bad UTF-8, an unpaired UTF-16 surrogate); the offset is that of the field in the payload.
    public func textValue() throws(TagFormatError) -> (text: String, language: String)? {
        guard tnf == .wellKnown, type == [0x54] else { return nil }
        guard let status = payload.first else { throw TagFormatError(.invalidPayload, "a text record needs its status byte") }
        let length = Int(status & 0x3F)
        guard payload.count >= 1 + length else {
            throw TagFormatError(.invalidPayload, offset: 0, "the language code is \(length) bytes but the payload holds \(payload.count - 1)")
        }
        guard let language = String(validating: payload[1..<(1 + length)], as: UTF8.self) else {
            throw TagFormatError(.invalidPayload, offset: 1, "the text record's language code is not valid UTF-8")
        }
        let body = payload[(1 + length)...]
        guard status & 0x80 != 0 else {
            guard let text = String(validating: body, as: UTF8.self) else {
                throw TagFormatError(.invalidPayload, offset: 1 + length, "the text record's text is not valid UTF-8")
            }
            return (text, language)
        }
        guard body.count % 2 == 0 else {
            throw TagFormatError(
                .invalidPayload, offset: 1 + length,
                "the text record is UTF-16 (status bit 7) but its text is \(body.count) bytes, an odd number")
        }
        var bigEndian = true
        var bytes = Array(body)
        if bytes.count >= 2, bytes[0] == 0xFF, bytes[1] == 0xFE {
            bigEndian = false
            bytes.removeFirst(2)
        } else if bytes.count >= 2, bytes[0] == 0xFE, bytes[1] == 0xFF {
            bytes.removeFirst(2)
        }
        var units: [UInt16] = []
        units.reserveCapacity(bytes.count / 2)
        for i in stride(from: 0, to: bytes.count, by: 2) {
            units.append(bigEndian ? UInt16(bytes[i]) << 8 | UInt16(bytes[i + 1]) : UInt16(bytes[i + 1]) << 8 | UInt16(bytes[i]))
        }
        guard let text = String(validating: units, as: UTF16.self) else {
            throw TagFormatError(.invalidPayload, offset: 1 + length, "the text record's UTF-16 text has an unpaired surrogate")
        }
        return (text, language)
    }
}

/// An NDEF message: one or more records, MB on the first, ME on the last (docs/iso14443-t4t-ndef.md §5).
public struct NDEFMessage: Sendable, Hashable {
    /// The records in order; the first carries MB and the last ME on the wire.
    public var records: [NDEFRecord]

    /// - Throws: `TagFormatError` `valueOutOfRange` with no records, or a type or ID over 255 bytes.
    public init(records: [NDEFRecord]) throws(TagFormatError) {
        guard !records.isEmpty else {
            throw TagFormatError(.valueOutOfRange, "an NDEF message holds at least one record (use NDEFRecord.empty)")
        }
        for (i, record) in records.enumerated() where record.type.count > 255 || record.id.count > 255 {
            throw TagFormatError(.valueOutOfRange, "record \(i): TYPE and ID are at most 255 bytes each")
        }
        self.records = records
    }

    /// The message's bytes.
    public func serialized() -> [UInt8] {
        var out: [UInt8] = []
        for (index, record) in records.enumerated() {
            var header = record.tnf.rawValue
            if index == 0 { header |= 0x80 }
            if index == records.count - 1 { header |= 0x40 }
            let short = record.payload.count < 256
            if short { header |= 0x10 }
            if !record.id.isEmpty { header |= 0x08 }
            out.append(header)
            out.append(UInt8(record.type.count))
            if short {
                out.append(UInt8(record.payload.count))
            } else {
                let n = UInt32(record.payload.count)
                out += [UInt8(n >> 24), UInt8((n >> 16) & 0xFF), UInt8((n >> 8) & 0xFF), UInt8(n & 0xFF)]
            }
            if !record.id.isEmpty { out.append(UInt8(record.id.count)) }
            out += record.type + record.id + record.payload
        }
        return out
    }

    /// The largest payload a record may have, also once its chunks are joined: 10 MiB
    /// (10 485 760 bytes), the limit of Android's `NdefRecord.parse` (`MAX_PAYLOAD_SIZE`), so a
    /// message Android refuses as too large is refused here too (docs/iso14443-t4t-ndef.md §5).
    /// The check is made on the declared lengths, before any bytes are copied.
    public static let maximumPayloadSize = 10 * (1 << 20)

    /// Parses a whole message; chunked records (NFC Forum NDEF 1.0 §3.2.4) are joined into one.
    ///
    /// A chunked record is a first chunk with CF (20) set and its own TNF and TYPE (and ID),
    /// then chunks of TNF 6 (unchanged) with an empty TYPE and no ID, CF set on all but the last;
    /// the payloads joined in order are the record's payload. Only the first chunk may carry MB,
    /// only the last ME.
    /// - Throws: `TagFormatError`: `truncated` (the input ends inside a record, or before a record
    ///   with ME), `trailingBytes`, `messageBegin`, `chunked` (a malformed chain: a later chunk
    ///   of another TNF or with a TYPE or ID, ME set on a chunk with CF),
    ///   `tooLarge` (a payload, or the joined payload, over ``maximumPayloadSize``), `invalidTNF`
    ///   (TNF 6 outside a chain, TNF 7, an empty record with contents or CF).
    public init(parsing bytes: [UInt8]) throws(TagFormatError) {
        var records: [NDEFRecord] = []
        // The chain being joined: its first chunk's record (payload growing) and its offset.
        var chain: (record: NDEFRecord, start: Int)?
        var i = 0
        func need(_ n: Int, _ what: String) throws(TagFormatError) {
            guard bytes.count - i >= n else {
                throw TagFormatError(.truncated, offset: bytes.count, "the message ends inside \(what) of record \(records.count)")
            }
        }
        // Bounded: every pass consumes at least 3 bytes.
        while true {
            let start = i
            try need(3, "the header")
            let header = bytes[i]
            let isFirst = records.isEmpty && chain == nil
            guard (header & 0x80 != 0) == isFirst else {
                throw TagFormatError(
                    .messageBegin, offset: start,
                    isFirst ? "the first record must have MB (80) set" : "only the first record may have MB (80) set")
            }
            let more = header & 0x20 != 0
            if more, header & 0x40 != 0 {
                throw TagFormatError(.chunked, offset: start, "a chunk with CF (20) set cannot end the message (ME, 40): chunks follow it")
            }
            let tnf = NDEFRecord.TNF(rawValue: header)
            if chain != nil {
                guard tnf == .unchanged else {
                    throw TagFormatError(.chunked, offset: start, "a chunk after the first must have TNF 6 (unchanged), not \(tnf.rawValue)")
                }
                guard header & 0x08 == 0 else {
                    throw TagFormatError(.chunked, offset: start, "only the first chunk of a chunked record may have an ID (IL, 08)")
                }
            } else if tnf == .unchanged {
                throw TagFormatError(.invalidTNF, offset: start, "TNF 6 (unchanged) is only for the chunks after the first of a chunked record")
            } else if tnf == .reserved {
                throw TagFormatError(.invalidTNF, offset: start, "TNF 7 is reserved")
            }
            let typeLength = Int(bytes[i + 1])
            i += 2
            var payloadLength: Int
            if header & 0x10 != 0 {
                payloadLength = Int(bytes[i])
                i += 1
            } else {
                try need(4, "the 4-byte PAYLOAD LENGTH")
                payloadLength = 0
                for k in 0..<4 { payloadLength = payloadLength << 8 | Int(bytes[i + k]) }
                i += 4
            }
            let joined = payloadLength + (chain?.record.payload.count ?? 0)
            guard joined <= Self.maximumPayloadSize else {
                throw TagFormatError(
                    .tooLarge, offset: chain?.start ?? start,
                    "a payload of \(joined) bytes\(chain == nil ? "" : " (chunks joined)") is over the limit of \(Self.maximumPayloadSize) (10 MiB, Android's)")
            }
            var idLength = 0
            if header & 0x08 != 0 {
                try need(1, "the ID LENGTH")
                idLength = Int(bytes[i])
                i += 1
            }
            if chain != nil, typeLength != 0 {
                throw TagFormatError(.chunked, offset: start, "a chunk after the first must have an empty TYPE; this one has \(typeLength) bytes")
            }
            try need(typeLength, "the TYPE")
            let type = Array(bytes[i..<(i + typeLength)])
            i += typeLength
            try need(idLength, "the ID")
            let id = Array(bytes[i..<(i + idLength)])
            i += idLength
            try need(payloadLength, "the PAYLOAD (\(payloadLength) bytes)")
            let payload = bytes[i..<(i + payloadLength)]
            i += payloadLength
            if tnf == .empty, typeLength + idLength + payloadLength > 0 || more {
                throw TagFormatError(.invalidTNF, offset: start, "an empty record (TNF 0) has no type, ID or payload and is not chunked")
            }
            if chain != nil {
                chain!.record.payload += payload
            } else {
                chain = (NDEFRecord(tnf: tnf, type: type, id: id, payload: Array(payload)), start)
            }
            if !more, let done = chain {
                records.append(done.record)
                chain = nil
            }
            if header & 0x40 != 0 { break }
            if i == bytes.count {
                throw TagFormatError(
                    .truncated, offset: i,
                    chain == nil ? "the message ends before a record with ME (40)" : "the message ends inside a chunked record (the last chunk has CF clear)")
            }
        }
        guard i == bytes.count else {
            throw TagFormatError(.trailingBytes, offset: i, "\(bytes.count - i) bytes follow the record with ME (40)")
        }
        self.records = records
    }
}
