"""Tests of tf_onthefly.drift_walk: a launcher generator (its own block-cooperative CUDA
kernels, CUB, scratch memory) with a tensor input (docs/bringing-a-kernel.md)."""

import re

import numpy as np
import tensorflow as tf
from hypothesis import strategies as st

from tf_onthefly import _load, drift_walk, testing
from tf_onthefly.testing import arguments

import device_util
import reference as ref

UP = [0.2, 0.5, 0.8]


def reference(batch_size, length, up_probability, seed, step, first_sample=0, num_samples=None):
    """OnTheFly>DriftWalk from the contract: the class from words 0 and 1 of block 0 of
    stream 1; step t up if the uniform of word t % 4 of block t / 4 of stream 0 is below the
    class's up_probability."""
    samples = ref.samples(batch_size, first_sample, num_samples)
    up = np.asarray(up_probability, np.float32)
    cw = ref.sample_words(ref.derive_key(seed, 1, step), samples, [0])[:, 0, :]
    classes = ref.uniform_below(cw[:, 0], cw[:, 1], len(up)).astype(np.int64)
    words = ref.sample_words(ref.derive_key(seed, 0, step), samples, np.arange((length + 3) // 4))
    u = ref.uniform01(words.reshape(len(samples), -1)[:, :length])
    walks = np.cumsum(np.where(u < up[classes][:, None], 1, -1), axis=1).astype(np.int32)
    return walks, classes.astype(np.int32).reshape(-1, 1)


def _probabilities(edges=False):
    """up_probability values: float32 lists in [0, 1], or (edges) lists with NaN, infinities,
    values outside [0, 1], the wrong rank, no element, a float64 or int tensor."""
    valid = st.lists(st.floats(0, 1, width=32), min_size=1, max_size=6)
    if not edges:
        return valid
    return st.one_of(
        st.lists(arguments.EDGE_FLOATS | st.floats(-2, 3), min_size=1, max_size=4),
        st.sampled_from(
            [
                [],
                [[0.5, 0.5]],
                0.5,
                [1e39],
                tf.constant([0.5, 0.5], tf.float64),
                tf.constant([0, 1], tf.int32),
                ["a"],
            ]
        ),
    )


# The documented argument space (the contract's fuzz check draws from it).
ARGUMENTS = dict(
    length=arguments.sizes(1, 3000),
    up_probability=arguments.Arg(_probabilities(), _probabilities(edges=True)),
)


def output_sets(kw, outputs):
    """Walks move by +-1 from 0; labels are classes of up_probability."""
    walks, labels = (t.numpy() for t in outputs)
    if walks.size:
        assert np.all(np.abs(np.diff(walks, axis=1, prepend=0)) == 1)
    assert np.all((labels >= 0) & (labels < len(np.ravel(kw["up_probability"]))))


class DriftWalkTest(device_util.DeviceTestCase, testing.GeneratorContract):
    generator = "drift_walk"
    fuzz_arguments = ARGUMENTS
    output_sets = staticmethod(output_sets)
    gpu_batch_size = 1 << 12
    tensor_inputs = dict(up_probability=UP)

    def generate(self, batch_size, seed, step, first_sample=0, num_samples=None, up_probability=UP):
        return drift_walk(
            batch_size, 300, up_probability, seed, step, first_sample=first_sample, num_samples=num_samples
        )

    def test_reference_bit_exact(self):
        # one tile, a ragged tile, and walks of several tiles (scratch memory on the GPU)
        for length in [1, 5, 2048, 2049, 5000]:
            with self.subTest(length=length):
                w, l = drift_walk(12, length, UP, seed=[1, 2], step=3, first_sample=4, num_samples=7)
                rw, rl = reference(12, length, UP, [1, 2], 3, first_sample=4, num_samples=7)
                self.assertAllEqual(w.numpy(), rw)
                self.assertAllEqual(l.numpy(), rl)

    @device_util.DeviceTestCase.require_gpu
    @device_util.DeviceTestCase.require_xla
    def test_scratch_under_xla_on_the_gpu(self):
        """Walks of three tiles need scratch for their tile sums: under jit_compile on the GPU it
        is the custom call's extra result, sized by ScratchBytes when the op is compiled (XLA's
        own allocator refused it). Bit-identical to the CPU, whole batch and shard."""
        up = tf.constant([0.2, 0.5, 0.9], tf.float32)
        for kwargs in (dict(), dict(first_sample=100, num_samples=300)):
            with self.subTest(**kwargs):
                call = lambda: drift_walk(1024, 5000, up, seed=[1, 2], step=3, **kwargs)  # noqa: E731, B023
                with tf.device("/CPU:0"):
                    want = call()
                with tf.device("/GPU:0"):
                    got = tf.function(call, jit_compile=True)()
                self.assertIn("GPU", got[0].device)
                testing.assert_bits_equal(self, got, want)

    def test_drift_follows_the_class(self):
        w, l = drift_walk(6000, 200, [0.25, 0.75], seed=1, step=0)
        final, label = w.numpy()[:, -1].astype(np.float64), l.numpy()[:, 0]
        for c, drift in [(0, -0.5), (1, 0.5)]:
            mean = final[label == c].mean()
            self.assertNear(mean, 200 * drift, 6 * np.sqrt(200 * 0.75) / np.sqrt((label == c).sum()))
        self.assertNear(label.mean(), 0.5, 0.05)

    def test_input_from_a_variable_changes_data_without_retracing(self):
        up = tf.Variable([0.1, 0.9])
        traces = []

        @tf.function
        def walks(step):
            traces.append(1)
            return drift_walk(16, 64, up, seed=5, step=step)

        for values in ([0.1, 0.9], [0.9, 0.1], [0.5, 0.5]):
            up.assign(values)
            self.assertAllEqual(walks(tf.constant(2, tf.int64))[0], reference(16, 64, values, 5, 2)[0])
        self.assertLen(traces, 1)

    def test_bad_up_probability(self):
        """Shape and dtype are refused everywhere, naming the input; values where the kernel
        reads them in host memory (the CPU; the GPU reads them only on the device)."""
        shape_cases = [
            (dict(up_probability=[[0.5, 0.5]]), "up_probability must have shape [n], got [1, 2]"),
            (dict(up_probability=np.zeros([0], np.float32)), "up_probability must have shape [n], got [0]"),
            (dict(up_probability=tf.constant([0.5], tf.float64)), "up_probability must be a float32 tensor"),
            (dict(up_probability=[True]), "up_probability must be float32 numbers"),
            (dict(up_probability=[1e39]), "up_probability must fit in float32"),
        ]
        call = lambda up_probability: drift_walk(4, 10, up_probability, seed=1, step=0)  # noqa: E731
        self.assertRefuses(call, shape_cases)
        if device_util.device() == "cpu":
            for value, message in [
                ([0.5, float("nan")], "up_probability must be finite, got nan at flat index 1"),
                ([1.5], "up_probability must be in [0, 1], got 1.5 at flat index 0"),
                ([-0.25], "up_probability must be in [0, 1], got -0.25 at flat index 0"),
            ]:
                with self.assertRaisesRegex(tf.errors.InvalidArgumentError, re.escape(message)):
                    call(value)

    def test_negative_subnormal_refused_whatever_the_fp_mode(self):
        """The value checks judge float32 in IEEE arithmetic: TensorFlow's threads read a
        subnormal as zero (flush-to-zero, denormals-are-zero), under which -1e-45 would pass
        the [0, 1] rule as -0 while -0.5 is refused. Refused on the CPU eagerly and under
        XLA (its Host handler), naming the input and the value."""
        if device_util.device() != "cpu":
            self.skipTest("the GPU reads the values only on the device")
        message = "up_probability must be in [0, 1], got -1.4013e-45 at flat index 1"
        call = lambda: drift_walk(4, 10, [0.5, -1e-45], seed=1, step=0)  # noqa: E731
        with self.assertRaisesRegex(tf.errors.InvalidArgumentError, re.escape(message)):
            call()
        if _load.HAS_XLA:
            with self.assertRaisesRegex(tf.errors.InvalidArgumentError, re.escape(message)):
                tf.function(call, jit_compile=True)()

    def test_gpu_values_outside_the_rule_are_defined(self):
        """On the GPU (no value check without a host round trip): NaN or below 0 never steps
        up, above 1 always does, as the op's documentation says."""
        if device_util.device() != "gpu":
            self.skipTest("the GPU's behaviour; the CPU refuses these values")
        w, _ = drift_walk(8, 40, [float("nan"), -1.0], seed=1, step=0)
        self.assertAllEqual(w.numpy()[:, -1], np.full([8], -40))
        w, _ = drift_walk(8, 40, [2.0], seed=1, step=0)
        self.assertAllEqual(w.numpy()[:, -1], np.full([8], 40))

    def test_missing_input(self):
        from tf_onthefly._generator import call_generator

        with self.assertRaisesRegex(TypeError, "needs the tensor input 'up_probability'"):
            call_generator("OnTheFly>DriftWalk", 4, 1, 0, length=3)

    def test_bad_length(self):
        with self.assertRaisesRegex(tf.errors.InvalidArgumentError, re.escape("length must be in [1, 1048576], got 0")):
            drift_walk(4, 0, UP, seed=1, step=0)


if __name__ == "__main__":
    tf.test.main()
