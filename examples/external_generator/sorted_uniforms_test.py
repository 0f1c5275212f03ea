"""The example's generators pass the contract every generator of tf_onthefly passes
(tf_onthefly.testing: determinism, shards, XLA == TensorFlow kernels, CPU == GPU == XLA-GPU
where a GPU is visible, a fuzz of the arguments where hypothesis is installed), and make the
same values with either kernel.

    python sorted_uniforms_test.py      # after: python -m tf_onthefly.build . -o build/libsorted_uniforms.so
"""

import os

import numpy as np
import tensorflow as tf

import tf_onthefly
from tf_onthefly import testing

try:  # the fuzz's argument space needs hypothesis; without it the fuzz is skipped, saying so
    sizes = testing.arguments.sizes
except ImportError:
    sizes = None

HERE = os.path.dirname(os.path.abspath(__file__))
tf_onthefly.load_generators(
    os.environ.get("SORTED_UNIFORMS_LIBRARY", os.path.join(HERE, "build", "libsorted_uniforms.so"))
)


def sorted_in_unit_interval(test, kw, outputs):
    values = np.asarray(outputs[0] if isinstance(outputs, (tuple, list)) else outputs)
    test.assertTrue(np.all((values >= 0) & (values < 1)))
    test.assertTrue(np.all(np.diff(values, axis=-1) >= 0))


class BlockSortedUniformsTest(testing.GeneratorTestCase):
    generator = "block_sorted_uniforms"
    arguments = dict(length=16384)  # the longest: the block sort's 64 KiB of shared memory
    gpu_batch_size = 512
    fuzz_arguments = dict(length=sizes(1, 16384)) if sizes else None
    output_sets = sorted_in_unit_interval


class SegmentSortedUniformsTest(testing.GeneratorTestCase):
    generator = "segment_sorted_uniforms"
    arguments = dict(length=3000)
    gpu_batch_size = 1024
    fuzz_arguments = dict(length=sizes(1, 1 << 20)) if sizes else None
    output_sets = sorted_in_unit_interval


class SortedUniformsTest(tf.test.TestCase):
    def test_both_kernels_make_the_same_values(self):
        for length in (1, 7, 1000, 16384):
            block = tf_onthefly.block_sorted_uniforms(33, length, seed=[3, 4], step=9)
            segment = tf_onthefly.segment_sorted_uniforms(33, length, seed=[3, 4], step=9)
            testing.assert_bits_equal(self, [block], [segment])
            sorted_in_unit_interval(self, {}, block)

    def test_device_wide_sort_under_xla_equals_the_cpu(self):
        """The device-wide sort's scratch memory under jit_compile on the GPU (the XLA custom
        call's extra result), bit-identical to the CPU, also where the batch takes several sorts;
        a shard (all samples but the first), so the sorts start at an offset."""
        if not tf.config.list_logical_devices("GPU"):
            self.skipTest("no GPU visible to TensorFlow")
        for batch, length in ((4096, 1000), (3, 1 << 20), (70, 1 << 20)):
            with tf.device("/CPU:0"):
                want = tf_onthefly.segment_sorted_uniforms(
                    batch, length, seed=11, step=2, first_sample=1, num_samples=batch - 1
                )
            with tf.device("/GPU:0"):
                got = tf.function(
                    lambda b=batch, n=length: tf_onthefly.segment_sorted_uniforms(
                        b, n, seed=11, step=2, first_sample=1, num_samples=b - 1
                    ),
                    jit_compile=True,
                )()
            testing.assert_bits_equal(self, [want], [got], msg=f"{batch} x {length}")


if __name__ == "__main__":
    testing.main()
