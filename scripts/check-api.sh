#!/bin/sh
# The public-API check: `swift package diagnose-api-breaking-changes` against the baseline commit
# in api/baseline-commit, for every library product, with the accepted breakages of
# api/breakage-allowlist.txt (api/README.md). Exits 0 when nothing incompatible changed, 1 when
# something did (the digester's messages name each change), 64 on a usage error.
#
#   scripts/check-api.sh [BASELINE]      BASELINE: a commit or tag instead of api/baseline-commit
#
# The digester checks the baseline out into .build/<triple>/apidiff and builds it there: the
# repository needs its history (a shallow clone: `git fetch --unshallow`). Run time:
# docs/versioning.md §3.
set -eu
REPO=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
cd "$REPO"
case "${1:-}" in
    -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "check-api: unknown option $1" >&2; exit 64 ;;
esac
[ $# -le 1 ] || { echo "check-api: at most one baseline" >&2; exit 64; }
BASELINE=${1:-$(sed -n '/^[0-9a-f]\{40\}$/p' api/baseline-commit | head -1)}
[ -n "$BASELINE" ] || { echo "check-api: api/baseline-commit holds no commit hash" >&2; exit 1; }
if ! git rev-parse --verify -q "$BASELINE^{commit}" >/dev/null; then
    echo "check-api: the baseline $BASELINE is not in this repository's history (a shallow clone? git fetch --unshallow)" >&2
    exit 1
fi
LOG=$(mktemp)
trap 'rm -f "$LOG"' EXIT
START=$(date +%s)
status=0
nice swift package diagnose-api-breaking-changes "$BASELINE" \
    --breakage-allowlist-path "$REPO/api/breakage-allowlist.txt" >"$LOG" 2>&1 || status=$?
END=$(date +%s)
# The modules' verdicts and every breakage line, without the build's progress lines.
grep -E 'breaking change|API breakage|ABI breakage|error:' "$LOG" >&2 || true
if [ "$status" -ne 0 ] && ! grep -qE 'API breakage|ABI breakage' "$LOG"; then
    cat "$LOG" >&2
    echo "check-api: swift package diagnose-api-breaking-changes failed without naming a breakage (output above; a build error?)" >&2
    exit 1
fi
if [ "$status" -ne 0 ]; then
    echo "check-api: the public API changed incompatibly since $BASELINE ($((END - START)) s): restore it, or note the change in CHANGELOG.md and add the lines above to api/breakage-allowlist.txt" >&2
    exit 1
fi
echo "check-api: no incompatible change since $BASELINE ($((END - START)) s)" >&2
