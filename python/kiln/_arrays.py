"""numpy and torch interop: array -> kiln_tensor views, output allocation, contexts.

Neither framework is imported here unless the caller already uses it: a torch tensor can
only exist if torch is in sys.modules, so the check costs nothing for numpy users and
`import kiln` never pulls torch in.
"""

import ctypes
import sys
import threading

from . import _lib, _torch_ops
from ._lib import KilnError, Status

_TENSOR_RECORD = _lib.TENSOR_RECORD
_TENSOR_SIZE = _lib.TENSOR_SIZE
_PARAMS_RECORD = _lib.PARAMS_RECORD
# Slots of a call's record buffer: up to seven tensors (paged: q, k_cache, v_cache,
# block_table, seqlens_k, cu_seqlens_q, out; lse; ALiBi slopes travel inside params), then
# the params record.
_SLOTS = 8
_PARAMS_OFFSET = _SLOTS * _TENSOR_SIZE
_BUFFER_SIZE = _PARAMS_OFFSET + _lib.PARAMS_SIZE
_ALIBI_OFFSET = _PARAMS_OFFSET + _lib.AttentionParams.alibi_slopes.offset
# alibi_slopes when there are none: kiln_tensor_init()'s record (struct_size, the rest 0).
_NO_TENSOR = (_TENSOR_SIZE, 0, 0, 0) + (0,) * (2 * _lib.MAX_RANK)

try:
    import numpy as np
except ImportError:  # torch-only use still works
    np = None

NUMPY = "numpy"
TORCH = "torch"

_torch_dtypes = None


def _torch_dtype_codes(torch):
    global _torch_dtypes
    if _torch_dtypes is None:
        _torch_dtypes = {torch.float32: _lib.F32, torch.float16: _lib.F16,
                         torch.bfloat16: _lib.BF16, torch.int32: _lib.I32}
    return _torch_dtypes


def _numpy_dtype_code(dtype):
    if dtype.name == "bfloat16":  # ml_dtypes; checked first, whatever kind it reports
        return _lib.BF16
    kind = dtype.kind
    size = dtype.itemsize
    if kind == "f":
        if size == 4:
            return _lib.F32
        if size == 2:
            return _lib.F16
    elif kind == "u" and size == 2:
        # numpy has no bfloat16: a uint16 array carries bf16 bit patterns.
        return _lib.BF16
    elif kind == "i" and size == 4:
        return _lib.I32
    return None


def _invalid(message):
    return KilnError(Status.INVALID_ARGUMENT, message)


def _bad_rank(role, rank):
    return _invalid(f"{role} has rank {rank}; kiln tensors have rank 1 to {_lib.MAX_RANK}")


def framework_of(x, role):
    if np is not None and isinstance(x, np.ndarray):
        return NUMPY
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        return TORCH
    raise _invalid(f"{role} must be a numpy array or a torch tensor, not {type(x).__name__}")


_contexts = {}
_contexts_lock = threading.Lock()
# The same contexts keyed as the fast path looks them up: -1 for the CPU, the device index
# for the GPU backend torch runs on.
_fast_contexts = {}

_ext = None  # the fast path's module, once fast() has found it


def _load_ext():
    """kiln._ext from this package (a wheel installs it here), else from beside the loaded
    library (a source build puts it in build/); None where neither exists or loads (no
    compiler, another Python): the ctypes path then does everything."""
    import importlib.machinery
    import importlib.util
    import os
    try:
        from . import _ext as ext
        return ext
    except ImportError:
        pass
    folder = os.path.dirname(os.path.abspath(_lib.library_path()))
    for name in ("_ext.abi3.so", "_ext.pyd"):
        path = os.path.join(folder, name)
        if not os.path.exists(path):
            continue
        try:
            loader = importlib.machinery.ExtensionFileLoader(__package__ + "._ext", path)
            spec = importlib.util.spec_from_file_location(__package__ + "._ext", path,
                                                          loader=loader)
            ext = importlib.util.module_from_spec(spec)
            loader.exec_module(ext)
            return ext
        except ImportError:
            return None
    return None

_fast_torch = None  # the torch module _ext was last set up with


