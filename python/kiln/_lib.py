"""The C ABI of kiln.h, mirrored with ctypes, and the loading of the shared library.

Every structure here must match include/kiln.h field for field; tests/python checks the
sizes and offsets against the C compiler's view of the header.
"""

import ctypes
import enum
import os
import struct
import sys
import threading

MAX_RANK = 4

# kiln_dtype
F32 = 0
F16 = 1
BF16 = 2
I32 = 3

# kiln_backend
BACKEND_AUTO = 0
BACKEND_CPU = 1
BACKEND_CUDA = 2
BACKEND_HIP = 3

# kiln_activation
ACT_SILU = 0
ACT_GELU = 1
ACT_GELU_TANH = 2


class Status(enum.IntEnum):
    """kiln_status; the numeric values are stable across kiln versions."""

    OK = 0
    INVALID_ARGUMENT = 1
    UNSUPPORTED = 2
    OUT_OF_MEMORY = 3
    BACKEND_UNAVAILABLE = 4
    DEVICE_ERROR = 5
    COMPILE_ERROR = 6
    KERNEL_NOT_FOUND = 7
    IO_ERROR = 8
    WORKSPACE_TOO_SMALL = 9
    INTERNAL = 10
    BUFFER_TOO_SMALL = 11
    NOTHING_RAN = 12
    ABI_MISMATCH = 13


class KilnError(RuntimeError):
    """A kiln call failed.

    status is a Status (an int; status.name gives "INVALID_ARGUMENT" and so on) and message
    the library's detailed text (kiln_last_error()), or the binding's own when the arguments
    never reached the library.
    """

    def __init__(self, status, message):
        try:
            status = Status(status)
        except ValueError:
            status = int(status)
        self.status = status
        self.status_name = getattr(status, "name", str(status))
        self.message = message
        super().__init__(f"{self.status_name}: {message}" if message else self.status_name)

    def __reduce__(self):
        return (type(self), (int(self.status), self.message))


class Tensor(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("data", ctypes.c_void_p),
        ("dtype", ctypes.c_int),
        ("rank", ctypes.c_int32),
        ("shape", ctypes.c_int64 * MAX_RANK),
        ("stride", ctypes.c_int64 * MAX_RANK),
    ]


class AttentionParams(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("softmax_scale", ctypes.c_float),
        ("causal", ctypes.c_int32),
        ("window_left", ctypes.c_int32),
        ("window_right", ctypes.c_int32),
        ("softcap", ctypes.c_float),
        ("alibi_slopes", Tensor),
        ("num_splits", ctypes.c_int32),
        ("workspace", ctypes.c_void_p),
        ("workspace_size", ctypes.c_size_t),
    ]


class AttentionPlan(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("batch", ctypes.c_int64),
        ("rows_q", ctypes.c_int64),
        ("max_seqlen_q", ctypes.c_int64),
        ("max_seqlen_k", ctypes.c_int64),
        ("heads_q", ctypes.c_int64),
        ("heads_kv", ctypes.c_int64),
        ("head_dim", ctypes.c_int64),
        ("num_splits", ctypes.c_int32),
    ]


class Dispatch(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("backend", ctypes.c_int),
        ("target", ctypes.c_char * 32),
        ("tier", ctypes.c_char * 16),
        ("variant", ctypes.c_char * 128),
        ("num_splits", ctypes.c_int32),
        ("reserved", ctypes.c_uint8 * 64),
    ]


TENSOR_SIZE = ctypes.sizeof(Tensor)
PARAMS_SIZE = ctypes.sizeof(AttentionParams)

# The hot path writes kiln_tensor and kiln_attention_params records with struct.pack_into
# into a reused buffer rather than building ctypes objects ('@': the C compiler's alignment,
# checked against the ctypes mirror below). TENSOR_RECORD[rank] fills shape and stride
# entries past rank with zeros.
TENSOR_RECORD = [None] + [
    struct.Struct("@QPii%dq%dx%dq%dx" % (r, 8 * (MAX_RANK - r), r, 8 * (MAX_RANK - r)))
    for r in range(1, MAX_RANK + 1)]
PARAMS_RECORD = struct.Struct("@Qfiiif" "QPii4q4q" "iPN")
assert all(s.size == TENSOR_SIZE for s in TENSOR_RECORD[1:])
assert PARAMS_RECORD.size == PARAMS_SIZE
assert AttentionParams.alibi_slopes.offset == struct.calcsize("@Qfiiif0Q")


_P = ctypes.POINTER
_TP = _P(Tensor)
_c_int = ctypes.c_int
_c_void_p = ctypes.c_void_p
_c_int64 = ctypes.c_int64

