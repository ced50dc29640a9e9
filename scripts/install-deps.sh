#!/bin/sh
# Installs what secbridge's tests need on Debian 12 and prepares vicc's Python environment.
#
# Idempotent: each step checks first and skips work already done, so a second run is fast.
# Needs root for apt-get (CI runs as root); without root it only checks the packages and builds
# the virtual environment.
#
#   scripts/install-deps.sh            install packages (root) and create the venv
#   VICC_VENV=/path scripts/...        put the venv elsewhere (default: <repo>/.venv-vicc)
#   NFCPY_VENV=/path scripts/...       nfcpy's venv elsewhere (default: <repo>/.venv-nfcpy)
#
# A system pcscd started by the package install is left alone: the tests run their own pcscd in
# a private mount namespace (see Sources/PCSCSandbox/PrivatePCSCD.swift).
set -eu

REPO=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
VENV=${VICC_VENV:-"$REPO/.venv-vicc"}
# libpcsc-perl: the PC/SC binding scriptor (pcsc-tools) needs; valgrind and binutils (strip):
# the instruction counts of secbridge-bench (docs/benchmarks.md §2). libstdc++-12-dev (which the
# Swift toolchain itself needs): libstdc++.a, linked into both executables (Linker/static-libstdc++).
PACKAGES="pcscd libpcsclite-dev libedit-dev pcsc-tools libpcsc-perl vsmartcard-vpcd vsmartcard-vpicc python3-venv opensc python3-pyscard groff-base man-db zsh time strace valgrind binutils libstdc++-12-dev"

step() { printf 'install-deps: %s\n' "$*"; }

missing=""
for p in $PACKAGES; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
        missing="$missing $p"
    fi
done

if [ -z "$missing" ]; then
    step "packages present: $PACKAGES"
elif [ "$(id -u)" -ne 0 ]; then
    step "missing packages:$missing; run this script as root to install them" >&2
    exit 1
else
    step "apt-get update"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    step "apt-get install$missing"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

# vicc's module directory: Debian installs it where Python does not search.
if [ -f /usr/lib/python3/site-packages/virtualsmartcard/virtualsmartcard/VirtualSmartcard.py ]; then
    step "vicc module present in /usr/lib/python3/site-packages/virtualsmartcard"
else
    step "vicc module not found (expected /usr/lib/python3/site-packages/virtualsmartcard/virtualsmartcard)" >&2
    exit 1
fi

# The Debian interpreter, never a pyenv shim or the like; never pip into the system Python.
PY=/usr/bin/python3
if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c 'import sys; sys.exit(0 if sys.prefix != sys.base_prefix else 1)' 2>/dev/null; then
    step "venv present: $VENV"
else
    step "create venv $VENV from $PY"
    rm -rf "$VENV"
    "$PY" -m venv "$VENV"
fi

if "$VENV/bin/python" -c 'import Crypto.Cipher.DES3' 2>/dev/null; then
    step "pycryptodome present in $VENV"
else
    step "pip install pycryptodome into $VENV"
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check pycryptodome
fi

# nfcpy (scripts/nfcpy-requirements.txt, pinned) for the tests that run its PN532 driver on the
# simulated serial board. A venv of its own, so vicc's stays as it is. PyPI unreachable fails the
# script (and so CI) here, by name, instead of the tests skipping: pip's socket timeout and retries
# bound each download.
NFCPY_VENV=${NFCPY_VENV:-"$REPO/.venv-nfcpy"}
NFCPY_VERSION=$(sed -n 's/^nfcpy==//p' "$REPO/scripts/nfcpy-requirements.txt")
if [ -x "$NFCPY_VENV/bin/python" ] && "$NFCPY_VENV/bin/python" -c "import sys, nfc; sys.exit(0 if nfc.__version__ == '$NFCPY_VERSION' else 1)" 2>/dev/null; then
    step "nfcpy $NFCPY_VERSION present in $NFCPY_VENV"
else
    if ! "$NFCPY_VENV/bin/python" -c 'import sys; sys.exit(0 if sys.prefix != sys.base_prefix else 1)' 2>/dev/null; then
        step "create venv $NFCPY_VENV from $PY"
        rm -rf "$NFCPY_VENV"
        "$PY" -m venv "$NFCPY_VENV"
    fi
    step "pip install nfcpy $NFCPY_VERSION into $NFCPY_VENV"
    if ! "$NFCPY_VENV/bin/python" -m pip install --quiet --disable-pip-version-check --timeout 30 --retries 2 \
        -r "$REPO/scripts/nfcpy-requirements.txt"; then
        step "pip install of nfcpy failed (is PyPI reachable?); the nfcpy tests need it" >&2
        exit 1
    fi
fi

step "done; vicc runs as: PYTHONPATH=/usr/lib/python3/site-packages/virtualsmartcard $VENV/bin/python /usr/bin/vicc"
