import ISO7816
import Transcript

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The kind of value an option takes. The parser checks every given value against its kind before
/// the command runs, and refuses one that does not fit with a usage error naming the option, what
/// it takes and what was given.
package enum ValueKind: Sendable {
    /// Any text (a name, a URI, a file to write).
    case text
    /// A whole number in the range.
    case integer(ClosedRange<Int>)
    /// A number of seconds, fractions allowed, above 0 (at least `atLeast` when given) and at most `limit`.
    case seconds(limit: Double, atLeast: Double = 0)
    /// A decimal number (digits and a point) above `lower` and at most `upper`; `note` is said
    /// after the range in the refusal.
    case decimal(above: Double, atMost: Double, note: String? = nil)
    /// One of `words`. The refusal reads "--NAME takes a, b or c, not 'x'", or with a `noun`
    /// "unknown NOUN 'x'; use one of a, b, c".
    case choice([String], noun: String? = nil)
    /// Bytes in hex (spaces, colons, 0x allowed), `lengths` bytes long when given. `takes` says
    /// what for the refusal of a wrong length ("--NAME takes TAKES, not N"); a `secret` (a key) is
    /// refused with "--NAME takes TAKES" only, never showing the text or where it went wrong.
    case hex(lengths: [Int]? = nil, takes: String, secret: Bool = false)
    /// The path of a file the command reads: it must exist and not be a directory.
    case existingFile
    /// A reader: an index from `secbridge readers` or part of a reader name, not empty.
    case reader

    /// Why `text` does not fit, as the usage error for option `name`; nil when it fits.
    package func refusal(of text: String, option name: String) -> String? {
        switch self {
        case .text:
            return nil
        case .integer(let range):
            guard let number = Int(text), range.contains(number) else {
                return "--\(name) takes a whole number from \(range.lowerBound) to \(range.upperBound), not '\(text)'"
            }
            return nil
        case .seconds(let limit, let atLeast):
            guard let number = Double(text), number > 0, number >= atLeast, number <= limit else {
                let lower = atLeast > 0 ? "from \(decimalText(atLeast)) to \(Int(limit))" : "greater than 0 and at most \(Int(limit))"
                return "--\(name) takes a number of seconds \(lower), not '\(text)'"
            }
            return nil
        case .decimal(let lower, let upper, let note):
            guard text.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }), let number = Double(text),
                number > lower, number <= upper
            else {
                return "--\(name) takes a decimal number above \(decimalText(lower)) and at most \(decimalText(upper))"
                    + (note.map { " (\($0))" } ?? "") + ", not '\(text)'"
            }
            return nil
        case .choice(let words, let noun):
            guard !words.contains(text) else { return nil }
            if let noun { return "unknown \(noun) '\(text)'; use one of \(words.joined(separator: ", "))" }
            return "--\(name) takes \(listed(words)), not '\(text)'"
        case .hex(let lengths, let takes, let secret):
            let bytes: [UInt8]
            do {
                bytes = try HexBytes.parse(text)
            } catch {
                return secret ? "--\(name) takes \(takes)" : "--\(name) is not hex: \(error.reason)"
            }
            if let lengths, !lengths.contains(bytes.count) {
                return secret ? "--\(name) takes \(takes)" : "--\(name) takes \(takes), not \(bytes.count)"
            }
            return nil
        case .existingFile:
            var info = stat()
            guard stat(text, &info) == 0 else {
                return "--\(name) takes an existing file, not '\(text)' (\(String(cString: strerror(errno))))"
            }
            if info.st_mode & S_IFMT == S_IFDIR {
                return "--\(name) takes an existing file, not '\(text)' (a directory)"
            }
            return nil
        case .reader:
            return text.isEmpty ? "--\(name) needs a reader index or part of a reader name, not an empty string" : nil
        }
    }
}

/// 0 → "0", 0.5 → "0.5".
private func decimalText(_ value: Double) -> String {
    value == value.rounded() && abs(value) < 1e15 ? String(Int(value)) : String(value)
}

/// ["a", "b", "c"] → "a, b or c".
private func listed(_ words: [String]) -> String {
    guard words.count > 1 else { return words.first ?? "" }
    return words.dropLast().joined(separator: ", ") + " or " + words.last!
}

