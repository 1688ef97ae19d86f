#!/usr/bin/env bash
# SASS of the hopper kernel as built from a source tree (default: this one), per variant:
# HGMMA and local-memory (LDL / STL) instruction counts, and the consumer's key-loop order of
# warpgroup waits and MUFU.EX2 (where the softmax sits against the P V wait). Needs nvcc and
# cuobjdump (the H200 machine has both).
#   bash bench/hopper_sass.sh [SRC] [OUTDIR]      (SRC e.g. /tmp/kiln-ab-src-staged)
set -u
src=${1:-.}
dir=${2:-${OUT:-/tmp}/hopper-sass}
mkdir -p "$dir"
for v in "64 0 0" "64 1 0" "64 2 0" "64 0 1" "64 1 1" "128 0 0" "128 1 0" "128 2 0"; do
  set -- $v
  n=d$1_m$2_l$3
  nvcc -cubin -arch=sm_90a -Xptxas -v -DKILN_DTYPE=2 -DKILN_HEAD_DIM=$1 -DKILN_MASK=$2 \
    -DKILN_MODE=0 -DKILN_HOPPER_LONG=$3 -I"$src/kernels" "$src/kernels/attention_hopper.cu" \
    -o "$dir/$n.cubin" > "$dir/$n.ptxas.txt" 2>&1 &
done
wait
for f in "$dir"/*.cubin; do
  n=$(basename "$f" .cubin)
  cuobjdump -sass "$f" > "$dir/$n.sass" 2>&1
  echo "$n: $(grep -c HGMMA "$dir/$n.sass") HGMMA, $(grep -cE '\b(LDL|STL)\b' "$dir/$n.sass") LDL/STL;" \
    "ptxas: $(grep -o '[0-9]* bytes spill stores' "$dir/$n.ptxas.txt")"
  # Waits and exps in order, runs of MUFU collapsed: "D1" DEPBAR.LE 1, "D0" DEPBAR.LE 0.
  grep -oE "WARPGROUP.DEPBAR.LE gsb0, 0x[01]|MUFU.EX2|HGMMA" "$dir/$n.sass" |
    sed -e 's/WARPGROUP.DEPBAR.LE gsb0, 0x/D/' -e 's/MUFU.EX2/E/' -e 's/HGMMA/G/' |
    uniq -c | awk '{printf "%s%s ", $2, ($1 > 1 ? "x" $1 : "")} END {print ""}' | cut -c1-400
done
