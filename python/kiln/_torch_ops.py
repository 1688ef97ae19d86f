"""kiln's operations as PyTorch custom ops: kiln::attention, kiln::attention_varlen,
kiln::attention_paged, kiln::silu_and_mul, kiln::gelu_and_mul, kiln::gelu_tanh_and_mul.

Each has a fake (meta) implementation giving the outputs' shapes, dtypes and strides, so
torch.compile traces a module that calls kiln.attention with no graph break: while
compiling, kiln.attention and the activations call these ops instead of running. In eager
mode the plain functions run as before (the op adds the dispatcher's cost), and the ops work
inside CUDA graph capture like any op that queues its work on the current stream.

Registered by register() when torch offers torch.library.custom_op (2.4+) or define +
impl_abstract (2.1+); with an older torch the ops do not exist and the functions stay
plain.
"""

import sys

OPS = None  # this module once the ops are registered
_tried = False


def _lse_shape(q, packed):
    if packed:
        return (q.shape[1], q.shape[0])
    return (q.shape[0], q.shape[2], q.shape[1])


def _fake_out(q):
    # As the real call allocates: like q, contiguous last dimension (_arrays.empty_like).
    import torch
    out = torch.empty_like(q)
    if out.dim() and out.stride(-1) != 1:
        out = torch.empty(q.shape, dtype=q.dtype, device=q.device)
    return out


def _fake_lse(q, packed, return_lse):
    import torch
    shape = _lse_shape(q, packed) if return_lse else (0,)
    return torch.empty(shape, dtype=torch.float32, device=q.device)


def _real_lse(lse, q):
    import torch
    return lse if lse is not None else torch.empty((0,), dtype=torch.float32, device=q.device)


def compiling():
    """True while torch.compile (dynamo) traces the caller."""
    return _is_compiling()


_is_compiling = None


def register():
    """Registers the ops once; returns this module, or None when torch cannot."""
    global OPS, _is_compiling, _tried
    if OPS is not None or _tried:
        return OPS
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    _tried = True
    library = getattr(torch, "library", None)
    compiler = getattr(torch, "compiler", None)
    _is_compiling = getattr(compiler, "is_compiling", None)
    if _is_compiling is None:
        dynamo = getattr(torch, "_dynamo", None)
        _is_compiling = getattr(dynamo, "is_compiling", None)
    if library is None or _is_compiling is None:
        return None
    if hasattr(library, "custom_op"):
        _register_custom_op(torch)
    elif hasattr(library, "impl_abstract"):
        _register_define(torch)
    else:
        return None
    # Every kiln call asks: torch's own function, without this module's frame around it.
    global compiling
    compiling = _is_compiling
    OPS = sys.modules[__name__]
    return OPS


# The ops' bodies: the plain kiln functions (imported late: kiln imports this module).

def _attention(q, k, v, causal, window_left, window_right, softcap, scale, alibi_slopes,
               num_splits, return_lse):
    import kiln
    r = kiln.attention(q, k, v, causal=causal, window=(window_left, window_right),
                       softcap=softcap, scale=scale, alibi_slopes=alibi_slopes,
                       num_splits=num_splits, return_lse=return_lse)
    out, lse = r if return_lse else (r, None)
    return out, _real_lse(lse, q)


def _attention_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
                      causal, window_left, window_right, softcap, scale, alibi_slopes,
                      num_splits, return_lse):
    import kiln
    r = kiln.attention_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
                              max_seqlen_k, causal=causal, window=(window_left, window_right),
                              softcap=softcap, scale=scale, alibi_slopes=alibi_slopes,
                              num_splits=num_splits, return_lse=return_lse)
    out, lse = r if return_lse else (r, None)
    return out, _real_lse(lse, q)


