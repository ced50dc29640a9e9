// Codec figures over a table of command and response shapes (ISO/IEC 7816-3 §12.1.3 and
// ISO/IEC 7816-4 §5.1: cases 1, 2, 3, 4 in short and extended form, Ne = 256 and 65 536), the
// error paths of malformed input, and response parsing. Each shape runs on one core for a fixed
// number of iterations in three rounds; the figure is the median rate per second of the thread's
// CPU time (CLOCK_THREAD_CPUTIME_ID), which a loaded machine changes far less than wall time (the
// wall-clock rate is printed beside it). Still a clock: printed with the goal, never gated.

import Foundation
import ISO7816

/// One row of the codec table.
struct CodecShape {
    enum Kind { case command, malformedCommand, response, malformedResponse }
    var name: String
    var kind: Kind
    var bytes: [UInt8]
}

/// The shapes: name, kind, bytes.
let codecShapes: [CodecShape] = {
    let aid: [UInt8] = [0xD2, 0x76, 0x00, 0x00, 0x85, 0x01, 0x01]
    let data255 = [UInt8](repeating: 0x5A, count: 255)
    let data256 = [UInt8](repeating: 0x5A, count: 256)
    return [
        CodecShape(name: "case 1 (CLA INS P1 P2)", kind: .command, bytes: [0x00, 0x70, 0x00, 0x00]),
        CodecShape(name: "case 2 short, Le 10 (Ne 16)", kind: .command, bytes: [0x00, 0xB0, 0x00, 0x00, 0x10]),
        CodecShape(name: "case 2 short, Le 00 (Ne 256)", kind: .command, bytes: [0x00, 0xB0, 0x00, 0x00, 0x00]),
        CodecShape(name: "case 3 short, Lc 07 (SELECT by AID)", kind: .command, bytes: [0x00, 0xA4, 0x04, 0x0C, 0x07] + aid),
        CodecShape(name: "case 3 short, Lc FF (255 bytes)", kind: .command, bytes: [0x00, 0xD6, 0x00, 0x00, 0xFF] + data255),
        CodecShape(name: "case 4 short, Lc 07 Le 00 (SELECT, Ne 256)", kind: .command, bytes: [0x00, 0xA4, 0x04, 0x00, 0x07] + aid + [0x00]),
        CodecShape(name: "case 2 extended, Le 01 00 (Ne 256)", kind: .command, bytes: [0x00, 0xB0, 0x00, 0x00, 0x00, 0x01, 0x00]),
        CodecShape(name: "case 2 extended, Le 00 00 (Ne 65 536)", kind: .command, bytes: [0x00, 0xB0, 0x00, 0x00, 0x00, 0x00, 0x00]),
        CodecShape(name: "case 3 extended, Lc 01 00 (256 bytes)", kind: .command, bytes: [0x00, 0xD6, 0x00, 0x00, 0x00, 0x01, 0x00] + data256),
        CodecShape(name: "case 4 extended, Lc 00 07 Le 00 00 (Ne 65 536)", kind: .command, bytes: [0x00, 0xA4, 0x04, 0x00, 0x00, 0x00, 0x07] + aid + [0x00, 0x00]),
        CodecShape(name: "malformed: 3 bytes (truncated header)", kind: .malformedCommand, bytes: [0x00, 0xA4, 0x04]),
        CodecShape(name: "malformed: short Lc 00 (6 bytes)", kind: .malformedCommand, bytes: [0x00, 0xA4, 0x04, 0x00, 0x00, 0x01]),
        CodecShape(name: "malformed: Lc 07 with 3 data bytes", kind: .malformedCommand, bytes: [0x00, 0xA4, 0x04, 0x00, 0x07, 0xD2, 0x76, 0x00]),
        CodecShape(name: "malformed: extended Lc 00 00", kind: .malformedCommand, bytes: [0x00, 0xD6, 0x00, 0x00, 0x00, 0x00, 0x00, 0x5A]),
        CodecShape(name: "malformed: trailing bytes after Le", kind: .malformedCommand, bytes: [0x00, 0xA4, 0x04, 0x00, 0x07] + aid + [0x00, 0x00, 0x00]),
        CodecShape(name: "response 90 00", kind: .response, bytes: [0x90, 0x00]),
        CodecShape(name: "response, CC file (15 bytes + 90 00)", kind: .response,
                   bytes: [0x00, 0x0F, 0x20, 0x00, 0x7F, 0x00, 0x7F, 0x04, 0x06, 0xE1, 0x04, 0x04, 0x00, 0x00, 0x00, 0x90, 0x00]),
        CodecShape(name: "response, 256 bytes + 90 00", kind: .response, bytes: data256 + [0x90, 0x00]),
        CodecShape(name: "malformed response: 1 byte", kind: .malformedResponse, bytes: [0x90]),
    ]
}()

