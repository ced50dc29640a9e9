import PCSCCore

/// One request line of the control protocol: a verb and named arguments.
///
/// Wire form (UTF-8, one line, at most ``maximumLength`` bytes before the `\n`):
///
///     verb [key=value | key="value with spaces"]…\n
///
/// Keys are lowercase letters, digits and `-`; a bare value holds no space or `"`; a quoted value
/// holds no `"`. Byte strings are hex, uppercase or lowercase, with or without spaces between
/// bytes: `uid=04A1B2C3` or `uid="04 A1 B2 C3"`. See ``ControlProtocol`` for the verbs.
struct ControlRequest: Sendable, Hashable {
    struct Argument: Sendable, Hashable {
        var key: String
        var value: String
    }

    static let maximumLength = 4096

    var verb: String
    var arguments: [Argument]

    init(verb: String, arguments: [Argument] = []) {
        self.verb = verb
        self.arguments = arguments
    }

    /// Parses one line (without its `\n`; a trailing `\r` is ignored).
    /// - Throws: ``ControlError`` with code `syntax`, naming the offset of the offending character.
    init(parsing line: String) throws(ControlError) {
        var characters = Array(line)
        if characters.last == "\r" { characters.removeLast() }
        var index = 0
        func skipSpaces() { while index < characters.count && characters[index] == " " { index += 1 } }
        func word(_ allowed: (Character) -> Bool) -> String {
            let start = index
            while index < characters.count && allowed(characters[index]) { index += 1 }
            return String(characters[start..<index])
        }
        let isKeyCharacter: (Character) -> Bool = { $0.isASCII && ($0.isLowercase || $0.isNumber || $0 == "-") }
        skipSpaces()
        let verb = word(isKeyCharacter)
        guard !verb.isEmpty else {
            throw ControlError(.syntax, "expected a verb (lowercase letters, digits, '-') at offset \(index); send 'help' for the list")
        }
        var arguments: [Argument] = []
        while true {
            let beforeSpaces = index
            skipSpaces()
            if index == characters.count { break }
            guard index > beforeSpaces else {
                throw ControlError(.syntax, "expected a space before offset \(index)")
            }
            let keyOffset = index
            let key = word(isKeyCharacter)
            guard !key.isEmpty, index < characters.count, characters[index] == "=" else {
                throw ControlError(.syntax, "expected key=value at offset \(keyOffset)")
            }
            index += 1
            let value: String
            if index < characters.count && characters[index] == "\"" {
                index += 1
                let start = index
                while index < characters.count && characters[index] != "\"" { index += 1 }
                guard index < characters.count else {
                    throw ControlError(.syntax, "unterminated quoted value for '\(key)' starting at offset \(start - 1)")
                }
                value = String(characters[start..<index])
                index += 1
            } else {
                value = word { $0 != " " && $0 != "\"" }
                if index < characters.count && characters[index] == "\"" {
                    throw ControlError(.syntax, "unexpected '\"' at offset \(index) inside the value of '\(key)'")
                }
            }
            guard !arguments.contains(where: { $0.key == key }) else {
                throw ControlError(.syntax, "argument '\(key)' is given twice")
            }
            arguments.append(Argument(key: key, value: value))
        }
        self.verb = verb
        self.arguments = arguments
    }

    /// The value of `key`, or nil.
    func value(_ key: String) -> String? { arguments.first { $0.key == key }?.value }

    /// The value of `key`.
    /// - Throws: ``ControlError`` `missing-argument`.
    func required(_ key: String) throws(ControlError) -> String {
        guard let value = value(key) else { throw ControlError(.missingArgument, "\(verb) needs \(key)=…") }
        return value
    }

    /// The bytes of hex argument `key`, or nil when absent.
    /// - Throws: ``ControlError`` `bad-argument` for odd or non-hex digits.
    func bytes(_ key: String) throws(ControlError) -> [UInt8]? {
        guard let text = value(key) else { return nil }
        guard let bytes = ControlHex.parse(text) else {
            throw ControlError(.badArgument, "\(key)='\(text)' is not hex bytes (e.g. \"04 A1 B2 C3\")")
        }
        return bytes
    }

    /// The unsigned integer argument `key` (decimal, or hex with 0x), or nil when absent.
    /// - Throws: ``ControlError`` `bad-argument` when it is not a number in `range`.
    func integer(_ key: String, in range: ClosedRange<Int>) throws(ControlError) -> Int? {
        guard let text = value(key) else { return nil }
        guard let number = Self.number(text), range.contains(number) else {
            throw ControlError(.badArgument, "\(key)='\(text)' must be a number in \(range.lowerBound)…\(range.upperBound)")
        }
        return number
    }

    /// `text` as an unsigned integer (decimal, or hex with 0x), or nil.
    static func number(_ text: String) -> Int? {
        text.hasPrefix("0x") ? Int(text.dropFirst(2), radix: 16) : Int(text)
    }

