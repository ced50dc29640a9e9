import ISO7816
import Testing

/// Bytes from hex text in a test vector, e.g. `hex("FF 00 48 00 00")`; every form `HexBytes.parse`
/// accepts works (`FF004800 00`, `0xFF,0x00`, newlines between bytes).
///
/// A malformed literal records a test issue at the caller's line and gives no bytes: a typo in a
/// vector fails the test that uses it, never the whole test process.
public func hex(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) -> [UInt8] {
    do {
        return try HexBytes.parse(text)
    } catch {
        Issue.record("bad hex literal in a test vector: \(error)", sourceLocation: sourceLocation)
        return []
    }
}
