#!/usr/bin/env bash
# Builds kiln for 64-bit Windows with MinGW-w64 (the windows-mingw preset) and runs, under
# Wine, the whole C test suite and `kiln info --json` (whose output must be valid JSON).
#
#   tests/windows/run-wine.sh            from anywhere; JOBS=n sets build/test parallelism
#
# Exit status: 0 all passed, 1 a step failed, 77 MinGW-w64 or Wine is not installed (1 under
# KILN_TEST_STRICT=1, where a missing tool is a failure).
# The Wine prefix is a fresh temporary folder, removed on exit, so nothing depends on (or
# changes) the user's ~/.wine.
set -euo pipefail

cd "$(dirname "$0")/../.."
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}
BUILD=build-windows-mingw

missing_tool() {
    if [ -n "${KILN_TEST_STRICT:-}" ] && [ "${KILN_TEST_STRICT}" != 0 ]; then
        echo "run-wine: $1; KILN_TEST_STRICT=1 makes a missing tool a failure"
        exit 1
    fi
    echo "run-wine: $1; skipped"
    exit 77
}
if ! command -v x86_64-w64-mingw32-gcc >/dev/null; then
    missing_tool "x86_64-w64-mingw32-gcc not found (Debian: gcc-mingw-w64-x86-64)"
fi
# Debian's `wine` wrapper warns on every start when 32-bit Wine is missing; the 64-bit
# loader runs these 64-bit programs directly.
WINE=""
for candidate in /usr/lib/wine/wine64 /usr/lib64/wine/wine64 "$(command -v wine64 || true)" \
                 "$(command -v wine || true)"; do
    if [ -n "$candidate" ] && [ -x "$candidate" ]; then WINE=$candidate; break; fi
done
if [ -z "$WINE" ]; then
    missing_tool "wine not found (Debian: wine wine64)"
fi
WINESERVER=$(dirname "$WINE")/wineserver
[ -x "$WINESERVER" ] || WINESERVER=$(command -v wineserver)

export WINEPREFIX
WINEPREFIX=$(mktemp -d "${TMPDIR:-/tmp}/kiln-wine.XXXXXX")
export WINEDEBUG=-all
# No Mono or Gecko: nothing here is .NET or HTML, and their installers would ask questions.
export WINEDLLOVERRIDES="mscoree,mshtml="
# The test programs read their Windows variables (LOCALAPPDATA, TEMP) from the prefix; the
# Unix ones would leak into Wine's environment and mislead them.
unset TMPDIR XDG_CACHE_HOME KILN_CACHE_DIR

cleanup() {
    "$WINESERVER" -k >/dev/null 2>&1 || true
    rm -rf "$WINEPREFIX"
}
trap cleanup EXIT

echo "== configure + build ($BUILD)"
cmake --preset windows-mingw
cmake --build --preset windows-mingw -j "$JOBS"

echo "== Wine prefix ($("$WINE" --version))"
# One persistent server for the whole run: otherwise every test program pays for starting
# and stopping it, and parallel tests race to do so. Started first, as -p fails (and does
# nothing) once a server for the prefix runs.
"$WINESERVER" -p || true
"$WINE" wineboot --init >/dev/null 2>&1

status=0
echo "== ctest under Wine"
# Go on to the kiln command even if a test failed: CI should report both.
ctest --test-dir "$BUILD" --output-on-failure -j "$JOBS" --timeout 600 -LE gpu-code || status=1

echo "== kiln.exe info --json"
json="$WINEPREFIX/info.json"
if "$WINE" "$BUILD/kiln.exe" info --json >"$json" && python3 -m json.tool "$json" >/dev/null; then
    echo "valid JSON ($(wc -c <"$json") bytes)"
else
    echo "kiln.exe info --json failed or printed invalid JSON:"
    cat "$json"
    status=1
fi

if [ "$status" -eq 0 ]; then echo "run-wine: all passed"; else echo "run-wine: FAILED"; fi
exit "$status"
