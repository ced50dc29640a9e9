// Which kind of ACR122U `doctor` is looking at, and which simulator personality models it
// (docs/acr122-units.md). The classification is a list of rules so that other kinds of unit
// (clones, SAM-slot units) are added as rules, not as edits of the doctor's checks.
import ACR122Simulator
import PN53x
import PCSC

/// What doctor can tell about the unit in front of it.
struct ReaderVariant: Sendable, Hashable {
    /// The pcscd driver, from the escape code the feature list names (or that worked).
    enum Driver: String, Sendable, Hashable {
        case libccid, acsccid, unknown
    }

    /// What kind of unit: a rule of ``ReaderVariantClassifier`` decides.
    struct Family: RawRepresentable, Sendable, Hashable {
        var rawValue: String
        init(rawValue: String) { self.rawValue = rawValue }
        /// A genuine ACS ACR122U (its firmware string names one).
        static let genuine = Family(rawValue: "genuine ACR122U")
        /// Nothing said which kind (no firmware string came back).
        static let unknown = Family(rawValue: "unknown unit")
    }

    var driver: Driver
    /// libccid's `ifdDriverOptions` bit 0x0001 as the feature list shows it; nil for other drivers.
    var escapeOptionEnabled: Bool?
    var firmware: String?
    var family: Family
    /// Genuine, clone or Touchatag-era unit (docs/acr122-clones.md §3).
    var unit: ACR122Unit = .genuine
    /// What works on it and what does not, in the doctor's words.
    var works: [String]
    var doesNotWork: [String]
    /// The simulator personality whose feature list and firmware match, nil when none does.
    var personality: String?

    /// `genuine ACR122U, firmware ACR122U215, libccid (escape option on); simulator personality acr122u215`.
    var text: String {
        var parts = [family.rawValue]
        if let firmware { parts.append("firmware \(firmware)") }
        var driverText = driver.rawValue
        if let escapeOptionEnabled { driverText += escapeOptionEnabled ? " (escape option on)" : " (escape option off)" }
        parts.append(driverText)
        return parts.joined(separator: ", ") + (personality.map { "; simulator personality \($0)" } ?? "")
    }

    /// doctor's `variant` line: ``text``, the unit (``ACR122Unit/summary``), then what works and
    /// what does not: `genuine ACR122U, firmware ACR122U207, libccid (escape option on);
    /// simulator personality ccid-escape-enabled; no sign of a clone …; works: …`.
    var detail: String {
        var detail = text + "; " + unit.summary
        if !works.isEmpty { detail += "; works: " + works.joined(separator: ", ") }
        if !doesNotWork.isEmpty { detail += "; does not work: " + doesNotWork.joined(separator: ", ") }
        return detail
    }

    /// The fix for a clone or a Touchatag-era unit, nil for a genuine unit.
    var unitFix: String? {
        switch unit {
        case .genuine: nil
        case .clone: "read cards with `secbridge read` (PN532 path) or libnfc's tools; for PC/SC card connections use a genuine ACS unit"
        case .pseudoCard: "read cards with `secbridge read` (PN532 path) or libnfc's tools; give other programs the reader explicitly"
        }
    }
}

/// The facts a classification reads (from `DoctorPCSCFindings`, or from a selftest bundle).
struct ReaderVariantEvidence: Sendable, Hashable {
    var readerName: String?
    /// The CM_IOCTL_GET_FEATURE_REQUEST answer, nil when it failed.
    var featureList: [UInt8]?
    /// The escape code that carried a pseudo-APDU, nil when none did.
    var workingEscapeCode: UInt32?
    var firmware: String?
    /// The ATR of the card present, empty without one.
    var atr: [UInt8] = []
    /// Whether TgInitAsTarget with no terminal came back with no bytes (true) or with an answer
    /// (false); nil when it was not seen.
    var emptyTargetAnswer: Bool?
    /// SCARD_ATTR_VENDOR_NAME, nil when the driver did not give it (a clone's is not ACS's).
    var vendorName: String?

    /// The unit as ``ACR122Unit`` classifies it (clone, Touchatag-era pseudo-card, genuine).
    var unit: ACR122Unit { ACR122Unit.classify(vendorName: vendorName, atr: atr) }
}

enum ReaderVariantClassifier {
    /// The family rules, consulted in order; the first that returns a family decides. A rule for a
    /// new kind of unit (a clone, a SAM-slot unit) goes before ``genuineRule``.
    static let familyRules: [@Sendable (ReaderVariantEvidence) -> ReaderVariant.Family?] = [
        unitRule,
        genuineRule,
    ]

    /// A clone (vendor name not ACS's) or a Touchatag-era unit (a pseudo-card ATR), as
    /// ``ACR122Unit`` tells them apart (docs/acr122-clones.md §3).
    static let unitRule: @Sendable (ReaderVariantEvidence) -> ReaderVariant.Family? = { evidence in
        switch evidence.unit {
        case .genuine: nil
        case .clone(let vendor): ReaderVariant.Family(rawValue: "ACR122U clone (vendor \"\(vendor)\")")
        case .pseudoCard(let atr): ReaderVariant.Family(rawValue: "Touchatag-era unit (pseudo-card ATR \(atr.hexString))")
        }
    }

