#!/usr/bin/env bash
# One call on a CUDA machine for the decode kernel (kernels/decode.cu): build with the tests,
# run the GPU test entries (ctest -L gpu, default tier), the torch GPU tests (CUDA graph
# capture included), compute-sanitizer memcheck over the paged conformance binary (decode
# shapes run the decode kernel), the split-count sweep (bench/decode_splits.py) and BENCH.md
# suite 3 (bench/reference_benchmark.py --only decode). Logs and JSON go to $OUT (or
# $TMPDIR/kiln-decode-run); the summary is printed last.
#   bash bench/decode_run.sh
set -u
out=${OUT:-${TMPDIR:-/tmp}/kiln-decode-run}
mkdir -p "$out"
jobs=$(nproc 2>/dev/null || echo 4)
[ "$jobs" -gt 16 ] && jobs=16
build=${KILN_BUILD_DIR:-/tmp/kiln-decode-build}
log="$out/log.txt"
{
  date -u +%Y-%m-%dT%H:%M:%SZ
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv
  git log -1 --format='commit %H' 2>/dev/null
} > "$log" 2>&1

t0=$(date +%s)
if ! { cmake -S . -B "$build" -DKILN_BUILD_TESTS=ON -DCMAKE_BUILD_TYPE=Release \
         -DKILN_COMPILE_MATRIX=OFF &&
       cmake --build "$build" -j "$jobs"; } > "$out/build.log" 2>&1; then
  tail -40 "$out/build.log"
  exit 1
fi
echo "build: $(( $(date +%s) - t0 )) s" >> "$log"

export KILN_CACHE_DIR=${TMPDIR:-/tmp}/kiln-decode-cache
rm -rf "$KILN_CACHE_DIR"
export PYTHONPATH=$PWD/python KILN_LIBRARY=$build/libkiln.so

t0=$(date +%s)
KILN_TEST_BACKEND=cuda timeout 200 ctest --test-dir "$build" -L gpu --output-on-failure \
  -j "$jobs" --timeout 190 > "$out/ctest_gpu.log" 2>&1
ctest_rc=$?
echo "ctest -L gpu: rc=$ctest_rc, $(( $(date +%s) - t0 )) s" >> "$log"

t0=$(date +%s)
timeout 150 python3 tests/python/test_torch.py -v TestCUDA > "$out/torch_gpu.log" 2>&1
torch_rc=$?
echo "torch GPU tests: rc=$torch_rc, $(( $(date +%s) - t0 )) s" >> "$log"

t0=$(date +%s)
KILN_TEST_BACKEND=cuda timeout 150 compute-sanitizer --tool memcheck --error-exitcode 3 \
  "$build/tests/test_conformance_paged" gpu > "$out/memcheck.log" 2>&1
mc_rc=$?
echo "memcheck test_conformance_paged gpu: rc=$mc_rc, $(( $(date +%s) - t0 )) s" >> "$log"

t0=$(date +%s)
timeout 90 python3 bench/decode_splits.py "$out/decode_splits.json" > "$out/decode_splits.txt" 2>&1
echo "split sweep: rc=$?, $(( $(date +%s) - t0 )) s" >> "$log"

t0=$(date +%s)
timeout 200 python3 bench/reference_benchmark.py --only decode --out "$out" \
  > "$out/suite3.txt" 2>&1
echo "suite 3: rc=$?, $(( $(date +%s) - t0 )) s" >> "$log"

cat "$log"
grep -E "tests passed|tests failed|\*\*\*|Failed|Not Run" "$out/ctest_gpu.log" | tail -15
grep -E "^(Ran|OK|FAILED)|FAIL:|ERROR:|cuda graph" "$out/torch_gpu.log" | tail -12
grep -E "ERROR SUMMARY|checks (passed|FAILED)|Invalid" "$out/memcheck.log" | head -6
cat "$out/decode_splits.txt"
sed -n '/^decode (TB\/s)/,$p' "$out/suite3.txt"
