"""kiln: fused attention forward and gated activations on the CPU, NVIDIA and AMD GPUs.

A ctypes binding of include/kiln.h, with an optional C module (kiln/_ext) that makes the
plain calls in one step; nothing needs compiling. The library it loads is, in this
order: the one installed inside this package (pip install of a kiln wheel), the file named
by KILN_LIBRARY, build/libkiln.so (kiln.dll on Windows) beside this package's source tree.
`python -m kiln` says which.

Arrays are numpy arrays (run on the CPU backend) or torch tensors (CPU tensors on the CPU
backend, CUDA / ROCm tensors on the GPU backend of the tensor's device, queued on
torch's current stream with no synchronisation). float32, float16 and bfloat16: for numpy,
bfloat16 is a uint16 array of bf16 bit patterns (see bf16_from_float / bf16_to_float) or an
ml_dtypes.bfloat16 array. Any strides with the last dimension contiguous are accepted, so
q.transpose(1, 2) of a [batch, heads, seq, dim] tensor is passed without a copy.

Errors raise KilnError (status, message); nothing is written to outputs on error.
Forward only: the outputs carry no autograd history.
"""

import ctypes
import json

import sys

from . import _arrays, _lib, _torch_ops
from ._arrays import Call, context
from ._bf16 import bf16_from_float, bf16_to_float
from ._lib import KilnError, Status

__all__ = [
    "KilnError", "Status", "attention", "attention_varlen", "attention_paged",
    "attention_workspace_size", "silu_and_mul", "gelu_and_mul", "gelu_tanh_and_mul",
    "info", "last_dispatch", "library_version", "bf16_from_float", "bf16_to_float",
]

_BACKENDS = {"auto": _lib.BACKEND_AUTO, "cpu": _lib.BACKEND_CPU, "cuda": _lib.BACKEND_CUDA,
             "hip": _lib.BACKEND_HIP}
_BACKEND_NAMES = {v: k for k, v in _BACKENDS.items()}


def library_version():
    """The version string of the loaded library ("0.2.0")."""
    return _lib.lib().kiln_version_string().decode()


def __getattr__(name):
    # The version is the library's (CMakeLists.txt's project version, the one place it is
    # written), read when first asked for.
    if name == "__version__":
        return library_version()
    raise AttributeError(f"module 'kiln' has no attribute '{name}'")


def _finish(out, lse, return_lse):
    return (out, lse) if return_lse else out


_TRACING = "tracing"


def _route():
    """_TRACING while torch.compile traces (kiln's calls are then its custom ops); else the
    optional C fast path (kiln/_ext), or a false value where it is not built. The fast path
    takes plain torch tensors and numpy arrays with the scalar options, and returns None for
    anything else before calling the library; the ctypes path then makes the call as it
    always does. One function for both questions: it runs on every call."""
    ops = _torch_ops.OPS
    if ops is not None and ops.compiling():
        return _TRACING
    fast = _arrays._fast
    return _arrays.fast() if fast is None else fast


def _as_op(name, operands, out, workspace, causal, window, softcap, scale, alibi_slopes,
           num_splits, return_lse):
    """The call as the custom op kiln::<name>, which allocates its outputs."""
    if workspace is not None or out is not None:
        raise KilnError(Status.UNSUPPORTED, f"under torch.compile kiln.{name} allocates its "
                        "outputs: out= and workspace= are not taken")
    left, right = (-1, -1) if window is None else window
    r = _torch_ops.OPS.call(name, *operands, bool(causal), int(left), int(right),
                            float(softcap), scale, alibi_slopes, int(num_splits),
                            bool(return_lse))
    return r if return_lse else r[0]


