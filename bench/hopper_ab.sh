#!/usr/bin/env bash
# The hopper tier's compile-time options side by side on an H200, in about 5 minutes:
#   1. build copies of this tree (Release, tests, no compile matrix) whose option defaults
#      (kernels/attention_hopper.h, every one #ifndef) are set by defines added to that
#      header:
#        staged   the defaults: output through shared memory, 16-byte row stores
#        direct   KILN_HOPPER_STAGE_O 0: output stored straight from the accumulators
#        persist  KILN_HOPPER_PERSISTENT(d, m) 1: persistent grid everywhere (default:
#                 unwindowed), its output staged in Q's rows under the window mask
#        s2       2 K / V stages at head dim 128 (the default on the persistent grid)
#        old      head dim 128 on the persistent grid under the causal mask only, 3
#                 stages elsewhere (the defaults before it took that grid without a mask;
#                 the results' p2 alternative was today's defaults)
#        k160     key tiles of 160 at head dim 128 (2 stages) and of 192 at head dim 64,
#                 no mask (128 by default)
#        k176     key tiles of 176 at head dim 128 (2 stages), no mask
#        eager    O rescaled after every tile (default at head dim 128: only when a row's
#                 reference moved, KILN_HOPPER_RESCALE_SLACK)
#        exact    KILN_HOPPER_RESCALE_SLACK 0: a row's reference follows its max
#        lazy64   the rescale with slack at head dim 64 too
#        kc64     key tiles of 64 under the causal mask (4 stages): a quarter of the
#                 diagonal block computed and masked instead of half
#        fresh64  head dim 64's output addresses recomputed per item as at head dim 128
#                 (KILN_HOPPER_FRESH_OUT 1 everywhere)
#        sleep32  KILN_HOPPER_PRODUCER_SLEEP 32: the producer sleeps 32 ns between polls
#                 of its barriers (default: it polls without a pause)
#        sleep128 128 ns between the producer's polls
#        tree0    KILN_HOPPER_TREE 0: each row's tile max and sum in one chain
#        texp     KILN_HOPPER_TURN_EXP 1: the consumers take turns at their exponentials,
#                 not at issuing their matrix products, in every variant (default: head
#                 dim 128 and the wide head-dim-64 one)
#        tmma     KILN_HOPPER_TURN_EXP 0: turns at issuing the products everywhere (the
#                 defaults before; the results' staged column of hopper-ab_texp_*)
#        tstore0  KILN_HOPPER_TMA_STORE(d) 0: the staged output copied out by the consumers'
#                 threads in 16-byte pieces (default at head dim 128: one tensor-map store
#                 per consumer)
#        c2       two consumer warpgroups in the long head-dim-64 variant too (default:
#                 three there, 192 query rows a block, 160 registers a thread)
#        c2c      the long variant without a mask only: causal head dim 64 in two
#                 consumers at every length (the defaults before; the results' staged
#                 column of hopper-ab_c3cd_*)
#        c3c      the causal long variant's output staged (spills 24 bytes)
#        c3cdn    the causal long variant without turns between its consumers (no spill;
#                 default: turns, a frame of 8 bytes)
#        skip0    KILN_HOPPER_SKIP_PV 0: causal P V products over every key of a tile (the
#                 default leaves out the 16-key steps none of a consumer's rows sees)
#        tstore64 KILN_HOPPER_TMA_STORE(d) 1: the copy engine's store per consumer at head
#                 dim 64 too
#        hint     the producer's waits on empty slots with a suspend-time hint of 1 ms
#                 (KILN_HOPPER_PRODUCER_HINT): suspended until the phase completes
#        hintall  the consumers' waits on full slots too (KILN_HOPPER_CONSUMER_HINT)
#        fexp1    KILN_HOPPER_FMA_EXP: 1 of every 8 softmax exponentials on the FMA pipes
#                 at head dim 64 (a polynomial, kiln_hp_exp2_fma), the rest on MUFU
#        fexp2    2 of every 8 at head dim 64
#        fexp2all 2 of every 8 at every head dim
#        long1k   KILN_HOPPER_LONG_MIN_KEYS 1024: the three-consumer head-dim-64 variant from
#                 1k keys per split (default 4k)
#        pre      the kernel as in $PRE_DIR/attention_hopper.cu (a copy of another
#                 revision's, e.g. from git show), the header as in this tree
#   2. the GPU conformance entries (ctest -L gpu) with KILN_GPU_TIER=hopper on each build
#      but those named in CTEST_SKIP (default: staged; calls the tier does not cover fail by
#      name and are left out)
#   3. BENCH.md suite 2 for each build (bench/reference_benchmark.py --only prefill,
#      the hopper tier beside SDPA cuDNN)
#   4. a table: TFLOP/s per shape per option, cuDNN beside
# ALTS="staged old" narrows the list (default: staged old). PASSES=2 times every build
# twice, alternating (default 1); PREFILL_SHAPES (e.g. 64:1024,128:4096) narrows suite 2 to
# those head dims and lengths. $OUT gets summary.txt, logs.tgz and one prefill JSON per
# option and pass.
#   bash bench/hopper_ab.sh
set -u
out=${OUT:-${TMPDIR:-/tmp}/kiln-hopper-ab}
logs=/tmp/kiln-ab-logs
mkdir -p "$out" "$logs"
sum=$out/summary.txt
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a "$sum"; }
{
  date -u +%Y-%m-%dT%H:%M:%SZ
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
} > "$sum" 2>&1

