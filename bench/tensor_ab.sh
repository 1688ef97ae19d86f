#!/usr/bin/env bash
# One call on a CUDA machine (about 5 minutes on an H200 with 16 cores) that compares the
# tensor (mma.sync) tier's compile-time alternatives (kernels/attention_mma.h) on BENCH.md
# suite 2, each beside FlashAttention-2 (SDPA flash) in the same process:
#   1. builds the tree as it is (Release, tests, no compile matrix) and, in parallel, one
#      copy of the library and CLI per alternative with its defaults edited by sed
#   2. runs the GPU conformance entries with KILN_GPU_TIER=tensor (the tree as it is) while
#      the alternatives' kernels compile into their own caches (NVRTC, on the CPU)
#   3. runs suite 2 with the tier forced once per alternative and prints one table:
#      TFLOP/s per shape per alternative, FA2's beside it, and the ratio
# Alternatives (name: what differs from the defaults):
#   new     the defaults
#   old     ONE_BARRIER, FOLD_SCALE, HEAVY_FIRST and WARP_SKIP all 0: the schedule before
#           those switches existed
#   st3     3 cp.async stages (K / V tiles in flight) up to head dim 128
#   heavy   HEAVY_FIRST 1: causal blocks by query block slowest, last first, across every
#           head and batch (the default before 2026-12-06; perhead was its alternative)
#   eager   LAZY_RESCALE 0: every row's reference follows its max, O rescaled after
#           every tile
#   exact   KILN_TQ_RESCALE_SLACK 0: O rescaled after a tile where some row's max moved
#   w8      head dims 64 - 128 as 160 and above: 8 warps x 1 m16 tile over 64-key tiles,
#           Q fragments in registers (at 64 - 128)
#   d64k32  head dim 64 over 32-key tiles (its shape before 64-key tiles fitted)
#   d128w8  head dim 128 as 8 warps x 1 m16 tile over 64-key tiles, Q fragments in
#           registers (its shape before 4 warps x 2 m16 tiles fitted)
#   k64     head dims 32 - 192 over 64-key tiles (4 warps x 2 m16 tiles at 80 - 128, as FA2's
#           128 x 64 at head dim 128), 256 over 32
#   d64k128 head dim 64 over 128-key tiles (FA2's 128 x 128 there)
#   d128k64 head dim 128 (not paged) over 64-key tiles, 4 warps x 2 m16 tiles
#   k48     head dims 80 and 96 over 48-key tiles on every target, paged too
#   d256k64 head dim 256 over 64-key tiles on every target (FA2's 128 x 64 there; 204 KB of
#           shared memory)
#   d256st3 head dim 256 with 3 stages of 32-key tiles
#   d256w4  head dim 256 as 4 warps x 1 m16 tile (64 rows a block) over 32-key tiles, 2
#           blocks per SM (about 104 KB of shared memory each; FA2 takes 64 x 64 tiles in 4
#           warps there on an H100 for 2 blocks per SM); 8 warps x 64-key tiles by default.
#           Checked off the GPU: 240-243 registers, no stack frame on sm_80-90, the CPU
#           emulation's kernel checks all pass (its three checks of the default's sm_90
#           variant name, k64, do not). On an H100: D 256 4k 246.2 against 284.7 TFLOP/s,
#           causal 232.1 against 252.7 (bench/results/tensor-ab_d256w4_*)
#   pre     the kernel and its header as in $PRE_DIR (copies of another revision's
#           kernels/attention_mma.cu and attention_mma.h, e.g. from git show, whose shape
#           macros take the arguments this tree's host passes)
# ALTS="new st3" narrows the list; STEPS="bench" skips the conformance run.
# Everything goes to $OUT: summary.txt and logs.tgz (every log and the benchmark JSON).
#   bash bench/tensor_ab.sh
set -u
out=${OUT:-${TMPDIR:-/tmp}/kiln-tensor-ab}
work=/tmp/kiln-tab
logs=$work/logs
rm -rf "$work"
mkdir -p "$out" "$logs"
alts=${ALTS:-new d64k32 d128w8 w8 heavy st3 old eager}
steps=${STEPS:-ctest bench}
jobs=$(nproc 2>/dev/null || echo 4)
[ "$jobs" -gt 16 ] && jobs=16
sum="$out/summary.txt"
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a "$sum"; }
{
  date -u +%Y-%m-%dT%H:%M:%SZ
  git log -1 --format='kiln %h %s' 2>/dev/null || echo "kiln (no git)"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
} > "$sum" 2>&1
finish() {
  tar czf "$out/logs.tgz" -C "$work" logs results 2>/dev/null
  cat "$sum"
}

