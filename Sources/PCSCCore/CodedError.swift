/// The code of an error: an open set of named values, so codes this version does not list still fit
/// (house style, as swift-system's `Errno`). Conforming structs store `rawValue` and declare their
/// known codes as static members; the description is the raw value.
public protocol ErrorCode: RawRepresentable, Sendable, Hashable, CustomStringConvertible where RawValue == String {
    /// Makes a code from its raw value; a value this version does not name is kept as it is.
    init(rawValue: String)
}

extension ErrorCode {
    /// The raw value, e.g. `truncated`.
    public var description: String { rawValue }
}

/// The package's one error shape: an open ``ErrorCode``, a reason in words that say what to do,
/// and whatever else the error carries (an offset, a file and line). Two errors are equal when
/// their codes are: the reason is for people, and tests compare codes (`#expect(throws:)`).
///
/// Conforming types get `==` and `hash(into:)` from here; they write their own `description`.
public protocol CodedError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The open set of codes this error carries, e.g. ``PCSCError`` codes or a parser's codes.
    associatedtype Code: ErrorCode
    /// What went wrong.
    var code: Code { get }
    /// Why, and what to do about it.
    var reason: String { get }
}

extension CodedError {
    /// Compares the codes only.
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    /// Hashes the code only, consistent with `==`.
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}
