import ISO7816
import Transcript

/// A command pattern: hex bytes, `??` for any one byte, and an optional trailing `*` for any
/// number of further bytes (none included). `80 CA 9F ?? *` matches `80 CA 9F 17 00`.
public struct APDUPattern: Sendable, Hashable, CustomStringConvertible {
    /// The fixed bytes (nil = any byte).
    public var items: [UInt8?]
    /// Whether more bytes may follow.
    public var openEnded: Bool

    /// - Throws: `ISO7816Error` `invalidHexDigit` for a token that is not two hex digits, `??` or a
    ///   final `*` (offset = the token's first character).
    public init(text: String) throws(ISO7816Error) {
        items = []
        openEnded = false
        var position = 0
        let tokens = text.split(separator: " ", omittingEmptySubsequences: false)
        for (index, token) in tokens.enumerated() {
            defer { position += token.count + 1 }
            if token.isEmpty { continue }
            if token == "*", index == tokens.count - 1 {
                openEnded = true
            } else if token == "??" {
                items.append(nil)
            } else if token.count == 2, let byte = UInt8(token, radix: 16) {
                items.append(byte)
            } else {
                throw ISO7816Error(
                    .invalidHexDigit, offset: position,
                    "'\(token)' is not a byte (two hex digits), ?? (any byte) or a final * (any further bytes)")
            }
        }
    }

    /// Whether `bytes` (a whole C-APDU) match: every byte given is equal, `??` matches any byte, and a trailing `*` allows more bytes.
    public func matches(_ bytes: [UInt8]) -> Bool {
        guard openEnded ? bytes.count >= items.count : bytes.count == items.count else { return false }
        for (item, byte) in zip(items, bytes) where item != nil && item != byte { return false }
        return true
    }

    /// The pattern as written: `00 A4 04 00 ?? *`.
    public var description: String {
        (items.map { $0.map { [$0].hexString } ?? "??" } + (openEnded ? ["*"] : [])).joined(separator: " ")
    }
}

/// An applet described by data (a credential file's `declarative` applet): AIDs, the answer to
/// its SELECT, and rules of "command pattern → response"; the first matching rule answers. A
/// command no rule matches gets 67 00 (wrong length, ISO/IEC 7816-4 §5.6) when rules give its
/// CLA INS P1 P2 but none of them its fifth byte (Lc, or Le of a case 2 command): the command is
/// supported, its length is not, e.g. a GET PROCESSING OPTIONS whose PDOL data has the wrong
/// length (EMV Book 3 §6.5.8.4 has the card answer 67 00). Any other command gets
/// `defaultResponse` (6D 00 unless given).
public final class DeclarativeApplet: HostApplet {
    /// One rule: C-APDUs matching `command` get `response`.
    ///
    /// A GET CHALLENGE rule (``isGetChallenge``) answers fresh random bytes, as many as
    /// `response` declares before SW1 SW2, with its status word: a card's challenge is new each
    /// time (ISO/IEC 7816-4 §11.5.3, GET CHALLENGE), so a terminal that replays an old answer is
    /// not let in by a fixed one. `pinned` keeps the declared bytes, for a test that needs them.
    public struct Rule: Sendable, Hashable {
        /// The C-APDUs this rule answers.
        public var command: APDUPattern
        /// The whole R-APDU, SW1 SW2 included.
        public var response: [UInt8]
        /// For a GET CHALLENGE rule: answer the declared bytes instead of random ones.
        public var pinned: Bool
        /// A rule answering `command` with `response` (a GET CHALLENGE rule: random bytes).
        public init(command: APDUPattern, response: [UInt8]) {
            self.command = command
            self.response = response
            pinned = false
        }
        /// A rule answering `command` with `response`; `pinned` as the property says.
        public init(command: APDUPattern, response: [UInt8], pinned: Bool) {
            self.command = command
            self.response = response
            self.pinned = pinned
        }

