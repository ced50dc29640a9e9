import ISO7816

/// A JSON value with keys kept in the order they were given, so output is stable and diffable.
///
/// Hex byte strings in the CLI's JSON are uppercase without spaces (`"00A40400"`).
public indirect enum JSONValue: Sendable, Equatable {
    /// `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// An integer, written without a fraction or exponent.
    case int(Int)
    /// A string, written with JSON's escapes.
    case string(String)
    /// An array, in order.
    case array([JSONValue])
    /// An object: its members in the order given (the CLI's output keeps a stable key order).
    case object([(String, JSONValue)])

    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        lhs.serialized() == rhs.serialized()
    }

    /// A byte string as uppercase hex without spaces.
    package static func hex(_ bytes: some Sequence<UInt8>) -> JSONValue {
        var text = ""
        for byte in bytes {
            text += hexDigit(byte >> 4)
            text += hexDigit(byte & 0x0F)
        }
        return .string(text)
    }

    /// Compact JSON on one line.
    public func serialized() -> String {
        var out = ""
        write(to: &out, indent: nil, level: 0)
        return out
    }

    /// JSON indented by two spaces.
    public func prettySerialized() -> String {
        var out = ""
        write(to: &out, indent: "  ", level: 0)
        return out
    }

    private func write(to out: inout String, indent: String?, level: Int) {
        func newline(_ level: Int) {
            if let indent {
                out += "\n"
                for _ in 0..<level { out += indent }
            }
        }
        switch self {
        case .null: out += "null"
        case .bool(let value): out += value ? "true" : "false"
        case .int(let value): out += String(value)
        case .string(let value): JSONValue.writeString(value, to: &out)
        case .array(let values):
            if values.isEmpty { out += "[]"; return }
            out += "["
            for (index, value) in values.enumerated() {
                if index > 0 { out += indent == nil ? "," : "," }
                newline(level + 1)
                value.write(to: &out, indent: indent, level: level + 1)
            }
            newline(level)
            out += "]"
        case .object(let members):
            if members.isEmpty { out += "{}"; return }
            out += "{"
            for (index, (key, value)) in members.enumerated() {
                if index > 0 { out += "," }
                newline(level + 1)
                JSONValue.writeString(key, to: &out)
                out += indent == nil ? ":" : ": "
                value.write(to: &out, indent: indent, level: level + 1)
            }
            newline(level)
            out += "}"
        }
    }

    private static func writeString(_ value: String, to out: inout String) {
        out += "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                out += "\\u00" + hexDigit(UInt8(scalar.value >> 4)) + hexDigit(UInt8(scalar.value & 0xF))
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }
}

package func hexDigit(_ nibble: UInt8) -> String {
    String(UnicodeScalar(nibble < 10 ? 0x30 + nibble : 0x37 + nibble))
}
