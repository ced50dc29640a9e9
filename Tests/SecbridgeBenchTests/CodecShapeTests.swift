import ISO7816
@testable import secbridge_bench
import Testing

/// The codec benchmark's table of shapes holds what its names say (ISO/IEC 7816-3 §12.1.3,
/// ISO/IEC 7816-4 §5.1): a wrong row would measure another case than the one it reports.
@Suite struct CodecShapeTests {
    /// Nc, Ne and the length form each valid command's name announces.
    static let commands: [String: (nc: Int, ne: Int, extended: Bool)] = [
        "case 1 (CLA INS P1 P2)": (0, 0, false),
        "case 2 short, Le 10 (Ne 16)": (0, 16, false),
        "case 2 short, Le 00 (Ne 256)": (0, 256, false),
        "case 3 short, Lc 07 (SELECT by AID)": (7, 0, false),
        "case 3 short, Lc FF (255 bytes)": (255, 0, false),
        "case 4 short, Lc 07 Le 00 (SELECT, Ne 256)": (7, 256, false),
        "case 2 extended, Le 01 00 (Ne 256)": (0, 256, true),
        "case 2 extended, Le 00 00 (Ne 65 536)": (0, 65_536, true),
        "case 3 extended, Lc 01 00 (256 bytes)": (256, 0, true),
        "case 4 extended, Lc 00 07 Le 00 00 (Ne 65 536)": (7, 65_536, true),
    ]
    /// The error each malformed shape must raise.
    static let refusals: [String: ISO7816Error.Code] = [
        "malformed: 3 bytes (truncated header)": .truncated,
        "malformed: short Lc 00 (6 bytes)": .shortLcZero,
        "malformed: Lc 07 with 3 data bytes": .truncated,
        "malformed: extended Lc 00 00": .extendedLcZero,
        "malformed: trailing bytes after Le": .trailingBytes,
        "malformed response: 1 byte": .responseTooShort,
    ]

    @Test func everyCommandShapeIsTheCaseItsNameSays() throws {
        let shapes = codecShapes.filter { $0.kind == .command }
        #expect(shapes.count == Self.commands.count)
        for shape in shapes {
            let expected = try #require(Self.commands[shape.name], "no expectation for \(shape.name)")
            let apdu = try CommandAPDU(parsing: shape.bytes)
            #expect(apdu.data.count == expected.nc, "\(shape.name)")
            #expect(apdu.ne == expected.ne, "\(shape.name)")
            #expect(apdu.isExtended == expected.extended, "\(shape.name)")
            #expect(apdu.serialized() == shape.bytes, "\(shape.name) does not round-trip")
        }
    }

    @Test func everyMalformedShapeIsRefusedWithItsError() {
        let shapes = codecShapes.filter { $0.kind == .malformedCommand || $0.kind == .malformedResponse }
        #expect(shapes.count == Self.refusals.count)
        for shape in shapes {
            let expected = Self.refusals[shape.name]
            #expect(expected != nil, "no expectation for \(shape.name)")
            do {
                if shape.kind == .malformedCommand { _ = try CommandAPDU(parsing: shape.bytes) } else { _ = try ResponseAPDU(parsing: shape.bytes) }
                Issue.record("\(shape.name) parsed")
            } catch {
                #expect(error.code == expected, "\(shape.name): \(error)")
            }
        }
    }

    @Test func theMeasuredRegionCountsWhatItParses() {
        // Valid shapes add their serialized length per iteration, malformed ones 1.
        for shape in codecShapes {
            let valid = shape.kind == .command || shape.kind == .response
            #expect(codecMeasuredRegion(shape, iterations: 3) == 3 * (valid ? shape.bytes.count : 1), "\(shape.name)")
        }
    }
}
