"""Tests of the tutorial generator, tf_onthefly.random_walk (docs/writing-a-generator.md)."""

import re

import numpy as np
import tensorflow as tf

from tf_onthefly import random_walk, testing
from tf_onthefly.testing import arguments

import device_util
import reference as ref


def reference(batch_size, length, seed, step, first_sample=0, num_samples=None):
    """OnTheFly>RandomWalk from the contract: step t of a walk is bit t % 32 of word t / 32 of
    stream 0 (1: +1, 0: -1); the label is 1 if the walk ends above 0."""
    samples = ref.samples(batch_size, first_sample, num_samples)
    words = ref.sample_words(ref.derive_key(seed, 0, step), samples, np.arange((length + 127) // 128))
    words = words.reshape(len(samples), -1)  # word k holds steps 32k .. 32k+31, lowest bit first
    t = np.arange(length)
    bit = (words[:, t // 32] >> (t % 32).astype(np.uint32)) & np.uint32(1)
    walks = np.cumsum(np.where(bit == 1, 1, -1), axis=1).astype(np.int32)
    return walks, (walks[:, -1:] > 0).astype(np.int32)


# The documented argument space (the contract's fuzz draws from it): walks of 1 .. 2^20 steps.
ARGUMENTS = dict(length=arguments.sizes(1, 300))


def output_sets(kw, outputs):
    """Walks move by +-1 from 0; labels are 1 exactly where the walk ends above 0."""
    walks, labels = (t.numpy() for t in outputs)
    if walks.size:
        assert np.all(np.abs(np.diff(walks, axis=1, prepend=0)) == 1)
        assert np.array_equal(labels[:, 0], (walks[:, -1] > 0).astype(np.int32))


class RandomWalkTest(device_util.DeviceTestCase, testing.GeneratorContract):
    generator = "random_walk"  # the contract checks call tf_onthefly.random_walk with
    arguments = dict(length=300)  # these arguments, and fuzz these:
    fuzz_arguments = ARGUMENTS
    output_sets = staticmethod(output_sets)
    gpu_batch_size = 1 << 14

    def test_reference_bit_exact(self):
        for length in [1, 31, 128, 129, 1000]:
            w, l = random_walk(16, length, seed=[1, 2], step=3)
            rw, rl = reference(16, length, [1, 2], 3)
            self.assertAllEqual(w.numpy(), rw)
            self.assertAllEqual(l.numpy(), rl)

    def test_statistics(self):
        w, l = random_walk(20000, 100, seed=1, step=0)
        final = w.numpy()[:, -1].astype(np.float64)
        self.assertNear(final.mean(), 0.0, 6 * 10 / np.sqrt(20000))
        self.assertNear(final.var(), 100.0, 5.0)
        self.assertTrue(np.all(np.abs(np.diff(w.numpy(), axis=1)) == 1))

    def test_bad_length(self):
        with self.assertRaisesRegex(tf.errors.InvalidArgumentError, re.escape("length must be in [1, 1048576], got 0")):
            random_walk(4, 0, seed=1, step=0)


if __name__ == "__main__":
    tf.test.main()
