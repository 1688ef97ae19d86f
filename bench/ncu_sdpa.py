"""Five calls of one SDPA backend at one shape, for bench/ncu_run.sh to profile.

    python3 bench/ncu_sdpa.py BACKEND B H D S CAUSAL     (BACKEND: flash | cudnn | efficient)
"""
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

be, b, h, d, s, c = sys.argv[1], *map(int, sys.argv[2:7])
backend = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
           "efficient": SDPBackend.EFFICIENT_ATTENTION}[be]
q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
with sdpa_kernel(backend):
    for _ in range(5):
        F.scaled_dot_product_attention(q, k, v, is_causal=bool(c))
torch.cuda.synchronize()