def attention(q, k, v, *, causal=False, window=(-1, -1), softcap=0.0, scale=None,
              alibi_slopes=None, return_lse=False, out=None, num_splits=0, workspace=None,
              stream=None):
    """Fixed-length attention forward (FlashAttention's conventions).

    q [batch, seqlen_q, heads_q, d]; k, v [batch, seqlen_k, heads_kv, d], heads_q a multiple
    of heads_kv. causal and window=(left, right) are aligned bottom-right, -1 = unbounded.
    softcap 0 = off; scale None = 1/sqrt(d); alibi_slopes fp32 [heads_q] or
    [batch, heads_q]; num_splits 0 = automatic split-KV. out (optional) is written in
    place. Returns out, or (out, lse) with lse fp32 [batch, heads_q, seqlen_q].
    workspace: optional caller-owned scratch (bytes from attention_workspace_size).
    stream: the GPU stream to queue on (a handle, or a torch / CuPy stream); None = torch's
    current stream (CuPy's for CuPy arrays).
    """
    fast = _route()
    if fast is _TRACING:
        return _as_op("attention", (q, k, v), out, workspace, causal, window, softcap, scale,
                      alibi_slopes, num_splits, return_lse)
    if fast and alibi_slopes is None and workspace is None and not return_lse and stream is None:
        o = _arrays.empty_like_plain(q) if out is None else out
        if o is not None:
            st = _arrays._ext.attention(fast.attention, q, k, v, o, causal, window, softcap,
                                        scale, num_splits)
            if st is not None:
                if st:
                    _lib.check(st)
                return o
            out = o
    if _arrays.is_foreign(q):
        return _arrays.foreign_call(attention, (q, k, v), dict(
            causal=causal, window=window, softcap=softcap, scale=scale,
            alibi_slopes=alibi_slopes, return_lse=return_lse, out=out, num_splits=num_splits,
            workspace=workspace, stream=stream))
    call = Call(q, "q", stream)
    tq = call.view(q, "q")
    tk = call.view(k, "k")
    tv = call.view(v, "v")
    if out is None:
        out = call.empty_like(q)
    to = call.view(out, "out", writable=True)
    lse = tl = None
    if return_lse and len(q.shape) == 4:
        lse = call.empty((q.shape[0], q.shape[2], q.shape[1]))
        tl = call.view(lse, "lse", writable=True)
    p = call.params(causal, window, softcap, scale, alibi_slopes, num_splits, workspace)
    _lib.check(call.invoke(_lib.lib().kiln_attention_fwd, tq, tk, tv, to, tl, p,
                           call.stream))
    return _finish(out, lse, return_lse)


def attention_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, *,
                     causal=False, window=(-1, -1), softcap=0.0, scale=None,
                     alibi_slopes=None, return_lse=False, out=None, num_splits=0,
                     workspace=None, stream=None):
    """Variable-length attention over packed sequences.

    q [total_q, heads_q, d]; k, v [total_k, heads_kv, d]; cu_seqlens_q / cu_seqlens_k int32
    [batch + 1] (lists and other integer arrays are converted). Returns out
    [total_q, heads_q, d], or (out, lse) with lse fp32 [heads_q, total_q].
    """
    fast = _route()
    if fast is _TRACING:
        operands = (q, k, v, cu_seqlens_q, cu_seqlens_k, int(max_seqlen_q), int(max_seqlen_k))
        return _as_op("attention_varlen", operands, out, workspace, causal, window, softcap,
                      scale, alibi_slopes, num_splits, return_lse)
    if fast and alibi_slopes is None and workspace is None and not return_lse and stream is None:
        o = _arrays.empty_like_plain(q) if out is None else out
        if o is not None:
            st = _arrays._ext.attention_varlen(fast.attention_varlen, q, k, v, cu_seqlens_q,
                                               cu_seqlens_k, max_seqlen_q, max_seqlen_k, o,
                                               causal, window, softcap, scale, num_splits)
            if st is not None:
                if st:
                    _lib.check(st)
                return o
            out = o
    if _arrays.is_foreign(q):
        return _arrays.foreign_call(attention_varlen, (q, k, v, cu_seqlens_q, cu_seqlens_k,
                                                       max_seqlen_q, max_seqlen_k), dict(
            causal=causal, window=window, softcap=softcap, scale=scale,
            alibi_slopes=alibi_slopes, return_lse=return_lse, out=out, num_splits=num_splits,
            workspace=workspace, stream=stream))
    call = Call(q, "q", stream)
    tq = call.view(q, "q")
    tk = call.view(k, "k")
    tv = call.view(v, "v")
    tcq = call.view(call.index(cu_seqlens_q, "cu_seqlens_q"), "cu_seqlens_q")
    tck = call.view(call.index(cu_seqlens_k, "cu_seqlens_k"), "cu_seqlens_k")
    if out is None:
        out = call.empty_like(q)
    to = call.view(out, "out", writable=True)
    lse = tl = None
    if return_lse and len(q.shape) == 3:
        lse = call.empty((q.shape[1], q.shape[0]))
        tl = call.view(lse, "lse", writable=True)
    p = call.params(causal, window, softcap, scale, alibi_slopes, num_splits, workspace)
    _lib.check(call.invoke(_lib.lib().kiln_attention_fwd_varlen, tq, tk, tv, tcq, tck,
                           int(max_seqlen_q), int(max_seqlen_k), to, tl, p, call.stream))
    return _finish(out, lse, return_lse)


