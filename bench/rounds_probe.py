"""How the hopper tier and cuDNN move when one batch entry is added or taken away at suite 2's
shapes (B * S = 32k, H * D = 2048): B - 1, B and B + 1 at D 64 / 128, S 1k and D 64, 4k, each
causal and not, the two timed interleaved in one process (TFLOP/s and their ratio). On a
persistent grid the batch decides how full the last round of work items is, so a change per
FLOP that cuDNN does not share points at that round.

  KILN_LIBRARY=build/libkiln.so PYTHONPATH=python:bench python3 bench/rounds_probe.py
"""

import torch

import reference_benchmark as rb


def main():
    dev = torch.device("cuda")
    rb.set_kiln_tiers(["hopper"])
    for d, s in ((64, 1024), (128, 1024), (64, 4096)):
        h = 2048 // d
        for causal in (False, True):
            for b in (32768 // s - 1, 32768 // s, 32768 // s + 1):
                q, k, v = (torch.randn(b, h, s, d, device=dev, dtype=torch.bfloat16)
                           for _ in range(3))
                cs = (rb.sdpa_contenders(q, k, v, causal, names=["cudnn"]) +
                      rb.kiln_attention_contenders(q, k, v, causal))
                res = rb.time_events_interleaved(cs)
                flops = 4 * b * h * s * s * d / (2 if causal else 1)
                t = {n: flops / r["median_s"] / 1e12 for n, r in res.items()}
                hopper, cudnn = t["kiln_hopper"], t["sdpa_cudnn"]
                print(f"D{d} S{s} {'causal' if causal else 'full  '} B{b:3d}: hopper "
                      f"{hopper:.1f} cudnn {cudnn:.1f} ratio {hopper / cudnn:.3f}", flush=True)


if __name__ == "__main__":
    main()
