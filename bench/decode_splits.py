#!/usr/bin/env python3
"""Decode bandwidth of kiln's decode kernel for each explicit split count, beside the count
kiln chooses (num_splits=0), on BENCH.md suite 3's shapes (q length 1, 32 / 8 heads, D=128,
bf16, dense KV): the data behind the split rule in src/gpu/backend_gpu.c.
    PYTHONPATH=python python3 bench/decode_splits.py [out.json]
KILN_BENCH_SPLITS (e.g. "16,32,33") replaces the counts tried; KILN_BENCH_SHAPES
("B:L,B:L") the shapes.
"""
import json
import os
import sys

import torch

import kiln

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reference_benchmark import time_events  # noqa: E402


def rate(fn, kv_bytes):
    """TB/s of K+V read: the reference benchmark's event timing (suites 2, 3, 5)."""
    return kv_bytes / time_events(fn, target_s=0.03)["median_s"] / 1e12


def main():
    rows = []
    hq, hkv, d = 32, 8, 128
    counts = [int(x) for x in os.environ.get("KILN_BENCH_SPLITS", "1,2,4,8,16,32,64").split(",")]
    shapes = [tuple(int(y) for y in x.split(":")) for x in os.environ.get(
        "KILN_BENCH_SHAPES", "1:4096,1:32768,8:4096,8:32768,64:4096,64:32768").split(",")]
    for b, L in shapes:
        if True:
            q = torch.randn(b, 1, hq, d, device="cuda", dtype=torch.bfloat16)
            k = torch.randn(b, L, hkv, d, device="cuda", dtype=torch.bfloat16)
            v = torch.randn_like(k)
            out = torch.empty_like(q)
            kv = 2 * k.numel() * 2
            row = {"B": b, "L": L}
            for s in [0] + counts:
                row[f"s{s}"] = rate(lambda: kiln.attention(q, k, v, out=out, num_splits=s), kv)
                if s == 0:
                    row["auto"] = kiln.last_dispatch()
            rows.append(row)
            print(f"B={b:3d} L={L:6d} auto={row['auto']['num_splits']:3d} ({row['s0']:.2f})  " +
                  "  ".join(f"{s}:{row[f's{s}']:.2f}" for s in counts) +
                  " TB/s", flush=True)
            del q, k, v, out
    if len(sys.argv) > 1:
        with open(sys.argv[1], "w") as f:
            json.dump({"gpu": torch.cuda.get_device_name(0), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
