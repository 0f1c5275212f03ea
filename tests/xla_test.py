"""XLA-specific behaviour of the generator ops (the outputs themselves: the contract tests)."""

import subprocess
import sys

import tensorflow as tf

import tf_onthefly
from tf_onthefly import testing

import device_util


@device_util.DeviceTestCase.require_xla
class XlaTest(device_util.DeviceTestCase):
    def test_first_sample_known_at_compile_time(self):
        """A constant, argument or variable first_sample compiles (once per value); a value
        only known when the step runs is refused, naming the op's input."""
        first = tf.Variable(2, dtype=tf.int64)
        f = tf.function(
            lambda: tf_onthefly.random_batch(8, 4, seed=1, step=0, first_sample=first.read_value(), num_samples=4),
            jit_compile=True,
        )
        self.assertAllEqual(f()[0], tf_onthefly.random_batch(8, 4, seed=1, step=0, first_sample=2, num_samples=4)[0])
        random_first = tf.function(
            lambda: tf_onthefly.random_batch(
                8, 4, seed=1, step=0, num_samples=4, first_sample=tf.random.uniform([], 0, 4, dtype=tf.int64)
            ),
            jit_compile=True,
        )
        with self.assertRaisesRegex(tf.errors.InvalidArgumentError, "must be a compile-time constant"):
            random_first()

    def test_large_call_equals_tf_kernel(self):
        """Calls above the Host handler's serial threshold (256 KiB of outputs) are shared
        over XLA's intra-op threads in chunks of rows (the last one ragged here); the result is
        the TF kernel's, bit for bit."""
        for rows, fd, dist in [(4099, 64, "uniform"), (1031, 257, "normal")]:
            make = lambda: tf_onthefly.random_batch(rows, fd, seed=[3, 4], step=5, distribution=dist)  # noqa: E731
            testing.assert_bits_equal(self, tf.function(make, jit_compile=True)(), make(), msg=dist)

    def test_bad_first_sample_refused_when_compiling(self):
        f = tf.function(
            lambda: tf_onthefly.random_batch(8, 4, seed=1, step=0, first_sample=5, num_samples=4), jit_compile=True
        )
        with self.assertRaisesRegex(
            tf.errors.InvalidArgumentError, r"first_sample must be in \[0, batch_size - num_samples\] = \[0, 4\], got 5"
        ):
            f()

    def test_import_after_tensorflow_ran(self):
        """XLA registers its compilation kernels at the first TF function a process runs; the op
        library registers its own when it is loaded after that, so import order is free."""
        code = (
            "import tensorflow as tf\n"
            "tf.function(lambda: tf.constant(1.0) * 2, jit_compile=True)()\n"
            "import tf_onthefly\n"
            "f = tf.function(lambda: tf_onthefly.random_batch(4, 6, seed=[1, 2], step=3), jit_compile=True)\n"
            "print(float(f()[0][0, 0]))\n"
        )
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
        self.assertEqual(out.returncode, 0, msg=out.stderr[-3000:])
        self.assertAlmostEqual(float(out.stdout.split()[-1]), 0.30296677, places=6)


if __name__ == "__main__":
    tf.test.main()
