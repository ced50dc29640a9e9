import ISO7816

/// Masks the secrets a program's command line may hold (a PIN after `--pin`, a key in hex, an
/// APDU carrying a PIN), for a transcript header's `source` line and `capture`'s output.
///
/// Bytes are found the ways the programs that take APDUs parse them (docs/secrets.md §3):
/// - one argument per byte, as `secbridge send 00 20 00 80 08 31 32 33 34 …` groups consecutive
///   two-digit arguments into one APDU;
/// - one argument holding an APDU, compact or with separators (`0020008108…`, `"00 20 00 80 …"`,
///   opensc-tool's `00:20:00:80:…`, `0x00,0x20,…`: what ISO7816's `HexBytes` accepts);
/// - a run of hex bytes inside an argument that holds a command line or a script (`sh -c "…"`,
///   `printf '00 20 …\n' | scriptor`): its lines each, and the whole argument as one run
///   (`send` takes a newline as a separator).
///
/// A run of bytes is masked where ``Redactor`` masks it as a command starting at any of its
/// bytes (an option value such as `--reader 12` may come first), and whole when it has the
/// length of a key (6, 8, 16, 24 or 32 bytes: MIFARE, DES, 3DES, AES; a run within one line) or more than
/// ``longestRun`` bytes. Masked bytes become `[REDACTED n]`, the bytes around them stay:
/// `00 20 00 80 08 31 32 33 34 FF FF FF FF` → `00 20 00 80 08 [REDACTED 8]`.
///
/// Also masked, as a whole argument with `[REDACTED]`:
/// - the value of a long option whose name holds `pin`, `puk`, `key`, `pass`, `pwd` or `secret`
///   (`--pin 123456`, `--so-pin=12345678`, `--key-enc 404142…`, `--password x`);
/// - the value of any option (`-P 123456`, `--login 1234`) when it is 4 to 16 decimal digits (a PIN);
/// - an argument (or an option's `=` value) of hex digits of a key's length that no command rule
///   masks (`mfoc -k FFFFFFFFFFFF`).
///
/// What stays: the program, option names, file names (a script file's APDUs are not in the
/// command line), reader names and short numbers. A key-length run that is no key is masked too:
/// the rule errs on the side of the secret.
public enum CommandLineRedaction {
    /// The mark that replaces a whole argument.
    public static let mark = "[REDACTED]"

    /// Words that make a long option's value a secret.
    static let secretWords = ["pin", "puk", "key", "pass", "pwd", "secret"]

    /// Key lengths in bytes: MIFARE Classic (6), DES (8), 2-key 3DES or AES-128 (16), 3-key 3DES or
    /// AES-192 (24), AES-256 (32).
    static let keyLengths: Set<Int> = [6, 8, 16, 24, 32]

    /// The longest run of hex bytes judged byte by byte; a longer one (data, not a typed APDU) is
    /// masked whole, which also bounds the work (every start of a run is tried as a command).
    public static let longestRun = 4096

    /// `arguments` with their secrets masked, using `redactor`'s command rules for hex APDUs.
    public static func redact(arguments: [String], redactor: Redactor = .default) -> [String] {
        guard !redactor.rules.isEmpty else { return arguments }  // ``Redactor/disabled`` keeps all
        return maskByteArguments(redactOptions(arguments, redactor: redactor, runs: true), redactor: redactor)
    }

    /// A command line in one string (an `sh -c` argument, a header's `source`): its runs of hex
    /// bytes across words and lines masked first, on the text as given (a mark cuts a run, so
    /// runs are read once), then its words by the option rules of ``redact(arguments:redactor:)``.
    public static func redact(commandLine: String, redactor: Redactor = .default) -> String {
        guard !redactor.rules.isEmpty else { return commandLine }
        let words = maskRuns(in: commandLine, redactor: redactor).split(separator: " ", omittingEmptySubsequences: false).map(String.init)
        return redactOptions(words, redactor: redactor, runs: false).joined(separator: " ")
    }

