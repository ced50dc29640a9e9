#!/bin/sh
# Builds the Debian package secbridge_<version>_amd64.deb from a release build, with dpkg-deb:
#
#   /usr/bin/secbridge, /usr/bin/secbridge-tools                 the tools (stripped)
#   /usr/lib/secbridge/libSecbridgeACR122IFD.so                  the simulated ACR122U's pcscd driver,
#                                                                 with the Swift runtime libraries it
#                                                                 links (found there by simulate/demo)
#   /usr/share/man/man1/secbridge*.1.gz                          a man page per command and subcommand
#   /usr/share/bash-completion/completions/secbridge             bash completion
#   /usr/share/zsh/vendor-completions/_secbridge                 zsh completion (Debian's zsh path)
#   /usr/share/secbridge/credentials/*.json                      example credential files
#   /usr/share/doc/secbridge/{copyright,changelog.gz,changelog.Debian.gz}
#
# The same files as scripts/install.sh installs under a prefix, laid out as Debian Policy asks.
# Depends: the libpcsclite1 and pcscd versions installed when it was built (>=), and what
# dpkg-shlibdeps finds the binaries need (libc6, libgcc-s1, libstdc++6 for the driver's runtime);
# Recommends: libedit2 (`secbridge shell` opens it with dlopen). The version is
# SecbridgeVersion.current (Sources/PCSCCore/Version.swift).
#
#   scripts/package-deb.sh [--output DIR] [--bin-path DIR]
#
# --output DIR writes the .deb there (default: the repository's .build/deb); --bin-path DIR packages
# what an earlier `swift build -c release` left in DIR instead of building. Prints the .deb's path.
# Lintian's findings and why the warnings stay: docs/versioning.md §4.
set -eu
REPO=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
OUT="$REPO/.build/deb"
BIN=""
while [ $# -gt 0 ]; do
    case "$1" in
        --output) [ $# -ge 2 ] || { echo "package-deb: --output needs a directory" >&2; exit 64; }; OUT=$2; shift 2 ;;
        --bin-path) [ $# -ge 2 ] || { echo "package-deb: --bin-path needs a directory" >&2; exit 64; }; BIN=$2; shift 2 ;;
        -h|--help) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "package-deb: unknown argument '$1'; use --output DIR or --bin-path DIR" >&2; exit 64 ;;
    esac
done
# The packaging tools, from Debian (installed here when missing and running as root, as
# scripts/install-deps.sh does for the test tools; the tests do not need them).
TOOL_PACKAGES="dpkg-dev fakeroot chrpath binutils"
missing=""
for p in $TOOL_PACKAGES; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
done
if [ -n "$missing" ]; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "package-deb: missing packages:$missing (apt-get install$missing, as root)" >&2
        exit 1
    fi
    echo "package-deb: apt-get install$missing" >&2
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q $missing >/dev/null
fi
VERSION=$(sed -n 's/^ *public static let current = "\([0-9][0-9.]*\)"$/\1/p' "$REPO/Sources/PCSCCore/Version.swift")
[ -n "$VERSION" ] || { echo "package-deb: no version in Sources/PCSCCore/Version.swift" >&2; exit 1; }
# The Debian revision: the first packaging of this upstream version.
DEB_VERSION="$VERSION-1"
ARCH=$(dpkg --print-architecture)

cd "$REPO"
if [ -z "$BIN" ]; then
    LOG=$(mktemp)
    echo "package-deb: building (swift build -c release)…" >&2
    if ! swift build -c release >"$LOG" 2>&1; then
        cat "$LOG" >&2; rm -f "$LOG"
        echo "package-deb: the build failed (see above)" >&2
        exit 1
    fi
    rm -f "$LOG"
    BIN=$(swift build -c release --show-bin-path)
fi
for file in secbridge secbridge-tools libSecbridgeACR122IFD.so; do
    [ -f "$BIN/$file" ] || { echo "package-deb: $BIN/$file is missing; build first (swift build -c release)" >&2; exit 1; }
done

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
ROOT="$WORK/root"
LIB="$ROOT/usr/lib/secbridge"
MAN="$ROOT/usr/share/man/man1"
DOC="$ROOT/usr/share/doc/secbridge"
install -d "$ROOT/usr/bin" "$LIB" "$MAN" "$ROOT/usr/share/bash-completion/completions" \
    "$ROOT/usr/share/zsh/vendor-completions" "$ROOT/usr/share/secbridge/credentials" "$DOC" "$ROOT/DEBIAN"
install -m 755 "$BIN/secbridge" "$BIN/secbridge-tools" "$ROOT/usr/bin/"
install -m 644 "$BIN/libSecbridgeACR122IFD.so" "$LIB/"
# The driver links the Swift runtime dynamically (as scripts/install.sh explains): its libraries
# from the toolchain beside it.
ldd "$BIN/libSecbridgeACR122IFD.so" | awk '$2 == "=>" && $3 ~ /\/lib\/swift\// { print $3 }' |
    while read -r runtime; do install -m 644 "$runtime" "$LIB/"; done
