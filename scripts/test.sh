#!/bin/sh
# The test command: installs what the tests need, builds everything, runs every test.
#
#   scripts/test.sh [swift test arguments…]      e.g. scripts/test.sh --filter ISO7816Tests
#
# The end-to-end tests start their own private pcscd (in a private mount namespace, so a system
# pcscd is untouched) with vpcd + vicc and the simulated ACR122U readers: run as root, or where
# unprivileged user namespaces are allowed.
set -eu
REPO=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
cd "$REPO"
sh scripts/install-deps.sh
if [ -f scripts/build-libnfc.sh ]; then sh scripts/build-libnfc.sh; fi
# Build every product first: the tests run the `secbridge` binary and load the simulated
# ACR122U's pcscd driver (libSecbridgeACR122IFD.so) from the build directory.
swift build
exec swift test "$@"
