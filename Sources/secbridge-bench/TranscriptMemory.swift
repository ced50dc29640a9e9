// Part "transcripts": peak memory and speed of the transcript tools on two generated transcripts
// of many exchanges that differ in two answers (the first and the last), beside a streaming Python
// parse of the same file in the same run (issue 16: at most 64 MB peak RSS at 1 M exchanges;
// `stats` no slower than Python; `diff` reports exactly the two changes). Peak RSS is the maximum
// resident set size /usr/bin/time reports (`%M`, Debian package `time`) for its child, a fresh fork
// of a small process: resident memory does not depend on the machine's load, so the RSS figures and
// the count of changes are gated; the speed ratio is wall clock and is not.

import Foundation

/// Writes a transcript of `exchanges` SELECT / READ BINARY exchanges with offsets; in `changed`
/// exchanges the answer is 6A 82 instead.
/// - Throws: ``LoopFailure`` when the file cannot be created, or the write error.
func writeTranscript(_ path: String, exchanges: Int, changed: Set<Int> = []) throws {
    guard FileManager.default.createFile(atPath: path, contents: nil), let out = FileHandle(forWritingAtPath: path) else {
        throw LoopFailure(description: "cannot create \(path)")
    }
    defer { try? out.close() }
    var text = "# secbridge-transcript: 1\n# tool: secbridge-bench\n# origin: simulated\n# reader: ACS ACR122U PICC Interface 00 00\n# protocol: T=1\n"
    let hex = Array("0123456789ABCDEF".utf8)
    func byte(_ b: Int) -> String { String(decoding: [hex[(b >> 4) & 15], hex[b & 15]], as: UTF8.self) }
    var micros = 0
    for n in 0..<exchanges {
        let p1 = byte(n >> 8), p2 = byte(n)
        micros += 137
        text += "+\(micros / 1000).\(String(format: "%03d", micros % 1000))ms > 00 B0 \(p1) \(p2) 10\n"
        micros += 1210
        let answer = changed.contains(n) ? "6A 82" : "\(p1) \(p2) 03 D1 01 0B 55 04 65 78 61 6D 70 6C 65 2E 90 00"
        text += "+\(micros / 1000).\(String(format: "%03d", micros % 1000))ms < \(answer)\n"
        if text.utf8.count > 1 << 20 {
            try out.write(contentsOf: Data(text.utf8))
            text = ""
        }
    }
    try out.write(contentsOf: Data(text.utf8))
}

/// A streaming parse in Python: line by line, payload hex to bytes, records and status words counted.
let pythonStreamingParse = """
    import sys
    records = 0; sws = {}
    with open(sys.argv[1], 'rb') as f:
        for line in f:
            if line.startswith(b'#') or line.startswith(b';') or line == b'\\n':
                continue
            parts = line.rstrip(b'\\n').split(b' ')
            records += 1
            i = 1 if parts[0].startswith(b'+') else 0
            if parts[i] in (b'>', b'<'):
                data = bytes.fromhex(b' '.join(parts[i + 1:]).decode())
                if parts[i] == b'<' and len(data) >= 2:
                    sws[data[-2:]] = sws.get(data[-2:], 0) + 1
    print(records, len(sws))
    """

/// `arguments` run under `/usr/bin/time -f %M`: the wait4 figures of the whole run and the peak RSS
/// in MB of the measured program.
final class PeakMeasured {
    let command: PreparedCommand
    let peakFile: String

    init(_ arguments: [String], peakFile: String, environment: [String: String], errors: String = "/dev/null", output: String = "/dev/null") {
        self.peakFile = peakFile
        command = PreparedCommand("/usr/bin/time", ["-f", "%M", "-o", peakFile] + arguments, environment: environment,
                                  output: output, errors: errors)
    }

    /// The peak RSS of the last run in MB; nil when /usr/bin/time wrote none.
    var lastPeakMB: Double? {
        guard let text = try? String(contentsOfFile: peakFile, encoding: .utf8),
              let kilobytes = Double(text.split(separator: "\n").last?.trimmingCharacters(in: .whitespaces) ?? "") else { return nil }
        return kilobytes / 1024
    }
}