# name | defines added to kernels/attention_hopper.h (';' separates lines)
all_opts=(
  "staged|"
  "direct|#define KILN_HOPPER_STAGE_O 0"
  "persist|#define KILN_HOPPER_PERSISTENT(d, m) 1"
  "s2|#define KILN_HOPPER_STAGES(d, m) ((d) == 64 ? 3 : 2)"
  "k160|#define KILN_HOPPER_BLOCK_K(d, m) ((m) != 0 ? 128 : (d) == 128 ? 160 : 192);#define KILN_HOPPER_STAGES(d, m) ((d) == 128 \&\& (m) == 0 ? 2 : 3)"
  "k176|#define KILN_HOPPER_BLOCK_K(d, m) ((m) == 0 \&\& (d) == 128 ? 176 : 128);#define KILN_HOPPER_STAGES(d, m) ((d) == 128 \&\& (m) == 0 ? 2 : 3)"
  "kc64|#define KILN_HOPPER_BLOCK_K(d, m) ((m) == 1 ? 64 : 128);#define KILN_HOPPER_STAGES(d, m) ((m) == 1 ? 4 : 3)"
  "eager|#define KILN_HOPPER_LAZY_RESCALE(d) 0"
  "exact|#define KILN_HOPPER_RESCALE_SLACK 0.0f"
  "lazy64|#define KILN_HOPPER_LAZY_RESCALE(d) 1"
  "sleep32|#define KILN_HOPPER_PRODUCER_SLEEP 32"
  "sleep128|#define KILN_HOPPER_PRODUCER_SLEEP 128"
  "tree0|#define KILN_HOPPER_TREE 0"
  "texp|#define KILN_HOPPER_TURN_EXP(d) 1"
  "tmma|#define KILN_HOPPER_TURN_EXP(d) 0"
  "tstore0|#define KILN_HOPPER_TMA_STORE(d) 0"
  "c2|#define KILN_HOPPER_CONSUMERS(d, m, l) 2"
  "c2c|#define KILN_HOPPER_LONG_COVERS(d, m) ((d) == 64 \&\& (m) == 0)"
  "c3c|#define KILN_HOPPER_STAGE_O 1"
  "c3cdn|#define KILN_HOPPER_PINGPONG (NC == 2 || KILN_MASK != 1)"
  "skip0|#define KILN_HOPPER_SKIP_PV(d) 0"
  "tstore64|#define KILN_HOPPER_TMA_STORE(d) 1"
  "pre|@PRE"
  "fresh64|#define KILN_HOPPER_FRESH_OUT(d) 1"
  "old|#define KILN_HOPPER_PERSISTENT(d, m) (((d) == 64 \&\& (m) != 2) || ((d) == 128 \&\& (m) == 1))"
  "hint|#define KILN_HOPPER_PRODUCER_HINT 1000000"
  "hintall|#define KILN_HOPPER_PRODUCER_HINT 1000000;#define KILN_HOPPER_CONSUMER_HINT 1000000"
  "fexp1|#define KILN_HOPPER_FMA_EXP(d) ((d) == 64 ? 1 : 0)"
  "fexp2|#define KILN_HOPPER_FMA_EXP(d) ((d) == 64 ? 2 : 0)"
  "fexp2all|#define KILN_HOPPER_FMA_EXP(d) 2"
  "long1k|#define KILN_HOPPER_LONG_MIN_KEYS 1024"
)
opts=()
for n in ${ALTS:-staged old}; do
  for o in "${all_opts[@]}"; do [ "${o%%|*}" = "$n" ] && opts+=("$o"); done
