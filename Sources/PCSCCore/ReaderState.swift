/// Reader state flags for SCardGetStatusChange (SCARD_STATE_*), the low 16 bits of
/// `dwCurrentState` / `dwEventState`.
///
/// Source: pcsc-lite `pcsclite.h`; PC/SC part 5 §3.1.3.
public struct ReaderStateFlags: OptionSet, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: UInt
    public init(rawValue: UInt) { self.rawValue = rawValue }
    /// SCARD_STATE_UNAWARE (0): the caller knows nothing yet; the call returns at once.
    public static let unaware: ReaderStateFlags = []
    /// SCARD_STATE_IGNORE (0x0001): the caller is not interested in this reader.
    public static let ignore = ReaderStateFlags(rawValue: 0x0001)
    /// SCARD_STATE_CHANGED (0x0002): the state differs from the one the caller passed in.
    public static let changed = ReaderStateFlags(rawValue: 0x0002)
    /// SCARD_STATE_UNKNOWN (0x0004): the reader name is not known (the reader is gone).
    public static let unknown = ReaderStateFlags(rawValue: 0x0004)
    /// SCARD_STATE_UNAVAILABLE (0x0008): the reader's state cannot be determined.
    public static let unavailable = ReaderStateFlags(rawValue: 0x0008)
    /// SCARD_STATE_EMPTY (0x0010): there is no card in the reader.
    public static let empty = ReaderStateFlags(rawValue: 0x0010)
    /// SCARD_STATE_PRESENT (0x0020): a card is in the reader.
    public static let present = ReaderStateFlags(rawValue: 0x0020)
    /// SCARD_STATE_ATRMATCH (0x0040): the card's ATR matches the one the caller gave.
    public static let atrMatch = ReaderStateFlags(rawValue: 0x0040)
    /// SCARD_STATE_EXCLUSIVE (0x0080): a connection holds the card exclusively.
    public static let exclusive = ReaderStateFlags(rawValue: 0x0080)
    /// SCARD_STATE_INUSE (0x0100): the card is in use by at least one shared connection.
    public static let inUse = ReaderStateFlags(rawValue: 0x0100)
    /// SCARD_STATE_MUTE (0x0200): the card does not answer (no usable ATR).
    public static let mute = ReaderStateFlags(rawValue: 0x0200)
    /// SCARD_STATE_UNPOWERED (0x0400): the card is present but not powered.
    public static let unpowered = ReaderStateFlags(rawValue: 0x0400)

    static let names: [(ReaderStateFlags, String)] = [
        (.ignore, "ignore"), (.changed, "changed"), (.unknown, "unknown"), (.unavailable, "unavailable"),
        (.empty, "empty"), (.present, "present"), (.atrMatch, "atrmatch"), (.exclusive, "exclusive"),
        (.inUse, "inuse"), (.mute, "mute"), (.unpowered, "unpowered"),
    ]
    public var description: String {
        let parts = Self.names.filter { contains($0.0) }.map(\.1)
        return parts.isEmpty ? "unaware" : parts.joined(separator: ",")
    }
}

/// One reader's entry for SCardGetStatusChange.
///
/// `dwEventState` carries two things (docs/cases.md P11): the state flags in its low 16 bits, and in its high
/// 16 bits a counter of card events that pcscd increments on each insertion and removal. The counter
/// is not a state change by itself. Feed the last ``eventState`` back as ``currentState`` so the
/// next call waits for a real change.
public struct ReaderState: Sendable, Hashable {
    /// The reader's name, or `\\?PnP?\Notification` to wait for readers to come and go.
    public var readerName: String
    /// What the caller believes (`dwCurrentState`), flags and counter.
    public var currentState: UInt
    /// What pcscd reported (`dwEventState`), flags and counter.
    public var eventState: UInt
    /// The ATR of the card in the reader, when one is present.
    public var atr: [UInt8]

    /// The special reader name that reports reader attach and detach (PC/SC part 5 §3.1.3).
    public static let pnpNotification = "\\\\?PnP?\\Notification"

    /// Watches `readerName`, starting from `currentState` (SCARD_STATE_* bits, and the event counter in
    /// the high 16 bits as the last report gave it; 0 is SCARD_STATE_UNAWARE, which returns at once).
    public init(readerName: String, currentState: UInt = 0) {
        self.readerName = readerName
        self.currentState = currentState
        self.eventState = 0
        self.atr = []
    }

    /// The state flags of ``eventState`` (value & 0xFFFF).
    public var eventFlags: ReaderStateFlags { ReaderStateFlags(rawValue: eventState & 0xFFFF) }
    /// The card event counter of ``eventState`` ((value >> 16) & 0xFFFF).
    public var eventCounter: UInt16 { UInt16(truncatingIfNeeded: eventState >> 16) }
    /// The state flags of ``currentState``.
    public var currentFlags: ReaderStateFlags { ReaderStateFlags(rawValue: currentState & 0xFFFF) }
    /// The card event counter of ``currentState``.
    public var currentCounter: UInt16 { UInt16(truncatingIfNeeded: currentState >> 16) }

    /// Adopts the reported state as the believed one, clearing SCARD_STATE_CHANGED (docs/cases.md P11).
    public mutating func acknowledge() {
        currentState = eventState & ~ReaderStateFlags.changed.rawValue
    }
}

/// Splits a PC/SC multi-string ("A\0B\0\0") into its strings: split on NUL, stop at the first empty
/// string (the double NUL). Bytes after the terminator are ignored; a missing terminator still yields
/// the strings seen (docs/cases.md P13).
public func parseMultiString(_ bytes: some Collection<UInt8>) -> [String] {
    var names: [String] = []
    var current: [UInt8] = []
    for byte in bytes {
        if byte == 0 {
            if current.isEmpty { break }
            names.append(String(decoding: current, as: UTF8.self))
            current.removeAll(keepingCapacity: true)
        } else {
            current.append(byte)
        }
    }
    if !current.isEmpty { names.append(String(decoding: current, as: UTF8.self)) }
    return names
}

/// A reader's name split into the parts pcsc-lite composes it from (docs/cases.md P13).
///
/// pcsc-lite names a reader "<friendly name> <reader index, 2 hex digits> <slot, 2 hex digits>", e.g.
/// "ACS ACR122U PICC Interface 00 00". Names are opaque identifiers: compare them whole; this view is
/// for display and for matching a user's `--reader` argument.
public struct ReaderName: Sendable, Hashable {
    /// The name as pcsc-lite reports it, e.g. "ACS ACR122U PICC Interface 00 00": what to pass to
    /// SCardConnect and to compare.
    public let full: String
    /// The part before the trailing index and slot.
    public let friendlyName: String
    /// The reader index pcscd gave the reader, when the name ends in "XX YY".
    public let index: UInt8?
    /// The slot number, when the name ends in "XX YY".
    public let slot: UInt8?

    /// Splits `name`. A name that does not end in two 2-digit hex numbers keeps it whole as
    /// ``friendlyName``, with ``index`` and ``slot`` nil.
    public init(_ name: String) {
        full = name
        let parts = name.split(separator: " ", omittingEmptySubsequences: false)
        if parts.count >= 3,
            let slot = UInt8(parts[parts.count - 1], radix: 16), parts[parts.count - 1].count == 2,
            let index = UInt8(parts[parts.count - 2], radix: 16), parts[parts.count - 2].count == 2
        {
            self.index = index
            self.slot = slot
            friendlyName = parts.dropLast(2).joined(separator: " ")
        } else {
            index = nil
            slot = nil
            friendlyName = name
        }
    }
}