/// Parses (and for valid shapes serializes again) `shape` `iterations` times; returns the rates
/// per second of CPU time and of wall time. Traps when a valid shape fails to parse or a
/// malformed one parses: the table is wrong then, not the figure.
func codecRate(_ shape: CodecShape, iterations: Int) -> (cpu: Double, wall: Double) {
    var checksum = 0
    let bytes = shape.bytes
    let start = monotonicNanoseconds(), cpuStart = threadCPUNanoseconds()
    switch shape.kind {
    case .command:
        for _ in 0..<iterations { checksum &+= try! CommandAPDU(parsing: bytes).serialized().count }
        precondition(checksum == iterations * bytes.count, "\(shape.name) does not round-trip")
    case .response:
        for _ in 0..<iterations { checksum &+= try! ResponseAPDU(parsing: bytes).serialized().count }
        precondition(checksum == iterations * bytes.count, "\(shape.name) does not round-trip")
    case .malformedCommand:
        for _ in 0..<iterations {
            do { _ = try CommandAPDU(parsing: bytes) } catch { checksum &+= 1 }
        }
        precondition(checksum == iterations, "\(shape.name) parsed")
    case .malformedResponse:
        for _ in 0..<iterations {
            do { _ = try ResponseAPDU(parsing: bytes) } catch { checksum &+= 1 }
        }
        precondition(checksum == iterations, "\(shape.name) parsed")
    }
    let cpu = Double(threadCPUNanoseconds() - cpuStart) / 1e9, wall = Double(monotonicNanoseconds() - start) / 1e9
    return (Double(iterations) / cpu, Double(iterations) / wall)
}

/// Part "codec": every shape of ``codecShapes``, median of three rounds.
func benchmarkCodec(iterations: Int, report: Report) {
    report.part("codec: parse + serialize per shape, one core, \(grouped(Double(iterations))) iterations × 3 rounds, median rate per CPU second (wall-clock rate after it)")
    for shape in codecShapes {
        let rounds = (0..<3).map { _ in codecRate(shape, iterations: iterations) }
        let rate = median(rounds.map(\.cpu)), wall = median(rounds.map(\.wall))
        let valid = shape.kind == .command || shape.kind == .response
        let goal = valid ? 5e6 : 1e6
        report.figure("codec", shape.name, "\(format(rate / 1e6, 2)) M/s CPU, \(format(1e9 / rate, 0)) ns each (wall \(format(wall / 1e6, 2)) M/s)",
                      goal: "≥ \(format(goal / 1e6, 0)) M/s", passed: rate >= goal, gated: false)
    }
}

/// One shape's loop, the region callgrind counts (`--toggle-collect`, `--dump-after`): parses
/// (and for valid shapes serializes) `bytes` `iterations` times; returns a checksum.
@inline(never)
func codecMeasuredRegion(_ shape: CodecShape, iterations: Int) -> Int {
    var checksum = 0
    let bytes = shape.bytes
    switch shape.kind {
    case .command:
        for _ in 0..<iterations { checksum &+= (try? CommandAPDU(parsing: bytes))?.serialized().count ?? -1 }
    case .response:
        for _ in 0..<iterations { checksum &+= (try? ResponseAPDU(parsing: bytes))?.serialized().count ?? -1 }
    case .malformedCommand:
        for _ in 0..<iterations { checksum &+= (try? CommandAPDU(parsing: bytes)) == nil ? 1 : -1 }
    case .malformedResponse:
        for _ in 0..<iterations { checksum &+= (try? ResponseAPDU(parsing: bytes)) == nil ? 1 : -1 }
    }
    return checksum
}

