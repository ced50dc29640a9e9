/// One entry of the personality registry: the name `simulate --personality`, the driver's
/// `DEVICENAME` (`:personality=NAME`) and the control verb `personality name=NAME` take, a one-line
/// summary for help texts, and the personality itself (docs/acr122-units.md).
public struct NamedACR122Personality: Sendable, Hashable {
    /// The name, lower case with `-` (e.g. `ccid-escape-enabled`, `acr122u215`).
    public let name: String
    /// What the unit is, in a few words, for `simulate --help` and `doctor`.
    public let summary: String
    /// The behaviour: driver, firmware string and quirks.
    public let personality: ACR122Personality

    /// - Parameters:
    ///   - name: the registry name (letters, digits and `-`).
    ///   - summary: one line, no full stop.
    ///   - personality: the behaviour.
    public init(name: String, summary: String, personality: ACR122Personality) {
        self.name = name
        self.summary = summary
        self.personality = personality
    }
}

extension ACR122Personality {
    /// The default personality's name: a genuine ACR122U (firmware ACR122U207) behind libccid with
    /// escape commands enabled (`ifdDriverOptions` 0x0001).
    public static let defaultName = "ccid-escape-enabled"

    /// Every personality the simulator offers, the default first. Tests that must hold on every
    /// unit iterate this list, so a personality added here is picked up by them.
    ///
    /// | Name | Unit |
    /// |---|---|
    /// | `ccid-escape-enabled` | ACR122U207, libccid with ifdDriverOptions 0x0001 (default) |
    /// | `ccid-escape-disabled` | ACR122U207, libccid as distributed: SCARD_CTL_CODE(1) refused |
    /// | `acs-driver` | ACR122U207 behind ACS's acsccid: escape SCARD_CTL_CODE(3500) |
    /// | `legacy-t0` | an early T=0 unit (ACR122U103): 61 xx + FF C0 |
    /// | `atr-whole-ats` | the ATR's historical bytes are the whole ATS (ACR122T manual, (U)) |
    /// | `empty-target-wait` | TgInitAsTarget without a terminal answers 0 bytes, not 63 00 (U) |
    /// | `acr122u203` … `acr122u216` | genuine units with those firmware strings, libccid with escape |
    ///
    /// Sources for each: docs/acr122-units.md.
    public static let all: [NamedACR122Personality] = [
        NamedACR122Personality(
            name: "ccid-escape-enabled", summary: "ACR122U207 behind libccid, escape commands enabled (default)",
            personality: .ccidEscapeEnabled),
        NamedACR122Personality(
            name: "ccid-escape-disabled", summary: "ACR122U207 behind libccid as distributed: escape commands refused",
            personality: .ccidEscapeDisabled),
        NamedACR122Personality(
            name: "acs-driver", summary: "ACR122U207 behind ACS's acsccid (escape code 0x42000DAC)",
            personality: .acsDriver),
        NamedACR122Personality(
            name: "legacy-t0", summary: "an early T=0 unit, ACR122U103 (61 xx and FF C0)",
            personality: .legacyT0Firmware),
        NamedACR122Personality(
            name: "atr-whole-ats", summary: "ATR historical bytes are the whole ATS (U)",
            personality: ACR122Personality(driver: .ccidEscapeEnabled, atrHistoricalBytes: .wholeATS)),
        NamedACR122Personality(
            name: "empty-target-wait", summary: "TgInitAsTarget with no terminal answers 0 bytes (U)",
            personality: {
                var personality = ACR122Personality.ccidEscapeEnabled
                personality.emptyAnswerWhileNoTerminal = true
                return personality
            }()),
        NamedACR122Personality(
            name: "acr122u203", summary: "firmware ACR122U203 behind libccid, escape enabled",
            personality: .genuine(firmware: "ACR122U203")),
        NamedACR122Personality(
            name: "acr122u214", summary: "firmware ACR122U214 behind libccid, escape enabled",
            personality: .genuine(firmware: "ACR122U214")),
        NamedACR122Personality(
            name: "acr122u215", summary: "firmware ACR122U215: one-byte answer to Set PICC Operating Parameter",
            personality: {
                var personality = ACR122Personality.genuine(firmware: "ACR122U215")
                personality.piccParameterAnswer = .parameterOnly
                return personality
            }()),
        NamedACR122Personality(
            name: "acr122u216", summary: "firmware ACR122U216 behind libccid, escape enabled",
            personality: .genuine(firmware: "ACR122U216")),
        NamedACR122Personality(
            name: "clone", summary: "an ACR122U clone (vendor RFCARD, ACR122U214): PC/SC never reports the card, SENS_RES LSB first, InDeselect ignored",
            personality: .clone),
        NamedACR122Personality(
            name: "touchatag", summary: "a Touchatag-era unit (ACR122U102, PN532 v1.4, T=0): a permanent pseudo-card, ATR 3B 00",
            personality: .touchatag),
    ]

    /// The registry's names, in ``all``'s order.
    public static var names: [String] { all.map(\.name) }

    /// The personality registered as `name` (exact, case-sensitive), or nil.
    public static func named(_ name: String) -> ACR122Personality? {
        all.first { $0.name == name }?.personality
    }

    /// A genuine unit with `firmware` (10 ASCII characters such as `ACR122U214`) behind libccid
    /// with escape commands enabled; the USB bcdDevice follows the firmware's digits (2.14 for
    /// ACR122U214), as on the ACR122U207 whose descriptor libccid records with bcdDevice 2.07
    /// (CCID readers/ACR122U_PICC.txt). For other firmware numbers that link is an assumption (U).
    public static func genuine(firmware: String, driver: Driver = .ccidEscapeEnabled) -> ACR122Personality {
        var personality = ACR122Personality(driver: driver, firmware: firmware)
        personality.bcdDevice = bcdDevice(forFirmware: firmware) ?? personality.bcdDevice
        return personality
    }

    /// The bcdDevice for a firmware string `ACR122Uxyz` (x, y, z decimal digits): 0x0xyz, e.g.
    /// ACR122U214 → 0x0214; nil for any other string.
    public static func bcdDevice(forFirmware firmware: String) -> UInt16? {
        let bytes = Array(firmware.utf8)
        guard bytes.count == 10, firmware.hasPrefix("ACR122U"),
              bytes[7...].allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        return UInt16(bytes[7] - 0x30) << 8 | UInt16(bytes[8] - 0x30) << 4 | UInt16(bytes[9] - 0x30)
    }
}
