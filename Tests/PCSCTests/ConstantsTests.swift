import CPCSCLite
import Testing

import PCSC

/// Every constant re-declared in Swift matches the header's own definition (pcsc-lite 1.9.9).
@Suite struct ConstantsTests {
    @Test func controlCodesMatchHeaders() {
        #expect(PCSCConstants.controlCode(1) == UInt32(cpcsc_ctl_code(1)))
        #expect(PCSCConstants.controlCode(3500) == UInt32(cpcsc_ctl_code(3500)))
        #expect(PCSCConstants.controlCode(3500) == 0x4200_0DAC)
        #expect(PCSCConstants.getFeatureRequest == UInt32(cpcsc_cm_ioctl_get_feature_request()))
        #expect(PCSCConstants.getFeatureRequest == 0x4200_0D48)
    }

    @Test func attributesMatchHeaders() {
        #expect(PCSCAttribute.vendorName.rawValue == UInt32(cpcsc_attr_vendor_name()))
        #expect(PCSCAttribute.atrString.rawValue == UInt32(cpcsc_attr_atr_string()))
        #expect(PCSCAttribute.maxInput.rawValue == UInt32(cpcsc_attr_maxinput()))
        #expect(PCSCAttribute.maxInput.rawValue == 0x0007_A007)  // docs/cases.md P06
        #expect(PCSCAttribute.vendorIFDVersion.rawValue == UInt32(cpcsc_attr_vendor_ifd_version()))
        #expect(PCSCAttribute.deviceFriendlyName.rawValue == UInt32(cpcsc_attr_device_friendly_name()))
    }

    @Test func buffersMatchHeaders() {
        #expect(PCSCConstants.maxBufferSize == Int(MAX_BUFFER_SIZE))
        #expect(PCSCConstants.maxBufferSizeExtended == Int(cpcsc_max_buffer_size_extended()))
        #expect(PCSCConstants.maxBufferSizeExtended == 65548)  // docs/cases.md P04
        #expect(PCSCConstants.autoAllocate == UInt(cpcsc_autoallocate()))
    }

    @Test func enumerationsMatchHeaders() {
        #expect(ShareMode.exclusive.rawValue == UInt(SCARD_SHARE_EXCLUSIVE))
        #expect(ShareMode.shared.rawValue == UInt(SCARD_SHARE_SHARED))
        #expect(ShareMode.direct.rawValue == UInt(SCARD_SHARE_DIRECT))
        #expect(ProtocolSet.t0.rawValue == UInt(SCARD_PROTOCOL_T0))
        #expect(ProtocolSet.t1.rawValue == UInt(SCARD_PROTOCOL_T1))
        #expect(ProtocolSet.raw.rawValue == UInt(SCARD_PROTOCOL_RAW))
        #expect(ProtocolSet.undefined.rawValue == UInt(SCARD_PROTOCOL_UNDEFINED))
        #expect(Disposition.leave.rawValue == UInt(SCARD_LEAVE_CARD))
        #expect(Disposition.reset.rawValue == UInt(SCARD_RESET_CARD))
        #expect(Disposition.unpower.rawValue == UInt(SCARD_UNPOWER_CARD))
        #expect(Disposition.eject.rawValue == UInt(SCARD_EJECT_CARD))
        #expect(CardState.absent.rawValue == UInt(SCARD_ABSENT))
        #expect(CardState.present.rawValue == UInt(SCARD_PRESENT))
        #expect(CardState.specific.rawValue == UInt(SCARD_SPECIFIC))
        #expect(ReaderStateFlags.changed.rawValue == UInt(SCARD_STATE_CHANGED))
        #expect(ReaderStateFlags.empty.rawValue == UInt(SCARD_STATE_EMPTY))
        #expect(ReaderStateFlags.present.rawValue == UInt(SCARD_STATE_PRESENT))
        #expect(ReaderStateFlags.unavailable.rawValue == UInt(SCARD_STATE_UNAVAILABLE))
        #expect(ReaderStateFlags.unpowered.rawValue == UInt(SCARD_STATE_UNPOWERED))
    }

    @Test func errorCodesMatchHeaders() {
        let pairs: [(PCSCError, Int)] = [
            (.noService, SCARD_E_NO_SERVICE), (.serviceStopped, SCARD_E_SERVICE_STOPPED),
            (.noSmartcard, SCARD_E_NO_SMARTCARD), (.insufficientBuffer, SCARD_E_INSUFFICIENT_BUFFER),
            (.notTransacted, SCARD_E_NOT_TRANSACTED), (.unsupportedFeature, SCARD_E_UNSUPPORTED_FEATURE),
            (.protoMismatch, SCARD_E_PROTO_MISMATCH), (.timeout, SCARD_E_TIMEOUT),
            (.cancelled, SCARD_E_CANCELLED), (.noReadersAvailable, SCARD_E_NO_READERS_AVAILABLE),
            (.removedCard, SCARD_W_REMOVED_CARD), (.unknownReader, SCARD_E_UNKNOWN_READER),
        ]
        for (error, header) in pairs {
            #expect(error == PCSCError(rawValue: header), "\(error.name)")
        }
    }

    @Test func ifdResponseCodesMatchHeaders() {
        let pairs: [(Int, Int32, String)] = [
            (IFDResponseCode.success, IFD_SUCCESS, "IFD_SUCCESS"),
            (IFDResponseCode.errorTag, IFD_ERROR_TAG, "IFD_ERROR_TAG"),
            (IFDResponseCode.errorSetFailure, IFD_ERROR_SET_FAILURE, "IFD_ERROR_SET_FAILURE"),
            (IFDResponseCode.errorValueReadOnly, IFD_ERROR_VALUE_READ_ONLY, "IFD_ERROR_VALUE_READ_ONLY"),
            (IFDResponseCode.errorPTSFailure, IFD_ERROR_PTS_FAILURE, "IFD_ERROR_PTS_FAILURE"),
            (IFDResponseCode.errorNotSupported, IFD_ERROR_NOT_SUPPORTED, "IFD_ERROR_NOT_SUPPORTED"),
            (IFDResponseCode.protocolNotSupported, IFD_PROTOCOL_NOT_SUPPORTED, "IFD_PROTOCOL_NOT_SUPPORTED"),
            (IFDResponseCode.errorPowerAction, IFD_ERROR_POWER_ACTION, "IFD_ERROR_POWER_ACTION"),
            (IFDResponseCode.communicationError, IFD_COMMUNICATION_ERROR, "IFD_COMMUNICATION_ERROR"),
            (IFDResponseCode.responseTimeout, IFD_RESPONSE_TIMEOUT, "IFD_RESPONSE_TIMEOUT"),
            (IFDResponseCode.notSupported, IFD_NOT_SUPPORTED, "IFD_NOT_SUPPORTED"),
            (IFDResponseCode.iccPresent, IFD_ICC_PRESENT, "IFD_ICC_PRESENT"),
            (IFDResponseCode.iccNotPresent, IFD_ICC_NOT_PRESENT, "IFD_ICC_NOT_PRESENT"),
            (IFDResponseCode.noSuchDevice, IFD_NO_SUCH_DEVICE, "IFD_NO_SUCH_DEVICE"),
            (IFDResponseCode.insufficientBuffer, IFD_ERROR_INSUFFICIENT_BUFFER, "IFD_ERROR_INSUFFICIENT_BUFFER"),
        ]
        for (swift, header, name) in pairs {
            #expect(swift == Int(header), "\(name)")
        }
    }
}