        /// Whether `command` is GET CHALLENGE: INS 84 in an interindustry class (CLA 0X to 7X, or
        /// `??`), ISO/IEC 7816-4 §11.5.3.
        public var isGetChallenge: Bool {
            command.items.count >= 2 && command.items[1] == 0x84 && (command.items[0].map { $0 & 0x80 == 0 } ?? true)
        }

        /// The R-APDU for one matching command: `response`, or for an unpinned GET CHALLENGE rule
        /// as many random bytes as it declares (SystemRandomNumberGenerator) + its SW1 SW2.
        func answer() -> [UInt8] {
            guard isGetChallenge, !pinned, response.count > 2 else { return response }
            var generator = SystemRandomNumberGenerator()
            return (0..<response.count - 2).map { _ in UInt8.random(in: 0...0xFF, using: &generator) } + response.suffix(2)
        }
    }

    /// The applet's name, for messages.
    public let name: String
    /// The AIDs it is selected by (exact or prefix).
    public let aids: [AIDRegistration]
    /// The R-APDU to its SELECT, SW1 SW2 included (default 90 00).
    public let selectResponse: [UInt8]
    /// The rules, first match answers.
    public let rules: [Rule]
    /// The R-APDU for a command nothing else answers (default 6D 00, INS not supported, ISO/IEC 7816-4 §5.6).
    public let defaultResponse: [UInt8]

    /// An applet of `rules`; see the properties for the defaults.
    public init(
        name: String, aids: [AIDRegistration], selectResponse: [UInt8] = [0x90, 0x00], rules: [Rule],
        defaultResponse: [UInt8] = [0x6D, 0x00]
    ) {
        self.name = name
        self.aids = aids
        self.selectResponse = selectResponse
        self.rules = rules
        self.defaultResponse = defaultResponse
    }

    /// The answer to the SELECT that chose this applet: `selectResponse`, or only its status
    /// word when P2 asks for no response data (bits b4–b3 of P2 set: `00 A4 04 0C …`; ISO/IEC
    /// 7816-4 §11.2.2, and ETSI TS 102 221 Table 11.9, "0C: no data returned").
    public func select(_ command: CommandAPDU) -> ResponseAPDU {
        let answer = Self.response(selectResponse)
        return command.p2 & 0x0C == 0x0C ? ResponseAPDU(statusWord: answer.statusWord) : answer
    }

    /// The answer to a C-APDU while selected: the first matching rule's, 67 00 for a supported
    /// command of a length no rule gives, else `defaultResponse` (see the type's documentation).
    public func process(_ command: CommandAPDU) -> ResponseAPDU {
        let bytes = command.serialized()
        if let rule = rules.first(where: { $0.command.matches(bytes) }) { return Self.response(rule.answer()) }
        if hasWrongLength(bytes) { return ResponseAPDU(statusWord: .wrongLength) }
        return Self.response(defaultResponse)
    }

    /// Whether rules give `bytes`' CLA INS P1 P2 with a fixed fifth byte, and none the one it has.
    private func hasWrongLength(_ bytes: [UInt8]) -> Bool {
        guard bytes.count >= 5 else { return false }
        let sameHeader = rules.filter { rule in
            rule.command.items.count >= 5 && zip(rule.command.items.prefix(4), bytes).allSatisfy { $0 == nil || $0 == $1 }
        }
        return !sameHeader.isEmpty && sameHeader.allSatisfy { $0.command.items[4].map { $0 != bytes[4] } ?? false }
    }

    /// Nothing to forget.
    public func deselect() {}

    private static func response(_ bytes: [UInt8]) -> ResponseAPDU {
        (try? ResponseAPDU(parsing: bytes)) ?? ResponseAPDU(statusWord: .wrongLength)
    }
}

