#!/usr/bin/env bash
# One call on a CUDA machine for the decode kernel (kernels/decode.cu), about 6 minutes on
# an H200: build the library and the GPU conformance programs, then
#   the torch GPU tests (tests/python/test_torch.py TestCUDA, CUDA graph capture included),
#   BENCH.md suite 3 (bench/reference_benchmark.py --only decode: B 1 / 8 / 64, KV 4k / 32k,
#   dense / paged 16 / paged 64, against cuDNN, flash, efficient and a device copy),
#   the GPU test entries (ctest -L gpu, default tier: decode shapes run the decode kernel),
#   compute-sanitizer memcheck over the paged conformance program,
#   the split-count sweep (bench/decode_splits.py).
# At most 8 files go to $OUT (or $TMPDIR/kiln-decode-run): summary.txt (printed at the end),
# tests.log, torch_gpu.log, memcheck.log, suite3.txt, decode_splits.json and the suite's
# decode_<gpu>_<date>.json / .png.
# With QUICK=1 (about 3 minutes): the library alone, the decode and CUDA-graph torch tests
# and suite 3; no ctest, memcheck or sweep.
#   bash bench/decode_run.sh
set -u
quick=${QUICK:-0}
out=${OUT:-${TMPDIR:-/tmp}/kiln-decode-run}
mkdir -p "$out"
jobs=$(nproc 2>/dev/null || echo 4)
[ "$jobs" -gt 16 ] && jobs=16
build=${KILN_BUILD_DIR:-/tmp/kiln-decode-build}
sum="$out/summary.txt"
step() { echo "$1: rc=$2, $(( $(date +%s) - t0 )) s" >> "$sum"; }
{
  date -u +%Y-%m-%dT%H:%M:%SZ
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv
  git log -1 --format='commit %H' 2>/dev/null
} > "$sum" 2>&1

t0=$(date +%s)
progs="kiln test_conformance test_conformance_paged test_conformance_random
       test_conformance_splits test_conformance_threads test_conformance_varlen test_activation"
[ "$quick" = 1 ] && progs=kiln
# shellcheck disable=SC2086
if ! { cmake -S . -B "$build" -DKILN_BUILD_TESTS=ON -DCMAKE_BUILD_TYPE=Release \
         -DKILN_COMPILE_MATRIX=OFF -DKILN_BUILD_BENCH=OFF &&
       cmake --build "$build" -j "$jobs" --target $progs; } > /tmp/kiln-decode-build.log 2>&1; then
  tail -40 /tmp/kiln-decode-build.log | tee -a "$sum"
  exit 1
fi
step build 0

export KILN_CACHE_DIR=${TMPDIR:-/tmp}/kiln-decode-cache
rm -rf "$KILN_CACHE_DIR"
export PYTHONPATH=$PWD/python KILN_LIBRARY=$build/libkiln.so

t0=$(date +%s)
if [ "$quick" = 1 ]; then
  timeout 80 python3 tests/python/test_torch.py -v TestCUDA.test_cuda_graph_decode \
    TestCUDA.test_varlen_and_paged_decode > "$out/torch_gpu.log" 2>&1
else
  timeout 110 python3 tests/python/test_torch.py -v TestCUDA > "$out/torch_gpu.log" 2>&1
fi
step "torch GPU tests" $?

t0=$(date +%s)
timeout 130 python3 bench/reference_benchmark.py --only decode --out "$out" \
  > "$out/suite3.txt" 2>&1
step "suite 3" $?

if [ "$quick" != 1 ]; then
t0=$(date +%s)
KILN_TEST_BACKEND=cuda timeout 130 ctest --test-dir "$build" -L gpu --output-on-failure \
  -j "$jobs" --timeout 120 > "$out/tests.log" 2>&1
step "ctest -L gpu" $?

t0=$(date +%s)
KILN_TEST_BACKEND=cuda timeout 70 compute-sanitizer --tool memcheck --error-exitcode 3 \
  "$build/tests/test_conformance_paged" gpu > /tmp/kiln-memcheck.log 2>&1
step "memcheck test_conformance_paged gpu" $?
tail -30 /tmp/kiln-memcheck.log > "$out/memcheck.log"

t0=$(date +%s)
timeout 50 python3 bench/decode_splits.py "$out/decode_splits.json" >> "$out/suite3.txt" 2>&1
step "split sweep" $?
fi

{
  grep -E "tests passed|tests failed|\*\*\*|Failed|Not Run" "$out/tests.log" | tail -15
  grep -E "^(Ran|OK|FAILED)|FAIL:|ERROR:|Error|cuda graph" "$out/torch_gpu.log" | tail -14
  grep -E "ERROR SUMMARY|checks (passed|FAILED)|Invalid" "$out/memcheck.log" | head -6
  sed -n '/^decode (TB\/s)/,$p' "$out/suite3.txt"
} >> "$sum"
cat "$sum"
