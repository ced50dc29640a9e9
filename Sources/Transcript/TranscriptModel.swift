import ISO7816

/// A recorded or written exchange with a card, a reader or a terminal: a header, then one line per
/// event.
///
/// The text form is specified in Fixtures/README.md (format version 1). Every valid text
/// round-trips exactly: `try Transcript(parsing: text, fileName: f).serialized() == text`.
/// Lines that are not events (blank lines, `;` comments) are kept as lines of their own, so the
/// index of a body line gives its line number (``lineNumber(ofBodyIndex:)``).
public struct Transcript: Sendable, Equatable {
    /// The file name used in error messages (`session.transcript:12: …`); not serialized.
    public var fileName: String
    /// The `# key: value` lines after the version line.
    public var header: TranscriptHeader
    /// The body lines, in file order.
    public var lines: [TranscriptLine]

    /// A transcript built in code.
    public init(header: TranscriptHeader = TranscriptHeader(), lines: [TranscriptLine] = [], fileName: String = "<transcript>") {
        self.fileName = fileName
        self.header = header
        self.lines = lines
    }

    /// The 1-based line number of `lines[index]` in the serialized text.
    public func lineNumber(ofBodyIndex index: Int) -> Int {
        1 + header.fields.count + index + 1
    }

    /// The text form: the version line, the header fields, the body, each line ending in LF.
    public func serialized() -> String {
        var out = "# \(TranscriptHeader.versionKey): \(TranscriptHeader.formatVersion)\n"
        for field in header.fields {
            out += "# \(field.key): \(field.value)\n"
        }
        for line in lines {
            out += line.serialized()
            out += "\n"
        }
        return out
    }
}

/// Where a transcript came from (header key `origin`).
public enum TranscriptOrigin: String, Sendable, Hashable, CaseIterable {
    /// Recorded live from a real reader or pcscd.
    case recorded
    /// Produced by a simulator (simulated reader, card or terminal).
    case simulated
    /// Converted from another tool's log (e.g. pcsc-spy).
    case imported
}

/// The header of a transcript: the format version line, then open `# key: value` lines.
///
/// Keys are lowercase ASCII letters, digits and `-`, starting with a letter. Known keys (typed
/// accessors below, validated when parsing): `tool`, `origin`, `date` (ISO 8601), `reader`,
/// `driver`, `firmware`, `atr`, `protocol`. Any other key is kept as is, in order.
public struct TranscriptHeader: Sendable, Equatable {
    /// The key of the mandatory first line.
    public static let versionKey = "secbridge-transcript"
    /// The format version this module reads and writes.
    public static let formatVersion = 1

    /// One `# key: value` line.
    public struct Field: Sendable, Hashable {
        /// The key, e.g. `reader` or `date`.
        public var key: String
        /// The value, the rest of the line after `: `.
        public var value: String
        /// The field `# key: value`.
        public init(key: String, value: String) {
            self.key = key
            self.value = value
        }
    }

    /// The fields after the version line, in file order. Keys are unique.
    public var fields: [Field]

    /// A header with `fields`, in file order; keys must be unique (Fixtures/README.md, "Header").
    public init(fields: [Field] = []) {
        self.fields = fields
    }

    /// A header with the usual provenance fields, in the canonical order; nil values are left out.
    public init(
        tool: String? = nil, origin: TranscriptOrigin? = nil, date: String? = nil, reader: String? = nil,
        driver: String? = nil, firmware: String? = nil, atr: [UInt8]? = nil,
        transmissionProtocol: TransmissionProtocol? = nil
    ) {
        fields = []
        self.tool = tool
        self.origin = origin
        self.date = date
        self.reader = reader
        self.driver = driver
        self.firmware = firmware
        self.atr = atr
        self.transmissionProtocol = transmissionProtocol
    }

    /// The value of `key`, or nil. Setting nil removes the line; setting a new key appends it.
    public subscript(key: String) -> String? {
        get { fields.first { $0.key == key }?.value }
        set {
            if let i = fields.firstIndex(where: { $0.key == key }) {
                if let newValue { fields[i].value = newValue } else { fields.remove(at: i) }
            } else if let newValue {
                fields.append(Field(key: key, value: newValue))
            }
        }
    }