def _fast_setup():
    """(Re)configures the fast path with the frameworks imported by now."""
    global _fast_torch
    torch = sys.modules.get("torch")
    codes, tensor, current_stream = {}, None, None
    if torch is not None:
        codes = dict(_torch_dtype_codes(torch))
        tensor = torch.Tensor
        current_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    _ext.setup(tensor, None if np is None else np.ndarray, codes, _fast_contexts,
               current_stream)
    _fast_torch = torch


def _fast_key(backend, device):
    if backend == _lib.BACKEND_CPU:
        return -1
    torch = sys.modules.get("torch")
    gpu = _lib.BACKEND_HIP if torch is not None and torch.version.hip else _lib.BACKEND_CUDA
    return device if backend == gpu else None


def context(backend, device):
    """The one context for (backend, device), created on first use."""
    key = (backend, device)
    ctx = _contexts.get(key)
    if ctx is not None:
        return ctx
    with _contexts_lock:
        ctx = _contexts.get(key)
        if ctx is None:
            lib = _lib.lib()
            handle = ctypes.c_void_p()
            _lib.check(lib.kiln_context_create(backend, device, ctypes.byref(handle)))
            ctx = handle.value
            # Contexts live as long as the process: freeing them at interpreter exit could
            # run after the GPU framework has torn its driver state down.
            _contexts[key] = ctx
            fast = _fast_key(backend, device)
            if fast is not None:
                _fast_contexts[fast] = ctx
    return ctx


def forget_contexts():
    """Drops the cached contexts (the fast path's table too), so the next call starts a new
    one and reads KILN_GPU_TIER again. None is freed: a caller may still hold one."""
    swap_contexts(None)


def swap_contexts(kept):
    """Replaces the cached contexts (the fast path's table too) with `kept`, a value this
    function returned before, or with none for None; returns the ones it replaced. A caller
    that switches KILN_GPU_TIER back and forth (a benchmark timing one tier against another)
    keeps each setting's contexts this way instead of starting new ones. None is freed."""
    with _contexts_lock:
        was = (dict(_contexts), dict(_fast_contexts))
        _contexts.clear()
        _fast_contexts.clear()
        if kept is not None:
            _contexts.update(kept[0])
            _fast_contexts.update(kept[1])
    return was


class _Records(threading.local):
    """Per thread: the buffer a call's kiln_tensor and kiln_attention_params records are
    written into (each call overwrites the last; the library reads them before returning)."""

    def __init__(self):
        self.buf = ctypes.create_string_buffer(_BUFFER_SIZE)
        self.base = ctypes.addressof(self.buf)


_records = _Records()


