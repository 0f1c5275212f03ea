"""NumPy reference implementation of the tf_onthefly counter contract (version 1).

Written from docs/counter-contract.md, independently of the C++ code, so the ops can be
checked against it bit for bit. Slow and simple on purpose.
"""
import numpy as np

_MASK32 = 0xFFFFFFFF
_M0, _M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
_W0, _W1 = 0x9E3779B9, 0xBB67AE85
KEY_DOMAIN = 0x4F544601  # "OTF" + contract version 1
FEATURE_STREAM, LABEL_STREAM = 0, 1


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


def uniform01_open0(w):
    return ((np.asarray(w, np.uint32) >> np.uint32(8)) + np.uint32(1)).astype(np.float32) * np.float32(2.0**-24)


def uniform_in_range(w, low, high):
    low, high = np.float32(low), np.float32(high)
    x = (np.float32(high - low) * uniform01(w)).astype(np.float32) + low  # float32, no FMA
    return np.where(x < high, x, np.nextafter(high, low)).astype(np.float32)


def _sincospi(x):
    """sin(pi x), cos(pi x) for x in [0, 2), with the exact quadrant reduction of uniform.h."""
    q = np.rint(2.0 * x)
    t = (x - 0.5 * q) * np.pi
    st, ct = np.sin(t), np.cos(t)
    quad = q.astype(np.int64) & 3
    s = np.select([quad == 0, quad == 1, quad == 2], [st, ct, -st], -ct)
    c = np.select([quad == 0, quad == 1, quad == 2], [ct, -st, -ct], st)
    return s, c


def box_muller(w_r, w_theta):
    r = np.sqrt(-2.0 * np.log(uniform01_open0(w_r).astype(np.float64)))
    s, c = _sincospi(2.0 * uniform01(w_theta).astype(np.float64))
    return (r * c).astype(np.float32), (r * s).astype(np.float32)


def uniform_below(hi_word, lo_word, n):
    """floor(bits * n / 2^64) for bits = hi_word:lo_word (exact, with Python integers)."""
    bits = [(int(h) << 32) | int(l) for h, l in zip(np.ravel(hi_word), np.ravel(lo_word))]
    return np.array([(b * int(n)) >> 64 for b in bits], dtype=np.int64).reshape(np.shape(hi_word))


def random_batch(batch_size, feature_dim, seed, step, distribution="uniform", low=0.0, high=1.0,
                 label_mode="bernoulli", p=0.5, num_classes=2, label_dtype=np.float32,
                 first_sample=0, num_samples=None):
    """The reference of OnTheFly>RandomBatch: (features, labels) as NumPy arrays."""
    rows = batch_size if num_samples is None else num_samples
    samples = np.arange(rows, dtype=np.uint64) + np.uint64(first_sample)
    nblocks = (feature_dim + 3) // 4
    w = sample_words(derive_key(seed, FEATURE_STREAM, step), samples, np.arange(nblocks))
    if distribution == "uniform":
        feats = uniform_in_range(w, low, high)
    else:
        z0, z1 = box_muller(w[..., 0], w[..., 1])
        z2, z3 = box_muller(w[..., 2], w[..., 3])
        feats = np.stack([z0, z1, z2, z3], axis=-1)
    feats = feats.reshape(rows, nblocks * 4)[:, :feature_dim]
    lw = sample_words(derive_key(seed, LABEL_STREAM, step), samples, [0])[:, 0, :]
    if label_mode == "bernoulli":
        labels = (uniform01(lw[:, 0]) < np.float32(p)).astype(np.int64)
    else:
        labels = uniform_below(lw[:, 0], lw[:, 1], num_classes)
    return feats, labels.astype(label_dtype).reshape(rows, 1)


# ---- teacher_task (tf_ops/teacher_task/teacher_task.h) ----

def symmetric(w, scale):
    """Uniform in [-scale, scale): fl(fl(2 scale * u) - scale)."""
    scale = np.float32(scale)
    return (np.float32(2.0) * scale * uniform01(w)).astype(np.float32) - scale


def _features(key, samples, dim, normal):
    nb = (dim + 3) // 4
    w = sample_words(key, samples, np.arange(nb))
    if normal:
        z0, z1 = box_muller(w[..., 0], w[..., 1])
        z2, z3 = box_muller(w[..., 2], w[..., 3])
        v = np.stack([z0, z1, z2, z3], axis=-1)
    else:
        v = symmetric(w, 1.0)
    return v.reshape(len(samples), nb * 4)[:, :dim].astype(np.float32)


def _matrix(key, rows, cols, scale):
    """Row r, column j: symmetric(word j of (key, sample r), scale)."""
    nb = (cols + 3) // 4
    w = sample_words(key, np.arange(rows), np.arange(nb)).reshape(rows, nb * 4)[:, :cols]
    return symmetric(w, scale)


