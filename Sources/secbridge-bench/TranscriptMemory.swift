// Peak memory and speed of the transcript tools on a generated transcript of many exchanges,
// beside a streaming Python parse of the same file in the same run (issue 16: at most 64 MB peak
// RSS at 1 M exchanges; `stats` no slower than Python). /usr/bin/time -v (Debian package `time`,
// scripts/install-deps.sh) reports each run's maximum resident set size and wall time.

import Foundation

/// One run under /usr/bin/time -v: peak RSS in MB and wall time in seconds; nil when it failed.
func measured(_ arguments: [String]) -> (rssMB: Double, wall: Double)? {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/time")
    process.arguments = ["-v"] + arguments
    process.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
    let errors = Pipe()
    process.standardError = errors
    guard (try? process.run()) != nil else { return nil }
    let report = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    guard process.terminationStatus == 0 || arguments.contains("diff") && process.terminationStatus == 1 else {
        print("  \(arguments.joined(separator: " ")) exited \(process.terminationStatus): \(report.suffix(400))")
        return nil
    }
    var rss: Double?, wall: Double?
    for line in report.split(separator: "\n") {
        let text = line.trimmingCharacters(in: .whitespaces)
        if text.hasPrefix("Maximum resident set size (kbytes):"), let kb = Double(text.split(separator: ":").last!.trimmingCharacters(in: .whitespaces)) {
            rss = kb / 1024
        }
        if text.hasPrefix("Elapsed (wall clock) time") {
            // h:mm:ss or m:ss.ss after the last ": ".
            let value = text.components(separatedBy: "): ").last ?? ""
            wall = value.split(separator: ":").reduce(0.0) { $0 * 60 + (Double($1) ?? 0) }
        }
    }
    guard let rss, let wall else { return nil }
    return (rss, wall)
}

/// Writes a transcript of `exchanges` SELECT / READ BINARY exchanges with offsets; in `changed`
/// exchanges the answer is 6A 82 instead.
func writeTranscript(_ path: String, exchanges: Int, changed: Set<Int> = []) {
    guard FileManager.default.createFile(atPath: path, contents: nil), let out = FileHandle(forWritingAtPath: path) else {
        fatalError("cannot write \(path)")
    }
    _ = try? out.truncate(atOffset: 0)
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
            out.write(Data(text.utf8))
            text = ""
        }
    }
    out.write(Data(text.utf8))
    try? out.close()
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

/// Runs the transcript tools and the Python parse on one generated file, alternating Python and
/// `stats` in pairs (the ratio is taken per pair, so a slower stretch of the machine hits both).
func benchmarkTranscriptMemory(tools: String, exchanges: Int, pairs: Int = 3) {
    guard FileManager.default.isExecutableFile(atPath: "/usr/bin/time") else {
        print("transcripts: /usr/bin/time is missing: install the Debian package `time` (scripts/install-deps.sh)")
        return
    }
    guard FileManager.default.isExecutableFile(atPath: tools) else {
        print("transcripts: \(tools) is missing: build secbridge-tools in the same configuration first")
        return
    }
    let directory = NSTemporaryDirectory() + "secbridge-bench-\(getpid())"
    try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let left = directory + "/left.trn", right = directory + "/right.trn", script = directory + "/parse.py"
    writeTranscript(left, exchanges: exchanges)
    writeTranscript(right, exchanges: exchanges, changed: [0, exchanges - 1])
    guard FileManager.default.createFile(atPath: script, contents: Data(pythonStreamingParse.utf8)) else {
        fatalError("cannot write \(script)")
    }
    let size = Double((try? FileManager.default.attributesOfItem(atPath: left)[.size] as? Int) ?? 0) / 1e6
    print("transcripts: \(exchanges) exchanges, \(format(size, 1)) MB per file; peak RSS from /usr/bin/time -v (target ≤ 64 MB)")

    var ratios: [Double] = []
    var statsRSS = 0.0, pythonRSS = 0.0
    for pair in 0..<pairs {
        // A, B then B, A: the order alternates between pairs.
        let pythonFirst = pair % 2 == 0
        var python: (rssMB: Double, wall: Double)?, stats: (rssMB: Double, wall: Double)?
        for step in 0..<2 {
            if (step == 0) == pythonFirst {
                python = measured(["python3", script, left])
            } else {
                stats = measured([tools, "transcript", "stats", left])
            }
        }
        guard let python, let stats else { print("  pair \(pair + 1): a run failed"); return }
        ratios.append(stats.wall / python.wall)
        statsRSS = max(statsRSS, stats.rssMB)
        pythonRSS = max(pythonRSS, python.rssMB)
        print("  pair \(pair + 1): stats \(format(stats.wall, 2)) s, Python \(format(python.wall, 2)) s, stats/Python = \(format(stats.wall / python.wall, 2))")
    }
    let median = ratios.sorted()[ratios.count / 2]
    print("  stats: peak \(format(statsRSS, 1)) MB (Python \(format(pythonRSS, 1)) MB); wall stats/Python median of \(pairs) pairs \(format(median, 2)) (target ≤ 1.0)")
    for (name, arguments) in [("show", [tools, "transcript", "show", left]),
                              ("redact", [tools, "transcript", "redact", left, "-o", directory + "/redacted.trn", "--force"]),
                              ("diff", [tools, "transcript", "diff", left, right])] {
        if let run = measured(arguments) {
            print("  \(name): peak \(format(run.rssMB, 1)) MB, \(format(run.wall, 2)) s")
        }
    }
    // The diff's answer itself: two changed answers are two changes.
    let diff = Process()
    diff.executableURL = URL(fileURLWithPath: tools)
    diff.arguments = ["transcript", "diff", "--json", left, right]
    let output = Pipe()
    diff.standardOutput = output
    if (try? diff.run()) != nil {
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        diff.waitUntilExit()
        print("  diff of two files differing in two answers: \(text.components(separatedBy: "\"kind\"").count - 1) differences")
    }
}
