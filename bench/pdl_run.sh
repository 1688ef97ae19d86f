#!/usr/bin/env bash
# One call on a CUDA machine (about 8 minutes on an H200) for programmatic dependent launch
# (src/gpu/driver.c, kiln_grid_wait in kernels/vendor/cuda.h): build the library and the GPU
# conformance programs, then
#   the torch GPU tests (tests/python/test_torch.py TestCUDA: dependent calls back to back,
#   CUDA graph capture),
#   BENCH.md suites 1 and 3 (bench/reference_benchmark.py --only reference,decode) with each
#   kiln tier twice in the same run: as queued by default and with KILN_GPU_PDL=0 (the
#   "-nopdl" contenders),
#   the GPU test entries (ctest -L gpu, default tier),
#   compute-sanitizer memcheck over the paged conformance program.
# Files go to $OUT (or $TMPDIR/kiln-pdl-run): summary.txt (printed at the end), tests.log,
# torch_gpu.log, memcheck.log, suites.txt and the suites' JSON / PNG.
#   bash bench/pdl_run.sh
set -u
out=${OUT:-${TMPDIR:-/tmp}/kiln-pdl-run}
mkdir -p "$out"
jobs=$(nproc 2>/dev/null || echo 4)
[ "$jobs" -gt 16 ] && jobs=16
build=${KILN_BUILD_DIR:-/tmp/kiln-pdl-build}
sum="$out/summary.txt"
step() { echo "$1: rc=$2, $(( $(date +%s) - t0 )) s" >> "$sum"; }
{
  date -u +%Y-%m-%dT%H:%M:%SZ
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv
} > "$sum" 2>&1

t0=$(date +%s)
# Everything (the Python fast path's extension too, so suite 1's host column is the binding
# users get; every GPU test program, so ctest -L gpu runs all of them).
if ! { cmake -S . -B "$build" -DKILN_BUILD_TESTS=ON -DCMAKE_BUILD_TYPE=Release \
         -DKILN_COMPILE_MATRIX=OFF &&
       cmake --build "$build" -j "$jobs"; } > /tmp/kiln-pdl-build.log 2>&1; then
  tail -40 /tmp/kiln-pdl-build.log | tee -a "$sum"
  exit 1
fi
step build 0

export KILN_CACHE_DIR=${TMPDIR:-/tmp}/kiln-pdl-cache
rm -rf "$KILN_CACHE_DIR"
export PYTHONPATH=$PWD/python KILN_LIBRARY=$build/libkiln.so

t0=$(date +%s)
timeout 120 python3 tests/python/test_torch.py -v TestCUDA > "$out/torch_gpu.log" 2>&1
step "torch GPU tests" $?

t0=$(date +%s)
timeout 260 python3 bench/reference_benchmark.py --only reference,decode --out "$out" \
  --kiln-tiers hopper,hopper-nopdl,tensor,tensor-nopdl > "$out/suites.txt" 2>&1
step "suites 1 and 3" $?

t0=$(date +%s)
KILN_TEST_BACKEND=cuda timeout 130 ctest --test-dir "$build" -L gpu --output-on-failure \
  -j "$jobs" --timeout 120 > "$out/tests.log" 2>&1
step "ctest -L gpu" $?

t0=$(date +%s)
KILN_TEST_BACKEND=cuda timeout 70 compute-sanitizer --tool memcheck --error-exitcode 3 \
  "$build/tests/test_conformance_paged" gpu > /tmp/kiln-memcheck.log 2>&1
step "memcheck test_conformance_paged gpu" $?
tail -30 /tmp/kiln-memcheck.log > "$out/memcheck.log"

{
  grep -E "tests passed|tests failed|\*\*\*|Failed|Not Run" "$out/tests.log" | tail -15
  grep -E "^(Ran|OK|FAILED)|FAIL:|ERROR:|Error|dependent" "$out/torch_gpu.log" | tail -14
  grep -E "ERROR SUMMARY|checks (passed|FAILED)|Invalid" "$out/memcheck.log" | head -6
  grep -E "^S=" "$out/suites.txt"
  sed -n '/^decode (TB\/s)/,$p' "$out/suites.txt"
} >> "$sum"
cat "$sum"