done
build() { # name sed tests
  local name=$1 ex=$2 tests=$3 src=/tmp/kiln-ab-src-$1 b=/tmp/kiln-ab-build-$1
  rm -rf "$src" && mkdir -p "$src" &&
    cp -r CMakeLists.txt CMakePresets.json cmake include src kernels tools tests bench python \
      "$src"/ || return 1
  if [ "$ex" = @PRE ]; then
    [ -f "${PRE_DIR:-}/attention_hopper.cu" ] || { echo "$name: no \$PRE_DIR/attention_hopper.cu"; return 1; }
    cp "$PRE_DIR/attention_hopper.cu" "$src/kernels/"
  elif [ -n "$ex" ]; then
    # The kernel's own options (STAGE_O, PINGPONG) are #ifndef after the header too.
    sed -i "/^#define KILN_ATTENTION_HOPPER_H$/a ${ex//;/\\n}" "$src/kernels/attention_hopper.h"
    # The edit must have hit.
    cmp -s kernels/attention_hopper.cu "$src/kernels/attention_hopper.cu" &&
      cmp -s kernels/attention_hopper.h "$src/kernels/attention_hopper.h" &&
      { echo "$name: the edit changed nothing"; return 1; }
  fi
  { cmake -S "$src" -B "$b" -DCMAKE_BUILD_TYPE=Release -DKILN_BUILD_TESTS=$tests \
      -DKILN_COMPILE_MATRIX=OFF &&
    if [ "$tests" = ON ]; then cmake --build "$b" -j 16; else
      cmake --build "$b" -j 16 --target kiln kiln_tool; fi; } > "$logs/build_$name.log" 2>&1
}
pids=()
for o in "${opts[@]}"; do
  name=${o%%|*}
  build "$name" "${o#*|}" ON &
  pids+=($!)
done
ok=1
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || { ok=0; n=${opts[$i]%%|*}; echo "build $n failed" >> "$sum";
                          tail -30 "$logs/build_$n.log" >> "$sum"; }
done
stamp "built"
[ $ok = 1 ] || { tar czf "$out/logs.tgz" -C "$logs" .; cat "$sum"; exit 1; }

# A kernel that hangs would eat every later step: one small call per build first.
for o in "${opts[@]}"; do
  name=${o%%|*}
  KILN_GPU_TIER=hopper KILN_CACHE_DIR=/tmp/kiln-ab-cache-$name timeout 30 \
    /tmp/kiln-ab-build-$name/kiln bench attention --backend cuda --dtype bf16 --batch 2 \
    --heads 4 --kv-heads 2 --head-dim 128 --seqlen 1000 --causal --warmup 1 --iters 2 \
    --rounds 1 > "$logs/canary_$name.log" 2>&1
  rc=$?
  echo "canary $name rc=$rc: $(tail -1 "$logs/canary_$name.log")" >> "$sum"
  [ $rc = 0 ] || bad="${bad:-} $name"