    /// `tool`: the program and version that wrote the file, e.g. `secbridge 0.1.0`.
    public var tool: String? {
        get { self["tool"] }
        set { self["tool"] = newValue }
    }
    /// `origin`: recorded, simulated or imported.
    public var origin: TranscriptOrigin? {
        get { self["origin"].flatMap(TranscriptOrigin.init(rawValue:)) }
        set { self["origin"] = newValue?.rawValue }
    }
    /// `date`: when the recording started, ISO 8601 (`2025-01-31T10:00:00Z`).
    public var date: String? {
        get { self["date"] }
        set { self["date"] = newValue }
    }
    /// `reader`: the PC/SC reader name of the default channel.
    public var reader: String? {
        get { self["reader"] }
        set { self["reader"] = newValue }
    }
    /// `driver`: the reader driver and its version, e.g. `ccid 1.5.2`.
    public var driver: String? {
        get { self["driver"] }
        set { self["driver"] = newValue }
    }
    /// `firmware`: the reader firmware, e.g. `ACR122U207`.
    public var firmware: String? {
        get { self["firmware"] }
        set { self["firmware"] = newValue }
    }
    /// `atr`: the card's ATR at the start, hex.
    public var atr: [UInt8]? {
        get { self["atr"].flatMap { try? TextScanner.concreteBytes($0) } }
        set { self["atr"] = newValue.map(HexText.string) }
    }
    /// `protocol`: `T=0`, `T=1`, `RAW` or `undefined` (a DIRECT connection).
    public var transmissionProtocol: TransmissionProtocol? {
        get { self["protocol"].flatMap(TransmissionProtocol.init(rawValue:)) }
        set { self["protocol"] = newValue?.rawValue }
    }
}

/// A time offset from the start of the recording, with its unit written out: `+12.345ms`.
///
/// Stored as written (integer digits, fraction digits, unit) so that text round-trips exactly.
/// Units: `s`, `ms`, `us` (microseconds). At most 9 fraction digits and 18 digits in all.
public struct TranscriptOffset: Sendable, Hashable, CustomStringConvertible {
    /// The unit written after the number.
    public enum Unit: String, Sendable, Hashable, CaseIterable {
        /// `s`, seconds.
        case seconds = "s"
        /// `ms`, milliseconds.
        case milliseconds = "ms"
        /// `us`, microseconds.
        case microseconds = "us"

        var attoseconds: Int128 {
            switch self {
            case .seconds: 1_000_000_000_000_000_000
            case .milliseconds: 1_000_000_000_000_000
            case .microseconds: 1_000_000_000_000
            }
        }
    }

    /// All written digits as one integer: `12.345` → 12345.
    public var mantissa: UInt64
    /// How many of the digits follow the decimal point (0…9): `12.345` → 3.
    public var fractionDigits: Int
    /// The unit written after the number.
    public var unit: Unit

    /// An offset as written. `mantissa` must have at most 18 digits and `fractionDigits` be 0…9.
    public init(mantissa: UInt64, fractionDigits: Int, unit: Unit) {
        self.mantissa = mantissa
        self.fractionDigits = fractionDigits
        self.unit = unit
    }

    /// The form recorders write: milliseconds with three decimals (microsecond resolution),
    /// e.g. 12 345 µs → `+12.345ms`. Negative durations become zero; below 1 µs is dropped.
    public init(elapsed: Duration) {
        let (seconds, attoseconds) = elapsed.components
        let micro = max(0, seconds) * 1_000_000 + (seconds < 0 ? 0 : attoseconds / 1_000_000_000_000)
        self.init(mantissa: UInt64(micro), fractionDigits: 3, unit: .milliseconds)
    }

