#!/usr/bin/env bash
# One call on a CUDA machine (about 5 minutes on an H200) comparing the decode kernel
# (kernels/decode.cu) of this tree with another revision's, on BENCH.md suite 3:
#   1. builds the tree (with the tests) and a copy whose kernels/decode.cu comes from
#      $PRE_DIR (e.g. mkdir -p .prev && git show HEAD~1:kernels/decode.cu > .prev/decode.cu)
#   2. the torch GPU tests and ctest -L gpu on the tree, memcheck over the paged
#      conformance program
#   3. suite 3 (bench/reference_benchmark.py --only decode --kiln-tiers tensor) on each
#      build in turn, twice (new, pre, new, pre): copy, cuDNN and flash in every run
# DECODE_SHAPES (e.g. 8:4096,1:32768) narrows suite 3 to those (batch, KV length) pairs.
# With PRE_ENV instead of PRE_DIR (e.g. PRE_ENV=KILN_GPU_PDL=0), pre is the same build
# run with those environment settings: a switch read when the context starts.
# With ALT_DIR set, a third build (alt) whose kernels/decode.cu comes from there runs after
# pre in each pass. SKIP_TORCH=1 leaves the torch GPU tests out (a minute and a half).
# Files go to $OUT: summary.txt (the tables), decode_{new,pre,alt}_{1,2}.json, logs.tgz.
#   PRE_DIR=$PWD/.prev bash bench/decode_ab.sh
set -u
out=${OUT:-${TMPDIR:-/tmp}/kiln-decode-ab}
work=/tmp/kiln-dab
rm -rf "$work"
mkdir -p "$out" "$work/logs"
logs=$work/logs
jobs=$(nproc 2>/dev/null || echo 4)
[ "$jobs" -gt 16 ] && jobs=16
sum="$out/summary.txt"
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" >> "$sum"; }
{
  date -u +%Y-%m-%dT%H:%M:%SZ
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
} > "$sum" 2>&1
pre_env=${PRE_ENV:-}
[ -n "$pre_env" ] || [ -f "${PRE_DIR:-}/decode.cu" ] ||
  { echo "PRE_DIR/decode.cu is missing (or set PRE_ENV)" >> "$sum"; cat "$sum"; exit 1; }

b=$work/build
pre=$work/pre
mkdir -p "$pre/src"
cp -r CMakeLists.txt CMakePresets.json cmake include src kernels tools tests bench python \
  "$pre/src/" 2>/dev/null
[ -z "$pre_env" ] && cp "$PRE_DIR/decode.cu" "$pre/src/kernels/decode.cu"
{ cmake -S . -B $b -DKILN_BUILD_TESTS=ON -DCMAKE_BUILD_TYPE=Release -DKILN_COMPILE_MATRIX=OFF &&
  cmake --build $b -j "$jobs"; } > "$logs/build.log" 2>&1 &
p1=$!
p2=""
if [ -z "$pre_env" ]; then
  { cmake -S "$pre/src" -B "$pre/build" -DKILN_BUILD_TESTS=OFF -DCMAKE_BUILD_TYPE=Release &&
    cmake --build "$pre/build" -j "$jobs"; } > "$logs/build_pre.log" 2>&1 &
  p2=$!
fi
alts="new pre"
r3=0
if [ -n "${ALT_DIR:-}" ]; then
  alts="new pre alt"
  altb=$work/alt
  mkdir -p "$altb/src"
  cp -r "$pre/src/." "$altb/src/"
  cp "$ALT_DIR/decode.cu" "$altb/src/kernels/decode.cu"
  { cmake -S "$altb/src" -B "$altb/build" -DKILN_BUILD_TESTS=OFF -DCMAKE_BUILD_TYPE=Release &&
    cmake --build "$altb/build" -j "$jobs"; } > "$logs/build_alt.log" 2>&1
  r3=$?
fi
wait $p1; r1=$?
r2=0; [ -n "$p2" ] && { wait "$p2"; r2=$?; }
stamp "built rc=$r1/$r2/$r3"
if [ $r1 -ne 0 ] || [ $r2 -ne 0 ] || [ $r3 -ne 0 ]; then
  tail -30 "$logs"/build*.log >> "$sum"
  cat "$sum"
  exit 1
fi
export PYTHONPATH=$PWD/python

# Correctness first: what a short call has time for.
KILN_TEST_BACKEND=cuda KILN_CACHE_DIR=$work/cache timeout 130 ctest --test-dir $b -L gpu \
  --output-on-failure -j "$jobs" --timeout 120 > "$logs/ctest.log" 2>&1
stamp "ctest -L gpu rc=$?"
grep -E "tests passed|tests failed|\*\*\*" "$logs/ctest.log" | tail -12 >> "$sum"
if [ -z "${SKIP_TORCH:-}" ]; then
  KILN_LIBRARY=$b/libkiln.so KILN_CACHE_DIR=$work/cache timeout 120 \
    python3 tests/python/test_torch.py -v TestCUDA > "$logs/torch_gpu.log" 2>&1
  stamp "torch GPU tests rc=$?"
  grep -E "^(Ran|OK|FAILED)|FAIL:|ERROR:" "$logs/torch_gpu.log" | tail -8 >> "$sum"
fi

for pass in 1 2; do
  for alt in $alts; do
    lib=$b/libkiln.so
    envs=""
    [ $alt = pre ] && [ -z "$pre_env" ] && lib=$pre/build/libkiln.so
    [ $alt = pre ] && envs=$pre_env
    [ $alt = alt ] && lib=$altb/build/libkiln.so
    mkdir -p "$work/results/$alt$pass"
    env $envs KILN_LIBRARY=$lib KILN_CACHE_DIR=$work/cache.$alt timeout 120 python3 \
      bench/reference_benchmark.py --only decode --kiln-tiers tensor \
      ${DECODE_SHAPES:+--decode-shapes "$DECODE_SHAPES"} \
      --out "$work/results/$alt$pass" > "$logs/decode_${alt}_$pass.log" 2>&1
    stamp "suite 3 $alt pass $pass rc=$?"
    cp "$work/results/$alt$pass"/decode_*.json "$out/decode_${alt}_$pass.json" 2>/dev/null
    sed -n '/^decode (TB\/s)/,$p' "$logs/decode_${alt}_$pass.log" | sed 's/sdpa_efficient - *//' >> "$sum"
  done
done

KILN_TEST_BACKEND=cuda KILN_CACHE_DIR=$work/cache timeout 90 compute-sanitizer --tool memcheck \
  --error-exitcode 3 $b/tests/test_conformance_splits gpu > "$logs/memcheck_splits.log" 2>&1
stamp "memcheck test_conformance_splits rc=$?"
grep -E "ERROR SUMMARY|checks (passed|FAILED)" "$logs/memcheck_splits.log" | head -4 >> "$sum"
KILN_TEST_BACKEND=cuda KILN_CACHE_DIR=$work/cache timeout 90 compute-sanitizer --tool memcheck \
  --error-exitcode 3 $b/tests/test_conformance_paged gpu > "$logs/memcheck.log" 2>&1
stamp "memcheck test_conformance_paged rc=$?"
grep -E "ERROR SUMMARY|checks (passed|FAILED)" "$logs/memcheck.log" | head -4 >> "$sum"
tar czf "$out/logs.tgz" -C "$work" logs
cat "$sum"
