// secbridge-bench: measures, in one run, every figure issue 16 asks for (docs/benchmarks.md holds
// what each figure means, how it is measured, and the figures of a run on this machine).
//
// Comparisons run in alternating A/B pairs with the ratio taken per pair (Pairs.swift); set-up
// stays outside every timed region; client CPU time is printed beside wall time; instruction
// counts come from callgrind. `--check` exits 1 only when a stable figure fails its goal
// (Report.swift): wall-clock figures are printed with their goal but never gate.
//
// Parts (one file each): codec and codec-instructions (Codec.swift), transmit (Transmit.swift),
// instructions (Instructions.swift), start, replay-simulated, replay-credential and run
// (SpawnComparisons.swift), pcscd-rss (PCSCDMemory.swift), transcripts (TranscriptMemory.swift),
// serve (ServeThroughVpcd.swift), emulation (EmulationTurnaround.swift). It starts its own private pcscd serving the simulated
// ACR122U readers (SimulatedPCSCD.swift), so it runs as root after scripts/install-deps.sh.

import Foundation
import PCSCSandbox

// MARK: Entry

let commandArguments = Array(CommandLine.arguments.dropFirst())
if commandArguments.contains("--help") || commandArguments.contains("-h") {
    print(helpText)
    exit(0)
}
if commandArguments.first == "loop" {
    exit(runLoopCommand(Array(commandArguments.dropFirst())))
}
if commandArguments.first == "codec-loop" {
    exit(runCodecLoopCommand(Array(commandArguments.dropFirst())))
}
if commandArguments.first == "spin" {
    exit(runSpinCommand(Array(commandArguments.dropFirst())))
}
let options: BenchOptions
do {
    options = try BenchOptions(commandArguments, environment: ProcessInfo.processInfo.environment)
} catch {
    FileHandle.standardError.write(Data("secbridge-bench: \(error.message)\nRun 'secbridge-bench --help' for the parts and options.\n".utf8))
    exit(2)
}

let benchBinary = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
let benchDirectory = URL(fileURLWithPath: benchBinary).deletingLastPathComponent()
let processEnvironment = ProcessInfo.processInfo.environment
let toolsPath = processEnvironment["SECBRIDGE_TOOLS"] ?? benchDirectory.appendingPathComponent("secbridge-tools").path
let secbridgePath = processEnvironment["SECBRIDGE_BIN"] ?? benchDirectory.appendingPathComponent("secbridge").path
let repository = HarnessPaths.repositoryRoot
let scratch = NSTemporaryDirectory() + "secbridge-bench.\(getpid())"
try? FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)

let report = Report()
print("secbridge-bench: parts \(options.parts.joined(separator: ", "))\(options.check ? "; --check" : "")")
print("machine: \(ProcessInfo.processInfo.activeProcessorCount) cores, load average \((try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").prefix(3).joined(separator: " ") ?? "?")")

if options.parts.contains("codec") {
    benchmarkCodec(iterations: options["codec-iterations"], report: report)
}

var simulated: SimulatedPCSCD?
var readerA = ""
if !pcscdParts.isDisjoint(with: options.parts) {
    do {
        let started = try SimulatedPCSCD.start(vpcd: options.parts.contains("serve"))
        simulated = started
        readerA = started.readerA
        // The simulated ACR122U (a pcscd driver, no network in between) with an ISO 14443-4 card
        // answering SELECT with 90 00: the IPC through pcscd dominates, as with a USB reader's fast
        // card. vicc would measure vpcd's TCP latency (Nagle plus delayed ACK) instead.
        try SimulatedReaders.controlA.request("place-card", ["uid": "04 A1 B2 C3", "applet": "ok", "id": "bench"])
        try waitForCard(reader: readerA, present: true)
    } catch {
        print("secbridge-bench: cannot start the private pcscd with the simulated ACR122U and a card: \(error)")
        print("run scripts/install-deps.sh as root and build SecbridgeACR122IFD in the same configuration first")
        exit(1)
    }
}
let programs = Programs(secbridge: secbridgePath, pcscScan: HarnessPaths.tool("pcsc_scan"), scriptor: HarnessPaths.tool("scriptor"),
                        environment: simulated?.environment ?? processEnvironment, directory: scratch)

for part in options.parts {
    switch part {
    case "codec-instructions":
        benchmarkCodecInstructions(bench: benchBinary, iterations: options["codec-callgrind-iterations"],
                                   environment: processEnvironment, directory: scratch, report: report)
    case "transmit":
        benchmarkTransmit(reader: readerA, count: options["apdus"], pairs: options["pairs"], report: report)
    case "instructions":
        benchmarkInstructions(bench: benchBinary, secbridge: secbridgePath, reader: readerA, units: options["callgrind-apdus"],
                              environment: programs.environment, directory: scratch, report: report)
    case "start":
        benchmarkStartTime(programs, pairs: options["start-pairs"], report: report)
    case "replay-simulated":
        benchmarkReplaySimulated(programs, fixture: repository?.appendingPathComponent("Fixtures/simulated/reader-basics.trn").path,
                                 pairs: options["replay-pairs"], report: report)
    case "replay-credential":
        benchmarkReplayCredential(programs, bench: benchBinary, credential: repository?.appendingPathComponent("Fixtures/credentials/uri-tag.json").path,
                                  count: options["credential-exchanges"], runs: options["credential-pairs"], report: report)
    case "run":
        benchmarkRunScript(programs, reader: readerA, count: options["script-apdus"], pairs: options["run-pairs"], report: report)
    case "pcscd-rss":
        benchmarkPCSCDMemory(pcscd: simulated?.daemonPID, reader: readerA, count: options["rss-apdus"], report: report)
    case "transcripts":
        benchmarkTranscripts(tools: toolsPath, exchanges: options["exchanges"], pairs: options["transcript-pairs"],
                             directory: scratch, report: report)
        benchmarkTranscriptScaling(tools: toolsPath, exchanges: options["exchanges"], statsExchanges: options["stats-exchanges"], pairs: options["transcript-pairs"],
                                   directory: scratch, report: report)
    case "serve":
        benchmarkServe(programs, credential: repository?.appendingPathComponent("Fixtures/credentials/uri-tag.json").path,
                       reader: simulated?.vpcd, count: options["serve-apdus"], slowCount: options["vicc-apdus"],
                       pairs: options["serve-pairs"], directory: scratch, report: report)
    case "emulation":
        // Last: it takes the card away and switches both readers' personality.
        if let simulated {
            benchmarkEmulationTurnaround(readerA: simulated.readerA, readerB: simulated.readerB, count: options["turns"], report: report)
        }
    default:
        break
    }
}
if simulated != nil { _ = try? SimulatedReaders.controlA.request("remove", ["all": "yes"]) }

report.printSummary()
let failures = report.gateFailures
if options.check {
    print(failures.isEmpty ? "check: every gated figure passed" : "check: \(failures.count) gated figure(s) failed: " + failures.map(\.name).joined(separator: "; "))
    try? FileManager.default.removeItem(atPath: scratch)
    exit(failures.isEmpty ? 0 : 1)
}
try? FileManager.default.removeItem(atPath: scratch)
exit(0)