h=kernels/attention_mma.h
edit() { # alternative name, tree: applies the alternative's defaults to the tree's header
  case $1 in
    new) ;;
    old) sed -i -E 's/^#define KILN_TQ_(ONE_BARRIER|FOLD_SCALE|HEAVY_FIRST|WARP_SKIP) 1$/#define KILN_TQ_\1 0/' "$2/$h" ;;
    st3) sed -i 's/^#define KILN_TQ_STAGES(d, p) 2$/#define KILN_TQ_STAGES(d, p) ((d) <= 128 ? 3 : 2)/' "$2/$h" ;;
    heavy) sed -i 's/^#define KILN_TQ_HEAVY_FIRST 0$/#define KILN_TQ_HEAVY_FIRST 1/' "$2/$h" ;;
    eager) sed -i 's/^#define KILN_TQ_LAZY_RESCALE 1$/#define KILN_TQ_LAZY_RESCALE 0/' "$2/$h" ;;
    exact) sed -i 's/^#define KILN_TQ_RESCALE_SLACK 8.0f$/#define KILN_TQ_RESCALE_SLACK 0.0f/' "$2/$h" ;;
    w8) sed -i -e 's/^#define KILN_TQ_WIDE(d, p) .*$/#define KILN_TQ_WIDE(d, p) ((d) <= 32)/' \
          -e 's/^#define KILN_TQ_BLOCK_K(d, p) .*$/#define KILN_TQ_BLOCK_K(d, p) ((d) <= 192 ? 64 : 32)/' \
          -e 's/^#define KILN_TQ_Q_IN_REGS(d, p) .*$/#define KILN_TQ_Q_IN_REGS(d, p) ((d) <= 128)/' "$2/$h" ;;
    d64k32) sed -i 's/^\(#define KILN_TQ_BLOCK_K(d, p) ((d) <= \)64 ||/\132 ||/' "$2/$h" ;;
    d128w8) sed -i 's/^#define KILN_TQ_WIDE(d, p) .*$/#define KILN_TQ_WIDE(d, p) ((d) <= 96)/' "$2/$h" ;;
    k64) sed -i 's/^#define KILN_TQ_BLOCK_K(d, p) .*$/#define KILN_TQ_BLOCK_K(d, p) ((d) <= 192 ? 64 : 32)/' "$2/$h" ;;
    d64k128) sed -i 's/^#define KILN_TQ_BLOCK_K(d, p) \(.*\)$/#define KILN_TQ_BLOCK_K(d, p) ((d) == 64 ? 128 : \1)/' "$2/$h" ;;
    d128k64) sed -i 's/^#define KILN_TQ_BLOCK_K(d, p) \(.*\)$/#define KILN_TQ_BLOCK_K(d, p) ((d) == 128 \&\& !((p) \& KILN_TQ_PAGED) ? 64 : \1)/' "$2/$h" ;;
    k48) sed -i 's/^#define KILN_TQ_BLOCK_K(d, p) \(.*\)$/#define KILN_TQ_BLOCK_K(d, p) ((d) == 80 || (d) == 96 ? 48 : \1)/' "$2/$h" ;;
    d256k64) sed -i 's/^#define KILN_TQ_BLOCK_K(d, p) \(.*\)$/#define KILN_TQ_BLOCK_K(d, p) ((d) == 256 ? 64 : \1)/' "$2/$h" ;;
    d256st3) sed -i -e 's/^#define KILN_TQ_STAGES(d, p) 2$/#define KILN_TQ_STAGES(d, p) ((d) == 256 ? 3 : 2)/' \
               -e 's/^#define KILN_TQ_BLOCK_K(d, p) \(.*\)$/#define KILN_TQ_BLOCK_K(d, p) ((d) == 256 ? 32 : \1)/' "$2/$h" ;;
    d256w4) sed -i -e 's/^#define KILN_TQ_WARPS(d, p) .*$/#define KILN_TQ_WARPS(d, p) (KILN_TQ_WIDE(d, p) || (d) == 256 ? 4 : 8)/' \
              -e 's/^#define KILN_TQ_BLOCK_K(d, p) \(.*\)$/#define KILN_TQ_BLOCK_K(d, p) ((d) == 256 ? 32 : \1)/' \
              -e 's/^#define KILN_TQ_MIN_BLOCKS(d, p) 1$/#define KILN_TQ_MIN_BLOCKS(d, p) ((d) == 256 ? 2 : 1)/' "$2/$h" ;;
    pre) [ -n "${PRE_DIR:-}" ] && cp "$PRE_DIR/attention_mma.cu" "$PRE_DIR/attention_mma.h" "$2/kernels/" ;;
    *) echo "unknown alternative $1"; return 1 ;;
  esac
}

