#!/bin/sh
# The main job on the embedded default (the simulated ACR122U pair): installs what it needs,
# builds, and runs `secbridge demo` — a credential session emulating an NFC Forum Type 4 Tag on one
# simulated ACR122U while a second one, as the terminal, reads it, all through a private pcscd.
#
#   scripts/demo.sh [demo options…]      e.g. scripts/demo.sh --record /tmp/demo.trn
set -eu
REPO=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
cd "$REPO"
sh scripts/install-deps.sh >/dev/null
# Everything, including the simulated ACR122U's pcscd driver that the private pcscd loads.
# The build log is shown only when the build fails (it is kept in a temporary file until then).
LOG=$(mktemp)
trap 'rm -f "$LOG"' EXIT
echo "demo: building (swift build)…" >&2
if ! swift build >"$LOG" 2>&1; then
    cat "$LOG" >&2
    echo "demo: the build failed (see above)" >&2
    exit 1
fi
BIN=$(swift build --show-bin-path)
test -x "$BIN/secbridge" || { cat "$LOG" >&2; echo "demo: the build left no secbridge binary (see above)" >&2; exit 1; }
rm -f "$LOG"
trap - EXIT
exec "$BIN/secbridge" demo "$@"
