#!/bin/sh
# The main job on the embedded default: installs what it needs, builds, and runs secbridge's
# reader path against a private pcscd with a virtual reader (vpcd) and card (vicc).
set -eu
REPO=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
cd "$REPO"
sh scripts/install-deps.sh >/dev/null
# Everything, including the simulated ACR122U's pcscd driver that the private pcscd loads.
swift build 2>&1 | grep -v "prohibited flag" >&2 || true
BIN=$(swift build --show-bin-path)
test -x "$BIN/secbridge" || { echo "demo: the build failed (see above)" >&2; exit 1; }
TRANSCRIPT=${TMPDIR:-/tmp}/secbridge-demo.trn
exec "$BIN/secbridge-testbed" -- /bin/sh -c '
set -e
bin=$1; transcript=$2
echo "\$ secbridge readers"; "$bin/secbridge" readers
echo; echo "\$ secbridge send --record $transcript 00 A4 00 0C 02 3F 00  (SELECT MF)"
"$bin/secbridge" send --record "$transcript" 00 A4 00 0C 02 3F 00
echo; echo "\$ secbridge send 00 A4 04 00 07 D2 76 00 00 85 01 01 00  (SELECT an absent application)"
"$bin/secbridge" send 00 A4 04 00 07 D2 76 00 00 85 01 01 00
echo; echo "\$ secbridge decode atr <the card ATR>"
atr=$("$bin/secbridge" readers --json | sed -n "s/.*\"atr\": \"\\([0-9A-F]*\\)\".*/\\1/p" | head -n 1)
"$bin/secbridge" decode atr "$atr"
echo; echo "\$ cat $transcript"; cat "$transcript"
echo; echo "\$ secbridge replay $transcript"; "$bin/secbridge" replay "$transcript"
' secbridge-demo "$BIN" "$TRANSCRIPT"