    /// The option rules argument by argument (an argument holding spaces or a newline as a
    /// command line of its own); with `runs`, also each other argument's runs of hex bytes.
    static func redactOptions(_ arguments: [String], redactor: Redactor, runs: Bool) -> [String] {
        var result: [String] = []
        var previousOption: String?
        for argument in arguments {
            defer { previousOption = isOption(argument) && !argument.contains("=") ? argument : nil }
            let value: String
            if runs && (argument.contains(" ") || argument.contains("\n")) {
                // A command line in one argument (`sh -c "tool --pin 1234"`): its own words.
                result.append(redact(commandLine: argument, redactor: redactor))
                continue
            } else if isOption(argument), let equals = argument.firstIndex(of: "=") {
                let name = String(argument[..<equals])
                value = name + "=" + redact(value: String(argument[argument.index(after: equals)...]), ofOption: name, redactor: redactor)
            } else if let option = previousOption, !isOption(argument) {
                value = redact(value: argument, ofOption: option, redactor: redactor)
            } else {
                value = redact(value: argument, ofOption: nil, redactor: redactor)
            }
            result.append(runs && value == argument ? maskRuns(in: value, redactor: redactor) : value)
        }
        return result
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
        // A key given bare; an APDU's bytes are masked by ``maskRuns(in:redactor:)``.
        if let bytes = hexArgument(value), keyLengths.contains(bytes.count), !redactor.redact(bytes).containsRedaction {
            return mark
        }
        return value
    }

    /// The positions of `bytes` (a run an APDU may be in) that are masked: what `redactor`
    /// masks in the command starting at each position, every byte of a key-length or overlong run.
    /// `keyLength` false leaves out the key-length rule (for a run read across lines, whose
    /// length is that of several APDUs).
    static func maskedBytes(_ bytes: [UInt8], redactor: Redactor, keyLength: Bool = true) -> [Range<Int>] {
        if (keyLength && keyLengths.contains(bytes.count)) || bytes.count > longestRun { return bytes.isEmpty ? [] : [0..<bytes.count] }
        var masked = [Bool](repeating: false, count: bytes.count)
        for start in 0..<max(0, bytes.count - 3) {  // a command has at least CLA INS P1 P2
            let command = Array(bytes[start...])
            for index in redactor.rules.indices {
                for range in redactor.rules[index].ranges(in: command) {
                    for k in range { masked[start + k] = true }
                }
            }
        }
        // As stretches of consecutive masked positions.
        var stretches: [Range<Int>] = []
        var k = 0
        while k < masked.count {
            guard masked[k] else { k += 1; continue }
            var end = k
            while end < masked.count && masked[end] { end += 1 }
            stretches.append(k..<end)
            k = end
        }
        return stretches
    }

    /// Consecutive arguments of one byte each (`00 20 00 80 08 31 …`, as `secbridge send` reads
    /// them) judged as one run; a stretch of masked bytes becomes one `[REDACTED n]` argument.
    static func maskByteArguments(_ arguments: [String], redactor: Redactor) -> [String] {
        var result: [String] = []
        var group: [(text: String, byte: UInt8)] = []
        func flush() {
            defer { group.removeAll() }
            guard group.count >= 4 else { result += group.map(\.text); return }
            var index = 0
            for stretch in maskedBytes(group.map(\.byte), redactor: redactor) {
                result += group[index..<stretch.lowerBound].map(\.text)
                result.append("[REDACTED \(stretch.count)]")
                index = stretch.upperBound
            }
            result += group[index...].map(\.text)
        }
        for argument in arguments {
            if let bytes = hexArgument(argument, minimumBytes: 1), bytes.count == 1 {
                group.append((argument, bytes[0]))
            } else {
                flush()
                result.append(argument)
            }
        }
        flush()
        return result
    }

    /// One byte of a run: its value and where its digits (and a `0x` before them) are in the text.
    struct RunByte {
        var value: UInt8
        var characters: Range<Int>
    }

