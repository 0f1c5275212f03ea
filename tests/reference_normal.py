"""NumPy version of tf_ops/common/normal.h's float32 Box-Muller, bit for bit.

Every step is the float32 operation of normal.h: NumPy's float32 +, * round to nearest
even once each, like the C++ and CUDA code; the fused multiply-add, which NumPy lacks, is
emulated exactly by fma_f32 below. Integer steps are uint32 arithmetic (wrapping).

It repeats normal.h's operations, so it pins the bits; what makes it trustworthy is
tested separately against float64 math (tests/random_batch_test.py: every value within
the contract's 1.75 ulp of r cos / r sin).
"""

import numpy as np

_f32, _u32, _i32 = np.float32, np.uint32, np.int32

# normal.h's constants (float32)
LOG_P = [
    _f32(v)
    for v in (
        5.000008941e-01,
        3.332632482e-01,
        2.518686056e-01,
        1.758752614e-01,
        3.400615156e-01,
        -5.922371149e-01,
        1.970850945e00,
        -2.476345539e00,
        1.743386388e00,
    )
]
NEG_LN2_EXP = _f32(float.fromhex("-0x1.62e430p-24"))
RSQRT_MAGIC = _u32(0x5F120000)
RSQRT_A, RSQRT_B = _f32(-2.2539144), _f32(2.2829306)
CM = _f32(1.171572924e00)
COS_Q = [_f32(v) for v in (2.426406443e-01, -4.361791611e-01, 2.242211066e-02, -4.620373365e-04, 5.523706022e-06)]
SIN_S = [_f32(v) for v in (1.107207313e-01, -1.141912863e-01, 3.521389328e-03, -5.083669021e-05)]


def fma_f32(a, b, c):
    """Correctly rounded float32 a * b + c (IEEE fusedMultiplyAdd), elementwise.

    a * b is exact in float64 (24 + 24 significant bits <= 53). The sum s = p + c is rounded
    to float64 with round-to-odd (the float64 sum, moved one float64 ulp towards the exact
    sum when it is inexact and its last bit is even; the exact error of the float64 sum is
    TwoSum's), then to float32 with round-to-nearest-even: rounding to odd at >= 24 + 2 bits
    and then to nearest at 24 bits equals one rounding to nearest of the exact value. Valid
    for all finite float32 inputs whose result is finite (float64's range holds p and s
    exactly for any float32 a, b, c; subnormal float32 results are exact in float64 too).
    """
    a = np.asarray(a, np.float32).astype(np.float64)
    b = np.asarray(b, np.float32).astype(np.float64)
    c = np.asarray(c, np.float32).astype(np.float64)
    p = a * b
    s = p + c
    bp = s - c  # TwoSum (Knuth): exact error of s = p + c
    err = (p - bp) + (c - (s - bp))
    bits = s.view(np.int64)
    fix = (err != 0) & ((bits & 1) == 0)
    with np.errstate(under="ignore"):  # nextafter of unused lanes may be subnormal
        s = np.where(fix, np.nextafter(s, np.where(err > 0, np.inf, -np.inf)), s)
    return s.astype(np.float32)


def _bits(x):
    return np.asarray(x, np.float32).view(np.uint32)


def _float(b):
    return np.asarray(b, np.uint32).view(np.float32)


def neg_log_u1(w):
    """-ln(u1), u1 = ((w >> 8) + 1) 2^-24, as normal.h's NegLogU1."""
    w = np.asarray(w, np.uint32)
    b = _bits(((w >> _u32(8)) + _u32(1)).astype(np.float32))
    e = (b - _u32(0x4B000001)) & _u32(0xFF800000)
    g = _f32(1.0) + (-_float(b - e - _u32(0x0C000000)))
    p = np.full(g.shape, LOG_P[8], np.float32)
    for k in range(7, -1, -1):
        p = fma_f32(p, g, LOG_P[k])
    t = fma_f32(g * g, p, g)
    return fma_f32(e.view(np.int32).astype(np.float32), NEG_LN2_EXP, t)


def sqrt_pair(l, sign):
    """(hi, lo), hi + lo = +-sqrt(l), as normal.h's SqrtPair."""
    y0 = _float((RSQRT_MAGIC - (_bits(l) >> _u32(1))) ^ sign)
    w = l * (y0 * y0)
    y = y0 * fma_f32(w + RSQRT_A, w, RSQRT_B)
    r0 = l * y
    return r0, fma_f32(-r0, r0, l) * (_f32(0.5) * y)


def box_muller(w_r, w_theta):
    """(z0, z1) float32 arrays: normal.h's BoxMuller, elementwise over uint32 words."""
    w_r = np.asarray(w_r, np.uint32)
    w_theta = np.asarray(w_theta, np.uint32)
    v = w_theta + _u32(0x20000000)
    x = _float(_u32(0x40800000) | ((v << _u32(2)) >> _u32(10))) + _f32(-5.0)
    s = x * x
    r0, rl = sqrt_pair(neg_log_u1(w_r), v & _u32(0x80000000))
    q = np.full(s.shape, COS_Q[4], np.float32)
    for k in range(3, -1, -1):
        q = fma_f32(q, s, COS_Q[k])
    p = np.full(s.shape, SIN_S[3], np.float32)
    for k in range(2, -1, -1):
        p = fma_f32(p, s, SIN_S[k])
    r = r0 + rl
    c = fma_f32(r0, CM, fma_f32(r, q, rl * CM))
    sn = fma_f32(r0, x, x * fma_f32(r, p, rl))
    odd = (v & _u32(0x40000000)) != 0
    return np.where(odd, -sn, c).astype(np.float32), np.where(odd, c, sn).astype(np.float32)