/// Runs the transcript tools and the Python parse on one generated pair of files.
func benchmarkTranscripts(tools: String, exchanges: Int, pairs: Int, directory: String, report: Report) {
    report.part("transcripts: \(grouped(Double(exchanges))) exchanges per file, two files differing in two answers")
    let rssGoal = "≤ 64 MB"
    guard FileManager.default.isExecutableFile(atPath: "/usr/bin/time") else {
        report.skipped("transcripts", "transcript tools", goal: rssGoal, gated: true, reason: "/usr/bin/time is missing: install the Debian package `time` (scripts/install-deps.sh)")
        return
    }
    guard FileManager.default.isExecutableFile(atPath: tools) else {
        report.skipped("transcripts", "transcript tools", goal: rssGoal, gated: true, reason: "\(tools) is missing: build secbridge-tools in the same configuration first")
        return
    }
    let left = directory + "/left.trn", right = directory + "/right.trn", script = directory + "/parse.py"
    do {
        try writeTranscript(left, exchanges: exchanges)
        try writeTranscript(right, exchanges: exchanges, changed: [0, exchanges - 1])
        try Data(pythonStreamingParse.utf8).write(to: URL(fileURLWithPath: script))
    } catch {
        report.skipped("transcripts", "transcript tools", goal: rssGoal, gated: true, reason: "cannot write the generated files: \(error)")
        return
    }
    let size = Double((try? FileManager.default.attributesOfItem(atPath: left)[.size] as? Int) ?? 0) / 1e6
    report.detail("\(format(size, 1)) MB per file")
    let environment = ProcessInfo.processInfo.environment

    // stats against the Python parse, in alternating pairs.
    let stats = PeakMeasured([tools, "transcript", "stats", left], peakFile: directory + "/stats.peak", environment: environment)
    let python = PeakMeasured(["/usr/bin/python3", script, left], peakFile: directory + "/python.peak", environment: environment)
    if let (a, b) = pairedRuns(stats.command, python.command, pairs: pairs, warmUp: 0, report: report),
       let statsPeak = stats.lastPeakMB, let pythonPeak = python.lastPeakMB {
        report.detail("stats: \(describe(a)), peak \(format(statsPeak, 1)) MB; Python: \(describe(b)), peak \(format(pythonPeak, 1)) MB (last run each)")
        let wall = PairedRatios(a: a.map(\.wall), b: b.map(\.wall))
        report.figure("transcripts", "transcript stats / streaming Python parse wall time", wall.summary, goal: "≤ 1.0", passed: wall.median <= 1.0, gated: false)
        report.figure("transcripts", "transcript stats peak RSS", "\(format(statsPeak, 1)) MB", goal: rssGoal, passed: statsPeak <= 64, gated: true)
    } else {
        report.skipped("transcripts", "transcript stats peak RSS", goal: rssGoal, gated: true, reason: "a run failed")
    }
    for (name, arguments, accepting) in [("show", ["transcript", "show", left], Set<Int32>([0])),
                                         ("redact", ["transcript", "redact", left, "-o", directory + "/redacted.trn", "--force"], [0]),
                                         ("diff", ["transcript", "diff", left, right], [0, 1])] {
        let figure = "transcript \(name) peak RSS"
        let measured = PeakMeasured([tools] + arguments, peakFile: directory + "/\(name).peak", environment: environment,
                                    errors: directory + "/\(name).err")
        guard let run = measured.command.run(), accepting.contains(run.status), let peak = measured.lastPeakMB else {
            let errors = (try? String(contentsOfFile: directory + "/\(name).err", encoding: .utf8)) ?? ""
            report.skipped("transcripts", figure, goal: rssGoal, gated: true, reason: "transcript \(name) failed: \(errors.suffix(300))")
            continue
        }
        report.figure("transcripts", figure, "\(format(peak, 1)) MB (\(format(run.wall, 2)) s)", goal: rssGoal, passed: peak <= 64, gated: true)
    }

    // The diff's answer itself: two changed answers are two changes.
    let output = directory + "/diff.json"
    let diff = PreparedCommand(tools, ["transcript", "diff", "--json", left, right], environment: environment, output: output)
    let name = "transcript diff: changes found between files differing in two answers"
    guard let run = diff.run(), run.status == 1,
          let data = FileManager.default.contents(atPath: output),
          let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
          let differences = object["differences"] as? [[String: Any]] else {
        report.skipped("transcripts", name, goal: "2", gated: true, reason: "transcript diff --json failed or printed no differences array")
        return
    }
    let kinds = differences.map { "\($0["kind"] ?? "?") at line \($0["leftLine"] ?? "?")" }
    report.detail("differences: " + kinds.prefix(6).joined(separator: ", ") + (kinds.count > 6 ? ", …" : ""))
    report.figure("transcripts", name, "\(differences.count)", goal: "2", passed: differences.count == 2, gated: true)
}
