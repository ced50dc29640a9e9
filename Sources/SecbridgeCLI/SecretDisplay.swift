import ISO7816
import Transcript

/// How the commands print the bytes of an exchange: with the secrets a transcript masks masked
/// (``masked``, the default), or as sent (``shown``, `--show-secrets`).
///
/// One rule set for files and screens: ``Redactor/default`` (Transcript), so a VERIFY's PIN, a
/// key, an EXTERNAL AUTHENTICATE cryptogram or a sector trailer's key B read back is
/// `[REDACTED n]` on standard output and in `--json` exactly where a `--record` transcript has it
/// (docs/secrets.md). Text: `00 20 00 81 08 [REDACTED 8]`. JSON: plain bytes stay an uppercase hex
/// string; masked bytes become ``jsonBytes(_:)``'s object.
package struct SecretDisplay: Sendable {
    /// The rules applied; ``Redactor/disabled`` shows everything.
    package let redactor: Redactor

    /// Secrets masked (the default of every command).
    package static let masked = SecretDisplay(redactor: .default)
    /// Secrets shown (`--show-secrets`).
    package static let shown = SecretDisplay(redactor: .disabled)

    /// A command's bytes for text output: spaced hex, `[REDACTED n]` for each masked run.
    package func text(_ command: [UInt8]) -> String {
        redactor.masksAny(of: command) ? redactor.redact(command).description : Self.spacedHex(command)
    }

    /// An answer's bytes for text output, masked by the answer rules with the command it answers.
    package func text(response: [UInt8], answering command: [UInt8]) -> String {
        redactor.masksAny(ofResponse: response, answering: command)
            ? redactor.redact(response: response, answering: command).description : Self.spacedHex(response)
    }

    /// A traced command's line: `prefix` and ``text(_:)`` (`> 00 A4 04 00 …`), built as one string.
    package func line(_ prefix: StaticString, _ command: [UInt8]) -> String {
        redactor.masksAny(of: command)
            ? prefix.description + redactor.redact(command).description : Self.spacedHex(command, after: prefix)
    }

    /// A traced answer's line: `prefix` and ``text(response:answering:)`` (`< 90 00`).
    package func line(_ prefix: StaticString, response: [UInt8], answering command: [UInt8]) -> String {
        redactor.masksAny(ofResponse: response, answering: command)
            ? prefix.description + redactor.redact(response: response, answering: command).description
            : Self.spacedHex(response, after: prefix)
    }

    /// Uppercase hex with one space between bytes (`00 A4 04 00`, the form of `hexString`), written
    /// straight into the string after `prefix`: the per-APDU lines of `run` and `send` are printed
    /// with it.
    package static func spacedHex(_ bytes: [UInt8], after prefix: StaticString = "") -> String {
        let count = prefix.utf8CodeUnitCount + (bytes.isEmpty ? 0 : bytes.count * 3 - 1)
        // Written on the stack, then copied once into the string (one allocation, none for short ones).
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: max(count, 1)) { out in
            var index = 0
            prefix.withUTF8Buffer { text in
                for byte in text {
                    out[index] = byte
                    index += 1
                }
            }
            let start = index
            for byte in bytes {
                if index > start {
                    out[index] = 0x20
                    index += 1
                }
                out[index] = hexDigit(byte >> 4)
                out[index + 1] = hexDigit(byte & 0x0F)
                index += 2
            }
            return String(decoding: UnsafeBufferPointer(rebasing: out[..<index]), as: UTF8.self)
        }
    }

    /// ``line(_:_:)`` appended to `out` as UTF-8, without making a string.
    package func appendLine(_ prefix: StaticString, _ command: [UInt8], to out: inout LineBytes) {
        if redactor.masksAny(of: command) {
            Self.append(prefix, redactor.redact(command).description, to: &out)
        } else {
            Self.appendHex(prefix, command, to: &out)
        }
    }

    /// ``line(_:response:answering:)`` appended to `out` as UTF-8, without making a string.
    package func appendLine(_ prefix: StaticString, response: [UInt8], answering command: [UInt8], to out: inout LineBytes) {
        if redactor.masksAny(ofResponse: response, answering: command) {
            Self.append(prefix, redactor.redact(response: response, answering: command).description, to: &out)
        } else {
            Self.appendHex(prefix, response, to: &out)
        }
    }

    /// ``statusLine(_:_:meaning:)`` appended to `out` as UTF-8.
    package static func appendStatusLine(_ sw1: UInt8, _ sw2: UInt8, meaning: String, to out: inout LineBytes) {
        var meaning = meaning
        meaning.withUTF8 { text in
            out.reserve(12 + text.count)
            append("  SW ", to: &out)
            out.appendHex(sw1)
            out.append(0x20)
            out.appendHex(sw2)
            out.append(0x3A)
            out.append(0x20)
            out.append(text)
        }
    }

    /// `prefix` then `text` (a masked line).
    private static func append(_ prefix: StaticString, _ text: String, to out: inout LineBytes) {
        var text = text
        text.withUTF8 { bytes in
            out.reserve(prefix.utf8CodeUnitCount + bytes.count)
            append(prefix, to: &out)
            out.append(bytes)
        }
    }

    /// `text`; room must be reserved.
    private static func append(_ text: StaticString, to out: inout LineBytes) {
        text.withUTF8Buffer { out.append($0) }
    }

    /// `prefix`, then `bytes` in uppercase hex with one space between bytes.
    private static func appendHex(_ prefix: StaticString, _ bytes: [UInt8], to out: inout LineBytes) {
        out.reserve(prefix.utf8CodeUnitCount + bytes.count * 3)
        append(prefix, to: &out)
        out.appendSpacedHex(bytes)
    }

    /// `  SW 90 00: meaning`, the line `run` prints under each answer, built as one string.
    package static func statusLine(_ sw1: UInt8, _ sw2: UInt8, meaning: String) -> String {
        var meaning = meaning
        return meaning.withUTF8 { text in
            withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 12 + text.count) { out in
                out[0] = 0x20; out[1] = 0x20; out[2] = 0x53; out[3] = 0x57; out[4] = 0x20  // "  SW "
                out[5] = hexDigit(sw1 >> 4); out[6] = hexDigit(sw1 & 0x0F); out[7] = 0x20
                out[8] = hexDigit(sw2 >> 4); out[9] = hexDigit(sw2 & 0x0F); out[10] = 0x3A; out[11] = 0x20  // ": "
                var index = 12
                for byte in text {
                    out[index] = byte
                    index += 1
                }
                return String(decoding: UnsafeBufferPointer(rebasing: out[..<index]), as: UTF8.self)
            }
        }
    }

    @inline(__always)
    private static func hexDigit(_ nibble: UInt8) -> UInt8 { nibble < 10 ? 0x30 + nibble : 0x37 + nibble }

    /// A command's bytes for JSON (``jsonBytes(_:)``).
    package func json(_ command: [UInt8]) -> JSONValue { Self.jsonBytes(redactor.redact(command)) }

    /// An answer's bytes for JSON (``jsonBytes(_:)``).
    package func json(response: [UInt8], answering command: [UInt8]) -> JSONValue {
        Self.jsonBytes(redactor.redact(response: response, answering: command))
    }

    /// The data field of an answer (the bytes before SW1-SW2) for JSON, masked as ``json(response:answering:)`` masks it.
    package func json(responseData response: [UInt8], answering command: [UInt8]) -> JSONValue {
        guard response.count >= 2 else { return .hex([]) }
        let items = redactor.redact(response: response, answering: command).items
        return Self.jsonBytes(TranscriptBytes(items: Array(items.dropLast(2))))
    }

    /// A byte string in JSON: uppercase hex without spaces, or, when secret bytes were left out
    /// (a Load Keys key, a sector trailer's key B), an object `{"hex": the bytes shown, "redacted":
    /// how many bytes follow them unshown}` (`"hexAfter"` if shown bytes follow the redaction;
    /// `"parts"` for any other mix: `[hex string | {"redacted": n} | {"wildcard": 1}, …]`).
    package static func jsonBytes(_ bytes: TranscriptBytes) -> JSONValue {
        if let plain = bytes.bytes { return .hex(plain) }
        var before: [UInt8] = [], after: [UInt8] = [], redacted: Int?
        var simple = true
        for item in bytes.items {
            switch item {
            case .byte(let b): if redacted == nil { before.append(b) } else { after.append(b) }
            case .redacted(let n):
                if redacted != nil { simple = false }
                redacted = n
            case .wildcard: simple = false
            }
        }
        if simple, let redacted {
            return .object([("hex", .hex(before)), ("redacted", .int(redacted))] + (after.isEmpty ? [] : [("hexAfter", .hex(after))]))
        }
        var parts: [JSONValue] = []
        var run: [UInt8] = []
        for item in bytes.items {
            if case .byte(let b) = item { run.append(b); continue }
            if !run.isEmpty { parts.append(.hex(run)); run = [] }
            if case .redacted(let n) = item { parts.append(.object([("redacted", .int(n))])) } else { parts.append(.object([("wildcard", .int(1))])) }
        }
        if !run.isEmpty { parts.append(.hex(run)) }
        return .object([("parts", .array(parts))])
    }

    /// An argument's text for an error message: as given, unless the hex it starts with (read up
    /// to the first character that is neither a hex digit, a `0x` prefix nor one of HexBytes'
    /// separators: blanks, `:`, `,`, `-`, `_`, `;`) is a
    /// command the rules mask; then those bytes masked and `…` for the rest, so a malformed VERIFY
    /// (`00 20 00 81 08 31 32 33 3X`) is never echoed with its PIN.
    package func argumentText(_ text: String) -> String {
        guard !redactor.rules.isEmpty else { return text }
        var bytes: [UInt8] = []
        var pending: UInt8?
        var scalars = Array(text.unicodeScalars)[...]
        while let c = scalars.first {
            if c == "0", scalars.dropFirst().first == "x" || scalars.dropFirst().first == "X", pending == nil {
                scalars = scalars.dropFirst(2)
                continue
            }
            scalars = scalars.dropFirst()
            if " \t\n\r:,-_;".unicodeScalars.contains(c) { continue }  // HexBytes' separators
            guard let digit = UInt8(String(c), radix: 16) else { break }
            if let high = pending {
                bytes.append(high << 4 | digit)
                pending = nil
            } else {
                pending = digit
            }
        }
        let masked = redactor.redact(bytes)
        guard masked.containsRedaction else { return text }
        return masked.description + " …"
    }
}

extension OptionSpec {
    /// `--show-secrets`: print PINs, keys and cryptograms as sent instead of `[REDACTED n]`.
    package static let showSecrets = OptionSpec.flag(
        "show-secrets",
        "Print PINs, keys, cryptograms and read-back MIFARE keys as sent; by default they are [REDACTED n], as in transcripts (docs/secrets.md).")
}

extension Invocation {
    /// How this command prints exchanged bytes: ``SecretDisplay/shown`` with `--show-secrets`, else masked.
    package var secrets: SecretDisplay { arguments.has("show-secrets") ? .shown : .masked }
}
