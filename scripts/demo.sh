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
swift build 2>&1 | grep -v "prohibited flag" >&2 || true
BIN=$(swift build --show-bin-path)
test -x "$BIN/secbridge" || { echo "demo: the build failed (see above)" >&2; exit 1; }
exec "$BIN/secbridge" demo "$@"