/// `secbridge-bench codec-loop N`: every shape's region once, N iterations each, in table order.
func runCodecLoopCommand(_ arguments: [String]) -> Int32 {
    guard arguments.count == 1, let count = Int(arguments[0]), count > 0 else {
        FileHandle.standardError.write(Data("usage: secbridge-bench codec-loop ITERATIONS\n".utf8))
        return 2
    }
    var total = 0
    for shape in codecShapes { total &+= codecMeasuredRegion(shape, iterations: count) }
    return total == 0 ? 1 : 0
}

/// Part "codec-instructions": instructions per parse (+ serialize) of each shape under
/// callgrind, counted only inside ``codecMeasuredRegion(_:iterations:)`` and dumped after each
/// call, at N and 2N iterations: (I(2N) − I(N)) / N per shape. Stable where the rates are not;
/// printed without a goal (the goals are rates) and not gated.
func benchmarkCodecInstructions(bench: String, iterations n: Int, environment: [String: String], directory: String, report: Report) {
    report.part("codec-instructions: instructions per parse + serialize by shape under callgrind (\(n) and \(2 * n) iterations, difference / \(n))")
    guard let callgrind = Callgrind(directory: directory, environment: environment) else {
        report.skipped("codec-instructions", "instructions per shape", goal: "none", gated: false, reason: "valgrind is not installed")
        return
    }
    do {
        let copy = try callgrind.stripped(bench)
        // --dump-after takes no wildcard: the region's symbol as the compiler emitted it (it may be
        // a specialization), from nm.
        let symbols = directory + "/bench.nm"
        guard let listed = PreparedCommand("/usr/bin/nm", [copy], environment: environment, output: symbols).run(), listed.status == 0,
              let table = try? String(contentsOfFile: symbols, encoding: .utf8) else {
            throw LoopFailure(description: "nm \(copy) failed (binutils)")
        }
        let region = table.split(separator: "\n").compactMap { line -> String? in
            let fields = line.split(separator: " ")
            return fields.count == 3 && "tT".contains(fields[1]) && fields[2].contains("codecMeasuredRegion") ? String(fields[2]) : nil
        }
        guard region.count == 1 else { throw LoopFailure(description: "nm lists \(region.count) codecMeasuredRegion functions, not one") }
        var perRun: [[UInt64]] = []
        for count in [n, 2 * n] {
            let label = "codec-\(count)"
            _ = try callgrind.count(copy, ["codec-loop", "\(count)"], label: label, extra: [
                "--collect-atstart=no", "--toggle-collect=\(region[0])", "--dump-after=\(region[0])",
            ])
            perRun.append(try callgrindPartTotals(prefix: directory + "/\(label).out", parts: codecShapes.count))
        }
        for (index, shape) in codecShapes.enumerated() {
            let perCall = instructionsPerUnit(single: perRun[0][index], double: perRun[1][index], units: n)
            report.info("codec-instructions", shape.name, "\(grouped(perCall)) instructions")
        }
    } catch {
        report.skipped("codec-instructions", "instructions per shape", goal: "none", gated: false, reason: "\(error)")
    }
}

/// The `totals:` (or `summary:`) count of each part file `<prefix>.1` … `<prefix>.<parts>` that
/// callgrind's `--dump-after` wrote, in order.
func callgrindPartTotals(prefix: String, parts: Int) throws -> [UInt64] {
    try (1...parts).map { part in
        let path = "\(prefix).\(part)"
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw LoopFailure(description: "callgrind wrote no \(path)")
        }
        for line in text.split(separator: "\n") where line.hasPrefix("totals:") || line.hasPrefix("summary:") {
            if let value = UInt64(line.split(separator: " ").last ?? "") { return value }
        }
        throw LoopFailure(description: "no totals line in \(path)")
    }
}