    /// The offset as a duration (exact to the attosecond for the allowed digit counts).
    public var duration: Duration {
        // The common case in one multiplication: one digit of the mantissa is a whole number of
        // attoseconds (10^(18 - 3·unit - fractionDigits) ≤ 10^18 < 2^60), and the product of a
        // 64-bit mantissa and it fits in 124 bits, so it cannot overflow.
        let unitExponent = switch unit {
        case .seconds: 18
        case .milliseconds: 15
        case .microseconds: 12
        }
        let digitExponent = unitExponent - fractionDigits
        if fractionDigits >= 0, digitExponent >= 0, digitExponent <= 18 {
            return Duration(attoseconds: Int128(mantissa) &* Int128(Self.powersOfTen[digitExponent]))
        }
        var divisor: Int128 = 1
        for _ in 0..<min(max(fractionDigits, 0), 18) { divisor *= 10 }
        let atto = Int128(mantissa) * unit.attoseconds / divisor
        let perSecond: Int128 = 1_000_000_000_000_000_000
        return Duration(
            secondsComponent: Int64(atto / perSecond), attosecondsComponent: Int64(atto % perSecond))
    }

    /// 10^0 … 10^18.
    private static let powersOfTen: [UInt64] = (0...18).map { (0..<$0).reduce(1) { value, _ in value * 10 } }

    /// `+12.345ms`.
    public var description: String {
        var digits = String(mantissa)
        if fractionDigits > 0 {
            if digits.count <= fractionDigits {
                digits = String(repeating: "0", count: fractionDigits - digits.count + 1) + digits
            }
            digits.insert(".", at: digits.index(digits.endIndex, offsetBy: -fractionDigits))
        }
        return "+" + digits + unit.rawValue
    }
}

/// Which way a payload went. `>` leaves the host, `<` reaches the host, in every role.
public enum TranscriptDirection: String, Sendable, Hashable {
    /// `>`: host to card, reader or terminal.
    case outgoing = ">"
    /// `<`: card, reader or terminal to host.
    case incoming = "<"
}

/// A failed exchange (`!` line): the error the channel threw instead of an answer.
///
/// Text: `! NAME [0xCODE] ["message"]`, e.g. `! SCARD_E_NO_SMARTCARD 0x8010000C`. NAME is ASCII
/// letters, digits, `_` and `.`, starting with a letter or `_`.
public struct TranscriptFailure: Sendable, Hashable {
    /// The error's name, e.g. `SCARD_E_NO_SMARTCARD`.
    public var name: String
    /// The numeric code when there is one, e.g. 0x8010000C.
    public var code: UInt32?
    /// Free text, e.g. the error's description.
    public var message: String?

    /// A failure named `name` (e.g. `SCARD_E_NO_SMARTCARD`), with its numeric code and a message
    /// when there are ones.
    public init(name: String, code: UInt32? = nil, message: String? = nil) {
        self.name = name
        self.code = code
        self.message = message
    }
}

/// One `key="value"` attribute of an `event` or `reader` line. Values are always quoted;
/// `\"` and `\\` are the only escapes.
public struct TranscriptAttribute: Sendable, Hashable {
    /// The key: a lowercase letter, then lowercase letters, digits and `-` (Fixtures/README.md, "Grammar").
    public var key: String
    /// The value, unescaped (written with `\"` and `\\` escaped).
    public var value: String
    /// The attribute `key="value"`.
    public init(_ key: String, _ value: String) {
        self.key = key
        self.value = value
    }
}

