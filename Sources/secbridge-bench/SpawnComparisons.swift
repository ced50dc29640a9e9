// Comparisons of whole programs, each run as a child process (Spawn.swift) in alternating pairs
// with the ratio taken per pair: CLI start time against pcsc_scan, `replay --against simulated`
// against pcsc_scan, `secbridge run` against pcsc-tools' scriptor; and the wall/CPU ratio of
// `replay --against credential:`, which shows whether a run waits instead of working.

import Foundation
import PCSCSandbox

/// The programs the spawn parts measure and the private pcscd's environment.
struct Programs {
    var secbridge: String
    var pcscScan: String?
    var scriptor: String?
    var environment: [String: String]
    var directory: String
}

/// Median wall and CPU of a set of runs, in milliseconds, for detail lines.
func describe(_ runs: [ChildRun]) -> String {
    "wall \(format(median(runs.map(\.wall)) * 1000, 2)) ms, CPU \(format(median(runs.map(\.cpu)) * 1000, 2)) ms (medians)"
}

/// Part "start": `secbridge readers` against `pcsc_scan -r`, both listing the private pcscd's readers.
func benchmarkStartTime(_ programs: Programs, pairs: Int, report: Report) {
    report.part("start: `secbridge readers` against `pcsc_scan -r` (\(pairs) alternating pairs after 3 warm-up runs each)")
    let goal = "≤ 1.5"
    guard let pcscScan = programs.pcscScan else {
        report.skipped("start", "start time secbridge readers / pcsc_scan -r", goal: goal, gated: false, reason: "pcsc_scan is not installed (pcsc-tools)")
        return
    }
    let ours = PreparedCommand(programs.secbridge, ["readers"], environment: programs.environment)
    let theirs = PreparedCommand(pcscScan, ["-r"], environment: programs.environment)
    guard let (a, b) = pairedRuns(ours, theirs, pairs: pairs, warmUp: 3, report: report) else {
        report.skipped("start", "start time secbridge readers / pcsc_scan -r", goal: goal, gated: false, reason: "a run failed")
        return
    }
    report.detail("secbridge readers: \(describe(a)); pcsc_scan -r: \(describe(b))")
    let wall = PairedRatios(a: a.map(\.wall), b: b.map(\.wall))
    let cpu = PairedRatios(a: a.map(\.cpu), b: b.map(\.cpu))
    report.figure("start", "start time secbridge readers / pcsc_scan -r", wall.summary, goal: goal, passed: wall.median <= 1.5, gated: false)
    report.detail("child CPU time secbridge readers / pcsc_scan -r: \(cpu.summary)")
}

/// Part "replay-simulated": `secbridge replay --against simulated` of the 5-exchange fixture
/// Fixtures/simulated/reader-basics.trn (an in-process simulated ACR122U, opened and closed by
/// each run) against `pcsc_scan -r`.
func benchmarkReplaySimulated(_ programs: Programs, fixture: String?, pairs: Int, report: Report) {
    report.part("replay-simulated: `secbridge replay --against simulated` of a 5-exchange fixture against `pcsc_scan -r` (\(pairs) alternating pairs)")
    let name = "replay --against simulated / pcsc_scan -r", goal = "≤ 3"
    guard let pcscScan = programs.pcscScan else {
        report.skipped("replay-simulated", name, goal: goal, gated: false, reason: "pcsc_scan is not installed (pcsc-tools)")
        return
    }
    guard let fixture, FileManager.default.fileExists(atPath: fixture) else {
        report.skipped("replay-simulated", name, goal: goal, gated: false, reason: "Fixtures/simulated/reader-basics.trn not found (run from the repository)")
        return
    }
    let ours = PreparedCommand(programs.secbridge, ["replay", "--against", "simulated", fixture], environment: programs.environment)
    let theirs = PreparedCommand(pcscScan, ["-r"], environment: programs.environment)
    guard let (a, b) = pairedRuns(ours, theirs, pairs: pairs, report: report) else {
        report.skipped("replay-simulated", name, goal: goal, gated: false, reason: "a run failed")
        return
    }
    report.detail("replay --against simulated: \(describe(a)); pcsc_scan -r: \(describe(b))")
    let wall = PairedRatios(a: a.map(\.wall), b: b.map(\.wall))
    let cpu = PairedRatios(a: a.map(\.cpu), b: b.map(\.cpu))
    report.figure("replay-simulated", name, wall.summary, goal: goal, passed: wall.median <= 3, gated: false)
    report.detail("child CPU time replay --against simulated / pcsc_scan -r: \(cpu.summary)")
}

/// A transcript of `count` terminal SELECTs of the Type 4 Tag application (`tgt <`) each answered
/// 90 00 (`tgt >`), as Fixtures/credentials/uri-tag.json's NDEF tag applet answers them.
func writeCredentialTranscript(_ path: String, count: Int) throws {
    var text = "# secbridge-transcript: 1\n# tool: secbridge-bench\n# origin: simulated\n# protocol: undefined\n"
    text += "event target-activated mode=\"08\" initiator-command=\"E0 80\"\n"
    text += String(repeating: "tgt < 00 A4 04 00 07 D2 76 00 00 85 01 01 00\ntgt > 90 00\n", count: count)
    text += "event target-released\n"
    try text.write(toFile: path, atomically: true, encoding: .utf8)
}

