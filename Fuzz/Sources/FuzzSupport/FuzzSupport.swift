import ISO7816

/// What every fuzz target needs: the input as bytes, and a check whose failure libFuzzer reports
/// as a crash (the input is kept as `crash-<sha1>`, see scripts/fuzz.sh).
public enum FuzzInput {
    /// The bytes libFuzzer passes to `LLVMFuzzerTestOneInput`.
    public static func bytes(_ data: UnsafePointer<UInt8>?, _ size: Int) -> [UInt8] {
        guard let data, size > 0 else { return [] }
        return Array(UnsafeBufferPointer(start: data, count: size))
    }

    /// The input as text, invalid UTF-8 replaced by U+FFFD (what a `String` entry point sees).
    public static func text(_ data: UnsafePointer<UInt8>?, _ size: Int) -> String {
        String(decoding: bytes(data, size), as: UTF8.self)
    }

    /// Stops the process with `message` when a property the format promises does not hold.
    public static func require(
        _ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String,
        file: StaticString = #fileID, line: UInt = #line
    ) {
        if !condition() { fatalError("property violated: \(message())", file: file, line: line) }
    }

    /// `HH HH …`, for messages.
    public static func hex(_ bytes: [UInt8]) -> String { HexBytes.format(bytes) }
}