    /// `text` with the masked bytes of its hex runs replaced by `[REDACTED n]`: each line's runs,
    /// and the runs across lines (a newline, or a `\n` written in a shell string, is a separator
    /// to `send` and ends an APDU in a script).
    static func maskRuns(in text: String, redactor: Redactor) -> String {
        let characters = Array(text)
        guard characters.contains(where: \.isHexDigit) else { return text }
        var masked: [Range<Int>] = []
        for acrossLines in [false, true] {
            for run in runs(in: characters, acrossLines: acrossLines) {
                for range in maskedBytes(run.map(\.value), redactor: redactor, keyLength: !acrossLines) {
                    masked.append(run[range.lowerBound].characters.lowerBound..<run[range.upperBound - 1].characters.upperBound)
                }
            }
        }
        guard !masked.isEmpty else { return text }
        // Overlapping or touching stretches (from the two readings) are one mark; the bytes a
        // stretch covers are counted from the runs read across lines (they include each line's).
        let all = runs(in: characters, acrossLines: true).flatMap { $0 }
        var merged: [Range<Int>] = []
        for range in masked.sorted(by: { $0.lowerBound < $1.lowerBound }) {
            if let last = merged.last, range.lowerBound <= last.upperBound {
                merged[merged.count - 1] = last.lowerBound..<max(last.upperBound, range.upperBound)
            } else {
                merged.append(range)
            }
        }
        var output = characters
        for range in merged.reversed() {
            let count = all.filter { range.contains($0.characters.lowerBound) }.count
            output.replaceSubrange(range, with: Array("[REDACTED \(count)]"))
        }
        return String(output)
    }

    /// The runs of hex bytes in `characters`: groups of an even number of hex digits (a `0x`
    /// before them allowed), each standing alone between non-alphanumeric characters, joined by
    /// separators (space, tab, `:`, `,`, `-`, `_`, `;`, and newlines when `acrossLines`).
    static func runs(in characters: [Character], acrossLines: Bool) -> [[RunByte]] {
        var runs: [[RunByte]] = []
        var current: [RunByte] = []
        func end() {
            if current.count >= 4 { runs.append(current) }
            current.removeAll()
        }
        var i = 0
        while i < characters.count {
            let c = characters[i]
            if c.isLetter || c.isNumber {
                var j = i
                while j < characters.count && (characters[j].isLetter || characters[j].isNumber) { j += 1 }
                var digits = i
                if j - i > 2, characters[i] == "0", characters[i + 1] == "x" || characters[i + 1] == "X" { digits = i + 2 }
                let group = characters[digits..<j]
                if group.count >= 2, group.count % 2 == 0, group.allSatisfy({ $0.isASCII && $0.isHexDigit }),
                   let bytes = try? HexBytes.parse(String(group)) {
                    for (k, byte) in bytes.enumerated() {
                        current.append(RunByte(value: byte, characters: (k == 0 ? i : digits + 2 * k)..<(digits + 2 * k + 2)))
                    }
                } else {
                    end()
                }
                i = j
                continue
            }
            // A `\n`, `\r` or `\t` written in a shell string: a line break or a space.
            if c == "\\", i + 1 < characters.count, ["n", "r", "t"].contains(characters[i + 1]) {
                if characters[i + 1] != "t" && !acrossLines { end() }
                i += 2
                continue
            }
            if c == "\n" || c == "\r" || c == "\r\n" {
                if !acrossLines { end() }
            } else if !" \t:,-_;".contains(c) {
                end()
            }
            i += 1
        }
        end()
        return runs
    }

    /// The bytes of an argument that is only hex digits (even count, at least `minimumBytes`),
    /// `0x` allowed.
    static func hexArgument(_ text: String, minimumBytes: Int = 2) -> [UInt8]? {
        var digits = Substring(text)
        if digits.hasPrefix("0x") || digits.hasPrefix("0X") { digits = digits.dropFirst(2) }
        guard digits.count >= 2 * minimumBytes, digits.count % 2 == 0, digits.allSatisfy({ $0.isASCII && $0.isHexDigit }) else { return nil }
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
