"""Tests of tf_onthefly.random_batch: golden values, contract, statistics, bad input, CPU == GPU."""
import numpy as np
import tensorflow as tf

import device_util
import reference
import tf_onthefly
from device_util import ulp_distance
from tf_onthefly import random_batch

# Pinned forever (contract version 1): seed (1, 2), step 3, batch 4 x 6 features.
# A change here is a breaking change of docs/counter-contract.md.
GOLDEN_UNIFORM_ROW0 = [0.30296677, 0.31367546, 0.20855665, 0.18873435, 0.19950825, 0.76777154]

SEEDS = [0, 1, 2**63 - 1, -5, [1, 2], [-1, 2**40]]
STEPS = [0, 1, 17, 2**33 + 5]

# GPU normals against the CPU's (double-precision) normals; measured on the H200 and
# recorded in docs/benchmarks.md.
NORMAL_MAX_ULP = 4


class RandomBatchGoldenTest(device_util.DeviceTestCase):
    """The op against the NumPy reference of the counter contract, bit for bit."""

    def test_reference_philox_known_answers(self):
        # Random123's known-answer vectors for philox4x32_10.
        kat = [
            ([0, 0, 0, 0], (0, 0), [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]),
            ([0xFFFFFFFF] * 4, (0xFFFFFFFF, 0xFFFFFFFF), [0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD]),
            ([0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344], (0xA4093822, 0x299F31D0),
             [0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1]),
        ]
        for ctr, key, want in kat:
            self.assertEqual(reference.philox4x32_10(ctr, key).tolist(), want)

    def test_pinned_values(self):
        f, _ = random_batch(4, 6, seed=[1, 2], step=3)
        self.assertAllEqual(f.numpy()[0], np.array(GOLDEN_UNIFORM_ROW0, np.float32))

    def test_uniform_and_bernoulli_bit_exact(self):
        for seed in SEEDS:
            for step in STEPS:
                f, l = random_batch(37, 13, seed=seed, step=step, low=-2.5, high=7.0, p=0.3)
                rf, rl = reference.random_batch(37, 13, seed, step, low=-2.5, high=7.0, p=0.3)
                self.assertAllEqual(f.numpy().view(np.uint32), rf.view(np.uint32), msg=f"seed={seed} step={step}")
                self.assertAllEqual(l.numpy(), rl, msg=f"seed={seed} step={step}")

    def test_classes_bit_exact_every_dtype(self):
        for dtype, np_dtype, most in [(tf.int32, np.int32, 2**31), (tf.int64, np.int64, 2**62 + 3),
                                      (tf.float32, np.float32, 2**24)]:
            for n in [1, 3, 10, 1000, most - 1, most]:
                _, l = random_batch(64, 1, seed=9, step=4, label_mode="classes", num_classes=n,
                                    label_dtype=dtype)
                _, rl = reference.random_batch(64, 1, 9, 4, label_mode="classes", num_classes=n,
                                               label_dtype=np_dtype)
                self.assertEqual(l.dtype, dtype)
                self.assertAllEqual(l.numpy(), rl)

    def test_normal_matches_reference(self):
        for seed in SEEDS[:3]:
            f, _ = random_batch(50, 9, seed=seed, step=2, distribution="normal")
            rf, _ = reference.random_batch(50, 9, seed, 2, distribution="normal")
            tol = 1 if device_util.device() == "cpu" else NORMAL_MAX_ULP
            self.assertLessEqual(int(ulp_distance(f.numpy(), rf).max()), tol)

    def test_slices_are_the_global_batch(self):
        """Any split into (first_sample, num_samples) shards reproduces the global batch."""
        full_f, full_l = random_batch(30, 7, seed=5, step=11)
        for cuts in ([0, 30], [0, 15, 30], [0, 1, 2, 29, 30], [0, 7, 7, 20, 30]):
            parts = [random_batch(30, 7, seed=5, step=11, first_sample=a, num_samples=b - a)
                     for a, b in zip(cuts[:-1], cuts[1:])]
            self.assertAllEqual(tf.concat([p[0] for p in parts], 0), full_f)
            self.assertAllEqual(tf.concat([p[1] for p in parts], 0), full_l)

    def test_feature_prefix_is_stable(self):
        """Feature j of a sample does not depend on feature_dim (block index contract)."""
        a, la = random_batch(8, 5, seed=3, step=1)
        b, lb = random_batch(8, 12, seed=3, step=1)
        self.assertAllEqual(a, b[:, :5])
        self.assertAllEqual(la, lb)