/// An option a command accepts.
package struct OptionSpec: Sendable {
    /// The long name without dashes, e.g. "reader".
    package let name: String
    /// A one-letter alias, e.g. "r", or nil.
    package let short: Character?
    /// The value's placeholder for help ("NAME|INDEX"), or nil for a flag.
    package let valueName: String?
    package let help: String
    /// What the value must be (checked before the command runs); `.text` for a flag.
    package let kind: ValueKind
    /// Whether the value is a secret (a key) that may also be given by reference, `env:NAME`,
    /// `file:PATH` or `-`, so that it stays out of the process list (see ``secret()``).
    package private(set) var isSecret = false

    package static func flag(_ name: String, short: Character? = nil, _ help: String) -> OptionSpec {
        OptionSpec(name: name, short: short, valueName: nil, help: help, kind: .text)
    }
    /// An option with a value of `kind` (free text unless given).
    package static func value(
        _ name: String, short: Character? = nil, _ valueName: String, _ help: String, _ kind: ValueKind = .text
    ) -> OptionSpec {
        OptionSpec(name: name, short: short, valueName: valueName, help: help, kind: kind)
    }

    /// This option, marked as a secret: its value may be given as `env:NAME` (an environment
    /// variable), `file:PATH` (the file's first line) or `-` (one line of standard input) instead
    /// of in argv, which every local user can read in `/proc/PID/cmdline`; the help says so.
    package func secret() -> OptionSpec {
        var copy = OptionSpec(
            name: name, short: short, valueName: valueName,
            help: help + " " + secretReferenceHelp, kind: kind)
        copy.isSecret = true
        return copy
    }
    /// `--wait SECONDS`: wait (at most an hour) for a card when none is there (``waitForCard(context:reader:upTo:)``).
    package static let waitForCard = OptionSpec.value(
        "wait", "SECONDS", "Wait up to SECONDS (at most 3600) for a card when none is there.", .seconds(limit: 3600))

    /// `--code HEX4`: the SCardControl code of escape commands (`control`, and `control` lines of scripts).
    package static let controlCode = OptionSpec.value(
        "code", "HEX4", "The SCardControl code, e.g. 42000001 (default: the escape code the reader announces).",
        .hex(lengths: [4], takes: "a 4-byte control code such as 42000001"))

    /// `-r, --reader NAME|INDEX`: a reader index or part of a reader name.
    package static func reader(_ help: String) -> OptionSpec {
        .value("reader", short: "r", "NAME|INDEX", help, .reader)
    }
}

/// Arguments after parsing: options by long name, and positional arguments in order. Values were
/// checked against their options' kinds, so the typed accessors find them well formed.
package struct ParsedArguments: Sendable {
    package var flags: Set<String> = []
    package var values: [String: String] = [:]
    package var positional: [String] = []

    package func has(_ flag: String) -> Bool { flags.contains(flag) }
    package func value(_ name: String) -> String? { values[name] }

    /// The value of an `.integer` option.
    package func integer(_ name: String) -> Int? { values[name].flatMap { Int($0) } }

    /// The value of a `.seconds` option, to the millisecond.
    package func seconds(_ name: String) -> Duration? {
        values[name].flatMap { Double($0) }.map { .milliseconds(Int64(($0 * 1000).rounded())) }
    }

    /// The value of a `.decimal` option.
    package func decimal(_ name: String) -> Double? { values[name].flatMap { Double($0) } }

    /// The bytes of a `.hex` option.
    package func bytes(_ name: String) -> [UInt8]? { values[name].flatMap { try? HexBytes.parse($0) } }
}

/// Parses `arguments` against `options`: `--name value`, `--name=value`, `-x value`, flags, and `--`
/// to end options. `--help`/`-h` is always accepted. An option with a value given twice is a usage
/// error (the second would silently replace the first); a flag given twice is the flag. Then each
/// given value is checked against its option's kind, in the order the options were given (unless
/// help was asked for).
///
/// The values of secret options (``OptionSpec/secret()``) given by reference are replaced by what
/// they refer to before the check: `env:NAME`, `file:PATH`, or `-` (a line read with
/// `standardInput`).
package func parseArguments(
    _ arguments: [String], options: [OptionSpec], standardInput: () -> String? = { nil }
) throws(CLIError) -> ParsedArguments {
    var parsed = ParsedArguments()
    var index = 0
    var optionsEnded = false
    var given: [OptionSpec] = []
    func spec(named name: String) -> OptionSpec? { options.first { $0.name == name } }
    while index < arguments.count {
        let argument = arguments[index]
        index += 1
        if optionsEnded || argument == "-" || !argument.hasPrefix("-") || isNegativeNumberOrHex(argument) {
            parsed.positional.append(argument)
            continue
        }
        if argument == "--" {
            optionsEnded = true
            continue
        }
        if argument == "--help" || argument == "-h" {
            parsed.flags.insert("help")
            continue
        }
        var name: String
        var inlineValue: String?
        if argument.hasPrefix("--") {
            name = String(argument.dropFirst(2))
            if let equals = name.firstIndex(of: "=") {
                inlineValue = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            }
        } else {
            let letter = argument.dropFirst().first!
            guard argument.count == 2, let match = options.first(where: { $0.short == letter }) else {
                throw .usage("unknown option '\(argument)'")
            }
            name = match.name
        }
        guard let option = spec(named: name) else {
            throw .usage("unknown option '--\(name)'")
        }
        if option.valueName == nil {
            if inlineValue != nil { throw .usage("--\(name) takes no value") }
            parsed.flags.insert(name)
        } else {
            let value: String
            if let inlineValue {
                value = inlineValue
            } else {
                guard index < arguments.count else {
                    throw .usage("--\(name) needs a value (\(option.valueName!))")
                }
                value = arguments[index]
                index += 1
            }
            // A second value would silently replace the first (`-r 0 … -r 1` ran on reader 1).
            if let first = parsed.values[name] {
                let shown = option.isSecret ? "" : " ('\(first)' and '\(value)')"
                throw .usage("--\(name) is given twice\(shown); give it once")
            }
            given.append(option)
            parsed.values[name] = value
        }
    }
    if !parsed.has("help") {
        for option in given where option.isSecret {
            let what = "--\(option.name)"
            if let value = try resolveSecretReference(parsed.values[option.name]!, what: what, standardInput: standardInput) {
                parsed.values[option.name] = value
            }
        }
        for option in given {
            if let refusal = option.kind.refusal(of: parsed.values[option.name]!, option: option.name) {
                throw .usage(refusal)
            }
        }
    }
    return parsed
}

