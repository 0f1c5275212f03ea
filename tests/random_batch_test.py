"""Tests of tf_onthefly.random_batch: golden values, reference, contract, statistics, bad input."""

import numpy as np
import tensorflow as tf
from hypothesis import strategies as st

from tf_onthefly import random_batch, testing
from tf_onthefly.testing import arguments

import device_util
import reference as ref

# Pinned forever (contract version 1): seed (1, 2), step 3, batch 4 x 6 features.
# A change here is a breaking change of docs/counter-contract.md.
GOLDEN_UNIFORM_ROW0 = [0.30296677, 0.31367546, 0.20855665, 0.18873435, 0.19950825, 0.76777154]

SEEDS = [0, 1, 2**63 - 1, -5, [1, 2], [-1, 2**40], 2**64 - 1, [2**63, 2**64 - 2]]
STEPS = [0, 1, 17, 2**33 + 5, 2**64 - 1]

# Pinned since contract version 2: seed (1, 2), step 3, batch 4 x 6 normal features.
GOLDEN_NORMAL_ROW0 = [-0.60192806, 1.4233575, 0.66487896, 1.6410437, 0.20007189, -1.7843122]

# The contract's accuracy promise for normals: within 1.75 ulp of the exact r cos, r sin.
NORMAL_MAX_ERROR_ULP = 1.75


def reference(
    batch_size,
    feature_dim,
    seed,
    step,
    distribution="uniform",
    low=0.0,
    high=1.0,
    label_mode="bernoulli",
    p=0.5,
    num_classes=2,
    dtype="float32",
    label_dtype=np.float32,
    first_sample=0,
    num_samples=None,
):
    """OnTheFly>RandomBatch from the contract: features (stream 0, element j = word j % 4 of
    block j / 4) and labels (stream 1, block 0), as NumPy arrays. 16-bit features (dtype
    "bfloat16" or "float16"): normals rounded to nearest, uniforms rounded down and raised to
    the type's least value >= low."""
    samples = ref.samples(batch_size, first_sample, num_samples)
    nblocks = (feature_dim + 3) // 4
    w = ref.sample_words(ref.derive_key(seed, 0, step), samples, np.arange(nblocks))
    feats = ref.uniform_in_range(w, low, high) if distribution == "uniform" else ref.normals(w)
    if dtype != "float32" and distribution == "uniform":
        floor = ref.least_at_or_above(low, dtype)
        feats = np.maximum(ref.round_down(feats, dtype), floor)
    elif dtype != "float32":
        feats = ref.round_nearest(feats, dtype)
    feats = feats.reshape(len(samples), nblocks * 4)[:, :feature_dim]
    lw = ref.sample_words(ref.derive_key(seed, 1, step), samples, [0])[:, 0, :]
    if label_mode == "bernoulli":
        labels = (ref.uniform01(lw[:, 0]) < np.float32(p)).astype(np.int64)
    else:
        labels = ref.uniform_below(lw[:, 0], lw[:, 1], num_classes)
    return feats, labels.astype(label_dtype).reshape(len(samples), 1)


# The documented argument space (the contract's fuzz check draws from it).
ARGUMENTS = dict(
    feature_dim=arguments.sizes(),
    distribution=arguments.one_of(["uniform", "normal"], ["cauchy"]),
    low=arguments.floats(-10.0, 2.0),
    high=arguments.floats(2.5, 10.0),
    label_mode=arguments.one_of(["bernoulli", "classes"]),
    p=arguments.unit(),
    num_classes=arguments.Arg(
        st.integers(1, 1000) | st.sampled_from([2**24, 2**31, 2**40]),
        arguments.EDGE_INTS | st.sampled_from([2**24 + 1, 2**31 + 1]),
    ),
    dtype=arguments.one_of([tf.float32, tf.bfloat16, tf.float16], [tf.float64, tf.int32]),
    label_dtype=arguments.one_of([tf.float32, tf.int32, tf.int64], [tf.float16, "int8"]),
)


