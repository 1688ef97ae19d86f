#!/usr/bin/env python3
"""kiln against PyTorch SDPA on a GPU, by BENCH.md's protocols.

Suite 1, the reference protocol (always): B=1, H=16, D=64, bf16, non-causal,
S in {128, 512, 1024}; correctness first (max |error| against an fp64 reference), then 50
warm-up calls and 500 measured calls over 7 rounds alternating the contenders' order, each
call followed by torch.cuda.synchronize(), wall clock per call, median. Contenders: every
SDPA backend that runs (flash, cuDNN, efficient, math) and kiln.

--suite adds suite 2 (prefill TFLOP/s, CUDA events over back-to-back calls), suite 3 (decode
K+V bandwidth at B = 1, 8 and 64, dense and paged with pages of 16 and 64, against a device
copy of the same bytes timed in the same run) and suite 5 (silu_and_mul against a
device copy of the same bytes).

Writes <out>/<suite>_<machine>_<date>.json (and .png for suites 1-3) and prints each table.
Run from the repository root after building (build/libkiln.so):
    PYTHONPATH=python python3 bench/reference_benchmark.py --suite
    PYTHONPATH=python python3 bench/reference_benchmark.py --only decode   (suite 3 alone)
"""

import argparse
import datetime
import json
import math
import os
import platform
import re
import statistics
import subprocess
import sys
import time
import traceback

import warnings

import torch
import torch.nn.functional as F

import kiln

SDPA_BACKENDS = ["flash", "cudnn", "efficient", "math"]


class _HostEvent:
    """torch.cuda.Event's interface over the host clock, for --dry-run on a CPU."""

    def __init__(self, enable_timing=True):
        self.t = None

    def record(self):
        self.t = time.perf_counter()

    def synchronize(self):
        pass

    def elapsed_time(self, other):
        return (other.t - self.t) * 1e3


# --dry-run swaps these for the CPU, so the whole script can be checked without a GPU.
DEV = "cuda"
sync = torch.cuda.synchronize
Event = torch.cuda.Event


def sdpa_backend_enum(name):
    from torch.nn.attention import SDPBackend
    return {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
            "efficient": SDPBackend.EFFICIENT_ATTENTION, "math": SDPBackend.MATH}[name]


class Contender:
    """A named callable, with a context (an SDPA backend choice) entered around each block of
    calls rather than each call, so its cost stays out of the figures."""

    def __init__(self, name, fn, context=None):
        self.name = name
        self.fn = fn
        self.context = context or (lambda: _Null())
        self.error = None

    def __call__(self):
        return self.fn()


class _Null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def sdpa_contenders(q, k, v, causal=False, gqa=False, names=SDPA_BACKENDS):
    try:
        from torch.nn.attention import sdpa_kernel
    except ImportError as exc:  # a PyTorch older than 2.3
        return [_unavailable(f"sdpa_{n}", str(exc)) for n in names]
    out = []
    for name in names:
        backend = sdpa_backend_enum(name)
        kw = {"is_causal": causal}
        if gqa:
            kw["enable_gqa"] = True

        def fn(kw=kw):
            return F.scaled_dot_product_attention(q, k, v, **kw)
        out.append(Contender(f"sdpa_{name}", fn, lambda b=backend: sdpa_kernel(b)))
    return out


def _unavailable(name, reason):
    def fn():
        raise RuntimeError(reason)
    return Contender(name, fn)


def runs(c):
    """Runs c once under its context; returns (output, None) or (None, reason)."""
    try:
        with c.context():
            o = c()
        sync()
        return o, None
    except Exception as exc:  # an SDPA backend that cannot take this shape, for one
        sync()
        return None, f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}"


def stats_us(samples_s):
    us = sorted(s * 1e6 for s in samples_s)
    n = len(us)
    q = lambda f: us[min(n - 1, max(0, int(round(f * (n - 1)))))]  # noqa: E731
    return {"median_us": statistics.median(us), "p10_us": q(0.10), "p90_us": q(0.90),
            "min_us": us[0], "max_us": us[-1], "iqr_us": q(0.75) - q(0.25), "n": n}


# ------------------------------------------------------------------------------------------
# Suite 1: the reference protocol


def reference_fp64(q, k, v):
    """[b, h, s, d] attention in fp64 (non-causal)."""
    q, k, v = q.double(), k.double(), v.double()
    s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    return torch.matmul(torch.softmax(s, dim=-1), v)


