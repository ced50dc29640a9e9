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

    public func matches(_ bytes: [UInt8]) -> Bool {
        guard openEnded ? bytes.count >= items.count : bytes.count == items.count else { return false }
        for (item, byte) in zip(items, bytes) where item != nil && item != byte { return false }
        return true
    }

    public var description: String {
        (items.map { $0.map { [$0].hexString } ?? "??" } + (openEnded ? ["*"] : [])).joined(separator: " ")
    }
}

/// An applet described by data (a credential file's `declarative` applet): AIDs, the answer to
/// its SELECT, and rules of "command pattern → response"; the first matching rule answers, and a
/// command no rule matches gets `defaultResponse` (6D 00 unless given).
public final class DeclarativeApplet: HostApplet {
    public struct Rule: Sendable, Hashable {
        public var command: APDUPattern
        /// The whole R-APDU, SW1 SW2 included.
        public var response: [UInt8]
        public init(command: APDUPattern, response: [UInt8]) {
            self.command = command
            self.response = response
        }
    }

    public let name: String
    public let aids: [AIDRegistration]
    public let selectResponse: [UInt8]
    public let rules: [Rule]
    public let defaultResponse: [UInt8]

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

    public func select(_ command: CommandAPDU) -> ResponseAPDU { Self.response(selectResponse) }

    public func process(_ command: CommandAPDU) -> ResponseAPDU {
        let bytes = command.serialized()
        let rule = rules.first { $0.command.matches(bytes) }
        return Self.response(rule?.response ?? defaultResponse)
    }

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
    public let name: String
    public let aids: [AIDRegistration]
    public let defaultResponse: [UInt8]
    private let pairs: [(command: TranscriptBytes, response: [UInt8])]
    private var cursor = 0

    /// - Parameters:
    ///   - aids: the AIDs to answer to; when empty, the AIDs of the transcript's SELECT commands.
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

    public func select(_ command: CommandAPDU) -> ResponseAPDU { answer(command) }
    public func process(_ command: CommandAPDU) -> ResponseAPDU { answer(command) }
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
    public var reason: String
    public var description: String { reason }
}
