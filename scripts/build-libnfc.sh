#!/bin/sh
# Builds libnfc 1.8.0 with its PC/SC drivers (acr122_pcsc, pcsc) and its PN532 serial driver
# (pn532_uart) from Debian's source package, as an independent ACR122 and PN532-board client for
# the end-to-end tests (docs/test-infrastructure.md, "An independent ACR122 client";
# docs/pn532-uart.md §6). Debian's binary libnfc6 has no PC/SC drivers; the source builds them.
#
# Idempotent and fast when already built: a stamp file records the version and configure options;
# a second run with the same ones only checks that nfc-list is there.
#
#   scripts/build-libnfc.sh                      build into <repo>/.build-libnfc
#   LIBNFC_CACHE=/path scripts/build-libnfc.sh   build elsewhere
#
# Layout of the cache directory:
#   src/          the unpacked Debian source (libnfc-1.8.0/)
#   install/bin/  nfc-list, nfc-poll, nfc-emulate-forum-tag4, ... (RUNPATH to install/lib)
#   stamp         "<version> <configure options>" of the finished build
#
# Needs root the first time (apt-get: a deb-src entry, build dependencies, the source package).
# The tests find the tools at <repo>/.build-libnfc/install/bin (or $LIBNFC_CACHE/install/bin) and
# skip the libnfc suite, saying why, when they are missing.
set -eu

REPO=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
CACHE=${LIBNFC_CACHE:-"$REPO/.build-libnfc"}
VERSION=1.8.0
DEBIAN_VERSION=1.8.0-2
DRIVERS=acr122_pcsc,pcsc,pn532_uart
STAMP_TEXT="$DEBIAN_VERSION --with-drivers=$DRIVERS"
BUILD_DEPS="dpkg-dev autoconf automake libtool pkg-config make gcc libc6-dev libusb-dev libpcsclite-dev"
SOURCES_FILE=/etc/apt/sources.list.d/secbridge-deb-src.sources

step() { printf 'build-libnfc: %s\n' "$*"; }
fail() { printf 'build-libnfc: %s\n' "$*" >&2; exit 1; }

if [ -f "$CACHE/stamp" ] && [ "$(cat "$CACHE/stamp")" = "$STAMP_TEXT" ] \
    && [ -x "$CACHE/install/bin/nfc-list" ] && [ -x "$CACHE/install/bin/nfc-emulate-forum-tag4" ]; then
    step "libnfc $DEBIAN_VERSION ($DRIVERS) present in $CACHE/install"
    exit 0
fi

missing=""
for p in $BUILD_DEPS; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
        missing="$missing $p"
    fi
done

need_root() {
    [ "$(id -u)" -eq 0 ] || fail "$1: run this script as root (it needs apt-get)"
}

# A deb-src entry for the suites the system already uses (deb822 or one-line format).
if ! grep -rqs '^[[:space:]]*\(Types:.*deb-src\|deb-src\)' /etc/apt/sources.list /etc/apt/sources.list.d/; then
    need_root "no deb-src entry in /etc/apt"
    if [ -f /etc/apt/sources.list.d/debian.sources ]; then
        step "add deb-src entry $SOURCES_FILE (from debian.sources)"
        sed 's/^Types:[[:space:]]*deb[[:space:]]*$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources >"$SOURCES_FILE"
    elif [ -f /etc/apt/sources.list ]; then
        step "add deb-src lines $SOURCES_FILE.list (from sources.list)"
        sed -n 's/^[[:space:]]*deb[[:space:]]/deb-src /p' /etc/apt/sources.list >"${SOURCES_FILE%.sources}.list"
    else
        fail "cannot find the system's apt sources to derive a deb-src entry from"
    fi
    step "apt-get update"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    updated=yes
fi

if [ -n "$missing" ]; then
    need_root "missing build dependencies:$missing"
    if [ "${updated:-no}" != yes ]; then
        step "apt-get update"
        DEBIAN_FRONTEND=noninteractive apt-get update -qq
    fi
    step "apt-get install$missing"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

mkdir -p "$CACHE/src"
SRC="$CACHE/src/libnfc-$VERSION"
if [ ! -f "$SRC/configure.ac" ]; then
    step "apt-get source libnfc=$DEBIAN_VERSION"
    rm -rf "$SRC"
    # apt-get source as root warns that it cannot drop privileges to _apt for the download: harmless.
    (cd "$CACHE/src" && apt-get source -qq "libnfc=$DEBIAN_VERSION" >/dev/null 2>"$CACHE/src/apt-source.log") \
        || fail "apt-get source libnfc=$DEBIAN_VERSION failed: $(tail -n 5 "$CACHE/src/apt-source.log")"
    [ -f "$SRC/configure.ac" ] || fail "the source package did not unpack into $SRC"
fi

cd "$SRC"
step "autoreconf -vis"
autoreconf -vis >"$CACHE/autoreconf.log" 2>&1 || fail "autoreconf failed, see $CACHE/autoreconf.log"
step "./configure --with-drivers=$DRIVERS --prefix=$CACHE/install"
./configure --with-drivers="$DRIVERS" --prefix="$CACHE/install" --disable-static >"$CACHE/configure.log" 2>&1 \
    || fail "configure failed, see $CACHE/configure.log"
# A tree built with other drivers keeps objects that make does not rebuild when only the
# configure flags changed (libnfc/nfc.c registers the drivers under DRIVER_*_ENABLED): start clean.
make clean >"$CACHE/make.log" 2>&1 || true
step "make (about 20 s)"
make -j2 >>"$CACHE/make.log" 2>&1 || fail "make failed, see $CACHE/make.log"
make install >>"$CACHE/make.log" 2>&1 || fail "make install failed, see $CACHE/make.log"
[ -x "$CACHE/install/bin/nfc-list" ] || fail "make install did not produce $CACHE/install/bin/nfc-list"
printf '%s\n' "$STAMP_TEXT" >"$CACHE/stamp"
step "done: $CACHE/install/bin"
