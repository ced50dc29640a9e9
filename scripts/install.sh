#!/bin/sh
# Builds secbridge in release mode and installs it under a prefix (default /usr/local):
#
#   PREFIX/bin/secbridge, PREFIX/bin/secbridge-tools        the tools (side by side: secbridge runs
#                                                            secbridge-tools for the commands it holds)
#   PREFIX/lib/secbridge/libSecbridgeACR122IFD.so           the simulated ACR122U's pcscd driver, found
#                                                            there by `simulate` and `demo`, with the
#                                                            Swift runtime libraries it needs
#   PREFIX/share/man/man1/secbridge*.1                      a man page per command and subcommand
#   PREFIX/share/bash-completion/completions/secbridge      bash completion
#   PREFIX/share/zsh/site-functions/_secbridge              zsh completion
#   PREFIX/share/secbridge/credentials/*.json               example credential files (Fixtures/credentials)
#
# The man pages and completions are generated from the command tree by the installed binary
# (`secbridge --generate-man DIR`, `secbridge --generate-completion bash|zsh`). Nothing installed
# refers to the source tree: the copy keeps working after the clone is moved or deleted.
#
#   scripts/install.sh [--prefix DIR] [--bin-path DIR]
#
# --bin-path DIR installs what an earlier `swift build` left in DIR (e.g. .build/debug) instead of
# building release (the install test uses it).
set -eu
REPO=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
PREFIX=/usr/local
BIN=""
while [ $# -gt 0 ]; do
    case "$1" in
        --prefix) [ $# -ge 2 ] || { echo "install: --prefix needs a directory" >&2; exit 64; }; PREFIX=$2; shift 2 ;;
        --prefix=*) PREFIX=${1#--prefix=}; shift ;;
        --bin-path) [ $# -ge 2 ] || { echo "install: --bin-path needs a directory" >&2; exit 64; }; BIN=$2; shift 2 ;;
        --bin-path=*) BIN=${1#--bin-path=}; shift ;;
        -h|--help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "install: unknown argument '$1'; use --prefix DIR or --bin-path DIR" >&2; exit 64 ;;
    esac
done
[ -n "$PREFIX" ] || { echo "install: --prefix is empty" >&2; exit 64; }
case "$PREFIX" in /*) ;; *) PREFIX=$(pwd)/$PREFIX ;; esac

if [ -z "$BIN" ]; then
    cd "$REPO"
    # The build log is shown only when the build fails.
    LOG=$(mktemp)
    trap 'rm -f "$LOG"' EXIT
    echo "install: building (swift build -c release)…" >&2
    if ! swift build -c release >"$LOG" 2>&1; then
        cat "$LOG" >&2
        echo "install: the build failed (see above)" >&2
        exit 1
    fi
    BIN=$(swift build -c release --show-bin-path)
fi
for file in secbridge secbridge-tools libSecbridgeACR122IFD.so; do
    [ -f "$BIN/$file" ] || { echo "install: $BIN/$file is missing; build first (swift build -c release)" >&2; exit 1; }
done

LIB="$PREFIX/lib/secbridge"
MAN="$PREFIX/share/man/man1"
BASH_DIR="$PREFIX/share/bash-completion/completions"
ZSH_DIR="$PREFIX/share/zsh/site-functions"
DATA="$PREFIX/share/secbridge"
install -d "$PREFIX/bin" "$LIB" "$MAN" "$BASH_DIR" "$ZSH_DIR" "$DATA/credentials"
install -m 755 "$BIN/secbridge" "$BIN/secbridge-tools" "$PREFIX/bin/"
install -m 644 "$BIN/libSecbridgeACR122IFD.so" "$LIB/"
# The driver links the Swift runtime dynamically (pcscd loads it; its runpath is the toolchain's
# directory, then $ORIGIN): copies of the libraries ldd finds in the toolchain's runtime directory
# (…/lib/swift/linux) beside it keep it loading where no toolchain is installed.
ldd "$BIN/libSecbridgeACR122IFD.so" | awk '$2 == "=>" && $3 ~ /\/lib\/swift\// { print $3 }' |
    while read -r runtime; do install -m 644 "$runtime" "$LIB/"; done
install -m 644 "$REPO"/Fixtures/credentials/*.json "$DATA/credentials/"

rm -f "$MAN"/secbridge.1 "$MAN"/secbridge-*.1
"$PREFIX/bin/secbridge" --generate-man "$MAN"
"$PREFIX/bin/secbridge" --generate-completion bash >"$BASH_DIR/secbridge"
"$PREFIX/bin/secbridge" --generate-completion zsh >"$ZSH_DIR/_secbridge"

echo "install: installed secbridge $("$PREFIX/bin/secbridge" --version | sed 's/^secbridge //') under $PREFIX"
echo "install: $(ls "$MAN"/secbridge*.1 | wc -l) man pages in $MAN; completions in $BASH_DIR and $ZSH_DIR"
case ":$PATH:" in *":$PREFIX/bin:"*) ;; *) echo "install: $PREFIX/bin is not on PATH" ;; esac