strip --strip-all --remove-section=.comment "$ROOT/usr/bin/secbridge" "$ROOT/usr/bin/secbridge-tools"
strip --strip-unneeded --remove-section=.comment "$LIB"/*.so*
# SwiftPM links the driver with RUNPATH <toolchain>/usr/lib/swift/linux:$ORIGIN; installed, its
# runtime is the copy beside it ($ORIGIN), and a path into the build machine's toolchain would
# load another runtime wherever one happens to be there (lintian: custom-library-search-path).
chrpath -r '$ORIGIN' "$LIB/libSecbridgeACR122IFD.so" >/dev/null
install -m 644 Fixtures/credentials/*.json "$ROOT/usr/share/secbridge/credentials/"

# Man pages and completions from the command tree, by the packaged binary.
"$ROOT/usr/bin/secbridge" --generate-man "$MAN"
# secbridge-tools is what secbridge runs for some of its commands (docs/test-infrastructure.md,
# "Start-up time: one binary or two"): its page is secbridge(1).
printf '.so man1/secbridge.1\n' >"$MAN/secbridge-tools.1"
gzip -9n "$MAN"/*.1
"$ROOT/usr/bin/secbridge" --generate-completion bash >"$ROOT/usr/share/bash-completion/completions/secbridge"
"$ROOT/usr/bin/secbridge" --generate-completion zsh >"$ROOT/usr/share/zsh/vendor-completions/_secbridge"
chmod 644 "$ROOT/usr/share/bash-completion/completions/secbridge" "$ROOT/usr/share/zsh/vendor-completions/_secbridge"

DATE=$(date -u -R -d "@$(git log -1 --format=%ct 2>/dev/null || date +%s)")
# Who distributes the package: SECBRIDGE_DEB_MAINTAINER ("Name <address>"); the default is a
# placeholder in a domain reserved for examples (RFC 2606), since the project has no maintainer
# address of its own.
MAINTAINER=${SECBRIDGE_DEB_MAINTAINER:-"secbridge maintainers <secbridge@example.org>"}
gzip -9nc CHANGELOG.md >"$DOC/changelog.gz"
printf 'secbridge (%s) unstable; urgency=medium\n\n  * Package of secbridge %s (CHANGELOG.md holds the upstream changes).\n\n -- %s  %s\n' \
    "$DEB_VERSION" "$VERSION" "$MAINTAINER" "$DATE" | gzip -9nc >"$DOC/changelog.Debian.gz"
# The Swift runtime copied beside the driver is the toolchain's (Apache License 2.0 with Runtime
# Library Exception); secbridge's own files: the project's terms (docs/versioning.md).
cat >"$DOC/copyright" <<EOF
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: secbridge
Source: secbridge's git repository

Files: *
Copyright: 2026 secbridge contributors
License: Apache-2.0

Files: usr/lib/secbridge/libswift* usr/lib/secbridge/libdispatch.so usr/lib/secbridge/libBlocksRuntime.so
Copyright: Apple Inc. and the Swift project authors
License: Apache-2.0 with Runtime Library Exception
 The Swift runtime libraries the simulated reader's driver links, copied from the Swift toolchain.

License: Apache-2.0
 On Debian systems the full text of the Apache License 2.0 is in
 /usr/share/common-licenses/Apache-2.0.
EOF
chmod 644 "$DOC"/*

# Dependencies: the pcsc-lite versions this was built and tested against, and the shared
# libraries' packages from dpkg-shlibdeps (which needs a debian/control to run in).
PCSCLITE=$(dpkg-query -W -f '${Version}' libpcsclite1)
PCSCD=$(dpkg-query -W -f '${Version}' pcscd 2>/dev/null || true)
[ -n "$PCSCD" ] || { echo "package-deb: pcscd is not installed; scripts/install-deps.sh installs it" >&2; exit 1; }
mkdir -p "$WORK/src/debian"
printf 'Source: secbridge\n\nPackage: secbridge\nArchitecture: any\n' >"$WORK/src/debian/control"
SHLIBS=$(cd "$WORK/src" && dpkg-shlibdeps -O --ignore-missing-info -l"$LIB" \
    "$ROOT/usr/bin/secbridge" "$ROOT/usr/bin/secbridge-tools" "$LIB"/*.so* 2>/dev/null |
    sed -n 's/^shlibs:Depends=//p')
# libpcsclite1 comes from shlibs too, with a lower bound than what was built against: ours wins.
SHLIBS=$(printf '%s' "$SHLIBS" | tr ',' '\n' | sed 's/^ *//' | grep -v '^libpcsclite1\b' | paste -sd, - | sed 's/,/, /g')
DEPENDS="libpcsclite1 (>= $PCSCLITE), pcscd (>= $PCSCD)${SHLIBS:+, $SHLIBS}"
SIZE=$(du -sk --exclude=DEBIAN "$ROOT" | cut -f1)
cat >"$ROOT/DEBIAN/control" <<EOF
Package: secbridge
Version: $DEB_VERSION
Architecture: $ARCH
Maintainer: $MAINTAINER
Installed-Size: $SIZE
Depends: $DEPENDS
Recommends: libedit2
Section: utils
Priority: optional
Description: SecureElementCredential sessions on PC/SC NFC readers
 secbridge brings Apple's SecureElementCredential session model (credential
 sessions, presentment assertions, transactions, card emulation) to NFC and
 smart-card readers through PC/SC (pcsc-lite), records every exchange as a
 transcript and replays it. A simulated ACS ACR122U reader (a pcscd driver)
 stands in for hardware: "secbridge demo" runs a whole session on two of them.
EOF
# Every file the package installs, for dpkg's own record (md5sums).
(cd "$ROOT" && find usr -type f -print0 | sort -z | xargs -0 md5sum) >"$ROOT/DEBIAN/md5sums"
chmod 644 "$ROOT/DEBIAN/control" "$ROOT/DEBIAN/md5sums"
find "$ROOT" -type d -exec chmod 755 {} +

mkdir -p "$OUT"
DEB="$OUT/secbridge_${DEB_VERSION}_$ARCH.deb"
fakeroot dpkg-deb --build -Zxz "$ROOT" "$DEB" >/dev/null
echo "$DEB"
