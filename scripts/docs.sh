#!/bin/sh
# Builds the documentation site with the toolchain's own `docc`, and checks that every public
# symbol has a doc comment.
#
#   scripts/docs.sh [MODULE…]            build and check every documented module (default: all)
#   scripts/docs.sh PCSC ISO7816         only these modules
#   scripts/docs.sh --no-build [MODULE…] skip `swift build` (use the modules already built)
#   scripts/docs.sh --list               the module names
#   scripts/docs.sh --help
#
# The modules are the targets of the package's library products, and every target with a catalog
# Sources/<Module>/<Module>.docc. Each needs that catalog, with a landing page <Module>.md.
#
# Steps: `swift build` (debug; only the module and its dependencies when one module is named), then
# per module a symbol graph from `swift symbolgraph-extract` (no SwiftPM plugin is needed, none can
# be fetched here), and:
#   1. the doc-comment check: every public or open symbol in the module's symbol graphs has a doc
#      comment of its own, or a documentation extension in the catalog (a macro's generated
#      `$name` has no source to comment). Synthesized members, and members whose comment comes
#      from the protocol or class they implement (a `description` without a comment shows
#      CustomStringConvertible's), are not counted. Undocumented symbols are listed by module,
#      file and line.
#   2. `docc convert` of the catalog with the module's symbol graphs, `--warnings-as-errors` (an
#      unresolved ``Symbol`` link, a topic that names nothing, … fail the run) and
#      `--transform-for-static-hosting`, into .build/docs/<Module> (SECBRIDGE_DOCS_OUTPUT names
#      another directory). Each archive is a static site whose base path is /<Module>: serve the
#      output directory, e.g. `python3 -m http.server -d .build/docs`, and open
#      http://localhost:8000/<Module>/documentation/<module>/ (the module name in lowercase).
#
# Exits 0 when every module passed, 1 when any failed (each failure is named), 64 on a usage error.
# Run time (28 to 127 s for every module after a `swift build`, on the 2-core machine) and the
# facts the steps rest on: docs/test-infrastructure.md, "Documentation (scripts/docs.sh)".
set -eu
REPO=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
cd "$REPO"
OUTPUT="${SECBRIDGE_DOCS_OUTPUT:-$REPO/.build/docs}"
WORK="$REPO/.build/docs-work"
PYTHON=/usr/bin/python3

usage() {
    # The comment at the top of this file, up to `set -eu`.
    sed -n '2,/^set -eu/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
}

fail_usage() {
    echo "docs: $*" >&2
    echo "usage: scripts/docs.sh [--no-build] [MODULE…] | --list | --help" >&2
    exit 64
}

BUILD=1
LIST=0
REQUESTED=""
for arg in "$@"; do
    case "$arg" in
        -h|--help) usage; exit 0 ;;
        --no-build) BUILD=0 ;;
        --list) LIST=1 ;;
        -*) fail_usage "unknown option $arg" ;;
        *) REQUESTED="$REQUESTED $arg" ;;
    esac
done

command -v docc >/dev/null 2>&1 || { echo "docs: docc not found on PATH (it ships with the Swift toolchain, next to swift)" >&2; exit 1; }
[ -x "$PYTHON" ] || { echo "docs: $PYTHON not found (scripts/install-deps.sh installs python3-venv, which brings it)" >&2; exit 1; }

# The library products' targets, then any other target with a catalog.
all_modules() {
    swift package dump-package | "$PYTHON" -c '
import json, os, sys
package = json.load(sys.stdin)
names = []
for product in package["products"]:
    if "library" in product["type"]:
        names += [t for t in product["targets"] if t not in names]
for target in package["targets"]:
    name = target["name"]
    if name not in names and os.path.isdir(f"Sources/{name}/{name}.docc"):
        names.append(name)
print(" ".join(names))
'
}

ALL=$(all_modules)
if [ "$LIST" -eq 1 ]; then
    for m in $ALL; do echo "$m"; done
    exit 0
fi
MODULES="${REQUESTED:-$ALL}"
for m in $MODULES; do
    case " $ALL " in
        *" $m "*) ;;
        *) fail_usage "$m is not a documented module (scripts/docs.sh --list names them)" ;;
    esac
done

START=$(date +%s)
GRAPHS="$WORK/symbolgraph"
TRIPLE=$(swift -print-target-info | "$PYTHON" -c 'import json, sys; print(json.load(sys.stdin)["target"]["unversionedTriple"])')
BIN=$(swift build --show-bin-path)
if [ "$BUILD" -eq 1 ]; then
    # One module: build only it and what it needs. Several: the whole package (a no-op after the
    # `swift build` of scripts/test.sh).
    set -- $MODULES
    if [ "$#" -eq 1 ]; then target="--target $1"; else target=""; fi
    echo "docs: swift build $target" >&2
    mkdir -p "$WORK"
    log="$WORK/build.log"
    # shellcheck disable=SC2086
    if ! nice swift build $target >"$log" 2>&1; then
        cat "$log" >&2
        echo "docs: swift build failed (output above)" >&2
        exit 1
    fi
