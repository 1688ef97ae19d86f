#!/usr/bin/env python3
"""Where a decode call's time goes: a copy of the tree whose decode kernel stamps each
block's times (%globaltimer) into the caller's workspace, and the run that reads them.

    python3 bench/decode_trace.py tree DIR      # DIR: the sources, kernels/decode.cu stamped
    cmake -S DIR -B DIR/build -DKILN_BUILD_TESTS=OFF && cmake --build DIR/build -j
    KILN_LIBRARY=DIR/build/libkiln.so PYTHONPATH=python python3 bench/decode_trace.py run [out.json]

Per block it records the start, the end of the key loop, the count of the split group
(before and after the atomic), the merge's weights and the end, at 32 MiB into a 40 MiB
workspace the script passes (the library's own workspace is far smaller at these shapes).
It prints, per shape of BENCH.md suite 3 (32 / 8 heads, D 128, bf16, dense), the spread of
the loop ends, the tail of the last blocks and the phases of both kinds of block. The
stamped kernel is for this measurement only: its extra stores change its timing a little.
"""
import json
import os
import shutil
import statistics
import sys

# The device clocks both trace scripts read (bench/hopper_trace.py imports this).
CLOCKS = r'''
__device__ __forceinline__ unsigned long long tr_now()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
__device__ __forceinline__ unsigned tr_smid()
{
    unsigned r;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(r));
    return r;
}
'''

STAMPS = CLOCKS + r'''
#define TR_REC(lastv) do { if (kiln_thread_x() == 0) { \
    unsigned long long *rec = (unsigned long long *)((char *)a.ws_out + (32u << 20)) + \
        8ull * (blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z)); \
    rec[0] = tr_t0; rec[1] = tr_t1; rec[4] = tr_t2; rec[5] = tr_t3; rec[6] = tr_t4; \
    rec[2] = tr_now(); rec[3] = tr_smid() | ((unsigned long long)(lastv) << 16); } } while (0)
'''

EDITS = [
    ("KILN_KERNEL(NT) kiln_attn_decode(kiln_attn_args a)\n{",
     STAMPS + "KILN_KERNEL(NT) kiln_attn_decode(kiln_attn_args a)\n{\n"
     "    const unsigned long long tr_t0 = tr_now();\n"
     "    unsigned long long tr_t1 = 0, tr_t2 = 0, tr_t3 = 0, tr_t4 = 0;"),
    ("        sl[warp][2 * t + 1] = st.l[1];\n    }\n    kiln_sync();\n",
     "        sl[warp][2 * t + 1] = st.l[1];\n    }\n    kiln_sync();\n    tr_t1 = tr_now();\n"),
    ("        kiln_u64 *ctr = dec_counter(&a, se.row0, p0, group, hk);\n",
     "        kiln_u64 *ctr = dec_counter(&a, se.row0, p0, group, hk);\n        tr_t2 = tr_now();\n"),
    ("    if (!last_flag) return; /* block-uniform */",
     "    tr_t3 = tr_now();\n    tr_t4 = tr_t3;\n    if (!last_flag) { TR_REC(0); return; }"),
    ("    float tot = 0.0f;\n", "    float tot = 0.0f;\n    tr_t4 = tr_now();\n"),
    ("    const float tinv = tot == 0.0f ? 0.0f : 1.0f / tot;\n",
     "    const float tinv = tot == 0.0f ? 0.0f : 1.0f / tot;\n    kiln_sync();\n    TR_REC(1);\n"),
]


SOURCES = ("CMakeLists.txt", "CMakePresets.json", "cmake", "include", "kernels", "src", "tools",
           "bench", "python", "tests")


