import ISO7816
import Testing
@testable import PN53x

/// Bytes from "FF 00 48 00 00" (spaces optional between bytes, newlines allowed).
func hex(_ text: String) -> [UInt8] {
    let digits = text.filter { !$0.isWhitespace }
    precondition(digits.count % 2 == 0, "odd number of hex digits in test vector: \(text)")
    var bytes: [UInt8] = []
    var index = digits.startIndex
    while index < digits.endIndex {
        let next = digits.index(index, offsetBy: 2)
        bytes.append(UInt8(digits[index..<next], radix: 16)!)
        index = next
    }
    return bytes
}

/// A PC/SC error as the PCSC module's error type will present it once it conforms.
struct FakePCSCError: PCSCErrorCodeProviding, Equatable {
    var pcscCode: UInt32
}

/// A CardChannel that follows a script: each step names the call it expects and the answer to give.
///
/// Unexpected calls are recorded as test issues; `assertFinished()` reports script steps left over.
final class ScriptedCardChannel: CardChannel {
    enum Step {
        case transmit(expect: [UInt8], reply: [UInt8])
        case transmitThrows(expect: [UInt8], error: any Error)
        case control(code: UInt32, expect: [UInt8], reply: [UInt8])
        case controlThrows(code: UInt32, expect: [UInt8], error: any Error)
    }

    struct UnscriptedCall: Error {}

    let transmissionProtocol: TransmissionProtocol
    private var steps: [Step]
    private(set) var sent: [String] = []

    init(_ transmissionProtocol: TransmissionProtocol, _ steps: [Step]) {
        self.transmissionProtocol = transmissionProtocol
        self.steps = steps
    }

    func transmit(_ command: [UInt8]) throws -> [UInt8] {
        sent.append("> " + PN53xHex.format(command))
        guard !steps.isEmpty else {
            Issue.record("unscripted transmit \(PN53xHex.format(command))")
            throw UnscriptedCall()
        }
        switch steps.removeFirst() {
        case .transmit(let expect, let reply):
            #expect(PN53xHex.format(command) == PN53xHex.format(expect))
            return reply
        case .transmitThrows(let expect, let error):
            #expect(PN53xHex.format(command) == PN53xHex.format(expect))
            throw error
        case let step:
            Issue.record("transmit \(PN53xHex.format(command)) while the script expects \(step)")
            throw UnscriptedCall()
        }
    }

    func control(code: UInt32, _ command: [UInt8]) throws -> [UInt8] {
        sent.append("control 0x\(String(code, radix: 16, uppercase: true)) " + PN53xHex.format(command))
        guard !steps.isEmpty else {
            Issue.record("unscripted control 0x\(String(code, radix: 16)) \(PN53xHex.format(command))")
            throw UnscriptedCall()
        }
        switch steps.removeFirst() {
        case .control(let expectedCode, let expect, let reply):
            #expect(code == expectedCode)
            #expect(PN53xHex.format(command) == PN53xHex.format(expect))
            return reply
        case .controlThrows(let expectedCode, let expect, let error):
            #expect(code == expectedCode)
            #expect(PN53xHex.format(command) == PN53xHex.format(expect))
            throw error
        case let step:
            Issue.record("control \(PN53xHex.format(command)) while the script expects \(step)")
            throw UnscriptedCall()
        }
    }

    func assertFinished(sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(steps.isEmpty, "\(steps.count) scripted steps were not used", sourceLocation: sourceLocation)
    }
}
