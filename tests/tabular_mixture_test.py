"""Tests of tf_onthefly.tabular_mixture: reference, contract, statistics, learnability, bad input."""

import numpy as np
import tensorflow as tf
from hypothesis import strategies as st

from tf_onthefly import tabular_mixture, testing
from tf_onthefly.bench import models
from tf_onthefly.testing import arguments

import device_util
import reference as ref


def reference(
    batch_size,
    feature_dim,
    seed,
    step,
    num_classes=3,
    cluster_std=1.0,
    separation=3.0,
    task_seed=0,
    first_sample=0,
    num_samples=None,
):
    """OnTheFly>TabularMixture from the contract: the class from stream 1 (block 0), normals
    from stream 0 (block j / 4), the class's means from (task_seed, 0), stream 200, step 0."""
    f32 = np.float32
    samples = ref.samples(batch_size, first_sample, num_samples)
    nb = (feature_dim + 3) // 4
    cw = ref.sample_words(ref.derive_key(seed, 1, step), samples, [0])[:, 0, :]
    cls = ref.uniform_below(cw[:, 0], cw[:, 1], num_classes)
    z = ref.normals(ref.sample_words(ref.derive_key(seed, 0, step), samples, np.arange(nb)))
    means_key = ref.derive_key([task_seed, 0], 200, 0)
    u = ref.uniform01(np.stack([ref.sample_words(means_key, [c], np.arange(nb))[0] for c in cls]))
    sep = f32(separation)
    mean = ((f32(2.0) * sep * u).astype(f32) - sep).astype(f32)
    x = (mean + (f32(cluster_std) * z).astype(f32)).astype(f32)
    return x.reshape(len(samples), nb * 4)[:, :feature_dim], cls.astype(np.int32).reshape(-1, 1)


# The documented argument space (the contract's fuzz check draws from it).
ARGUMENTS = dict(
    feature_dim=arguments.sizes(),
    num_classes=arguments.Arg(st.integers(1, 50), arguments.EDGE_INTS | st.sampled_from([2**20 + 1])),
    cluster_std=arguments.Arg(st.floats(0, 10), arguments.EDGE_FLOATS),
    separation=arguments.Arg(st.floats(0, 10), arguments.EDGE_FLOATS),
    task_seed=arguments.Arg(arguments.WORD, arguments.EDGE_INTS),
)


def output_sets(kw, outputs):
    """Finite features within separation + 6 cluster_std of 0; labels in [0, num_classes)."""
    features, labels = (t.numpy() for t in outputs)
    assert np.all(np.isfinite(features))
    bound = np.float64(kw.get("separation", 3.0)) + 6 * np.float64(kw.get("cluster_std", 1.0))
    assert np.all(np.abs(features.astype(np.float64)) <= bound * (1 + 1e-6))
    assert np.all((labels >= 0) & (labels < kw.get("num_classes", 3)))


class TabularMixtureTest(device_util.DeviceTestCase, testing.GeneratorContract):
    generator = "tabular_mixture"
    fuzz_arguments = ARGUMENTS
    output_sets = staticmethod(output_sets)
    gpu_batch_size = 1 << 15

    def generate(self, batch_size, seed, step, first_sample=0, num_samples=None):
        return tabular_mixture(
            batch_size, 10, seed, step, num_classes=5, first_sample=first_sample, num_samples=num_samples
        )

    def test_reference_bit_exact(self):
        for kw in [dict(), dict(num_classes=9, cluster_std=0.25, separation=1.5, task_seed=4), dict(feature_dim=1)]:
            kw = dict(dict(feature_dim=13), **kw)
            f, l = tabular_mixture(40, seed=[3, 4], step=9, **kw)
            rf, rl = reference(40, kw.pop("feature_dim"), [3, 4], 9, **kw)
            self.assertBitsEqual([f, l], [rf, rl], msg=str(kw))

    @device_util.DeviceTestCase.require_gpu
    def test_cpu_equals_gpu_at_every_items_per_thread(self):
        """CPU == GPU bit for bit where the GPU kernel runs 1, 2, 4 and 8 items of a row a
        thread (rows of 6, 16, 32 and 64 features), 8 with a last group short of 8 (67), and
        many groups a row (256); the contract test's rows run one item a thread."""
        for fd in [6, 16, 32, 64, 67, 256]:
            with tf.device("/CPU:0"):
                cpu = tabular_mixture(8192, fd, seed=[5, 6], step=7, num_classes=7)
            with tf.device("/GPU:0"):
                gpu = tabular_mixture(8192, fd, seed=[5, 6], step=7, num_classes=7)
            self.assertIn("GPU", gpu[0].device)
            self.assertBitsEqual(cpu, gpu, msg=f"feature_dim={fd}")

    def test_clusters(self):
        """Classes uniform; around each class's mean the features spread by cluster_std."""
        x, y = tabular_mixture(30000, 6, seed=1, step=0, num_classes=3, cluster_std=0.5, separation=4.0)
        x, y = x.numpy().astype(np.float64), y.numpy()[:, 0]
        counts = np.bincount(y, minlength=3)
        self.assertLess(((counts - 10000) ** 2 / 10000).sum(), 25)
        for c in range(3):
            self.assertNear(float(np.std(x[y == c] - x[y == c].mean(axis=0))), 0.5, 0.01)
            self.assertTrue(np.all(np.abs(x[y == c].mean(axis=0)) < 4.0 + 0.05))

    def test_task_seed_picks_the_clusters(self):
        a, _ = tabular_mixture(64, 8, seed=1, step=0, task_seed=0)
        b, _ = tabular_mixture(64, 8, seed=1, step=0, task_seed=2**64 - 1)
        c, _ = tabular_mixture(64, 8, seed=1, step=0, task_seed=-1)
        self.assertAllEqual(b, c)  # the same 64-bit word
        self.assertGreater(float(np.mean(np.abs(a.numpy() - b.numpy()))), 0.1)

    def test_a_model_learns_the_classes(self):
        tf.keras.utils.set_random_seed(0)
        held_out = tabular_mixture(4000, 8, seed=2, step=0, num_classes=4, cluster_std=1.0)
        acc = device_util.train_and_score(
            models.mlp(8, 4, hidden=(32,)),
            lambda step: tabular_mixture(128, 8, seed=1, step=step, num_classes=4),
            steps=200,
            learning_rate=3e-3,
            held_out=held_out,
        )
        print(f"tabular_mixture: accuracy {acc:.3f} (chance 0.25)")
        self.assertGreater(acc, 0.9)

    def test_bad_input(self):
        cases = [
            (dict(feature_dim=0), "feature_dim must be in [1, 65536], got 0"),
            (dict(num_classes=0), "num_classes must be in [1, 1048576], got 0"),
            (dict(cluster_std=-1.0), "cluster_std must be in [0, 1e+37], got -1"),
            (dict(separation=float("nan")), "separation must be in [0, 1e+37], got nan"),
        ]

        def call(feature_dim=4, **kw):
            return tabular_mixture(8, feature_dim, seed=1, step=0, **kw)

        self.assertRefuses(call, cases)


if __name__ == "__main__":
    tf.test.main()
