// secbridge-bench: measures, in one run, what the README reports.
//
// 1. APDU round trips per second through pcscd: the Swift PC/SC layer against a plain C loop over
//    the same reader and card (target: Swift within 5 % of C), in alternating pairs with the ratio
//    per pair, only the transmit loops timed; beside wall time, client CPU time per APDU.
// 2. Codec throughput: parse + serialize of command and response APDUs on one core
//    (target: ≥ 5 million per second).
// 3. CLI start time: `secbridge readers` against `pcsc_scan -r` (target: within 1.5×).
// 4. Transcript tools on a generated 1 M-exchange transcript: peak RSS of stats, show, redact and
//    diff (target ≤ 64 MB) and stats against a streaming Python parse (TranscriptMemory.swift).
//    `secbridge-bench transcripts [EXCHANGES]` runs only this part (no pcscd needed).
//
// It starts its own private pcscd with vpcd and vicc (PCSCSandbox), so run it as root with the
// test dependencies installed (scripts/install-deps.sh). Build it in release mode:
//     swift run -c release secbridge-bench
// This is a benchmark, not a test: it prints figures and ratios and fails only when it cannot run.

import CPCSCBaseline
import Foundation
import ISO7816
import PCSC
import PCSCSandbox

func now() -> ContinuousClock.Instant { ContinuousClock.now }
func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}
func format(_ value: Double, _ digits: Int = 2) -> String { String(format: "%.\(digits)f", value) }

var arguments = CommandLine.arguments.dropFirst()
if arguments.contains("--help") || arguments.contains("-h") {
    print("""
        usage: secbridge-bench [APDUS]
               secbridge-bench transcripts [EXCHANGES]

        Measures in one run: APDU round trips through a private pcscd (Swift against a C loop, APDUS
        per round, default 5000), codec throughput, CLI start time against pcsc_scan -r, the transcript
        tools' peak memory and speed on a generated transcript, and the card-emulation turnaround.
        Run as root with scripts/install-deps.sh done; build in release mode
        (swift build -c release --product secbridge-bench --product secbridge-tools).

        transcripts   only the transcript tools (no pcscd): peak RSS of stats, show, redact and diff
                      (/usr/bin/time -v) and stats against a streaming Python parse, EXCHANGES
                      exchanges (default 1000000)

        Environment: SECBRIDGE_BENCH_EXCHANGES (transcript size), SECBRIDGE_BENCH_TURNS (emulation
        turnarounds, default 2000), SECBRIDGE_TOOLS (the secbridge-tools binary to measure).
        """)
    exit(0)
}
let benchDirectory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
// SECBRIDGE_TOOLS: another secbridge-tools binary than the one beside this one.
let toolsPath = ProcessInfo.processInfo.environment["SECBRIDGE_TOOLS"] ?? benchDirectory.appendingPathComponent("secbridge-tools").path
let transcriptExchanges = Int(ProcessInfo.processInfo.environment["SECBRIDGE_BENCH_EXCHANGES"] ?? "") ?? 1_000_000
if arguments.first == "transcripts" {
    benchmarkTranscriptMemory(tools: toolsPath,
                              exchanges: arguments.dropFirst().first.flatMap { Int($0) } ?? transcriptExchanges)
    exit(0)
}
let apduCount = Int(arguments.first ?? "") ?? 5000

// MARK: Codec throughput (no pcscd needed)

func codecThroughput() -> (commands: Double, responses: Double) {
    let command: [UInt8] = [0x00, 0xA4, 0x04, 0x00, 0x07, 0xD2, 0x76, 0x00, 0x00, 0x85, 0x01, 0x01, 0x00]
    let response: [UInt8] = [0x00, 0x0F, 0x20, 0x00, 0x7F, 0x00, 0x7F, 0x04, 0x06, 0xE1, 0x04, 0x04, 0x00, 0x00, 0x00, 0x90, 0x00]
    let iterations = 3_000_000
    var checksum = 0
    var start = now()
    for _ in 0..<iterations {
        let apdu = try! CommandAPDU(parsing: command)
        checksum &+= apdu.serialized().count
    }
    let commandRate = Double(iterations) / seconds(now() - start)
    start = now()
    for _ in 0..<iterations {
        let apdu = try! ResponseAPDU(parsing: response)
        checksum &+= apdu.serialized().count
    }
    let responseRate = Double(iterations) / seconds(now() - start)
    precondition(checksum == iterations * (command.count + response.count))
    return (commandRate, responseRate)
}

