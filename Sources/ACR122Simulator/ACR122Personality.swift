/// How a simulated ACR122U and its CCID driver behave: the driver's escape gating and firmware
/// quirks (docs/acr122-pn532.md §1, §2, §3, §5c, §6).
public struct ACR122Personality: Sendable, Hashable {
    /// The pcscd driver in front of the reader, which decides the escape (SCardControl) path.
    public enum Driver: Sendable, Hashable, CaseIterable {
        /// libccid without `ifdDriverOptions` 0x0001: control code 0x42000001 fails with
        /// IFD_COMMUNICATION_ERROR (SCARD_E_NOT_TRANSACTED 0x80100016) and the feature request does
        /// not list FEATURE_CCID_ESC_COMMAND (tag 0x13).
        case ccidEscapeDisabled
        /// libccid with `ifdDriverOptions` 0x0001: 0x42000001 carries pseudo-APDUs; the feature
        /// request lists `13 04 42 00 00 01`.
        case ccidEscapeEnabled
        /// ACS acsccid: 0x42000DAC (SCARD_CTL_CODE(3500)) carries pseudo-APDUs, always listed
        /// (`13 04 42 00 0D AC`).
        case acsDriver
    }

    /// Which historical bytes the synthesised ATR of an ISO/IEC 14443-4 card carries (§3).
    public enum ATRHistoricalBytes: Sendable, Hashable {
        /// The ATS's T1…Tk, as PC/SC part 3 says and a real ACR122U shows (the default).
        case atsHistoricalBytes
        /// The whole ATS, TL included (ACS's ACR122T manual, (U)), cut at 15 bytes.
        case wholeATS
    }

    /// Which pcscd driver stands in front of the reader, and so which control code carries escape
    /// commands (docs/acr122-pn532.md §1, §5c). ``Driver/ccidEscapeEnabled`` by default.
    public var driver: Driver
    /// The firmware string `FF 00 48 00 00` returns: 10 ASCII bytes, no status word.
    public var firmware: String
    /// Early firmware (and the Touchatag) talks T=0 to the host: a Direct Transmit's answer is
    /// announced with `61 xx`, xx counting the whole answer with the chip's 90 00 (`61 08` for
    /// GetFirmwareVersion's `D5 03 32 01 04 07 90 00`, libnfc's Touchatag trace), and fetched with
    /// `FF C0 00 00 xx`; card connections negotiate T=0.
    public var legacyT0Firmware: Bool
    /// Which historical bytes the ATR of an ISO/IEC 14443-4 card carries (docs/acr122-pn532.md §3);
    /// the ATS's historical bytes by default.
    public var atrHistoricalBytes: ATRHistoricalBytes
    /// GetFirmwareVersion's answer: IC, Ver, Rev, Support (`32 01 06 07` for a PN532 v1.6).
    public var pn532FirmwareVersion: [UInt8]
    /// The MCU timeout byte at power-up (FF 00 41 TO 00): 00 none, 01–FE ×5 s, FF wait for the chip.
    /// The default 01 (5 s) is an assumption (U): the ACR122U API does not state one.
    public var initialMCUTimeout: UInt8
    /// libccid's read timeout for an escape command (and, here, for every exchange): 30 s. When it
    /// passes first, the call fails with IFD_COMMUNICATION_ERROR.
    public var driverTimeout: Duration
    /// How long one passive activation attempt of InListPassiveTarget takes (simulated time), so
    /// that MxRtyPassiveActivation n bounds polling at (n + 1) attempts. 5 ms is an estimate (U).
    public var passiveActivationAttempt: Duration
    /// When TgInitAsTarget's MCU timeout passes with no terminal, the reader answers with no bytes
    /// at all instead of `63 00`. Some firmware is reported to behave so (the issue that asked
    /// for it, not a document: (U)); a client must take it as "no terminal yet".
    public var emptyAnswerWhileNoTerminal: Bool = false
    /// The USB device descriptor's bcdDevice, which libccid and acsccid report as
    /// SCARD_ATTR_VENDOR_IFD_VERSION (`bcdDevice << 16`). 0x0207 for the ACR122U207, as libccid's
    /// record of the reader shows (CCID readers/ACR122U_PICC.txt, "bcdDevice: 2.07").
    public var bcdDevice: UInt16 = 0x0207
    /// How Set PICC Operating Parameter (`FF 00 51 PP 00`) answers (docs/acr122-units.md §3).
    public var piccParameterAnswer: PICCParameterAnswer = .statusAndParameter
    /// Whether the MCU's automatic polling reports a card to the driver (presence, ATR). A clone
    /// (docs/acr122-clones.md §1) never does: pcscd shows the reader empty whatever lies on it,
    /// and a card is reached only through the PN532 (Direct Transmit InListPassiveTarget).
    public var reportsCardsToPCSC: Bool = true
    /// InListPassiveTarget gives SENS_RES least significant byte first (`04 00` for a MIFARE
    /// Classic 1K where a genuine PN532 gives `00 04`), as a clone does (docs/acr122-clones.md §1).
    public var sensResLeastSignificantFirst: Bool = false
    /// InDeselect answers status 00 but does nothing: the tag is not halted, so the next
    /// InListPassiveTarget lists it again (a clone, docs/acr122-clones.md §1).
    public var ignoresInDeselect: Bool = false
    /// A pseudo-card the driver always reports, with this ATR, whether or not a tag is in the field
    /// (the Touchatag-era unit's "emulator card", docs/acr122-clones.md §2); nil for none. Tags
    /// are then reached only through the PN532.
    public var pseudoCardATR: [UInt8]? = nil
    /// SCARD_ATTR_VENDOR_NAME as libccid gives it: the USB iManufacturer string ("ACS" on a genuine
    /// unit, "RFCARD" on the clone of docs/acr122-clones.md §1), NUL-terminated on the wire.
    public var vendorName: String = "ACS"