def time_wall(contenders, warmup, calls, rounds):
    """Per-call wall clock (call + torch.cuda.synchronize()), rounds alternating order."""
    for c in contenders:
        with c.context():
            for _ in range(warmup):
                c()
                sync()
    samples = {c.name: [] for c in contenders}
    host = {c.name: [] for c in contenders}
    per_round = {c.name: [] for c in contenders}
    base, extra = divmod(calls, rounds)
    clock = time.perf_counter
    for r in range(rounds):
        n = base + (1 if r < extra else 0)
        order = contenders if r % 2 == 0 else contenders[::-1]
        for c in order:
            fn = c.fn
            got, returned = [], []
            with c.context():
                for _ in range(n):
                    t0 = clock()
                    fn()
                    t1 = clock()
                    sync()
                    got.append(clock() - t0)
                    returned.append(t1 - t0)
            samples[c.name] += got
            host[c.name] += returned
            per_round[c.name].append(statistics.median(got) * 1e6)
    # host_us: time until the call returned (argument handling and launch, no GPU wait),
    # which tells a library's per-call overhead from its kernel time.
    return {name: dict(stats_us(s), round_medians_us=per_round[name],
                       host_median_us=statistics.median(host[name]) * 1e6)
            for name, s in samples.items()}


class _Env:
    """Sets environment variables for a block. kiln reads KILN_GPU_TIER and KILN_GPU_PDL
    when a context starts, so each setting of the variables gets contexts of its own: the
    binding's cached contexts are swapped for the ones this setting made before (none the
    first time) on the way in, and back on the way out. A setting's context is thus created
    once, by its contender's first call (outside the timing), as an application creates
    one; a fresh context in every timed sample put its start (loading the kernels, the
    split-KV workspace) into that sample. None is freed before the process ends."""

    kept = {}  # sorted (name, value) pairs -> the binding's contexts made under them

    def __init__(self, values):
        self.values, self.old, self.outer = values, {}, None
        self.key = tuple(sorted(values.items()))

    def __enter__(self):
        self.old = {name: os.environ.get(name) for name in self.values}
        os.environ.update(self.values)
        self.outer = kiln._arrays.swap_contexts(_Env.kept.get(self.key))
        return self

    def __exit__(self, *exc):
        for name, old in self.old.items():
            if old is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = old
        _Env.kept[self.key] = kiln._arrays.swap_contexts(self.outer)
        return False


# kiln's GPU tiers, each forced through KILN_GPU_TIER; a tier that does not cover a shape
# says so and is reported as not run. A name ending in "-nopdl" (--kiln-tiers
# hopper,hopper-nopdl) is the same tier with KILN_GPU_PDL=0: its kernels queued without
# programmatic dependent launch, an A/B of that in one run.
KILN_TIERS = ["hopper", "tensor", "generic"]


def tier_context(tier):
    if tier.endswith("-nopdl"):
        return lambda: _Env({"KILN_GPU_TIER": tier[:-len("-nopdl")], "KILN_GPU_PDL": "0"})
    return lambda: _Env({"KILN_GPU_TIER": tier})


def kiln_attention_contenders(q, k, v, causal=False, suffix=""):
    """kiln on SDPA's [b, h, s, d] tensors, passed as [b, s, h, d] views (no copy), once per
    tier."""
    qt, kt, vt = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
    out = torch.empty_like(qt)

    def fn():
        return kiln.attention(qt, kt, vt, causal=causal, out=out)
    return [Contender(f"kiln_{tier}{suffix}", fn, tier_context(tier)) for tier in KILN_TIERS]


def set_kiln_tiers(names):
    KILN_TIERS[:] = names


def suite_reference(args, meta):
    b, h, d = 1, 16, 64
    dev = torch.device(DEV)
    results = []
    for s in args.seqlens:
        g = torch.Generator(device=dev).manual_seed(s)
        q, k, v = (torch.randn(b, h, s, d, device=dev, dtype=torch.bfloat16, generator=g)
                   for _ in range(3))
        want = reference_fp64(q, k, v)
        contenders = sdpa_contenders(q, k, v)
        contenders += kiln_attention_contenders(q, k, v)
        row = {"S": s, "B": b, "H": h, "D": d, "dtype": "bf16", "causal": False,
               "layout": "[b, h, s, d] storage; kiln takes its transposed view",
               "contenders": {}}
        live = []
        for c in contenders:
            o, err = runs(c)
            entry = {}
            if err:
                entry["error"] = err
            else:
                if c.name.startswith("kiln"):
                    o = o.transpose(1, 2)
                    entry["dispatch"] = kiln.last_dispatch()
                entry["max_abs_error"] = (o.double() - want).abs().max().item()
                live.append(c)
            row["contenders"][c.name] = entry
        try:  # what KILN_GPU_TIER=auto (the default) picks for this shape
            kiln.attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2))
            row["kiln_auto_dispatch"] = kiln.last_dispatch()
        except kiln.KilnError as exc:
            row["kiln_auto_dispatch"] = {"error": str(exc)}
        for name, st in time_wall(live, args.warmup, args.calls, args.rounds).items():
            row["contenders"][name].update(st)
        # The GPU time of a call: CUDA events around back-to-back calls (bounded by the
        # host where a call's host part is longer than its kernels), and the same calls
        # replayed from a CUDA graph (the kernels alone).
        for c in live:
            e = row["contenders"][c.name]
            with c.context():
                e["events_us"] = time_events(c.fn, target_s=0.02)["median_s"] * 1e6
            graph_timed(c, e)
            if "graph" in e:
                e["graph_us"] = e["graph"]["median_s"] * 1e6
        results.append(row)
        print_reference_row(row)
    return {"suite": "reference", "protocol": {
        "warmup": args.warmup, "calls": args.calls, "rounds": args.rounds,
        "timing": "wall clock per call, each call followed by torch.cuda.synchronize(); "
                  "median over all measured calls",
        "gpu_timing": "events_us: CUDA events around back-to-back calls, median of 5; "
                      "graph_us: 20 calls captured in a CUDA graph, replayed between "
                      "events, median of 5"}, "meta": meta, "results": results}


