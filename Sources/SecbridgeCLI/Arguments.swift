/// An option a command accepts.
package struct OptionSpec: Sendable {
    /// The long name without dashes, e.g. "reader".
    package let name: String
    /// A one-letter alias, e.g. "r", or nil.
    package let short: Character?
    /// The value's placeholder for help ("NAME|INDEX"), or nil for a flag.
    package let valueName: String?
    package let help: String

    package static func flag(_ name: String, short: Character? = nil, _ help: String) -> OptionSpec {
        OptionSpec(name: name, short: short, valueName: nil, help: help)
    }
    package static func value(_ name: String, short: Character? = nil, _ valueName: String, _ help: String) -> OptionSpec {
        OptionSpec(name: name, short: short, valueName: valueName, help: help)
    }
}

/// Arguments after parsing: options by long name, and positional arguments in order.
package struct ParsedArguments: Sendable {
    package var flags: Set<String> = []
    package var values: [String: String] = [:]
    package var positional: [String] = []

    package func has(_ flag: String) -> Bool { flags.contains(flag) }
    package func value(_ name: String) -> String? { values[name] }

    /// An option's value as an integer in `range`, or a usage error naming the option.
    package func integer(_ name: String, in range: ClosedRange<Int>) throws(CLIError) -> Int? {
        guard let text = values[name] else { return nil }
        guard let number = Int(text), range.contains(number) else {
            throw .usage("--\(name) takes a whole number from \(range.lowerBound) to \(range.upperBound), not '\(text)'")
        }
        return number
    }

    /// An option's value as a number of seconds (fractions allowed) in (0, limit].
    package func seconds(_ name: String, limit: Double) throws(CLIError) -> Duration? {
        guard let text = values[name] else { return nil }
        guard let number = Double(text), number > 0, number <= limit else {
            throw .usage("--\(name) takes a number of seconds greater than 0 and at most \(Int(limit)), not '\(text)'")
        }
        return .milliseconds(Int64((number * 1000).rounded()))
    }
}

/// Parses `arguments` against `options`: `--name value`, `--name=value`, `-x value`, flags, and `--`
/// to end options. `--help`/`-h` is always accepted.
package func parseArguments(_ arguments: [String], options: [OptionSpec]) throws(CLIError) -> ParsedArguments {
    var parsed = ParsedArguments()
    var index = 0
    var optionsEnded = false
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
            if let inlineValue {
                parsed.values[name] = inlineValue
            } else {
                guard index < arguments.count else {
                    throw .usage("--\(name) needs a value (\(option.valueName!))")
                }
                parsed.values[name] = arguments[index]
                index += 1
            }
        }
    }
    return parsed
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
