import PCSCCore
import Testing

/// The CM_IOCTL_GET_FEATURE_REQUEST answer (PC/SC part 10 §2.2): `| tag | 04 | code (4, big-endian) |`…
@Suite("PC/SC part 10 feature list")
struct FeatureListTests {
    @Test("P09: libccid with escape commands enabled lists tag 13 = 0x42000001")
    func libccidEscape() throws {
        let bytes: [UInt8] = [0x13, 0x04, 0x42, 0x00, 0x00, 0x01]
        let list = try PCSCFeatureList(parsing: bytes)
        #expect(list.escapeCommandCode == 0x4200_0001)
        #expect(list.serialized() == bytes)
    }

    @Test("acsccid lists tag 13 = 0x42000DAC after FEATURE_GET_TLV_PROPERTIES")
    func acsccidList() throws {
        // 12 = FEATURE_GET_TLV_PROPERTIES, then the escape command (docs/acr122-pn532.md §1).
        let bytes: [UInt8] = [0x12, 0x04, 0x42, 0x33, 0x00, 0x12, 0x13, 0x04, 0x42, 0x00, 0x0D, 0xAC]
        let list = try PCSCFeatureList(parsing: bytes)
        #expect(list.features == [
            PCSCFeature(tag: 0x12, controlCode: 0x4233_0012), PCSCFeature(tag: 0x13, controlCode: 0x4200_0DAC),
        ])
        #expect(list.escapeCommandCode == 0x4200_0DAC)
        #expect(list.controlCode(for: PCSCFeature.getTLVPropertiesTag) == 0x4233_0012)
        #expect(list.serialized() == bytes)
        #expect(list.features[1].description == "tag 13 → 0x42000DAC")
    }

    @Test("an empty answer is an empty list: libccid without ifdDriverOptions 0x0001 lists no tag 13")
    func empty() throws {
        let list = try PCSCFeatureList(parsing: [])
        #expect(list.features.isEmpty)
        #expect(list.escapeCommandCode == nil)
    }

    @Test("drip-feed: a prefix inside an entry is rejected, a prefix at an entry boundary gives fewer features")
    func dripFeed() throws {
        let bytes: [UInt8] = [0x12, 0x04, 0x42, 0x33, 0x00, 0x0A, 0x13, 0x04, 0x42, 0x00, 0x0D, 0xAC]
        for length in 0..<bytes.count {
            let prefix = Array(bytes.prefix(length))
            if length % 6 == 0 {
                #expect(try PCSCFeatureList(parsing: prefix).features.count == length / 6)
            } else {
                #expect(throws: FeatureListError.self) { try PCSCFeatureList(parsing: prefix) }
            }
        }
    }

    struct Rejection: Sendable, CustomTestStringConvertible {
        let id: String
        let bytes: [UInt8]
        let error: FeatureListError
        var testDescription: String { id }
    }

    static let rejections: [Rejection] = [
        // 13: a tag and nothing else; the length byte is missing at offset 1.
        .init(id: "tag without length", bytes: [0x13], error: FeatureListError(.truncated, at: 1, "")),
        // 13 04 42 00 00: the control code is cut after 3 of its 4 bytes (it starts at offset 2).
        .init(id: "code cut short", bytes: [0x13, 0x04, 0x42, 0x00, 0x00], error: FeatureListError(.truncated, at: 2, "")),
        // 13 02 …: length 02 at offset 1; PC/SC part 10 control codes are 4 bytes.
        .init(id: "length 2", bytes: [0x13, 0x02, 0x42, 0x00], error: FeatureListError(.lengthMismatch, at: 1, "")),
        // A good entry, then 12 05 at offset 7.
        .init(
            id: "second entry length 5", bytes: [0x13, 0x04, 0x42, 0x00, 0x00, 0x01, 0x12, 0x05],
            error: FeatureListError(.lengthMismatch, at: 7, "")),
    ]

    @Test(arguments: rejections)
    func rejects(_ vector: Rejection) {
        #expect(throws: vector.error) { try PCSCFeatureList(parsing: vector.bytes) }
    }
}
