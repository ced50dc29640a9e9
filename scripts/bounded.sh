#!/bin/sh
# Runs a command under a bound: when it has not ended after SECONDS, says what it was doing
# (every thread's backtrace of each test process, through gdb, and every Swift Testing test that
# started and did not end), then ends it and exits 124. A hang then fails in minutes, with its
# cause on the page, instead of running into CI's own limit with nothing said.
#
#   scripts/bounded.sh SECONDS LOG command [arguments…]
#
# The command's standard output and error go to the terminal and to LOG (the list of unfinished
# tests is read from it). Exit status: the command's, or 124 when the bound ended it, or 2 on a
# usage error.
set -eu
if [ $# -lt 3 ]; then
    echo "usage: scripts/bounded.sh SECONDS LOG command [arguments…]" >&2
    exit 2
fi
case "$1" in
    '' | *[!0-9]* | 0)
        echo "bounded: SECONDS must be a whole number of seconds, 1 or more (got '$1')" >&2
        exit 2
        ;;
esac
BOUND=$1
LOG=$2
shift 2
: >"$LOG"
# The command in a session of its own (setsid), so that the bound can end it and all it started;
# its output goes to LOG, and tail shows LOG as it grows until the command has ended. An
# interrupt of this script ends that session too.
setsid "$@" >>"$LOG" 2>&1 &
COMMAND=$!
trap 'kill -TERM "-$COMMAND" 2>/dev/null; exit 130' INT TERM
tail -n +1 -f --pid="$COMMAND" "$LOG" &
SHOW=$!
# The watchdog: one sleep for the whole bound (no polling), then the report and the kill.
(
    trap 'kill "$nap" 2>/dev/null; exit 0' TERM
    sleep "$BOUND" &
    nap=$!
    wait "$nap"
    {
        echo
        echo "bounded: '$*' has not ended after $BOUND s; what it is doing:"
        for pid in $(pgrep -g "$COMMAND" -f 'xctest' || true); do
            echo "--- process $pid: $(tr '\0' ' ' </proc/"$pid"/cmdline 2>/dev/null)"
            gdb -p "$pid" -batch -ex 'thread apply all bt 24' 2>/dev/null \
                | grep -E '^(Thread|#)' | head -n 3000 || true
        done
        echo "--- Swift Testing tests that started and did not end:"
        # (A sharded run, scripts/sharded-test.sh, writes each shard's output to LOG.shardK.)
        for file in "$LOG" "$LOG".shard*; do [ -f "$file" ] && sed 's/\x1b\[[0-9;]*m//g' "$file"; done | awk '
            /^. Test .* started\.$/ { name = $0; sub(/^. Test /, "", name); sub(/ started\.$/, "", name); open[name] = 1 }
            /^. Test .* (passed|failed|skipped)/ { name = $0; sub(/^. Test /, "", name); sub(/ (passed|failed|skipped).*$/, "", name); delete open[name] }
            END { for (name in open) print "  " name }'
    } >&2
    echo ended >"$LOG.bound"
    kill -TERM "-$COMMAND" 2>/dev/null || true
    sleep 5 &
    nap=$!
    wait "$nap"
    kill -KILL "-$COMMAND" 2>/dev/null || true
) &
WATCHDOG=$!
code=0
wait "$COMMAND" || code=$?
kill "$WATCHDOG" 2>/dev/null || true
wait "$WATCHDOG" 2>/dev/null || true
wait "$SHOW" 2>/dev/null || true
if [ -f "$LOG.bound" ]; then
    rm -f "$LOG.bound"
    exit 124
fi
exit "$code"