class RandomBatchPropertiesTest(device_util.DeviceTestCase):

    def test_deterministic(self):
        a = random_batch(64, 16, seed=42, step=7, distribution="normal")
        b = random_batch(64, 16, seed=42, step=7, distribution="normal")
        self.assertAllEqual(a[0], b[0])
        self.assertAllEqual(a[1], b[1])

    def test_distinct_steps_and_seeds(self):
        base, _ = random_batch(16, 16, seed=42, step=7)
        for kw in [dict(seed=42, step=8), dict(seed=43, step=7), dict(seed=[42, 1], step=7)]:
            other, _ = random_batch(16, 16, **kw)
            self.assertLess(np.mean(base.numpy() == other.numpy()), 0.01, msg=str(kw))

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
        self.assertNear(np.mean(x ** 4), 3.0, 0.1)  # kurtosis of a normal
        self.assertTrue(np.all(np.isfinite(x)))

    def test_label_rates(self):
        for p in [0.0, 0.1, 0.5, 1.0]:
            _, l = random_batch(50_000, 1, seed=13, step=1, p=p)
            self.assertNear(float(np.mean(l.numpy())), p, 0.01, msg=f"p={p}")
        _, l = random_batch(50_000, 1, seed=13, step=1, label_mode="classes", num_classes=5,
                            label_dtype=tf.int32)
        counts = np.bincount(l.numpy().ravel(), minlength=5)
        self.assertEqual(len(counts), 5)
        self.assertLess(((counts - 10_000) ** 2 / 10_000).sum(), 30)  # chi2(4)

    def test_static_shapes_in_tf_function(self):
        @tf.function
        def gen(step):
            return random_batch(32, 16, seed=[1, 2], step=step, label_dtype=tf.int64,
                                label_mode="classes", num_classes=3)

        cf = gen.get_concrete_function(tf.TensorSpec([], tf.int64))
        self.assertEqual(cf.structured_outputs[0].shape.as_list(), [32, 16])
        self.assertEqual(cf.structured_outputs[1].shape.as_list(), [32, 1])
        self.assertEqual(cf.structured_outputs[1].dtype, tf.int64)
        a, _ = gen(tf.constant(5, tf.int64))
        b, _ = random_batch(32, 16, seed=[1, 2], step=5)
        self.assertAllEqual(a, b)  # same values traced or eager

    def test_num_samples_shape_and_empty_shard(self):
        @tf.function
        def gen():
            return random_batch(32, 16, seed=1, step=0, first_sample=32, num_samples=0)

        f, l = gen()
        self.assertEqual(f.shape.as_list(), [0, 16])
        self.assertEqual(l.shape.as_list(), [0, 1])

    def test_not_differentiable(self):
        from tensorflow.python.framework import ops as tf_ops
        with tf.Graph().as_default():
            f, _ = random_batch(2, 2, seed=0, step=0)
        # Registered with tf.no_gradient: a lookup gives None instead of raising LookupError.
        self.assertIsNone(tf_ops.get_gradient_function(f.op))


