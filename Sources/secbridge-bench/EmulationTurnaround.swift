import Foundation
import ISO7816
import PCSC
import PCSCSandbox
import PN53x
import SecureElementCredential
import Synchronization

// Card-emulation turnaround: how long the host holds a terminal's C-APDU. The span runs from the
// moment TgGetData's answer (`D5 87 00 <C-APDU> 90 00`) reaches the host to the moment the host
// sends TgSetData with the R-APDU (`FF 00 00 00 Lc D4 8E <R-APDU>`): the backend's return to the
// session's emulation runner, routing to the host applet, the apduExchanged report, and the next
// escape command's start (docs/acr122-pn532.md §5 step 5). pcscd's IPC around both escape commands is
// outside the span; the simulated ACR122U B field's terminal and pcscd are in another process.

/// A ``CardChannel`` that times the host's part of each TgGetData → TgSetData turn.
///
/// `| FF | 00 | 00 | 00 | Lc | D4 86 |` (TgGetData) and `| FF | 00 | 00 | 00 | Lc | D4 8E | R-APDU |`
/// (TgSetData), ACR122U API v2.04 §6 Direct Transmit, PN532 UM0701-02 §7.3.16, §7.3.17.
final class TurnaroundTimingChannel: CardChannel, @unchecked Sendable {
    // @unchecked: `arrival` is touched only by the backend's executor thread (the one thread that
    // drives the PN532); `spans` is behind a Mutex for the reader on the main thread.
    private let inner: any CardChannel
    private var arrival: ContinuousClock.Instant?
    let spans = Mutex<[Duration]>([])

    init(wrapping inner: any CardChannel) {
        self.inner = inner
        spans.withLock { $0.reserveCapacity(4096) }
    }

    var transmissionProtocol: TransmissionProtocol { inner.transmissionProtocol }

    func transmit(_ command: [UInt8]) throws -> [UInt8] {
        try inner.transmit(command)
    }

    func control(code: UInt32, _ command: [UInt8]) throws -> [UInt8] {
        let pn532 = command.count >= 7 && command[0...4] == [0xFF, 0x00, 0x00, 0x00, UInt8(command.count - 5)] && command[5] == 0xD4
        if pn532, command[6] == 0x8E, let arrived = arrival {
            let span = ContinuousClock.now - arrived
            arrival = nil
            spans.withLock { $0.append(span) }
        }
        let reply = try inner.control(code: code, command)
        if pn532, command[6] == 0x86, reply.count >= 5, reply[0] == 0xD5, reply[1] == 0x87, reply[2] == 0x00 {
            arrival = .now
        }
        return reply
    }
}

