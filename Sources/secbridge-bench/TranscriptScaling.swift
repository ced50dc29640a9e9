// The transcript tools' scaling figures (issue 32), beside the peak-memory part of
// TranscriptMemory.swift: `transcript diff` of 30 000 exchanges with every answer changed against
// GNU diff on the same files (the peer, in alternating pairs), `diff` of N exchanges with every
// 10th answer changed (time and peak RSS, GNU diff again the peer), `stats` peak RSS against its
// constant-memory goal at N and at a second size (`--stats-exchanges`, the 5 M; the ratio
// of the two is the growth), and the number of write(2) calls of `transcript show` on 30 000
// exchanges (strace -c; the peer is cat writing the same output).
// Peak RSS and the write count do not depend on the machine's load and are gated; times are not.

import Foundation

/// Runs the scaling figures for generated transcripts of `exchanges` exchanges; `stats` peak RSS
/// also on one of `statsExchanges` (skipped when it is the same size).
func benchmarkTranscriptScaling(tools: String, exchanges: Int, statsExchanges: Int, pairs: Int, directory: String, report: Report) {
    report.part("transcripts at scale: every answer changed, every 10th changed, stats memory, show's writes")
    guard FileManager.default.isExecutableFile(atPath: tools), FileManager.default.isExecutableFile(atPath: "/usr/bin/time") else {
        report.skipped("transcripts", "transcript tools at scale", goal: "—", gated: true,
                       reason: "\(tools) or /usr/bin/time is missing (build secbridge-tools; the Debian package `time`)")
        return
    }
    let environment = ProcessInfo.processInfo.environment
    let small = 30_000
    let base = directory + "/scale-base.trn", allChanged = directory + "/scale-all.trn"
    let large = directory + "/scale-large.trn", tenth = directory + "/scale-tenth.trn"
    do {
        try writeTranscript(base, exchanges: small)
        try writeTranscript(allChanged, exchanges: small, changed: Set(0..<small))
        try writeTranscript(large, exchanges: exchanges)
        try writeTranscript(tenth, exchanges: exchanges, changed: Set(stride(from: 0, to: exchanges, by: 10)))
    } catch {
        report.skipped("transcripts", "transcript tools at scale", goal: "—", gated: true, reason: "cannot write the generated files: \(error)")
        return
    }

    // diff, every answer changed, against GNU diff of the same two files.
    let ours = PreparedCommand(tools, ["transcript", "diff", base, allChanged], environment: environment)
    let gnu = PreparedCommand("/usr/bin/diff", [base, allChanged], environment: environment)
    if let (a, b) = pairedRuns(ours, gnu, pairs: pairs, warmUp: 0, accepting: [0, 1], report: report) {
        let wall = PairedRatios(a: a.map(\.wall), b: b.map(\.wall))
        report.detail("diff of \(grouped(Double(small))) exchanges, every answer changed: ours \(describe(a)); GNU diff \(describe(b))")
        report.figure("transcripts", "transcript diff, \(grouped(Double(small))) exchanges all changed, wall time", "\(format(a.map(\.wall).sorted()[a.count / 2], 2)) s",
                      goal: "≤ 2 s", passed: a.map(\.wall).sorted()[a.count / 2] <= 2, gated: false)
        report.figure("transcripts", "transcript diff / GNU diff, all changed, wall time", wall.summary, goal: "informational", passed: true, gated: false)
    } else {
        report.skipped("transcripts", "transcript diff, all changed", goal: "≤ 2 s", gated: false, reason: "a run failed")
    }

    // diff, every 10th answer changed, at the large size: time and peak RSS, against GNU diff of
    // the same two files (both under /usr/bin/time, in alternating pairs).
    let tenthDiff = PeakMeasured([tools, "transcript", "diff", large, tenth], peakFile: directory + "/tenth.peak", environment: environment,
                                 errors: directory + "/tenth.err")
    let tenthGNU = PeakMeasured(["/usr/bin/diff", large, tenth], peakFile: directory + "/tenth-gnu.peak", environment: environment)
    if let (a, b) = pairedRuns(tenthDiff.command, tenthGNU.command, pairs: pairs, warmUp: 0, accepting: [1], report: report),
       let peak = tenthDiff.lastPeakMB, let gnuPeak = tenthGNU.lastPeakMB {
        let size = grouped(Double(exchanges)), wall = median(a.map(\.wall))
        report.detail("diff of \(size) exchanges, every 10th changed: ours \(describe(a)), peak \(format(peak, 1)) MB; GNU diff \(describe(b)), peak \(format(gnuPeak, 1)) MB (last run each)")
        report.figure("transcripts", "transcript diff, \(size) exchanges every 10th changed, wall time", "\(format(wall, 2)) s",
                      goal: "≤ 20 s at 1 M", passed: wall <= 20, gated: false)
        report.figure("transcripts", "transcript diff / GNU diff, every 10th changed, wall time", PairedRatios(a: a.map(\.wall), b: b.map(\.wall)).summary,
                      goal: "informational", passed: true, gated: false)
        report.figure("transcripts", "transcript diff, \(size) exchanges every 10th changed, peak RSS", "\(format(peak, 1)) MB (GNU diff \(format(gnuPeak, 1)) MB)",
                      goal: "≤ 64 MB", passed: peak <= 64, gated: true)
    } else {
        report.skipped("transcripts", "transcript diff, every 10th changed", goal: "≤ 64 MB", gated: true, reason: "transcript diff or GNU diff failed")
    }

    // stats in constant memory, at both sizes.
    /// The peak RSS in MB, reported; with `first`, also as a ratio to it.
    @discardableResult
    func statsPeak(_ path: String, _ size: Int, against first: (peak: Double, size: Int)? = nil) -> Double? {
        let stats = PeakMeasured([tools, "transcript", "stats", path], peakFile: directory + "/scale-stats.peak", environment: environment)
        guard let run = stats.command.run(), run.status == 0, let peak = stats.lastPeakMB else {
            report.skipped("transcripts", "transcript stats peak RSS at \(grouped(Double(size))) exchanges", goal: "≤ 20 MB", gated: true, reason: "transcript stats failed")
            return nil
        }
        let growth = first.map { "; / at \(grouped(Double($0.size))): \(format(peak / $0.peak, 3))" } ?? ""
        report.figure("transcripts", "transcript stats, \(grouped(Double(size))) exchanges, peak RSS", "\(format(peak, 1)) MB (\(format(run.wall, 2)) s)\(growth)",
                      goal: "≤ 20 MB", passed: peak <= 20, gated: true)
        return peak
    }
    let firstPeak = statsPeak(large, exchanges)
    if statsExchanges != exchanges {
        let second = directory + "/scale-stats.trn"
        do {
            try writeTranscript(second, exchanges: statsExchanges)
            statsPeak(second, statsExchanges, against: firstPeak.map { ($0, exchanges) })
        } catch {
            report.skipped("transcripts", "transcript stats peak RSS at \(grouped(Double(statsExchanges))) exchanges", goal: "≤ 20 MB", gated: true,
                           reason: "cannot write the generated file: \(error)")
        }
        try? FileManager.default.removeItem(atPath: second)
    }

    // show's write(2) calls on 30 000 exchanges, counted by strace.
    let strace = ["/usr/bin/strace", "/bin/strace"].first { FileManager.default.isExecutableFile(atPath: $0) }
    guard let strace else {
        report.skipped("transcripts", "transcript show write calls", goal: "≤ 2 000", gated: true, reason: "strace is missing: install the Debian package `strace`")
        return
    }
    /// The write(2) calls `strace -c` counted in `file`.
    func writeCalls(_ file: String) -> Int? {
        guard let text = try? String(contentsOfFile: file, encoding: .utf8),
              let line = text.split(separator: "\n").first(where: { $0.hasSuffix(" write") }),
              // `% time  seconds  usecs/call  calls  [errors]  syscall`: the fourth column.
              case let fields = line.split(separator: " ", omittingEmptySubsequences: true), fields.count >= 5 else { return nil }
        return Int(fields[3])
    }
    // The peer: cat writing show's output, the same bytes.
    let counts = directory + "/show.strace", catCounts = directory + "/cat.strace", shown = directory + "/show.txt"
    let show = PreparedCommand(strace, ["-c", "-e", "trace=write", "-o", counts, tools, "transcript", "show", base], environment: environment, output: shown)
    let cat = PreparedCommand(strace, ["-c", "-e", "trace=write", "-o", catCounts, "/bin/cat", shown], environment: environment)
    guard let run = show.run(), run.status == 0, let calls = writeCalls(counts) else {
        report.skipped("transcripts", "transcript show write calls", goal: "≤ 2 000", gated: true, reason: "strace -c of transcript show failed or printed no write line")
        return
    }
    let bytes = (try? FileManager.default.attributesOfItem(atPath: shown)[.size] as? Int) ?? 0
    let peer = cat.run()?.status == 0 ? writeCalls(catCounts) : nil
    report.detail("show wrote \(grouped(Double(bytes))) bytes in \(calls) calls (\(grouped(Double(bytes / max(calls, 1)))) per call); cat of the same bytes: \(peer.map(String.init) ?? "not measured") calls")
    report.figure("transcripts", "transcript show, \(grouped(Double(small))) exchanges, write(2) calls",
                  "\(calls)" + (peer.map { "; / cat of the same output (\($0)): \(format(Double(calls) / Double(max($0, 1)), 2))" } ?? ""),
                  goal: "≤ 2 000", passed: calls <= 2000, gated: true)
    try? FileManager.default.removeItem(atPath: shown)
}
