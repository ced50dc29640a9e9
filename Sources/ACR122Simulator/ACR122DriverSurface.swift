/// What the pcscd driver in front of an ACR122U answers by itself, without asking the reader: the
/// PC/SC part 10 feature list and TLV properties, and the SCardGetAttrib values, as libccid
/// (LudovicRousseau/CCID `src/ifdhandler.c`) and acsccid (acshk/acsccid `src/ifdhandler.c`) build
/// them for USB 072F:2200 (docs/acr122-units.md §1, §2).
extension ACR122Personality {
    /// The reader name the driver's Info.plist gives 072F:2200, before pcscd appends ` 00 00`:
    /// libccid "ACS ACR122U PICC Interface" (CCID readers/supported_readers.txt), acsccid
    /// "ACS ACR122U" (acsccid src/supported_readers.txt).
    public var readerFriendlyName: String {
        driver == .acsDriver ? "ACS ACR122U" : "ACS ACR122U PICC Interface"
    }

    /// The CM_IOCTL_GET_FEATURE_REQUEST answer: `| tag | 04 | control code, big-endian |`…
    /// (PC/SC part 10 §2.2).
    ///
    /// - libccid without ifdDriverOptions 0x0001: `12 04 42 33 00 12` (FEATURE_GET_TLV_PROPERTIES
    ///   only: the ACR122U has no PIN pad, bPINSupport 0).
    /// - libccid with 0x0001: that, then `13 04 42 00 00 01` (FEATURE_CCID_ESC_COMMAND →
    ///   SCARD_CTL_CODE(1)).
    /// - acsccid: `11 04 42 33 00 11` (FEATURE_IFD_DISPLAY_PROPERTIES), `12 04 42 33 00 12`,
    ///   `13 04 42 00 0D AC` (SCARD_CTL_CODE(3500)), whatever its ifdDriverOptions.
    public var featureList: [UInt8] {
        func entry(_ tag: UInt8, _ code: UInt32) -> [UInt8] {
            [tag, 0x04, UInt8(code >> 24), UInt8((code >> 16) & 0xFF), UInt8((code >> 8) & 0xFF), UInt8(code & 0xFF)]
        }
        let tlv = entry(ACR122DriverConstants.featureGetTLVProperties, ACR122DriverConstants.ioctlFeatureGetTLVProperties)
        switch driver {
        case .ccidEscapeDisabled:
            return tlv
        case .ccidEscapeEnabled:
            return tlv + entry(ACR122DriverConstants.featureCCIDEscCommand, ACR122DriverConstants.ccidEscapeCode)
        case .acsDriver:
            return entry(ACR122DriverConstants.featureIFDDisplayProperties, ACR122DriverConstants.ioctlFeatureIFDDisplayProperties)
                + tlv + entry(ACR122DriverConstants.featureCCIDEscCommand, ACR122DriverConstants.acsEscapeCode)
        }
    }

    /// The IOCTL_FEATURE_GET_TLV_PROPERTIES answer (PC/SC part 10 §2.6.14): `| tag | length | value,
    /// little-endian |`…, for 072F:2200 (wLcdLayout 0, dwFeatures 0x00020040: short APDUs):
    ///
    ///     01 02 00 00            wLcdLayout 0 (no display)
    ///     03 01 00               bTimeOut2 0
    ///     09 01 pp               bPPDUSupport: libccid 01 with ifdDriverOptions 0x0001, else 00;
    ///                            acsccid 03 (escape and SCardTransmit)
    ///     0B 02 2F 07            wIdVendor 0x072F
    ///     0C 02 00 22            wIdProduct 0x2200
    ///     0A 04 00 00 00 00      dwMaxAPDUDataSize 0 (short APDUs only)
    public var tlvProperties: [UInt8] {
        let ppdu: UInt8
        switch driver {
        case .ccidEscapeDisabled: ppdu = 0x00
        case .ccidEscapeEnabled: ppdu = 0x01
        case .acsDriver: ppdu = 0x03
        }
        return [0x01, 0x02, 0x00, 0x00, 0x03, 0x01, 0x00, 0x09, 0x01, ppdu,
                0x0B, 0x02, 0x2F, 0x07, 0x0C, 0x02, 0x00, 0x22, 0x0A, 0x04, 0x00, 0x00, 0x00, 0x00]
    }

