"""NumPy reference implementation of the tf_onthefly counter contract (version 1).

Written from docs/counter-contract.md, independently of the C++ code, so the ops can be
checked against it bit for bit. Slow and simple on purpose. The contract's parts live
here; each generator's own reference (what it makes from these words) is the `reference`
function of its test, tests/<name>_test.py.
"""

import ml_dtypes
import numpy as np
import reference_normal

_MASK32 = 0xFFFFFFFF
_M0, _M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
_W0, _W1 = 0x9E3779B9, 0xBB67AE85
KEY_DOMAIN = 0x4F544601  # "OTF" + 1, fixed since the key derivation began (contract v1)


def philox4x32_10(ctr, key):
    """Philox4x32-10. ctr: uint32 array [..., 4]; key: (k0, k1) ints. Returns uint32 [..., 4]."""
    ctr = np.asarray(ctr, dtype=np.uint64)
    c0, c1, c2, c3 = (ctr[..., i] for i in range(4))
    k0, k1 = int(key[0]) & _MASK32, int(key[1]) & _MASK32
    for _ in range(10):
        p0, p1 = _M0 * c0, _M1 * c2  # < 2^64: exact in uint64
        hi0, lo0 = p0 >> np.uint64(32), p0 & np.uint64(_MASK32)
        hi1, lo1 = p1 >> np.uint64(32), p1 & np.uint64(_MASK32)
        c0, c1, c2, c3 = hi1 ^ c1 ^ np.uint64(k0), lo1, hi0 ^ c3 ^ np.uint64(k1), lo0
        k0, k1 = (k0 + _W0) & _MASK32, (k1 + _W1) & _MASK32
    return np.stack([c0, c1, c2, c3], axis=-1).astype(np.uint32)


def _u64(x):
    return int(x) & 0xFFFFFFFFFFFFFFFF


def _split(x):
    x = _u64(x)
    return x & _MASK32, x >> 32


def seed_pair(seed):
    s = np.asarray(seed).reshape(-1).tolist()
    return (s[0], 0) if len(s) == 1 else (s[0], s[1])


def derive_key(seed, stream, step):
    """The Philox key of (seed, stream, step): two Philox evaluations as a KDF."""
    s0, s1 = seed_pair(seed)
    a = philox4x32_10([*_split(s1), stream, KEY_DOMAIN], _split(s0))
    b = philox4x32_10([*_split(step), int(a[2]), int(a[3])], (int(a[0]), int(a[1])))
    return int(b[0]), int(b[1])


def sample_words(key, samples, blocks):
    """Words [len(samples), len(blocks), 4] for counters (block, sample lo, sample hi, 0)."""
    samples = np.asarray(samples, dtype=np.uint64)[:, None]
    blocks = np.asarray(blocks, dtype=np.uint64)[None, :]
    ctr = np.zeros(np.broadcast_shapes(samples.shape, blocks.shape) + (4,), np.uint64)
    ctr[..., 0] = blocks
    ctr[..., 1] = samples & np.uint64(_MASK32)
    ctr[..., 2] = samples >> np.uint64(32)
    return philox4x32_10(ctr, key)


def uniform01(w):
    return (np.asarray(w, np.uint32) >> np.uint32(8)).astype(np.float32) * np.float32(2.0**-24)


def uniform_in_range(w, low, high):
    low, high = np.float32(low), np.float32(high)
    x = (np.float32(high - low) * uniform01(w)).astype(np.float32) + low  # float32, no FMA
    return np.where(x < high, x, np.nextafter(high, low)).astype(np.float32)


def box_muller(w_r, w_theta):
    """Two float32 standard normals from two words (docs/counter-contract.md, Normals)."""
    return reference_normal.box_muller(w_r, w_theta)


def uniform_below(hi_word, lo_word, n):
    """floor(bits * n / 2^64) for bits = hi_word:lo_word (exact, with Python integers)."""
    bits = [(int(h) << 32) | int(l) for h, l in zip(np.ravel(hi_word), np.ravel(lo_word))]
    return np.array([(b * int(n)) >> 64 for b in bits], dtype=np.int64).reshape(np.shape(hi_word))


def samples(batch_size, first_sample=0, num_samples=None):
    """The global sample indices of a call's rows (uint64)."""
    rows = batch_size if num_samples is None else num_samples
    return np.arange(rows, dtype=np.uint64) + np.uint64(first_sample)


def normals(w):
    """Words [..., 4] -> normals [..., 4]: words (0, 1) and (2, 3) through Box-Muller."""
    z0, z1 = box_muller(w[..., 0], w[..., 1])
    z2, z3 = box_muller(w[..., 2], w[..., 3])
    return np.stack([z0, z1, z2, z3], axis=-1)


def symmetric(w, scale):
    """Uniform in [-scale, scale): fl(fl(2 scale * u) - scale)."""
    scale = np.float32(scale)
    return (np.float32(2.0) * scale * uniform01(w)).astype(np.float32) - scale


def sixteen_bit(dtype):
    """The NumPy type of a 16-bit float feature dtype name ("bfloat16" or "float16")."""
    return ml_dtypes.bfloat16 if dtype == "bfloat16" else np.float16


def round_nearest(x, dtype):
    """float32 values rounded to nearest even in a 16-bit type (NumPy's and ml_dtypes' cast)."""
    return np.asarray(x, np.float32).astype(sixteen_bit(dtype))


def round_down(x, dtype):
    """float32 values rounded toward minus infinity in a 16-bit type: the nearest value, one
    step down where it lies above x."""
    t = sixteen_bit(dtype)
    x = np.asarray(x, np.float32)
    near = x.astype(t)
    return np.where(near.astype(np.float32) > x, np.nextafter(near, np.array(-np.inf, t)), near).astype(t)


def least_at_or_above(low, dtype):
    """The least value of the 16-bit type that is >= low."""
    down = round_down(np.float32(low), dtype)
    return down if down.astype(np.float32) == np.float32(low) else -round_down(-np.float32(low), dtype)
