import Testing

import PCSCCore

/// A channel with one fixed answer and only `transmit(_:)`: the `transmit(_:into:)` it gets is
/// CardChannel's default.
final class FixedAnswerChannel: CardChannel {
    let answer: [UInt8]
    private(set) var commands: [[UInt8]] = []
    init(answer: [UInt8]) { self.answer = answer }
    var transmissionProtocol: TransmissionProtocol { .t1 }
    func transmit(_ command: [UInt8]) throws -> [UInt8] {
        commands.append(command)
        return answer
    }
    func control(code: UInt32, _ command: [UInt8]) throws -> [UInt8] { [] }
}

/// CardChannel's default `transmit(_:into:)`: the answer at the front of the caller's buffer, the
/// rest untouched, and SCARD_E_INSUFFICIENT_BUFFER with both sizes when it does not fit.
@Suite struct TransmitIntoDefaultTests {
    // Get UID (docs/acr122-pn532.md §2) and a 4-byte UID with 90 00.
    static let getUID: [UInt8] = [0xFF, 0xCA, 0x00, 0x00, 0x00]
    static let uidAnswer: [UInt8] = [0x04, 0xA1, 0xB2, 0xC3, 0x90, 0x00]

    @Test func theAnswerLandsAtTheFrontAndTheRestIsLeftAsItWas() throws {
        let channel: any CardChannel = FixedAnswerChannel(answer: Self.uidAnswer)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 8, alignment: 1)
        defer { buffer.deallocate() }
        buffer.initializeMemory(as: UInt8.self, repeating: 0xEE)
        let length = try Self.getUID.withUnsafeBytes { try channel.transmit($0, into: buffer) }
        #expect(length == 6)
        #expect(Array(buffer) == Self.uidAnswer + [0xEE, 0xEE])
        #expect((channel as? FixedAnswerChannel)?.commands == [Self.getUID])
    }

    @Test func anAnswerLongerThanTheBufferThrowsWithBothSizes() throws {
        let channel: any CardChannel = FixedAnswerChannel(answer: Self.uidAnswer)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 5, alignment: 1)
        defer { buffer.deallocate() }
        buffer.initializeMemory(as: UInt8.self, repeating: 0xEE)
        let error = #expect(throws: PCSCError.self) {
            try Self.getUID.withUnsafeBytes { try channel.transmit($0, into: buffer) }
        }
        #expect(error == .insufficientBuffer)
        #expect(error?.function == "SCardTransmit")
        #expect(error?.detail == "the card's answer is 6 bytes, the receive buffer 5; the command reached the card and its answer was dropped: pass a buffer of at least 6 bytes (65 548 take every answer)")
        #expect(Array(buffer) == [0xEE, 0xEE, 0xEE, 0xEE, 0xEE])
    }

    @Test func aDetailTakesTheRemedysPlaceInTheDescription() {
        let plain = PCSCError(code: 0x8010_0008, function: "SCardTransmit")
        #expect(plain.description.hasSuffix("; this is a bug in the caller's receive buffer size; please report it"))
        let detailed = PCSCError.answerTooLong(300, capacity: 258)
        #expect(detailed.description == "SCardTransmit failed: SCARD_E_INSUFFICIENT_BUFFER (0x80100008): \(PCSCError.insufficientBuffer.meaning); the card's answer is 300 bytes, the receive buffer 258; the command reached the card and its answer was dropped: pass a buffer of at least 300 bytes (65 548 take every answer)")
        #expect(detailed == plain)  // equality is the code's
    }
}
