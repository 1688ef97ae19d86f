"""kiln's C API called with ctypes written here from kiln.h, independently of the package,
so the binding's results can be compared bit for bit with a plain C call on the same data."""

import ctypes

import numpy as np


class CTensor(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("data", ctypes.c_void_p), ("dtype", ctypes.c_int), ("rank", ctypes.c_int32),
                ("shape", ctypes.c_int64 * 4), ("stride", ctypes.c_int64 * 4)]


class CParams(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("softmax_scale", ctypes.c_float), ("causal", ctypes.c_int32),
                ("window_left", ctypes.c_int32), ("window_right", ctypes.c_int32),
                ("softcap", ctypes.c_float), ("alibi_slopes", CTensor),
                ("num_splits", ctypes.c_int32), ("workspace", ctypes.c_void_p),
                ("workspace_size", ctypes.c_size_t)]


class Direct:
    def __init__(self, path):
        self.lib = ctypes.CDLL(path)
        self.ctx = ctypes.c_void_p()
        status = self.lib.kiln_context_create(1, 0, ctypes.byref(self.ctx))  # CPU
        if status:
            raise RuntimeError(f"kiln_context_create: {status}")

    def close(self):
        self.lib.kiln_context_free(self.ctx)

    @staticmethod
    def tensor(a):
        if a is None:
            return None
        codes = {np.dtype(np.float32): 0, np.dtype(np.float16): 1,
                 np.dtype(np.uint16): 2, np.dtype(np.int32): 3}
        t = CTensor()
        t.struct_size = ctypes.sizeof(t)
        t.data = a.ctypes.data
        t.dtype = codes[a.dtype]
        t.rank = a.ndim
        for i in range(a.ndim):
            t.shape[i] = a.shape[i]
            t.stride[i] = a.strides[i] // a.itemsize
        return ctypes.byref(t)

    def params(self, causal=False, window=(-1, -1), softcap=0.0, scale=None, slopes=None,
               num_splits=0):
        p = CParams()
        self.lib.kiln_attention_params_init(ctypes.byref(p))
        p.softmax_scale = 0.0 if scale is None else scale
        p.causal = int(causal)
        p.window_left, p.window_right = window
        p.softcap = softcap
        p.num_splits = num_splits
        if slopes is not None:
            p.alibi_slopes = self.tensor(slopes)._obj
        return p

    def attention(self, q, k, v, out, lse=None, **kw):
        p = self.params(**kw)
        return self.lib.kiln_attention_fwd(self.ctx, self.tensor(q), self.tensor(k),
                                           self.tensor(v), self.tensor(out), self.tensor(lse),
                                           ctypes.byref(p), None)

    def varlen(self, q, k, v, cu_q, cu_k, max_q, max_k, out, lse=None, **kw):
        p = self.params(**kw)
        f = self.lib.kiln_attention_fwd_varlen
        f.argtypes = [ctypes.c_void_p] + [ctypes.c_void_p] * 5 + [ctypes.c_int64] * 2 + \
            [ctypes.c_void_p] * 4
        return f(self.ctx, self.tensor(q), self.tensor(k), self.tensor(v), self.tensor(cu_q),
                 self.tensor(cu_k), max_q, max_k, self.tensor(out), self.tensor(lse),
                 ctypes.byref(p), None)

    def paged(self, q, kc, vc, table, seqlens, cu_q, max_q, out, lse=None, **kw):
        p = self.params(**kw)
        f = self.lib.kiln_attention_fwd_paged
        f.argtypes = [ctypes.c_void_p] + [ctypes.c_void_p] * 6 + [ctypes.c_int64] + \
            [ctypes.c_void_p] * 4
        return f(self.ctx, self.tensor(q), self.tensor(kc), self.tensor(vc),
                 self.tensor(table), self.tensor(seqlens), self.tensor(cu_q), max_q,
                 self.tensor(out), self.tensor(lse), ctypes.byref(p), None)

    def act(self, act, x, out):
        return self.lib.kiln_act_and_mul(self.ctx, act, self.tensor(x), self.tensor(out), None)