def best_sdpa(row, key="median_us", lower=True):
    best = None
    for name, e in row["contenders"].items():
        if name.startswith("sdpa_") and key in e:
            if best is None or (e[key] < best[1] if lower else e[key] > best[1]):
                best = (name[5:], e[key])
    return best


def best_kiln(row):
    """The fastest kiln tier that ran this shape."""
    ran = [(e["median_us"], n) for n, e in row["contenders"].items()
           if n.startswith("kiln") and "median_us" in e]
    return min(ran)[1] if ran else None


def print_reference_row(row):
    c = row["contenders"]
    parts = [f"S={row['S']:5d}"]
    for name, e in c.items():
        if "median_us" in e:
            gpu = f" gpu {e['events_us']:.1f}/{e.get('graph_us', float('nan')):.1f}" \
                if "events_us" in e else ""
            parts.append(f"{name} {e['median_us']:.1f}us (host {e['host_median_us']:.1f}"
                         f"{gpu}, err {e['max_abs_error']:.4f})")
        else:
            parts.append(f"{name} n/a")
    print("  ".join(parts), flush=True)


def reference_table(report):
    lines = ["| S | kiln (us) | best SDPA (us) | ratio (SDPA / kiln) | kiln max err | "
             "SDPA max err | all SDPA (us) | host part: kiln / best SDPA (us) |",
             "|---|---|---|---|---|---|---|---|"]
    for row in report["results"]:
        c = row["contenders"]
        kname = best_kiln(row)
        k = c.get(kname, {}) if kname else {}
        best = best_sdpa(row)
        kt = f"{k['median_us']:.1f}" if "median_us" in k else "n/a"
        bt = f"{best[1]:.1f} ({best[0]})" if best else "n/a"
        ratio = f"{best[1] / k['median_us']:.2f}x" if best and "median_us" in k else "n/a"
        kerr = f"{k['max_abs_error']:.4f}" if "max_abs_error" in k else "n/a"
        serr = c.get(f"sdpa_{best[0]}", {}).get("max_abs_error") if best else None
        serr = f"{serr:.4f}" if serr is not None else "n/a"
        alls = ", ".join(f"{n[5:]} {e['median_us']:.1f}" if "median_us" in e else f"{n[5:]} -"
                         for n, e in c.items() if n.startswith("sdpa_"))
        kh = f"{k['host_median_us']:.1f}" if "host_median_us" in k else "n/a"
        bh = c.get(f"sdpa_{best[0]}", {}).get("host_median_us") if best else None
        bh = f"{bh:.1f}" if bh is not None else "n/a"
        if kname:
            kt += f" ({kname[5:]})"
        lines.append(f"| {row['S']} | {kt} | {bt} | {ratio} | {kerr} | {serr} | {alls} | "
                     f"{kh} / {bh} |")
    return "\n".join(lines)


def throughput_table(report):
    """One line per shape: each contender's rate (TFLOP/s or TB/s)."""
    suite = report["suite"]
    key, unit = ("tflops", "TFLOP/s") if suite == "prefill" else ("tb_per_s", "TB/s")
    lines = [f"{suite} ({unit}):"]
    for r in report["results"]:
        if suite == "prefill":
            label = f"D={r['D']} S={r['S']} B={r['B']} {'causal' if r['causal'] else 'full'}"
        elif suite == "decode":
            label = f"B={r['B']} L={r['L']}"
        else:
            label = f"{r['rows']}x{2 * r['d']}"
        cells = [(f"{n} {e[key]:.2f}" + (f" ({e['fraction_of_copy']:.2f} of copy)"
                                          if "fraction_of_copy" in e else ""))
                 if key in e else f"{n} -" for n, e in r["contenders"].items()]
        lines.append(f"  {label:<28} " + "  ".join(cells))
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------
# Suites 2, 3, 5: CUDA events over back-to-back calls


def time_events(fn, target_s=0.05, repeats=5):
    """Seconds per call: events around back-to-back calls, count sized to ~target_s, median
    over repeats. The first call (JIT compile, plan) is outside the timing."""
    return time_events_interleaved([Contender("fn", fn)], target_s, repeats)["fn"]