def _attention_paged(q, k_cache, v_cache, block_table, seqlens_k, cu_seqlens_q, max_seqlen_q,
                     causal, window_left, window_right, softcap, scale, alibi_slopes,
                     num_splits, return_lse):
    import kiln
    r = kiln.attention_paged(q, k_cache, v_cache, block_table, seqlens_k,
                             cu_seqlens_q=cu_seqlens_q, max_seqlen_q=max_seqlen_q,
                             causal=causal, window=(window_left, window_right),
                             softcap=softcap, scale=scale, alibi_slopes=alibi_slopes,
                             num_splits=num_splits, return_lse=return_lse)
    out, lse = r if return_lse else (r, None)
    return out, _real_lse(lse, q)


def _act(name):
    def run(x):
        import kiln
        return getattr(kiln, name)(x)
    return run


def _act_fake(x):
    import torch
    return torch.empty(tuple(x.shape[:-1]) + (x.shape[-1] // 2,), dtype=x.dtype,
                       device=x.device)


_ACTS = ("silu_and_mul", "gelu_and_mul", "gelu_tanh_and_mul")

_SCHEMAS = {
    "attention": "(Tensor q, Tensor k, Tensor v, bool causal, int window_left, "
                 "int window_right, float softcap, float? scale, Tensor? alibi_slopes, "
                 "int num_splits, bool return_lse) -> (Tensor, Tensor)",
    "attention_varlen": "(Tensor q, Tensor k, Tensor v, Tensor cu_seqlens_q, "
                        "Tensor cu_seqlens_k, int max_seqlen_q, int max_seqlen_k, "
                        "bool causal, int window_left, int window_right, float softcap, "
                        "float? scale, Tensor? alibi_slopes, int num_splits, "
                        "bool return_lse) -> (Tensor, Tensor)",
    "attention_paged": "(Tensor q, Tensor k_cache, Tensor v_cache, Tensor block_table, "
                       "Tensor seqlens_k, Tensor? cu_seqlens_q, int max_seqlen_q, "
                       "bool causal, int window_left, int window_right, float softcap, "
                       "float? scale, Tensor? alibi_slopes, int num_splits, "
                       "bool return_lse) -> (Tensor, Tensor)",
}


def _fakes():
    def attention(q, k, v, causal, window_left, window_right, softcap, scale, alibi_slopes,
                  num_splits, return_lse):
        return _fake_out(q), _fake_lse(q, False, return_lse)

    def attention_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
                         causal, window_left, window_right, softcap, scale, alibi_slopes,
                         num_splits, return_lse):
        return _fake_out(q), _fake_lse(q, True, return_lse)

    def attention_paged(q, k_cache, v_cache, block_table, seqlens_k, cu_seqlens_q,
                        max_seqlen_q, causal, window_left, window_right, softcap, scale,
                        alibi_slopes, num_splits, return_lse):
        return _fake_out(q), _fake_lse(q, cu_seqlens_q is not None, return_lse)

    return {"attention": attention, "attention_varlen": attention_varlen,
            "attention_paged": attention_paged}


_REAL = {"attention": _attention, "attention_varlen": _attention_varlen,
         "attention_paged": _attention_paged}


def _register_custom_op(torch):
    library = torch.library
    fakes = _fakes()
    for name, real in _REAL.items():
        op = library.custom_op("kiln::" + name, real, mutates_args=(),
                               schema=_SCHEMAS[name])
        op.register_fake(fakes[name])
    for name in _ACTS:
        op = library.custom_op("kiln::" + name, _act(name), mutates_args=(),
                               schema="(Tensor x) -> Tensor")
        op.register_fake(_act_fake)


_library = None  # torch.library.Library("kiln", "DEF"), kept alive


def _register_define(torch):
    global _library
    library = torch.library
    _library = library.Library("kiln", "DEF")
    fakes = _fakes()
    for name, real in _REAL.items():
        _library.define(name + _SCHEMAS[name])
        _library.impl(name, real, "CompositeExplicitAutograd")
        library.impl_abstract("kiln::" + name)(fakes[name])
    for name in _ACTS:
        _library.define(name + "(Tensor x) -> Tensor")
        _library.impl(name, _act(name), "CompositeExplicitAutograd")
        library.impl_abstract("kiln::" + name)(_act_fake)


def call(name, *args):
    """torch.ops.kiln.<name>(*args)."""
    return getattr(sys.modules["torch"].ops.kiln, name)(*args)
