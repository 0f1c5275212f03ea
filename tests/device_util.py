"""One test file, CPU and GPU variants: --test_device=cpu|gpu picks where the ops run.

Bazel's otf_py_test() makes <name>_cpu and <name>_gpu (tagged requires-gpu); the GPU
variant skips cleanly where TensorFlow sees no GPU. Run a file by hand with
`python3 tests/x_test.py --test_device=gpu`.
"""

import os
import unittest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402
from absl import flags  # noqa: E402

from tf_onthefly import _load, testing  # noqa: E402

flags.DEFINE_enum("test_device", "cpu", ["cpu", "gpu"], "Device the ops under test run on.")
FLAGS = flags.FLAGS


def device() -> str:
    return FLAGS.test_device


def make_model() -> tf.keras.Model:
    """The small model the training-path tests train: 16 -> 32 -> 4, the same weights every call."""
    from tf_onthefly.bench import models

    tf.keras.utils.set_random_seed(0)
    return models.mlp(16, 4, hidden=(32,))


def train_and_score(model, make_batch, steps, learning_rate, held_out):
    """Trains a classifier on a generator: Adam on make_batch(step) -> (x, y), y of shape
    [n, 1] with class ids, one step per batch; returns its accuracy on held_out = (x, y)."""
    import numpy as np

    from tf_onthefly.bench import models

    apply = models.train_step(
        model, tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True), tf.keras.optimizers.Adam(learning_rate)
    )
    train_step = tf.function(lambda step: apply(*make_batch(step)))
    for step in range(steps):
        train_step(tf.constant(step, tf.int64))
    x, y = held_out
    return float(np.mean(np.argmax(model(x), axis=1) == y.numpy()[:, 0]))


class DeviceTestCase(tf.test.TestCase):
    """Runs each test under tf.device(--test_device); skips GPU variants without a GPU."""

    def setUp(self):
        super().setUp()
        if device() == "gpu" and not tf.config.list_physical_devices("GPU"):
            self.skipTest("no GPU visible to TensorFlow")
        scope = tf.device("/GPU:0" if device() == "gpu" else "/CPU:0")
        scope.__enter__()
        self.addCleanup(scope.__exit__, None, None, None)

    @property
    def device(self):
        """Where the contract checks (tf_onthefly.testing.GeneratorContract) run: --test_device."""
        return "/GPU:0" if FLAGS.test_device == "gpu" else "/CPU:0"

    def assertRefuses(self, call, cases, graph=True):
        """call(**overrides) raises InvalidArgument with `message` for each (overrides, message),
        eagerly and (graph=True) at tf.function trace time, where TF reports it as ValueError."""
        testing.assert_refuses(self, call, cases, graph)

    @staticmethod
    def require_gpu(test):
        """Marks a test that compares CPU with GPU: it runs only in the GPU variant."""

        def wrapper(self, *args, **kwargs):
            if device() != "gpu":
                self.skipTest("compares CPU with GPU: runs in the _gpu variant")
            return test(self, *args, **kwargs)

        wrapper.__name__ = test.__name__
        return wrapper

    @staticmethod
    def require_xla(test):
        """Marks a test that compiles the ops with XLA: skipped where the op library has no XLA
        kernels (TensorFlow before 2.20, docs/packaging.md). Works on a method or a class."""
        reason = f"the op library for TensorFlow {_load.VARIANT['minor']} has no XLA kernels"
        if isinstance(test, type):
            return test if _load.HAS_XLA else unittest.skip(reason)(test)

        def wrapper(self, *args, **kwargs):
            if not _load.HAS_XLA:
                self.skipTest(reason)
            return test(self, *args, **kwargs)

        wrapper.__name__ = test.__name__
        wrapper.__doc__ = test.__doc__
        return wrapper