let codec = codecThroughput()
print("codec: CommandAPDU parse+serialize \(format(codec.commands / 1e6)) M/s, ResponseAPDU parse+serialize \(format(codec.responses / 1e6)) M/s (target ≥ 5 M/s)")

// MARK: Through pcscd

let environment: TestEnvironment
do {
    environment = try TestEnvironment.shared.start()
} catch {
    print("secbridge-bench: cannot start the private pcscd with vpcd and vicc: \(error)")
    print("run scripts/install-deps.sh as root first")
    exit(1)
}
// The simulated ACR122U (an in-process pcscd driver, no network in between) with an ISO 14443-4
// card in its field: the IPC through pcscd dominates, as with a USB reader's fast card. vicc would
// measure vpcd's TCP latency (about 48 ms per APDU, Nagle plus delayed ACK) instead.
let reader = environment.simulatedReaderA
do {
    try SimulatedReaders.controlA.request("place-card", ["uid": "04 A1 B2 C3", "applet": "ok", "id": "bench"])
} catch {
    print("secbridge-bench: cannot place a card on the simulated reader: \(error)")
    exit(1)
}
defer { _ = try? SimulatedReaders.controlA.request("remove", ["all": "yes"]) }
// Wait (bounded) until pcscd has seen the card: it polls presence about every 400 ms.
do {
    let context = try PCSCContext()
    var states = [ReaderState(readerName: reader)]
    let deadline = ContinuousClock.now + .seconds(5)
    while ContinuousClock.now < deadline {
        _ = try context.getStatusChange(&states, timeout: .milliseconds(500))
        if states[0].eventFlags.contains(.present) { break }
        states[0].acknowledge()
    }
}
// SELECT of the NFC Forum Type 4 Tag application: a full round trip to the card's applet.
let apdu: [UInt8] = [0x00, 0xA4, 0x04, 0x00, 0x07, 0xD2, 0x76, 0x00, 0x00, 0x85, 0x01, 0x01, 0x00]

/// One loop's figures: APDUs per second of wall time, and the client thread's CPU time per APDU.
struct LoopFigures {
    var rate: Double
    var cpuMicrosPerAPDU: Double
}

func threadCPUNanoseconds() -> UInt64 {
    var t = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t)
    return UInt64(t.tv_sec) * 1_000_000_000 + UInt64(t.tv_nsec)
}

func swiftLoop(count: Int) throws -> LoopFigures {
    let context = try PCSCContext()
    let card = try context.connect(to: reader, share: .shared, protocols: .any)
    let start = now(), cpuStart = threadCPUNanoseconds()
    for _ in 0..<count { _ = try card.transmit(apdu) }
    let cpu = threadCPUNanoseconds() - cpuStart
    let elapsed = now() - start
    try card.disconnect()
    return LoopFigures(rate: Double(count) / seconds(elapsed), cpuMicrosPerAPDU: Double(cpu) / 1000 / Double(count))
}

func cLoop(count: Int) -> LoopFigures {
    var wall: UInt64 = 0, cpu: UInt64 = 0
    let result = apdu.withUnsafeBufferPointer {
        pcsc_baseline_transmit_loop_timed(reader, $0.baseAddress, $0.count, Int32(count), &wall, &cpu)
    }
    precondition(result == 0, "C loop failed with 0x\(String(result, radix: 16))")
    return LoopFigures(rate: Double(count) / (Double(wall) / 1e9), cpuMicrosPerAPDU: Double(cpu) / 1000 / Double(count))
}