def size_calls(fn, start, end, target_s, repeats):
    """(calls per sample, samples) for fn: one call outside the timing (JIT compile, plan),
    one timed to size the count to ~target_s, and up to 3 warm-up calls."""
    fn()
    sync()
    start.record()
    fn()
    end.record()
    end.synchronize()
    one = max(start.elapsed_time(end) / 1e3, 1e-6)
    n = max(1, min(200, int(target_s / one)))
    if one > 0.5:  # a slow path: a few samples say enough and keep the run inside its lease
        repeats = min(repeats, 2)
    for _ in range(min(n, 3)):
        fn()
    return n, repeats


def time_events_interleaved(contenders, target_s=0.05, repeats=5):
    """time_events for several contenders at once: each one's count sized and warmed up as
    there, then sample r of every contender in turn, the order reversed every sample, so a
    drift of the GPU's clocks over the run (power, temperature) falls on all of them alike
    rather than on whichever is timed last (with one contender: time_events). Returns
    {name: timing record}."""
    start, end = Event(enable_timing=True), Event(enable_timing=True)
    plan = []
    for c in contenders:
        with c.context():
            plan.append((c,) + size_calls(c.fn, start, end, target_s, repeats))
    times = {c.name: [] for c, _, _ in plan}
    for r in range(repeats):
        for c, n, reps in (plan if r % 2 == 0 else plan[::-1]):
            if r >= reps:
                continue
            with c.context():
                start.record()
                for _ in range(n):
                    c.fn()
                end.record()
                end.synchronize()
            times[c.name].append(start.elapsed_time(end) / 1e3 / n)
    return {c.name: sample_stats(times[c.name], n) for c, n, _ in plan}


def sample_stats(times, calls):
    """The timing record of suites 2, 3 and 5 from per-call seconds of each sample."""
    return {"median_s": statistics.median(times), "min_s": min(times), "max_s": max(times),
            "calls_per_sample": calls, "samples": len(times), "samples_s": times}


def time_graph(fn, calls=20, repeats=5):
    """Seconds per call of the GPU work alone: `calls` back-to-back calls captured once in a
    CUDA graph (warmed up and captured on one side stream, so per-stream state such as a
    split-KV workspace exists before the capture), the graph replayed between two events,
    median over repeats. Host costs (Python, argument checks, launches) are out of it, so
    it measures what a serving loop that replays a captured step gets. None off the GPU."""
    if DEV != "cuda":
        return None
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    s.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=s):
        for _ in range(calls):
            fn()
    g.replay()
    sync()
    start, end = Event(enable_timing=True), Event(enable_timing=True)
    times = []
    for _ in range(repeats):
        start.record()
        g.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3 / calls)
    del g
    return sample_stats(times, calls)


