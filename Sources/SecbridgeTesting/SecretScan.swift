/// Looks for secret bytes in the text a command left behind (its output, a transcript, a file),
/// for the tests that hold "nothing leaks" (docs/secrets.md §5).
///
/// A secret is found in any form it could be written in: hex with spaces or without, either case,
/// and any `window` consecutive bytes of it (a mask that left part of a secret is a leak); a
/// secret made of printable ASCII also as that text.
public struct SecretScan: Sendable {
    /// The secrets by name, e.g. `("PIN", [0x4B, 0x71, …])`.
    public var secrets: [(name: String, bytes: [UInt8])]
    /// How many consecutive bytes of a secret count as a leak (at most the shortest secret's length).
    public var window: Int

    /// - Parameters:
    ///   - secrets: each at least `window` bytes long.
    ///   - window: 4 by default: long enough that no other data of a test session holds it by chance.
    public init(_ secrets: [(name: String, bytes: [UInt8])], window: Int = 4) {
        self.secrets = secrets
        self.window = window
    }

    /// `bytes` as uppercase hex, two digits a byte, joined by `separator`.
    public static func hexText(_ bytes: [UInt8], separator: String = " ") -> String {
        let digits = Array("0123456789ABCDEF")
        return bytes.map { String([digits[Int($0 >> 4)], digits[Int($0 & 0x0F)]]) }.joined(separator: separator)
    }

    /// Each leak in `text`, as "`what`: the NAME's bytes HEX" (or "… as text"); empty when none.
    public func leaks(in text: String, what: String) -> [String] {
        var found: [String] = []
        let haystack = text.uppercased()
        for (name, secret) in secrets where secret.count >= window {
            for start in 0...(secret.count - window) {
                let part = Array(secret[start..<start + window])
                for form in [Self.hexText(part), Self.hexText(part, separator: "")] where haystack.contains(form) {
                    found.append("\(what): the \(name)'s bytes \(form)")
                }
            }
            if secret.allSatisfy({ (0x21...0x7E).contains($0) }), text.contains(String(decoding: secret, as: UTF8.self)) {
                found.append("\(what): the \(name) as text")
            }
        }
        return found
    }
}
