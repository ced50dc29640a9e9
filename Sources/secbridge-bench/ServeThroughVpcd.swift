// `secbridge serve` as the card in Debian's stock vpcd, in the bench's own pcscd: the same C
// SCardTransmit loop (Sources/CPCSCBaseline) against serve, against the C peer card of
// CPCSCBaseline/vpcd_card.c (the least a card can do on vpcd's protocol) and against vicc, on the
// same vpcd reader. The C card also runs once without TCP_QUICKACK, which shows the cause of the
// old 48 ms per APDU (docs/vpcd-protocol.md §3).

import CPCSCBaseline
import Foundation
import PCSCSandbox

/// The vpcd reader of the bench's pcscd: slot 0 of port `port`.
struct VpcdReader {
    let port: UInt16
    var name: String { ReaderConfEntry.vpcdFriendlyName + " 00 00" }
}

/// One side of the comparison: a card that is started, measured with the C loop, and stopped.
private func measureCard(on reader: VpcdReader, count: Int, start: () throws -> Void, stop: () -> Void) throws -> LoopRun {
    try start()
    defer {
        stop()
        try? waitForCard(reader: reader.name, present: false)
    }
    try waitForCard(reader: reader.name, present: true)
    return try cTransmitLoop(reader: reader.name, apdu: selectNDEFApplication, count: count)
}

/// `secbridge serve --credential uri-tag.json --port PORT` as the card.
private func measureServe(_ programs: Programs, credential: String, reader: VpcdReader, count: Int) throws -> LoopRun {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: programs.secbridge)
    process.arguments = ["serve", "--credential", credential, "--port", String(reader.port)]
    process.environment = programs.environment
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    return try measureCard(on: reader, count: count, start: { try process.run() }, stop: {
        process.terminate()
        process.waitUntilExit()
    })
}

/// The C peer card on a thread of its own (its recv blocks), stopped by shutdown(2).
private func measureCCard(reader: VpcdReader, count: Int, quickAck: Bool) throws -> LoopRun {
    var descriptor: Int32 = -1
    var thread: Thread?
    let done = DispatchSemaphore(value: 0)
    return try measureCard(on: reader, count: count, start: {
        descriptor = vpcd_card_connect(reader.port)
        guard descriptor >= 0 else { throw LoopFailure(description: "C card: connect to vpcd failed: \(String(cString: strerror(-descriptor)))") }
        let fd = descriptor
        thread = Thread {
            _ = vpcd_card_serve(fd, quickAck ? 1 : 0)
            done.signal()
        }
        thread?.start()
    }, stop: {
        guard descriptor >= 0 else { return }
        shutdown(descriptor, Int32(SHUT_RDWR))
        _ = done.wait(timeout: .now() + 5)
    })
}

/// vicc (vsmartcard's Python card) as the card.
private func measureVicc(reader: VpcdReader, environment: [String: String], directory: String, count: Int) throws -> LoopRun {
    let card = VirtualCard(port: reader.port, readerName: reader.name, pcscEnvironment: environment,
                           logURL: URL(fileURLWithPath: directory + "/vicc.log"))
    return try measureCard(on: reader, count: count, start: { _ = try card.start() }, stop: { try? card.stop() })
}

/// Part "serve": `pairs` alternating pairs of `count` SELECTs, serve against the C card (time per
/// APDU serve/C), then `slowCount` SELECTs each to vicc and to the C card without TCP_QUICKACK.
func benchmarkServe(_ programs: Programs, credential: String?, reader: VpcdReader?, count: Int, slowCount: Int, pairs: Int,
                    directory: String, report: Report) {
    report.part("serve: the C SCardTransmit loop through stock vpcd (\(reader?.name ?? "no vpcd reader")), secbridge serve against a C card and vicc (\(count) SELECTs per loop, \(pairs) alternating pairs; \(slowCount) to vicc)")
    guard let credential, let reader else {
        report.skipped("serve", "APDUs per second through vpcd", goal: "≥ 5 000", gated: false, reason: "no vpcd reader or no Fixtures/credentials/uri-tag.json")
        return
    }
    do {
        let (serve, c) = try alternating(
            pairs: pairs,
            { _ in try measureServe(programs, credential: credential, reader: reader, count: count) },
            { _ in try measureCCard(reader: reader, count: count, quickAck: true) })
        for (index, (s, c)) in zip(serve, c).enumerated() {
            report.detail("pair \(index + 1)\(index % 2 == 0 ? " (serve first)" : " (C card first)"): serve \(format(s.rate, 0))/s, C card \(format(c.rate, 0))/s")
        }
        let serveRate = median(serve.map(\.rate))
        report.figure("serve", "APDUs per second, serve through stock vpcd", "\(grouped(serveRate))/s", goal: "≥ 5 000", passed: serveRate >= 5000, gated: false)
        let wall = PairedRatios(a: serve.map(\.wall), b: c.map(\.wall))
        report.info("serve", "wall time per APDU through vpcd, serve/C card", wall.summary)
        let slow = try measureCCard(reader: reader, count: slowCount, quickAck: false)
        report.info("serve", "APDUs per second, C card without TCP_QUICKACK", "\(format(slow.rate, 1))/s (\(format(slow.wall * 1000 / Double(slow.count), 1)) ms per APDU)")
        do {
            let vicc = try measureVicc(reader: reader, environment: programs.environment, directory: directory, count: slowCount)
            report.info("serve", "APDUs per second, vicc", "\(format(vicc.rate, 1))/s (\(format(vicc.wall * 1000 / Double(vicc.count), 1)) ms per APDU); serve/vicc rate \(format(serveRate / vicc.rate, 0))")
        } catch {
            report.skipped("serve", "APDUs per second, vicc", goal: "none", gated: false, reason: "\(error)")
        }
    } catch {
        report.skipped("serve", "APDUs per second, serve through stock vpcd", goal: "≥ 5 000", gated: false, reason: "\(error)")
    }
}
