"""bfloat16 for numpy, which has no such dtype: arrays of uint16 holding the bit patterns."""

try:
    import numpy as np
except ImportError:
    np = None


def bf16_from_float(a):
    """float array -> uint16 bf16 bit patterns, rounded to nearest even (NaN stays NaN)."""
    bits = np.ascontiguousarray(a, dtype=np.float32).reshape(-1).view(np.uint32)
    rounding = ((bits >> 16) & 1) + np.uint32(0x7FFF)
    rounded = ((bits + rounding) >> 16).astype(np.uint16)
    nan = np.isnan(np.asarray(a, dtype=np.float32)).reshape(-1)
    # Rounding could carry a NaN's payload into the infinity pattern; keep it a quiet NaN.
    return np.where(nan, np.uint16(0x7FC0), rounded).reshape(np.shape(a))


def bf16_to_float(u):
    """uint16 bf16 bit patterns (or an ml_dtypes.bfloat16 array) -> float32 array."""
    u = np.asarray(u)
    if u.dtype.name == "bfloat16":
        return u.astype(np.float32)
    if u.dtype != np.uint16:
        raise TypeError(f"expected uint16 bf16 bit patterns, not {u.dtype}")
    return (u.astype(np.uint32).reshape(-1) << 16).view(np.float32).reshape(u.shape)