    /// The shape of the answer to Set PICC Operating Parameter.
    public enum PICCParameterAnswer: Sendable, Hashable {
        /// `90 PP`, as ACR122U API v2.04 documents it.
        case statusAndParameter
        /// `PP` alone, as an ACR122U215 answered in nfcpy issue #105 (`FF 00 51 7F 00` → `7F`).
        case parameterOnly
    }

    /// A personality; the defaults are an ACR122U with firmware `ACR122U207` behind libccid with
    /// escape commands enabled, a PN532 v1.6 (`32 01 06 07`), an MCU timeout of one 5 s step, libccid's
    /// 30 s read timeout and 5 ms per passive activation attempt.
    public init(
        driver: Driver = .ccidEscapeEnabled, firmware: String = "ACR122U207", legacyT0Firmware: Bool = false,
        atrHistoricalBytes: ATRHistoricalBytes = .atsHistoricalBytes,
        pn532FirmwareVersion: [UInt8] = [0x32, 0x01, 0x06, 0x07], initialMCUTimeout: UInt8 = 0x01,
        driverTimeout: Duration = .seconds(30), passiveActivationAttempt: Duration = .milliseconds(5)
    ) {
        self.driver = driver
        self.firmware = firmware
        self.legacyT0Firmware = legacyT0Firmware
        self.atrHistoricalBytes = atrHistoricalBytes
        self.pn532FirmwareVersion = pn532FirmwareVersion
        self.initialMCUTimeout = initialMCUTimeout
        self.driverTimeout = driverTimeout
        self.passiveActivationAttempt = passiveActivationAttempt
    }