fi
# The symbol graphs, with the flags `swift package dump-symbol-graph` passes (that command also
# tries the test runner's modules and exits 1 when it cannot load them). The C targets' module
# maps are named so that a module importing one (PCSC imports CPCSCLite) loads.
mkdir -p "$GRAPHS"
for m in $MODULES; do
    if [ ! -f "$BIN/Modules/$m.swiftmodule" ]; then
        echo "docs: $m: no $BIN/Modules/$m.swiftmodule: run without --no-build, or swift build first" >&2
        exit 1
    fi
    rm -f "$GRAPHS/$m.symbols.json" "$GRAPHS/$m"@*.symbols.json
    set -- -module-name "$m" -target "$TRIPLE" -module-cache-path "$BIN/ModuleCache" -I "$BIN/Modules" \
        -minimum-access-level public -skip-synthesized-members -omit-extension-block-symbols \
        -output-dir "$GRAPHS"
    for map in Sources/*/include/module.modulemap; do
        set -- "$@" -Xcc "-fmodule-map-file=$REPO/$map" -Xcc -I -Xcc "$REPO/$(dirname "$map")"
    done
    if ! swift symbolgraph-extract "$@" >"$WORK/$m.extract.log" 2>&1; then
        cat "$WORK/$m.extract.log" >&2
        echo "docs: $m: swift symbolgraph-extract failed (output above)" >&2
        exit 1
    fi
done
BUILT=$(date +%s)

FAILED=""
for m in $MODULES; do
    catalog="Sources/$m/$m.docc"
    if [ ! -f "$catalog/$m.md" ]; then
        echo "docs: $m: no catalog landing page $catalog/$m.md" >&2
        FAILED="$FAILED $m"
        continue
    fi
    if [ ! -f "$GRAPHS/$m.symbols.json" ]; then
        echo "docs: $m: no symbol graph $GRAPHS/$m.symbols.json (is $m a Swift target?)" >&2
        FAILED="$FAILED $m"
        continue
    fi
    # The module's own graph and the graphs of its extensions to other modules' types.
    dir="$WORK/graphs/$m"
    rm -rf "$dir"
    mkdir -p "$dir"
    cp "$GRAPHS/$m.symbols.json" "$dir"/
    for f in "$GRAPHS/$m"@*.symbols.json; do
        [ -f "$f" ] && cp "$f" "$dir"/
    done

    module_ok=1
    if ! "$PYTHON" - "$m" "$REPO" "$catalog" "$dir"/*.symbols.json <<'EOF'
import json, os, re, sys
module, repo, catalog, files = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
seen, missing = set(), []
# Symbols a documentation extension in the catalog documents (`# ``Module/Type/member``` and
# text under it): the way to document one the compiler generates from a macro (the `$name` of a
# `@TaskLocal` property), which has no source a comment could sit on.
extended = set()
for root, _, names in os.walk(catalog):
    for name in names:
        if not name.endswith(".md"):
            continue
        with open(os.path.join(root, name), encoding="utf-8") as f:
            lines = [line.strip() for line in f]
        text = [line for line in lines if line]
        title = re.fullmatch(r"# ``(?:" + re.escape(module) + r"/)?(.+)``", text[0]) if text else None
        if title and len(text) > 1:
            extended.add(title.group(1))
for path in files:
    with open(path, encoding="utf-8") as f:
        graph = json.load(f)
    for symbol in graph.get("symbols", []):
        precise = symbol["identifier"]["precise"]
        if precise in seen or "::SYNTHESIZED::" in precise:
            continue
        seen.add(precise)
        if symbol.get("accessLevel") not in ("public", "open"):
            continue
        doc = symbol.get("docComment")
        # A comment from another module is the protocol's or superclass's (inherited): not counted.
        if doc and doc.get("module", module) != module:
            continue
        if doc and any(line.get("text", "").strip() for line in doc.get("lines", [])):
            continue
        if "/".join(symbol.get("pathComponents", [])) in extended:
            continue
        location = symbol.get("location", {})
        uri = location.get("uri", "")
        if uri.startswith("file://"):
            uri = uri[len("file://"):]
        if uri.startswith(repo + "/"):
            uri = uri[len(repo) + 1:]
        line = location.get("position", {}).get("line", -1) + 1
        title = ".".join(symbol.get("pathComponents", [])) or symbol["names"]["title"]
        missing.append((uri, line, symbol["kind"]["displayName"], title))
if missing:
    missing.sort()
    for uri, line, kind, title in missing:
        print(f"{uri}:{line}: {module}: {kind} {title} has no doc comment")
    print(f"docs: {module}: {len(missing)} public symbol(s) without a doc comment", file=sys.stderr)
    sys.exit(1)
EOF
    then
        module_ok=0
    fi

    out="$OUTPUT/$m"
    rm -rf "$out"
    mkdir -p "$OUTPUT"
    bundle=$(printf '%s' "$m" | tr '[:upper:]' '[:lower:]')
    if ! docc convert "$catalog" \
        --additional-symbol-graph-dir "$dir" \
        --output-dir "$out" \
        --fallback-display-name "$m" \
        --fallback-bundle-identifier "org.secbridge.$bundle" \
        --transform-for-static-hosting \
        --hosting-base-path "$m" \
        --warnings-as-errors >"$WORK/$m.docc.log" 2>&1; then
        cat "$WORK/$m.docc.log" >&2
        echo "docs: $m: docc convert failed or warned (output above)" >&2
        module_ok=0
    elif grep -q 'warning:' "$WORK/$m.docc.log"; then
        cat "$WORK/$m.docc.log" >&2
        echo "docs: $m: docc warned (output above)" >&2
        module_ok=0
    fi
    if [ "$module_ok" -eq 1 ]; then
        echo "docs: $m: ok, $out" >&2
    else
        FAILED="$FAILED $m"
    fi
done

END=$(date +%s)
echo "docs: symbol graphs $((BUILT - START)) s, docc and checks $((END - BUILT)) s" >&2
if [ -n "$FAILED" ]; then
    echo "docs: failed:$FAILED" >&2
    exit 1
fi
echo "docs: every module documented; the site is in $OUTPUT" >&2
