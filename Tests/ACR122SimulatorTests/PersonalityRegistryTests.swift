import ACR122Simulator
import ISO7816
import PCSCCore
import PN53x
import SecbridgeTesting
import Testing

/// The personality registry and the driver surface each personality shows (docs/acr122-units.md).
@Suite struct PersonalityRegistryTests {
    @Test func theDefaultIsAGenuineACR122U207BehindLibccidWithEscapeCommands() throws {
        #expect(ACR122Personality.all.first?.name == ACR122Personality.defaultName)
        let personality = try #require(ACR122Personality.named(ACR122Personality.defaultName))
        #expect(personality.driver == .ccidEscapeEnabled)
        #expect(personality.firmware == "ACR122U207")
        #expect(personality.bcdDevice == 0x0207)  // CCID readers/ACR122U_PICC.txt: bcdDevice 2.07
        #expect(personality.readerFriendlyName == "ACS ACR122U PICC Interface")
    }

    @Test func namesAreUniqueAndUnknownNamesGiveNil() {
        #expect(Set(ACR122Personality.names).count == ACR122Personality.names.count)
        #expect(ACR122Personality.names.allSatisfy { $0.allSatisfy { $0.isLowercase || $0.isNumber || $0 == "-" } })
        #expect(ACR122Personality.named("ACR122U215") == nil)  // case-sensitive
        #expect(ACR122Personality.named("nonexistent") == nil)
        for name in ["acr122u203", "acr122u214", "acr122u215", "acr122u216"] {
            #expect(ACR122Personality.named(name) != nil, "\(name)")
        }
    }

    @Test func firmwareVariantsCarryTheirStringAndBcdDevice() throws {
        let u215 = try #require(ACR122Personality.named("acr122u215"))
        #expect(u215.firmware == "ACR122U215")
        #expect(u215.bcdDevice == 0x0215)
        #expect(u215.piccParameterAnswer == .parameterOnly)  // nfcpy issue #105
        #expect(try #require(ACR122Personality.named("acr122u216")).piccParameterAnswer == .statusAndParameter)
        #expect(ACR122Personality.bcdDevice(forFirmware: "ACR122U103") == 0x0103)
        #expect(ACR122Personality.bcdDevice(forFirmware: "ACR122U2x7") == nil)
        #expect(ACR122Personality.bcdDevice(forFirmware: "RF1258V603") == nil)
    }

    /// CCID src/ifdhandler.c (CM_IOCTL_GET_FEATURE_REQUEST), acsccid src/ifdhandler.c.
    @Test func featureListsAreTheDriversBytes() {
        #expect(ACR122Personality.ccidEscapeDisabled.featureList == hex("12 04 42 33 00 12"))
        #expect(ACR122Personality.ccidEscapeEnabled.featureList == hex("12 04 42 33 00 12 13 04 42 00 00 01"))
        #expect(ACR122Personality.acsDriver.featureList == hex("11 04 42 33 00 11 12 04 42 33 00 12 13 04 42 00 0D AC"))
        // The product's codec reads them: the escape code, or none.
        #expect((try? PCSCFeatureList(parsing: ACR122Personality.ccidEscapeDisabled.featureList))?.escapeCommandCode == nil)
        #expect((try? PCSCFeatureList(parsing: ACR122Personality.acsDriver.featureList))?.escapeCommandCode == 0x4200_0DAC)
    }

    /// PC/SC part 10 §2.6.14 as libccid and acsccid fill it for 072F:2200.
    @Test func tlvPropertiesAreTheDriversBytes() {
        func properties(ppdu: String) -> [UInt8] { hex("01 02 00 00 03 01 00 09 01 \(ppdu) 0B 02 2F 07 0C 02 00 22 0A 04 00 00 00 00") }
        #expect(ACR122Personality.ccidEscapeDisabled.tlvProperties == properties(ppdu: "00"))
        #expect(ACR122Personality.ccidEscapeEnabled.tlvProperties == properties(ppdu: "01"))
        #expect(ACR122Personality.acsDriver.tlvProperties == properties(ppdu: "03"))
    }

    @Test(arguments: ACR122Personality.all.map(\.name))
    func theDriverAnswersItsOwnControlCodes(_ name: String) throws {
        let personality = try #require(ACR122Personality.named(name))
        let reader = SimulatedACR122U(field: fastField(), personality: personality)
        #expect(try reader.control(code: 0x4200_0D48, []) == personality.featureList)
        #expect(try reader.control(code: 0x0031_3520, []) == personality.featureList)  // the Windows value
        #expect(try reader.control(code: 0x4233_0012, []) == personality.tlvProperties)
        let escape: UInt32 = personality.driver == .acsDriver ? 0x4200_0DAC : 0x4200_0001
        if personality.driver == .ccidEscapeDisabled {
            #expect(throws: IFDError.communicationError) { try reader.control(code: escape, hex("FF 00 48 00 00")) }
        } else {
            #expect(try reader.control(code: escape, hex("FF 00 48 00 00")) == Array(personality.firmware.utf8))
        }
    }

