// The command line of secbridge-bench: its help text, its parts and its options. (Not in
// main.swift, whose globals are initialized by its top-level code: these are read by tests too.)

let helpText = """
    usage: secbridge-bench [--check] [--only PART[,PART…]] [OPTIONS]
           secbridge-bench transcripts [EXCHANGES]

    Measures every figure of issue 16 in one run and prints each with its goal and pass/fail.
    Comparisons run in alternating pairs (A B, B A, …) and report the median and the spread of the
    per-pair ratios; set-up (context, connect, building a child's argv and environment) is outside
    every timed region. Starts its own private pcscd serving the two simulated ACR122U readers:
    run as root after scripts/install-deps.sh, built in release mode:
      swift build -c release    # every product: secbridge-bench, secbridge, secbridge-tools
                                # and the simulated ACR122U driver the benchmark starts
      .build/release/secbridge-bench
    What each figure means and the figures of a run on this machine: docs/benchmarks.md.

    Parts, in the order they run, and their figures (gated: --check fails on it):
      codec              parse + serialize rate per CPU second, per command/response shape:
                         cases 1, 2, 3, 4 short and extended, Ne 256 and 65 536, malformed
                         input, responses (goal ≥ 5 M/s, malformed ≥ 1 M/s)
      codec-instructions instructions per parse + serialize of each codec shape under callgrind,
                         runs of N and 2N iterations (informational, no goal); needs valgrind
      transmit           SCardTransmit loops through pcscd, Swift PC/SC layer against a C loop:
                         wall time per APDU Swift/C (goal ≤ 1.05) and client CPU time Swift/C
      instructions       callgrind, runs of N and 2N APDUs: the Swift layer's instructions per
                         APDU beyond libpcsclite's, with transmit(_:) and with transmit(_:into:)
                         reusing one buffer (gated, ≤ 500 each), and `secbridge run`'s (gated,
                         ≤ 10 000); needs valgrind
      start              `secbridge readers` / `pcsc_scan -r` wall time (goal ≤ 1.5)
      replay-simulated   `secbridge replay --against simulated` of a 5-exchange fixture /
                         `pcsc_scan -r` wall time (goal ≤ 3)
      replay-credential  `secbridge replay --against credential:` of 10 000 exchanges: wall time
                         / CPU time of the same run, divided by that of a CPU-bound spinner
                         burning the same CPU time in the same pair (gated, ≤ 1.5)
      run                `secbridge run` of a 10 000-APDU script / scriptor wall time (goal ≤ 1.05);
                         needs pcsc-tools and libpcsc-perl
      pcscd-rss          pcscd's VmRSS growth over many APDUs to the simulated card (gated, ≤ 5 MB)
      transcripts        peak RSS of transcript stats, show, redact and diff (gated, ≤ 64 MB each),
                         stats / a streaming Python parse wall time (goal ≤ 1.0), and the count of
                         changes diff reports between files differing in two answers (gated, = 2);
                         diff of 30 000 exchanges all changed / GNU diff (goal ≤ 2 s), diff of
                         --exchanges with every 10th changed (goal ≤ 20 s at 1 M; RSS gated,
                         ≤ 64 MB), stats peak RSS at --exchanges and at --stats-exchanges (gated,
                         ≤ 20 MB each), show's write(2) calls on 30 000 exchanges (gated, ≤ 2 000)
      serve              the C SCardTransmit loop through Debian's stock vpcd to `secbridge serve`,
                         to a C card (CPCSCBaseline/vpcd_card.c) and to vicc: serve's APDUs per
                         second (goal ≥ 5 000), time per APDU serve/C card, vicc's and the C
                         card's without TCP_QUICKACK (informational); needs vsmartcard-vpcd/-vpicc
      emulation          card-emulation turnaround, TgGetData answer → TgSetData (goal p99 < 1 ms)

    Options:
      --check                  Exit 1 when a gated figure fails (a figure that could not be
                               measured is reported as skipped and does not fail).
      --only PART[,PART…]      Run only these parts (names above).
      --apdus N                APDUs per transmit loop (default 5000).
      --pairs N                Pairs of transmit loops (default 5).
      --callgrind-apdus N      N of the instruction runs (N and 2N APDUs; default 1000).
      --start-pairs N          Pairs of start-time runs (default 20).
      --replay-pairs N         Pairs of replay-simulated runs (default 10).
      --credential-exchanges N Exchanges of the credential replay (default 10000).
      --credential-pairs N     Pairs of credential replay and spinner runs (default 5).
      --script-apdus N         APDUs of the `secbridge run` script (default 10000).
      --run-pairs N            Pairs of run / scriptor runs (default 5).
      --rss-apdus N            APDUs of pcscd-rss (default 200000; the issue's figure is 1000000).
      --exchanges N            Exchanges per generated transcript (default 100000; the issue's
                               peak-RSS figure is at 1000000).
      --transcript-pairs N     Pairs of stats / Python runs (default 3).
      --stats-exchanges N      Exchanges of a second transcript for the stats peak-RSS figure
                               alone (default 1000000; the issue's second size is 5000000).
      --turns N                Emulation turnarounds (default 2000).
      --serve-apdus N          SELECTs per serve and C-card loop (default 20000).
      --serve-pairs N          Pairs of serve / C-card loops (default 3).
      --vicc-apdus N           SELECTs to vicc and to the C card without TCP_QUICKACK (default 100;
                               each takes about 48 ms).
      --codec-iterations N     Iterations per codec shape and round (default 200000).
      --codec-callgrind-iterations N
                               N of the codec instruction runs (default 10000).
      -h, --help               Show this text.

    `transcripts [EXCHANGES]` is `--only transcripts --exchanges EXCHANGES`. Three subcommands are
    the benchmark's own child programs: `loop swift|swift-into|c READER COUNT` (one transmit
    loop, the program callgrind counts), `codec-loop ITERATIONS` (every codec shape's loop, counted by
    codec-instructions) and `spin NANOSECONDS` (burns that much CPU time).

    Environment:
      SECBRIDGE_TOOLS             the secbridge-tools binary the transcript part measures
                                  (default: beside this binary)
      SECBRIDGE_BIN               the secbridge binary (default: beside this binary)
      SECBRIDGE_BENCH_EXCHANGES   default of --exchanges
      SECBRIDGE_BENCH_TURNS       default of --turns
      SECBRIDGE_ACR122_IFD        the simulated ACR122U driver library (default: beside this binary)

    Exit status: 0 (with --check: every gated figure passed or was skipped), 1 when a gated
    figure failed under --check, 2 for a usage error.
    """