    /// A firmware string starting `ACR122U` is a genuine unit.
    static let genuineRule: @Sendable (ReaderVariantEvidence) -> ReaderVariant.Family? = { evidence in
        evidence.firmware?.hasPrefix("ACR122U") == true ? .genuine : nil
    }

    /// The driver from the feature list's FEATURE_CCID_ESC_COMMAND code, else from the escape code
    /// that worked; libccid's escape option from whether that entry is listed.
    static func driver(_ evidence: ReaderVariantEvidence) -> (ReaderVariant.Driver, Bool?) {
        let listed = evidence.featureList.flatMap { try? PCSCFeatureList(parsing: $0) }
        let code = listed?.escapeCommandCode ?? evidence.workingEscapeCode
        switch code {
        case ACR122ControlCode.acsccidEscape?: return (.acsccid, nil)
        case ACR122ControlCode.ccidEscape?: return (.libccid, true)
        default:
            // libccid lists FEATURE_GET_TLV_PROPERTIES alone when escape commands are off.
            if listed?.features.map(\.tag) == [PCSCFeature.getTLVPropertiesTag] { return (.libccid, false) }
            return (.unknown, nil)
        }
    }

    /// Classifies the unit: driver, escape option, firmware, family (``familyRules``), what works,
    /// and the matching simulator personality.
    static func classify(_ evidence: ReaderVariantEvidence) -> ReaderVariant {
        let (driver, escape) = driver(evidence)
        let family = familyRules.lazy.compactMap { $0(evidence) }.first ?? .unknown
        var works: [String] = []
        var doesNotWork: [String] = []
        let escapePath = driver == .acsccid || escape == true
        let unit = evidence.unit
        if escapePath {
            // A clone or a Touchatag-era unit never shows the card in PC/SC (docs/acr122-clones.md §3).
            works.append(unit.reachesCardsOnlyThroughPN532
                ? "`secbridge read` (it falls back to the PN532 path, --wait included), --pn532 sessions"
                : "reader sessions (PC/SC part 3 and --pn532)")
            works.append("card emulation (emulate, performTransaction)")
        } else if escape == false {
            works.append("reader sessions through SCardTransmit while a card is present")
            doesNotWork.append("card emulation and --pn532 without a card (escape commands are refused)")
        }
        switch unit {
        case .genuine: break
        case .clone:
            doesNotWork.append("anything that waits for a card in PC/SC (`send`, `shell`, storage-card reads, pcsc_scan, pyscard): the unit never reports one")
        case .pseudoCard:
            works.append("pseudo-APDUs through the pseudo-card")
            doesNotWork.append("PC/SC card connections to a tag; programs that take \"the first reader with a card\" take this one (secbridge skips it)")
        }
        if let firmware = evidence.firmware, let number = ACR122FirmwareVersion.number(firmware) {
            if number < 200 {
                works.append("pseudo-APDUs over T=0 (61 xx answered with FF C0)")
            }
            if number == 215 {
                works.append("Set PICC Operating Parameter's one-byte answer is read as the parameter")
            }
        }
        return ReaderVariant(
            driver: driver, escapeOptionEnabled: escape, firmware: evidence.firmware, family: family, unit: unit,
            works: works, doesNotWork: doesNotWork, personality: matchingPersonality(evidence))
    }

    /// The registry personality whose feature list equals the one seen, preferring (in this order)
    /// the same answer to TgInitAsTarget with no terminal when that was seen, then the same
    /// firmware string; the first with that feature list otherwise; nil without a feature list or
    /// when none matches.
    static func matchingPersonality(_ evidence: ReaderVariantEvidence) -> String? {
        guard let featureList = evidence.featureList else { return nil }
        var candidates = ACR122Personality.all.filter { $0.personality.featureList == featureList }
        // The unit's kind first: a clone's vendor name, a Touchatag-era unit's pseudo-card.
        let unit = evidence.unit
        let sameUnit = candidates.filter { named in
            let p = named.personality
            return ACR122Unit.classify(vendorName: p.vendorName, atr: p.pseudoCardATR ?? []) == unit
        }
        if evidence.vendorName != nil || !evidence.atr.isEmpty, !sameUnit.isEmpty { candidates = sameUnit }
        if let empty = evidence.emptyTargetAnswer {
            let same = candidates.filter { $0.personality.emptyAnswerWhileNoTerminal == empty }
            if !same.isEmpty { candidates = same }
        }
        return (candidates.first { $0.personality.firmware == evidence.firmware } ?? candidates.first)?.name
    }
}

extension ACR122FirmwareVersion {
    /// The three digits of `ACR122Uxyz` as a number (207 for ACR122U207), nil for another string.
    static func number(_ firmware: String) -> Int? {
        guard firmware.hasPrefix("ACR122U"), firmware.utf8.count == 10 else { return nil }
        return Int(firmware.dropFirst(7))
    }
}