    /// Rejects arguments other than `keys`.
    /// - Throws: ``ControlError`` `bad-argument` naming the first unknown key.
    func allowOnly(_ keys: Set<String>) throws(ControlError) {
        if let unknown = arguments.first(where: { !keys.contains($0.key) }) {
            let list = keys.sorted().joined(separator: ", ")
            throw ControlError(.badArgument, "\(verb) takes no argument '\(unknown.key)' (it takes: \(list.isEmpty ? "none" : list))")
        }
    }

    /// The request as one line, without `\n`: a value that is empty or holds a space or a `\r` is
    /// quoted (a bare `\r` at the end of the line would be taken for a line ending). A value that
    /// holds a `"` or a `\n` has no text form: ``init(parsing:)`` never gives one.
    var serialized: String {
        ([verb] + arguments.map { argument in
            let value = argument.value
            return argument.key + "=" + (value.isEmpty || value.contains(" ") || value.contains("\r") ? "\"" + value + "\"" : value)
        }).joined(separator: " ")
    }
}

/// One reply line: `ok [key=value]…` or `error <code> <reason>`.
package struct ControlReply: Sendable, Hashable {
    var fields: [ControlRequest.Argument]

    init(_ fields: [(String, String)] = []) {
        self.fields = fields.map { ControlRequest.Argument(key: $0.0, value: $0.1) }
    }

    /// `ok key=value …` without the `\n`.
    var serialized: String {
        (["ok"] + fields.map { $0.key + "=" + Self.quoted($0.value) }).joined(separator: " ")
    }

    /// The fields as a client of the socket reads them back: each value with a `"` as `'` and a
    /// line break as a space (``quoted(_:)``), so an in-process caller sees what a socket's sees.
    package var readBack: [(key: String, value: String)] {
        fields.map { ($0.key, Self.clean($0.value)) }
    }

    /// `value`, in double quotes when it is empty or holds a space; a `"` becomes `'`.
    static func quoted(_ value: String) -> String {
        let clean = clean(value)
        return clean.isEmpty || clean.contains(" ") ? "\"" + clean + "\"" : clean
    }

    /// `value` with a `"` as `'` and a line break as a space: what a reply line can hold.
    private static func clean(_ value: String) -> String {
        String(value.map { $0 == "\"" ? "'" : ($0 == "\n" || $0 == "\r" ? " " : $0) })
    }
}

/// A failed control request, sent back as `error <code> <reason>`.
package struct ControlError: CodedError {
    /// The open set of error codes.
    package struct Code: ErrorCode {
        package var rawValue: String
        package init(rawValue: String) { self.rawValue = rawValue }

        /// The line is not `verb key=value …`.
        static let syntax = Code(rawValue: "syntax")
        /// No such verb.
        static let unknownVerb = Code(rawValue: "unknown-verb")
        /// A required argument is absent.
        static let missingArgument = Code(rawValue: "missing-argument")
        /// An argument has a wrong value or is not taken by the verb.
        static let badArgument = Code(rawValue: "bad-argument")
        /// The request is valid but the device's state does not allow it.
        static let refused = Code(rawValue: "refused")
        /// A bounded wait ended first.
        static let timeout = Code(rawValue: "timeout")
        /// The line is longer than ``ControlRequest/maximumLength``.
        static let tooLong = Code(rawValue: "too-long")
        /// Too many connections at once.
        static let busy = Code(rawValue: "busy")
    }

    package var code: Code
    package var reason: String

    package init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }

    /// `error <code> <reason>` without the `\n`.
    var serialized: String {
        "error " + code.rawValue + " " + String(reason.map { $0 == "\n" || $0 == "\r" ? " " : $0 })
    }

    /// `<code>: <reason>`.
    package var description: String { "\(code): \(reason)" }
}

/// Hex text for the control protocol: uppercase with a space between bytes out, lenient in.
///
/// A second hex codec beside ISO7816's `HexBytes`, on purpose: the control protocol is part of the
/// simulated device (the oracle the product is checked against), and its grammar (`key=HEX` with
/// `0x`, spaces or colons) must not change when the product's own parser does.
enum ControlHex {
    static func format(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789ABCDEF")
        return bytes.map { String([digits[Int($0 >> 4)], digits[Int($0 & 0x0F)]]) }.joined(separator: " ")
    }

    /// Parses hex digits, ignoring spaces and ':'; nil for an odd count or a non-hex character.
    static func parse(_ text: String) -> [UInt8]? {
        var bytes: [UInt8] = []
        var high: UInt8?
        for character in text where character != " " && character != ":" {
            guard let digit = character.hexDigitValue else { return nil }
            if let pending = high {
                bytes.append(pending << 4 | UInt8(digit))
                high = nil
            } else {
                high = UInt8(digit)
            }
        }
        return high == nil ? bytes : nil
    }
}
