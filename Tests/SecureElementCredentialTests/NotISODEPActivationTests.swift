import ISO7816
import Synchronization
import SecbridgeTesting
import Testing
@testable import SecureElementCredential

/// A backend that plays a fixed list of activations: each is TgInitAsTarget's mode byte and
/// initiator command, then the C-APDUs of that activation, then a release (status 29).
private final class ScriptedActivations: CardEmulationBackend {
    let readerName = "scripted"
    let support = EmulationSupport.supported
    let maximumCommandLength = 252
    let maximumResponseLength = 252
    private let state: Mutex<(activations: [(mode: UInt8, command: [UInt8], apdus: [[UInt8]])], apdus: [[UInt8]], arms: Int)>

    init(_ activations: [(mode: UInt8, command: [UInt8], apdus: [[UInt8]])]) {
        state = Mutex((activations, [], 0))
    }

    var arms: Int { state.withLock { $0.arms } }

    func prepare() async throws {}
    func restore() async throws {}
    func interrupt() {}

    func waitForActivation(_ parameters: TargetParameters) async throws -> ActivationOutcome {
        state.withLock { s in
            s.arms += 1
            guard !s.activations.isEmpty else { return .noTerminal }
            let next = s.activations.removeFirst()
            s.apdus = next.apdus
            // What PN532EmulationBackend does with TgInitAsTarget's mode byte.
            guard next.mode & 0x08 != 0, next.mode & 0x04 == 0 else { return .notISODEP(mode: next.mode, initiatorCommand: next.command) }
            return .activated(mode: next.mode, initiatorCommand: next.command)
        }
    }

    func receiveCommand() async throws -> TargetReceiveOutcome {
        state.withLock { s in
            guard !s.apdus.isEmpty else { return .released(.pn532(status: 0x29, meaning: "released")) }
            return .command(s.apdus.removeFirst())
        }
    }

    func sendResponse(_ response: [UInt8]) async throws -> TargetSendOutcome { .delivered }
}

@Suite("An activation that is no ISO-DEP reader (docs/terminal-models.md §6.3)")
struct NotISODEPActivationTests {
    @Test("mode 04 with ATR_REQ is reported as a peer-to-peer initiator and the target is armed again for the reader that follows")
    func peerToPeerThenReader() async throws {
        let atrRequest: [UInt8] = [0xF0, 0x1E, 0xD4, 0x00] + [UInt8](repeating: 0x11, count: 10) + [0x00, 0x00, 0x00, 0x32]
            + [0x46, 0x66, 0x6D, 0x01, 0x01, 0x11, 0x03, 0x02, 0x00, 0x13, 0x04, 0x01, 0x96]
        let select: [UInt8] = [0x00, 0xA4, 0x04, 0x00, 0x07, 0xD2, 0x76, 0x00, 0x00, 0x85, 0x01, 0x01, 0x00]
        let backend = ScriptedActivations([(0x04, atrRequest, []), (0x08, [0xE0, 0x80], [select])])
        let reports = Mutex<[String]>([])
        let clock = VirtualSessionClock()
        let runner = EmulationRunner(
            backend: backend, secureElement: try exampleElement(), parameters: TargetParameters(CardEmulationOptions().rearming(.never)),
            clock: clock, deadline: .seconds(60)) { report in
                switch report {
                case .field(let info): reports.withLock { $0.append("\(info.state.rawValue): \(info.observation)") }
                case .exchanged(let command, let response): reports.withLock { $0.append("\(command.hexString) → \(response.hexString)") }
                default: break
                }
            }
        let run = Task { await runner.run() }
        for _ in 0..<100_000 where reports.withLock({ $0.count }) < 5 { await Task.yield() }
        runner.stop()
        await run.value
        let lines = reports.withLock { $0 }
        #expect(lines.first == "fieldPresent: TgInitAsTarget returned mode 04 (NFC-DEP, passive, 106 kbit/s), initiator command \(atrRequest.hexString)")
        #expect(lines.dropFirst().first
            == "fieldAbsent: a peer-to-peer (NFC-DEP) initiator sent ATR_REQ: not an ISO-DEP reader, no APDUs to serve; the target is armed again")
        #expect(lines.dropFirst(2).first == "fieldPresent: TgInitAsTarget returned mode 08, initiator command E0 80")
        #expect(lines.dropFirst(3).first == "\(select.hexString) → 90 00")
        #expect(backend.arms >= 2)
    }

    @Test("the mode byte in words", arguments: [(UInt8(0x04), "NFC-DEP, passive, 106 kbit/s"), (0x25, "NFC-DEP, active, 424 kbit/s"),
                                                  (0x08, "ISO/IEC 14443-4 PICC, 106 kbit/s"), (0x00, "Type A without ISO-DEP, 106 kbit/s")])
    func modeInWords(_ mode: UInt8, _ words: String) {
        #expect(EmulationRunner.describeMode(mode) == words)
    }
}
