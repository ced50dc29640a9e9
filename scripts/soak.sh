#!/bin/sh
# The soak: runs the whole test suite N times back to back on one build and prints each run's
# test time (Swift Testing's summary line; without arguments the run is sharded as scripts/test.sh
# runs it, and the line is scripts/sharded-test.sh's summary) and outcome, then every test that
# failed, with how many runs it failed in. Nothing here fails on wall time: a run fails only when
# a test does.
#
#   scripts/soak.sh N [swift test arguments…]      e.g. scripts/soak.sh 10
#                                                       scripts/soak.sh 20 --filter InProcessPCSCTests
#
# Exit status: 0 when every run passed, 1 when any failed, 2 on a usage error. The logs of the runs
# stay in a temporary directory named at the end (the failing runs' logs are worth reading).
set -eu
REPO=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
cd "$REPO"
if [ $# -lt 1 ]; then
    echo "usage: scripts/soak.sh N [swift test arguments…] (N: how many runs, 1 or more)" >&2
    exit 2
fi
case "$1" in
    '' | *[!0-9]* | 0)
        echo "soak: N must be a whole number of runs, 1 or more (got '$1')" >&2
        exit 2
        ;;
esac
RUNS=$1
shift
sh scripts/install-deps.sh >/dev/null
if [ -f scripts/build-libnfc.sh ]; then sh scripts/build-libnfc.sh >/dev/null; fi
swift build --build-tests
BUNDLE="$(swift build --show-bin-path)/secbridgePackageTests.xctest"
LOGS=$(mktemp -d "${TMPDIR:-/tmp}/secbridge-soak.XXXXXX")
failed_runs=0
run=1
while [ "$run" -le "$RUNS" ]; do
    log="$LOGS/run-$run.log"
    status=0
    # Each run under the same bound as scripts/test.sh: a hung run ends with its backtraces in
    # its log (exit 124) and the soak goes on.
    if [ $# -eq 0 ]; then
        sh scripts/bounded.sh "${SECBRIDGE_TEST_BOUND:-900}" "$log" sh scripts/sharded-test.sh "$BUNDLE" "$log" >/dev/null 2>"$log.bound-report" || status=$?
    else
        sh scripts/bounded.sh "${SECBRIDGE_TEST_BOUND:-900}" "$log" swift test --skip-build "$@" >/dev/null 2>"$log.bound-report" || status=$?
    fi
    if [ -s "$log.bound-report" ]; then cat "$log.bound-report" >>"$log"; fi
    rm -f "$log.bound-report"
    # Swift Testing's last line: "Test run with N tests … passed after S seconds." (or "failed").
    summary=$(grep -a -E 'Test run with|^sharded-test: ' "$log" | tail -n 1 | sed 's/\x1b\[[0-9;]*m//g; s/^[^Ts]*//')
    if [ "$status" -ne 0 ]; then failed_runs=$((failed_runs + 1)); fi
    printf 'run %d/%d: exit %d: %s\n' "$run" "$RUNS" "$status" "${summary:-no summary line (see $log)}"
    run=$((run + 1))
done
echo "runs failed: $failed_runs of $RUNS"
# Every failing test, by name, with the number of runs it failed in (each run counts it once).
failures=$(for log in "$LOGS"/run-*.log; do
    # A sharded run's shards each have a log of their own (LOG.shardK) beside the run's.
    for part in "$log" "$log".shard*; do [ -f "$part" ] && cat "$part"; done \
        | sed 's/\x1b\[[0-9;]*m//g' | grep -a -E '^. Test .* failed after' \
        | sed -E 's/^. Test (.*) failed after.*/\1/' | sort -u
done | sort | uniq -c | sort -rn)
if [ -n "$failures" ]; then
    echo "failing tests (count: name):"
    echo "$failures"
else
    echo "failing tests: none"
fi
echo "logs: $LOGS"
[ "$failed_runs" -eq 0 ]