def graph_timed(c, entry):
    """Adds contender c's CUDA-graph timing to entry ("graph"), or the reason it could not
    be captured ("graph_error")."""
    try:
        with c.context():
            g = time_graph(c.fn)
        if g is not None:
            entry["graph"] = g
    except Exception as exc:  # a contender that cannot be captured
        sync()
        entry["graph_error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}"


def run_and_time(args, cs, entries):
    """Suites 2, 3 and 5: every contender in cs once for its output (kiln's dispatch of that
    call recorded), then those that ran timed by args.timing: each contender's samples in
    turn, the order reversed every sample (interleaved), or all of one's before the next
    one's (sequential). entries gets {name: record} ("error" for a contender that could
    not run); returns ({name: output}, the contenders that ran). kiln's outputs are copied:
    its tiers write into one `out=` buffer, which the next tier's call overwrites."""
    outs, live = {}, []
    for c in cs:
        o, err = runs(c)
        entries[c.name] = {"error": err} if err else {}
        if err:
            continue
        kilnish = c.name.startswith("kiln")
        outs[c.name] = o.clone() if kilnish else o
        if kilnish:
            entries[c.name]["dispatch"] = kiln.last_dispatch()
        live.append(c)
    if args.timing == "sequential":
        for c in live:
            with c.context():
                entries[c.name].update(time_events(c.fn))
    else:
        for name, st in time_events_interleaved(live).items():
            entries[name].update(st)
    return outs, live


def timing_note(args):
    """How suites 2, 3 and 5 took their samples, for the report's "timing" field."""
    return "CUDA events over back-to-back calls, median of 5" + (
        ", each contender's in turn" if args.timing == "interleaved"
        else ", one contender after another")


def suite_prefill(args, meta):
    dev = torch.device(DEV)
    results = []
    # D = 64 and 128 at every length; D = 96 and 256 (the head dims that fall off the fast
    # tiers first) at 4k. H * D = 2048 (2016 for D = 96).
    shapes = [(d, s) for d in (64, 128) for s in args.prefill_seqlens]
    shapes += [(d, s) for d in (96, 256) for s in args.prefill_seqlens if s == 4096]
    shapes = args.prefill_pairs or sorted(shapes)
    for d, s in shapes:
        h = 2048 // d
        b = max(1, args.prefill_tokens // s)
        for causal in (False, True):
            g = torch.Generator(device=dev).manual_seed(s + d)
            q, k, v = (torch.randn(b, h, s, d, device=dev, dtype=torch.bfloat16,
                                   generator=g) for _ in range(3))
            flops = 4 * b * h * s * s * d / (2 if causal else 1)
            row = {"B": b, "H": h, "S": s, "D": d, "causal": causal, "flops": flops,
                   "contenders": {}}
            cs = sdpa_contenders(q, k, v, causal, names=args.sdpa)
            cs += kiln_attention_contenders(q, k, v, causal)
            outs, _ = run_and_time(args, cs, row["contenders"])
            for name in outs:
                if name.startswith("kiln"):
                    outs[name] = outs[name].transpose(1, 2)
                e = row["contenders"][name]
                e["tflops"] = flops / e["median_s"] / 1e12
            # Agreement with the best-established backend that ran (fp64 at this size
            # would dominate the run).
            ref_name = next((n for n in ("sdpa_cudnn", "sdpa_flash", "sdpa_efficient")
                             if n in outs), None)
            for name in outs:
                if ref_name and name.startswith("kiln"):
                    row["contenders"][name]["max_abs_diff_vs_" + ref_name] = \
                        (outs[name].float() - outs[ref_name].float()).abs().max().item()
            del q, k, v, outs
            results.append(row)
            print("prefill D={D} S={S} B={B} H={H} {c}: ".format(
                c="causal" if causal else "full", **row) + "  ".join(
                f"{n} {e['tflops']:.1f}" if "tflops" in e else f"{n} n/a"
                for n, e in row["contenders"].items()) + " TFLOP/s", flush=True)
    return {"suite": "prefill", "timing": timing_note(args),
            "flops": "4*B*H*S*S*D, halved for causal", "meta": meta, "results": results}


def shape_pairs(text, option, what, example):
    """--decode-shapes and --prefill-shapes: "A:B,A:B" as [(A, B), ...], both positive; []
    for ""."""
    pairs = []
    for pair in (p.strip() for p in text.split(",")):
        if not pair:
            continue
        parts = pair.split(":")
        if len(parts) != 2 or not all(x.isdigit() and int(x) > 0 for x in parts):
            sys.exit(f"{option}: {pair!r} is not a {what} pair of positive integers "
                     f"(e.g. {example})")
        pairs.append((int(parts[0]), int(parts[1])))
    return pairs


def suite_decode(args, meta):
    """K+V read bandwidth of one decode step, against a device copy of the same bytes timed
    in the same run (its rate counts bytes read + written, so the two compare as fractions
    of what the memory system moves)."""
    dev = torch.device(DEV)
    hq, hkv, d = 32, 8, 128
    results = []
    for b, L in args.decode_pairs:
        results.append(decode_row(args, dev, b, hq, hkv, d, L))
    return {"suite": "decode", "timing": timing_note(args) + "; graph: 20 calls captured in "
                                         "a CUDA graph, replayed between events, median of 5 "
                                         "(tb_per_s_graph)",
            "bandwidth": "bytes of K and V read (2*B*L*Hkv*D*2) per second; copy: bytes "
                         "read + written by a device copy of 2*B*L*Hkv*D*2 bytes",
            "meta": meta, "results": results}


def decode_row(args, dev, b, hq, hkv, d, L):
    g = torch.Generator(device=dev).manual_seed(L + b)
    q = torch.randn(b, hq, 1, d, device=dev, dtype=torch.bfloat16, generator=g)
    k = torch.randn(b, hkv, L, d, device=dev, dtype=torch.bfloat16, generator=g)
    v = torch.randn(b, hkv, L, d, device=dev, dtype=torch.bfloat16, generator=g)
    kv_bytes = 2 * b * L * hkv * d * 2
    row = {"B": b, "Hq": hq, "Hkv": hkv, "D": d, "L": L, "kv_bytes": kv_bytes,
           "contenders": {}}
    # The practical limit: a device copy of the same number of bytes, timed with the rest.
    src = torch.empty(kv_bytes // 2, device=dev, dtype=torch.bfloat16)
    dst = torch.empty_like(src)
    cs = [Contender("copy", lambda: dst.copy_(src))]
    cs += sdpa_contenders(q, k, v, gqa=True, names=["flash", "cudnn", "efficient"])
    cs += kiln_attention_contenders(q, k, v, suffix="_dense")
    qt = q.transpose(1, 2)
    for page in (16, 64):
        npages = b * L // page
        # Pages shuffled so that a sequence's pages are scattered, as in a real cache.
        perm = torch.randperm(npages, device=dev, generator=g)
        kc = k.transpose(1, 2).reshape(npages, page, hkv, d)[torch.argsort(perm)]
        vc = v.transpose(1, 2).reshape(npages, page, hkv, d)[torch.argsort(perm)]
        table = perm.view(b, L // page).to(torch.int32)
        seqlens = torch.full((b,), L, dtype=torch.int32, device=dev)
        out = torch.empty_like(qt)

        def fn(kc=kc, vc=vc, table=table, seqlens=seqlens, out=out):
            return kiln.attention_paged(qt, kc, vc, table, seqlens, out=out)
        cs += [Contender(f"kiln_{tier}_paged{page}", fn, tier_context(tier))
               for tier in KILN_TIERS]
    outs, live = run_and_time(args, cs, row["contenders"])
    outs.pop("copy", None)
    for name in outs:
        if name.startswith("kiln"):
            outs[name] = outs[name].transpose(1, 2)
    for c in live:
        graph_timed(c, row["contenders"][c.name])
    e = row["contenders"]["copy"]
    if "median_s" in e:
        e["tb_per_s"] = 2 * kv_bytes / e["median_s"] / 1e12
        if "graph" in e:
            e["tb_per_s_graph"] = 2 * kv_bytes / e["graph"]["median_s"] / 1e12
        e["bytes_moved"] = 2 * kv_bytes
    del cs, live, src, dst
    ref_name = next((n for n in ("sdpa_cudnn", "sdpa_flash", "sdpa_efficient",
                                 "kiln_generic_dense") if n in outs), None)
    copy_rate = row["contenders"].get("copy", {}).get("tb_per_s")
    copy_graph = row["contenders"].get("copy", {}).get("tb_per_s_graph")
    for name, e in row["contenders"].items():
        if "median_s" in e and name != "copy":
            e["tb_per_s"] = kv_bytes / e["median_s"] / 1e12
            if copy_rate:
                e["fraction_of_copy"] = e["tb_per_s"] / copy_rate
            if "graph" in e:
                e["tb_per_s_graph"] = kv_bytes / e["graph"]["median_s"] / 1e12
                if copy_graph:
                    e["fraction_of_copy_graph"] = e["tb_per_s_graph"] / copy_graph
            if ref_name and name in outs and name != ref_name:
                e["max_abs_diff_vs_" + ref_name] = \
                    (outs[name].float() - outs[ref_name].float()).abs().max().item()
    del q, k, v, outs
    print(f"decode B={b} L={L}: " + "  ".join(
        (f"{n} {e['tb_per_s']:.2f}/{e.get('tb_per_s_graph', float('nan')):.2f}"
         if "tb_per_s" in e else f"{n} n/a")
        for n, e in row["contenders"].items()) + " TB/s (events / graph)", flush=True)
    if DEV == "cuda":
        torch.cuda.empty_cache()
    return row


def suite_activation(args, meta):
    dev = torch.device(DEV)
    rows, d = args.act_shape
    g = torch.Generator(device=dev).manual_seed(5)
    x = torch.randn(rows, 2 * d, device=dev, dtype=torch.bfloat16, generator=g)
    out = torch.empty(rows, d, device=dev, dtype=torch.bfloat16)
    moved = x.numel() * 2 + out.numel() * 2
    # A copy that moves the same bytes: reads and writes moved / 2 each.
    src = torch.empty(moved // 4, device=dev, dtype=torch.bfloat16)
    dst = torch.empty_like(src)
    res = {"rows": rows, "d": d, "bytes": moved, "contenders": {}}
    cs = [Contender("kiln_silu_and_mul", lambda: kiln.silu_and_mul(x, out=out)),
          Contender("torch_eager", lambda: F.silu(x[:, :d]) * x[:, d:]),
          Contender("device_copy", lambda: dst.copy_(src))]
    outs, _ = run_and_time(args, cs, res["contenders"])
    for e in res["contenders"].values():
        if "median_s" in e:
            e["tb_per_s"] = moved / e["median_s"] / 1e12
    want = F.silu(x[:, :d].float()) * x[:, d:].float()
    for name in ("kiln_silu_and_mul", "torch_eager"):
        if outs.get(name) is not None:
            res["contenders"][name]["max_abs_error_vs_fp32"] = \
                (outs[name].float() - want).abs().max().item()
    print("activation: " + "  ".join(
        f"{n} {e['tb_per_s']:.2f}" if "tb_per_s" in e else f"{n} n/a"
        for n, e in res["contenders"].items()) + " TB/s", flush=True)
    return {"suite": "activation", "timing": timing_note(args),
            "bandwidth": "bytes read + written per second", "meta": meta, "results": [res]}


# ------------------------------------------------------------------------------------------
# Reports


def machine_meta():
    if DEV == "cpu":
        return {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(
            timespec="seconds"), "gpu": "cpu-dry-run", "torch": torch.__version__,
            "kiln_version": kiln.library_version(), "driver": None, "cuda": None,
            "command": " ".join([os.path.basename(sys.executable)] + sys.argv)}
    props = torch.cuda.get_device_properties(0)
    driver = None
    try:
        driver = subprocess.run(["nvidia-smi", "--query-gpu=driver_version",
                                 "--format=csv,noheader"], capture_output=True, text=True,
                                timeout=20).stdout.strip().splitlines()[0]
    except Exception:
        pass
    try:
        kinfo = kiln.info()
    except kiln.KilnError as exc:
        kinfo = {"error": str(exc)}
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "gpu": torch.cuda.get_device_name(0),
        "multiprocessors": props.multi_processor_count,
        "memory_gib": round(props.total_memory / 2 ** 30, 1),
        "driver": driver,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "hip": torch.version.hip,
        "cudnn": torch.backends.cudnn.version(),
        "python": platform.python_version(),
        "host": platform.node(),
        "kiln_version": kiln.library_version(),
        "kiln_info": kinfo,
        "command": " ".join([os.path.basename(sys.executable)] + sys.argv),
    }


def slug(text):
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def plot(report, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    suite = report["suite"]
    fig, ax = plt.subplots(figsize=(9, 5))
    if suite == "reference":
        rows = report["results"]
        names = sorted({n for r in rows for n in r["contenders"]})
        width = 0.8 / max(1, len(names))
        for i, n in enumerate(names):
            xs, ys, errs = [], [], []
            for j, r in enumerate(rows):
                e = r["contenders"].get(n, {})
                if "median_us" in e:
                    xs.append(j + i * width)
                    ys.append(e["median_us"])
                    errs.append([[e["median_us"] - e["p10_us"]], [e["p90_us"] - e["median_us"]]])
            if xs:
                yerr = [[a[0][0] for a in errs], [a[1][0] for a in errs]]
                ax.bar(xs, ys, width, yerr=yerr, label=n, capsize=2)
        ax.set_xticks([j + 0.4 - width / 2 for j in range(len(rows))])
        ax.set_xticklabels([f"S={r['S']}" for r in rows])
        ax.set_ylabel("us per call + synchronize (median, p10-p90)")
        ax.set_title("B=1 H=16 D=64 bf16 non-causal")
    elif suite == "prefill":
        labels = [f"D{r['D']} S{r['S']}{' c' if r['causal'] else ''}"
                  for r in report["results"]]
        names = sorted({n for r in report["results"] for n in r["contenders"]})
        width = 0.8 / max(1, len(names))
        for i, n in enumerate(names):
            ys = [r["contenders"].get(n, {}).get("tflops", 0) for r in report["results"]]
            ax.bar([j + i * width for j in range(len(labels))], ys, width, label=n)
        ax.set_xticks([j + 0.4 - width / 2 for j in range(len(labels))])
        ax.set_xticklabels(labels, rotation=45, ha="right", fontsize=8)
        ax.set_ylabel("TFLOP/s")
        ax.set_title("prefill, B*S = 32k, H*D = 2048, bf16")
    elif suite == "decode":
        labels = [f"B={r['B']} L={r['L']}" for r in report["results"]]
        names = sorted({n for r in report["results"] for n in r["contenders"]})
        width = 0.8 / max(1, len(names))
        for i, n in enumerate(names):
            ys = [r["contenders"].get(n, {}).get("tb_per_s", 0) for r in report["results"]]
            ax.bar([j + i * width for j in range(len(labels))], ys, width, label=n)
        ax.set_xticks([j + 0.4 - width / 2 for j in range(len(labels))])
        ax.set_xticklabels(labels, fontsize=8)
        ax.set_ylabel("TB/s of K+V read (copy: read + written)")
        ax.set_title("decode, q length 1, 32/8 heads, D=128, bf16")
    m = report["meta"]
    fig.suptitle(f"{m['gpu']}, torch {m['torch']}, {m['date'][:10]}", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--suite", action="store_true",
                    help="also run suites 2 (prefill), 3 (decode) and 5 (activation)")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                  "results"))
    ap.add_argument("--seqlens", default="128,512,1024")
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--calls", type=int, default=500)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--timing", choices=("interleaved", "sequential"), default="interleaved",
                    help="suites 2, 3 and 5: take each contender's samples in turn "
                         "(default), or all of one contender's before the next one's (the "
                         "method before)")
    ap.add_argument("--quick", action="store_true", help="fewer shapes, for a smoke test")
    ap.add_argument("--decode-shapes", default="",
                    help="suite 3's (batch, KV length) pairs instead of its six, e.g. "
                         "8:4096,1:32768 (an A/B on a few shapes; BENCH.md's goals need all)")
    ap.add_argument("--prefill-shapes", default="",
                    help="suite 2's (head dim, length) pairs instead of its own, e.g. "
                         "64:1024,128:1024 (an A/B on a few shapes)")
    ap.add_argument("--only", default="",
                    help="comma-separated suites to run (reference, prefill, decode, "
                         "activation); default: reference, plus the others with --suite")
    ap.add_argument("--kiln-tiers", default=",".join(KILN_TIERS),
                    help="kiln GPU tiers to force, in order (default: %(default)s)")
    ap.add_argument("--sdpa", default="flash,cudnn,efficient",
                    help="SDPA backends of suite 2 (default: %(default)s)")
    ap.add_argument("--dry-run", action="store_true",
                    help="run every suite on the CPU at toy sizes: checks the script, "
                         "measures nothing meaningful")
    args = ap.parse_args()
    # SDPA explains at length why a backend refused a shape; the refusal is recorded anyway.
    warnings.filterwarnings("ignore", category=UserWarning, module="torch")
    warnings.filterwarnings("ignore", message=".*kernel not used because.*")
    warnings.filterwarnings("ignore", message=".*has been runtime disabled.*")
    warnings.filterwarnings("ignore", message=".*fused kernels require.*")
    args.seqlens = [int(s) for s in args.seqlens.split(",")]
    set_kiln_tiers([t for t in args.kiln_tiers.split(",") if t])
    args.sdpa = [n for n in args.sdpa.split(",") if n]
    args.prefill_seqlens, args.prefill_tokens = [1024, 4096, 16384], 32768
    args.decode_batches, args.decode_lens = [1, 8, 64], [4096, 32768]
    args.act_shape = (8192, 14336)
    if args.quick:
        args.prefill_seqlens, args.decode_lens = [1024, 4096], [4096]
        args.decode_batches = [1, 64]
    if args.dry_run:
        global DEV, sync, Event
        DEV, sync, Event = "cpu", (lambda: None), _HostEvent
        args.seqlens = [16, 48]
        args.warmup, args.calls, args.rounds = 2, 7, 3
        args.prefill_seqlens, args.prefill_tokens = [64, 128], 256
        args.decode_batches, args.decode_lens = [1, 2], [256]
        args.act_shape = (64, 256)
    elif not torch.cuda.is_available():
        sys.exit("no CUDA device visible to torch")
    # Suite 3's (batch, length) pairs: --decode-shapes', else every batch with every length
    # (the dry run shrinks the pairs given to its toy sizes).
    args.decode_pairs = [(min(b, 2), min(L, 256)) if args.dry_run else (b, L)
                         for b, L in shape_pairs(args.decode_shapes, "--decode-shapes",
                                                 "batch:length", "8:4096,1:32768")] or \
        [(b, L) for b in args.decode_batches for L in args.decode_lens]
    args.prefill_pairs = [(d, min(L, 128)) if args.dry_run else (d, L)
                          for d, L in shape_pairs(args.prefill_shapes, "--prefill-shapes",
                                                  "head-dim:length", "64:1024,128:4096")]
    os.makedirs(args.out, exist_ok=True)
    meta = machine_meta()
    stem = f"{slug(meta['gpu'])}_{meta['date'][:10]}"
    print(f"{meta['gpu']}  driver {meta['driver']}  torch {meta['torch']}  CUDA {meta['cuda']}"
          f"  kiln {meta['kiln_version']}  {meta['date']}", flush=True)

    suites = [("reference", suite_reference)]
    if args.suite:
        suites += [("prefill", suite_prefill), ("decode", suite_decode),
                   ("activation", suite_activation)]
    if args.only:
        every = {"reference": suite_reference, "prefill": suite_prefill,
                 "decode": suite_decode, "activation": suite_activation}
        wanted = [n for n in args.only.split(",") if n]
        unknown = [n for n in wanted if n not in every]
        if unknown:
            sys.exit(f"--only: unknown suite {', '.join(unknown)}")
        suites = [(n, every[n]) for n in wanted]
    tables = []
    for name, fn in suites:
        print(f"\n== {name} ==", flush=True)
        try:
            report = fn(args, meta)
        except Exception as exc:  # one broken suite must not lose the others' results
            print(f"{name} failed: {type(exc).__name__}: {exc}", flush=True)
            traceback.print_exc()
            continue
        path = os.path.join(args.out, f"{name}_{stem}.json")
        with open(path, "w") as f:
            json.dump(report, f, indent=1)
        if name in ("reference", "prefill", "decode"):
            try:
                plot(report, os.path.join(args.out, f"{name}_{stem}.png"))
            except Exception as exc:
                print(f"plot for {name} failed: {exc}", flush=True)
        if name == "reference":
            tables.append("reference latency (us per call + synchronize, median):\n" +
                          reference_table(report))
        else:
            tables.append(throughput_table(report))
        if DEV == "cuda":
            torch.cuda.empty_cache()
    print("\n" + "\n\n".join(tables))


if __name__ == "__main__":
    main()
