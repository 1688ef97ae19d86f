#!/bin/sh
# The wheels as a user gets them (issue 14): run from anywhere, after nothing else.
#   1. make wheel; its file list; pip install --no-index into a venv (--system-site-packages
#      for numpy); from a folder outside the repository, `python -m kiln` must report the
#      library inside the installed package, a numpy attention call must match a float64
#      reference, and the installed `kiln` command must run.
#   2. GPU_ARCHS="gfx1151;gfx1201" make wheel: the wheel carries both targets' code objects
#      and manifest, and the installed library lists them in `kiln info` without
#      KILN_AOT_DIR.
#   3. make wheel-windows (MinGW-w64) with code objects for gfx942 (CDNA, which Windows
#      cannot run), gfx1151 and sm_80 (silu_and_mul only, to keep it short): kiln.dll and
#      kiln.exe inside, gfx942 left out.
# KILN_PACKAGING_WORK keeps the work folder (default: a fresh temporary one, removed on
# success); JOBS sets build parallelism. Exits non-zero on the first failure; 77 (skipped)
# when a tool it needs is not installed, 1 then under KILN_TEST_STRICT=1. ctest runs it as
# the `packaging` test.
set -eu

root=$(cd "$(dirname "$0")/../.." && pwd)
here="$root/tests/packaging"
jobs=${JOBS:-2}
python=${PYTHON:-/usr/bin/python3}
step() { printf '\n== %s\n' "$*"; }

missing_tool() {
    if [ -n "${KILN_TEST_STRICT:-}" ] && [ "${KILN_TEST_STRICT}" != 0 ]; then
        echo "FAIL (KILN_TEST_STRICT=1: a missing tool is a failure) packaging: $1"
        exit 1
    fi
    echo "SKIP packaging: $1"
    exit 77
}
# Every tool the steps below use, checked before any of them runs.
command -v make >/dev/null || missing_tool "make not found (Debian: make)"
[ -x "$python" ] || command -v "$python" >/dev/null ||
    missing_tool "$python not found (Debian: python3)"
for module in setuptools wheel build venv ensurepip numpy; do
    "$python" -c "import $module" 2>/dev/null || missing_tool "$python cannot import $module \
(Debian: python3-setuptools python3-wheel python3-build python3-venv python3-numpy)"
done
"$python" -c "import sysconfig, os, sys; \
sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()['include'], 'Python.h')))" ||
    missing_tool "no Python.h for the fast path (Debian: python3-dev)"
clang=""
for c in clang-19 clang-20 clang-18 clang; do
    if command -v "$c" >/dev/null; then clang=$c; break; fi
done
[ -n "$clang" ] || missing_tool "no clang for the gfx code objects (Debian: clang-19 lld-19)"
command -v x86_64-w64-mingw32-gcc >/dev/null ||
    missing_tool "x86_64-w64-mingw32-gcc not found (Debian: gcc-mingw-w64-x86-64)"
if [ -z "${KILN_NVRTC_PATH:-}" ] && ! ldconfig -p 2>/dev/null | grep -q 'libnvrtc\.so' &&
   ! ls /usr/local/cuda*/lib*/libnvrtc.so* >/dev/null 2>&1; then
    missing_tool "NVRTC not found for the sm_80 code objects (the CUDA toolkit's \
libnvrtc.so, or KILN_NVRTC_PATH)"
fi

work=${KILN_PACKAGING_WORK:-$(mktemp -d /tmp/kiln-packaging.XXXXXX)}
mkdir -p "$work"
# The package is checked as installed: nothing from the source tree may leak in.
unset KILN_LIBRARY PYTHONPATH KILN_AOT_DIR

step "make wheel"
make -C "$root" wheel PYTHON="$python" JOBS="$jobs" DIST="$work/dist" \
    KILN_WHEEL_BUILD_DIR="$work/build-wheel" >"$work/wheel.log" 2>&1 ||
    { tail -40 "$work/wheel.log"; exit 1; }
wheel=$(ls "$work"/dist/kiln-*-py3-none-*.whl)
"$python" "$here/check_wheel.py" "$wheel"

step "pip install --no-index into a venv"
"$python" -m venv --system-site-packages "$work/venv"
"$work/venv/bin/pip" install --no-index --quiet "$wheel"

step "python -m kiln and a numpy call, outside the repository"
cd "$work"
"$work/venv/bin/python" -m kiln >"$work/kiln.json"
"$work/venv/bin/python" "$here/installed.py" "$work/kiln.json" "$work/venv"
"$work/venv/bin/kiln" --version

step "GPU_ARCHS=\"gfx1151;gfx1201\" make wheel"
make -C "$root" wheel PYTHON="$python" JOBS="$jobs" DIST="$work/dist-aot" \
    KILN_WHEEL_BUILD_DIR="$work/build-wheel-aot" GPU_ARCHS="gfx1151;gfx1201" \
    >"$work/wheel-aot.log" 2>&1 || { tail -40 "$work/wheel-aot.log"; exit 1; }
wheel=$(ls "$work"/dist-aot/kiln-*-py3-none-*.whl)
"$python" "$here/check_wheel.py" "$wheel" --aot gfx1151 gfx1201
"$python" -m venv --system-site-packages "$work/venv-aot"
"$work/venv-aot/bin/pip" install --no-index --quiet "$wheel"
"$work/venv-aot/bin/kiln" info --json >"$work/info-aot.json"
"$work/venv-aot/bin/python" "$here/installed.py" --aot gfx1151 gfx1201 -- \
    "$work/info-aot.json" "$work/venv-aot"

step "make wheel-windows (MinGW-w64), with gfx942, gfx1151 and sm_80 objects"
"$work/build-wheel/kiln" build --targets "gfx942,gfx1151,sm_80" --filter silu_and_mul \
    --out "$work/aot-windows" >"$work/aot-windows.log" 2>&1 ||
    { tail -20 "$work/aot-windows.log"; exit 1; }
make -C "$root" wheel-windows PYTHON="$python" JOBS="$jobs" DIST="$work/dist-windows" \
    KILN_WHEEL_BUILD_DIR="$work/build-wheel-windows" KILN_WHEEL_AOT_DIR="$work/aot-windows" \
    KILN_HOST_KILN="$work/build-wheel/kiln" >"$work/wheel-windows.log" 2>&1 ||
    { tail -40 "$work/wheel-windows.log"; exit 1; }
wheel=$(ls "$work"/dist-windows/kiln-*-py3-none-win_amd64.whl)
"$python" "$here/check_wheel.py" "$wheel" --aot gfx1151 sm_80

step "all packaging checks passed"
if [ -z "${KILN_PACKAGING_WORK:-}" ]; then rm -rf "$work"; fi
