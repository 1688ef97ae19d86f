"""The binding with torch tensors: CPU tensors (against the numpy path), and on a CUDA GPU
every mode PyTorch's scaled_dot_product_attention can express, against SDPA and an fp32
reference, with the largest errors printed at the end. Skipped where torch, a GPU or kiln's
GPU backend is absent."""

import math
import os
import unittest

import numpy as np

try:
    import torch
    import torch.nn.functional as F
except ImportError:  # the CPU tests need numpy only
    torch = None

import kiln
import missing
from kiln import _arrays, _lib

ERRORS = []  # (case, kiln's max error, SDPA's max error), printed by tearDownModule


def setUpModule():
    if not os.path.exists(_lib.library_path()):
        raise unittest.SkipTest(f"no kiln library at {_lib.library_path()}")


def tearDownModule():
    if ERRORS:
        print("\nmax |error| against an fp32 reference (kiln, SDPA):")
        for case, ours, theirs in ERRORS:
            sdpa = "-" if theirs is None else f"{theirs:.2e}"
            print(f"  {case:<48} kiln {ours:.2e}  sdpa {sdpa}")


class gpu_tier:
    """Forces kiln's GPU tier for a block. KILN_GPU_TIER is read when a context starts, so
    the binding's cached contexts are dropped on the way in and out (the old ones stay
    alive: contexts live as long as the process)."""

    def __init__(self, tier):
        self.tier, self.old = tier, None

    def __enter__(self):
        self.old = os.environ.get("KILN_GPU_TIER")
        os.environ["KILN_GPU_TIER"] = self.tier
        _arrays.forget_contexts()

    def __exit__(self, *exc):
        if self.old is None:
            os.environ.pop("KILN_GPU_TIER", None)
        else:
            os.environ["KILN_GPU_TIER"] = self.old
        _arrays.forget_contexts()


TIERS = ("tensor", "generic")


def fixed_tiers():
    """TIERS, plus the hopper tier on an sm_90 device: it runs fixed-length calls only."""
    if torch.cuda.is_available() and not torch.version.hip and \
            torch.cuda.get_device_capability() == (9, 0):
        return ("hopper",) + TIERS
    return TIERS


