#!/usr/bin/env bash
# One call on a CUDA machine: builds this tree and the stamped copy of bench/hopper_trace.py
# side by side (libraries only: seconds), then (on an H100, 2026-12-07: trace 24 s and keys
# 13 s with the builds; suites as long as reference_benchmark.py takes for them)
#   trace   bench/hopper_trace.py run on the stamped build (phases of each consumer per item)
#   keys    bench/hopper_trace.py keys on this tree (per key tile and per item, kiln / cuDNN)
#   kernels bench/hopper_trace.py kernels on this tree (each contender's kernels and their
#           launch shapes at four suite-2 shapes)
#   suites  bench/reference_benchmark.py suites 3, 2 and 1 on this tree (decode with the
#           tensor tier, prefill and reference with hopper and tensor)
# Steps run are the arguments (default: trace keys suites). Everything goes to $OUT:
# summary.txt, trace.json, keys.json, kernels.json and results.tgz (the suites' JSON, PNG and tables).
#   bash bench/trace_run.sh [trace] [keys] [kernels] [suites]
set -u
out=${OUT:-${TMPDIR:-/tmp}/kiln-trace-run}
mkdir -p "$out/results"
steps=${*:-trace keys suites}
has() { case " $steps " in *" $1 "*) return 0 ;; esac; return 1; }
sum=$out/summary.txt
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" >> "$sum"; }
{
  date -u +%Y-%m-%dT%H:%M:%SZ
  git log -1 --format='kiln %h %s' 2>/dev/null
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
} > "$sum" 2>&1
b=/tmp/kiln-trace-build
st=/tmp/kiln-trace-stamped
rm -rf "$st"
python3 bench/hopper_trace.py tree "$st" >> "$sum" 2>&1 || { cat "$sum"; exit 1; }
if has keys || has kernels || has suites; then
  { cmake -S . -B $b -DKILN_BUILD_TESTS=OFF -DCMAKE_BUILD_TYPE=Release &&
    cmake --build $b -j 8; } > /tmp/kiln-trace-b1.log 2>&1 &
else
  true &
fi
p=$!
r2=0
if has trace; then
  { cmake -S "$st" -B "$st/build" -DKILN_BUILD_TESTS=OFF -DCMAKE_BUILD_TYPE=Release &&
    cmake --build "$st/build" -j 8; } > /tmp/kiln-trace-b2.log 2>&1 || r2=$?
fi
wait $p; r1=$?
stamp "built rc=$r1/$r2"
if [ $r1 -ne 0 ] || [ $r2 -ne 0 ]; then
  tail -30 /tmp/kiln-trace-b*.log >> "$sum"; cat "$sum"; exit 1
fi
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1
if has trace; then
  KILN_CACHE_DIR=/tmp/kiln-trace-c2 KILN_LIBRARY=$st/build/libkiln.so timeout 150 \
    python3 bench/hopper_trace.py run "$out/trace.json" >> "$sum" 2>&1
  stamp "trace rc=$?"
fi
export KILN_CACHE_DIR=/tmp/kiln-trace-c1 KILN_LIBRARY=$b/libkiln.so
if has keys; then
  timeout 150 python3 bench/hopper_trace.py keys "$out/keys.json" >> "$sum" 2>&1
  stamp "keys rc=$?"
fi
if has kernels; then
  timeout 150 python3 bench/hopper_trace.py kernels "$out/kernels.json" >> "$sum" 2>&1
  stamp "kernels rc=$?"
fi
if has suites; then
  timeout 100 python3 bench/reference_benchmark.py --only decode --kiln-tiers tensor \
    --out "$out/results" > "$out/results/decode.log" 2>&1
  stamp "suite 3 rc=$?"
  timeout 150 python3 bench/reference_benchmark.py --only prefill --kiln-tiers hopper,tensor \
    --out "$out/results" > "$out/results/prefill.log" 2>&1
  stamp "suite 2 rc=$?"
  grep -E "^prefill D=" "$out/results/prefill.log" >> "$sum"
  timeout 90 python3 bench/reference_benchmark.py --only reference --kiln-tiers hopper,tensor \
    --out "$out/results" > "$out/results/reference.log" 2>&1
  stamp "suite 1 rc=$?"
  tail -12 "$out/results/reference.log" >> "$sum"
fi
tar czf "$out/results.tgz" -C "$out" results && rm -rf "$out/results"
cat "$sum"
