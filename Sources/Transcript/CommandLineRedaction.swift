import ISO7816

/// Masks the secrets a program's command line may hold (a PIN after `--pin`, a key in hex, an
/// APDU carrying a PIN), for a transcript header's `source` line and `capture`'s output.
///
/// One argument at a time (an argument holding spaces, such as `sh -c`'s, word by word); an
/// argument is masked as a whole with
/// `[REDACTED]`, except a hex APDU, which keeps what ``Redactor`` keeps. Masked:
/// - the value of a long option whose name holds `pin`, `puk`, `key`, `pass`, `pwd` or `secret`
///   (`--pin 123456`, `--so-pin=12345678`, `--key-enc 404142…`, `--password x`);
/// - the value of any option (`-P 123456`, `--login 1234`) when it is 4 to 16 decimal digits (a PIN);
/// - an argument (or an option's `=` value) of hex digits, `0x` allowed, that ``Redactor`` masks
///   as a command (`--send-apdu 0020008108…` becomes `--send-apdu 0020008108[REDACTED 8]`), or
///   that has the length of a key: 6 bytes (MIFARE), 8, 16, 24 or 32 bytes (DES, 3DES, AES), for
///   a key given bare (`mfoc -k FFFFFFFFFFFF`).
///
/// What stays: the program, option names, file names, reader names and numbers of 1 to 3 digits.
/// A 16-byte hex argument that is no key (an APDU of that length) is masked too: the rule errs
/// on the side of the secret. docs/secrets.md lists the rules.
public enum CommandLineRedaction {
    /// The mark that replaces a whole argument.
    public static let mark = "[REDACTED]"

    /// Words that make a long option's value a secret.
    static let secretWords = ["pin", "puk", "key", "pass", "pwd", "secret"]

    /// Key lengths in bytes: MIFARE Classic (6), DES (8), 2-key 3DES or AES-128 (16), 3-key 3DES or
    /// AES-192 (24), AES-256 (32).
    static let keyLengths: Set<Int> = [6, 8, 16, 24, 32]

    /// `arguments` with their secrets masked, using `redactor`'s command rules for hex APDUs.
    public static func redact(arguments: [String], redactor: Redactor = .default) -> [String] {
        guard !redactor.rules.isEmpty else { return arguments }  // ``Redactor/disabled`` keeps all
        var result: [String] = []
        var previousOption: String?
        for argument in arguments {
            defer { previousOption = isOption(argument) && !argument.contains("=") ? argument : nil }
            if argument.contains(" ") {
                // A command line in one argument (`sh -c "tool --pin 1234"`): its own words.
                result.append(redact(commandLine: argument, redactor: redactor))
            } else if isOption(argument), let equals = argument.firstIndex(of: "=") {
                let name = String(argument[..<equals]), value = String(argument[argument.index(after: equals)...])
                result.append(name + "=" + redact(value: value, ofOption: name, redactor: redactor))
            } else if let option = previousOption, !isOption(argument) {
                result.append(redact(value: argument, ofOption: option, redactor: redactor))
            } else {
                result.append(redact(value: argument, ofOption: nil, redactor: redactor))
            }
        }
        return result
    }

    /// A command line split at single spaces, redacted by ``redact(arguments:redactor:)``, joined again.
    public static func redact(commandLine: String, redactor: Redactor = .default) -> String {
        redact(arguments: commandLine.split(separator: " ", omittingEmptySubsequences: false).map(String.init),
               redactor: redactor).joined(separator: " ")
    }

    static func isOption(_ argument: String) -> Bool {
        argument.count > 1 && argument.hasPrefix("-") && argument != "--" && !argument.dropFirst().allSatisfy(\.isNumber)
    }

    static func redact(value: String, ofOption option: String?, redactor: Redactor) -> String {
        if let option, option.hasPrefix("--") {
            let name = option.dropFirst(2).lowercased()
            if secretWords.contains(where: { name.contains($0) }) { return value.isEmpty ? value : mark }
        }
        if option != nil, (4...16).contains(value.count), value.allSatisfy({ $0.isASCII && $0.isNumber }) { return mark }
        guard let bytes = hexArgument(value) else { return value }
        let masked = redactor.redact(bytes)
        if masked.containsRedaction {
            return (value.hasPrefix("0x") || value.hasPrefix("0X") ? "0x" : "") + compact(masked)
        }
        return keyLengths.contains(bytes.count) && !redactor.rules.isEmpty ? mark : value
    }

    /// Hex digits without spaces, a redaction written `[REDACTED n]`: `0020008108[REDACTED 8]`.
    static func compact(_ bytes: TranscriptBytes) -> String {
        let digits = Array("0123456789ABCDEF")
        var text = ""
        for item in bytes.items {
            switch item {
            case .byte(let b): text += String([digits[Int(b >> 4)], digits[Int(b & 0x0F)]])
            case .redacted(let n): text += "[REDACTED \(n)]"
            case .wildcard: text += "??"
            }
        }
        return text
    }

    /// The bytes of an argument that is only hex digits (even count, at least 2 bytes), `0x` allowed.
    static func hexArgument(_ text: String) -> [UInt8]? {
        var digits = Substring(text)
        if digits.hasPrefix("0x") || digits.hasPrefix("0X") { digits = digits.dropFirst(2) }
        guard digits.count >= 4, digits.count % 2 == 0, digits.allSatisfy(\.isHexDigit) else { return nil }
        return try? HexBytes.parse(String(digits))
    }
}

extension Redactor {
    /// Header keys whose values are never command lines (the typed provenance fields).
    static let provenanceKeys: Set<String> = ["tool", "origin", "date", "reader", "driver", "firmware", "atr", "protocol"]

    /// The header with the secrets of command lines masked (``CommandLineRedaction``): every field
    /// but the typed provenance ones (`tool`, `origin`, `date`, `reader`, `driver`, `firmware`,
    /// `atr`, `protocol`), so `capture`'s `source: secbridge capture -- pkcs11-tool --pin 123456 …`
    /// becomes `… --pin [REDACTED] …`. A redactor with no command rules (``disabled``) keeps it.
    public func redact(_ header: TranscriptHeader) -> TranscriptHeader {
        guard !rules.isEmpty else { return header }
        var copy = header
        for i in copy.fields.indices where !Self.provenanceKeys.contains(copy.fields[i].key) {
            copy.fields[i].value = CommandLineRedaction.redact(commandLine: copy.fields[i].value, redactor: self)
        }
        return copy
    }
}