def reference(q, k, v, causal=False, window=(-1, -1), softcap=0.0, scale=None, slopes=None):
    """fp32 attention on [b, h, s, d] tensors, bottom-right aligned masks: (out, lse)."""
    q, k, v = q.float(), k.float(), v.float()
    b, hq, sq, d = q.shape
    hkv, sk = k.shape[1], k.shape[2]
    if hq != hkv:
        k = k.repeat_interleave(hq // hkv, dim=1)
        v = v.repeat_interleave(hq // hkv, dim=1)
    scale = 1.0 / math.sqrt(d) if not scale else scale
    s = torch.matmul(q, k.transpose(-1, -2)) * scale
    if softcap:
        s = softcap * torch.tanh(s / softcap)
    i = torch.arange(sq, device=q.device)[:, None] + sk - sq
    j = torch.arange(sk, device=q.device)[None, :]
    if slopes is not None:
        s = s - slopes.float().view(1, hq, 1, 1) * (i - j).abs()
    left, right = window
    if causal:
        right = 0
    visible = torch.ones(sq, sk, dtype=torch.bool, device=q.device)
    if left >= 0:
        visible &= j >= i - left
    if right >= 0:
        visible &= j <= i + right
    s = s.masked_fill(~visible, float("-inf"))
    lse = torch.logsumexp(s, dim=-1)
    p = torch.softmax(s, dim=-1).nan_to_num(0.0)
    return torch.matmul(p, v), lse


def _need_torch():
    if torch is None:
        missing.tool("torch is not installed (Debian: apt-get install python3-torch)")


class TestTorchCPU(unittest.TestCase):
    """CPU tensors take the CPU backend and give the numpy path's bits."""

    @classmethod
    def setUpClass(cls):
        _need_torch()

    def test_matches_numpy_path(self):
        g = torch.Generator().manual_seed(0)
        for dtype in (torch.float32, torch.float16, torch.bfloat16):
            with self.subTest(dtype=dtype):
                q = torch.randn(2, 4, 9, 32, generator=g).to(dtype)   # [b, h, s, d]
                k = torch.randn(2, 2, 12, 32, generator=g).to(dtype)
                v = torch.randn(2, 2, 12, 32, generator=g).to(dtype)
                out, lse = kiln.attention(q.transpose(1, 2), k.transpose(1, 2),
                                          v.transpose(1, 2), causal=True, return_lse=True)
                self.assertEqual(out.dtype, dtype)
                self.assertEqual(kiln.last_dispatch()["backend"], "cpu")
                as_np = (lambda t: t.view(torch.int16).numpy().view(np.uint16)) \
                    if dtype == torch.bfloat16 else (lambda t: t.numpy())
                n_out = kiln.attention(*(as_np(t.transpose(1, 2)) for t in (q, k, v)),
                                       causal=True)
                self.assertTrue(np.array_equal(as_np(out).view(np.uint8),
                                               np.ascontiguousarray(n_out).view(np.uint8)))
                want, want_lse = reference(q, k, v, causal=True)
                tol = {torch.float32: 1e-5, torch.float16: 1e-3, torch.bfloat16: 8e-3}[dtype]
                self.assertLess((out.float().transpose(1, 2) - want).abs().max().item(),
                                tol * 4)
                self.assertLess((lse - want_lse).abs().max().item(), 1e-3)

    def test_activation_and_mixed_frameworks(self):
        x = torch.randn(5, 64)
        out = kiln.silu_and_mul(x)
        want = F.silu(x[:, :32]) * x[:, 32:]
        self.assertLess((out - want).abs().max().item(), 1e-5)
        with self.assertRaises(kiln.KilnError) as cm:
            kiln.attention(torch.zeros(1, 2, 2, 8), np.zeros((1, 2, 2, 8), np.float32),
                           torch.zeros(1, 2, 2, 8))
        self.assertEqual(cm.exception.status, kiln.Status.INVALID_ARGUMENT)


def _cuda_ready():
    if not torch.cuda.is_available():
        return "no CUDA GPU visible to torch"
    try:
        kiln.info("hip" if torch.version.hip else "cuda", torch.cuda.current_device())
    except kiln.KilnError as exc:
        return f"kiln's GPU backend cannot start here: {exc}"
    return None


class TestCUDA(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        _need_torch()
        why = _cuda_ready()
        if why:
            raise unittest.SkipTest(why)
        cls.dev = torch.device("cuda", torch.cuda.current_device())

    def setUp(self):
        torch.manual_seed(0)

    def rand(self, *shape, dtype=None):
        return torch.randn(*shape, device=self.dev, dtype=dtype or torch.bfloat16)

    def check(self, case, got, want, sdpa=None, dtype=None):
        """got/want/sdpa [b, h, s, d] (or any matching shape)."""
        ours = (got.float() - want).abs().max().item() if got.numel() else 0.0
        theirs = None if sdpa is None else (sdpa.float() - want).abs().max().item()
        ERRORS.append((case, ours, theirs))
        self.assertFalse(math.isnan(ours), case)
        tol = {torch.bfloat16: 8e-3, torch.float16: 1e-3}[dtype or torch.bfloat16]
        scale = max(1.0, want.abs().max().item()) if want.numel() else 1.0
        bound = max(tol * scale, 2.0 * theirs) if theirs is not None else 2 * tol * scale
        self.assertLessEqual(ours, bound, f"{case}: kiln {ours:.3e}, SDPA {theirs}")

    def test_against_sdpa(self):
        # Every mode SDPA expresses: full, causal (equal lengths, where SDPA's top-left
        # alignment is kiln's bottom-right), GQA through enable_gqa; d 64 and 128; bf16, f16.
        # 4160 keys at d 64: the hopper tier's long variant where it runs (192-row query
        # tiles of three consumers, with and without the causal mask), the last tile
        # partly past the end.
        shapes = [(1, 16, 16, 128, 128, 64), (2, 8, 8, 1000, 1000, 128),
                  (2, 32, 8, 512, 512, 128), (1, 8, 1, 257, 257, 64), (3, 4, 4, 1, 1, 64),
                  (1, 4, 2, 4160, 4160, 64)]
        for tier in fixed_tiers():
            for dtype in (torch.bfloat16, torch.float16):
                for (b, hq, hkv, sq, sk, d) in shapes:
                    for causal in (False, True):
                        case = f"{tier} {str(dtype)[6:]} b{b} h{hq}/{hkv} s{sq}x{sk} d{d}" + \
                            (" causal" if causal else "")
                        with self.subTest(case=case):
                            q = self.rand(b, hq, sq, d, dtype=dtype)
                            k = self.rand(b, hkv, sk, d, dtype=dtype)
                            v = self.rand(b, hkv, sk, d, dtype=dtype)
                            sdpa = F.scaled_dot_product_attention(
                                q, k, v, is_causal=causal, enable_gqa=hq != hkv)
                            with gpu_tier(tier):
                                out = kiln.attention(q.transpose(1, 2), k.transpose(1, 2),
                                                     v.transpose(1, 2), causal=causal)
                            want, _ = reference(q, k, v, causal=causal)
                            self.check(case, out.transpose(1, 2), want, sdpa, dtype)
                            d_ = kiln.last_dispatch()
                            self.assertEqual(d_["backend"],
                                             "hip" if torch.version.hip else "cuda")
                            self.assertEqual(d_["tier"], tier)
                            if d_["tier"] == "hopper":
                                long_ = d == 64 and sk >= 4096
                                self.assertEqual(".q192." in d_["variant"], long_,
                                                 d_["variant"])

    def test_masks_sdpa_takes_as_tensors(self):
        # Bottom-right causal with sq != sk, sliding windows and ALiBi: SDPA with a mask.
        b, hq, hkv, d = 2, 8, 2, 128
        cases = [(100, 300, dict(causal=True)), (256, 256, dict(window=(64, 0))),
                 (128, 512, dict(window=(32, 16))), (200, 200, dict(causal=True, alibi=True)),
                 (64, 64, dict(softcap=30.0))]
        for tier, (sq, sk, kw) in [(t, c) for t in fixed_tiers() for c in cases]:
            case = f"{tier} bf16 s{sq}x{sk} {kw}"
            with self.subTest(case=case), gpu_tier(tier):
                kw = dict(kw)
                q, k, v = self.rand(b, hq, sq, d), self.rand(b, hkv, sk, d), \
                    self.rand(b, hkv, sk, d)
                slopes = None
                if kw.pop("alibi", False):
                    slopes = torch.tensor([2 ** (-8 * (h + 1) / hq) for h in range(hq)],
                                          device=self.dev, dtype=torch.float32)
                out, lse = kiln.attention(q.transpose(1, 2), k.transpose(1, 2),
                                          v.transpose(1, 2), alibi_slopes=slopes,
                                          return_lse=True, **kw)
                want, want_lse = reference(q, k, v, slopes=slopes, **kw)
                sdpa = None
                if not kw.get("softcap"):
                    mask = self.bias(sq, sk, hq, slopes, **kw)
                    sdpa = F.scaled_dot_product_attention(q, k, v, attn_mask=mask,
                                                          enable_gqa=True)
                self.check(case, out.transpose(1, 2), want, sdpa)
                lse_err = (lse - want_lse).abs().max().item()
                ERRORS.append((case + " lse", lse_err, None))
                self.assertLess(lse_err, 1e-2)

    def bias(self, sq, sk, hq, slopes, causal=False, window=(-1, -1)):
        i = torch.arange(sq, device=self.dev)[:, None] + sk - sq
        j = torch.arange(sk, device=self.dev)[None, :]
        left, right = window
        if causal:
            right = 0
        visible = torch.ones(sq, sk, dtype=torch.bool, device=self.dev)
        if left >= 0:
            visible &= j >= i - left
        if right >= 0:
            visible &= j <= i + right
        bias = torch.zeros(1, hq, sq, sk, device=self.dev)
        if slopes is not None:
            bias = bias - slopes.view(1, hq, 1, 1) * (i - j).abs()
        return bias.masked_fill(~visible, float("-inf")).to(torch.bfloat16)

    def test_varlen_and_paged_decode(self):
        for tier in TIERS:
            with self.subTest(tier=tier), gpu_tier(tier):
                self.varlen_and_paged(tier)

    def varlen_and_paged(self, tier):
        hq, hkv, d = 16, 4, 128
        lens_q, lens_k = [17, 0, 300, 1], [40, 9, 300, 2048]
        cu_q = torch.tensor([0] + list(np.cumsum(lens_q)), dtype=torch.int32, device=self.dev)
        cu_k = torch.tensor([0] + list(np.cumsum(lens_k)), dtype=torch.int32, device=self.dev)
        q = self.rand(int(cu_q[-1]), hq, d)
        k, v = self.rand(int(cu_k[-1]), hkv, d), self.rand(int(cu_k[-1]), hkv, d)
        out, lse = kiln.attention_varlen(q, k, v, cu_q, cu_k, max(lens_q), max(lens_k),
                                         causal=True, return_lse=True)
        worst = 0.0
        for i in range(len(lens_q)):
            sq, sk = slice(int(cu_q[i]), int(cu_q[i + 1])), slice(int(cu_k[i]),
                                                                  int(cu_k[i + 1]))
            if lens_q[i] == 0:
                continue
            want, want_lse = reference(*(t[s].transpose(0, 1)[None] for t, s in
                                         ((q, sq), (k, sk), (v, sk))), causal=True)
            worst = max(worst, (out[sq].transpose(0, 1)[None].float() - want).abs().max()
                        .item())
            self.assertLess((lse[:, sq] - want_lse[0]).abs().max().item(), 1e-2)
        ERRORS.append((f"{tier} bf16 varlen causal GQA 16/4 d128", worst, None))
        self.assertLess(worst, 8e-3 * 4)

        for page in (16, 64):
            b, sk = 8, 1000
            pages_per = -(-sk // page)
            kc, vc = self.rand(b * pages_per + 5, page, hkv, d), \
                self.rand(b * pages_per + 5, page, hkv, d)
            table = torch.randperm(b * pages_per + 5, device=self.dev)[:b * pages_per] \
                .view(b, pages_per).to(torch.int32)
            seqlens = torch.full((b,), sk, dtype=torch.int32, device=self.dev)
            qd = self.rand(b, 1, hq, d)
            out = kiln.attention_paged(qd, kc, vc, table, seqlens)
            kd = kc[table.long()].reshape(b, pages_per * page, hkv, d)[:, :sk]
            vd = vc[table.long()].reshape(b, pages_per * page, hkv, d)[:, :sk]
            want, _ = reference(qd.transpose(1, 2), kd.transpose(1, 2), vd.transpose(1, 2))
            sdpa = F.scaled_dot_product_attention(qd.transpose(1, 2), kd.transpose(1, 2),
                                                  vd.transpose(1, 2), enable_gqa=True)
            self.check(f"{tier} bf16 paged decode page {page} s{sk}", out.transpose(1, 2),
                       want, sdpa)

    def test_cuda_graph_decode(self):
        # A decode step (dense and paged KV) captured with torch.cuda.graph, the split-KV
        # workspace owned by the caller and left uninitialised; each replay after changing
        # q, the cache and the lengths in place matches SDPA and the reference.
        b, hq, hkv, d, sk = 4, 32, 8, 128, 3000
        dev = self.dev.index if self.dev.index is not None else torch.cuda.current_device()
        backend = "hip" if torch.version.hip else "cuda"
        for layout in ("dense", "paged16", "paged64"):
            with self.subTest(layout=layout):
                page = int(layout[5:]) if layout != "dense" else 0
                if page:
                    per = -(-sk // page)
                    kc = self.rand(b * per + 3, page, hkv, d)
                    vc = self.rand(b * per + 3, page, hkv, d)
                    table = torch.randperm(b * per + 3, device=self.dev)[:b * per] \
                        .view(b, per).to(torch.int32)
                    seqlens = torch.full((b,), sk, dtype=torch.int32, device=self.dev)
                    bound_k = per * page
                else:
                    kc, vc = self.rand(b, sk, hkv, d), self.rand(b, sk, hkv, d)
                    bound_k = sk
                q = self.rand(b, 1, hq, d)
                out = torch.empty_like(q)
                n = kiln.attention_workspace_size(b, b, 1, bound_k, hq, hkv, d,
                                                  backend=backend, device=dev)
                self.assertGreater(n, 0)
                ws = torch.empty(n, dtype=torch.uint8, device=self.dev)
                ws.fill_(0xa5)  # whatever a fresh buffer holds: no clearing is needed

                def step():
                    if page:
                        return kiln.attention_paged(q, kc, vc, table, seqlens, out=out,
                                                    workspace=ws, return_lse=True)
                    return kiln.attention(q, kc, vc, out=out, workspace=ws, return_lse=True)

                side = torch.cuda.Stream(device=self.dev)
                side.wait_stream(torch.cuda.current_stream(self.dev))
                with torch.cuda.stream(side):  # first call compiles and loads the kernel
                    step()
                torch.cuda.current_stream(self.dev).wait_stream(side)
                torch.cuda.synchronize()
                ran = kiln.last_dispatch()
                self.assertTrue(ran["variant"].startswith("attn_decode."), ran)
                self.assertGreater(ran["num_splits"], 1, ran)
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    _, lse = step()
                for rep in range(3):
                    q.copy_(self.rand(b, 1, hq, d))
                    kc.mul_(-1.0 if rep % 2 else 0.5)
                    vc.add_(0.25)
                    lens = [sk - 7 * rep - 500 * i for i in range(b)]
                    if page:
                        seqlens.copy_(torch.tensor(lens, dtype=torch.int32))
                    out.fill_(float("nan"))
                    graph.replay()
                    torch.cuda.synchronize()
                    if page:
                        kd = kc[table.long()].reshape(b, bound_k, hkv, d)
                        vd = vc[table.long()].reshape(b, bound_k, hkv, d)
                    else:
                        kd, vd, lens = kc, vc, [sk] * b
                    for i in range(b):
                        kt = kd[i:i + 1, :lens[i]].transpose(1, 2)
                        vt = vd[i:i + 1, :lens[i]].transpose(1, 2)
                        qt = q[i:i + 1].transpose(1, 2)
                        want, want_lse = reference(qt, kt, vt)
                        sdpa = F.scaled_dot_product_attention(qt, kt, vt, enable_gqa=True)
                        case = f"cuda graph {layout} replay {rep} seq {i} s{lens[i]}"
                        self.check(case, out[i:i + 1].transpose(1, 2), want, sdpa)
                        self.assertLess((lse[i:i + 1] - want_lse).abs().max().item(), 1e-2,
                                        case)
                del graph

    def test_dependent_calls_back_to_back(self):
        # Each call reads the previous call's output as its q and writes over the buffer the
        # call before it read: queued back to back (kernels that may start while the previous
        # one runs, on sm_90) the chain must give exactly what it gives with a synchronize
        # after every call. Prefill (hopper or tensor tier), split-KV decode, and an
        # activation feeding attention.
        def chain(first, step, n, sync):
            bufs = [first.clone(), torch.empty_like(first)]
            for i in range(n):
                step(bufs[i % 2], bufs[(i + 1) % 2])
                if sync:
                    torch.cuda.synchronize()
            torch.cuda.synchronize()
            return bufs[n % 2]

        k, v = self.rand(1, 1024, 16, 64), self.rand(1, 1024, 16, 64)
        kd, vd = self.rand(8, 4096, 8, 128), self.rand(8, 4096, 8, 128)
        silu_out = torch.empty(1, 1024, 16, 64, device=self.dev, dtype=torch.bfloat16)

        def act_then_attention(src, dst):
            kiln.silu_and_mul(torch.cat([src, src], dim=-1), out=silu_out)
            kiln.attention(silu_out, k, v, out=dst)

        cases = [
            ("prefill", self.rand(1, 1024, 16, 64),
             lambda src, dst: kiln.attention(src, k, v, out=dst, causal=True)),
            ("decode", self.rand(8, 1, 32, 128),
             lambda src, dst: kiln.attention(src, kd, vd, out=dst)),
            ("activation", self.rand(1, 1024, 16, 64), act_then_attention),
        ]
        for name, first, step in cases:
            with self.subTest(case=name):
                want = chain(first, step, 24, sync=True)
                got = chain(first, step, 24, sync=False)
                self.assertFalse(torch.isnan(want).any().item(), name)
                self.assertTrue(torch.equal(got, want),
                                f"{name}: {(got.float() - want.float()).abs().max().item()}")

    def test_activations_against_torch(self):
        x = self.rand(1024, 2 * 1408) * 2
        d = x.shape[-1] // 2
        for name, fn, eager in [
                ("silu", kiln.silu_and_mul, lambda a: F.silu(a)),
                ("gelu", kiln.gelu_and_mul, lambda a: F.gelu(a)),
                ("gelu_tanh", kiln.gelu_tanh_and_mul, lambda a: F.gelu(a, approximate="tanh"))]:
            out = fn(x)
            want = eager(x[:, :d].float()) * x[:, d:].float()
            torch_bf16 = eager(x[:, :d]) * x[:, d:]
            self.check(f"bf16 {name}_and_mul", out, want, torch_bf16)

    def test_stream_out_and_errors(self):
        q = self.rand(1, 64, 8, 64)
        s = torch.cuda.Stream(device=self.dev)
        out = torch.full_like(q, 3.0)
        s.wait_stream(torch.cuda.current_stream(self.dev))
        with torch.cuda.stream(s):
            got = kiln.attention(q, q, q, out=out)
        s.synchronize()
        self.assertIs(got, out)
        want, _ = reference(q.transpose(1, 2), q.transpose(1, 2), q.transpose(1, 2))
        self.check("bf16 side stream, out=", out.transpose(1, 2), want)
        bad = torch.full_like(q, 3.0)
        with self.assertRaises(kiln.KilnError) as cm:
            kiln.attention(q, q[:, :, :3], q[:, :, :3], out=bad)
        self.assertEqual(cm.exception.status, kiln.Status.INVALID_ARGUMENT)
        torch.cuda.synchronize()
        self.assertTrue(bool((bad == 3.0).all()))
        with self.assertRaises(kiln.KilnError):
            kiln.attention(q, q.cpu(), q)
        with self.assertRaises(kiln.KilnError):
            kiln.attention(q.float(), q.float(), q.float())  # fp32 is CPU-only


if __name__ == "__main__":
    unittest.main()
