"""The C ABI of kiln.h, mirrored with ctypes, and the loading of the shared library.

Every structure here must match include/kiln.h field for field; tests/python checks the
sizes and offsets against the C compiler's view of the header.
"""

import ctypes
import enum
import os
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
        ("data", ctypes.c_void_p),
        ("dtype", ctypes.c_int),
        ("rank", ctypes.c_int32),
        ("shape", ctypes.c_int64 * MAX_RANK),
        ("stride", ctypes.c_int64 * MAX_RANK),
    ]


class AttentionParams(ctypes.Structure):
    _fields_ = [
        ("softmax_scale", ctypes.c_float),
        ("causal", ctypes.c_int32),
        ("window_left", ctypes.c_int32),
        ("window_right", ctypes.c_int32),
        ("softcap", ctypes.c_float),
        ("alibi_slopes", Tensor),
        ("num_splits", ctypes.c_int32),
        ("workspace", ctypes.c_void_p),
        ("workspace_size", ctypes.c_size_t),
        ("stream", ctypes.c_void_p),
    ]


class Dispatch(ctypes.Structure):
    _fields_ = [
        ("backend", ctypes.c_int),
        ("target", ctypes.c_char * 32),
        ("tier", ctypes.c_char * 16),
        ("variant", ctypes.c_char * 128),
        ("num_splits", ctypes.c_int32),
    ]


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
    ("kiln_context_create", _c_int, [_c_int, _c_int, _P(_c_void_p)]),
    ("kiln_context_free", None, [_c_void_p]),
    ("kiln_context_backend", _c_int, [_c_void_p]),
    ("kiln_backend_name", ctypes.c_char_p, [_c_int]),
    ("kiln_info_json", _c_int, [_c_void_p, ctypes.c_char_p, ctypes.c_size_t,
                                _P(ctypes.c_size_t)]),
    ("kiln_attention_params_init", None, [_P(AttentionParams)]),
    ("kiln_attention_fwd", _c_int, [_c_void_p, _TP, _TP, _TP, _TP, _TP,
                                    _P(AttentionParams)]),
    ("kiln_attention_fwd_varlen", _c_int, [_c_void_p, _TP, _TP, _TP, _TP, _TP, _c_int64,
                                           _c_int64, _TP, _TP, _P(AttentionParams)]),
    ("kiln_attention_fwd_paged", _c_int, [_c_void_p, _TP, _TP, _TP, _TP, _TP, _TP, _c_int64,
                                          _TP, _TP, _P(AttentionParams)]),
    ("kiln_attention_workspace_size", _c_int, [_c_void_p, _c_int64, _c_int64, _c_int64,
                                               _c_int64, _c_int64, _c_int64, _c_int64,
                                               ctypes.c_int32,
                                               _P(ctypes.c_size_t)]),
    ("kiln_act_and_mul", _c_int, [_c_void_p, _c_int, _TP, _TP, _c_void_p]),
    ("kiln_last_dispatch", _c_int, [_P(Dispatch)]),
]


def _library_names():
    if sys.platform == "win32":
        return ["kiln.dll", "libkiln.dll"]
    if sys.platform == "darwin":
        return ["libkiln.dylib"]
    return ["libkiln.so"]


def library_path():
    """The file that will be loaded: KILN_LIBRARY, else build/ next to the package's tree."""
    env = os.environ.get("KILN_LIBRARY")
    if env:
        return env
    root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                         os.pardir, os.pardir))
    candidates = [os.path.join(root, "build", name) for name in _library_names()]
    for path in candidates:
        if os.path.exists(path):
            return path
    return candidates[0]


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
                                f"kiln library not found at {path}: build it (make), or set "
                                "KILN_LIBRARY to the libkiln.so / kiln.dll to use")
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
