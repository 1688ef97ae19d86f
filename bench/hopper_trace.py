#!/usr/bin/env python3
"""Where a hopper-tier block's time goes, item by item: a copy of the tree whose hopper
kernel stamps each consumer's phases (the SM's cycle counter) into the caller's workspace,
and the run that reads them; plus, on the tree as it is, the time per call of kiln's hopper
tier and of cuDNN over queries of S and keys of 1, 2, 4 and 8 S, which splits a call into a
cost per key tile and a cost per work item; and the kernels each contender (kiln's hopper and
tensor tiers, cuDNN, FlashAttention-2) launches at a few of those shapes, with the launch
shape the profiler records.

    python3 bench/hopper_trace.py tree DIR      # DIR: the sources, the hopper kernel stamped
    cmake -S DIR -B DIR/build -DKILN_BUILD_TESTS=OFF && cmake --build DIR/build -j
    KILN_LIBRARY=DIR/build/libkiln.so PYTHONPATH=python python3 bench/hopper_trace.py run [out.json]
    KILN_LIBRARY=build/libkiln.so PYTHONPATH=python python3 bench/hopper_trace.py keys [out.json]
    KILN_LIBRARY=build/libkiln.so PYTHONPATH=python python3 bench/hopper_trace.py kernels [out.json]

Stamps, per consumer warpgroup (its first thread) and item, in cycles: the item's start
(after the walk's step), Q and the first key tile ready, the first S product done, the key
loop done, the last P V product done, the output done, and five inside the output (printed
as its o_* pieces, EDITS below). The stamped copy also hands the
caller's workspace to unsplit calls (src/gpu/variants.c) so the stamps have somewhere to go.
Its extra stores and registers change its timing a little: it is for this measurement only.
"""
import json
import os
import statistics
import sys

ITEMS = 48  # items stamped per consumer
SLOTS = 16  # u64 per consumer per item: stamps 0-5, the item's tiles and index (6, 7),
# stamps inside the output (8-12)
NCMAX = 3  # consumers a block has at most (the long variant's three)
REC = 8 + NCMAX * ITEMS * SLOTS  # u64 per block: a header, then per consumer per item

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from decode_trace import CLOCKS, copy_tree  # noqa: E402

STAMPS = CLOCKS + """
#define TR_ITEMS %d
#define TR_REC %d
#define TR_SLOTS %d
""" % (ITEMS, REC, SLOTS)

