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
swift build --build-tests
# Every run has a bound: a whole run takes under a minute of test time on the 2-core machine
# (docs/test-infrastructure.md, "Sharded runs"), so one that has not ended after SECBRIDGE_TEST_BOUND seconds
# (default 900) hangs. scripts/bounded.sh then prints every thread's backtrace and the tests that
# started and did not end, ends the run and exits 124; the run's output stays in
# .build/secbridge-test.log.
#
# Without arguments the run is sharded (scripts/sharded-test.sh): eight test processes side by
# side, one test at a time in each, each with its own private pcscd, so that the serialized shared-reader group does not set
# the run's length. With arguments (a --filter, say), or SECBRIDGE_TEST_SHARDS=0, one `swift test`
# process runs them as before.
if [ $# -eq 0 ] && [ "${SECBRIDGE_TEST_SHARDS:-1}" != 0 ]; then
    BUNDLE="$(swift build --show-bin-path)/secbridgePackageTests.xctest"
    exec sh scripts/bounded.sh "${SECBRIDGE_TEST_BOUND:-900}" .build/secbridge-test.log sh scripts/sharded-test.sh "$BUNDLE" .build/secbridge-test.log
fi
exec sh scripts/bounded.sh "${SECBRIDGE_TEST_BOUND:-900}" .build/secbridge-test.log swift test --skip-build "$@"
