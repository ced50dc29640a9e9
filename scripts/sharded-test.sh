#!/bin/sh
# Runs the whole test suite as several test processes side by side (shards), each with its own
# shared private pcscd, and ends with one summary.
#
#   scripts/sharded-test.sh BUNDLE LOG
#
# Why: the suites of the shared-reader group (`SharedReader`, Tests/EndToEndTests/SharedReader.swift)
# run one test at a time, because they share one pcscd and its vicc card, and pcsc-lite's client
# library talks to one pcscd per process. Alone that group takes 136 s of wall time for 4 s of
# CPU (measured 2026-12-07, 2 cores): it waits on pcscd's polling and the simulated readers'
# scaled device waits, and it set the length of the whole run. Split across processes, each with
# its own pcscd, vicc, simulated readers (`/tmp/secbridge-acr122.<pid>`) and part of the vpcd port
# range (`SECBRIDGE_TEST_SHARD=K/N`, FreePort.shardRange), the parts wait side by side. Inside a
# shard the group stays serialized, as before.
#
# The shards are fixed lists of suites and test targets (balanced by their measured times,
# docs/test-infrastructure.md, "Sharded runs"). Each shard's output goes to
# LOG.shardK and is printed whole, in shard order, once it has ended; the last line sums them up.
# Exit status: 0 when every shard passed, else 1 (or the first shard's status above 1).
set -eu
if [ $# -ne 2 ]; then
    echo "usage: scripts/sharded-test.sh BUNDLE LOG" >&2
    exit 2
fi
BUNDLE=$1
LOG=$2
# Suites of the shared-reader group, by shard (1…4). A suite added to the group and not named here
# runs in shard 6, with the rest of the group.
SHARD1='SharedReader/PersonalityEndToEndTests/'
SHARD2='SharedReader/FaultEndToEndTests/'
SHARD3='SharedReader/(UnplugEndToEndTests|SimulatedACR122IFDTests|UnitVariantEndToEndTests)/'
SHARD4='SharedReader/(SecretLeakEndToEndTests|LibnfcDumpTests|DumpTests|ThirdPartyClientTests|PhoneBehaviourEndToEndTests|SelftestTests|TransmitIntoTests)/'
NAMED="--skip $SHARD1 --skip $SHARD2 --skip $SHARD3 --skip $SHARD4"
# One test at a time in each shard (Swift Testing's parallelization width 1; SECBRIDGE_TEST_WIDTH
# overrides it): the eight processes give the parallelism, and each test's reported time is its
# own. With the default width a thousand tests of one process start at once and share the two pool
# threads, so a test of 13 ms reported 10 s, and a real-time bound inside a test (a pcsc_scan
# probe) met the whole process's queue (docs/test-infrastructure.md, "Sharded runs").
WIDTH=${SECBRIDGE_TEST_WIDTH:-1}
COUNT=8
start=$(date +%s)
pids=""
for k in 0 1 2 3 4 5 6 7; do
    # The shards' filters: 0 the libraries' unit tests, 1-4 the named parts of the shared-reader
    # group, 5 the end-to-end suites outside the group, 6 the rest of the group, 7 the CLI tests.
    case $k in
        0) set -- --skip '^EndToEndTests\.' --skip '^SecbridgeCLITests\.' ;;
        5) set -- --filter '^EndToEndTests\.' --skip 'SharedReader/' ;;
        # shellcheck disable=SC2086 # NAMED is a list of words
        6) set -- --filter 'SharedReader/' $NAMED ;;
        7) set -- --filter '^SecbridgeCLITests\.' ;;
        *) eval "pattern=\$SHARD$k"; set -- --filter "$pattern" ;;
    esac
    # A command sh starts in the background has SIGINT and SIGQUIT ignored (POSIX, for a shell
    # without job control), and a child inherits that: env puts them back to the default, as a
    # test process started in the foreground has them (tests spawn programs that must die of them).
    SECBRIDGE_TEST_SHARD="$k/$COUNT" env --default-signal=INT,QUIT "$BUNDLE" --testing-library swift-testing --experimental-maximum-parallelization-width "$WIDTH" "$@" >"$LOG.shard$k" 2>&1 &
    pids="$pids $!"
done
status=0
k=0
for pid in $pids; do
    code=0
    wait "$pid" || code=$?
    echo "=== shard $k of $COUNT (exit status $code) ==="
    cat "$LOG.shard$k"
    if [ "$code" -ne 0 ] && [ "$status" -eq 0 ]; then status=$code; fi
    k=$((k + 1))
done
end=$(date +%s)
echo "=== summary ==="
k=0
while [ "$k" -lt "$COUNT" ]; do
    line=$(sed 's/\x1b\[[0-9;]*m//g' "$LOG.shard$k" | grep -E '^. Test run with ' | tail -n 1 || true)
    echo "shard $k: ${line:-no summary line (the process ended early)}"
    k=$((k + 1))
done
tests=$(sed 's/\x1b\[[0-9;]*m//g' "$LOG".shard* | sed -n 's/^. Test run with \([0-9]*\) tests\{0,1\} .*/\1/p' | awk '{ n += $1 } END { print n + 0 }')
echo "sharded-test: $tests tests in $COUNT processes, $((end - start)) s of wall time, $([ "$status" -eq 0 ] && echo passed || echo FAILED)"
exit "$status"
