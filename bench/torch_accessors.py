"""Host cost of the torch accessors and allocations the binding's fast path uses, and of
kiln.attention itself, per call (time.perf_counter over 20000 calls, median of 5), on a CUDA
GPU with suite 1's S=128 view:
    PYTHONPATH=python python3 bench/torch_accessors.py
"""
import statistics
import time

import torch

import kiln

q4 = torch.randn(1, 16, 128, 64, device="cuda", dtype=torch.bfloat16)
q = q4.transpose(1, 2)
N = 20000


def t(name, fn):
    for _ in range(2000): fn()
    r = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(N): fn()
        r.append((time.perf_counter() - t0) / N * 1e6)
    print(f"{name:40s} {statistics.median(r):7.3f} us", flush=True)
t("empty loop (lambda call)", lambda: None)
t("q.dtype", lambda: q.dtype)
t("q.is_cuda", lambda: q.is_cuda)
t("q.device", lambda: q.device)
d0 = q.device
t("q.device == d (torch.device)", lambda: q.device == d0)
t("q.get_device()", lambda: q.get_device())
t("q.data_ptr()", lambda: q.data_ptr())
t("q.shape", lambda: q.shape)
t("q.size()", lambda: q.size())
t("q.stride()", lambda: q.stride())
t("q.dim()", lambda: q.dim())
t("torch._C._cuda_getDevice()", lambda: torch._C._cuda_getDevice())
t("_cuda_getCurrentRawStream(0)", lambda: torch._C._cuda_getCurrentRawStream(0))
t("torch.empty_like(q)", lambda: torch.empty_like(q))
t("torch.empty(shape,dtype,device)", lambda: torch.empty(q.shape, dtype=q.dtype, device=q.device))
t("torch.empty_strided", lambda: torch.empty_strided((1, 128, 16, 64), (131072, 64, 8192, 1), dtype=torch.bfloat16, device="cuda"))
t("q.new_empty(shape)", lambda: q.new_empty((1, 128, 16, 64)))
t("torch.compiler.is_compiling()", lambda: torch.compiler.is_compiling())
kiln.attention(q, q, q)
t("kiln._route()", lambda: kiln._route())
out = torch.empty_like(q)
t("kiln.attention(out=)", lambda: kiln.attention(q, q, q, out=out))
t("kiln.attention()", lambda: kiln.attention(q, q, q))
