import PCSCCore

/// SCardControl codes that reach an ACR122U, as pcsc-lite numbers them.
///
/// pcsc-lite defines `SCARD_CTL_CODE(n)` as `0x42000000 + n` (pcsc-lite src/PCSC/reader.h). Which
/// escape code a reader accepts depends on its driver (docs/acr122-pn532.md §1):
///
/// | Driver | Escape code | Gate |
/// |---|---|---|
/// | CCID (libccid) | `ccidEscape` 0x42000001 | only with `ifdDriverOptions` bit 0x01 |
/// | ACS acsccid | `acsccidEscape` 0x42000DAC | none |
public enum ACR122ControlCode {
    /// `SCARD_CTL_CODE(1)`: the CCID driver's escape command (libccid `IOCTL_CCID_ESCAPE`).
    public static let ccidEscape: UInt32 = 0x4200_0001
    /// `SCARD_CTL_CODE(3500)`: the escape command of ACS's own acsccid driver.
    public static let acsccidEscape: UInt32 = 0x4200_0DAC
    /// `CM_IOCTL_GET_FEATURE_REQUEST` = `SCARD_CTL_CODE(3400)` (PC/SC part 10 §2.2): returns the
    /// features a driver offers as TLVs, see `PCSCFeatureList`.
    public static let getFeatureRequest: UInt32 = PCSCConstants.getFeatureRequest
    /// The escape codes to try, in order, when the feature request does not name one.
    public static let fallbackEscapeCodes: [UInt32] = [ccidEscape, acsccidEscape]
}
