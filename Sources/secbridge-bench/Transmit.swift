// APDU round trips through pcscd: the Swift PC/SC layer (PCSC's CardHandle.transmit) against a
// plain C SCardTransmit loop (Sources/CPCSCBaseline) over the same reader and card. Both sides
// establish their context and connect before their clock starts and disconnect after it stops;
// only the transmit loops are timed, with the same clocks (CLOCK_MONOTONIC for wall time,
// CLOCK_THREAD_CPUTIME_ID for the client thread's CPU time).

import CPCSCBaseline
import Foundation
import PCSC

/// SELECT of the NFC Forum Type 4 Tag application (`00 A4 04 00 07 D2 76 00 00 85 01 01 00`,
/// NFC Forum T4T 2.0 / docs/iso14443-t4t-ndef.md §4): a full round trip to the card's applet.
let selectNDEFApplication: [UInt8] = [0x00, 0xA4, 0x04, 0x00, 0x07, 0xD2, 0x76, 0x00, 0x00, 0x85, 0x01, 0x01, 0x00]

/// One timed loop: wall time and client-thread CPU time, both in seconds, for `count` APDUs.
struct LoopRun {
    var count: Int
    var wall: Double
    var cpu: Double
    var rate: Double { Double(count) / wall }
    var cpuMicrosPerAPDU: Double { cpu * 1e6 / Double(count) }
}

struct LoopFailure: Error, CustomStringConvertible {
    var description: String
}

func threadCPUNanoseconds() -> UInt64 {
    var t = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t)
    return UInt64(t.tv_sec) * 1_000_000_000 + UInt64(t.tv_nsec)
}

func monotonicNanoseconds() -> UInt64 {
    var t = timespec()
    clock_gettime(CLOCK_MONOTONIC, &t)
    return UInt64(t.tv_sec) * 1_000_000_000 + UInt64(t.tv_nsec)
}

/// The Swift side: context and connection made before the loop, released after it. With
/// `reusingBuffer` the loop calls `CardHandle.transmit(_:into:)` with one receive buffer of
/// 65 548 bytes, as the C loop reuses one; without, `transmit(_:)`, which returns a new array
/// per APDU.
func swiftTransmitLoop(reader: String, apdu: [UInt8], count: Int, reusingBuffer: Bool = false) throws -> LoopRun {
    let context = try PCSCContext()
    let card = try context.connect(to: reader, share: .shared, protocols: .any)
    let response = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_548, alignment: 8)
    defer { response.deallocate() }
    let start = monotonicNanoseconds(), cpuStart = threadCPUNanoseconds()
    if reusingBuffer {
        for _ in 0..<count { _ = try card.transmit(apdu, into: response) }
    } else {
        for _ in 0..<count { _ = try card.transmit(apdu) }
    }
    let cpu = threadCPUNanoseconds() - cpuStart
    let wall = monotonicNanoseconds() - start
    try card.disconnect()
    try context.release()
    return LoopRun(count: count, wall: Double(wall) / 1e9, cpu: Double(cpu) / 1e9)
}

/// The C side: pcsc_baseline_open before the loop, pcsc_baseline_close after it.
func cTransmitLoop(reader: String, apdu: [UInt8], count: Int) throws -> LoopRun {
    var connection = pcsc_baseline_connection()
    let opened = pcsc_baseline_open(reader, &connection)
    guard opened == 0 else { throw LoopFailure(description: "C loop: SCardConnect failed with 0x\(String(opened, radix: 16))") }
    defer { pcsc_baseline_close(&connection) }
    var wall: UInt64 = 0, cpu: UInt64 = 0
    let result = apdu.withUnsafeBufferPointer {
        pcsc_baseline_transmit_loop(&connection, $0.baseAddress, $0.count, Int32(count), &wall, &cpu)
    }
    guard result == 0 else { throw LoopFailure(description: "C loop: SCardTransmit failed with 0x\(String(result, radix: 16))") }
    return LoopRun(count: count, wall: Double(wall) / 1e9, cpu: Double(cpu) / 1e9)
}