/// `secbridge-bench spin NANOSECONDS`: burns that much CPU time on one thread and exits, the
/// CPU-bound reference the credential replay is paired with.
func runSpinCommand(_ arguments: [String]) -> Int32 {
    guard arguments.count == 1, let budget = UInt64(arguments[0]), budget > 0 else {
        FileHandle.standardError.write(Data("usage: secbridge-bench spin NANOSECONDS\n".utf8))
        return 2
    }
    var state: UInt64 = 0x9E37_79B9_7F4A_7C15
    while threadCPUNanoseconds() < budget {
        for _ in 0..<10_000 { state = state &* 6_364_136_223_846_793_005 &+ 1 }
    }
    return state == 0 ? 1 : 0
}

/// Part "replay-credential": `secbridge replay --against credential:` of `count` exchanges, wall
/// time against the child's own CPU time (a run that sleeps or polls has wall far above CPU).
/// Under load a CPU-bound run's wall time exceeds its CPU time too (it waits for a core), so each
/// replay is paired with `secbridge-bench spin` burning the same CPU time, and the gated figure is
/// the replay's wall/CPU divided by the spinner's: 1 on a quiet machine and under load alike when
/// the replay never waits. Both clocks of each run are the same run's, so this one gates.
func benchmarkReplayCredential(_ programs: Programs, bench: String, credential: String?, count: Int, runs: Int, report: Report) {
    report.part("replay-credential: `secbridge replay --against credential:` of \(grouped(Double(count))) exchanges, wall time / CPU time (\(runs) alternating pairs with a CPU-bound spinner)")
    let name = "replay --against credential: wall/CPU, ÷ the spinner's wall/CPU", goal = "≤ 1.5"
    guard let credential, FileManager.default.fileExists(atPath: credential) else {
        report.skipped("replay-credential", name, goal: goal, gated: true, reason: "Fixtures/credentials/uri-tag.json not found (run from the repository)")
        return
    }
    let transcript = programs.directory + "/credential-\(count).trn"
    do {
        try writeCredentialTranscript(transcript, count: count)
    } catch {
        report.skipped("replay-credential", name, goal: goal, gated: true, reason: "cannot write \(transcript): \(error)")
        return
    }
    let replay = PreparedCommand(programs.secbridge, ["replay", "--against", "credential:" + credential, transcript],
                                 environment: programs.environment)
    // One unmeasured run gives the CPU time the spinner burns.
    guard let first = replay.run(), first.status == 0 else {
        report.skipped("replay-credential", name, goal: goal, gated: true, reason: "\(replay.commandLine) failed")
        return
    }
    let spin = PreparedCommand(bench, ["spin", "\(UInt64(first.cpu * 1e9))"], environment: programs.environment)
    guard let (a, b) = pairedRuns(replay, spin, pairs: runs, warmUp: 0, report: report) else {
        report.skipped("replay-credential", name, goal: goal, gated: true, reason: "a run failed")
        return
    }
    for (index, (r, s)) in zip(a, b).enumerated() {
        report.detail("pair \(index + 1): replay wall \(format(r.wall, 3)) s, CPU \(format(r.cpu, 3)) s, wall/CPU \(format(r.wall / r.cpu, 2)), \(format(r.wall * 1e6 / Double(count), 1)) µs per exchange; spinner wall/CPU \(format(s.wall / s.cpu, 2))")
    }
    let raw = a.map { $0.wall / $0.cpu }
    report.detail("replay wall/CPU alone: median \(format(median(raw), 2)) (runs \(format(raw.min()!, 2))–\(format(raw.max()!, 2)))")
    let normalized = PairedRatios(a: raw, b: b.map { $0.wall / $0.cpu })
    report.figure("replay-credential", name, normalized.summary, goal: goal, passed: normalized.median <= 1.5, gated: true)
}

/// Part "run": `secbridge run` of a `count`-APDU script against scriptor (pcsc-tools) on the same
/// reader and card, in alternating pairs; wall and child CPU time per pair.
func benchmarkRunScript(_ programs: Programs, reader: String, count: Int, pairs: Int, report: Report) {
    report.part("run: `secbridge run` of a \(grouped(Double(count)))-APDU script against scriptor (\(reader), \(pairs) alternating pairs)")
    let name = "secbridge run / scriptor wall time", goal = "≤ 1.05"
    guard let scriptor = programs.scriptor else {
        report.skipped("run", name, goal: goal, gated: false, reason: "scriptor is not installed (pcsc-tools, libpcsc-perl)")
        return
    }
    let script = programs.directory + "/select-run-\(count).script"
    do {
        try writeSelectScript(script, count: count)
    } catch {
        report.skipped("run", name, goal: goal, gated: false, reason: "cannot write \(script): \(error)")
        return
    }
    let ours = PreparedCommand(programs.secbridge, ["run", "--reader", reader, script], environment: programs.environment)
    // scriptor asks for T=0 unless told: the contactless card speaks T=1.
    let theirs = PreparedCommand(scriptor, ["-r", reader, "-p", "T=1", script], environment: programs.environment)
    guard let (a, b) = pairedRuns(ours, theirs, pairs: pairs, warmUp: 1, report: report) else {
        report.skipped("run", name, goal: goal, gated: false, reason: "a run failed")
        return
    }
    report.detail("secbridge run: \(describe(a)); scriptor: \(describe(b))")
    let wall = PairedRatios(a: a.map(\.wall), b: b.map(\.wall))
    let cpu = PairedRatios(a: a.map(\.cpu), b: b.map(\.cpu))
    report.figure("run", name, wall.summary, goal: goal, passed: wall.median <= 1.05, gated: false)
    report.detail("child CPU time secbridge run / scriptor: \(cpu.summary)")
}