def copy_tree(dst, edits, script):
    """A copy of the repository's sources at dst, with edits {path: [(old, new), ...]}: each
    old must occur exactly once in its file (script names the caller in the error)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    os.makedirs(dst, exist_ok=True)
    for name in SOURCES:
        src = os.path.join(root, name)
        if os.path.isdir(src):
            shutil.copytree(src, os.path.join(dst, name), dirs_exist_ok=True)
        elif os.path.exists(src):
            shutil.copy(src, dst)
    for rel, pairs in edits.items():
        path = os.path.join(dst, rel)
        text = open(path).read()
        for old, new in pairs:
            if text.count(old) != 1:
                sys.exit(f"{script}: {rel} has {text.count(old)} copies of the line a stamp "
                         f"goes at (one expected):\n{old}")
            text = text.replace(old, new, 1)
        open(path, "w").write(text)


def make_tree(dst):
    copy_tree(dst, {"kernels/decode.cu": EDITS}, "decode_trace")


def q(a, f):
    return a[min(len(a) - 1, int(f * len(a)))]


def run(out_path):
    import torch
    import kiln
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from reference_benchmark import time_events
    hq, hkv, d = 32, 8, 128
    report = {}
    for b, L in ((1, 4096), (1, 32768), (8, 4096), (8, 32768)):
        q_ = torch.randn(b, 1, hq, d, device="cuda", dtype=torch.bfloat16)
        k = torch.randn(b, L, hkv, d, device="cuda", dtype=torch.bfloat16)
        v = torch.randn_like(k)
        out = torch.empty_like(q_)
        ws = torch.zeros(40 << 20, dtype=torch.uint8, device="cuda")
        fn = lambda: kiln.attention(q_, k, v, out=out, workspace=ws)  # noqa: E731
        t = time_events(fn, target_s=0.03)["median_s"]
        splits = kiln.last_dispatch()["num_splits"]
        if splits < 2:
            continue
        for _ in range(10):
            fn()
        torch.cuda.synchronize()
        base = ws.data_ptr()
        off = ((base + 15) & ~15) - base + (32 << 20)
        nb = b * hkv * splits
        rec = ws[off:off + nb * 64].cpu().view(torch.int64).reshape(nb, 8).tolist()
        t0 = min(r[0] for r in rec)
        us = lambda x: (x - t0) / 1e3  # noqa: E731
        rows = [dict(start=us(r[0]), loop_end=us(r[1]), end=us(r[2]), sm=r[3] & 0xffff,
                     last=(r[3] >> 16) & 1, pre_count=us(r[4]), counted=us(r[5]),
                     weights=us(r[6])) for r in rec]
        ends = sorted(x["loop_end"] for x in rows)
        print(f"B={b} L={L}: {splits} splits, {nb} blocks, {t * 1e6:.1f} us per call (events), "
              f"{2 * k.numel() * 2 / t / 1e12:.2f} TB/s; key loops end at p10 {q(ends, .1):.1f} "
              f"p50 {q(ends, .5):.1f} max {ends[-1]:.1f} us, last block ends at "
              f"{max(x['end'] for x in rows):.1f} us", flush=True)
        for kind, sel in (("other blocks", 0), ("last blocks", 1)):
            xs = [x for x in rows if x["last"] == sel]
            med = lambda f: statistics.median(f(x) for x in xs)  # noqa: E731
            print(f"  {kind}: warps' merge and partial {med(lambda x: x['pre_count'] - x['loop_end']):.2f}"
                  f", count {med(lambda x: x['counted'] - x['pre_count']):.2f}"
                  f", weights {med(lambda x: x['weights'] - x['counted']):.2f}"
                  f", merge {med(lambda x: x['end'] - x['weights']):.2f} us (medians)")
        per_sm = {}
        for x in rows:
            per_sm.setdefault(x["sm"], []).append(x["loop_end"])
        by_count = {}
        for v_ in per_sm.values():
            by_count.setdefault(len(v_), []).append(max(v_))
        print("  multiprocessors: " + ", ".join(
            f"{c} block(s) on {len(v_)}, loops end at p50 {statistics.median(v_):.1f} us"
            for c, v_ in sorted(by_count.items())))
        report[f"B{b}_L{L}"] = dict(splits=splits, us_per_call=t * 1e6, blocks=rows)
        del q_, k, v, ws
    if out_path:
        with open(out_path, "w") as f:
            json.dump({"gpu": torch.cuda.get_device_name(0), "shapes": report}, f)


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "tree":
        make_tree(sys.argv[2])
    elif len(sys.argv) >= 2 and sys.argv[1] == "run":
        run(sys.argv[2] if len(sys.argv) > 2 else None)
    else:
        sys.exit(__doc__)
