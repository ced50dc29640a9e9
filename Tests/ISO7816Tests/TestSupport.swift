import ISO7816
import Testing

/// Hex text to bytes for test vectors; a malformed literal fails the test that uses it.
func hex(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) -> [UInt8] {
    do {
        return try HexBytes.parse(text)
    } catch {
        Issue.record("bad hex literal in a test vector: \(error)", sourceLocation: sourceLocation)
        return []
    }
}

/// A `CardChannel` that answers from a script and records every command sent.
///
/// Each step is an expected command and its answer; a command that differs from the script, or a
/// command past its end, is recorded as a test issue and answered with 6F 00. `leftovers` tells
/// how many scripted steps were never used.
final class ScriptedChannel: CardChannel {
    let transmissionProtocol: TransmissionProtocol
    private(set) var sent: [[UInt8]] = []
    private var script: [(command: [UInt8], answer: [UInt8])]
    private var next = 0

    init(_ transmissionProtocol: TransmissionProtocol, _ script: [(String, String)]) {
        self.transmissionProtocol = transmissionProtocol
        self.script = script.map { (hex($0.0), hex($0.1)) }
    }

    init(_ transmissionProtocol: TransmissionProtocol, bytes script: [([UInt8], [UInt8])]) {
        self.transmissionProtocol = transmissionProtocol
        self.script = script.map { (command: $0.0, answer: $0.1) }
    }

    var leftovers: Int { script.count - next }

    func transmit(_ command: [UInt8]) throws -> [UInt8] {
        sent.append(command)
        guard next < script.count else {
            Issue.record("unscripted command \(command.hexString)")
            return [0x6F, 0x00]
        }
        let step = script[next]
        next += 1
        #expect(command == step.command, "step \(next): sent \(command.hexString), script expects \(step.command.hexString)")
        return step.answer
    }

    func control(code: UInt32, _ command: [UInt8]) throws -> [UInt8] {
        Issue.record("control() is not used by the ISO 7816 transport")
        return []
    }
}
