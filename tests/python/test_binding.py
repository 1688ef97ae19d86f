"""The Python binding on the CPU backend with numpy arrays: bit-for-bit agreement with direct
C calls, float64 references, strides, error mapping, varlen, paged, activations, LSE,
dispatch reports and use from several threads."""

import inspect
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import unittest
import zlib

import numpy as np

import kiln
import missing
from kiln import _lib

import reference as ref
from c_direct import Direct

DTYPES = ["f32", "f16", "bf16"]


def setUpModule():
    if not os.path.exists(_lib.library_path()):
        raise unittest.SkipTest(f"no kiln library at {_lib.library_path()} (build it first)")


def same_bits(a, b):
    return a.shape == b.shape and a.dtype == b.dtype and \
        np.array_equal(np.ascontiguousarray(a).view(np.uint8),
                       np.ascontiguousarray(b).view(np.uint8))


def poisoned_like(a):
    out = np.empty_like(a)
    out.view(np.uint8)[...] = 0x7F  # NaN in every float type: unwritten elements fail
    return out


class Base(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.direct = Direct(_lib.library_path())

    @classmethod
    def tearDownClass(cls):
        cls.direct.close()

    def setUp(self):
        self.rng = np.random.default_rng(zlib.crc32(self.id().encode()))


class TestABI(unittest.TestCase):
    """The ctypes structures against the C compiler's layout of kiln.h."""

    def probe_output(self):
        probe = os.environ.get("KILN_ABI_PROBE")
        if probe:
            return subprocess.run([probe], check=True, capture_output=True, text=True).stdout
        cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
        if not cc:
            missing.tool("no KILN_ABI_PROBE and no C compiler (cc, gcc or clang)")
        here = os.path.dirname(os.path.abspath(__file__))
        include = os.path.join(here, os.pardir, os.pardir, "include")
        with tempfile.TemporaryDirectory() as tmp:
            exe = os.path.join(tmp, "probe")
            subprocess.run([cc, "-std=c11", "-I", include, os.path.join(here, "abi_probe.c"),
                            "-o", exe], check=True)
            return subprocess.run([exe], check=True, capture_output=True, text=True).stdout

    def test_layout(self):
        c = dict(line.split() for line in self.probe_output().splitlines())
        mirror = {"kiln_tensor": _lib.Tensor, "kiln_attention_params": _lib.AttentionParams,
                  "kiln_attention_plan": _lib.AttentionPlan, "kiln_dispatch": _lib.Dispatch}
        checked = 0
        for key, value in c.items():
            struct, field = key.split(".")
            if struct == "enum":
                self.assertEqual(int(value), 4)
                continue
            cls = mirror[struct]
            got = _lib.ctypes.sizeof(cls) if field == "size" else getattr(cls, field).offset
            self.assertEqual(got, int(value), key)
            checked += 1
        self.assertGreater(checked, 20)


class TestLibrary(unittest.TestCase):
    def test_params_defaults_match_library(self):
        # What the binding passes when a caller gives no option (the defaults of
        # kiln.attention's own signature) must be kiln_attention_params_init()'s defaults:
        # the binding passes no record at all then, so the library's own defaults apply.
        from kiln import _arrays
        sig = inspect.signature(kiln.attention).parameters
        options = [sig[name].default for name in
                   ("causal", "window", "softcap", "scale", "alibi_slopes", "num_splits",
                    "workspace")]
        call = _arrays.Call(np.zeros((1, 1, 1, 8), np.float32), "q")
        self.assertIsNone(call.params(*options))
        # And a call with those defaults gives the bits of one with the defaults spelled out.
        q = np.random.default_rng(7).standard_normal((1, 5, 2, 16)).astype(np.float32)
        self.assertTrue(np.array_equal(kiln.attention(q, q, q),
                                       kiln.attention(q, q, q, causal=False, window=(-1, -1),
                                                      softcap=0.0, scale=1 / 4.0)))

    def test_params_record_matches_library(self):
        # The binding packs kiln_attention_params records itself (struct.pack_into); the
        # bytes must be what kiln_attention_params_init() and the fields would give.
        from kiln import _arrays
        lib = _lib.lib()
        x = np.zeros((1, 2, 2, 8), np.float32)
        slopes = np.array([0.5, 0.25], np.float32)
        cases = [dict(causal=True), dict(window=(3, 1), softcap=2.5, scale=0.25, num_splits=3),
                 dict(alibi_slopes=slopes)]
        for kw in cases:
            with self.subTest(kw=kw):
                want = _lib.AttentionParams()
                _lib.ctypes.memset(_lib.ctypes.byref(want), 0x5A, _lib.ctypes.sizeof(want))
                lib.kiln_attention_params_init(_lib.ctypes.byref(want))
                want.causal = int(kw.get("causal", False))
                want.window_left, want.window_right = kw.get("window", (-1, -1))
                want.softcap = kw.get("softcap", 0.0)
                want.softmax_scale = kw.get("scale", 0.0)
                want.num_splits = kw.get("num_splits", 0)
                if "alibi_slopes" in kw:
                    want.alibi_slopes.data = slopes.ctypes.data
                    want.alibi_slopes.dtype = _lib.F32
                    want.alibi_slopes.rank = 1
                    want.alibi_slopes.shape[0] = 2
                    want.alibi_slopes.stride[0] = 1
                call = _arrays.Call(x, "q")
                address = call.params(kw.get("causal", False), kw.get("window", (-1, -1)),
                                      kw.get("softcap", 0.0), kw.get("scale"),
                                      kw.get("alibi_slopes"), kw.get("num_splits", 0), None)
                got = _lib.ctypes.string_at(address, _lib.ctypes.sizeof(want))
                self.assertEqual(got, bytes(want))
        call = _arrays.Call(x, "q")
        self.assertIsNone(call.params(False, (-1, -1), 0.0, None, None, 0, None))

    def test_version_and_info(self):
        # One source: CMakeLists.txt's project version, reported by the library and by the
        # package (which reads it from the library).
        here = os.path.dirname(os.path.abspath(__file__))
        with open(os.path.join(here, os.pardir, os.pardir, "CMakeLists.txt")) as f:
            import re
            cmake_version = re.search(r"project\(kiln VERSION ([0-9.]+)", f.read()).group(1)
        self.assertEqual(kiln.library_version(), cmake_version)
        self.assertEqual(kiln.__version__, cmake_version)
        info = kiln.info()
        self.assertEqual(info["version"], kiln.__version__)
        major, minor, patch = (int(x) for x in kiln.__version__.split("."))
        self.assertEqual(info["version_number"], major * 10000 + minor * 100 + patch)
        names = [b["name"] for b in info["backends"]]
        self.assertEqual(names[0], "cpu")
        self.assertTrue(set(names) <= {"cpu", "cuda", "hip"}, names)
        cpu = info["backends"][0]
        self.assertIs(cpu["available"], True)
        self.assertIn(info["auto"]["backend"], names)
        self.assertTrue(info["auto"]["reason"])
        gpu_built = any(b["name"] in ("cuda", "hip") and
                        b.get("reason") != "not built into this library"
                        for b in info["backends"])
        # The target table belongs to the GPU layer: a build without GPU backends has none.
        if gpu_built:
            self.assertIn("sm_90", info["targets_known"])
            self.assertIn("gfx1151", info["targets_known"])
        else:
            self.assertNotIn("targets_known", info)
        for b in info["backends"]:
            self.assertEqual("reason" in b, not b["available"], b)
        with_ctx = kiln.info("cpu")
        self.assertEqual(with_ctx["context_backend"], "cpu")

    def test_library_lookup(self):
        # Without KILN_LIBRARY the package looks in build/ at the root of its own tree.
        env = {k: v for k, v in os.environ.items() if k != "KILN_LIBRARY"}
        code = "from kiln import _lib; print(_lib.library_path())"
        got = subprocess.run([sys.executable, "-c", code], env=env, check=True,
                             capture_output=True, text=True).stdout.strip()
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(kiln.__file__))))
        self.assertEqual(os.path.dirname(got), os.path.join(root, "build"))
        self.assertIn(os.path.basename(got), ("libkiln.so", "kiln.dll", "libkiln.dll",
                                              "libkiln.dylib"))
        env["KILN_LIBRARY"] = os.path.join(root, "nowhere", "libkiln.so")
        code = "import kiln\ntry:\n kiln.info()\nexcept kiln.KilnError as e: print(e.status.name)"
        got = subprocess.run([sys.executable, "-c", code], env=env, check=True,
                             capture_output=True, text=True).stdout.strip()
        self.assertEqual(got, "BACKEND_UNAVAILABLE")

    def test_fast_path_in_use_as_built(self):
        # KILN_EXPECT_FAST (set by the test entries): 1 where the build made the C fast path,
        # which must then be found and used; 0 where calls go through ctypes alone; missing
        # where the build found no Python headers to make it with.
        from kiln import _arrays
        expect = os.environ.get("KILN_EXPECT_FAST")
        if expect is None:
            self.skipTest("KILN_EXPECT_FAST not set")
        if expect == "missing":
            missing.tool("Python's headers were not found when the build was configured, so "
                         "the fast path (kiln/_ext) is not built (Debian: python3-dev)")
        x = np.ones((4, 16), np.float32)
        y = np.empty((4, 8), np.float32)
        kiln.silu_and_mul(x, out=y)
        self.assertEqual(bool(_arrays.fast()), expect == "1")

    def test_status_enum_matches_library(self):
        lib = _lib.lib()
        for status in kiln.Status:
            self.assertEqual(lib.kiln_status_name(int(status)).decode(), status.name)

    def test_bf16_round_trip(self):
        x = np.array([1.0, -2.5, 3.1415926, 1e-30, np.inf, -np.inf, 65504.0, 1.00390625],
                     dtype=np.float32)
        u = kiln.bf16_from_float(x)
        self.assertEqual(u.dtype, np.uint16)
        back = kiln.bf16_to_float(u)
        finite = np.isfinite(x)
        self.assertTrue(np.all(np.abs(back[finite] - x[finite]) <= np.abs(x[finite]) * 2.0 ** -8))
        self.assertTrue(np.array_equal(back[~finite], x[~finite]))
        self.assertEqual(back[7], 1.0)  # a tie rounds to even
        self.assertTrue(np.isnan(kiln.bf16_to_float(kiln.bf16_from_float(np.float32("nan")))))


