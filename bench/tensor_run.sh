#!/usr/bin/env bash
# One call on a CUDA machine for the tensor (mma.sync) tier: build the library, the CLI and
# the GPU conformance programs, run the GPU conformance suites with the tier forced
# (KILN_GPU_TIER=tensor), then BENCH.md suite 2 (prefill) with the tier forced beside SDPA's
# flash (FlashAttention-2) and cuDNN backends. Logs and JSON go to $OUT (at most 8 files).
#   bash bench/tensor_run.sh [extra reference_benchmark.py args]
set -u
out=${OUT:-${TMPDIR:-/tmp}/kiln-tensor-run}
build=${KILN_BUILD_DIR:-/tmp/kiln-tensor-build}
mkdir -p "$out"
jobs=$(nproc 2>/dev/null || echo 4)
[ "$jobs" -gt 16 ] && jobs=16
log="$out/run.log"
{
  date -u +%Y-%m-%dT%H:%M:%SZ
  git log --oneline -1 2>/dev/null
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv
} > "$log" 2>&1

tests="test_conformance test_conformance_paged test_conformance_random test_conformance_splits
       test_conformance_threads test_conformance_varlen test_conformance_empty
       test_conformance_nonfinite test_activation"
if ! { cmake -S . -B "$build" -DKILN_BUILD_TESTS=ON -DCMAKE_BUILD_TYPE=Release &&
       cmake --build "$build" -j "$jobs" --target kiln kiln_tool $tests; } > "$out/build.log" 2>&1; then
  tail -40 "$out/build.log"
  exit 1
fi

export KILN_CACHE_DIR=${TMPDIR:-/tmp}/kiln-tensor-cache
rm -rf "$KILN_CACHE_DIR"

KILN_GPU_TIER=tensor KILN_TEST_BACKEND=cuda timeout 240 \
  ctest --test-dir "$build" -L '^gpu$' --output-on-failure -j "$jobs" --timeout 230 \
  > "$out/ctest_tensor.log" 2>&1
ctest_rc=$?

KILN_LIBRARY="$build/libkiln.so" PYTHONPATH=python timeout 300 \
  python3 bench/reference_benchmark.py --only prefill --kiln-tiers tensor --sdpa flash,cudnn \
  --out "$out" "$@" > "$out/prefill.log" 2>&1
bench_rc=$?

{
  echo "== ctest -L gpu, KILN_GPU_TIER=tensor (rc $ctest_rc)"
  grep -E "tests passed|tests failed|\*\*\*|Failed|FAIL" "$out/ctest_tensor.log" | head -30
  echo "== prefill (rc $bench_rc)"
  grep -E "^prefill|TFLOP|failed|Error|error" "$out/prefill.log" | head -60
} >> "$log"
cat "$log"
