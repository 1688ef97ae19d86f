#!/usr/bin/env bash
# One call on a CUDA machine for BENCH.md suite 8 (host cost per call) and the GPU test
# entries: builds into /tmp, runs `ctest -L gpu` on the cuda backend, then
# bench/host_bench on the cuda backend. With OLD_SRC naming another kiln source tree, the
# same host_bench.c is also built against that tree's library and run in the same job, so
# the two figures compare. Logs and JSON go to $OUT (or $TMPDIR/kiln-host-run).
#   OLD_SRC=dir bash bench/host_run.sh
set -u
out=${OUT:-${TMPDIR:-/tmp}/kiln-host-run}
mkdir -p "$out"
jobs=$(nproc 2>/dev/null || echo 4)
[ "$jobs" -gt 16 ] && jobs=16
b=${TMPDIR:-/tmp}/kiln-host-build
old=${TMPDIR:-/tmp}/kiln-host-old
{
  date -u +%Y-%m-%dT%H:%M:%SZ
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  git rev-parse HEAD 2>/dev/null
} > "$out/machine.txt" 2>&1
if [ -n "${OLD_SRC:-}" ]; then
  ( cmake -S "$OLD_SRC" -B "$old" -DKILN_BUILD_TESTS=OFF -DKILN_BUILD_TOOLS=OFF \
      -DKILN_BUILD_BENCH=OFF -DCMAKE_BUILD_TYPE=Release &&
    cmake --build "$old" -j "$jobs" --target kiln_static &&
    cc -O2 -std=c11 -I"$OLD_SRC/include" -I"$old/include" -I"$OLD_SRC/src" -I"$OLD_SRC/src/core" \
      bench/host_bench.c "$old/libkiln.a" -lpthread -ldl -lm -o "$old/host_bench" ) \
    > "$out/old_build.log" 2>&1 &
fi
if ! { cmake -S . -B "$b" -DKILN_BUILD_TESTS=ON -DKILN_COMPILE_MATRIX=OFF \
         -DCMAKE_BUILD_TYPE=Release && cmake --build "$b" -j "$jobs"; } > "$out/build.log" 2>&1; then
  tail -40 "$out/build.log"
  exit 1
fi
wait
export KILN_CACHE_DIR=${TMPDIR:-/tmp}/kiln-host-cache
KILN_TEST_BACKEND=cuda timeout 240 ctest --test-dir "$b" -L gpu --output-on-failure \
  -j "$jobs" --timeout 200 > "$out/ctest_gpu.log" 2>&1
ctest_rc=$?
timeout 60 "$b/tests/test_cuda_host" > "$out/cuda_host.log" 2>&1
fake_rc=$?
# Alternating, twice each: the later runs are the ones to quote.
for round in 1 2; do
  timeout 60 "$b/bench/host_bench" --backend cuda --json "$out/host_bench.json" \
    >> "$out/host_bench_new.txt" 2>&1
  if [ -x "$old/host_bench" ]; then
    timeout 60 "$old/host_bench" --backend cuda >> "$out/host_bench_old.txt" 2>&1
  fi
done
tail -3 "$out/ctest_gpu.log"
echo "ctest -L gpu rc=$ctest_rc; test_cuda_host rc=$fake_rc"
for f in "$out"/host_bench_new.txt "$out"/host_bench_old.txt; do
  [ -f "$f" ] && { echo "== $f"; tail -5 "$f"; }
done