/// An applet that answers from a transcript: each recorded command (a `tgt <` line, or a `>`
/// line when the transcript has no `tgt` lines) with the answer recorded after it. A command is
/// looked up from just after the last match, wrapping around, so a recorded sequence replays in
/// order and repeated commands get their successive answers; one never recorded gets
/// `defaultResponse` (6D 00).
public final class TranscriptApplet: HostApplet {
    /// The applet's name, for messages.
    public let name: String
    /// The AIDs it is selected by (exact or prefix).
    public let aids: [AIDRegistration]
    /// The R-APDU for a command nothing else answers (default 6D 00, INS not supported, ISO/IEC 7816-4 §5.6).
    public let defaultResponse: [UInt8]
    private let pairs: [(command: TranscriptBytes, response: [UInt8])]
    private var cursor = 0

    /// - Parameters:
    ///   - name: the applet's name in messages; default the transcript's file name.
    ///   - transcript: the recording whose command and answer pairs the applet replays.
    ///   - aids: the AIDs to answer to; when empty, the AIDs of the transcript's SELECT commands.
    ///   - defaultResponse: the R-APDU for a command never recorded, SW1-SW2 only by default:
    ///     6D 00 (INS not supported, ISO/IEC 7816-4 §5.6).
    /// - Throws: `TranscriptAppletError` when the transcript holds no command with a concrete answer.
    public init(
        name: String? = nil, transcript: Transcript, aids: [AIDRegistration] = [], defaultResponse: [UInt8] = [0x6D, 0x00]
    ) throws(TranscriptAppletError) {
        let records = transcript.lines.compactMap(\.record)
        var found = Self.pairs(records, target: true)
        if found.isEmpty { found = Self.pairs(records, target: false) }
        guard !found.isEmpty else {
            throw TranscriptAppletError(
                reason: "\(transcript.fileName) holds no command with a concrete recorded answer (`tgt <` then `tgt >`, or `>` then `<`)")
        }
        pairs = found
        self.name = name ?? transcript.fileName
        self.defaultResponse = defaultResponse
        if aids.isEmpty {
            var derived: [AIDRegistration] = []
            for pair in found {
                guard let bytes = pair.command.bytes, let command = try? CommandAPDU(parsing: bytes),
                      command.ins == 0xA4, command.p1 == 0x04, let registration = try? AIDRegistration(command.data),
                      !derived.contains(registration)
                else { continue }
                derived.append(registration)
            }
            self.aids = derived
        } else {
            self.aids = aids
        }
    }

    private static func pairs(_ records: [TranscriptRecord], target: Bool) -> [(command: TranscriptBytes, response: [UInt8])] {
        var out: [(TranscriptBytes, [UInt8])] = []
        var pending: TranscriptBytes?
        for record in records {
            switch (record.entry, target) {
            case (.target(.incoming, let bytes), true), (.transmit(.outgoing, let bytes), false):
                pending = bytes
            case (.target(.outgoing, let bytes), true), (.transmit(.incoming, let bytes), false):
                if let command = pending, let response = bytes.bytes { out.append((command, response)) }
                pending = nil
            default:
                continue
            }
        }
        return out
    }

    /// The answer to the SELECT that chose this applet.
    public func select(_ command: CommandAPDU) -> ResponseAPDU { answer(command) }
    /// The answer to a C-APDU while selected.
    public func process(_ command: CommandAPDU) -> ResponseAPDU { answer(command) }
    /// Nothing to forget.
    public func deselect() {}

    private func answer(_ command: CommandAPDU) -> ResponseAPDU {
        let bytes = command.serialized()
        for step in 0..<pairs.count {
            let index = (cursor + step) % pairs.count
            if pairs[index].command.matches(bytes) {
                cursor = index + 1
                return (try? ResponseAPDU(parsing: pairs[index].response)) ?? ResponseAPDU(statusWord: .wrongLength)
            }
        }
        return (try? ResponseAPDU(parsing: defaultResponse)) ?? ResponseAPDU(statusWord: .insNotSupported)
    }
}

/// A transcript that cannot serve as an applet.
public struct TranscriptAppletError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong with the transcript, and what to do.
    public var reason: String
    /// The pattern as written: `00 A4 04 00 ?? *`.
    public var description: String { reason }
}