let allParts = ["codec", "codec-instructions", "transmit", "instructions", "start", "replay-simulated", "replay-credential",
                "run", "pcscd-rss", "transcripts", "serve", "emulation"]
/// The parts that need the private pcscd.
let pcscdParts: Set<String> = ["transmit", "instructions", "start", "replay-simulated", "run", "pcscd-rss", "serve", "emulation"]

/// The options of one run.
struct BenchOptions {
    var check = false
    var parts = allParts
    /// Every counted option and its default.
    static let defaults: [String: Int] = [
        "apdus": 5000, "pairs": 5, "callgrind-apdus": 1000, "start-pairs": 20, "replay-pairs": 10,
        "credential-exchanges": 10_000, "credential-pairs": 5, "script-apdus": 10_000, "run-pairs": 5,
        "rss-apdus": 200_000, "exchanges": 100_000, "transcript-pairs": 3, "stats-exchanges": 1_000_000, "turns": 2000, "serve-apdus": 20_000, "serve-pairs": 3, "vicc-apdus": 100, "codec-iterations": 200_000, "codec-callgrind-iterations": 10_000,
    ]
    var counts = BenchOptions.defaults

    subscript(_ name: String) -> Int { counts[name]! }

    /// Parses the command line (without the program name).
    /// - Throws: a message naming the bad argument.
    init(_ arguments: [String], environment: [String: String]) throws(UsageError) {
        if let value = environment["SECBRIDGE_BENCH_EXCHANGES"].flatMap({ Int($0) }) { counts["exchanges"] = value }
        if let value = environment["SECBRIDGE_BENCH_TURNS"].flatMap({ Int($0) }) { counts["turns"] = value }
        var rest = arguments[...]
        if rest.first == "transcripts" {
            parts = ["transcripts"]
            rest = rest.dropFirst()
            if let value = rest.first {
                guard let exchanges = Int(value), exchanges > 0 else {
                    throw UsageError("transcripts takes a positive count of exchanges, got '\(value)'")
                }
                counts["exchanges"] = exchanges
                rest = rest.dropFirst()
            }
        }
        while let argument = rest.popFirst() {
            let name = argument.hasPrefix("--") ? String(argument.dropFirst(2)) : argument
            switch name {
            case "check":
                check = true
            case "only":
                guard let value = rest.popFirst() else { throw UsageError("--only needs a list of parts: \(allParts.joined(separator: ","))") }
                let chosen = value.split(separator: ",").map(String.init)
                if let unknown = chosen.first(where: { !allParts.contains($0) }) {
                    throw UsageError("unknown part '\(unknown)'; the parts are \(allParts.joined(separator: ", "))")
                }
                parts = allParts.filter { chosen.contains($0) }
            case _ where argument.hasPrefix("--") && counts[name] != nil:
                guard let value = rest.popFirst() else { throw UsageError("\(argument) needs a count") }
                guard let count = Int(value), count > 0, count <= 100_000_000 else {
                    throw UsageError("\(argument) takes a count from 1 to 100000000, got '\(value)'")
                }
                counts[name] = count
            default:
                throw UsageError("unknown argument '\(argument)'")
            }
        }
        if counts["exchanges"]! < 2 { throw UsageError("--exchanges must be at least 2 (the first and the last answer differ)") }
    }
}

struct UsageError: Error {
    var message: String
    init(_ message: String) { self.message = message }
}

