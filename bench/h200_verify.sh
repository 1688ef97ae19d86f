#!/usr/bin/env bash
# One call on an H200 machine that checks a tree end to end in under 10 minutes: build with
# the tests, the GPU conformance entries with the default tier (auto: hopper > tensor >
# generic) and with the tensor tier forced, the CPU conformance on that host's SIMD levels,
# the Python binding's suite (torch on CUDA), compute-sanitizer memcheck over the non-finite
# conformance cases, and BENCH.md suite 2 (kiln's hopper and tensor tiers beside SDPA's
# FlashAttention-2 and cuDNN). Everything is logged to $OUT/verify.log; the benchmark's JSON
# and PNG go to $OUT. Each step has its own time limit.
#   bash bench/h200_verify.sh
set -u
out=${OUT:-${TMPDIR:-/tmp}/kiln-verify}
mkdir -p "$out"
log=$out/verify.log
b=${TMPDIR:-/tmp}/kiln-verify-build
step() { echo "== $1 ($(date -u +%H:%M:%S))" | tee -a "$log"; }
{
  date -u +%Y-%m-%dT%H:%M:%SZ
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'
  nproc
} >> "$log" 2>&1

step build
if ! { cmake -S . -B "$b" -DKILN_BUILD_TESTS=ON -DKILN_COMPILE_MATRIX=OFF \
         -DCMAKE_BUILD_TYPE=Release && cmake --build "$b" -j16; } > "$out/build.txt" 2>&1; then
  tail -40 "$out/build.txt" | tee -a "$log"
  exit 1
fi
rm -f "$out/build.txt"
export KILN_CACHE_DIR=${TMPDIR:-/tmp}/kiln-verify-cache

for tier in auto tensor; do
  step "GPU conformance, KILN_GPU_TIER=$tier"
  limit=$([ "$tier" = auto ] && echo 110 || echo 80)
  KILN_GPU_TIER=$tier KILN_TEST_BACKEND=cuda timeout "$limit" \
    ctest --test-dir "$b" -L '^gpu$' -j6 --output-on-failure --timeout "$limit" >> "$log" 2>&1
  echo "ctest $tier: rc=$?" | tee -a "$log"
done

step "CPU conformance (this host's SIMD levels)"
timeout 30 ctest --test-dir "$b" -R '^conformance(_nonfinite|_empty)?$' -j3 >> "$log" 2>&1
echo "cpu: rc=$?" | tee -a "$log"

step "Python binding (torch on CUDA)"
(cd tests/python && PYTHONPATH=../../python KILN_LIBRARY="$b/libkiln.so" \
   KILN_ABI_PROBE="$b/kiln_python_abi_probe" timeout 200 python3 run.py >> "$log" 2>&1)
echo "python: rc=$?" | tee -a "$log"

for t in nonfinite paged; do
  step "compute-sanitizer memcheck: conformance_$t on the GPU"
  KILN_TEST_BACKEND=cuda timeout 25 compute-sanitizer --tool memcheck --print-limit 20 \
    "$b/tests/test_conformance_$t" gpu > "$out/memcheck.txt" 2>&1
  echo "memcheck $t: rc=$?" | tee -a "$log"
  tail -5 "$out/memcheck.txt" >> "$log"
  rm -f "$out/memcheck.txt"
done

step "suite 3"
KILN_LIBRARY="$b/libkiln.so" PYTHONPATH=python timeout 70 python3 bench/reference_benchmark.py \
  --only decode --kiln-tiers tensor --out "$out" >> "$log" 2>&1
echo "suite 3: rc=$?" | tee -a "$log"

step "suite 2"
KILN_LIBRARY="$b/libkiln.so" PYTHONPATH=python timeout 120 python3 bench/reference_benchmark.py --only prefill \
  --kiln-tiers hopper,tensor --sdpa flash,cudnn --out "$out" >> "$log" 2>&1
echo "suite 2: rc=$?" | tee -a "$log"
step done
grep -E "^ctest|^cpu|^python|^memcheck|^suite|tests passed|ERROR SUMMARY" "$log"
