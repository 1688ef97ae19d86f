"""kiln as PyTorch custom ops (kiln::attention and friends): registration, the fake
implementations against the real ones, torch.compile(fullgraph=True) of a module calling
kiln.attention and kiln.silu_and_mul with no graph break and the eager results, CUDA graph
capture of the op, and CuPy / JAX arrays against torch. Each part skips, with the reason,
where its torch (2.1+ for the ops, a CUDA GPU for the GPU parts), CuPy or JAX is missing; a
missing torch, CuPy or JAX is a missing tool (a failure under KILN_TEST_STRICT=1), a torch
older than 2.1 (Debian's is 1.13) or a machine without a GPU is not."""

import unittest

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    torch = None

import kiln
import missing
from kiln import _torch_ops
from test_torch import _cuda_ready


def setUpModule():
    if torch is None:
        missing.tool("torch is not installed (Debian: apt-get install python3-torch)")


def _ops_missing():
    if torch is None:
        return "torch is not installed"
    _torch_ops.register()
    if _torch_ops.OPS is None:
        return (f"torch {torch.__version__} has neither torch.library.custom_op nor "
                "impl_abstract (2.1+): kiln registers no ops there")
    return None


def _gpu_missing():
    return _ops_missing() or _cuda_ready()


def _reference(q, k, v, causal):
    # q, k, v [b, s, h, d] -> SDPA on [b, h, s, d], in float32.
    qt, kt, vt = (t.float().transpose(1, 2) for t in (q, k, v))
    rep = qt.shape[1] // kt.shape[1]
    kt, vt = kt.repeat_interleave(rep, 1), vt.repeat_interleave(rep, 1)
    if causal:
        sq, sk = qt.shape[2], kt.shape[2]
        mask = torch.ones(sq, sk, dtype=torch.bool, device=q.device).tril(sk - sq)
        o = F.scaled_dot_product_attention(qt, kt, vt, attn_mask=mask)
    else:
        o = F.scaled_dot_product_attention(qt, kt, vt)
    return o.transpose(1, 2)


class Block(torch.nn.Module if torch is not None else object):
    """attention + silu_and_mul, as a model would call them."""

    def forward(self, q, k, v, x):
        a = kiln.attention(q, k, v, causal=True)
        return a * 2.0, kiln.silu_and_mul(x)


def _inputs(device, dtype):
    g = torch.Generator(device="cpu").manual_seed(5)
    q = torch.randn(2, 9, 4, 64, generator=g).to(device, dtype)
    k = torch.randn(2, 13, 2, 64, generator=g).to(device, dtype)
    v = torch.randn(2, 13, 2, 64, generator=g).to(device, dtype)
    x = torch.randn(6, 128, generator=g).to(device, dtype)
    return q, k, v, x


class OpsCases:
    device = None
    dtype = None

    def test_registered_ops_match_the_functions(self):
        q, k, v, x = _inputs(self.device, self.dtype)
        out, lse = torch.ops.kiln.attention(q, k, v, True, -1, -1, 0.0, None, None, 0, True)
        want, want_lse = kiln.attention(q, k, v, causal=True, return_lse=True)
        self.assertTrue(torch.equal(out, want))
        self.assertTrue(torch.equal(lse, want_lse))
        for name in ("silu_and_mul", "gelu_and_mul", "gelu_tanh_and_mul"):
            self.assertTrue(torch.equal(getattr(torch.ops.kiln, name)(x),
                                        getattr(kiln, name)(x)))

    def test_fake_matches_real(self):
        from torch._subclasses.fake_tensor import FakeTensorMode
        q, k, v, x = _inputs(self.device, self.dtype)
        qt = q.transpose(1, 2).contiguous().transpose(1, 2)  # [b, h, s, d] storage
        real, real_lse = torch.ops.kiln.attention(qt, k, v, False, -1, -1, 0.0, None, None, 0,
                                                  True)
        with FakeTensorMode() as mode:
            fq, fk, fv, fx = (mode.from_tensor(t) for t in (qt, k, v, x))
            fake, fake_lse = torch.ops.kiln.attention(fq, fk, fv, False, -1, -1, 0.0, None,
                                                      None, 0, True)
            fy = torch.ops.kiln.silu_and_mul(fx)
        for f, r in ((fake, real), (fake_lse, real_lse), (fy, kiln.silu_and_mul(x))):
            self.assertEqual(f.shape, r.shape)
            self.assertEqual(f.dtype, r.dtype)
            self.assertEqual(f.stride(), r.stride())

    def test_compile_fullgraph_no_graph_break(self):
        if not hasattr(torch, "compile"):
            self.skipTest(f"torch {torch.__version__} has no torch.compile")
        q, k, v, x = _inputs(self.device, self.dtype)
        block = Block()
        eager = block(q, k, v, x)
        explain = torch._dynamo.explain(block)(q, k, v, x)
        self.assertEqual(explain.graph_break_count, 0, explain.break_reasons)
        compiled = torch.compile(block, fullgraph=True)
        got = compiled(q, k, v, x)
        for g, e in zip(got, eager):
            self.assertTrue(torch.allclose(g.float(), e.float(), atol=1e-2, rtol=1e-2))
        ref = _reference(q, k, v, True) * 2.0
        self.assertLess((got[0].float() - ref).abs().max().item(), 3e-2)