# 1. Builds. The main one (with tests) is the "new" alternative's library too.
b=$work/build
tests="test_conformance test_conformance_paged test_conformance_random test_conformance_splits
       test_conformance_threads test_conformance_varlen test_conformance_nonfinite
       test_conformance_empty test_activation"
{ cmake -S . -B $b -DKILN_BUILD_TESTS=ON -DCMAKE_BUILD_TYPE=Release &&
  cmake --build $b -j "$jobs" --target kiln kiln_tool $tests; } > "$logs/build_main.log" 2>&1 &
pids=$!
for alt in $alts; do
  [ "$alt" = new ] && continue
  src=$work/src_$alt
  mkdir -p "$src"
  cp -r CMakeLists.txt CMakePresets.json cmake include src kernels tools tests bench python "$src"/
  edit "$alt" "$src" || continue
  if diff -u "$h" "$src/$h" > "$logs/diff_$alt.txt" &&
     diff -u kernels/attention_mma.cu "$src/kernels/attention_mma.cu" >> "$logs/diff_$alt.txt"; then
    stamp "$alt: its edit of $h (or pre's kernel) matched nothing, not built"
    continue
  fi
  { cmake -S "$src" -B "$work/build_$alt" -DCMAKE_BUILD_TYPE=Release &&
    cmake --build "$work/build_$alt" -j "$jobs" --target kiln kiln_tool; } > "$logs/build_$alt.log" 2>&1 &
  pids="$pids $!"
done
wait $pids
libdir() { [ "$1" = new ] && echo "$b" || echo "$work/build_$1"; }
ok=""
for alt in $alts; do
  if [ -f "$(libdir "$alt")/libkiln.so" ] && [ -x "$(libdir "$alt")/kiln" ]; then
    ok="$ok $alt"
  else
    stamp "build of $alt failed:"
    tail -15 "$logs/build_$([ "$alt" = new ] && echo main || echo "$alt").log" >> "$sum"
  fi
done
stamp "built:$ok"

# 2. Warm every alternative's kernel cache (suite 2's variants: D 64, 96, 128, 256, causal
# and not) in parallel on the CPU, while the conformance suites run on the GPU.
warm() { # alternative
  local k; k="$(libdir "$1")/kiln"
  for d in 64 96 128 256; do
    for c in "" "--causal"; do
      KILN_CACHE_DIR=$work/cache_$1 KILN_GPU_TIER=tensor timeout 120 "$k" bench attention \
        --backend cuda --dtype bf16 --batch 1 --heads $((2048 / d)) --head-dim $d --seqlen 256 \
        $c --warmup 0 --iters 1 --rounds 1 > "$logs/warm_$1_d$d$c.log" 2>&1 &
    done
  done
  wait
}
wpids=""
for alt in $ok; do warm "$alt" & wpids="$wpids $!"; done
case " $steps " in *" ctest "*)
  if [ -d "$b/tests" ]; then
    KILN_CACHE_DIR=$work/cache_ctest KILN_GPU_TIER=tensor KILN_TEST_BACKEND=cuda timeout 90 \
      ctest --test-dir "$b" -L '^gpu$' --output-on-failure -j 6 --timeout 85 \
      > "$logs/ctest_tensor.log" 2>&1
    stamp "ctest -L gpu, KILN_GPU_TIER=tensor: rc=$?"
    grep -E "tests passed|tests failed|\*\*\*|Failed|FAIL|Timeout" "$logs/ctest_tensor.log" |
      head -25 >> "$sum"
  fi ;;