# (name, restype, argtypes): one list, so a symbol missing from the library is reported once,
# by name, when it loads.
_SIGNATURES = [
    ("kiln_version", ctypes.c_uint, []),
    ("kiln_version_string", ctypes.c_char_p, []),
    ("kiln_status_string", ctypes.c_char_p, [_c_int]),
    ("kiln_status_name", ctypes.c_char_p, [_c_int]),
    ("kiln_last_error", ctypes.c_char_p, []),
    ("kiln_dtype_size", ctypes.c_size_t, [_c_int]),
    ("kiln_dtype_name", ctypes.c_char_p, [_c_int]),
    ("kiln_tensor_init", None, [_P(Tensor)]),
    ("kiln_context_create", _c_int, [_c_int, _c_int, _P(_c_void_p)]),
    ("kiln_context_free", None, [_c_void_p]),
    ("kiln_context_backend", _c_int, [_c_void_p]),
    ("kiln_backend_name", ctypes.c_char_p, [_c_int]),
    ("kiln_info_json", _c_int, [_c_void_p, ctypes.c_char_p, ctypes.c_size_t,
                                _P(ctypes.c_size_t)]),
    ("kiln_attention_params_init", None, [_P(AttentionParams)]),
    ("kiln_attention_plan_init", None, [_P(AttentionPlan)]),
    # Tensor and params arguments are addresses (records in a reused buffer), hence void *.
    ("kiln_attention_fwd", _c_int, [_c_void_p] * 8),
    ("kiln_attention_fwd_varlen", _c_int, [_c_void_p] * 6 + [_c_int64] * 2 +
     [_c_void_p] * 4),
    ("kiln_attention_fwd_paged", _c_int, [_c_void_p] * 7 + [_c_int64] + [_c_void_p] * 4),
    ("kiln_attention_workspace_size", _c_int, [_c_void_p, _P(AttentionPlan),
                                               _P(ctypes.c_size_t)]),
    ("kiln_act_and_mul", _c_int, [_c_void_p, _c_int, _c_void_p, _c_void_p, _c_void_p]),
    ("kiln_dispatch_init", None, [_P(Dispatch)]),
    ("kiln_last_dispatch", _c_int, [_P(Dispatch)]),
]


def _library_names():
    if sys.platform == "win32":
        return ["kiln.dll", "libkiln.dll"]
    if sys.platform == "darwin":
        return ["libkiln.dylib"]
    return ["libkiln.so"]


_HERE = os.path.dirname(os.path.abspath(__file__))


def library_location():
    """(path, how) of the library that will be loaded, in this order:
    ("package") the one installed inside this package (a wheel puts it there),
    ("KILN_LIBRARY") the file that variable names,
    ("build") build/ at the root of the source tree this package sits in.
    Where none exists, build/'s path with how "missing"."""
    for name in _library_names():
        path = os.path.join(_HERE, name)
        if os.path.exists(path):
            return path, "package"
    env = os.environ.get("KILN_LIBRARY")
    if env:
        return env, "KILN_LIBRARY"
    root = os.path.normpath(os.path.join(_HERE, os.pardir, os.pardir))
    candidates = [os.path.join(root, "build", name) for name in _library_names()]
    for path in candidates:
        if os.path.exists(path):
            return path, "build"
    return candidates[0], "missing"


def library_path():
    """The file that will be loaded (see library_location)."""
    return library_location()[0]


_lib = None
_lib_lock = threading.Lock()


def lib():
    """The loaded library with every prototype set; loaded on first use."""
    global _lib
    if _lib is not None:
        return _lib
    with _lib_lock:
        if _lib is None:
            path = library_path()
            if not os.path.exists(path):
                raise KilnError(Status.BACKEND_UNAVAILABLE,
                                f"kiln library not found at {path}: install the kiln wheel, "
                                "build it (make), or set KILN_LIBRARY to the libkiln.so / "
                                "kiln.dll to use")
            try:
                handle = ctypes.CDLL(path)
            except OSError as exc:
                raise KilnError(Status.BACKEND_UNAVAILABLE,
                                f"cannot load {path}: {exc}") from exc
            for name, restype, argtypes in _SIGNATURES:
                try:
                    fn = getattr(handle, name)
                except AttributeError:
                    # An older or partial library: fail when the function is used, by name,
                    # rather than refusing the functions it does have.
                    setattr(handle, name, _missing(path, name))
                    continue
                fn.restype = restype
                fn.argtypes = argtypes
            _lib = handle
    return _lib


def _missing(path, name):
    def call(*args):
        raise KilnError(Status.UNSUPPORTED, f"{path} has no symbol {name}: the library is "
                        "older than this binding")
    return call


def _text(raw):
    return raw.decode("utf-8", "replace") if raw else ""


def last_error_message():
    return _text(lib().kiln_last_error())


def check(status):
    """Raises KilnError for a non-zero status, with this thread's kiln_last_error()."""
    if status:
        raise KilnError(status, last_error_message())