# (anchor, replacement): each anchor must occur in kernels/attention_hopper.cu; the stamp
# goes right after it (or before it where the replacement says so).
EDITS = [
    ("extern \"C\" __global__ void __launch_bounds__(KILN_HOPPER_THREADS(D, KILN_MASK, KILN_HOPPER_LONG), 1)",
     STAMPS + "extern \"C\" __global__ void __launch_bounds__(KILN_HOPPER_THREADS(D, KILN_MASK, KILN_HOPPER_LONG), 1)"),
    ("    kiln_grid_wait();\n    kiln_grid_release();\n    kiln_sync();\n",
     "    kiln_grid_wait();\n    kiln_grid_release();\n    kiln_sync();\n"
     "    unsigned long long *tr_blk = (unsigned long long *)a.ws_out + (unsigned long long)TR_REC * blockIdx.x;\n"
     "    if (tid == 0) { tr_blk[0] = tr_now(); tr_blk[1] = tr_smid(); tr_blk[2] = clock64(); }\n"),
    ("    kiln_i32 qn = 0;\n    kiln_i32 rs = 0;",
     "    kiln_i32 tr_n = 0;\n    unsigned long long *tr_c = tr_blk + 8 + (unsigned long long)cw * TR_ITEMS * TR_SLOTS;\n"
     "#define TR(k) do { if (wtid == 0 && tr_n < TR_ITEMS) tr_c[tr_n * TR_SLOTS + (k)] = clock64(); } while (0)\n"
     "    kiln_i32 qn = 0;\n    kiln_i32 rs = 0;"),
    ("        if (it.q0 < 0) continue;\n#if HP_ITEM_SLOT\n        /* Every lane writes",
     "        if (it.q0 < 0) continue;\n        TR(0);\n"
     "        if (wtid == 0 && tr_n < TR_ITEMS) { tr_c[tr_n * TR_SLOTS + 6] = it.ntiles; tr_c[tr_n * TR_SLOTS + 7] = j; }\n"
     "#if HP_ITEM_SLOT\n        /* Every lane writes"),
    ("            HP_CONSUMER_WAIT(&bars[BAR_Q], (kiln_u32)qn & 1u);\n            HP_CONSUMER_WAIT(&bars[BAR_KFULL(st)], ph);\n",
     "            HP_CONSUMER_WAIT(&bars[BAR_Q], (kiln_u32)qn & 1u);\n            HP_CONSUMER_WAIT(&bars[BAR_KFULL(st)], ph);\n"
     "            TR(1);\n"),
    ("                kiln_mbar_arrive(&bars[BAR_KEMPTY(st)]);\n                if (HP_O_OWN && ntiles == 1) kiln_mbar_arrive(&bars[BAR_QEMPTY]);\n            }\n",
     "                kiln_mbar_arrive(&bars[BAR_KEMPTY(st)]);\n                if (HP_O_OWN && ntiles == 1) kiln_mbar_arrive(&bars[BAR_QEMPTY]);\n            }\n"
     "            TR(2);\n"),
    ("            HP_CONSUMER_WAIT(&bars[BAR_VFULL(st)], ph);\n            #pragma unroll\n",
     "            TR(3);\n            HP_CONSUMER_WAIT(&bars[BAR_VFULL(st)], ph);\n            #pragma unroll\n"),
    ("            if (lane == 0) kiln_mbar_arrive(&bars[BAR_VEMPTY(st)]);\n            hp_ring_next(&st, &ph);\n",
     "            if (lane == 0) kiln_mbar_arrive(&bars[BAR_VEMPTY(st)]);\n            hp_ring_next(&st, &ph);\n"
     "            TR(4);\n"),
    # Inside the output (after the last P V product, stamp 4): the row sums and the staging
    # tile written (8), the item read back or worked out again (9), the LSE and unstaged
    # stores (10), and on the path through the consumers' own 16-byte stores, their barrier
    # passed (11) and the stores issued (12); stamp 5 follows the proxy fence or the copy
    # engine's store.
    ("#if HP_ITEM_SLOT\n        const int4 ii = items",
     "        TR(8);\n#if HP_ITEM_SLOT\n        const int4 ii = items"),
    ("        #pragma unroll\n        for (kiln_i32 r = 0; r < 2; ++r)\n            live[r] =",
     "        TR(9);\n        #pragma unroll\n        for (kiln_i32 r = 0; r < 2; ++r)\n            live[r] ="),
    ("        if (staged) {\n#if HP_TMA_STORE\n            /* One thread hands",
     "        TR(10);\n        if (staged) {\n#if HP_TMA_STORE\n            /* One thread hands"),
    ("            kiln_bar_sync(HP_BAR_OWN(cw), 128);\n            /* Thread t copies",
     "            kiln_bar_sync(HP_BAR_OWN(cw), 128);\n            TR(11);\n            /* Thread t copies"),
    ("            /* Generic accesses to the staging rows",
     "            TR(12);\n            /* Generic accesses to the staging rows"),
    ("            ++qn;\n        }\n    }\n",
     "            ++qn;\n        }\n        TR(5);\n        ++tr_n;\n    }\n"
     "    if (wtid == 0 && cw == 0) tr_blk[3] = tr_now();\n"),
]

VARIANTS_EDIT = ("    a->num_splits = num_splits > 1 ? num_splits : 1;\n",
                 "    a->num_splits = num_splits > 1 ? num_splits : 1;\n"
                 "    if (workspace) a->ws_out = (float *)(((uintptr_t)workspace + 15u) & ~(uintptr_t)15u);\n")


def make_tree(dst):
    copy_tree(dst, {"kernels/attention_hopper.cu": EDITS, "src/gpu/variants.c": [VARIANTS_EDIT]},
              "hopper_trace")


