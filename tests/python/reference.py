"""float64 numpy references for the binding tests (kiln.h's semantics, written out plainly)."""

import math

import numpy as np

import kiln

TOLERANCE = {"f32": 1e-5, "f16": 1e-3, "bf16": 8e-3}


def make(shape, dtype, rng, scale=1.0):
    """Random input of kiln dtype name dtype: (array handed to kiln, its exact float64 value)."""
    x = rng.standard_normal(shape) * scale
    if dtype == "f32":
        a = x.astype(np.float32)
        return a, a.astype(np.float64)
    if dtype == "f16":
        a = x.astype(np.float16)
        return a, a.astype(np.float64)
    a = kiln.bf16_from_float(x)
    return a, kiln.bf16_to_float(a).astype(np.float64)


def as_float64(a):
    if a.dtype == np.uint16:
        return kiln.bf16_to_float(a).astype(np.float64)
    return a.astype(np.float64)


def close(testcase, got, ref, dtype, what=""):
    """Asserts |got - ref| <= tol * max(1, |ref|) everywhere, NaN never passing."""
    got = as_float64(got)
    tol = TOLERANCE[dtype]
    testcase.assertEqual(got.shape, ref.shape, what)
    same = got == ref  # equal infinities (LSE of rows without keys) match
    with np.errstate(invalid="ignore"):
        err = np.where(same, 0.0, np.abs(got - ref))
    bound = tol * np.maximum(1.0, np.abs(np.where(np.isfinite(ref), ref, 0.0)))
    bad = ~(err <= bound)
    if bad.any():
        i = np.unravel_index(np.argmax(np.where(bad, err, -1)), err.shape)
        testcase.fail(f"{what} {dtype}: {bad.sum()} of {err.size} elements off; worst at {i}: "
                      f"got {got[i]!r}, want {ref[i]!r} (tolerance {tol})")
    return float(err.max()) if err.size else 0.0


def attention_one(q, k, v, *, causal=False, window=(-1, -1), softcap=0.0, scale=None,
                  slopes=None):
    """One sequence: q [sq, hq, d], k/v [sk, hkv, d] float64 -> (out [sq, hq, d],
    lse [hq, sq]); slopes [hq] or None."""
    sq, hq, d = q.shape
    sk, hkv = k.shape[0], k.shape[1]
    group = hq // hkv
    if scale is None or scale == 0:
        scale = 1.0 / math.sqrt(d)
    left, right = window
    if causal:
        right = 0
    out = np.zeros((sq, hq, d))
    lse = np.full((hq, sq), -np.inf)
    i = np.arange(sq)[:, None] + sk - sq
    j = np.arange(sk)[None, :]
    visible = np.ones((sq, sk), dtype=bool)
    if left >= 0:
        visible &= j >= i - left
    if right >= 0:
        visible &= j <= i + right
    for h in range(hq):
        s = scale * (q[:, h, :] @ k[:, h // group, :].T)
        if softcap:
            s = softcap * np.tanh(s / softcap)
        if slopes is not None:
            s = s - slopes[h] * np.abs(i - j)
        s = np.where(visible, s, -np.inf)
        m = s.max(axis=1, keepdims=True) if sk else np.full((sq, 1), -np.inf)
        # Rows with a visible logit above -inf; a NaN logit makes its row's max (and the
        # row) NaN, a +inf one gives exp(inf - inf) = NaN, as IEEE arithmetic says.
        nan_rows = np.isnan(s).any(axis=1)
        m[nan_rows, 0] = np.nan
        rows = m[:, 0] != -np.inf
        if not rows.any():
            continue
        with np.errstate(invalid="ignore"):
            p = np.exp(s[rows] - m[rows])
            z = p.sum(axis=1, keepdims=True)
            # Masked keys never count, whatever v holds there (not even as 0 * NaN).
            w = np.where(visible[rows][:, :, None], (p / z)[:, :, None] * v[None, :, h // group, :], 0.0)
            out[rows, h, :] = w.sum(axis=1)
            lse[h, rows] = (m[rows] + np.log(z))[:, 0]
    return out, lse


def attention(q, k, v, slopes=None, **kw):
    """q [b, sq, hq, d], k/v [b, sk, hkv, d] -> (out like q, lse [b, hq, sq])."""
    outs, lses = [], []
    for b in range(q.shape[0]):
        s = None if slopes is None else (slopes if slopes.ndim == 1 else slopes[b])
        o, l = attention_one(q[b], k[b], v[b], slopes=s, **kw)
        outs.append(o)
        lses.append(l)
    return np.stack(outs), np.stack(lses)


def act_and_mul(x, act):
    d = x.shape[-1] // 2
    a, g = x[..., :d], x[..., d:]
    if act == "silu":
        y = a / (1.0 + np.exp(-a))
    elif act == "gelu":
        erf = np.vectorize(math.erf)
        y = 0.5 * a * (1.0 + erf(a / math.sqrt(2.0)))
    else:
        y = 0.5 * a * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (a + 0.044715 * a ** 3)))
    return y * g