/// The kind of an `event` line. An open set: version 1 knows the static members below; a kind
/// starting with `x-` is an extension any reader keeps; any other unknown kind is rejected.
public struct TranscriptEventKind: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// A reader appeared (PC/SC reader list, SCardGetStatusChange on `\\?PnP?\Notification`).
    public static let readerAdded = Self(rawValue: "reader-added")
    /// A reader disappeared.
    public static let readerRemoved = Self(rawValue: "reader-removed")
    /// A card arrived in the reader's field or slot; attribute `atr`.
    public static let cardInserted = Self(rawValue: "card-inserted")
    /// The card left.
    public static let cardRemoved = Self(rawValue: "card-removed")
    /// The card was reset (SCardReconnect with reset or unpower); attribute `atr`.
    public static let cardReset = Self(rawValue: "card-reset")
    /// A card handle was opened (SCardConnect); attributes `share`, `protocol`, `handle`.
    public static let connected = Self(rawValue: "connected")
    /// A card handle was closed (SCardDisconnect); attribute `disposition`.
    public static let disconnected = Self(rawValue: "disconnected")
    /// A raw SCardGetStatusChange result; attributes `state` (dwEventState, `0x` hex), `atr`.
    public static let stateChanged = Self(rawValue: "state-changed")
    /// An RF field appeared: a terminal's field on the emulated target, or the reader's own field.
    public static let fieldOn = Self(rawValue: "field-on")
    /// The RF field went away.
    public static let fieldOff = Self(rawValue: "field-off")
    /// A terminal activated the emulated target (TgInitAsTarget returned); attributes `mode`,
    /// `initiator-command`.
    public static let targetActivated = Self(rawValue: "target-activated")
    /// The terminal released the emulated target (PN532 status 29) or deselected it.
    public static let targetReleased = Self(rawValue: "target-released")
    /// SCardBeginTransaction succeeded.
    public static let transactionBegan = Self(rawValue: "transaction-began")
    /// SCardEndTransaction.
    public static let transactionEnded = Self(rawValue: "transaction-ended")
    /// pcscd stopped answering (SCARD_E_NO_SERVICE, SCARD_E_SERVICE_STOPPED, …); attribute `error`.
    public static let serviceLost = Self(rawValue: "service-lost")
    /// A new PC/SC context was established after `service-lost`.
    public static let serviceRestored = Self(rawValue: "service-restored")

    /// The kinds format version 1 defines.
    public static let known: Set<TranscriptEventKind> = [
        .readerAdded, .readerRemoved, .cardInserted, .cardRemoved, .cardReset, .connected,
        .disconnected, .stateChanged, .fieldOn, .fieldOff, .targetActivated, .targetReleased,
        .transactionBegan, .transactionEnded, .serviceLost, .serviceRestored,
    ]

    /// True for a version 1 kind or an `x-` extension.
    public var isValid: Bool {
        Self.known.contains(self) || (rawValue.hasPrefix("x-") && TextScanner.isKey(rawValue))
    }

    public var description: String { rawValue }
}

/// An `event` line: something that happened, not an exchange of bytes.
public struct TranscriptEvent: Sendable, Hashable {
    /// What happened, e.g. `card-inserted` or `field-on`.
    public var kind: TranscriptEventKind
    /// The event's attributes, in order.
    public var attributes: [TranscriptAttribute]

    /// An `event` line of `kind` with `attributes`.
    public init(_ kind: TranscriptEventKind, _ attributes: [TranscriptAttribute] = []) {
        self.kind = kind
        self.attributes = attributes
    }

    /// The value of the attribute `key`, or nil.
    public subscript(key: String) -> String? {
        attributes.first { $0.key == key }?.value
    }
}

/// What one body line says.
///
/// Two layers live in one file. The channel layer is what crossed a `CardChannel`: `>`/`<`
/// (SCardTransmit), `ctl` (SCardControl) and `!` (the call failed); replays drive it. The APDU layer
/// holds APDUs decoded from PN532 frames: `tgt` (the host as an emulated target answering a
/// terminal) and `ini` (the host as initiator through InDataExchange); channel replays skip it.
public enum TranscriptEntry: Sendable, Hashable {
    /// `>` / `<`: an SCardTransmit command or its answer (card APDU or reader pseudo-APDU).
    case transmit(TranscriptDirection, TranscriptBytes)
    /// `ctl 0x42000001 >` / `<`: an SCardControl command with its control code, or its answer.
    case control(code: UInt32, TranscriptDirection, TranscriptBytes)
    /// `!`: the command before it on the same channel failed instead of answering.
    case failure(TranscriptFailure)
    /// `tgt <` a C-APDU the terminal sent to the emulated target; `tgt >` the host's R-APDU.
    case target(TranscriptDirection, TranscriptBytes)
    /// `ini >` a C-APDU the host sent as initiator inside PN532 frames; `ini <` the card's R-APDU.
    case initiator(TranscriptDirection, TranscriptBytes)
    /// `event kind key="value"…`.
    case event(TranscriptEvent)
    /// `reader key="value"…`: declares the reader behind a channel id (`name`, `driver`,
    /// `firmware`, …). Needs a channel id.
    case reader([TranscriptAttribute])

    /// True for the payload a command carries: `>`, `ctl … >`, `tgt <`, `ini >`.
    public var isCommand: Bool {
        switch self {
        case .transmit(let d, _), .control(_, let d, _), .initiator(let d, _): d == .outgoing
        case .target(let d, _): d == .incoming
        case .failure, .event, .reader: false
        }
    }

