#!/usr/bin/env bash
# One call on a CUDA machine: build, describe the device, time the JIT (BENCH.md suite 7),
# run the test suite with the GPU backends required. Logs and JSON go to $OUT (or
# $TMPDIR/kiln-gpu-run); the last lines printed are the summary.
#   bash bench/gpu_run.sh [jit_bench args...]
set -u
out=${OUT:-${TMPDIR:-/tmp}/kiln-gpu-run}
mkdir -p "$out"
jobs=$(nproc 2>/dev/null || echo 4)
{
  date -u +%Y-%m-%dT%H:%M:%SZ
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv
  nvcc --version 2>/dev/null | tail -2
  uname -a
  nproc
} > "$out/machine.txt" 2>&1

if ! { cmake -S . -B build -DCMAKE_BUILD_TYPE=Release && cmake --build build -j "$jobs"; } \
     > "$out/build.log" 2>&1; then
  tail -40 "$out/build.log"
  exit 1
fi
cc -O2 -std=c11 -Iinclude -Isrc -Isrc/core -Isrc/gpu bench/jit_bench.c build/libkiln.a \
   -lpthread -ldl -lm -o build/jit_bench >> "$out/build.log" 2>&1

./build/kiln info --json > "$out/info.json" 2>&1
./build/jit_bench --json "$out/jit.json" "$@" > "$out/jit.log" 2>&1
jit_rc=$?

export KILN_CACHE_DIR="$out/../kiln-cache-ctest"
rm -rf "$KILN_CACHE_DIR"
# The compile-matrix tests need no GPU (CI runs them); leaving them out keeps the GPU's time
# for what only it can check.
KILN_TEST_BACKEND=cuda ctest --test-dir build --output-on-failure -j "$jobs" --timeout 300 \
  -E compile_matrix > "$out/ctest.log" 2>&1
ctest_rc=$?
./build/kiln cache ls > "$out/cache_ls.txt" 2>&1

cat "$out/machine.txt"
grep -E '"(device_name|target|compute_units|driver_version|version)"' "$out/info.json" | head -12
tail -12 "$out/jit.log"
tail -3 "$out/cache_ls.txt"
grep -E "tests passed|tests failed|\*\*\*|Failed|Passed|Skipped" "$out/ctest.log" | tail -40
echo "jit_bench rc=$jit_rc ctest rc=$ctest_rc"
