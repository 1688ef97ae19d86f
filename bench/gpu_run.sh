#!/usr/bin/env bash
# One call on a CUDA machine (about 5 minutes on an H200): build with the tests, describe
# the device, time the JIT (BENCH.md suite 7), run the GPU test entries with
# KILN_GPU_TIER=generic and with the default (auto: the tensor tier wherever it covers a
# problem), then time prefill (BENCH.md suite 2: D 64 and 128, S 1k / 4k / 16k with
# B * S = 32k, 16 heads, bf16, causal and not) on both tiers with
# `kiln bench attention --backend cuda`. Logs and JSON go to $OUT (or $TMPDIR/kiln-gpu-run);
# the last lines printed are the summary.
#   bash bench/gpu_run.sh [jit_bench args...]
set -u
out=${OUT:-${TMPDIR:-/tmp}/kiln-gpu-run}
mkdir -p "$out"
jobs=$(nproc 2>/dev/null || echo 4)
[ "$jobs" -gt 16 ] && jobs=16
{
  date -u +%Y-%m-%dT%H:%M:%SZ
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv
  uname -a
  nproc
} > "$out/machine.txt" 2>&1

if ! { cmake -S . -B build -DKILN_BUILD_TESTS=ON -DCMAKE_BUILD_TYPE=Release &&
       cmake --build build -j "$jobs"; } > "$out/build.log" 2>&1; then
  tail -40 "$out/build.log"
  exit 1
fi
./build/kiln info --json > "$out/info.json" 2>&1
timeout 90 ./build/bench/jit_bench --json "$out/jit.json" "$@" > "$out/jit.log" 2>&1
jit_rc=$?

# One compile cache for every run below, so each variant is compiled once; kept out of $OUT.
export KILN_CACHE_DIR=${TMPDIR:-/tmp}/kiln-gpu-run-cache
rm -rf "$KILN_CACHE_DIR"

ctest_rc=()
for tier in generic auto; do
  KILN_GPU_TIER=$tier KILN_TEST_BACKEND=cuda timeout 170 \
    ctest --test-dir build -L gpu --output-on-failure -j "$jobs" --timeout 160 \
    > "$out/ctest_$tier.log" 2>&1
  ctest_rc+=("$tier=$?")
done

# Prefill. Each shape is one process (batch changes with S); the first call of a variant
# compiles it, so warm-up calls come before the measured ones.
bench_rc=0
for tier in generic tensor; do
  for d in 64 128; do
    for s in 1024 4096 16384; do
      for causal in "" "--causal"; do
        name="prefill_${tier}_d${d}_s${s}${causal:+_causal}"
        KILN_GPU_TIER=$tier timeout 60 ./build/kiln bench attention --backend cuda \
          --dtype bf16 --batch $((32768 / s)) --heads 16 --head-dim "$d" --seqlen "$s" \
          $causal --warmup 3 --iters 10 --rounds 1 --out "$out/$name.json" \
          > "$out/$name.txt" 2>&1 || bench_rc=1
      done
    done
  done
done

# A summary line per shape: tier that ran, TFLOP/s, max error against the fp64 reference.
python3 - "$out" > "$out/prefill_summary.txt" 2>&1 <<'EOF' || true
import glob, json, os, sys
rows = {}
for path in sorted(glob.glob(os.path.join(sys.argv[1], "prefill_*.json"))):
    try:
        j = json.load(open(path))
    except Exception as e:
        print(os.path.basename(path), "unreadable:", e)
        continue
    sh = j.get("config", {})
    for smp in j.get("samples", []):
        key = (sh.get("head_dim"), smp.get("seqlen"), bool(sh.get("causal")))
        rows.setdefault(key, {})[smp.get("tier")] = (smp.get("gflops", 0) / 1e3,
                                                     smp.get("max_abs_err"),
                                                     smp.get("variant"))
print("%4s %6s %6s | %-28s | %-28s" % ("D", "S", "causal", "generic TFLOP/s (err)",
                                       "tensor TFLOP/s (err)"))
for key in sorted(rows):
    cells = []
    for tier in ("generic", "tensor"):
        v = rows[key].get(tier)
        cells.append("%8.1f (%s)" % (v[0], v[1]) if v else "-")
    print("%4s %6s %6s | %-28s | %-28s" % (key[0], key[1], key[2], cells[0], cells[1]))
EOF

cat "$out/machine.txt"
grep -E '"(device_name|target|compute_units|driver_version|version)"' "$out/info.json" | head -8
tail -12 "$out/jit.log"
for tier in generic auto; do
  echo "== ctest -L gpu, KILN_GPU_TIER=$tier"
  grep -E "tests passed|tests failed|\*\*\*|Failed|Skipped|tier " "$out/ctest_$tier.log" | tail -20
done
echo "== prefill (bf16, 16 heads, B * S = 32k)"
cat "$out/prefill_summary.txt"
grep -l "failed\|error" "$out"/prefill_*.txt 2>/dev/null | head -5
echo "jit_bench rc=$jit_rc ctest: ${ctest_rc[*]} bench rc=$bench_rc"
