#!/bin/sh
# Builds the fuzz targets of Fuzz/ (libFuzzer with AddressSanitizer) and runs them.
#
#   scripts/fuzz.sh [TARGET] [SECONDS]   run TARGET (default: every target) for SECONDS each (default 300)
#   scripts/fuzz.sh --smoke [SECONDS]    every target for SECONDS each (default 5): what .ci/run does
#   scripts/fuzz.sh --build              build only
#   scripts/fuzz.sh --list               the target names
#
# Seeds: Fuzz/Corpus/<target>/ (hand-made from specifications, and fixture-* files that
# scripts/fuzz-seeds.py derives from Fixtures/ on every run) and Fuzz/Regressions/<target>/.
# What the fuzzer adds is kept in .build-fuzz/corpus/<target>/. A crash, a broken round trip
# (fatalError) or an input that runs longer than 30 s is kept as Fuzz/Findings/<target>/crash-*
# (timeout-*, oom-*): fix it, then move the file to Fuzz/Regressions/<target>/, where the
# FuzzRegressionTests of `swift test` replay it (Fuzz/README.md). Exits 1 when any target failed.
#
# The build: SwiftPM's `--sanitize fuzzer` (without it SwiftPM renames each executable's entry
# point and the link fails, libFuzzer bringing `main`), and `-Xswiftc -sanitize=fuzzer,address` for
# the compiler: SwiftPM passes each `--sanitize` as a `-sanitize=` option of its own, swiftc keeps
# only the last one, and their order changes from build to build (Swift 6.3.1), so
# `--sanitize fuzzer --sanitize address` alone built some objects without coverage. The fuzz
# package depends on the main package by path, so the main build is untouched.
# SECBRIDGE_FUZZ_NO_BUILD=1 skips the build; SECBRIDGE_FUZZ_SCRATCH names another build directory.
set -eu
REPO=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
cd "$REPO"
SCRATCH="${SECBRIDGE_FUZZ_SCRATCH:-$REPO/.build-fuzz}"
TARGETS="command-apdu response-apdu atr historical-bytes ber-tlv fci pn532-frame pn532-uart acr122-reply transcript spy-import credential apdu-script ndef simulator control-line"

usage() {
    echo "usage: scripts/fuzz.sh [TARGET] [SECONDS] | --smoke [SECONDS] | --build | --list" >&2
    echo "targets: $TARGETS" >&2
    exit 64
}

build() {
    echo "fuzz: building the targets in $SCRATCH" >&2
    # ld.gold warns about every AddressSanitizer helper it cannot export; nothing else is dropped.
    mkdir -p "$SCRATCH"
    status=0
    nice swift build --package-path Fuzz --scratch-path "$SCRATCH" \
        --sanitize fuzzer -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library \
        >"$SCRATCH/build.log" 2>&1 || status=$?
    grep -v "Cannot export local symbol" "$SCRATCH/build.log" >&2 || true
    if [ "$status" -ne 0 ]; then
        echo "fuzz: the build failed (exit $status)" >&2
        exit 1
    fi
    for target in $TARGETS; do
        if [ ! -x "$SCRATCH/debug/$target" ]; then
            echo "fuzz: the build did not produce $SCRATCH/debug/$target" >&2
            exit 1
        fi
        # libFuzzer names the coverage counters it found; without them it fuzzes blind.
        if ! SWIFT_BACKTRACE=enable=no "$SCRATCH/debug/$target" -runs=0 2>&1 | grep -q "inline 8-bit counters"; then
            echo "fuzz: $target has no coverage instrumentation: remove $SCRATCH and build again" >&2
            exit 1
        fi
    done
}

# run TARGET SECONDS: prints one summary line; returns 1 when libFuzzer found something.
run() {
    target=$1 seconds=$2
    mkdir -p "$SCRATCH/corpus/$target" "$REPO/Fuzz/Findings/$target"
    log="$SCRATCH/logs/$target.log"
    mkdir -p "$SCRATCH/logs"
    set -- "$SCRATCH/corpus/$target" "$REPO/Fuzz/Corpus/$target"
    if [ -d "$REPO/Fuzz/Regressions/$target" ]; then set -- "$@" "$REPO/Fuzz/Regressions/$target"; fi
    status=0
    # Leaks are not what these targets look for (the Swift runtime's caches live until exit).
    # The Swift runtime's backtracer does not run under AddressSanitizer: libFuzzer prints the stack.
    SWIFT_BACKTRACE=enable=no ASAN_OPTIONS="detect_leaks=0:${ASAN_OPTIONS:-}" nice "$SCRATCH/debug/$target" \
        -max_total_time="$seconds" -timeout=30 -max_len=65536 -detect_leaks=0 -print_final_stats=1 \
        -artifact_prefix="$REPO/Fuzz/Findings/$target/" "$@" >"$log" 2>&1 || status=$?
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    corpus=$(ls "$SCRATCH/corpus/$target" | wc -l)
    if [ "$status" -eq 0 ]; then
        echo "fuzz: $target: ${seconds}s, ${runs:-?} runs, $corpus corpus files added, no crash"
        return 0
    fi
    echo "fuzz: $target: FAILED (exit $status); input kept in Fuzz/Findings/$target/, log $log"
    grep -E "^(==[0-9]+==ERROR|Fatal error|.*property violated|SUMMARY)" "$log" | head -n 5 | sed 's/^/    /'
    return 1
}

seconds=300
case "${1:-}" in
    --list) echo "$TARGETS" | tr ' ' '\n'; exit 0 ;;
    --build) build; exit 0 ;;
    --smoke) selected=$TARGETS; seconds=${2:-5} ;;
    -*) usage ;;
    "") selected=$TARGETS ;;
    *)
        echo " $TARGETS " | grep -q " $1 " || usage
        selected=$1; seconds=${2:-300} ;;
esac
case "$seconds" in ''|*[!0-9]*|0) echo "fuzz: SECONDS must be a whole number of seconds above 0, got '$seconds'" >&2; exit 64 ;; esac

python3 scripts/fuzz-seeds.py
# SECBRIDGE_FUZZ_NO_BUILD=1: the targets are built already (several runs of this script at once
# must not build in one scratch directory together).
if [ "${SECBRIDGE_FUZZ_NO_BUILD:-}" != 1 ]; then build; fi
failed=0
for target in $selected; do
    run "$target" "$seconds" || failed=1
done
exit $failed