@unittest.skipIf(_ops_missing(), _ops_missing() or "")
class TestOpsCPU(OpsCases, unittest.TestCase):
    device = "cpu"
    dtype = torch.float32 if torch is not None else None


@unittest.skipIf(_gpu_missing(), _gpu_missing() or "")
class TestOpsCUDA(OpsCases, unittest.TestCase):
    device = "cuda"
    dtype = torch.bfloat16 if torch is not None else None

    def test_cuda_graph_capture(self):
        q, k, v, x = _inputs("cuda", torch.bfloat16)
        sq, sk, sv, sx = (t.clone() for t in (q, k, v, x))
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            # Warm-up on the capture stream: the kernels load and split-KV scratch for this
            # stream is allocated before capture, as for any op.
            for _ in range(2):
                torch.ops.kiln.attention(sq, sk, sv, True, -1, -1, 0.0, None, None, 0, False)
                torch.ops.kiln.silu_and_mul(sx)
        torch.cuda.current_stream().wait_stream(s)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=s):
            out, _ = torch.ops.kiln.attention(sq, sk, sv, True, -1, -1, 0.0, None, None, 0,
                                              False)
            y = torch.ops.kiln.silu_and_mul(sx)
        for trial in range(3):
            nq, nk, nv, nx = (torch.randn_like(t) for t in (q, k, v, x))
            for dst, src in zip((sq, sk, sv, sx), (nq, nk, nv, nx)):
                dst.copy_(src)
            graph.replay()
            torch.cuda.synchronize()
            self.assertTrue(torch.equal(out, kiln.attention(nq, nk, nv, causal=True)),
                            f"replay {trial}")
            self.assertTrue(torch.equal(y, kiln.silu_and_mul(nx)), f"replay {trial}")


@unittest.skipIf(_gpu_missing(), _gpu_missing() or "")
class TestOtherArrays(unittest.TestCase):
    """CuPy and JAX arrays through kiln.attention, against the torch result."""

    def _check(self, convert, back):
        q, k, v, x = _inputs("cuda", torch.float16)
        want = kiln.attention(q, k, v, causal=True)
        got = kiln.attention(convert(q), convert(k), convert(v), causal=True)
        torch.cuda.synchronize()
        self.assertTrue(torch.equal(back(got), want))
        y = kiln.silu_and_mul(convert(x))
        torch.cuda.synchronize()
        self.assertTrue(torch.equal(back(y), kiln.silu_and_mul(x)))

    def test_cupy(self):
        try:
            import cupy
        except ImportError:
            missing.tool("CuPy is not installed")
        self._check(lambda t: cupy.asarray(t), lambda a: torch.as_tensor(a, device="cuda"))
        # out= of CuPy's own, on a CuPy stream the caller names.
        q, k, v, _ = _inputs("cuda", torch.float16)
        cq, ck, cv = (cupy.asarray(t) for t in (q, k, v))
        out = cupy.empty_like(cq)
        s = cupy.cuda.Stream(non_blocking=True)
        r = kiln.attention(cq, ck, cv, out=out, stream=s)
        s.synchronize()
        self.assertIs(r, out)
        self.assertTrue(torch.equal(torch.as_tensor(out, device="cuda"), kiln.attention(q, k, v)))

    def test_jax(self):
        try:
            import jax
            import jax.dlpack
        except ImportError:
            missing.tool("JAX is not installed")
        if not any(d.platform == "gpu" for d in jax.devices()):
            self.skipTest("JAX sees no GPU")
        self._check(lambda t: jax.dlpack.from_dlpack(t.contiguous()),
                    lambda a: torch.from_dlpack(a))


if __name__ == "__main__":
    unittest.main()
