// Instructions per APDU, counted by callgrind (valgrind's instruction counter): a count of the
// client process's executed instructions does not depend on what else the machine runs, so these
// are the figures `--check` gates on. Each program runs twice, with N and with 2N APDUs, and the
// difference divided by N is the cost of one APDU: start-up, context set-up, connect and exit cost
// the same in both runs and cancel out. Only the client is counted (valgrind does not follow the
// APDU into pcscd).
//
// valgrind 3.19 (Debian 12) cannot read the DWARF 5 debug information Swift 6 emits, so each
// binary is counted on a copy stripped with `strip --strip-debug`: same code, no debug sections.

import Foundation

/// The instruction counts of one program at N and 2N APDUs.
struct InstructionCounts {
    var single: UInt64
    var double: UInt64
    var units: Int
    var perAPDU: Double { instructionsPerUnit(single: single, double: double, units: units) }
}

/// Counts programs under callgrind in a scratch directory.
struct Callgrind {
    let valgrind: String
    let directory: String
    let environment: [String: String]

    /// Finds valgrind on PATH; nil when it is not installed.
    init?(directory: String, environment: [String: String]) {
        let paths = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
        guard let found = paths.map({ "\($0)/valgrind" }).first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            return nil
        }
        valgrind = found
        self.directory = directory
        self.environment = environment
    }

    /// A copy of `binary` without debug sections (`strip --strip-debug`), made once.
    func stripped(_ binary: String) throws -> String {
        let copy = directory + "/" + URL(fileURLWithPath: binary).lastPathComponent + ".stripped"
        if FileManager.default.fileExists(atPath: copy) { return copy }
        let strip = PreparedCommand("/usr/bin/strip", ["--strip-debug", "-o", copy, binary], environment: environment)
        guard let run = strip.run(), run.status == 0 else {
            throw LoopFailure(description: "strip --strip-debug \(binary) failed (install binutils)")
        }
        return copy
    }

    /// The instructions callgrind counted for one run of `binary arguments` (every thread), from
    /// its `Collected : N` line.
    func count(_ binary: String, _ arguments: [String], label: String, extra: [String] = []) throws -> UInt64 {
        let log = directory + "/\(label).log"
        let command = PreparedCommand(valgrind, ["--tool=callgrind", "--callgrind-out-file=\(directory)/\(label).out",
                                                 "--log-file=\(log)"] + extra + [binary] + arguments,
                                      environment: environment)
        guard let run = command.run() else { throw LoopFailure(description: "cannot spawn \(valgrind)") }
        let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        guard run.status == 0 else {
            throw LoopFailure(description: "\(command.commandLine) exited \(run.status): \(text.suffix(300))")
        }
        for line in text.split(separator: "\n") {
            if let range = line.range(of: "Collected : ") {
                if let value = UInt64(line[range.upperBound...].trimmingCharacters(in: .whitespaces)) { return value }
            }
        }
        throw LoopFailure(description: "no 'Collected :' line in \(log)")
    }

    /// Counts `arguments(n)` and `arguments(2n)`.
    func counts(_ binary: String, units n: Int, label: String, _ arguments: (Int) -> [String]) throws -> InstructionCounts {
        let single = try count(binary, arguments(n), label: "\(label)-\(n)")
        let double = try count(binary, arguments(2 * n), label: "\(label)-\(2 * n)")
        return InstructionCounts(single: single, double: double, units: n)
    }
}

/// A `secbridge run` script of `count` SELECTs of the Type 4 Tag application, one per line, as
/// scriptor reads it too.
func writeSelectScript(_ path: String, count: Int) throws {
    let line = selectNDEFApplication.map { String(format: "%02X", $0) }.joined(separator: " ") + "\n"
    try String(repeating: line, count: count).write(toFile: path, atomically: true, encoding: .utf8)
}