/// What the help of a secret option adds.
package let secretReferenceHelp =
    "Also env:NAME, file:PATH or - (one line of standard input): keeps it out of the process list."

/// The value a secret reference stands for, or nil when `text` is no reference (a literal value).
///
/// - `env:NAME`: the environment variable NAME;
/// - `file:PATH`: the first line of the file at PATH, without its line end;
/// - `-`: one line of standard input, read with `standardInput`.
///
/// Surrounding spaces and tabs are dropped. The messages name the reference, never the secret.
/// - Throws: `CLIError.usage` for an unset or empty variable, an unreadable or empty file, a file
///   whose first line is not text (not UTF-8, or holding control characters), or no line on
///   standard input.
package func resolveSecretReference(
    _ text: String, what: String, standardInput: () -> String?
) throws(CLIError) -> String? {
    func trimmed(_ value: Substring) -> String {
        String(value.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" || $0 == "\r" }.reversed())
    }
    if text == "-" {
        guard let line = standardInput(), !trimmed(Substring(line)).isEmpty else {
            let example = what.hasPrefix("--") ? "\(what) - < keyfile" : "- < file"
            throw .usage("\(what) -: standard input gave no line; pipe the value in (e.g. `… \(example)`) or give env:NAME or file:PATH")
        }
        return trimmed(Substring(line))
    }
    if text.hasPrefix("env:") {
        let name = String(text.dropFirst(4))
        guard !name.isEmpty else { throw .usage("\(what) env: needs a variable name, e.g. env:SECBRIDGE_KEY") }
        guard let value = environmentValue(name), !trimmed(Substring(value)).isEmpty else {
            throw .usage("\(what) env:\(name): the environment variable \(name) is not set or empty; export it first")
        }
        return trimmed(Substring(value))
    }
    if text.hasPrefix("file:") {
        let path = String(text.dropFirst(5))
        guard !path.isEmpty else { throw .usage("\(what) file: needs a path, e.g. file:$HOME/.secbridge-key") }
        let data: [UInt8]
        do {
            data = try readRegularFile(path, limit: 64 * 1024)
        } catch {
            throw .usage("\(what) file:\(path): \(error.reason.replacingTranscriptWording(file: "a file whose first line holds the value", content: "a key or APDU"))")
        }
        let firstLine = data.split(separator: 0x0A, maxSplits: 1, omittingEmptySubsequences: false).first ?? []
        // A binary file is refused by what it holds, never echoed (its bytes would reach the
        // terminal raw, a secret's among them).
        guard let first = String(validating: firstLine, as: UTF8.self) else {
            throw .usage("\(what) file:\(path): the file's first line is not UTF-8 text; write the value in hex, on the first line")
        }
        if let control = first.unicodeScalars.first(where: { ($0.value < 0x20 && $0 != "\t" && $0 != "\r") || $0.value == 0x7F }) {
            let code = String(control.value, radix: 16, uppercase: true)
            throw .usage("\(what) file:\(path): the file's first line holds the control character 0x\(code.count < 2 ? "0" + code : code) (a binary file?); write the value in hex, on the first line")
        }
        guard !trimmed(Substring(first)).isEmpty else { throw .usage("\(what) file:\(path): the file's first line is empty") }
        return trimmed(Substring(first))
    }
    return nil
}

private func isNegativeNumberOrHex(_ argument: String) -> Bool {
    argument.count > 1 && argument.dropFirst().allSatisfy { $0.isNumber }
}

/// How a command fails: a usage error (exit 64, with the command's usage) or a failure (exit 1).
/// Each message names what was wrong and what to do next.
package enum CLIError: Error, Equatable {
    case usage(String)
    case failure(String)

    package var message: String {
        switch self {
        case .usage(let message), .failure(let message): message
        }
    }
}