class RandomBatchBadInputTest(device_util.DeviceTestCase):
    """Every bad argument is an InvalidArgument naming the argument and its value."""

    CASES = [
        (dict(batch_size=0), "batch_size must be >= 1, got 0"),
        (dict(batch_size=-3), "batch_size must be >= 1, got -3"),
        (dict(feature_dim=0), "feature_dim must be >= 1, got 0"),
        (dict(low=1.0, high=1.0), "low and high must be finite with low < high, got low=1, high=1"),
        (dict(low=2.0, high=1.0), "got low=2, high=1"),
        (dict(low=float("nan")), "low and high must be finite"),
        (dict(high=float("inf")), "low and high must be finite"),
        (dict(low=-3e38, high=3e38), "high - low must be finite"),
        (dict(p=1.5), "p must be in [0, 1], got 1.5"),
        (dict(p=-0.1), "p must be in [0, 1], got -0.1"),
        (dict(p=float("nan")), "p must be in [0, 1], got nan"),
        (dict(num_classes=0, label_mode="classes"), "num_classes must be >= 1, got 0"),
        (dict(num_samples=9), "num_samples must be -1 (the whole batch) or in [0, batch_size] = [0, 8], got 9"),
        (dict(num_samples=-2), "got -2"),
        (dict(batch_size=2**40, feature_dim=2**20), "exceeds the per-output cap"),
        (dict(batch_size=1, feature_dim=2**62), "exceeds the per-output cap"),
        (dict(seed=[1, 2, 3]), "seed must be an int64 scalar or an int64 pair of shape [2], got shape [3]"),
        (dict(seed=[[1, 2]]), "seed must be an int64 scalar or an int64 pair"),
        (dict(seed=1.5), "seed must be an integer"),
        (dict(step=[1, 2]), "step must be an int64 scalar, got shape [2]"),
        (dict(first_sample=5, num_samples=4), "first_sample must be in [0, batch_size - num_samples] = [0, 4], got 5"),
        (dict(first_sample=-1), "first_sample must be in [0, batch_size - num_samples] = [0, 0], got -1"),
    ]

    @staticmethod
    def _call(**overrides):
        kw = dict(batch_size=8, feature_dim=4, seed=1, step=0)
        kw.update(overrides)
        return random_batch(kw.pop("batch_size"), kw.pop("feature_dim"), **kw)

    def test_errors_eager_and_traced(self):
        """Shape functions check the same things at trace time (TF reports them as ValueError);
        a float seed is refused in Python before any graph exists, so only eagerly."""
        python_only = [c for c in self.CASES if "seed" in c[0] and not isinstance(c[0]["seed"], list)]
        self.assertRefuses(self._call, [c for c in self.CASES if c not in python_only])
        self.assertRefuses(self._call, python_only, graph=False)

    def test_bad_attr_choice(self):
        with self.assertRaisesRegex((tf.errors.InvalidArgumentError, ValueError), "distribution"):
            self._call(distribution="cauchy")
        with self.assertRaisesRegex((tf.errors.InvalidArgumentError, ValueError, TypeError), "label_dtype"):
            self._call(label_dtype=tf.float64)



class RandomBatchCpuGpuTest(device_util.DeviceTestCase):
    """CPU == GPU: uniform and integer outputs bit for bit, normals within NORMAL_MAX_ULP."""

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
            (cf, cl), (gf, gl) = self._both(262144 // fd * 4, fd, seed=[7, 9], step=123,
                                            low=-0.5, high=2.0, p=0.25)
            self.assertAllEqual(cf.view(np.uint32), gf.view(np.uint32), msg=f"feature_dim={fd}")
            self.assertAllEqual(cl, gl)

    @device_util.DeviceTestCase.require_gpu
    def test_classes_bit_identical_large(self):
        for dtype in [tf.int32, tf.int64, tf.float32]:
            (_, cl), (_, gl) = self._both(1 << 20, 1, seed=3, step=2**40, label_mode="classes",
                                          num_classes=1000, label_dtype=dtype)
            self.assertAllEqual(cl, gl)

    @device_util.DeviceTestCase.require_gpu
    def test_sharded_offsets_bit_identical(self):
        (cf, _), (gf, _) = self._both(1 << 16, 64, seed=1, step=5, first_sample=40000, num_samples=9999)
        self.assertAllEqual(cf.view(np.uint32), gf.view(np.uint32))

    @device_util.DeviceTestCase.require_gpu
    def test_beyond_2_31_work_items(self):
        """More than 2^31 work items: the SDK kernel's 64-bit index path, 32 GiB on the GPU,
        once with one item per thread (4 features) and once with four (32 features: 8 items
        a row, sdk::ItemsPerThread). The first and last rows must equal the same samples
        computed on the CPU as small shards.
        """
        total = tf.config.experimental.get_device_details(tf.config.list_physical_devices("GPU")[0])
        for rows, features in [((1 << 31) + 3, 4), ((1 << 28) + 3, 32)]:
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
                    cf, cl = random_batch(rows, features, seed=[3, 1], step=9, first_sample=rows - 5,
                                          num_samples=5)
                    hf, _ = random_batch(rows, features, seed=[3, 1], step=9, num_samples=3)
                self.assertAllEqual(tail_f.view(np.uint32), cf.numpy().view(np.uint32))
                self.assertAllEqual(tail_l, cl.numpy())
                self.assertAllEqual(head_f.view(np.uint32), hf.numpy().view(np.uint32))

    @device_util.DeviceTestCase.require_gpu
    def test_normal_within_ulp_bound(self):
        (cf, _), (gf, _) = self._both(1 << 16, 64, seed=[5, 6], step=77, distribution="normal")
        d = ulp_distance(cf, gf)
        print(f"normal CPU vs GPU over {d.size} values: max {d.max()} ulp, "
              f"mean {d.mean():.3f}, exact {np.mean(d == 0):.4f}")
        self.assertLessEqual(int(d.max()), NORMAL_MAX_ULP)


if __name__ == "__main__":
    tf.test.main()
