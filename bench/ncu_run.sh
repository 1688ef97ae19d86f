#!/usr/bin/env bash
# One call on an H200 (a host whose runtime lets Nsight Compute read counters): build the
# library and the kiln tool, then profile one launch of each contender at the suite-2 shapes
# named in NCU_SHAPES ("D S causal" triples, causal 0 or 1) with ncu --set full:
#   kiln hopper and kiln tensor (kiln bench attention, KILN_GPU_TIER forced)
#   SDPA flash (FlashAttention-2) and SDPA cuDNN (bench/ncu_sdpa.py)
# Writes to $OUT: summary.txt (each profile's duration, tensor-pipe, XU and issue activity,
# occupancy, registers), and ncu.tgz (every profile's details page, its warp-state section
# with the stall reasons, and, for kiln's kernels, the SASS source page with per-instruction
# stall samples), and in summary.txt each kernel's executed instructions by opcode
# (bench/sass_mix.py over the SASS source page).
#   NCU_SHAPES="64 1024 0;64 1024 1" bash bench/ncu_run.sh
set -u
out=${OUT:-${TMPDIR:-/tmp}/kiln-ncu-run}
logs=/tmp/kiln-ncu-logs
mkdir -p "$out" "$logs"
sum="$out/summary.txt"
jobs=$(nproc 2>/dev/null || echo 4)
[ "$jobs" -gt 16 ] && jobs=16
{
  date -u +%Y-%m-%dT%H:%M:%SZ
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
  ncu --version | tail -1
} > "$sum" 2>&1
b=/tmp/kiln-ncu-build
if ! { cmake -S . -B $b -DKILN_BUILD_TESTS=OFF -DCMAKE_BUILD_TYPE=Release &&
       cmake --build $b -j "$jobs"; } > "$logs/build.log" 2>&1; then
  tail -30 "$logs/build.log" >> "$sum"; cat "$sum"; exit 1
fi
export KILN_CACHE_DIR=/tmp/kiln-ncu-cache
k=$b/kiln
metrics=gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,launch__grid_size,dram__throughput.avg.pct_of_peak_sustained_elapsed
ncu_one() { # name, kernel regex, command...
  local name=$1 kre=$2; shift 2
  timeout 240 ncu --clock-control none --set full --import-source no -k "regex:$kre" \
    --launch-skip 2 --launch-count 1 -o "$logs/$name" -f "$@" > "$logs/$name.run.log" 2>&1
  echo "== $name rc=$?" >> "$sum"
  ncu --import "$logs/$name.ncu-rep" --page details > "$logs/$name.details.txt" 2>&1
  ncu --import "$logs/$name.ncu-rep" --page raw --csv --metrics "$metrics" \
    > "$logs/$name.raw.csv" 2>&1
  python3 - "$logs/$name.raw.csv" "$logs/$name.details.txt" >> "$sum" <<'EOF'
import csv, re, sys
rows = list(csv.reader(open(sys.argv[1])))
hdr = next((r for r in rows if "Kernel Name" in r), None)
if hdr:
    for r in rows[rows.index(hdr) + 2:]:
        d = dict(zip(hdr, r))
        print(" ", d.get("Kernel Name", "")[:90])
        for k, v in d.items():
            if "__" in k: print(f"    {k} = {v}")
txt = open(sys.argv[2]).read()
for line in txt.splitlines():
    if re.search(r"Warp Cycles Per Issued Instruction|Achieved Occupancy|Theoretical Occupancy|Issued Ipc Active|Block Limit (Registers|Shared Mem)|Dynamic Shared Memory Per Block|Duration", line):
        print("   ", " ".join(line.split()))
EOF
  if [ "${KILN_SRC_PAGE:-1}" = 1 ]; then
    ncu --import "$logs/$name.ncu-rep" --page source --csv --print-source sass \
      > "$logs/$name.sass.csv" 2>&1
    python3 bench/sass_mix.py "$logs/$name.sass.csv" >> "$sum" 2>&1
  fi
}
IFS=';' read -ra shapes <<< "${NCU_SHAPES:-64 1024 0;64 1024 1}"
for sh in "${shapes[@]}"; do
  set -- $sh
  d=$1 s=$2 c=$3
  bsz=$((32768 / s)) h=$((2048 / d))
  cf=""; [ "$c" = 1 ] && cf="--causal"
  tag="d${d}_s${s}_c${c}"
  for tier in ${NCU_TIERS:-hopper tensor}; do
    KILN_GPU_TIER=$tier ncu_one "kiln_${tier}_$tag" "kiln_attn" $k bench attention \
      --backend cuda --dtype bf16 --batch $bsz --heads $h --head-dim $d --seqlen $s $cf \
      --warmup 2 --iters 2 --rounds 1
  done
  for be in ${NCU_SDPA:-flash cudnn}; do
    ncu_one "sdpa_${be}_$tag" "flash|fmha|sdpa|cudnn" python3 bench/ncu_sdpa.py $be $bsz $h $d $s $c
  done
done
tar czf "$out/ncu.tgz" -C "$logs" --exclude='*.ncu-rep' .
cat "$sum"
