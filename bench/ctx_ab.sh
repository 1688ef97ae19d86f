#!/usr/bin/env bash
# One device call: the benchmark's contexts kept per tier (this tree) against a new context
# in every timed sample (the method before: bench/reference_benchmark.py with its _Env
# dropping the binding's contexts on the way in and out), alternating in one job, plus
# bench/context_cost.py. Output under $OUT (summary.txt, results.tgz).
set -u
out=${OUT:-/tmp/kiln-ctx-ab}
mkdir -p "$out/results"
sum=$out/summary.txt
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a "$sum"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$sum" 2>&1
b=/tmp/kiln-ctx-build
{ cmake -S . -B $b -DKILN_BUILD_TESTS=OFF -DCMAKE_BUILD_TYPE=Release &&
  cmake --build $b -j 16; } > "$out/build.log" 2>&1 || { stamp "build failed"; tail -30 "$out/build.log"; exit 1; }
stamp built
export KILN_LIBRARY=$b/libkiln.so PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1
export KILN_CACHE_DIR=/tmp/kiln-ctx-cache
# the method before, made from this script by putting the dropping back
sed -e 's/self.outer = kiln._arrays.swap_contexts(_Env.kept.get(self.key))/kiln._arrays.forget_contexts()/' \
    -e 's/_Env.kept\[self.key\] = kiln._arrays.swap_contexts(self.outer)/kiln._arrays.forget_contexts()/' \
    bench/reference_benchmark.py > bench/.rb_fresh.py
n=$(grep -c "forget_contexts()" bench/.rb_fresh.py); stamp "fresh variant: $n forget calls"
[ "$n" = 2 ] || { stamp "the fresh variant's edit did not hit both lines of _Env: stopping"; exit 1; }
timeout 120 python3 bench/context_cost.py >> "$sum" 2>&1; stamp "context_cost rc=$?"
for pass in 1 2; do
  for m in kept fresh; do
    s=bench/reference_benchmark.py; [ $m = fresh ] && s=bench/.rb_fresh.py
    mkdir -p "$out/results/$m$pass"
    timeout 150 python3 $s --only decode --kiln-tiers tensor \
      --decode-shapes ${DSHAPES:-1:4096,1:32768,8:4096,3:8192} --out "$out/results/$m$pass" \
      > "$out/results/$m$pass/decode.log" 2>&1
    stamp "decode $m pass $pass rc=$?"
    timeout 150 python3 $s --only prefill --kiln-tiers hopper,tensor --sdpa cudnn,flash \
      --prefill-shapes ${PSHAPES:-64:1024,128:1024,64:4096} --out "$out/results/$m$pass" \
      > "$out/results/$m$pass/prefill.log" 2>&1
    stamp "prefill $m pass $pass rc=$?"
  done
done
python3 - "$out/results" >> "$sum" <<'PY'
import json, glob, os, sys
root = sys.argv[1]
for suite, key in (("decode", "tb_per_s"), ("prefill", "tflops")):
    print(f"== {suite} ({key})")
    for d in sorted(glob.glob(os.path.join(root, "*"))):
        for f in glob.glob(os.path.join(d, suite + "_*.json")):
            rows = json.load(open(f))["results"]
            for r in rows:
                tag = (f"B{r['B']} L{r['L']}" if suite == "decode" else
                       f"D{r['D']} S{r['S']}{' c' if r['causal'] else ''}")
                cells = []
                for n, e in r["contenders"].items():
                    if key in e:
                        g = f"/{e['tb_per_s_graph']:.2f}" if "tb_per_s_graph" in e else ""
                        cells.append(f"{n} {e[key]:.2f}{g}")
                print(os.path.basename(d), tag, " ".join(cells))
PY
rm -f bench/.rb_fresh.py
# one archive: the device returns a limited number of files
tar czf "$out/results.tgz" -C "$out" results && rm -rf "$out/results"
cat "$sum"