def attention_paged(q, k_cache, v_cache, block_table, seqlens_k, *, cu_seqlens_q=None,
                    max_seqlen_q=0, causal=False, window=(-1, -1), softcap=0.0, scale=None,
                    alibi_slopes=None, return_lse=False, out=None, num_splits=0,
                    workspace=None, stream=None):
    """Attention over a paged KV cache: decode, or batch prefill with cu_seqlens_q.

    k_cache, v_cache [num_pages, page_size, heads_kv, d]; block_table int32
    [batch, max_pages]; seqlens_k int32 [batch]. Decode (cu_seqlens_q None): q and out
    [batch, seqlen_q, heads_q, d], lse [batch, heads_q, seqlen_q]. Batch prefill: q and out
    [total_q, heads_q, d], lse [heads_q, total_q], max_seqlen_q bounding each sequence.
    """
    fast = _route()
    if fast is _TRACING:
        operands = (q, k_cache, v_cache, block_table, seqlens_k, cu_seqlens_q, int(max_seqlen_q))
        return _as_op("attention_paged", operands, out, workspace, causal, window, softcap,
                      scale, alibi_slopes, num_splits, return_lse)
    if fast and alibi_slopes is None and workspace is None and not return_lse and stream is None:
        o = _arrays.empty_like_plain(q) if out is None else out
        if o is not None:
            st = _arrays._ext.attention_paged(fast.attention_paged, q, k_cache, v_cache,
                                              block_table, seqlens_k, cu_seqlens_q,
                                              max_seqlen_q, o, causal, window, softcap, scale,
                                              num_splits)
            if st is not None:
                if st:
                    _lib.check(st)
                return o
            out = o
    if _arrays.is_foreign(q):
        return _arrays.foreign_call(attention_paged, (q, k_cache, v_cache, block_table,
                                                      seqlens_k), dict(
            cu_seqlens_q=cu_seqlens_q, max_seqlen_q=max_seqlen_q, causal=causal,
            window=window, softcap=softcap, scale=scale, alibi_slopes=alibi_slopes,
            return_lse=return_lse, out=out, num_splits=num_splits, workspace=workspace,
            stream=stream))
    call = Call(q, "q", stream)
    tq = call.view(q, "q")
    tk = call.view(k_cache, "k_cache")
    tv = call.view(v_cache, "v_cache")
    tbt = call.view(call.index(block_table, "block_table"), "block_table")
    tsk = call.view(call.index(seqlens_k, "seqlens_k"), "seqlens_k")
    tcq = None
    if cu_seqlens_q is not None:
        tcq = call.view(call.index(cu_seqlens_q, "cu_seqlens_q"), "cu_seqlens_q")
    if out is None:
        out = call.empty_like(q)
    to = call.view(out, "out", writable=True)
    lse = tl = None
    if return_lse:
        rank = len(q.shape)
        if tcq is None and rank == 4:
            lse = call.empty((q.shape[0], q.shape[2], q.shape[1]))
        elif tcq is not None and rank == 3:
            lse = call.empty((q.shape[1], q.shape[0]))
        if lse is not None:
            tl = call.view(lse, "lse", writable=True)
    p = call.params(causal, window, softcap, scale, alibi_slopes, num_splits, workspace)
    _lib.check(call.invoke(_lib.lib().kiln_attention_fwd_paged, tq, tk, tv, tbt, tsk, tcq,
                           int(max_seqlen_q), to, tl, p, call.stream))
    return _finish(out, lse, return_lse)


def attention_workspace_size(batch, rows_q, max_seqlen_q, max_seqlen_k, heads_q, heads_kv,
                             head_dim, num_splits=0, *, backend="cpu", device=0):
    """Bytes of split-KV workspace a call of this shape needs on backend/device (0 = none)."""
    ctx = context(_backend_code(backend), device)
    plan = _lib.AttentionPlan(ctypes.sizeof(_lib.AttentionPlan), batch, rows_q, max_seqlen_q,
                              max_seqlen_k, heads_q, heads_kv, head_dim, num_splits)
    n = ctypes.c_size_t()
    _lib.check(_lib.lib().kiln_attention_workspace_size(ctx, ctypes.byref(plan),
                                                        ctypes.byref(n)))
    return n.value


