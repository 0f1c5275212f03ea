"""Tests of the tutorial generator, tf_onthefly.random_walk, and of the tutorial itself."""
import os
import re

import numpy as np
import tensorflow as tf

import device_util
import generator_contract
import reference
from tf_onthefly import random_walk


class RandomWalkTest(device_util.DeviceTestCase, generator_contract.GeneratorContract):
    gpu_batch_size = 1 << 14

    def generate(self, batch_size, seed, step, first_sample=0, num_samples=None):
        return random_walk(batch_size, 300, seed, step, first_sample=first_sample, num_samples=num_samples)

    def test_reference_bit_exact(self):
        for length in [1, 31, 128, 129, 1000]:
            w, l = random_walk(16, length, seed=[1, 2], step=3)
            rw, rl = reference.random_walk(16, length, [1, 2], 3)
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


class TutorialTest(tf.test.TestCase):
    """docs/writing-a-generator.md shows these files verbatim: the text builds what we test."""

    def test_tutorial_text_is_the_code(self):
        root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
        with open(os.path.join(root, "docs", "writing-a-generator.md")) as f:
            doc = f.read()
        blocks = re.findall(r"<!-- file: (\S+) -->\n```\w*\n(.*?)```", doc, re.S)
        self.assertGreaterEqual(len(blocks), 5)
        for path, text in blocks:
            with self.subTest(path=path):
                with open(os.path.join(root, path)) as f:
                    self.assertEqual(f.read(), text, msg=f"{path} differs from the tutorial's text")


if __name__ == "__main__":
    tf.test.main()