/// `secbridge-bench loop swift|swift-into|c READER COUNT`: one loop and nothing else, the program
/// callgrind counts (Instructions.swift). `swift` calls `transmit(_:)`, `swift-into`
/// `transmit(_:into:)` with a reused buffer. Exit status 0 when every APDU went through.
func runLoopCommand(_ arguments: [String]) -> Int32 {
    guard arguments.count == 3, let count = Int(arguments[2]), count > 0, ["swift", "swift-into", "c"].contains(arguments[0]) else {
        FileHandle.standardError.write(Data("usage: secbridge-bench loop swift|swift-into|c READER COUNT\n".utf8))
        return 2
    }
    do {
        _ = arguments[0] == "c"
            ? try cTransmitLoop(reader: arguments[1], apdu: selectNDEFApplication, count: count)
            : try swiftTransmitLoop(reader: arguments[1], apdu: selectNDEFApplication, count: count,
                                    reusingBuffer: arguments[0] == "swift-into")
        return 0
    } catch {
        FileHandle.standardError.write(Data("secbridge-bench loop: \(error)\n".utf8))
        return 1
    }
}

/// Part "transmit": `pairs` alternating pairs of `count` APDUs each, Swift/C per pair for wall
/// time and for client CPU time. Both figures are wall-clock-derived and not gated; the gated
/// figure of the Swift layer is its instruction count (Instructions.swift).
func benchmarkTransmit(reader: String, count: Int, pairs: Int, report: Report) {
    report.part("transmit: APDU round trips through pcscd, Swift PC/SC layer against a C loop (\(reader), \(count) APDUs per loop, \(pairs) alternating pairs)")
    do {
        // One unmeasured loop each: the first connect after a card is placed, pcscd's first
        // allocations for a new client.
        _ = try cTransmitLoop(reader: reader, apdu: selectNDEFApplication, count: min(count, 500))
        _ = try swiftTransmitLoop(reader: reader, apdu: selectNDEFApplication, count: min(count, 500))
        let (swift, c) = try alternating(
            pairs: pairs,
            { _ in try swiftTransmitLoop(reader: reader, apdu: selectNDEFApplication, count: count) },
            { _ in try cTransmitLoop(reader: reader, apdu: selectNDEFApplication, count: count) })
        for (index, (s, c)) in zip(swift, c).enumerated() {
            report.detail("pair \(index + 1)\(index % 2 == 0 ? " (Swift first)" : " (C first)"): Swift \(format(s.rate, 0))/s \(format(s.cpuMicrosPerAPDU, 2)) µs CPU/APDU, C \(format(c.rate, 0))/s \(format(c.cpuMicrosPerAPDU, 2)) µs CPU/APDU")
        }
        // Time per APDU Swift/C: above 1 when Swift is slower.
        let wall = PairedRatios(a: swift.map { $0.wall }, b: c.map { $0.wall })
        let cpu = PairedRatios(a: swift.map(\.cpuMicrosPerAPDU), b: c.map(\.cpuMicrosPerAPDU))
        report.detail("medians: Swift \(format(median(swift.map(\.rate)), 0)) APDU/s, C \(format(median(c.map(\.rate)), 0)) APDU/s; client CPU Swift \(format(median(swift.map(\.cpuMicrosPerAPDU)), 2)) µs, C \(format(median(c.map(\.cpuMicrosPerAPDU)), 2)) µs per APDU")
        report.figure("transmit", "wall time per APDU, Swift/C", wall.summary, goal: "≤ 1.05", passed: wall.median <= 1.05, gated: false)
        report.figure("transmit", "client CPU time per APDU, Swift/C", cpu.summary, goal: "≤ 1.05 (informational)", passed: cpu.median <= 1.05, gated: false)
    } catch {
        report.skipped("transmit", "wall time per APDU, Swift/C", goal: "≤ 1.05", gated: false, reason: "\(error)")
    }
}

/// Waits (at most 5 s) until pcscd reports a card in `reader` (`present`) or none; pcscd polls a
/// driver's card presence about every 400 ms. The corresponding PC/SC function is
/// SCardGetStatusChange.
/// - Throws: `PCSCError` from the context, or ``LoopFailure`` when the state did not come.
func waitForCard(reader: String, present: Bool) throws {
    let context = try PCSCContext()
    defer { try? context.release() }
    var states = [ReaderState(readerName: reader)]
    let deadline = ContinuousClock.now + .seconds(5)
    while ContinuousClock.now < deadline {
        _ = try context.getStatusChange(&states, timeout: .milliseconds(500))
        if states[0].eventFlags.contains(.present) == present { return }
        states[0].acknowledge()
    }
    throw LoopFailure(description: "pcscd did not see the card \(present ? "arrive in" : "leave") \(reader) within 5 s")
}