class TestAttention(Base):
    def inputs(self, b, sq, sk, hq, hkv, d, dtype):
        q, q64 = ref.make((b, sq, hq, d), dtype, self.rng)
        k, k64 = ref.make((b, sk, hkv, d), dtype, self.rng)
        v, v64 = ref.make((b, sk, hkv, d), dtype, self.rng)
        return (q, k, v), (q64, k64, v64)

    def test_modes_against_reference_and_c(self):
        cases = [
            dict(),
            dict(causal=True),
            dict(window=(3, 2)),
            dict(window=(5, 0)),
            dict(softcap=5.0),
            dict(scale=0.3),
            dict(causal=True, softcap=20.0, alibi=True),
        ]
        for dtype in DTYPES:
            for kw in cases:
                for (b, sq, sk, hq, hkv, d) in [(2, 7, 13, 4, 2, 32), (1, 16, 9, 3, 1, 64)]:
                    with self.subTest(dtype=dtype, kw=kw, shape=(b, sq, sk, hq, hkv, d)):
                        kw = dict(kw)
                        (q, k, v), (q64, k64, v64) = self.inputs(b, sq, sk, hq, hkv, d, dtype)
                        slopes = None
                        if kw.pop("alibi", False):
                            slopes = (0.5 ** np.arange(1, hq + 1)).astype(np.float32)
                        out, lse = kiln.attention(q, k, v, alibi_slopes=slopes,
                                                  return_lse=True, **kw)
                        self.assertEqual(out.dtype, q.dtype)
                        self.assertEqual(lse.shape, (b, hq, sq))
                        self.assertEqual(lse.dtype, np.float32)
                        want, want_lse = ref.attention(q64, k64, v64, slopes=slopes, **kw)
                        ref.close(self, out, want, dtype, "out")
                        ref.close(self, lse, want_lse, "f32" if dtype == "f32" else "f16",
                                  "lse")
                        # The same call made directly in C gives the same bits.
                        c_out, c_lse = poisoned_like(out), np.empty_like(lse)
                        self.assertEqual(self.direct.attention(q, k, v, c_out, c_lse,
                                                               slopes=slopes, **kw), 0)
                        self.assertTrue(same_bits(out, c_out))
                        self.assertTrue(same_bits(lse, c_lse))

    def test_transposed_views_without_copy(self):
        for dtype in DTYPES:
            with self.subTest(dtype=dtype):
                # [b, h, s, d] storage, as PyTorch models keep it, passed as permuted views.
                b, hq, hkv, sq, sk, d = 2, 4, 2, 11, 17, 64
                qh, q64 = ref.make((b, hq, sq, d), dtype, self.rng)
                kh, k64 = ref.make((b, hkv, sk, d), dtype, self.rng)
                vh, v64 = ref.make((b, hkv, sk, d), dtype, self.rng)
                q, k, v = (a.transpose(0, 2, 1, 3) for a in (qh, kh, vh))
                self.assertFalse(q.flags.c_contiguous)
                out = kiln.attention(q, k, v, causal=True)
                self.assertEqual(out.shape, q.shape)
                # The output follows q's layout, so out.transpose is contiguous [b, h, s, d].
                self.assertTrue(out.transpose(0, 2, 1, 3).flags.c_contiguous)
                want, _ = ref.attention(*(a.transpose(0, 2, 1, 3) for a in (q64, k64, v64)),
                                        causal=True)
                ref.close(self, out, want, dtype)
                c_out = poisoned_like(out)
                self.assertEqual(self.direct.attention(q, k, v, c_out, causal=True), 0)
                self.assertTrue(same_bits(out, c_out))

    def test_sliced_views_and_out(self):
        # q, k, v carved out of one packed [b, s, 3, h, d] projection; out a strided slice.
        b, s, h, d = 2, 9, 3, 32
        qkv, qkv64 = ref.make((b, s, 3, h, d), "f32", self.rng)
        q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
        big = np.full((b, s, h, 2 * d), 7.0, dtype=np.float32)
        out = big[..., :d]
        got = kiln.attention(q, k, v, out=out)
        self.assertIs(got, out)
        self.assertTrue(np.all(big[..., d:] == 7.0), "wrote outside the out view")
        want, _ = ref.attention(qkv64[:, :, 0], qkv64[:, :, 1], qkv64[:, :, 2])
        ref.close(self, out, want, "f32")
        c_out = np.full_like(big, 7.0)[..., :d]
        self.assertEqual(self.direct.attention(q, k, v, c_out), 0)
        self.assertTrue(same_bits(out, c_out))

    def test_rows_without_keys(self):
        # Causal with 8 queries over 3 keys: query i sees keys j <= i - 5, so rows 0-4 see none.
        q, k, v = self.inputs(1, 8, 3, 2, 2, 16, "f32")[0]
        out, lse = kiln.attention(q, k, v, causal=True, return_lse=True)
        self.assertTrue(np.all(out[:, :5] == 0.0))
        self.assertTrue(np.all(np.isneginf(lse[:, :, :5])))
        self.assertTrue(np.all(np.isfinite(lse[:, :, 5:])))

    def test_num_splits_exact(self):
        (q, k, v), (q64, k64, v64) = self.inputs(2, 3, 200, 4, 4, 64, "f32")
        want, want_lse = ref.attention(q64, k64, v64)
        for splits in (1, 2, 3, 7):
            with self.subTest(splits=splits):
                out, lse = kiln.attention(q, k, v, return_lse=True, num_splits=splits)
                ref.close(self, out, want, "f32")
                ref.close(self, lse, want_lse, "f32")
                used = kiln.last_dispatch()["num_splits"]
                self.assertTrue(1 <= used <= splits, used)

    def test_caller_workspace(self):
        (q, k, v), _ = self.inputs(2, 3, 300, 4, 2, 64, "f32")
        n = kiln.attention_workspace_size(2, 6, 3, 300, 4, 2, 64, num_splits=3)
        self.assertGreater(n, 0)
        plain = kiln.attention(q, k, v, num_splits=3)
        ws = np.zeros(n, np.uint8)
        self.assertTrue(same_bits(kiln.attention(q, k, v, num_splits=3, workspace=ws), plain))
        out = np.full_like(q, 4.0)
        with self.assertRaises(kiln.KilnError) as cm:
            kiln.attention(q, k, v, num_splits=3, workspace=ws[:n // 2], out=out)
        self.assertEqual(cm.exception.status, kiln.Status.WORKSPACE_TOO_SMALL)
        self.assertTrue(np.all(out == 4.0))

    def test_last_dispatch(self):
        q, k, v = self.inputs(1, 5, 5, 2, 1, 64, "bf16")[0]
        kiln.attention(q, k, v, causal=True)
        d = kiln.last_dispatch()
        self.assertEqual(d["backend"], "cpu")
        self.assertEqual(d["tier"], "cpu")
        self.assertEqual(d["variant"], "attn_fwd.bf16.d64.causal.fixed.cpu")
        self.assertTrue(d["target"])
        self.assertGreaterEqual(d["num_splits"], 1)
        x = np.ones((3, 16), dtype=np.float16)
        kiln.gelu_and_mul(x)
        self.assertEqual(kiln.last_dispatch()["variant"], "gelu_and_mul.f16.cpu")

    def test_last_dispatch_is_per_thread(self):
        seen = []
        t = threading.Thread(target=lambda: seen.append(kiln.last_dispatch()))
        t.start()
        t.join()
        self.assertEqual(seen, [None])


class TestErrors(Base):
    def check_error(self, status, fragment, fn, *args, **kw):
        with self.assertRaises(kiln.KilnError) as cm:
            fn(*args, **kw)
        e = cm.exception
        self.assertEqual(e.status, status)
        self.assertEqual(e.status_name, status.name)
        self.assertIn(fragment, e.message)
        self.assertIn(status.name, str(e))
        return e

    def test_library_errors_carry_status_and_message(self):
        q = np.zeros((1, 4, 12, 32), np.float32)
        k = np.zeros((1, 4, 5, 32), np.float32)
        out = np.full_like(q, 3.0)
        e = self.check_error(kiln.Status.INVALID_ARGUMENT, "5", kiln.attention, q, k, k,
                             out=out)
        self.assertEqual(e.message, _lib.last_error_message())
        self.assertTrue(np.all(out == 3.0), "out written on error")

    def test_nothing_written_on_error(self):
        rng = self.rng
        q = rng.standard_normal((1, 4, 2, 32)).astype(np.float32)
        bad = [
            dict(k=q[..., :16].copy()),                        # head_dim mismatch
            dict(k=q.astype(np.float16)),                      # dtype mismatch
            dict(k=np.asfortranarray(q)),                      # last dim not contiguous
            dict(k=np.concatenate([q, q[:, :, :1]], axis=2)),  # 2 q heads, 3 k heads
        ]
        for case in bad:
            with self.subTest(case=list(case)):
                k = case.get("k", q)
                out = np.full_like(q, 5.0)
                with self.assertRaises(kiln.KilnError) as cm:
                    kiln.attention(q, k, k, out=out)
                self.assertIn(cm.exception.status, (kiln.Status.INVALID_ARGUMENT,
                                                    kiln.Status.UNSUPPORTED))
                self.assertTrue(cm.exception.message)
                self.assertTrue(np.all(out == 5.0))

    def test_binding_argument_errors(self):
        q = np.zeros((1, 4, 2, 32), np.float32)
        self.check_error(kiln.Status.INVALID_ARGUMENT, "float64", kiln.attention,
                         q.astype(np.float64), q, q)
        self.check_error(kiln.Status.INVALID_ARGUMENT, "numpy array or a torch tensor",
                         kiln.attention, [1.0], q, q)
        self.check_error(kiln.Status.INVALID_ARGUMENT, "rank", kiln.silu_and_mul,
                         np.zeros((1, 1, 1, 1, 4), np.float32))
        ro = np.zeros_like(q)
        ro.flags.writeable = False
        self.check_error(kiln.Status.INVALID_ARGUMENT, "read-only", kiln.attention, q, q, q,
                         out=ro)
        self.check_error(kiln.Status.INVALID_ARGUMENT, "backend", kiln.info, "tpu")
        swapped = q.astype(q.dtype.newbyteorder())
        self.check_error(kiln.Status.INVALID_ARGUMENT, "byte order", kiln.attention,
                         swapped, swapped, swapped)

    def test_wrong_rank_reported_by_library(self):
        q = np.zeros((4, 2, 32), np.float32)
        e = self.check_error(kiln.Status.INVALID_ARGUMENT, "", kiln.attention, q, q, q,
                             return_lse=True)
        self.assertTrue(e.message)

    def test_error_pickles(self):
        import pickle
        e = kiln.KilnError(kiln.Status.UNSUPPORTED, "no")
        e2 = pickle.loads(pickle.dumps(e))
        self.assertEqual((e2.status, e2.message), (kiln.Status.UNSUPPORTED, "no"))


class TestEmptyAndNonFinite(Base):
    def test_empty_tensors_are_noops(self):
        # numpy gives empty arrays zero strides; every entry point takes them as a no-op.
        f32 = np.float32
        q = np.zeros((0, 5, 4, 16), f32)
        self.assertEqual(q.strides, (0, 0, 0, 0))
        self.assertEqual(kiln.attention(q, q, q).shape, (0, 5, 4, 16))
        self.assertEqual(kiln.last_dispatch()["variant"], "none")
        k = self.rng.standard_normal((2, 3, 4, 16)).astype(f32)
        out, lse = kiln.attention(np.zeros((2, 0, 4, 16), f32), k, k, causal=True,
                                  return_lse=True)
        self.assertEqual((out.shape, lse.shape), ((2, 0, 4, 16), (2, 4, 0)))
        kp = self.rng.standard_normal((6, 2, 16)).astype(f32)
        cu = np.zeros(3, np.int32)
        cuk = np.array([0, 2, 6], np.int32)
        out = kiln.attention_varlen(np.zeros((0, 2, 16), f32), kp, kp, cu, cuk, 0, 4)
        self.assertEqual(out.shape, (0, 2, 16))
        cache = self.rng.standard_normal((2, 16, 2, 16)).astype(f32)
        out = kiln.attention_paged(np.zeros((0, 1, 2, 16), f32), cache, cache,
                                   np.zeros((0, 2), np.int32), np.zeros(0, np.int32))
        self.assertEqual(out.shape, (0, 1, 2, 16))
        self.assertEqual(kiln.silu_and_mul(np.zeros((0, 64), f32)).shape, (0, 32))
        self.assertEqual(kiln.last_dispatch()["variant"], "none")

    def test_nan_and_inf_propagate(self):
        # A NaN in one query row makes that row NaN and leaves the others alone; a +inf in a
        # key gives NaN through exp(inf - inf); a NaN in v reaches every row that sees it.
        f32 = np.float32
        q = self.rng.standard_normal((1, 6, 2, 16)).astype(f32)
        k = self.rng.standard_normal((1, 9, 2, 16)).astype(f32)
        v = self.rng.standard_normal((1, 9, 2, 16)).astype(f32)
        qn = q.copy()
        qn[0, 3, 1, 5] = np.nan
        out, lse = kiln.attention(qn, k, v, return_lse=True)
        want, want_lse = ref.attention(qn, k, v)
        self.assertTrue(np.isnan(out[0, 3, 1]).all() and np.isnan(lse[0, 1, 3]))
        self.assertFalse(np.isnan(np.delete(out[0], 3, axis=0)).any())
        self.assertTrue(np.array_equal(np.isnan(out), np.isnan(want)))
        kn = k.copy()
        kn[0, 4, 0, 2] = np.inf
        out = kiln.attention(q, kn, v)
        want, _ = ref.attention(q, kn, v)
        self.assertTrue(np.isnan(want).any())
        self.assertTrue(np.array_equal(np.isnan(out), np.isnan(want)))
        vn = v.copy()
        vn[0, 0, 1, 7] = np.nan
        out = kiln.attention(q, k, vn)
        self.assertTrue(np.isnan(out[0, :, 1, 7]).all())
        self.assertEqual(int(np.isnan(out).sum()), 6)


class TestVarlen(Base):
    def test_against_reference_and_c(self):
        lens_q = [3, 0, 7, 1]
        lens_k = [5, 4, 7, 9]
        hq, hkv, d = 4, 2, 32
        cu_q = np.concatenate([[0], np.cumsum(lens_q)]).astype(np.int32)
        cu_k = np.concatenate([[0], np.cumsum(lens_k)]).astype(np.int32)
        for dtype in DTYPES:
            for kw in (dict(), dict(causal=True), dict(window=(2, 1))):
                with self.subTest(dtype=dtype, kw=kw):
                    q, q64 = ref.make((cu_q[-1], hq, d), dtype, self.rng)
                    k, k64 = ref.make((cu_k[-1], hkv, d), dtype, self.rng)
                    v, v64 = ref.make((cu_k[-1], hkv, d), dtype, self.rng)
                    out, lse = kiln.attention_varlen(q, k, v, cu_q, list(cu_k), max(lens_q),
                                                     max(lens_k), return_lse=True, **kw)
                    self.assertEqual(lse.shape, (hq, cu_q[-1]))
                    want = np.zeros_like(q64)
                    want_lse = np.zeros((hq, cu_q[-1]))
                    for i in range(len(lens_q)):
                        sq, sk = slice(cu_q[i], cu_q[i + 1]), slice(cu_k[i], cu_k[i + 1])
                        o, l = ref.attention_one(q64[sq], k64[sk], v64[sk], **kw)
                        want[sq], want_lse[:, sq] = o, l
                    ref.close(self, out, want, dtype)
                    ref.close(self, lse, want_lse, "f32" if dtype == "f32" else "f16", "lse")
                    self.assertEqual(kiln.last_dispatch()["variant"].split(".")[4], "varlen")
                    c_out, c_lse = poisoned_like(out), np.empty_like(lse)
                    self.assertEqual(self.direct.varlen(q, k, v, cu_q, cu_k, max(lens_q),
                                                        max(lens_k), c_out, c_lse, **kw), 0)
                    self.assertTrue(same_bits(out, c_out))
                    self.assertTrue(same_bits(lse, c_lse))

    def test_int64_cu_seqlens_are_converted(self):
        q = self.rng.standard_normal((5, 2, 16)).astype(np.float32)
        a = kiln.attention_varlen(q, q, q, np.array([0, 2, 5]), np.array([0, 2, 5]), 3, 3)
        b = kiln.attention_varlen(q, q, q, np.array([0, 2, 5], np.int32),
                                  np.array([0, 2, 5], np.int32), 3, 3)
        self.assertTrue(same_bits(a, b))

    def test_bad_cu_seqlens(self):
        q = np.zeros((5, 2, 16), np.float32)
        out = np.full_like(q, 1.0)
        with self.assertRaises(kiln.KilnError) as cm:
            kiln.attention_varlen(q, q, q, [0, 4, 2], [0, 2, 5], 4, 3, out=out)
        self.assertEqual(cm.exception.status, kiln.Status.INVALID_ARGUMENT)
        self.assertTrue(np.all(out == 1.0))
        with self.assertRaises(kiln.KilnError):
            kiln.attention_varlen(q, q, q, [0.0, 5.0], [0, 5], 5, 5)


class TestPaged(Base):
    def make_cache(self, lens, page, hkv, d, dtype, pages_extra=3):
        max_pages = max(-(-n // page) for n in lens)
        num_pages = sum(-(-n // page) for n in lens) + pages_extra
        kc, kc64 = ref.make((num_pages, page, hkv, d), dtype, self.rng)
        vc, vc64 = ref.make((num_pages, page, hkv, d), dtype, self.rng)
        order = self.rng.permutation(num_pages)  # pages in any order
        table = np.zeros((len(lens), max_pages), np.int32)
        used = 0
        for b, n in enumerate(lens):
            for j in range(-(-n // page)):
                table[b, j] = order[used]
                used += 1
        dense = []
        for b, n in enumerate(lens):
            idx = [table[b, j // page] for j in range(n)]
            within = [j % page for j in range(n)]
            dense.append((kc64[idx, within], vc64[idx, within]))
        return kc, vc, table, np.array(lens, np.int32), dense

    def test_decode(self):
        lens = [37, 5, 64]
        hq, hkv, d, page = 8, 2, 64, 16
        for dtype in DTYPES:
            with self.subTest(dtype=dtype):
                kc, vc, table, seqlens, dense = self.make_cache(lens, page, hkv, d, dtype)
                q, q64 = ref.make((len(lens), 2, hq, d), dtype, self.rng)
                out, lse = kiln.attention_paged(q, kc, vc, table, seqlens, causal=True,
                                                return_lse=True)
                self.assertEqual(lse.shape, (len(lens), hq, 2))
                for b, (k64, v64) in enumerate(dense):
                    o, l = ref.attention_one(q64[b], k64, v64, causal=True)
                    ref.close(self, out[b], o, dtype)
                    ref.close(self, lse[b], l, "f32" if dtype == "f32" else "f16", "lse")
                self.assertEqual(kiln.last_dispatch()["variant"].split(".")[4], "paged")
                c_out, c_lse = poisoned_like(out), np.empty_like(lse)
                self.assertEqual(self.direct.paged(q, kc, vc, table, seqlens, None, 0, c_out,
                                                   c_lse, causal=True), 0)
                self.assertTrue(same_bits(out, c_out))
                self.assertTrue(same_bits(lse, c_lse))

    def test_batch_prefill(self):
        lens_k = [20, 33, 8]
        lens_q = [4, 0, 8]
        hq, hkv, d, page = 4, 4, 32, 8
        cu_q = np.concatenate([[0], np.cumsum(lens_q)]).astype(np.int32)
        for dtype in DTYPES:
            with self.subTest(dtype=dtype):
                kc, vc, table, seqlens, dense = self.make_cache(lens_k, page, hkv, d, dtype)
                q, q64 = ref.make((cu_q[-1], hq, d), dtype, self.rng)
                out, lse = kiln.attention_paged(q, kc, vc, table, seqlens, cu_seqlens_q=cu_q,
                                                max_seqlen_q=max(lens_q), causal=True,
                                                return_lse=True)
                self.assertEqual(lse.shape, (hq, cu_q[-1]))
                for b, (k64, v64) in enumerate(dense):
                    s = slice(cu_q[b], cu_q[b + 1])
                    o, l = ref.attention_one(q64[s], k64, v64, causal=True)
                    ref.close(self, out[s], o, dtype)
                    ref.close(self, lse[:, s], l, "f32" if dtype == "f32" else "f16", "lse")
                c_out, c_lse = poisoned_like(out), np.empty_like(lse)
                self.assertEqual(self.direct.paged(q, kc, vc, table, seqlens, cu_q,
                                                   max(lens_q), c_out, c_lse, causal=True), 0)
                self.assertTrue(same_bits(out, c_out))
                self.assertTrue(same_bits(lse, c_lse))

    def test_table_out_of_range(self):
        kc, vc, table, seqlens, _ = self.make_cache([10], 4, 1, 16, "f32", pages_extra=0)
        table[0, 0] = 99
        q = np.zeros((1, 1, 1, 16), np.float32)
        out = np.full_like(q, 2.0)
        with self.assertRaises(kiln.KilnError) as cm:
            kiln.attention_paged(q, kc, vc, table, seqlens, out=out)
        self.assertEqual(cm.exception.status, kiln.Status.INVALID_ARGUMENT)
        self.assertTrue(np.all(out == 2.0))


class TestActivations(Base):
    ACTS = [("silu", kiln.silu_and_mul, 0), ("gelu", kiln.gelu_and_mul, 1),
            ("gelu_tanh", kiln.gelu_tanh_and_mul, 2)]

    def test_against_reference_and_c(self):
        for dtype in DTYPES:
            for name, fn, code in self.ACTS:
                for shape in [(7, 64), (2, 3, 48), (40,)]:
                    with self.subTest(dtype=dtype, act=name, shape=shape):
                        x, x64 = ref.make(shape, dtype, self.rng, scale=2.0)
                        out = fn(x)
                        self.assertEqual(out.shape, shape[:-1] + (shape[-1] // 2,))
                        self.assertEqual(out.dtype, x.dtype)
                        ref.close(self, out, ref.act_and_mul(x64, name), dtype, name)
                        self.assertEqual(kiln.last_dispatch()["variant"],
                                         f"{name}_and_mul.{dtype}.cpu")
                        c_out = poisoned_like(out)
                        self.assertEqual(self.direct.act(code, x, c_out), 0)
                        self.assertTrue(same_bits(out, c_out))

    def test_strided_rows_and_out(self):
        x, x64 = ref.make((6, 3, 64), "f32", self.rng)
        xs = x[::2, :, :]  # every other row
        out_big = np.full((3, 3, 64), 9.0, np.float32)
        out = out_big[..., 16:48]
        self.assertIs(kiln.silu_and_mul(xs, out=out), out)
        ref.close(self, out, ref.act_and_mul(x64[::2], "silu"), "f32")
        self.assertTrue(np.all(out_big[..., :16] == 9.0) and np.all(out_big[..., 48:] == 9.0))

    def test_errors(self):
        x = np.ones((4, 10), np.float32)
        out = np.full((4, 4), 1.5, np.float32)
        with self.assertRaises(kiln.KilnError) as cm:
            kiln.silu_and_mul(x, out=out)
        self.assertEqual(cm.exception.status, kiln.Status.INVALID_ARGUMENT)
        self.assertTrue(np.all(out == 1.5))
        with self.assertRaises(kiln.KilnError):
            kiln.silu_and_mul(x, out=np.zeros((4, 5), np.float16))


class TestThreads(Base):
    def test_concurrent_calls_match_serial(self):
        inputs = [ref.make((1, 9, 2, 32), "f32", self.rng)[0] for _ in range(8)]
        serial = [kiln.attention(q, q, q, causal=True) for q in inputs]
        results = [None] * len(inputs)
        errors = []
        barrier = threading.Barrier(len(inputs))

        def work(i):
            try:
                barrier.wait()
                for _ in range(20):
                    results[i] = kiln.attention(inputs[i], inputs[i], inputs[i], causal=True)
                if kiln.last_dispatch()["variant"] != "attn_fwd.f32.d32.causal.fixed.cpu":
                    errors.append("dispatch report crossed threads")
            except Exception as exc:  # reported below, in the main thread
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(i,)) for i in range(len(inputs))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        for a, b in zip(serial, results):
            self.assertTrue(same_bits(a, b))
        from kiln import _arrays
        self.assertEqual([key for key in _arrays._contexts if key[0] == _lib.BACKEND_CPU],
                         [(_lib.BACKEND_CPU, 0)])

    def test_forget_contexts(self):
        # Both tables (the fast path looks its contexts up in its own) drop their entries,
        # so the next call starts a context of its own (KILN_GPU_TIER is read then).
        from kiln import _arrays
        x = np.ones((2, 16), np.float32)
        kiln.silu_and_mul(x)
        before = _arrays.context(_lib.BACKEND_CPU, 0)
        _arrays.forget_contexts()
        self.assertEqual(_arrays._contexts, {})
        self.assertEqual(_arrays._fast_contexts, {})
        kiln.silu_and_mul(x)
        self.assertNotEqual(_arrays.context(_lib.BACKEND_CPU, 0), before)
        self.assertIn(-1, _arrays._fast_contexts)


if __name__ == "__main__":
    unittest.main()