    /// libccid with escape commands refused (the distribution default).
    public static let ccidEscapeDisabled = ACR122Personality(driver: .ccidEscapeDisabled)
    /// libccid with `ifdDriverOptions` 0x0001.
    public static let ccidEscapeEnabled = ACR122Personality(driver: .ccidEscapeEnabled)
    /// ACS's acsccid driver.
    public static let acsDriver = ACR122Personality(driver: .acsDriver)
    /// An early unit talking T=0 (61 xx + FF C0), firmware "ACR122U103", behind libccid with escape
    /// commands enabled.
    public static let legacyT0Firmware = ACR122Personality(
        driver: .ccidEscapeEnabled, firmware: "ACR122U103", legacyT0Firmware: true)
    /// A clone that identifies as an ACR122U (USB 072F:2200, bcdDevice 2.14, so firmware
    /// "ACR122U214"), behind libccid with escape commands enabled, whose manufacturer string is
    /// "RFCARD": the PC/SC side never reports a card, SENS_RES comes least significant byte first
    /// and InDeselect is ignored (docs/acr122-clones.md §1).
    public static let clone: ACR122Personality = {
        var personality = ACR122Personality(driver: .ccidEscapeEnabled, firmware: "ACR122U214")
        personality.reportsCardsToPCSC = false
        personality.sensResLeastSignificantFirst = true
        personality.ignoresInDeselect = true
        personality.vendorName = "RFCARD"
        personality.bcdDevice = 0x0214  // the unit of mfoc issue #80 (docs/acr122-clones.md §1)
        return personality
    }()
    /// A Touchatag-era unit (docs/acr122-clones.md §2): firmware "ACR122U102", PN532 v1.4
    /// (`32 01 04 07`), T=0 to the host, and a permanent pseudo-card with ATR `3B 00`; tags are
    /// reached only through the PN532.
    public static let touchatag: ACR122Personality = {
        var personality = ACR122Personality(
            driver: .ccidEscapeEnabled, firmware: "ACR122U102", legacyT0Firmware: true,
            pn532FirmwareVersion: [0x32, 0x01, 0x04, 0x07])
        personality.reportsCardsToPCSC = false
        personality.pseudoCardATR = [0x3B, 0x00]
        return personality
    }()
}

/// pcsc-lite and PC/SC part 10 numbers the simulated driver answers to.
public enum ACR122DriverConstants {
    /// `SCARD_CTL_CODE(1)`: libccid's escape command.
    public static let ccidEscapeCode: UInt32 = 0x4200_0001
    /// `SCARD_CTL_CODE(3500)`: acsccid's escape command.
    public static let acsEscapeCode: UInt32 = 0x4200_0DAC
    /// `CM_IOCTL_GET_FEATURE_REQUEST` = `SCARD_CTL_CODE(3400)` (PC/SC part 10 §2.2).
    public static let getFeatureRequest: UInt32 = 0x4200_0D48
    /// `FEATURE_CCID_ESC_COMMAND`.
    public static let featureCCIDEscCommand: UInt8 = 0x13

    /// `SCARD_ATTR_MAXINPUT` (SCARD_ATTR_VALUE(SCARD_CLASS_VENDOR_DEFINED, 0xA007)).
    public static let attrMaxInput: UInt32 = 0x0007_A007
    /// `SCARD_ATTR_VENDOR_NAME`.
    public static let attrVendorName: UInt32 = 0x0001_0100
    /// `SCARD_ATTR_ATR_STRING`.
    public static let attrATRString: UInt32 = 0x0009_0303
    /// `SCARD_ATTR_ICC_PRESENCE`: 0 absent, 2 present (swallowed).
    public static let attrICCPresence: UInt32 = 0x0009_0300
    /// `TAG_IFD_ATR` (ifdhandler.h).
    public static let tagIFDATR: UInt32 = 0x0303
    /// `TAG_IFD_SLOTS_NUMBER` (ifdhandler.h).
    public static let tagIFDSlotsNumber: UInt32 = 0x0FAE
    /// `TAG_IFD_SIMULTANEOUS_ACCESS` (ifdhandler.h).
    public static let tagIFDSimultaneousAccess: UInt32 = 0x0FAF

    /// The ACR122U's CCID descriptor: dwMaxCCIDMessageLength 271 (CCID readers/ACR122U_PICC.txt).
    public static let maxCCIDMessageLength: UInt32 = 271
    /// libccid's SCARD_ATTR_MAXINPUT: dwMaxCCIDMessageLength − 10 (the CCID header) = 261
    /// (CCID src/ifdhandler.c, IFDHGetCapabilities).
    public static let maxInput: UInt32 = maxCCIDMessageLength - 10
    /// SCARD_PROTOCOL_T0 / SCARD_PROTOCOL_T1 as IFDHSetProtocolParameters receives them.
    public static let protocolT0: UInt = 1
    /// SCARD_PROTOCOL_T1 (2), as IFDHSetProtocolParameters receives it.
    public static let protocolT1: UInt = 2
}
