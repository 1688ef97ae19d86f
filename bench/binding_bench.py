#!/usr/bin/env python3
"""Host time per call of the Python binding: numpy arrays and torch tensors (CPU, and CUDA
where a GPU is visible), through the C fast path (kiln/_ext) and the ctypes path alone
(KILN_PYTHON_FAST=0), against the real library and against a stub whose entry points
return at once (build/libkiln_stub.so, bench/stub_library.c).

The stubbed figure is the binding's own overhead on top of the C call (issue 11 item 3:
at most 3 us); the real one adds the library's argument checks, planning and launch (no
synchronize inside the timed loop: CUDA work is drained between rounds). Each
configuration runs in its own process, since a process loads one library.

    PYTHONPATH=python python3 bench/binding_bench.py [--build build] [--json out.json]
        [--cpu-time] [--calls 20000] [--rounds 7]

--cpu-time times with the thread's CPU clock instead of the wall clock: steadier on a
shared machine, and the same thing for a call that never waits.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time


def measure(args):
    """Runs in the child: prints one JSON line of {case: us per call}."""
    import numpy as np
    import kiln
    from kiln import _arrays

    clock = time.thread_time if args.cpu_time else time.perf_counter
    results = {}

    def bench(name, fn, drain=None):
        fn()  # first call: contexts, kernel load
        for _ in range(200):
            fn()
        if drain:
            drain()
        rounds = []
        for _ in range(args.rounds):
            t0 = clock()
            for _ in range(args.calls):
                fn()
            t1 = clock()
            if drain:
                drain()
            rounds.append((t1 - t0) / args.calls * 1e6)
        results[name] = round(statistics.median(rounds), 3)

    real = args.library == "real"
    # The CPU cases use a small problem so a real call stays short; the CUDA case is suite
    # 1's S=128 shape, passed as [batch, seq, heads, dim] views of [batch, heads, seq, dim].
    q = np.zeros((1, 16, 4, 64), np.float16)
    out = np.empty_like(q)
    x = np.zeros((16, 128), np.float16)
    y = np.empty((16, 64), np.float16)
    bench("numpy attention(out=)", lambda: kiln.attention(q, q, q, out=out))
    bench("numpy attention", lambda: kiln.attention(q, q, q))
    bench("numpy silu_and_mul(out=)", lambda: kiln.silu_and_mul(x, out=y))
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        tq = torch.zeros((1, 16, 4, 64), dtype=torch.float16)
        to = torch.empty_like(tq)
        tx = torch.zeros((16, 128), dtype=torch.float16)
        ty = torch.empty((16, 64), dtype=torch.float16)
        bench("torch-cpu attention(out=)", lambda: kiln.attention(tq, tq, tq, out=to))
        bench("torch-cpu silu_and_mul(out=)", lambda: kiln.silu_and_mul(tx, out=ty))
        if torch.cuda.is_available():
            g = torch.randn(1, 16, 128, 64, device="cuda", dtype=torch.bfloat16)
            gv = g.transpose(1, 2)
            go = torch.empty_like(gv)
            gx = torch.randn(128, 2048, device="cuda", dtype=torch.bfloat16)
            gy = torch.empty(128, 1024, device="cuda", dtype=torch.bfloat16)
            sync = torch.cuda.synchronize if real else None
            bench("torch-cuda attention(out=) S=128", lambda: kiln.attention(gv, gv, gv, out=go),
                  sync)
            bench("torch-cuda attention S=128", lambda: kiln.attention(gv, gv, gv), sync)
            bench("torch-cuda silu_and_mul(out=)", lambda: kiln.silu_and_mul(gx, out=gy), sync)
    results["_fast_path_in_use"] = bool(_arrays.fast())
    print(json.dumps(results))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build", help="build folder (libkiln.so, the stub)")
    ap.add_argument("--json", help="also write the figures here")
    ap.add_argument("--cpu-time", action="store_true", help="time with the thread CPU clock")
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--configs", default="real/fast,real/ctypes,stub/fast,stub/ctypes",
                    help="which library/path pairs to run (comma-separated)")
    ap.add_argument("--library", choices=["real", "stub"], help=argparse.SUPPRESS)
    ap.add_argument("--path", choices=["fast", "ctypes"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.library:
        measure(args)
        return

    suffix = ".dll" if sys.platform == "win32" else ".so"
    libs = {"real": os.environ.get("KILN_LIBRARY") or os.path.join(args.build,
                                                                   "libkiln" + suffix),
            "stub": os.path.join(args.build, "libkiln_stub" + suffix)}
    table = {}
    configs = args.configs.split(",")
    for c in configs:
        if c not in ("real/fast", "real/ctypes", "stub/fast", "stub/ctypes"):
            sys.exit(f"binding_bench: --configs takes real|stub / fast|ctypes pairs, not '{c}'")
    for library, path in libs.items():
        if not any(c.startswith(library + "/") for c in configs):
            continue
        if not os.path.exists(path):
            sys.exit(f"binding_bench: no {path} (build the 'kiln' and 'kiln_stub' targets)")
        for mode in ("fast", "ctypes"):
            if f"{library}/{mode}" not in configs:
                continue
            env = dict(os.environ, KILN_LIBRARY=os.path.abspath(path),
                       KILN_PYTHON_FAST="1" if mode == "fast" else "0")
            cmd = [sys.executable, __file__, "--library", library, "--path", mode,
                   "--calls", str(args.calls), "--rounds", str(args.rounds)]
            if args.cpu_time:
                cmd.append("--cpu-time")
            run = subprocess.run(cmd, env=env, capture_output=True, text=True)
            if run.returncode:
                sys.exit(f"binding_bench: {library}/{mode} failed:\n{run.stderr}")
            table[f"{library}/{mode}"] = json.loads(run.stdout.strip().splitlines()[-1])

    cases = [c for c in next(iter(table.values())) if not c.startswith("_")]
    cols = list(table)
    print(f"us per call ({'thread CPU time' if args.cpu_time else 'wall clock'}, median of "
          f"{args.rounds} rounds of {args.calls}); stub = entry points return at once")
    print(f"{'case':34s}" + "".join(f"{c:>14s}" for c in cols))
    for case in cases:
        print(f"{case:34s}" + "".join(f"{table[c].get(case, float('nan')):14.2f}" for c in cols))
    print(f"{'fast path in use':34s}" + "".join(f"{str(table[c]['_fast_path_in_use']):>14s}"
                                                for c in cols))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"clock": "thread" if args.cpu_time else "wall", "calls": args.calls,
                       "rounds": args.rounds, "us_per_call": table}, f, indent=1)


if __name__ == "__main__":
    main()