    /// The bytes of a payload line, or nil.
    public var payload: TranscriptBytes? {
        switch self {
        case .transmit(_, let b), .control(_, _, let b), .target(_, let b), .initiator(_, let b): b
        case .failure, .event, .reader: nil
        }
    }

    /// The same entry with other payload bytes (no change for lines without a payload).
    func replacingPayload(_ bytes: TranscriptBytes) -> TranscriptEntry {
        switch self {
        case .transmit(let d, _): .transmit(d, bytes)
        case .control(let c, let d, _): .control(code: c, d, bytes)
        case .target(let d, _): .target(d, bytes)
        case .initiator(let d, _): .initiator(d, bytes)
        case .failure, .event, .reader: self
        }
    }
}

/// One body line: a blank line, a `;` comment, or a record (an entry with its optional offset,
/// channel id and trailing note).
public enum TranscriptLine: Sendable, Hashable {
    /// An empty line.
    case blank
    /// `; text` (or `;` alone for an empty comment).
    case comment(String)
    /// `[+offset] [@channel] entry [; note]`.
    case record(TranscriptRecord)

    /// The record, or nil for a blank line or a comment.
    public var record: TranscriptRecord? {
        if case .record(let r) = self { r } else { nil }
    }

    /// The line's text without its LF.
    public func serialized() -> String {
        switch self {
        case .blank: ""
        case .comment(let text): text.isEmpty ? ";" : "; " + text
        case .record(let r): r.serialized()
        }
    }
}

/// A line that says something: an exchange, a failure, an event or a reader declaration.
public struct TranscriptRecord: Sendable, Hashable {
    /// Time since the start of the recording; nil in hand-written transcripts.
    public var offset: TranscriptOffset?
    /// `@id`: which reader or card handle; nil for the default one (the header's `reader`).
    /// ASCII letters, digits, `_`, `.`, `-`.
    public var channel: String?
    /// What the line says: an exchange, a failure, an event or a reader declaration.
    public var entry: TranscriptEntry
    /// A trailing `; note` (never empty).
    public var note: String?

    /// The line's text without its LF.
    public func serialized() -> String {
        var parts: [String] = []
        if let offset { parts.append(offset.description) }
        if let channel { parts.append("@" + channel) }
        func payload(_ head: String, _ bytes: TranscriptBytes) {
            parts.append(bytes.itemCount == 0 ? head : head + " " + bytes.description)
        }
        switch entry {
        case .transmit(let d, let b): payload(d.rawValue, b)
        case .control(let code, let d, let b): payload("ctl " + HexText.code(code) + " " + d.rawValue, b)
        case .target(let d, let b): payload("tgt " + d.rawValue, b)
        case .initiator(let d, let b): payload("ini " + d.rawValue, b)
        case .failure(let f):
            var s = "! " + f.name
            if let code = f.code { s += " " + HexText.code(code) }
            if let message = f.message { s += " " + TextScanner.quote(message) }
            parts.append(s)
        case .event(let e):
            parts.append((["event", e.kind.rawValue] + e.attributes.map(Self.attributeText)).joined(separator: " "))
        case .reader(let attributes):
            parts.append((["reader"] + attributes.map(Self.attributeText)).joined(separator: " "))
        }
        if let note { parts.append("; " + note) }
        return parts.joined(separator: " ")
    }

    private static func attributeText(_ a: TranscriptAttribute) -> String {
        a.key + "=" + TextScanner.quote(a.value)
    }
}

// The initializer is here, not in the type, so that the memberwise initializer exists: it builds
// the record in one step, while assigning each property of `self` in turn left Swift 6.3's
// optimizer with a copy of the whole record and a destroy of another (a retain and a release of
// every reference it holds: about 240 instructions a parsed line).
extension TranscriptRecord {
    /// A record of `entry`, with its time offset, `@channel` and `; note` when given.
    public init(_ entry: TranscriptEntry, offset: TranscriptOffset? = nil, channel: String? = nil, note: String? = nil) {
        self.init(offset: offset, channel: channel, entry: entry, note: note)
    }
}
