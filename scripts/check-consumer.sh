#!/bin/sh
# Builds and tests Examples/Consumer, a package that depends on this one by version, the way a
# package outside the repository does: `.package(url: "file://…", from: VERSION)` on a git tag.
#
#   scripts/check-consumer.sh [--keep]
#
# Steps: clones the repository's HEAD commit into a temporary directory, tags the clone with the
# version of Sources/PCSCCore/Version.swift (SecbridgeVersion.current), copies the clone's
# Examples/Consumer beside it, and runs `swift build --build-tests` and `swift test --skip-build`
# there with SECBRIDGE_URL=file://<clone> and SECBRIDGE_VERSION=<version>. SwiftPM then treats
# secbridge as a remote dependency: it refuses any library product one of whose targets (or their
# dependencies) carries unsafe build flags, which a path dependency (the package's default, for
# `cd Examples/Consumer && swift test` in a clone) is exempt from. The consumer uses every library
# product a user builds on (SecbridgeTesting, SecureElementCredential, PCSC, ISO7816, Transcript,
# PN53x, NFCTags) and its test runs a CredentialSession against a simulated phone with no pcscd.
#
# Only committed work is checked (the clone is of HEAD). --keep leaves the temporary directory and
# prints its path. Exits 0 when the consumer built and its tests passed, 1 otherwise. Run time on
# the 2-core machine: docs/versioning.md, "The consumer check".
set -eu
REPO=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
KEEP=0
for arg in "$@"; do
    case "$arg" in
        --keep) KEEP=1 ;;
        -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "check-consumer: unknown argument '$arg' (only --keep)" >&2; exit 64 ;;
    esac
done
VERSION=$(sed -n 's/^ *public static let current = "\([0-9][0-9.]*\)"$/\1/p' "$REPO/Sources/PCSCCore/Version.swift")
[ -n "$VERSION" ] || { echo "check-consumer: no version in Sources/PCSCCore/Version.swift" >&2; exit 1; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/secbridge-consumer.XXXXXX")
if [ "$KEEP" -eq 0 ]; then trap 'rm -rf "$WORK"' EXIT; fi
START=$(date +%s)
git clone -q "$REPO" "$WORK/secbridge"
# The tag a release carries (-f: the clone may already hold it from the original).
git -C "$WORK/secbridge" -c user.name=check-consumer -c user.email=check-consumer@localhost \
    tag -f -a "$VERSION" -m "secbridge $VERSION (scripts/check-consumer.sh)" >/dev/null
cp -R "$WORK/secbridge/Examples/Consumer" "$WORK/consumer"
echo "check-consumer: secbridge $VERSION at $(git -C "$WORK/secbridge" rev-parse --short HEAD), consumer in $WORK/consumer" >&2

cd "$WORK/consumer"
export SECBRIDGE_URL="file://$WORK/secbridge" SECBRIDGE_VERSION="$VERSION"
LOG="$WORK/build.log"
if ! nice swift build --build-tests >"$LOG" 2>&1; then
    cat "$LOG" >&2
    echo "check-consumer: the consumer package did not build against secbridge $VERSION (output above)" >&2
    exit 1
fi
BUILT=$(date +%s)
resolved=$(sed -n 's/.*"version" *: *"\(.*\)".*/\1/p' Package.resolved | head -1)
if [ "$resolved" != "$VERSION" ]; then
    echo "check-consumer: Package.resolved holds secbridge '$resolved', not the tag $VERSION" >&2
    exit 1
fi
if ! swift test --skip-build >"$WORK/test.log" 2>&1; then
    cat "$WORK/test.log" >&2
    echo "check-consumer: the consumer's tests failed (output above)" >&2
    exit 1
fi
grep -E '^(✔|􁁛|.*Test run with)' "$WORK/test.log" | tail -3 >&2 || true
END=$(date +%s)
echo "check-consumer: ok, secbridge $VERSION by version: build $((BUILT - START)) s, test $((END - BUILT)) s" >&2
if [ "$KEEP" -eq 1 ]; then echo "check-consumer: kept $WORK" >&2; fi
