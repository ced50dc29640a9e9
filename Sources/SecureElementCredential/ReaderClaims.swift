import Synchronization

/// One active session per reader, process-wide (docs/session-model.md: a second session on the same
/// reader gets `resourceUnavailable`).
enum ReaderClaims {
    private static let claims = Mutex<(next: UInt64, holders: [String: UInt64])>((0, [:]))

    /// Claims `reader`; returns a token for `release`, or nil when another session holds it.
    static func claim(_ reader: String) -> UInt64? {
        claims.withLock { c in
            guard c.holders[reader] == nil else { return nil }
            c.next += 1
            c.holders[reader] = c.next
            return c.next
        }
    }

    /// Releases `reader` if `token` still holds it.
    static func release(_ reader: String, token: UInt64) {
        claims.withLock { c in
            if c.holders[reader] == token { c.holders[reader] = nil }
        }
    }
}