def teacher_task(batch_size, feature_dim, seed, step, task="classification", num_classes=4,
                 hidden=32, noise=0.0, task_seed=0, distribution="normal", first_sample=0,
                 num_samples=None):
    rows = batch_size if num_samples is None else num_samples
    samples = np.arange(rows, dtype=np.uint64) + np.uint64(first_sample)
    x = _features(derive_key(seed, 0, step), samples, feature_dim, distribution == "normal")
    outputs = num_classes if task == "classification" else 1
    f32 = np.float32
    w1 = _matrix(derive_key([task_seed, 0], 100, 0), hidden, feature_dim,
                 np.sqrt(f32(3.0) / f32(feature_dim)))
    b1 = symmetric(sample_words(derive_key([task_seed, 0], 101, 0), np.arange(hidden), [0])[:, 0, 0], 0.5)
    w2 = _matrix(derive_key([task_seed, 0], 102, 0), hidden, outputs, np.sqrt(f32(3.0) / f32(hidden)))
    logits = np.zeros((rows, outputs), np.float32)
    for h in range(hidden):
        acc = np.zeros(rows, np.float32)
        for j in range(feature_dim):  # the kernel's summation order, one rounding per op
            acc = (acc + (w1[h, j] * x[:, j]).astype(f32)).astype(f32)
        a = np.maximum((acc + b1[h]).astype(f32), f32(0.0))
        logits = (logits + (w2[h][None, :] * a[:, None]).astype(f32)).astype(f32)
    n = sample_words(derive_key(seed, 1, step), samples, [0])[:, 0, :]
    if task == "classification":
        labels = np.argmax(logits, axis=1)
        flip = uniform01(n[:, 0]) < f32(noise)
        labels = np.where(flip, uniform_below(n[:, 1], n[:, 2], outputs), labels)
        return x, labels.astype(np.int32).reshape(rows, 1)
    z0, _ = box_muller(n[:, 0], n[:, 1])
    return x, (logits[:, 0] + (f32(noise) * z0).astype(f32)).astype(f32).reshape(rows, 1)


# ---- procedural_shapes (tf_ops/procedural_shapes/procedural_shapes.h) ----

def procedural_shapes(batch_size, height, width, seed, step, channels=3, dtype=np.uint8,
                      min_size=0.25, max_size=0.7, noise=0.15, first_sample=0, num_samples=None):
    f32 = np.float32
    rows = batch_size if num_samples is None else num_samples
    samples = np.arange(rows, dtype=np.uint64) + np.uint64(first_sample)
    side = f32(min(height, width))
    p_min, p_range = f32(f32(min_size) * side), f32((f32(max_size) - f32(min_size)) * side)
    sw = sample_words(derive_key(seed, 0, step), samples, [0, 1, 2])  # [rows, 3, 4]
    a, b, c = sw[:, 0], sw[:, 1], sw[:, 2]
    cls = uniform_below(a[:, 0], a[:, 1], 3).astype(np.int32)
    size = (f32(p_range * uniform01(a[:, 2])) + p_min).astype(f32)
    half_w = (size * f32(0.5)).astype(f32)
    aspect = (f32(0.5) * uniform01(c[:, 0]) + f32(0.5)).astype(f32)
    half_h = np.where(cls == 1, (half_w * aspect).astype(f32), half_w).astype(f32)
    cx = (((f32(width) - f32(2.0) * half_w).astype(f32) * uniform01(a[:, 3])).astype(f32) + half_w).astype(f32)
    cy = (((f32(height) - f32(2.0) * half_h).astype(f32) * uniform01(b[:, 0])).astype(f32) + half_h).astype(f32)
    color = np.stack([(f32(0.6) * uniform01(b[:, k]) + f32(0.4)).astype(f32) for k in (1, 2, 3)], -1)
    flip = (c[:, 1] >> np.uint32(31)) != 0

    ys, xs = np.meshgrid(np.arange(height), np.arange(width), indexing="ij")
    px, py = (xs.astype(f32) + f32(0.5)), (ys.astype(f32) + f32(0.5))
    nw = sample_words(derive_key(seed, 1, step), samples, np.arange(height * width))  # [rows, HW, 4]
    images = np.zeros((rows, height, width, channels), dtype)
    for i in range(rows):
        dx, dy = (px - cx[i]).astype(f32), (py - cy[i]).astype(f32)
        if cls[i] == 0:
            inside = ((dx * dx).astype(f32) + (dy * dy).astype(f32)).astype(f32) <= f32(half_w[i] * half_w[i])
        elif cls[i] == 1:
            inside = (np.abs(dx) <= half_w[i]) & (np.abs(dy) <= half_h[i])
        else:
            from_apex = ((half_h[i] - dy) if flip[i] else (dy + half_h[i])).astype(f32)
            inside = (np.abs(dy) <= half_h[i]) & (np.abs(dx) <= (from_apex * f32(0.5)).astype(f32))
        for ch in range(channels):
            bg = (f32(noise) * uniform01(nw[i, :, ch])).astype(f32).reshape(height, width)
            v = np.where(inside, color[i, ch], bg).astype(f32)
            images[i, ..., ch] = v if dtype == np.float32 else (v * f32(255.0) + f32(0.5)).astype(f32).astype(np.uint8)
    inv_h, inv_w = f32(1.0) / f32(height), f32(1.0) / f32(width)
    boxes = np.stack([((cy - half_h).astype(f32) * inv_h), ((cx - half_w).astype(f32) * inv_w),
                      ((cy + half_h).astype(f32) * inv_h), ((cx + half_w).astype(f32) * inv_w)], -1).astype(f32)
    return images, cls.reshape(rows, 1), boxes


# ---- random_walk (the tutorial generator) ----

def random_walk(batch_size, length, seed, step, first_sample=0, num_samples=None):
    rows = batch_size if num_samples is None else num_samples
    samples = np.arange(rows, dtype=np.uint64) + np.uint64(first_sample)
    words = sample_words(derive_key(seed, 0, step), samples, np.arange((length + 127) // 128))
    words = words.reshape(rows, -1)  # word k holds steps 32k .. 32k+31, lowest bit first
    t = np.arange(length)
    bit = (words[:, t // 32] >> (t % 32).astype(np.uint32)) & np.uint32(1)
    walks = np.cumsum(np.where(bit == 1, 1, -1), axis=1).astype(np.int32)
    return walks, (walks[:, -1:] > 0).astype(np.int32)