def shape(d, s, causal, sk=None):
    """Suite 2's shape at head dim d and length s (B S = 32k, H D = 2048), keys sk."""
    return dict(b=32768 // s, h=2048 // d, d=d, sq=s, sk=sk or s, causal=causal)


def tensors(sh):
    import torch
    q = torch.randn(sh["b"], sh["sq"], sh["h"], sh["d"], device="cuda", dtype=torch.bfloat16)
    k = torch.randn(sh["b"], sh["sk"], sh["h"], sh["d"], device="cuda", dtype=torch.bfloat16)
    return q, k, torch.randn_like(k)


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def run(out_path):
    import torch
    import kiln
    os.environ["KILN_GPU_TIER"] = "hopper"
    report = {}
    for sh in (shape(64, 1024, False), shape(64, 1024, True), shape(64, 4096, False),
               shape(128, 1024, False), shape(128, 1024, True)):
        q, k, v = tensors(sh)
        out = torch.empty_like(q)
        ws = torch.zeros(64 << 20, dtype=torch.uint8, device="cuda")
        for _ in range(5):
            kiln.attention(q, k, v, causal=sh["causal"], out=out, workspace=ws)
        torch.cuda.synchronize()
        base = ws.data_ptr()
        off = ((base + 15) & ~15) - base
        nblk = torch.cuda.get_device_properties(0).multi_processor_count
        raw = ws[off:off + nblk * REC * 8].cpu().view(torch.int64).reshape(nblk, REC).tolist()
        name = f"D{sh['d']}_S{sh['sq']}{'_causal' if sh['causal'] else ''}"
        phases = {"q_k_wait": [], "s0": [], "per_tile": [], "last_pv": [], "output": [],
                  "step": [], "item": []}
        # The output's pieces: (name, from stamp, to stamp); a piece whose stamps a path
        # does not pass (11 and 12 with the copy engine's store) is left out.
        pieces = (("o_stage", 4, 8), ("o_item", 8, 9), ("o_rows", 9, 10), ("o_bar", 10, 11),
                  ("o_store", 11, 12), ("o_fence", 12, 5), ("o_tma", 10, 5))
        for name_, _, _ in pieces:
            phases[name_] = []
        for r in raw:
            for c in range(NCMAX):
                items = [r[8 + (c * ITEMS + i) * SLOTS: 8 + (c * ITEMS + i + 1) * SLOTS]
                         for i in range(ITEMS)]
                items = [x for x in items if x[0] and x[5]]
                for i, x in enumerate(items):
                    phases["q_k_wait"].append(x[1] - x[0])
                    phases["s0"].append(x[2] - x[1])
                    if x[6] > 1:
                        phases["per_tile"].append((x[3] - x[2]) / (x[6] - 1))
                    phases["last_pv"].append(x[4] - x[3])
                    phases["output"].append(x[5] - x[4])
                    phases["item"].append(x[5] - x[0])
                    if i > 0:
                        phases["step"].append(x[0] - items[i - 1][5])
                    for name_, a_, b_ in pieces:
                        if x[a_] and x[b_] and (name_ != "o_tma" or not x[11]):
                            phases[name_].append(x[b_] - x[a_])
        for name_, _, _ in pieces:
            if not phases[name_]:
                del phases[name_]
        summary = {k_: med(v_) for k_, v_ in phases.items()}
        report[name] = dict(shape=sh, cycles_median=summary)
        print(name + ": " + ", ".join(f"{k_} {v_:.0f}" for k_, v_ in summary.items()) +
              " cycles (medians over consumers and items)", flush=True)
        del q, k, v, out, ws
    if out_path:
        with open(out_path, "w") as f:
            json.dump({"gpu": torch.cuda.get_device_name(0), "shapes": report}, f, indent=1)


def keys(out_path):
    """Time per call of kiln's hopper tier and cuDNN at queries of S and keys of m S."""
    import torch
    import reference_benchmark as rb
    rb.set_kiln_tiers(["hopper"])
    report = {}
    for d, s in ((64, 1024), (128, 1024)):
        for m in (1, 2, 4, 8):
            sh = shape(d, s, False, sk=m * s)
            q, k, v = (x.transpose(1, 2) for x in tensors(sh))  # SDPA's [b, h, s, d]
            row = {}
            for c in (rb.kiln_attention_contenders(q, k, v) +
                      rb.sdpa_contenders(q, k, v, names=["cudnn"])):
                try:
                    with c.context():
                        row[c.name] = rb.time_events(c.fn, target_s=0.05)["median_s"] * 1e6
                except Exception as e:  # noqa: BLE001
                    row[c.name] = None
                    print(f"{c.name} D={d} Sk={m * s}: {e}", flush=True)
            report[f"D{d}_Sq{s}_Sk{m * s}"] = row
            print(f"D={d} Sq={s} Sk={m * s}: " +
                  ", ".join(f"{k_} {v_:.1f} us" for k_, v_ in row.items() if v_), flush=True)
            del q, k, v
    # Per call = items x (tiles x per-tile + per-item), items fixed over m: a line through
    # the four points per contender.
    for d in (64, 128):
        for name in ("kiln_hopper", "sdpa_cudnn"):
            pts = [(m, report[f"D{d}_Sq1024_Sk{m * 1024}"][name]) for m in (1, 2, 4, 8)]
            pts = [p for p in pts if p[1]]
            if len(pts) < 2:
                continue
            mx = sum(p[0] for p in pts) / len(pts)
            my = sum(p[1] for p in pts) / len(pts)
            slope = sum((p[0] - mx) * (p[1] - my) for p in pts) / sum((p[0] - mx) ** 2 for p in pts)
            icpt = my - slope * mx
            report[f"fit_D{d}_{name}"] = dict(us_per_1k_keys=slope, us_at_0_keys=icpt)
            print(f"fit D={d} {name}: {slope:.1f} us per 1k keys, {icpt:.1f} us at 0 keys", flush=True)
    if out_path:
        with open(out_path, "w") as f:
            json.dump({"gpu": torch.cuda.get_device_name(0), "shapes": report}, f, indent=1)


def kernels(out_path):
    """The kernels each contender launches at a few suite-2 shapes, with their launch shape
    as the profiler records it (grid, block, registers a thread, shared memory) and time."""
    import tempfile
    import torch
    import reference_benchmark as rb
    rb.set_kiln_tiers(["hopper", "tensor"])
    report = {}
    for d, s, causal in ((64, 1024, False), (64, 1024, True), (128, 1024, False),
                         (64, 4096, False)):
        sh = shape(d, s, causal)
        q, k, v = (x.transpose(1, 2) for x in tensors(sh))
        name = f"D{d}_S{s}{'_causal' if causal else ''}"
        report[name] = {}
        for c in (rb.kiln_attention_contenders(q, k, v, causal=causal) +
                  rb.sdpa_contenders(q, k, v, causal=causal, names=["cudnn", "flash"])):
            try:
                with c.context():
                    for _ in range(3):
                        c.fn()
                    torch.cuda.synchronize()
                    with torch.profiler.profile(
                            activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
                        for _ in range(3):
                            c.fn()
                        torch.cuda.synchronize()
            except Exception as e:  # noqa: BLE001
                print(f"{name} {c.name}: {e}", flush=True)
                continue
            with tempfile.NamedTemporaryFile(suffix=".json") as tf:
                prof.export_chrome_trace(tf.name)
                with open(tf.name) as f:
                    ev = json.load(f).get("traceEvents", [])
            seen = {}
            for e in ev:
                if e.get("cat") != "kernel":
                    continue
                a_ = e.get("args", {})
                key = e.get("name", "?")
                row = seen.setdefault(key, dict(
                    grid=a_.get("grid"), block=a_.get("block"),
                    regs=a_.get("registers per thread"), smem=a_.get("shared memory"),
                    blocks_per_sm=a_.get("blocks per SM"), us=[]))
                row["us"].append(e.get("dur", 0))
            report[name][c.name] = seen
            for key, row in seen.items():
                print(f"{name} {c.name}: {key[:110]} grid {row['grid']} block {row['block']} "
                      f"regs {row['regs']} smem {row['smem']} blocks/SM {row['blocks_per_sm']} "
                      f"{med(row['us']):.1f} us", flush=True)
        del q, k, v
    if out_path:
        with open(out_path, "w") as f:
            json.dump({"gpu": torch.cuda.get_device_name(0), "shapes": report}, f, indent=1)


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "tree":
        make_tree(sys.argv[2])
    elif len(sys.argv) >= 2 and sys.argv[1] in ("run", "keys", "kernels"):
        {"run": run, "keys": keys, "kernels": kernels}[sys.argv[1]](
            sys.argv[2] if len(sys.argv) > 2 else None)
    else:
        sys.exit(__doc__)
