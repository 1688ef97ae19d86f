#!/usr/bin/env bash
# The Python binding's host time per call, this tree against another revision's binding, in
# one job on a CUDA machine (bench/README.md, "Python binding host time"): builds both trees
# (the library, the stub and the fast path), runs this tree's bench/binding_bench.py for each,
# alternating (old, new, old, new, ...), after the binding's tests (torch's among them) with
# this tree's build. JSON and logs go to $OUT.
#   OLD_REV=HEAD bash bench/binding_ab.sh       (OLD_REV: a revision of this repository)
#   OLD_SRC=dir bash bench/binding_ab.sh        (or another source tree, e.g. from git archive)
set -u
out=${OUT:-${TMPDIR:-/tmp}/kiln-binding-ab}
mkdir -p "$out"
jobs=$(nproc 2>/dev/null || echo 4)
[ "$jobs" -gt 16 ] && jobs=16
here=$PWD
new=/tmp/kiln-binding-new
old_src=/tmp/kiln-binding-old-src
old=/tmp/kiln-binding-old
rev=${OLD_REV:-HEAD}
{
  date -u +%Y-%m-%dT%H:%M:%SZ
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  echo "old: ${OLD_SRC:-$(git rev-parse "$rev")}"
} > "$out/machine.txt" 2>&1
if [ -n "${OLD_SRC:-}" ]; then
  old_src=$(cd "$OLD_SRC" && pwd)
else
  rm -rf "$old_src" && mkdir -p "$old_src" && git archive "$rev" | tar x -C "$old_src" || exit 1
fi
build() { # src build
  cmake -S "$1" -B "$2" -DCMAKE_BUILD_TYPE=Release -DKILN_BUILD_TESTS=ON \
    -DKILN_COMPILE_MATRIX=OFF && cmake --build "$2" -j "$jobs"
}
build "$old_src" "$old" > "$out/build_old.log" 2>&1 &
build . "$new" > "$out/build_new.log" 2>&1 || { tail -30 "$out/build_new.log"; exit 1; }
wait $! || { tail -30 "$out/build_old.log"; exit 1; }
KILN_LIBRARY=$new/libkiln.so PYTHONPATH=python KILN_CACHE_DIR=/tmp/kiln-binding-cache \
  timeout ${TEST_TIMEOUT:-150} python3 -m unittest discover -s tests/python -v > "$out/torch_tests.log" 2>&1
echo "binding tests rc=$?" >> "$out/machine.txt"
tail -4 "$out/torch_tests.log" >> "$out/machine.txt"
# The binding's own cost (stub) and with the library (real), fast path only, thread CPU
# time; old and new alternate PASSES times, and the summary gives each side's median.
for pass in $(seq 1 "${PASSES:-4}"); do
  for side in old new; do
    if [ $side = old ]; then src=$old_src b=$old; else src=$PWD b=$new; fi
    ( cd "$src" && PYTHONPATH=python KILN_CACHE_DIR=/tmp/kiln-binding-cache timeout 100 \
        python3 "$here/bench/binding_bench.py" --build "$b" --calls 5000 --rounds 5 --cpu-time \
        --configs stub/fast,real/fast --json "$out/binding_${side}_$pass.json" ) \
      > "$out/binding_${side}_$pass.txt" 2>&1
    echo "pass $pass $side rc=$?" >> "$out/machine.txt"
  done
done
python3 - "$out" >> "$out/machine.txt" <<'EOF'
import glob, json, statistics, sys
out = sys.argv[1]
for side in ("old", "new"):
    runs = [json.load(open(f))["us_per_call"]
            for f in sorted(glob.glob(f"{out}/binding_{side}_*.json"))]
    if not runs:
        continue
    print(f"{side}: median over {len(runs)} passes (us per call, thread CPU time)")
    for cfg in runs[0]:
        for case in runs[0][cfg]:
            if case.startswith("_"):
                continue
            vals = [r[cfg][case] for r in runs if case in r.get(cfg, {})]
            print(f"  {cfg:10s} {case:34s} {statistics.median(vals):7.2f}"
                  f"  ({min(vals):.2f}-{max(vals):.2f})")
EOF
cat "$out/machine.txt"
