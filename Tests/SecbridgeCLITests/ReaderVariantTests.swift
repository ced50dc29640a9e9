import PN53x
import Testing

@testable import SecbridgeTools

/// doctor's classification of the unit it sees (docs/acr122-units.md §1–§3), from the bytes the
/// drivers really give.
@Suite struct ReaderVariantTests {
    static let libccidWithEscape: [UInt8] = [0x12, 0x04, 0x42, 0x33, 0x00, 0x12, 0x13, 0x04, 0x42, 0x00, 0x00, 0x01]
    static let libccidWithoutEscape: [UInt8] = [0x12, 0x04, 0x42, 0x33, 0x00, 0x12]
    static let acsccid: [UInt8] = [0x11, 0x04, 0x42, 0x33, 0x00, 0x11, 0x12, 0x04, 0x42, 0x33, 0x00, 0x12, 0x13, 0x04, 0x42, 0x00, 0x0D, 0xAC]

    @Test func aGenuineUnitBehindLibccidWithTheOptionWorksFully() {
        let variant = ReaderVariantClassifier.classify(ReaderVariantEvidence(
            featureList: Self.libccidWithEscape, workingEscapeCode: 0x4200_0001, firmware: "ACR122U207"))
        #expect(variant.text == "genuine ACR122U, firmware ACR122U207, libccid (escape option on); simulator personality ccid-escape-enabled")
        #expect(variant.doesNotWork.isEmpty)
        #expect(variant.works.contains("card emulation (emulate, performTransaction)"))
    }

    @Test func libccidWithoutTheOptionIsToldByItsFeatureListAlone() {
        let variant = ReaderVariantClassifier.classify(ReaderVariantEvidence(featureList: Self.libccidWithoutEscape))
        #expect(variant.driver == .libccid)
        #expect(variant.escapeOptionEnabled == false)
        #expect(variant.family == .unknown)
        #expect(variant.personality == "ccid-escape-disabled")
        #expect(variant.doesNotWork == ["card emulation and --pn532 without a card (escape commands are refused)"])
    }

    @Test func acsccidAndTheFirmwareVariantsMatchTheirPersonalities() {
        let acs = ReaderVariantClassifier.classify(ReaderVariantEvidence(featureList: Self.acsccid, firmware: "ACR122U207"))
        #expect(acs.text == "genuine ACR122U, firmware ACR122U207, acsccid; simulator personality acs-driver")
        let u215 = ReaderVariantClassifier.classify(ReaderVariantEvidence(featureList: Self.libccidWithEscape, firmware: "ACR122U215"))
        #expect(u215.personality == "acr122u215")
        #expect(u215.works.contains("Set PICC Operating Parameter's one-byte answer is read as the parameter"))
        // A firmware no personality carries: the driver's first personality.
        #expect(ReaderVariantClassifier.classify(ReaderVariantEvidence(featureList: Self.libccidWithEscape, firmware: "ACR122U213")).personality == "ccid-escape-enabled")
        // An empty TgInitAsTarget answer seen in a bundle picks the personality that gives one.
        #expect(ReaderVariantClassifier.matchingPersonality(ReaderVariantEvidence(
            featureList: Self.libccidWithEscape, firmware: "ACR122U207", emptyTargetAnswer: true)) == "empty-target-wait")
        // The old simulator's list (tag 13 alone) is no driver's: no personality.
        #expect(ReaderVariantClassifier.matchingPersonality(ReaderVariantEvidence(featureList: [0x13, 0x04, 0x42, 0x00, 0x00, 0x01])) == nil)
    }
}