    /// acsccid gates SCARD_CTL_CODE(1) by ifdDriverOptions as libccid does; its Info.plist ships 0x0000.
    @Test func acsccidRefusesSCardCtlCode1() throws {
        let reader = SimulatedACR122U(field: fastField(), personality: .acsDriver)
        #expect(throws: IFDError.communicationError) { try reader.control(code: 0x4200_0001, hex("FF 00 48 00 00")) }
        #expect(throws: IFDError.notSupported) { try reader.control(code: 0x4233_0011 + 0x100, []) }
        #expect(try reader.control(code: 0x4233_0011, []) == [0, 0, 0, 0])  // IFD_DISPLAY_PROPERTIES
        let libccid = SimulatedACR122U(field: fastField(), personality: .ccidEscapeEnabled)
        #expect(throws: IFDError.notSupported) { try libccid.control(code: 0x4233_0011, []) }
    }

    /// CCID src/ifdhandler.c IFDHGetCapabilities.
    @Test func attributesAreComputedAsLibccidDoes() throws {
        let reader = SimulatedACR122U(field: fastField(), personality: .ccidEscapeEnabled)
        #expect(reader.attribute(0x0001_0100) == hex("41 43 53 00"))  // "ACS" and its NUL
        #expect(reader.attribute(0x0001_0102) == hex("00 00 07 02"))  // bcdDevice 2.07 << 16
        #expect(reader.attribute(0x0001_0103) == [])  // no iSerialNumber: success, 0 bytes
        #expect(reader.attribute(0x0002_0110) == hex("02 01 20 00"))  // 0x0020 << 16 | bus 1 << 8 | address 2
        #expect(reader.attribute(0x0007_A007) == hex("05 01 00 00"))  // 271 − 10
        #expect(reader.attribute(0x0009_0301) == [0])  // no card: contact not active
        let u215 = SimulatedACR122U(field: fastField(), personality: try #require(ACR122Personality.named("acr122u215")))
        #expect(u215.attribute(0x0001_0102) == hex("00 00 15 02"))
    }

    @Test func setPICCOperatingParameterAnswersInTheFirmwaresFormat() throws {
        let u215 = SimulatedACR122U(field: fastField(), personality: try #require(ACR122Personality.named("acr122u215")))
        #expect(try u215.control(code: 0x4200_0001, hex("FF 00 51 7F 00")) == [0x7F])  // nfcpy issue #105
        #expect(try u215.control(code: 0x4200_0001, hex("FF 00 50 00 00")) == hex("90 7F"))
        let u207 = SimulatedACR122U(field: fastField(), personality: .ccidEscapeEnabled)
        #expect(try u207.control(code: 0x4200_0001, hex("FF 00 51 7F 00")) == hex("90 7F"))
        // The product reads both forms as the parameter.
        let link = ACR122Link(channel: try SimulatedReaderChannel(u215, protocol: .undefined), escapeCode: 0x4200_0001)
        #expect(try link.setPICCOperatingParameter(ACR122PICCOperatingParameter(rawValue: 0xFF)).rawValue == 0xFF)
    }

    /// ACR122U API v2.04: the answer comes when (T1 + T2) × 100 ms × Rep has run; under libccid a
    /// sequence longer than the 30 s escape timeout fails (IFD_COMMUNICATION_ERROR). The field runs
    /// 1000 times faster than real time, so the 2 s sequence ends before the 30 s timeout (30 ms).
    @Test func ledSequencesAnswerAtTheirEndOrFailPastTheDriverTimeout() throws {
        let reader = SimulatedACR122U(field: fastField(), personality: .ccidEscapeEnabled)
        // T1 = T2 = 0.5 s, 2 repetitions: 2 s; final red and green on.
        #expect(try reader.control(code: 0x4200_0001, hex("FF 00 40 0F 04 05 05 02 01")) == hex("90 03"))
        // T1 = T2 = 25.5 s, 255 repetitions: about 3.6 h, past libccid's 30 s.
        #expect(throws: IFDError.communicationError) {
            try reader.control(code: 0x4200_0001, hex("FF 00 40 0C 04 FF FF FF 03"))
        }
    }

    @Test func theProductKnowsHowLongAnLEDSequenceTakes() throws {
        #expect(ACR122Command.designedDuration(ofPseudoAPDU: hex("FF 00 40 0F 04 05 05 02 01")) == .seconds(2))
        #expect(ACR122Command.designedDuration(ofPseudoAPDU: hex("FF 00 40 0C 04 FF FF FF 03")) == .milliseconds(100 * 510 * 255))
        #expect(ACR122Command.designedDuration(ofPseudoAPDU: hex("FF 00 48 00 00")) == .zero)
        let control = try ACR122LEDBuzzerControl(led: [.finalRed], t1: .milliseconds(300), t2: .milliseconds(200), repetitions: 3)
        #expect(control.sequenceDuration == .milliseconds(1500))
    }
}