class Call:
    """One library call: the framework and device every argument must share, the context
    and stream to use, the arrays kept alive until the call returns, and the buffer the
    arguments' records are written into."""

    __slots__ = ("framework", "device", "backend", "device_index", "keep", "torch", "codes",
                 "buf", "base", "next", "given_stream")

    def __init__(self, first, role, stream=None):
        self.given_stream = _stream_handle(stream)
        self.framework = framework_of(first, role)
        self.keep = []
        records = _records
        self.buf = records.buf
        self.base = records.base
        self.next = 0
        if self.framework == NUMPY:
            self.device = None
            self.backend = _lib.BACKEND_CPU
            self.device_index = 0
            return
        torch = self.torch = sys.modules["torch"]
        self.codes = _torch_dtype_codes(torch)
        if _ext is not None and _fast_torch is not torch:
            _fast_setup()
        if _torch_ops.OPS is None:
            _torch_ops.register()
        device = first.device
        self.device = device
        if device.type == "cpu":
            self.backend = _lib.BACKEND_CPU
            self.device_index = 0
        elif device.type == "cuda":
            self.backend = _lib.BACKEND_HIP if torch.version.hip else _lib.BACKEND_CUDA
            index = device.index
            self.device_index = torch.cuda.current_device() if index is None else index
        else:
            raise _invalid(f"{role} is on device '{device}': kiln runs on the CPU and on "
                           "CUDA / ROCm GPUs")

    @property
    def context(self):
        return context(self.backend, self.device_index)

    @property
    def stream(self):
        """The caller's current stream on the tensors' device (None on the CPU)."""
        if self.backend == _lib.BACKEND_CPU:
            return None
        if self.given_stream is not None:
            return self.given_stream or None
        torch = self.torch
        # The private accessor returns the raw handle without building a Stream object
        # (several microseconds a call); the public path stays as the fallback.
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        if raw is not None:
            return raw(self.device_index) or None
        return torch.cuda.current_stream(self.device).cuda_stream or None

    def invoke(self, fn, *args):
        """fn(context, *args) -> status. A call on another GPU than torch's current one needs
        no device switch here: the library makes its context current for the call and
        restores the caller's (as the fast path, kiln/_ext, relies on too)."""
        ctx = _contexts.get((self.backend, self.device_index)) or self.context
        return fn(ctx, *args)

    def view(self, x, role, writable=False, offset=None):
        """Writes a kiln_tensor record of x, which must live where the call's first array
        does, into the call's buffer (at offset, else the next free slot); returns its
        address."""
        if offset is None:
            offset = self.next
            self.next = offset + _TENSOR_SIZE
        if self.framework == NUMPY:
            return self._view_numpy(x, role, writable, offset)
        # The torch path runs several times per call: kept lean (each attribute access
        # and check here costs a measurable share of a GPU call's host time).
        if not isinstance(x, self.torch.Tensor):
            raise _invalid(f"{role} must be a torch tensor like the other arguments, "
                           f"not {type(x).__name__}")
        if x.device != self.device:
            raise _invalid(f"{role} is on {x.device} but the other arguments are on "
                           f"{self.device}")
        code = self.codes.get(x.dtype)
        if code is None:
            raise _invalid(f"{role} has dtype {x.dtype}; kiln takes float32, float16, "
                           "bfloat16 and int32")
        shape = x.shape
        rank = len(shape)
        if not 1 <= rank <= _lib.MAX_RANK:
            raise _bad_rank(role, rank)
        _TENSOR_RECORD[rank].pack_into(self.buf, offset, _TENSOR_SIZE, x.data_ptr(), code,
                                       rank, *shape, *x.stride())
        return self.base + offset

    def params(self, causal, window, softcap, scale, alibi_slopes, num_splits, workspace):
        """The address of a kiln_attention_params record, or None (the library's defaults)
        when every argument has its default."""
        if (not causal and window == (-1, -1) and not softcap and scale is None
                and alibi_slopes is None and not num_splits and workspace is None):
            return None
        left, right = (-1, -1) if window is None else window
        ws, ws_size = (0, 0) if workspace is None else self.buffer(workspace, "workspace")
        _PARAMS_RECORD.pack_into(self.buf, _PARAMS_OFFSET, _lib.PARAMS_SIZE,
                                 0.0 if scale is None else scale, 1 if causal else 0, left,
                                 right, softcap, *_NO_TENSOR, num_splits, ws, ws_size)
        if alibi_slopes is not None:
            self.view(self.floats(alibi_slopes, "alibi_slopes"), "alibi_slopes",
                      offset=_ALIBI_OFFSET)
        return self.base + _PARAMS_OFFSET

    def _view_numpy(self, x, role, writable, offset):
        if not isinstance(x, np.ndarray):
            raise _invalid(f"{role} must be a numpy array like the other arguments, "
                           f"not {type(x).__name__}")
        code = _numpy_dtype_code(x.dtype)
        if code is not None and not x.dtype.isnative:
            raise _invalid(f"{role} is {x.dtype.str}, not in this machine's byte order")
        if code is None:
            raise _invalid(f"{role} has dtype {x.dtype}; kiln takes float32, float16, "
                           "bfloat16 (as uint16 bits or ml_dtypes.bfloat16) and int32")
        if writable and not x.flags.writeable:
            raise _invalid(f"{role} is read-only")
        rank = x.ndim
        if rank < 1 or rank > _lib.MAX_RANK:
            raise _bad_rank(role, rank)
        itemsize = x.itemsize
        strides = x.strides
        for s in strides:
            if s % itemsize:
                raise _invalid(f"{role} has a byte stride ({s}) that is not a multiple "
                               f"of its element size ({itemsize})")
        _TENSOR_RECORD[rank].pack_into(self.buf, offset, _TENSOR_SIZE, x.ctypes.data, code,
                                       rank, *x.shape, *[s // itemsize for s in strides])
        return self.base + offset

    def index(self, x, role):
        """int32 index data (cu_seqlens, block tables, lengths): lists, other integer types
        and host arrays for a GPU call are converted (a copy)."""
        if self.framework == NUMPY:
            if not (isinstance(x, np.ndarray) and x.dtype == np.int32):
                x = np.asarray(x)
                if x.dtype.kind not in "iu":
                    raise _invalid(f"{role} must hold integers, not {x.dtype}")
                x = x.astype(np.int32)
        else:
            torch = sys.modules["torch"]
            if not (isinstance(x, torch.Tensor) and x.dtype == torch.int32
                    and x.device == self.device):
                if isinstance(x, torch.Tensor):
                    if x.dtype.is_floating_point or x.dtype.is_complex:
                        raise _invalid(f"{role} must hold integers, not {x.dtype}")
                    x = x.to(device=self.device, dtype=torch.int32)
                else:
                    x = torch.as_tensor(_numpy_or_list(x), dtype=torch.int32,
                                        device=self.device)
        self.keep.append(x)
        return x

    def floats(self, x, role):
        """fp32 data (ALiBi slopes), converted like index()."""
        if self.framework == NUMPY:
            if not (isinstance(x, np.ndarray) and x.dtype == np.float32):
                x = np.asarray(x, dtype=np.float32)
        else:
            torch = sys.modules["torch"]
            if not (isinstance(x, torch.Tensor) and x.dtype == torch.float32
                    and x.device == self.device):
                if isinstance(x, torch.Tensor):
                    x = x.to(device=self.device, dtype=torch.float32)
                else:
                    x = torch.as_tensor(_numpy_or_list(x), dtype=torch.float32,
                                        device=self.device)
        self.keep.append(x)
        return x

    def buffer(self, x, role):
        """(address, bytes) of a contiguous scratch array of any dtype on the call's device."""
        if self.framework == NUMPY:
            if not (isinstance(x, np.ndarray) and x.flags.c_contiguous and x.flags.writeable):
                raise _invalid(f"{role} must be a writable contiguous numpy array")
            return x.ctypes.data, x.nbytes
        torch = sys.modules["torch"]
        if not (isinstance(x, torch.Tensor) and x.device == self.device
                and x.is_contiguous()):
            raise _invalid(f"{role} must be a contiguous tensor on {self.device}")
        return x.data_ptr(), x.numel() * x.element_size()

    def empty_like(self, x):
        """An output shaped and laid out like x (a permuted input gives a permuted output)."""
        if self.framework == NUMPY:
            out = np.empty_like(x)
            if out.ndim and out.strides[-1] != out.itemsize:
                out = np.empty(x.shape, dtype=x.dtype)
            return out
        torch = sys.modules["torch"]
        out = torch.empty_like(x)
        if out.dim() and out.stride(-1) != 1:
            out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
        return out

    def empty(self, shape, like=None):
        """A contiguous output of like's dtype, or fp32 when like is None."""
        if self.framework == NUMPY:
            return np.empty(shape, dtype=np.float32 if like is None else like.dtype)
        torch = sys.modules["torch"]
        dtype = torch.float32 if like is None else like.dtype
        return torch.empty(shape, dtype=dtype, device=self.device)


def _numpy_or_list(x):
    return x if (np is not None and isinstance(x, np.ndarray)) else list(x)


def empty_like_plain(x):
    """An output like x (see Call.empty_like) when x is a plain torch tensor or numpy array,
    else None (the general path then allocates, after its checks)."""
    torch = sys.modules.get("torch")
    if torch is not None and type(x) is torch.Tensor:
        out = torch.empty_like(x)
        if out.dim() and out.stride(-1) != 1:
            out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
        return out
    if np is not None and type(x) is np.ndarray and x.ndim:
        out = np.empty_like(x)
        if out.strides[-1] != out.itemsize:
            out = np.empty(x.shape, dtype=x.dtype)
        return out
    return None


class Fast:
    """The entry points' addresses for _ext, taken from the loaded library."""

    def __init__(self, lib):
        def address(fn):
            return ctypes.cast(fn, ctypes.c_void_p).value
        self.attention = address(lib.kiln_attention_fwd)
        self.attention_varlen = address(lib.kiln_attention_fwd_varlen)
        self.attention_paged = address(lib.kiln_attention_fwd_paged)
        self.act_and_mul = address(lib.kiln_act_and_mul)
        if _fast_torch is None:
            _fast_setup()


_fast = None


def fast():
    """The fast path (the _ext module and the entry points), or None where it is not built
    or disabled (KILN_PYTHON_FAST=0)."""
    global _fast, _ext
    if _fast is None:
        import os
        lib = _lib.lib()
        if os.environ.get("KILN_PYTHON_FAST", "1") != "0":
            _ext = _load_ext()
        _fast = Fast(lib) if _ext is not None else False
    return _fast or None


def _stream_handle(stream):
    """A stream given by the caller: a raw handle (int), or an object with .cuda_stream
    (torch) or .ptr (CuPy, Numba)."""
    if stream is None or isinstance(stream, int):
        return stream
    for attr in ("cuda_stream", "ptr", "handle"):
        value = getattr(stream, attr, None)
        if isinstance(value, int):
            return value
    raise _invalid(f"stream must be a stream handle (int) or a torch / CuPy stream, not "
                   f"{type(stream).__name__}")


def is_foreign(x):
    """A GPU array from another library (CuPy, JAX, Numba...): one that is neither a numpy
    array nor a torch tensor but exposes __cuda_array_interface__ or DLPack."""
    if np is not None and isinstance(x, np.ndarray):
        return False
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        return False
    return hasattr(x, "__cuda_array_interface__") or hasattr(x, "__dlpack__")


def _as_torch(torch, x):
    """x viewed as a torch tensor, no copy: through DLPack where the array has it (JAX's
    arrays are read-only, which torch refuses through the CUDA array interface), else
    through the CUDA array interface."""
    if not is_foreign(x):
        return x
    if hasattr(x, "__dlpack__"):
        return torch.from_dlpack(x)
    return torch.as_tensor(x, device="cuda")


def _back(like, t):
    """t (a torch tensor kiln wrote) in like's library, sharing its memory."""
    module = type(like).__module__.split(".")[0]
    if module == "cupy":
        import cupy
        return cupy.asarray(t)
    if module in ("jax", "jaxlib"):
        import jax.dlpack
        return jax.dlpack.from_dlpack(t)
    if module == "numba":
        from numba import cuda
        return cuda.as_cuda_array(t)
    return t


def foreign_call(fn, args, kwargs):
    """fn(*args, **kwargs) for arrays of another library, viewed as torch tensors (no
    copy); the results come back in the first array's library (an out= given comes back
    as itself). The work runs on the stream named by kwargs["stream"], else CuPy's current
    stream for CuPy arrays, else torch's current stream."""
    torch = sys.modules.get("torch")
    if torch is None:
        try:
            import torch
        except ImportError:
            raise _invalid(f"{type(args[0]).__name__} arrays are taken through torch, which "
                           "is not installed") from None
    first = args[0]
    stream = kwargs.get("stream")
    if stream is None and type(first).__module__.split(".")[0] == "cupy":
        import cupy
        stream = cupy.cuda.get_current_stream().ptr
    kwargs = dict(kwargs, stream=stream)
    out_given = kwargs.get("out")
    args = [_as_torch(torch, a) for a in args]
    for key in ("out", "alibi_slopes", "workspace", "cu_seqlens_q"):
        if kwargs.get(key) is not None:
            kwargs[key] = _as_torch(torch, kwargs[key])
    r = fn(*args, **kwargs)
    if isinstance(r, tuple):
        out, lse = r
        return (out_given if out_given is not None else _back(first, out)), _back(first, lse)
    return out_given if out_given is not None else _back(first, r)