/// Part "instructions": the C loop (libpcsclite's own cost per APDU), the Swift loop, and
/// `secbridge run` of a script, each at N and 2N APDUs.
func benchmarkInstructions(bench: String, secbridge: String, reader: String, units n: Int,
                           environment: [String: String], directory: String, report: Report) {
    report.part("instructions: client instructions per APDU under callgrind (\(reader), runs of \(n) and \(2 * n) APDUs, difference / \(n))")
    let swiftGoal = "≤ 500 beyond libpcsclite's", runGoal = "≤ 10 000 beyond libpcsclite's"
    guard let callgrind = Callgrind(directory: directory, environment: environment) else {
        report.skipped("instructions", "Swift PC/SC layer per APDU", goal: swiftGoal, gated: true, reason: "valgrind is not installed")
        report.skipped("instructions", "secbridge run per APDU", goal: runGoal, gated: true, reason: "valgrind is not installed")
        return
    }
    let c: InstructionCounts
    do {
        let benchCopy = try callgrind.stripped(bench)
        c = try callgrind.counts(benchCopy, units: n, label: "c-loop") { ["loop", "c", reader, "\($0)"] }
        report.detail("C loop (SCardTransmit): \(grouped(Double(c.single))) and \(grouped(Double(c.double))) instructions → \(grouped(c.perAPDU)) per APDU (libpcsclite's own)")
        let swift = try callgrind.counts(benchCopy, units: n, label: "swift-loop") { ["loop", "swift", reader, "\($0)"] }
        report.detail("Swift loop (CardHandle.transmit): \(grouped(Double(swift.single))) and \(grouped(Double(swift.double))) instructions → \(grouped(swift.perAPDU)) per APDU")
        let beyond = swift.perAPDU - c.perAPDU
        report.figure("instructions", "Swift PC/SC layer per APDU beyond libpcsclite's", "\(grouped(beyond)) (Swift \(grouped(swift.perAPDU)), C \(grouped(c.perAPDU)))",
                      goal: swiftGoal, passed: beyond <= 500, gated: true)
        // The same loop with one reused receive buffer, as the C loop has: what a hot loop that
        // calls transmit(_:into:) pays.
        let into = try callgrind.counts(benchCopy, units: n, label: "swift-into-loop") { ["loop", "swift-into", reader, "\($0)"] }
        report.detail("Swift loop (CardHandle.transmit(_:into:), one reused buffer): \(grouped(Double(into.single))) and \(grouped(Double(into.double))) instructions → \(grouped(into.perAPDU)) per APDU")
        let intoBeyond = into.perAPDU - c.perAPDU
        report.figure("instructions", "Swift PC/SC layer with a reused buffer per APDU beyond libpcsclite's", "\(grouped(intoBeyond)) (Swift \(grouped(into.perAPDU)), C \(grouped(c.perAPDU)))",
                      goal: swiftGoal, passed: intoBeyond <= 500, gated: true)
    } catch {
        report.skipped("instructions", "Swift PC/SC layer per APDU beyond libpcsclite's", goal: swiftGoal, gated: true, reason: "\(error)")
        report.skipped("instructions", "secbridge run per APDU beyond libpcsclite's", goal: runGoal, gated: true, reason: "no C figure to compare with")
        return
    }
    do {
        let secbridgeCopy = try callgrind.stripped(secbridge)
        for count in [n, 2 * n] { try writeSelectScript(directory + "/select-\(count).script", count: count) }
        let run = try callgrind.counts(secbridgeCopy, units: n, label: "secbridge-run") {
            ["run", "--reader", reader, directory + "/select-\($0).script"]
        }
        report.detail("secbridge run: \(grouped(Double(run.single))) and \(grouped(Double(run.double))) instructions → \(grouped(run.perAPDU)) per APDU")
        let beyond = run.perAPDU - c.perAPDU
        report.figure("instructions", "secbridge run per APDU beyond libpcsclite's", "\(grouped(beyond)) (run \(grouped(run.perAPDU)), C \(grouped(c.perAPDU)))",
                      goal: runGoal, passed: beyond <= 10_000, gated: true)
    } catch {
        report.skipped("instructions", "secbridge run per APDU beyond libpcsclite's", goal: runGoal, gated: true, reason: "\(error)")
    }
}