def output_sets(kw, outputs):
    """What every accepted call returns: uniform features in [low, high), finite normals, labels
    in {0, 1} or [0, num_classes) (exact integers in the label dtype)."""
    features, labels = outputs[0].numpy().astype(np.float32), outputs[1].numpy()
    assert np.all(np.isfinite(features))
    if kw.get("distribution", "uniform") == "uniform":
        assert np.all(features >= np.float32(kw.get("low", 0.0))) and np.all(features < np.float32(kw.get("high", 1.0)))
    top = kw.get("num_classes", 2) if kw.get("label_mode", "bernoulli") == "classes" else 2
    as_int = labels.astype(np.int64)
    assert np.all(as_int == labels) and np.all((as_int >= 0) & (as_int < top)), (labels.min(), labels.max(), top)


class RandomBatchTest(device_util.DeviceTestCase, testing.GeneratorContract):
    generator = "random_batch"
    fuzz_arguments = ARGUMENTS
    output_sets = staticmethod(output_sets)
    gpu_batch_size = 1 << 16

    def generate(self, batch_size, seed, step, first_sample=0, num_samples=None):
        return random_batch(
            batch_size,
            13,
            seed,
            step,
            low=-0.5,
            high=2.0,
            label_mode="classes",
            num_classes=7,
            label_dtype=tf.int32,
            first_sample=first_sample,
            num_samples=num_samples,
        )

    def test_reference_philox_known_answers(self):
        # Random123's known-answer vectors for philox4x32_10.
        kat = [
            ([0, 0, 0, 0], (0, 0), [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]),
            ([0xFFFFFFFF] * 4, (0xFFFFFFFF, 0xFFFFFFFF), [0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD]),
            (
                [0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344],
                (0xA4093822, 0x299F31D0),
                [0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1],
            ),
        ]
        for ctr, key, want in kat:
            self.assertEqual(ref.philox4x32_10(ctr, key).tolist(), want)

    def test_pinned_values(self):
        f, _ = random_batch(4, 6, seed=[1, 2], step=3)
        self.assertAllEqual(f.numpy()[0], np.array(GOLDEN_UNIFORM_ROW0, np.float32))

    def test_uniform_and_bernoulli_bit_exact(self):
        for seed in SEEDS:
            for step in STEPS:
                f, l = random_batch(37, 13, seed=seed, step=step, low=-2.5, high=7.0, p=0.3)
                rf, rl = reference(37, 13, seed, step, low=-2.5, high=7.0, p=0.3)
                self.assertBitsEqual([f, l], [rf, rl], msg=f"seed={seed} step={step}")

    def test_16_bit_features_bit_exact(self):
        """bfloat16 and float16 features: the same words, rounded as the contract says."""
        for dtype, tf_dtype in [("bfloat16", tf.bfloat16), ("float16", tf.float16)]:
            for kw in [
                dict(),
                dict(low=-2.5, high=7.0),
                dict(low=0.1, high=0.3),
                dict(low=-1e-3, high=1e-3),
                dict(distribution="normal"),
            ]:
                # 13 features: 3 whole blocks and a partial one; 1001: the CPU's chunks of 64
                # blocks, the last one partial.
                lo, hi = np.float32(kw.get("low", 0.0)), np.float32(kw.get("high", 1.0))
                for rows, fd in [(37, 13), (3, 1001)]:
                    rf, rl = reference(rows, fd, [4, 5], 6, dtype=dtype, **kw)
                    f, l = random_batch(rows, fd, seed=[4, 5], step=6, dtype=tf_dtype, **kw)
                    self.assertBitsEqual([f, l], [rf, rl], msg=f"{dtype} {kw} feature_dim={fd}")
                    self.assertEqual(f.dtype, tf_dtype)
                    if kw.get("distribution", "uniform") == "uniform":
                        x = f.numpy().astype(np.float32)
                        self.assertTrue(np.all(x >= lo) and np.all(x < hi), msg=f"{dtype} {kw} feature_dim={fd}")

    def test_seeds_and_steps_are_64_bit_words(self):
        """2**64 - 1 and -1 are the same word (the contract reads seeds and steps unsigned)."""
        for a, b in [
            (dict(seed=2**64 - 1, step=5), dict(seed=-1, step=5)),
            (dict(seed=[2**63, 1], step=2**64 - 2), dict(seed=[-(2**63), 1], step=-2)),
        ]:
            self.assertBitsEqual(random_batch(8, 4, **a), random_batch(8, 4, **b))

    def test_classes_bit_exact_every_dtype(self):
        for dtype, np_dtype, most in [
            (tf.int32, np.int32, 2**31),
            (tf.int64, np.int64, 2**62 + 3),
            (tf.float32, np.float32, 2**24),
        ]:
            for n in [1, 3, 10, 1000, most - 1, most]:
                _, l = random_batch(64, 1, seed=9, step=4, label_mode="classes", num_classes=n, label_dtype=dtype)
                _, rl = reference(64, 1, 9, 4, label_mode="classes", num_classes=n, label_dtype=np_dtype)
                self.assertEqual(l.dtype, dtype)
                self.assertAllEqual(l.numpy(), rl)

    def test_subnormal_ranges_are_the_contract(self):
        """Ranges whose values are subnormal compute the contract's fl(fl(range * u) + low) on the
        CPU too (TensorFlow's CPU kernels otherwise flush subnormals to zero)."""
        for low, high in [(-1.5e-38, 1.5e-38), (0.0, 1e-44), (0.0, 1e-45), (-3e-39, -1e-40)]:
            f, _ = random_batch(16, 16, seed=[3, 4], step=5, low=low, high=high)
            rf, _ = reference(16, 16, [3, 4], 5, low=low, high=high)
            self.assertBitsEqual([f], [rf], msg=f"low={low} high={high}")

    def test_normal_bit_exact(self):
        """Normals are the reference's bits on every device (normal.h: float32 adds,
        multiplies and fmas only), for row lengths of whole and partial Philox blocks."""
        for seed in SEEDS[:3]:
            for feature_dim in [9, 64]:
                f, l = random_batch(50, feature_dim, seed=seed, step=2, distribution="normal")
                rf, rl = reference(50, feature_dim, seed, 2, distribution="normal")
                self.assertBitsEqual([f, l], [rf, rl], msg=f"seed={seed} feature_dim={feature_dim}")

    def test_normal_golden(self):
        f, _ = random_batch(4, 6, seed=[1, 2], step=3, distribution="normal")
        self.assertAllEqual(f.numpy()[0], np.float32(GOLDEN_NORMAL_ROW0))

    def test_normal_accuracy(self):
        """Every normal within NORMAL_MAX_ERROR_ULP of sqrt(-2 ln u1) cos(2 pi u2) (and sin)
        computed in float64, the words' exact Box-Muller: an independent check of normal.h's
        polynomials, which the bit-exact reference above only repeats."""
        batch, dim = 1 << 14, 64
        f, _ = random_batch(batch, dim, seed=[21, 22], step=5, distribution="normal")
        w = ref.sample_words(ref.derive_key([21, 22], 0, 5), np.arange(batch), np.arange(dim // 4))
        u1 = ((w[..., 0::2] >> np.uint32(8)).astype(np.float64) + 1) * 2.0**-24
        u2 = (w[..., 1::2] >> np.uint32(8)).astype(np.float64) * 2.0**-24
        r = np.sqrt(-2.0 * np.log(u1))
        exact = np.stack([r * np.cos(2 * np.pi * u2), r * np.sin(2 * np.pi * u2)], axis=-1).reshape(batch, dim)
        got = f.numpy().astype(np.float64)
        ulp = np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)
        err = np.abs(got - exact) / ulp
        print(f"normal accuracy over {err.size} values: max {err.max():.3f} ulp, mean {err.mean():.3f}")
        self.assertLessEqual(float(err.max()), NORMAL_MAX_ERROR_ULP)

    def test_feature_prefix_is_stable(self):
        """Feature j of a sample does not depend on feature_dim (block index contract)."""
        a, la = random_batch(8, 5, seed=3, step=1)
        b, lb = random_batch(8, 12, seed=3, step=1)
        self.assertAllEqual(a, b[:, :5])
        self.assertAllEqual(la, lb)

    def test_features_and_labels_use_independent_streams(self):
        f, l = random_batch(20000, 1, seed=1, step=0, p=0.5)
        corr = np.corrcoef(f.numpy()[:, 0], l.numpy()[:, 0])[0, 1]
        self.assertLess(abs(corr), 0.03)

    def test_uniform_statistics(self):
        n = 200_000
        f, _ = random_batch(n // 8, 8, seed=11, step=0, low=-1.0, high=3.0)
        x = f.numpy().ravel().astype(np.float64)
        self.assertGreaterEqual(x.min(), -1.0)
        self.assertLess(x.max(), 3.0)
        # mean 1, variance 16/12; 6-sigma bounds a broken mapping would miss.
        self.assertNear(x.mean(), 1.0, 6 * np.sqrt(16 / 12 / n))
        self.assertNear(x.var(), 16 / 12, 0.02)
        hist, _ = np.histogram(x, bins=20, range=(-1, 3))
        self.assertLess(((hist - n / 20) ** 2 / (n / 20)).sum(), 60)  # chi2(19): p ~ 1e-6

    def test_normal_statistics(self):
        n = 200_000
        f, _ = random_batch(n // 10, 10, seed=12, step=0, distribution="normal")
        x = f.numpy().ravel().astype(np.float64)
        self.assertNear(x.mean(), 0.0, 6 / np.sqrt(n))
        self.assertNear(x.var(), 1.0, 0.02)
        self.assertNear(np.mean(np.abs(x) < 1.0), 0.6827, 0.01)
        self.assertNear(np.mean(x**4), 3.0, 0.1)  # kurtosis of a normal
        self.assertTrue(np.all(np.isfinite(x)))

    def test_label_rates(self):
        for p in [0.0, 0.1, 0.5, 1.0]:
            _, l = random_batch(50_000, 1, seed=13, step=1, p=p)
            self.assertNear(float(np.mean(l.numpy())), p, 0.01, msg=f"p={p}")
        _, l = random_batch(50_000, 1, seed=13, step=1, label_mode="classes", num_classes=5, label_dtype=tf.int32)
        counts = np.bincount(l.numpy().ravel(), minlength=5)
        self.assertEqual(len(counts), 5)
        self.assertLess(((counts - 10_000) ** 2 / 10_000).sum(), 30)  # chi2(4)

    def test_not_differentiable(self):
        from tensorflow.python.framework import ops as tf_ops

        with tf.Graph().as_default():
            f, _ = random_batch(2, 2, seed=0, step=0)
        # Registered with tf.no_gradient: a lookup gives None instead of raising LookupError.
        self.assertIsNone(tf_ops.get_gradient_function(f.op))


class RandomBatchBadInputTest(device_util.DeviceTestCase):
    """Every bad argument is an InvalidArgument naming the argument and its value, eagerly and
    at trace time alike."""

    CASES = [
        (dict(batch_size=0), "batch_size must be >= 1, got 0"),
        (dict(batch_size=-3), "batch_size must be >= 1, got -3"),
        (dict(batch_size=2.9), "batch_size must be an integer, got 2.9"),
        (dict(feature_dim=0), "feature_dim must be >= 1, got 0"),
        (dict(feature_dim=2**64 + 1), "feature_dim must be in [-2**63, 2**63), got 18446744073709551617"),
        (dict(low=1.0, high=1.0), "low and high must be finite with low < high, got low=1, high=1"),
        (dict(low=2.0, high=1.0), "got low=2, high=1"),
        (dict(low=float("nan")), "low and high must be finite"),
        (dict(high=float("inf")), "low and high must be finite"),
        (dict(low=-3e38, high=3e38), "high - low must be finite"),
        (dict(high=1e-46), "high must be 0 or at least 1.4e-45 in magnitude"),
        (dict(low=-1e39), "low must fit in float32"),
        (dict(p=1.5), "p must be in [0, 1], got 1.5"),
        (dict(p=-0.1), "p must be in [0, 1], got -0.1"),
        (dict(p=float("nan")), "p must be in [0, 1], got nan"),
        (dict(p=-1.4e-45), "p must be in [0, 1], got -1.4013e-45"),
        (dict(num_classes=0, label_mode="classes"), "num_classes must be >= 1, got 0"),
        (
            dict(num_classes=2**40, label_mode="classes", label_dtype=tf.int32),
            "num_classes must be <= 2147483648 for label_dtype int32 (every class id exact), got 1099511627776",
        ),
        (
            dict(num_classes=2**40 + 2**17, label_mode="classes"),
            "num_classes must be <= 16777216 for label_dtype float (every class id exact), got 1099511758848",
        ),
        (dict(num_samples=9), "num_samples must be -1 (the whole batch) or in [0, batch_size] = [0, 8], got 9"),
        (dict(num_samples=-2), "got -2"),
        (dict(num_samples=2**63), "num_samples must be in [-2**63, 2**63), got 9223372036854775808"),
        (dict(batch_size=2**40, feature_dim=2**20), "exceeds the per-output cap"),
        (dict(batch_size=1, feature_dim=2**62), "exceeds the per-output cap"),
        (dict(dtype=tf.float16, low=-7e4), "low must be >= -65504 for dtype half"),
        (dict(dtype=tf.float16, low=0.1, high=0.10001), "no half value lies in [low, high) = [0.1, 0.10001)"),
        (dict(dtype=tf.float64), "dtype must be one of float32, bfloat16, float16, got float64"),
        (dict(seed=[1, 2, 3]), "seed must be an int64 scalar or an int64 pair of shape [2], got shape [3]"),
        (dict(seed=[[1, 2]]), "seed must be an int64 scalar or an int64 pair"),
        (dict(seed=1.5), "seed must be an integer, got 1.5"),
        (dict(seed=2**64), "seed must be in [-2**63, 2**64), got 18446744073709551616"),
        (dict(seed=[1, -(2**63) - 1]), "seed must be in [-2**63, 2**64), got -9223372036854775809"),
        (dict(step=[[1, 2]]), "step must be an int64 scalar, or a vector of steps of shape [n], got shape [1,2]"),
        (dict(step=2.0), "step must be an integer, got 2.0"),
        (dict(first_sample=5, num_samples=4), "first_sample must be in [0, batch_size - num_samples] = [0, 4], got 5"),
        (dict(first_sample=-1), "first_sample must be in [0, batch_size - num_samples] = [0, 0], got -1"),
    ]

    @staticmethod
    def _call(**overrides):
        kw = dict(batch_size=8, feature_dim=4, seed=1, step=0)
        kw.update(overrides)
        return random_batch(kw.pop("batch_size"), kw.pop("feature_dim"), **kw)

    def test_errors_eager_and_traced(self):
        self.assertRefuses(self._call, self.CASES)

    def test_subnormal_arguments_judged_alike(self):
        """A subnormal range is accepted eagerly and in a graph (both compute in IEEE
        arithmetic): low=0, high=1e-45 holds only 0 below high."""
        f = self._call(low=0.0, high=1e-45)[0]
        g = tf.function(lambda: self._call(low=0.0, high=1e-45))()[0]
        self.assertAllEqual(f, np.zeros([8, 4], np.float32))
        self.assertAllEqual(g, f)

    def test_bad_attr_choice(self):
        with self.assertRaisesRegex((tf.errors.InvalidArgumentError, ValueError), "distribution"):
            self._call(distribution="cauchy")
        with self.assertRaisesRegex((tf.errors.InvalidArgumentError, ValueError, TypeError), "label_dtype"):
            self._call(label_dtype=tf.float64)


class RandomBatchCpuGpuTest(device_util.DeviceTestCase):
    """CPU == GPU bit for bit: uniforms, normals, labels."""

    def _both(self, *args, **kwargs):
        with tf.device("/CPU:0"):
            cpu = random_batch(*args, **kwargs)
        with tf.device("/GPU:0"):
            gpu = random_batch(*args, **kwargs)
        self.assertIn("GPU", gpu[0].device)
        return [t.numpy() for t in cpu], [t.numpy() for t in gpu]

    @device_util.DeviceTestCase.require_gpu
    def test_uniform_bit_identical_large(self):
        for fd in [256, 13, 1]:  # vector rows, ragged rows, one block per row
            cpu, gpu = self._both(262144 // fd * 4, fd, seed=[7, 9], step=123, low=-0.5, high=2.0, p=0.25)
            testing.assert_bits_equal(self, cpu, gpu, msg=f"feature_dim={fd}")

    @device_util.DeviceTestCase.require_gpu
    def test_subnormal_ranges_bit_identical(self):
        for low, high in [(-1.5e-38, 1.5e-38), (0.0, 1e-44), (-3e-39, -1e-40), (0.0, 1e-45)]:
            cpu, gpu = self._both(4096, 64, seed=[3, 4], step=5, low=low, high=high)
            testing.assert_bits_equal(self, cpu, gpu, msg=f"low={low} high={high}")

    @device_util.DeviceTestCase.require_gpu
    def test_16_bit_ranges_bit_identical(self):
        """16-bit features over ranges that reach each kind of value of the type (subnormals,
        the largest finite, negatives rounded down, values raised to low): the GPU's converter
        instructions give the CPU's integer rule's bits."""
        ranges = {
            tf.bfloat16: [(0.0, 1.0), (-2.0, 3.0), (-1.5e-38, 1.5e-38), (-1.5e38, 1.5e38), (-1e-3, -1e-5)],
            tf.float16: [(0.0, 1.0), (-2.0, 3.0), (-1e-4, 1e-4), (0.0, 1e-7), (-65504.0, 65504.0), (6e4, 65504.0)],
        }
        for dtype, cases in ranges.items():
            for low, high in cases:
                cpu, gpu = self._both(4096, 64, seed=[3, 4], step=5, low=low, high=high, dtype=dtype)
                testing.assert_bits_equal(self, cpu, gpu, msg=f"{dtype.name} [{low}, {high})")
        for dtype in [tf.bfloat16, tf.float16]:
            cpu, gpu = self._both(1 << 16, 64, seed=[5, 6], step=77, dtype=dtype)  # [0, 1): kernel variant 1
            testing.assert_bits_equal(self, cpu, gpu, msg=f"{dtype.name} [0, 1)")

    @device_util.DeviceTestCase.require_gpu
    def test_classes_bit_identical_large(self):
        for dtype in [tf.int32, tf.int64, tf.float32]:
            (_, cl), (_, gl) = self._both(
                1 << 20, 1, seed=3, step=2**40, label_mode="classes", num_classes=1000, label_dtype=dtype
            )
            self.assertAllEqual(cl, gl)

    @device_util.DeviceTestCase.require_gpu
    def test_beyond_2_31_work_items(self):
        """More than 2^31 work items: the SDK kernel's 64-bit index path, 32 GiB on the GPU,
        with one item per thread (4 features) and four (32 features: 8 items a row,
        sdk::ItemsPerThread; 64 features: 16 items a row, which the 32-bit kernel would run
        eight at a time), every unit through one GenerateItems call.
        The first and last rows must equal the same samples computed on the CPU as small
        shards.
        """
        total = tf.config.experimental.get_device_details(tf.config.list_physical_devices("GPU")[0])
        for rows, features in [((1 << 31) + 3, 4), ((1 << 28) + 3, 32), ((1 << 27) + 3, 64)]:
            with self.subTest(rows=rows, features=features):
                try:
                    with tf.device("/GPU:0"):
                        f, l = random_batch(rows, features, seed=[3, 1], step=9)
                        tail_f, tail_l = f[-5:].numpy(), l[-5:].numpy()
                        head_f = f[:3].numpy()
                        del f, l
                except tf.errors.ResourceExhaustedError:
                    self.skipTest(f"not enough GPU memory for 32 GiB ({total})")
                with tf.device("/CPU:0"):
                    cf, cl = random_batch(rows, features, seed=[3, 1], step=9, first_sample=rows - 5, num_samples=5)
                    hf, _ = random_batch(rows, features, seed=[3, 1], step=9, num_samples=3)
                testing.assert_bits_equal(self, [tail_f, tail_l, head_f], [cf, cl, hf])

    @device_util.DeviceTestCase.require_gpu
    def test_normal_bit_identical_large(self):
        """2^28 normals (1 GiB), float32 and the 16-bit types: every pair of words the GPU's
        normal.h code and the CPU's (AVX2 + FMA, and scalar for the partial blocks) meet."""
        for dtype, rows, fd in [
            (tf.float32, 1 << 22, 64),
            (tf.float32, 1 << 16, 13),
            (tf.bfloat16, 1 << 16, 64),
            (tf.float16, 1 << 16, 64),
        ]:
            cpu, gpu = self._both(rows, fd, seed=[5, 6], step=77, distribution="normal", dtype=dtype)
            testing.assert_bits_equal(self, cpu, gpu, msg=f"{dtype.name} feature_dim={fd}")
            del cpu, gpu


if __name__ == "__main__":
    tf.test.main()