/// Runs `count` SELECTs of the Type 4 Tag application from an external terminal placed on the
/// shared field against a credential session emulating on reader A, and prints the median and the
/// 99th percentile of the host's turnaround (goal: p99 under 1 ms; wall clock, not gated).
func benchmarkEmulationTurnaround(readerA: String, readerB: String, count: Int, report: Report) {
    report.part("emulation: card-emulation turnaround, TgGetData answer → TgSetData sent (\(count) SELECTs from a terminal peer)")
    let name = "card-emulation turnaround p99", goal = "< 1 ms"
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("secbridge-bench-\(getpid())-emulation")
    let terminalFile = directory.appendingPathComponent("terminal.trn")
    defer { try? FileManager.default.removeItem(at: directory) }
    do {
        for control in [SimulatedReaders.controlA, SimulatedReaders.controlB] {
            try control.send("remove all=yes")
            try control.send("personality name=ccid-escape-enabled")
        }
        // Wait (bounded) until pcscd has seen the field empty: with a card present, ACR122Link
        // talks through SCardTransmit, which fails once the card is gone.
        let context = try PCSCContext()
        for name in [readerA, readerB] {
            var states = [ReaderState(readerName: name)]
            let deadline = ContinuousClock.now + .seconds(5)
            while ContinuousClock.now < deadline {
                _ = try context.getStatusChange(&states, timeout: .milliseconds(500))
                if !states[0].eventFlags.contains(.present) { break }
                states[0].acknowledge()
            }
        }
        // B must not poll: an auto-polling ACR122U activates A's target itself (docs/acr122-pn532.md §2).
        let direct = try PCSCContext().connect(to: readerB, share: .direct, protocols: [])
        try ACR122Link.open(channel: direct, readerName: readerB, path: .escape).setPICCOperatingParameter([])
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var text = "# secbridge-transcript: 1\n# origin: simulated\n"
        for _ in 0..<count {
            text += "tgt < 00 A4 04 00 07 D2 76 00 00 85 01 01 00\ntgt > 90 00\n"
        }
        try text.write(to: terminalFile, atomically: true, encoding: .utf8)
        try SimulatedReaders.controlA.send("place-terminal transcript=\(terminalFile.path) id=bench-terminal")
    } catch {
        report.skipped("emulation", name, goal: goal, gated: false, reason: "set-up failed: \(error)")
        return
    }
    let json = """
        { "secbridge-credential": 1, "id": "bench-tag", "name": "bench tag",
          "applets": [ { "type": "ndef-tag", "records": [ { "uri": "https://example.com" } ] } ] }
        """
    let outcome = Mutex<(spans: [Duration], result: String)?>(nil)
    let finished = DispatchSemaphore(value: 0)
    Task {
        defer { finished.signal() }
        let executor = BlockingExecutor(name: "bench emulation")
        defer { executor.shutdown() }
        let timing = Mutex<TurnaroundTimingChannel?>(nil)
        do {
            let credential = try CredentialFile(json: Array(json.utf8)).makeCredential()
            let backend = await PN532EmulationBackend.open(readerName: readerA, executor: executor) {
                let context = try PCSCContext()
                let handle = try context.connect(to: readerA, share: .direct, protocols: .undefined)
                let channel = TurnaroundTimingChannel(wrapping: handle)
                timing.withLock { $0 = channel }
                return (channel, { try? handle.disconnect(.leave); try? context.release() })
            }
            let session = try CredentialSession.startSession(
                CredentialSessionOptions(credentials: [credential], emulationBackend: backend, authorizer: PolicyAuthorizer.approveAll))
            let released = Task { () -> Int in
                var exchanged = 0
                for await event in session.eventStream {
                    if case .apduExchanged = event { exchanged += 1 }
                    if case .fieldStateChanged(let info) = event, info == .fieldAbsent { break }
                }
                return exchanged
            }
            try await session.enterWiredMode(using: credential)
            try await session.performTransaction(using: credential)
            let exchanged = await released.value
            try await session.endCardEmulation()
            await session.invalidate()
            let reply = try SimulatedReaders.controlA.send("terminal-result peer=bench-terminal wait-ms=1000")
            let spans = timing.withLock { $0?.spans.withLock { $0 } } ?? []
            outcome.withLock { $0 = (spans, "\(exchanged) APDUs exchanged, terminal \(reply["result"] ?? "?")") }
        } catch {
            outcome.withLock { $0 = ([], "failed: \(error)") }
        }
    }
    // Bounded: 2000 turns take well under a minute; the engine's own window is 60 s.
    if finished.wait(timeout: .now() + 120) == .timedOut {
        report.skipped("emulation", name, goal: goal, gated: false, reason: "no result within 120 s")
        return
    }
    _ = try? SimulatedReaders.controlA.send("remove all=yes")
    guard let (spans, result) = outcome.withLock({ $0 }) else { return }
    guard !spans.isEmpty else {
        report.skipped("emulation", name, goal: goal, gated: false, reason: "no turn measured (\(result))")
        return
    }
    let sorted = spans.sorted()
    func milliseconds(_ d: Duration) -> Double {
        Double(d.components.seconds) * 1000 + Double(d.components.attoseconds) / 1e15
    }
    let median = milliseconds(sorted[sorted.count / 2])
    let p99 = milliseconds(sorted[min(sorted.count - 1, Int((Double(sorted.count) * 0.99).rounded(.up)) - 1)])
    let worst = milliseconds(sorted[sorted.count - 1])
    report.detail("\(readerA), \(sorted.count) turns; \(result); median \(format(median, 3)) ms, max \(format(worst, 3)) ms")
    report.figure("emulation", name, "\(format(p99, 3)) ms", goal: goal, passed: p99 < 1, gated: false)
}