_ACT_NAMES = {_lib.ACT_SILU: "silu_and_mul", _lib.ACT_GELU: "gelu_and_mul",
              _lib.ACT_GELU_TANH: "gelu_tanh_and_mul"}


def _act_and_mul(act, x, out, stream):
    fast = _route()
    if fast is _TRACING:
        if out is not None:
            raise KilnError(Status.UNSUPPORTED, "under torch.compile the activations allocate "
                            "their output: out= is not taken")
        return _torch_ops.OPS.call(_ACT_NAMES[act], x)
    if fast and out is not None and stream is None:
        st = _arrays._ext.act_and_mul(fast.act_and_mul, act, x, out)
        if st is not None:
            if st:
                _lib.check(st)
            return out
    if _arrays.is_foreign(x):
        return _arrays.foreign_call(lambda x, out, stream: _act_and_mul(act, x, out, stream),
                                    (x,), dict(out=out, stream=stream))
    call = Call(x, "x", stream)
    tx = call.view(x, "x")
    if out is None:
        out = call.empty(tuple(x.shape[:-1]) + (x.shape[-1] // 2,), like=x)
    to = call.view(out, "out", writable=True)
    _lib.check(call.invoke(_lib.lib().kiln_act_and_mul, act, tx, to, call.stream))
    return out


def silu_and_mul(x, out=None, *, stream=None):
    """x [..., 2d] -> out [..., d] = silu(x[..., :d]) * x[..., d:]."""
    return _act_and_mul(_lib.ACT_SILU, x, out, stream)


def gelu_and_mul(x, out=None, *, stream=None):
    """x [..., 2d] -> out [..., d] = gelu(x[..., :d]) * x[..., d:] (exact, erf)."""
    return _act_and_mul(_lib.ACT_GELU, x, out, stream)


def gelu_tanh_and_mul(x, out=None, *, stream=None):
    """x [..., 2d] -> out [..., d] = gelu_tanh(x[..., :d]) * x[..., d:]."""
    return _act_and_mul(_lib.ACT_GELU_TANH, x, out, stream)


def _backend_code(backend):
    if isinstance(backend, int):
        return backend
    try:
        return _BACKENDS[backend]
    except KeyError:
        raise KilnError(Status.INVALID_ARGUMENT,
                        f"unknown backend '{backend}' (auto, cpu, cuda, hip)") from None


def info(backend=None, device=0):
    """kiln_info_json() as a dict: library, machine, backends found and auto's choice.
    With backend ("cpu", "cuda", "hip") that context's device is described too."""
    lib = _lib.lib()
    ctx = None if backend is None else context(_backend_code(backend), device)
    needed = ctypes.c_size_t()
    cap = 1 << 16
    while True:
        buf = ctypes.create_string_buffer(cap)
        status = lib.kiln_info_json(ctx, buf, cap, ctypes.byref(needed))
        if status == Status.BUFFER_TOO_SMALL and needed.value > cap:
            cap = needed.value
            continue
        _lib.check(status)
        return json.loads(buf.value.decode("utf-8", "replace"))


def last_dispatch():
    """What the last successful kiln call on this thread ran, as a dict (backend, target,
    tier, variant, num_splits), or None if none has run yet."""
    d = _lib.Dispatch()
    d.struct_size = ctypes.sizeof(d)
    status = _lib.lib().kiln_last_dispatch(ctypes.byref(d))
    if status == Status.NOTHING_RAN:
        return None
    _lib.check(status)
    return {
        "backend": _BACKEND_NAMES.get(d.backend, str(d.backend)),
        "target": d.target.decode("utf-8", "replace"),
        "tier": d.tier.decode("utf-8", "replace"),
        "variant": d.variant.decode("utf-8", "replace"),
        "num_splits": d.num_splits,
    }


# PyTorch custom ops (kiln::attention, ...), when torch is already imported; otherwise on the
# first call with a torch tensor (import torch before kiln to compile a first call).
if "torch" in sys.modules:
    _torch_ops.register()