esac
wait $wpids
stamp "warmed"
grep -lE "rror|nsupported|not covered" "$logs"/warm_* 2>/dev/null | head -8 | while read -r f; do
  echo "warm-up trouble in $(basename "$f"): $(grep -m1 -E "rror|nsupported|not covered" "$f")" >> "$sum"
done

# 3. Suite 2 per alternative, FA2 beside it in the same process.
mkdir -p "$work/results"
case " $steps " in *" bench "*)
  for alt in $ok; do
    if [ $(( $(date +%s) - t0 )) -gt 270 ]; then stamp "out of time: $alt not run"; continue; fi
    KILN_CACHE_DIR=$work/cache_$alt KILN_LIBRARY="$(libdir "$alt")/libkiln.so" PYTHONPATH=python \
      timeout 100 python3 bench/reference_benchmark.py --only prefill --kiln-tiers tensor \
      --sdpa flash --out "$work/results/$alt" > "$logs/prefill_$alt.log" 2>&1
    stamp "suite 2, $alt: rc=$?"
  done
  python3 - "$work/results" $ok >> "$sum" 2>&1 <<'EOF'
import glob, json, os, sys
root, alts = sys.argv[1], sys.argv[2:]
rows, fa2, diff, disp = {}, {}, {}, {}
for alt in alts:
    for path in glob.glob(os.path.join(root, alt, "prefill_*.json")):
        for r in json.load(open(path))["results"]:
            key = (r["D"], r["S"], r["causal"])
            c = r["contenders"]
            rows.setdefault(key, {})[alt] = c.get("kiln_tensor", {}).get("tflops")
            fa2.setdefault(key, {})[alt] = c.get("sdpa_flash", {}).get("tflops")
            e = c.get("kiln_tensor", {})
            d = e.get("max_abs_diff_vs_sdpa_flash")
            if d is not None:
                diff[alt] = max(diff.get(alt, 0.0), d)
            if "error" in e:
                disp.setdefault(alt, "error: " + str(e["error"])[:100])
            elif "dispatch" in e:
                disp.setdefault(alt, str(e["dispatch"])[:100])
fmt = lambda x: f"{x:6.1f}" if x else "     -"
print("suite 2, TFLOP/s: kiln tensor per alternative (FA2 in the same run), then the best "
      "alternative's ratio to FA2")
print(f"{'shape':<16}" + "".join(f"{a:<17}" for a in alts) + "best/FA2")
for key in sorted(rows):
    d, s, causal = key
    cells, best = "", None
    for a in alts:
        k, f = rows[key].get(a), fa2[key].get(a)
        cells += f"{fmt(k)} ({fmt(f).strip():>5})   "
        if k and f and (best is None or k / f > best[1]):
            best = (a, k / f)
    label = f"D{d} S{s // 1024}k {'c' if causal else 'nc'}"
    print(f"{label:<16}{cells} " + (f"{best[1]:.2f} {best[0]}" if best else "-"))
print("largest |kiln - FA2| over the shapes (bf16 outputs: rounding gives about 1e-2, a broken kernel 1 or NaN):")
for a in alts:
    print(f"  {a:<8} {diff.get(a, float('nan')):.4g}   first dispatch: {disp.get(a, '-')}")
EOF
  ;;
esac
stamp "done"
finish
