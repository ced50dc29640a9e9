/// ATRs a reader reports for a "card" that is no card in its field: the Touchatag-era ACR122U's
/// permanent pseudo-card (docs/acr122-clones.md §2).
public enum PseudoCardATR {
    /// `3B 00`: TS 3B (direct convention), T0 00 (no interface bytes, no historical bytes, T=0
    /// implied; ISO/IEC 7816-3 §8.2). The ATR a Touchatag-era unit reports with no tag on it.
    public static let touchatag: [UInt8] = [0x3B, 0x00]

    /// Whether `atr` is a known pseudo-card ATR: a reader showing it has no card in its field.
    public static func isPseudoCard(_ atr: [UInt8]) -> Bool {
        atr == touchatag
    }
}

extension ReaderState {
    /// Whether the reader has a card in its field: SCARD_STATE_PRESENT, and the ATR not a
    /// pseudo-card's (``PseudoCardATR``). What "the first reader with a card" is chosen by.
    public var hasCard: Bool {
        eventFlags.contains(.present) && !PseudoCardATR.isPseudoCard(atr)
    }
}