done
stamp "canaries"

for o in "${opts[@]}"; do
  name=${o%%|*}
  case " ${CTEST_SKIP-staged} ${bad:-} " in *" $name "*) continue ;; esac
  KILN_GPU_TIER=hopper KILN_TEST_BACKEND=cuda KILN_CACHE_DIR=/tmp/kiln-ab-cache-$name \
    timeout 100 ctest --test-dir /tmp/kiln-ab-build-$name -L '^gpu$' -j 6 \
    --output-on-failure --timeout 95 > "$logs/ctest_$name.log" 2>&1
  stamp "ctest $name rc=$?"
  grep -E "tests passed|tests failed|\*\*\*Failed|Timeout" "$logs/ctest_$name.log" | head -12 >> "$sum"
  grep "^FAIL" "$logs/ctest_$name.log" | grep -v "KILN_GPU_TIER=hopper:" | head -10 >> "$sum"
done

runs=()
for pass in $(seq 1 "${PASSES:-1}"); do
  for o in "${opts[@]}"; do
    name=${o%%|*}
    case " ${bad:-} " in *" $name "*) continue ;; esac
    run=$name
    [ "${PASSES:-1}" -gt 1 ] && run=${name}_p$pass
    mkdir -p "$logs/prefill_$run"
    KILN_LIBRARY=/tmp/kiln-ab-build-$name/libkiln.so KILN_CACHE_DIR=/tmp/kiln-ab-cache-$name \
      PYTHONPATH=python PYTHONUNBUFFERED=1 timeout 75 python3 bench/reference_benchmark.py \
      --only prefill --kiln-tiers hopper --sdpa cudnn --out "$logs/prefill_$run" \
      ${PREFILL_SHAPES:+--prefill-shapes "$PREFILL_SHAPES"} > "$logs/prefill_$run.log" 2>&1
    stamp "suite 2 $run rc=$?"
    for f in "$logs/prefill_$run"/prefill_*.json; do
      [ -f "$f" ] && cp "$f" "$out/prefill_$run.json"
    done
    runs+=("$run")
  done
done

python3 - "$out" "${runs[@]}" >> "$sum" 2>&1 <<'EOF'
import json, os, sys
out, names = sys.argv[1], sys.argv[2:]
runs = {}
for n in names:
    p = os.path.join(out, f"prefill_{n}.json")
    if os.path.exists(p):
        runs[n] = {(r["D"], r["S"], r["causal"]): r["contenders"] for r in json.load(open(p))["results"]}
keys = sorted({k for r in runs.values() for k in r if k[0] in (64, 128)})
cols = [n for n in names if n in runs]
print("\nTFLOP/s (hopper tier per option; cuDNN from each run, min-max)")
print(f"{'shape':<16}" + "".join(f"{n:>9}" for n in cols) + f"{'cudnn':>14}{'err':>9}")
for k in keys:
    row, cud, err = [], [], 0.0
    for n in cols:
        c = runs[n].get(k, {})
        h = c.get("kiln_hopper", {})
        row.append(f"{h['tflops']:9.1f}" if "tflops" in h else f"{'n/a':>9}")
        if "tflops" in c.get("sdpa_cudnn", {}): cud.append(c["sdpa_cudnn"]["tflops"])
        for kk, v in h.items():
            if kk.startswith("max_abs_diff"): err = max(err, v)
    cs = f"{min(cud):.0f}-{max(cud):.0f}" if cud else "n/a"
    name = f"D{k[0]} S{k[1] // 1024}k {'c' if k[2] else 'nc'}"
    print(f"{name:<16}" + "".join(row) + f"{cs:>14}{err:9.4f}")
EOF
tar czf "$out/logs.tgz" -C "$logs" .
cat "$sum"
