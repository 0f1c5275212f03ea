"""Tests of tf_onthefly.procedural_shapes: reference, contract, statistics, a CNN learns it."""
import numpy as np
import tensorflow as tf

import device_util
import generator_contract
import reference
from tf_onthefly import procedural_shapes


class ProceduralShapesTest(device_util.DeviceTestCase, generator_contract.GeneratorContract):
    batch_size = 12
    gpu_batch_size = 2048

    def generate(self, batch_size, seed, step, first_sample=0, num_samples=None):
        return procedural_shapes(batch_size, 20, 28, seed, step, return_boxes=True,
                                 first_sample=first_sample, num_samples=num_samples)

    def test_reference_bit_exact(self):
        for kw, np_dtype in [(dict(), np.uint8),
                             (dict(channels=1, dtype=tf.float32, noise=0.5, min_size=0.1, max_size=1.0), np.float32)]:
            im, l, b = procedural_shapes(16, 24, 40, seed=5, step=2, return_boxes=True, **kw)
            rk = dict(kw, dtype=np_dtype)
            ri, rl, rb = reference.procedural_shapes(16, 24, 40, 5, 2, **rk)
            self.assertAllEqual(im.numpy(), ri)
            self.assertAllEqual(l.numpy(), rl)
            self.assertAllEqual(b.numpy(), rb)

    def test_statistics_and_boxes(self):
        im, l, b = procedural_shapes(3000, 32, 32, seed=3, step=0, return_boxes=True, dtype=tf.float32, channels=1)
        counts = np.bincount(l.numpy().ravel(), minlength=3)
        self.assertEqual(len(counts), 3)
        self.assertLess(((counts - 1000) ** 2 / 1000).sum(), 25)  # classes uniform (chi2, 2 dof)
        boxes = b.numpy()
        self.assertTrue(np.all(boxes >= 0) and np.all(boxes <= 1))
        self.assertTrue(np.all(boxes[:, 2] > boxes[:, 0]) and np.all(boxes[:, 3] > boxes[:, 1]))
        # the bright shape lies inside its box; the background outside is dark
        img = im.numpy()[..., 0]
        ys, xs = np.meshgrid(np.arange(32) + 0.5, np.arange(32) + 0.5, indexing="ij")
        for i in range(50):
            y0, x0, y1, x1 = boxes[i] * 32
            outside = (ys < y0) | (ys > y1) | (xs < x0) | (xs > x1)
            self.assertLess(img[i][outside].max(), 0.15 + 1e-6)
            self.assertGreaterEqual(img[i][~outside].max(), 0.4)

    def test_uint8_is_rounded_float(self):
        f, _ = procedural_shapes(8, 16, 16, seed=1, step=1, dtype=tf.float32)
        u, _ = procedural_shapes(8, 16, 16, seed=1, step=1, dtype=tf.uint8)
        self.assertAllEqual(u.numpy(), np.floor(f.numpy() * np.float32(255) + np.float32(0.5)).astype(np.uint8))

    def test_cnn_learns_shapes(self):
        tf.keras.utils.set_random_seed(0)
        model = tf.keras.Sequential([
            tf.keras.Input((32, 32, 1)),
            tf.keras.layers.Conv2D(16, 3, activation="relu"), tf.keras.layers.MaxPooling2D(),
            tf.keras.layers.Conv2D(32, 3, activation="relu"), tf.keras.layers.MaxPooling2D(),
            tf.keras.layers.Flatten(), tf.keras.layers.Dense(64, activation="relu"), tf.keras.layers.Dense(3)])
        acc = generator_contract.train_and_score(
            model, lambda step: procedural_shapes(64, 32, 32, seed=1, step=step, channels=1, dtype=tf.float32),
            steps=300, learning_rate=2e-3,
            held_out=procedural_shapes(2000, 32, 32, seed=2, step=0, channels=1, dtype=tf.float32))
        print(f"procedural_shapes: CNN accuracy {acc:.3f} (chance 0.333)")
        self.assertGreater(acc, 0.8)

    def test_bad_input(self):
        cases = [(dict(height=4), "height must be in [8, 8192], got 4"),
                 (dict(width=10000), "width must be in [8, 8192], got 10000"),
                 (dict(channels=2), "channels must be 1 or 3, got 2"),
                 (dict(min_size=0.0), "need 0 < min_size <= max_size <= 1"),
                 (dict(min_size=0.8, max_size=0.5), "got min_size=0.8, max_size=0.5"),
                 (dict(noise=2.0), "noise must be in [0, 1], got 2"),
                 (dict(height=8192, width=8192, batch_size=400), "images of shape [400, 201326592] (1 bytes per element) exceeds the per-output cap"),
                 # 60 GB as uint8 (under the cap), 241 GB as float32: the shape function sizes
                 # elements by the requested dtype.
                 (dict(height=8192, width=8192, batch_size=300, dtype=tf.float32),
                  "images of shape [300, 201326592] (4 bytes per element) exceeds the per-output cap")]
        def call(batch_size=4, height=16, width=16, **kw):
            return procedural_shapes(batch_size, height, width, seed=1, step=0, **kw)

        self.assertRefuses(call, cases)


if __name__ == "__main__":
    tf.test.main()
