"""What a new kiln context costs its first call, against the same call in a warm context.

For each shape: the median wall time of one call + synchronize in a warm context, then the
same for the first call after the binding's contexts were dropped (a new context: kernels
loaded from the on-disk cache, tensor maps, the split-KV workspace), repeated. A benchmark
that starts a context inside a timed sample adds the difference to that sample.

  KILN_LIBRARY=build/libkiln.so PYTHONPATH=python python3 bench/context_cost.py [--repeats N]
"""

import argparse
import statistics
import time

import torch

import kiln


def wall(fn):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    return time.perf_counter() - t0


def shapes(dev):
    g = torch.Generator(device=dev).manual_seed(1)
    r = lambda *s: torch.randn(*s, device=dev, dtype=torch.bfloat16, generator=g)  # noqa: E731
    # suite 3: decode, B = 1, 32 query / 8 KV heads, D = 128, 32k keys (split-KV)
    q, k, v = r(1, 1, 32, 128), r(1, 32768, 8, 128), r(1, 32768, 8, 128)
    o = torch.empty_like(q)
    yield "decode B=1 L=32k", lambda: kiln.attention(q, k, v, out=o)
    # suite 2: prefill, D = 64, S = 1k, B = 32, H = 32, causal
    q2, k2, v2 = r(32, 1024, 32, 64), r(32, 1024, 32, 64), r(32, 1024, 32, 64)
    o2 = torch.empty_like(q2)
    yield "prefill D=64 S=1k causal", lambda: kiln.attention(q2, k2, v2, causal=True, out=o2)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()
    dev = torch.device("cuda")
    for name, fn in shapes(dev):
        fn()
        warm = statistics.median(wall(fn) for _ in range(20)) * 1e6
        first = []
        for _ in range(args.repeats):
            kiln._arrays.forget_contexts()
            first.append(wall(fn) * 1e6)
        print(f"{name}: warm call {warm:.1f} us; first call in a new context median "
              f"{statistics.median(first):.1f} us (min {min(first):.1f}, max {max(first):.1f}): "
              f"{statistics.median(first) - warm:.1f} us more", flush=True)


if __name__ == "__main__":
    main()