do {
    // Alternating pairs (C first, then Swift first, …) with the ratios taken per pair: a slower
    // stretch of this shared machine hits both halves of a pair, not one side of the comparison.
    // Both loops time only their SCardTransmit calls: set-up and connect stay outside. Client CPU
    // time per APDU (the calling thread's, CLOCK_THREAD_CPUTIME_ID) varies far less than wall time.
    var wallRatios: [Double] = [], cpuRatios: [Double] = []
    var swiftRuns: [LoopFigures] = [], cRuns: [LoopFigures] = []
    for pair in 0..<5 {
        let c: LoopFigures, swift: LoopFigures
        if pair % 2 == 0 {
            c = cLoop(count: apduCount)
            swift = try swiftLoop(count: apduCount)
        } else {
            swift = try swiftLoop(count: apduCount)
            c = cLoop(count: apduCount)
        }
        cRuns.append(c)
        swiftRuns.append(swift)
        wallRatios.append(swift.rate / c.rate)
        cpuRatios.append(swift.cpuMicrosPerAPDU / c.cpuMicrosPerAPDU)
    }
    func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
    print("transmit through pcscd (\(reader), \(apduCount) APDUs per loop, 5 alternating pairs): Swift \(format(median(swiftRuns.map(\.rate)), 1))/s, C \(format(median(cRuns.map(\.rate)), 1))/s (medians)")
    print("  wall Swift/C per pair \(wallRatios.map { format($0, 3) }.joined(separator: " ")), median \(format(median(wallRatios), 3)) (target ≥ 0.95)")
    print("  client CPU per APDU: Swift \(format(median(swiftRuns.map(\.cpuMicrosPerAPDU)), 2)) µs, C \(format(median(cRuns.map(\.cpuMicrosPerAPDU)), 2)) µs; Swift/C per pair \(cpuRatios.map { format($0, 3) }.joined(separator: " ")), median \(format(median(cpuRatios), 3))")
} catch {
    print("secbridge-bench: transmit benchmark failed: \(error)")
    exit(1)
}

// MARK: CLI start time

/// The median wall time of `runs` runs of a command, spawned with posix_spawn and reaped with
/// waitpid (Foundation's Process adds tens of milliseconds of its own to each run).
func spawnTime(_ executable: String, _ arguments: [String], runs: Int) -> Double? {
    var environmentLines = environment.environmentForSubprocesses.map { "\($0.key)=\($0.value)" }
    environmentLines.sort()
    var times: [Double] = []
    for run in 0..<(runs + 3) {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        defer { posix_spawn_file_actions_destroy(&actions) }
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environmentLines.map { strdup($0) } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var pid: pid_t = 0
        let start = now()
        guard posix_spawn(&pid, executable, &actions, nil, argv, envp) == 0 else { return nil }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        let elapsed = seconds(now() - start)
        guard status == 0 else { return nil }
        if run >= 3 { times.append(elapsed) }  // the first three warm the caches
    }
    return times.sorted()[times.count / 2]
}

let secbridge = benchDirectory.appendingPathComponent("secbridge").path
let pcscScan = "/usr/bin/pcsc_scan"
if let ours = spawnTime(secbridge, ["readers"], runs: 30), let theirs = spawnTime(pcscScan, ["-r"], runs: 30) {
    print("start time (median of 30): secbridge readers \(format(ours * 1000)) ms, pcsc_scan -r \(format(theirs * 1000)) ms, ratio \(format(ours / theirs)) (target ≤ 1.5)")
} else {
    print("start time: could not run \(secbridge) or \(pcscScan) (build secbridge in the same configuration first)")
}

// Transcript tools (TranscriptMemory.swift); SECBRIDGE_BENCH_EXCHANGES sets the size.
benchmarkTranscriptMemory(tools: toolsPath, exchanges: transcriptExchanges)

// Card-emulation turnaround (EmulationTurnaround.swift); SECBRIDGE_BENCH_TURNS sets the count.
benchmarkEmulationTurnaround(
    environment: environment, count: Int(ProcessInfo.processInfo.environment["SECBRIDGE_BENCH_TURNS"] ?? "") ?? 2000)
exit(0)