    /// The answer to a control code the driver handles itself, or nil when the code is not one of
    /// those (the escape codes go to the reader): CM_IOCTL_GET_FEATURE_REQUEST (and its Windows
    /// value 0x313520, which both drivers accept), IOCTL_FEATURE_GET_TLV_PROPERTIES, and under
    /// acsccid IOCTL_FEATURE_IFD_DISPLAY_PROPERTIES (`00 00 00 00`: wLcdMaxCharacters and
    /// wLcdMaxLines 0). The command bytes are not looked at by either driver for these codes.
    public func driverAnswer(code: UInt32) -> [UInt8]? {
        switch code {
        case ACR122DriverConstants.getFeatureRequest, ACR122DriverConstants.windowsGetFeatureRequest:
            return featureList
        case ACR122DriverConstants.ioctlFeatureGetTLVProperties:
            return tlvProperties
        case ACR122DriverConstants.ioctlFeatureIFDDisplayProperties where driver == .acsDriver:
            return [0x00, 0x00, 0x00, 0x00]
        default:
            return nil
        }
    }

    /// The SCardGetAttrib value the driver computes without the reader, or nil when it has none
    /// (IFD_ERROR_TAG, SCARD_E_UNSUPPORTED_FEATURE); an empty array is a success with no bytes.
    /// Both drivers compute these the same way:
    ///
    /// | Attribute | Value |
    /// |---|---|
    /// | SCARD_ATTR_VENDOR_NAME 0x00010100 | the USB iManufacturer string (``vendorName``) and a NUL: `41 43 53 00` ("ACS") |
    /// | SCARD_ATTR_VENDOR_IFD_VERSION 0x00010102 | `bcdDevice << 16`, 4 bytes little-endian: `00 00 07 02` for 2.07 |
    /// | SCARD_ATTR_VENDOR_IFD_SERIAL_NO 0x00010103 | empty: the ACR122U has no iSerialNumber |
    /// | SCARD_ATTR_CHANNEL_ID 0x00020110 | `0x0020 << 16 | bus << 8 | address`, little-endian (USB) |
    /// | SCARD_ATTR_MAXINPUT 0x0007A007 | dwMaxCCIDMessageLength 271 − 10 = 261: `05 01 00 00` |
    ///
    /// - Parameters:
    ///   - tag: the attribute.
    ///   - usbBus: the USB bus number in SCARD_ATTR_CHANNEL_ID.
    ///   - usbAddress: the USB device address in SCARD_ATTR_CHANNEL_ID.
    public func driverAttribute(_ tag: UInt32, usbBus: UInt8 = 1, usbAddress: UInt8 = 2) -> [UInt8]? {
        switch tag {
        case ACR122DriverConstants.attrVendorName:
            return Array(vendorName.utf8) + [0]
        case ACR122DriverConstants.attrVendorIFDVersion:
            return SimulatedACR122U.littleEndian(UInt32(bcdDevice) << 16)
        case ACR122DriverConstants.attrVendorIFDSerialNumber:
            return []
        case ACR122DriverConstants.attrChannelID:
            return SimulatedACR122U.littleEndian(0x0020 << 16 | UInt32(usbBus) << 8 | UInt32(usbAddress))
        case ACR122DriverConstants.attrMaxInput:
            return SimulatedACR122U.littleEndian(ACR122DriverConstants.maxInput)
        default:
            return nil
        }
    }
}

extension ACR122DriverConstants {
    /// FEATURE_IFD_DISPLAY_PROPERTIES (PC/SC part 10).
    public static let featureIFDDisplayProperties: UInt8 = 0x11
    /// FEATURE_GET_TLV_PROPERTIES (PC/SC part 10).
    public static let featureGetTLVProperties: UInt8 = 0x12
    /// The drivers' IOCTL for a feature: SCARD_CTL_CODE(0x330000 + tag) (CLASS2_IOCTL_MAGIC,
    /// CCID src/ccid_ifdhandler.h).
    public static func featureIOCTL(_ tag: UInt8) -> UInt32 { 0x4200_0000 + 0x33_0000 + UInt32(tag) }
    /// IOCTL_FEATURE_GET_TLV_PROPERTIES = 0x42330012.
    public static let ioctlFeatureGetTLVProperties: UInt32 = featureIOCTL(featureGetTLVProperties)
    /// IOCTL_FEATURE_IFD_DISPLAY_PROPERTIES = 0x42330011 (acsccid).
    public static let ioctlFeatureIFDDisplayProperties: UInt32 = featureIOCTL(featureIFDDisplayProperties)
    /// The Windows value of SCARD_CTL_CODE(3400), which both drivers also accept (for RDP clients).
    public static let windowsGetFeatureRequest: UInt32 = 0x0031_3520
    /// SCARD_ATTR_VENDOR_IFD_VERSION.
    public static let attrVendorIFDVersion: UInt32 = 0x0001_0102
    /// SCARD_ATTR_VENDOR_IFD_SERIAL_NO.
    public static let attrVendorIFDSerialNumber: UInt32 = 0x0001_0103
    /// SCARD_ATTR_CHANNEL_ID.
    public static let attrChannelID: UInt32 = 0x0002_0110
    /// SCARD_ATTR_ICC_INTERFACE_STATUS: 1 while a card is present, else 0.
    public static let attrICCInterfaceStatus: UInt32 = 0x0009_0301
}
