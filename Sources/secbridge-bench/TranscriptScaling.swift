// The transcript tools' scaling figures (issue 32), beside the peak-memory part of
// TranscriptMemory.swift: `transcript diff` of 30 000 exchanges with every answer changed against
// GNU diff on the same files (the peer, in alternating pairs), `diff` of N exchanges with every
// 10th answer changed (time and peak RSS), `stats` peak RSS against its constant-memory goal at N
// and at a second size (`--stats-exchanges`, the 5 M), and
// the number of write(2) calls of `transcript show` on 30 000 exchanges (strace -c).
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

    // diff, every 10th answer changed, at the large size: time and peak RSS.
    let tenthDiff = PeakMeasured([tools, "transcript", "diff", large, tenth], peakFile: directory + "/tenth.peak", environment: environment,
                                 errors: directory + "/tenth.err")
    if let run = tenthDiff.command.run(), run.status == 1, let peak = tenthDiff.lastPeakMB {
        let size = grouped(Double(exchanges))
        report.figure("transcripts", "transcript diff, \(size) exchanges every 10th changed, wall time", "\(format(run.wall, 2)) s",
                      goal: "≤ 20 s at 1 M", passed: run.wall <= 20, gated: false)
        report.figure("transcripts", "transcript diff, \(size) exchanges every 10th changed, peak RSS", "\(format(peak, 1)) MB",
                      goal: "≤ 64 MB", passed: peak <= 64, gated: true)
    } else {
        report.skipped("transcripts", "transcript diff, every 10th changed", goal: "≤ 64 MB", gated: true, reason: "transcript diff failed")
    }

    // stats in constant memory, at both sizes.
    func statsPeak(_ path: String, _ size: Int) {
        let stats = PeakMeasured([tools, "transcript", "stats", path], peakFile: directory + "/scale-stats.peak", environment: environment)
        if let run = stats.command.run(), run.status == 0, let peak = stats.lastPeakMB {
            report.figure("transcripts", "transcript stats, \(grouped(Double(size))) exchanges, peak RSS", "\(format(peak, 1)) MB (\(format(run.wall, 2)) s)",
                          goal: "≤ 20 MB", passed: peak <= 20, gated: true)
        } else {
            report.skipped("transcripts", "transcript stats peak RSS at \(grouped(Double(size))) exchanges", goal: "≤ 20 MB", gated: true, reason: "transcript stats failed")
        }
    }
    statsPeak(large, exchanges)
    if statsExchanges != exchanges {
        let second = directory + "/scale-stats.trn"
        do {
            try writeTranscript(second, exchanges: statsExchanges)
            statsPeak(second, statsExchanges)
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
    let counts = directory + "/show.strace"
    let show = PreparedCommand(strace, ["-c", "-e", "trace=write", "-o", counts, tools, "transcript", "show", base], environment: environment)
    guard let run = show.run(), run.status == 0, let text = try? String(contentsOfFile: counts, encoding: .utf8),
          let line = text.split(separator: "\n").first(where: { $0.hasSuffix(" write") }),
          // `% time  seconds  usecs/call  calls  [errors]  syscall`: the fourth column.
          case let fields = line.split(separator: " ", omittingEmptySubsequences: true), fields.count >= 5,
          let calls = Int(fields[3]) else {
        report.skipped("transcripts", "transcript show write calls", goal: "≤ 2 000", gated: true, reason: "strace -c of transcript show failed or printed no write line")
        return
    }
    report.figure("transcripts", "transcript show, \(grouped(Double(small))) exchanges, write(2) calls", "\(calls)", goal: "≤ 2 000", passed: calls <= 2000, gated: true)
}
