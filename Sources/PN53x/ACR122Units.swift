import ISO7816
import PCSCCore

/// Which kind of ACR122-class unit a reader is, from what PC/SC shows without changing anything:
/// its SCARD_ATTR_VENDOR_NAME and the ATR it reports (docs/acr122-clones.md §3).
///
/// - `genuine`: ACS's own unit ("ACS"), or a unit that says nothing else.
/// - `clone`: a unit that identifies as an ACR122U (072F:2200, firmware ACR122Uxxx) but whose
///   USB manufacturer string, which libccid gives as SCARD_ATTR_VENDOR_NAME, is not ACS's
///   (e.g. "RFCARD"); its PC/SC side never reports the card.
/// - `pseudoCard`: a Touchatag-era unit that always reports a pseudo-card (ATR `3B 00`).
public enum ACR122Unit: Sendable, Hashable {
    /// ACS's own unit, or one that gives no sign of being anything else.
    case genuine
    /// A clone, with the vendor name it gives (e.g. "RFCARD").
    case clone(vendorName: String)
    /// A Touchatag-era unit, with its pseudo-card's ATR (`3B 00`).
    case pseudoCard(atr: [UInt8])

    /// Classifies a unit.
    /// - Parameters:
    ///   - vendorName: SCARD_ATTR_VENDOR_NAME (NUL and surrounding spaces ignored), nil when the
    ///     driver does not give it; "ACS" or "Advanced Card Systems…" is ACS's.
    ///   - atr: the ATR pcscd reports for the reader, [] when no card is present.
    public static func classify(vendorName: String?, atr: [UInt8]) -> ACR122Unit {
        if PseudoCardATR.isPseudoCard(atr) { return .pseudoCard(atr: atr) }
        let vendor = (vendorName ?? "").trimmingNULAndSpaces
        if !vendor.isEmpty, !isACSName(vendor) { return .clone(vendorName: vendor) }
        return .genuine
    }

    /// Whether `vendor` names ACS: "ACS" (the ACR122U's iManufacturer string) or "Advanced Card
    /// Systems", any case.
    static func isACSName(_ vendor: String) -> Bool {
        let upper = vendor.uppercased()
        return upper == "ACS" || upper.hasPrefix("ACS ") || upper.contains("ADVANCED CARD SYSTEMS")
    }

    /// Whether the unit's PC/SC side never shows the card in its field, so a reader session must
    /// reach the card through the PN532 (InListPassiveTarget).
    public var reachesCardsOnlyThroughPN532: Bool {
        switch self {
        case .genuine: false
        case .clone, .pseudoCard: true
        }
    }

    /// One line naming the unit and why it matters.
    public var summary: String {
        switch self {
        case .genuine:
            "no sign of a clone or a Touchatag-era unit (vendor ACS or not given, no pseudo-card): cards show in PC/SC"
        case .clone(let vendor):
            "a clone (vendor \"\(vendor)\", not ACS): its PC/SC side never reports a card; cards are read through the PN532 (InListPassiveTarget)"
        case .pseudoCard(let atr):
            "a Touchatag-era unit: it always reports a pseudo-card (ATR \(atr.hexString)) with no tag; cards are read through the PN532 (InListPassiveTarget)"
        }
    }
}

extension String {
    fileprivate var trimmingNULAndSpaces: String {
        var scalars = Substring(self)
        while let last = scalars.last, last == "\0" || last == " " { scalars.removeLast() }
        while let first = scalars.first, first == " " { scalars.removeFirst() }
        return String(scalars)
    }
}
