"""Tests of tf_onthefly.procedural_shapes: reference, contract, statistics, a CNN learns it."""

import numpy as np
import tensorflow as tf
from hypothesis import strategies as st

from tf_onthefly import procedural_shapes, testing
from tf_onthefly.bench import models
from tf_onthefly.testing import arguments

import device_util
import reference as ref


def reference(
    batch_size,
    height,
    width,
    seed,
    step,
    channels=3,
    dtype=np.uint8,
    min_size=0.25,
    max_size=0.7,
    noise=0.15,
    first_sample=0,
    num_samples=None,
):
    """OnTheFly>ProceduralShapes from the contract: the shape from stream 0 (blocks 0-2), the
    background noise from stream 1 (block = pixel), all float32 with one rounding per op."""
    f32 = np.float32
    samples = ref.samples(batch_size, first_sample, num_samples)
    rows = len(samples)
    side = f32(min(height, width))
    p_min, p_range = f32(f32(min_size) * side), f32((f32(max_size) - f32(min_size)) * side)
    sw = ref.sample_words(ref.derive_key(seed, 0, step), samples, [0, 1, 2])  # [rows, 3, 4]
    a, b, c = sw[:, 0], sw[:, 1], sw[:, 2]
    cls = ref.uniform_below(a[:, 0], a[:, 1], 3).astype(np.int32)
    size = (f32(p_range * ref.uniform01(a[:, 2])) + p_min).astype(f32)
    half_w = (size * f32(0.5)).astype(f32)
    aspect = (f32(0.5) * ref.uniform01(c[:, 0]) + f32(0.5)).astype(f32)
    half_h = np.where(cls == 1, (half_w * aspect).astype(f32), half_w).astype(f32)
    cx = (((f32(width) - f32(2.0) * half_w).astype(f32) * ref.uniform01(a[:, 3])).astype(f32) + half_w).astype(f32)
    cy = (((f32(height) - f32(2.0) * half_h).astype(f32) * ref.uniform01(b[:, 0])).astype(f32) + half_h).astype(f32)
    color = np.stack([(f32(0.6) * ref.uniform01(b[:, k]) + f32(0.4)).astype(f32) for k in (1, 2, 3)], -1)
    flip = (c[:, 1] >> np.uint32(31)) != 0

    ys, xs = np.meshgrid(np.arange(height), np.arange(width), indexing="ij")
    px, py = (xs.astype(f32) + f32(0.5)), (ys.astype(f32) + f32(0.5))
    nw = ref.sample_words(ref.derive_key(seed, 1, step), samples, np.arange(height * width))  # [rows, HW, 4]
    images = np.zeros((rows, height, width, channels), dtype)  # float types: the float32 value rounded once
    for i in range(rows):
        dx, dy = (px - cx[i]).astype(f32), (py - cy[i]).astype(f32)
        if cls[i] == 0:
            inside = ((dx * dx).astype(f32) + (dy * dy).astype(f32)).astype(f32) <= f32(half_w[i] * half_w[i])
        elif cls[i] == 1:
            inside = (np.abs(dx) <= half_w[i]) & (np.abs(dy) <= half_h[i])
        else:
            from_apex = ((half_h[i] - dy) if flip[i] else (dy + half_h[i])).astype(f32)
            inside = (np.abs(dy) <= half_h[i]) & (np.abs(dx) <= (from_apex * f32(0.5)).astype(f32))
        for ch in range(channels):
            bg = (f32(noise) * ref.uniform01(nw[i, :, ch])).astype(f32).reshape(height, width)
            v = np.where(inside, color[i, ch], bg).astype(f32)
            images[i, ..., ch] = (v * f32(255.0) + f32(0.5)).astype(f32).astype(np.uint8) if dtype == np.uint8 else v
    inv_h, inv_w = f32(1.0) / f32(height), f32(1.0) / f32(width)
    boxes = np.stack(
        [
            ((cy - half_h).astype(f32) * inv_h),
            ((cx - half_w).astype(f32) * inv_w),
            ((cy + half_h).astype(f32) * inv_h),
            ((cx + half_w).astype(f32) * inv_w),
        ],
        -1,
    ).astype(f32)
    return images, cls.reshape(rows, 1), boxes


# The documented argument space (the contract's fuzz check draws from it).
ARGUMENTS = dict(
    height=arguments.Arg(st.integers(8, 40), arguments.EDGE_INTS | st.integers(1, 7)),
    width=arguments.Arg(st.integers(8, 40), arguments.EDGE_INTS | st.integers(1, 7)),
    channels=arguments.one_of([1, 3], [-1, 0, 2, 4]),
    dtype=arguments.one_of([tf.uint8, tf.float32, tf.bfloat16, tf.float16], [tf.int32]),
    min_size=arguments.Arg(st.floats(0.01, 0.5), arguments.EDGE_FLOATS | st.floats(-2, 3)),
    max_size=arguments.Arg(st.floats(0.5, 1.0), arguments.EDGE_FLOATS | st.floats(-2, 3)),
    noise=arguments.unit(),
    return_boxes=arguments.Arg(st.just(True), st.just(True)),
)


def output_sets(kw, outputs):
    """Pixels in [0, 1] (float) or [0, 255]; labels in {0, 1, 2}; boxes normalised, ordered."""
    images, labels, boxes = (t.numpy() for t in outputs)
    assert np.all(np.isfinite(images.astype(np.float64)))
    if images.dtype != np.uint8:
        images = images.astype(np.float32)
        assert np.all((images >= 0) & (images <= 1))
    assert np.all((labels >= 0) & (labels < 3))
    assert (
        np.all((boxes >= 0) & (boxes <= 1))
        and np.all(boxes[:, 2] >= boxes[:, 0])
        and np.all(boxes[:, 3] >= boxes[:, 1])
    )


class ProceduralShapesTest(device_util.DeviceTestCase, testing.GeneratorContract):
    generator = "procedural_shapes"
    fuzz_arguments = ARGUMENTS
    output_sets = staticmethod(output_sets)
    batch_size = 12
    gpu_batch_size = 2048

    def generate(self, batch_size, seed, step, first_sample=0, num_samples=None):
        return procedural_shapes(
            batch_size, 20, 28, seed, step, return_boxes=True, first_sample=first_sample, num_samples=num_samples
        )

    def test_reference_bit_exact(self):
        for kw, np_dtype in [
            (dict(), np.uint8),
            (dict(channels=1, dtype=tf.float32, noise=0.5, min_size=0.1, max_size=1.0), np.float32),
        ]:
            im, l, b = procedural_shapes(16, 24, 40, seed=5, step=2, return_boxes=True, **kw)
            rk = dict(kw, dtype=np_dtype)
            ri, rl, rb = reference(16, 24, 40, 5, 2, **rk)
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

    def test_16_bit_images_are_rounded_float(self):
        import ml_dtypes

        f, _ = procedural_shapes(8, 16, 16, seed=1, step=1, dtype=tf.float32)
        for tf_dtype, np_dtype in [(tf.bfloat16, ml_dtypes.bfloat16), (tf.float16, np.float16)]:
            h, _ = procedural_shapes(8, 16, 16, seed=1, step=1, dtype=tf_dtype)
            testing.assert_bits_equal(self, [h], [f.numpy().astype(np_dtype)])

    def test_uint8_is_rounded_float(self):
        f, _ = procedural_shapes(8, 16, 16, seed=1, step=1, dtype=tf.float32)
        u, _ = procedural_shapes(8, 16, 16, seed=1, step=1, dtype=tf.uint8)
        self.assertAllEqual(u.numpy(), np.floor(f.numpy() * np.float32(255) + np.float32(0.5)).astype(np.uint8))

    def test_cnn_learns_shapes(self):
        tf.keras.utils.set_random_seed(0)
        model = models.cnn((32, 32, 1), 3, dense=64)
        acc = device_util.train_and_score(
            model,
            lambda step: procedural_shapes(64, 32, 32, seed=1, step=step, channels=1, dtype=tf.float32),
            steps=300,
            learning_rate=2e-3,
            held_out=procedural_shapes(2000, 32, 32, seed=2, step=0, channels=1, dtype=tf.float32),
        )
        print(f"procedural_shapes: CNN accuracy {acc:.3f} (chance 0.333)")
        self.assertGreater(acc, 0.8)

    def test_bad_input(self):
        cases = [
            (dict(height=4), "height must be in [8, 8192], got 4"),
            (dict(width=10000), "width must be in [8, 8192], got 10000"),
            (dict(channels=2), "channels must be 1 or 3, got 2"),
            (dict(min_size=0.0), "need 0 < min_size <= max_size <= 1"),
            (dict(min_size=0.8, max_size=0.5), "got min_size=0.8, max_size=0.5"),
            (dict(noise=2.0), "noise must be in [0, 1], got 2"),
            (
                dict(height=8192, width=8192, batch_size=400),
                "images of shape [400, 201326592] (1 bytes per element) exceeds the per-output cap",
            ),
            # 60 GB as uint8 (under the cap), 241 GB as float32: the shape function sizes
            # elements by the requested dtype.
            (
                dict(height=8192, width=8192, batch_size=300, dtype=tf.float32),
                "images of shape [300, 201326592] (4 bytes per element) exceeds the per-output cap",
            ),
        ]

        def call(batch_size=4, height=16, width=16, **kw):
            return procedural_shapes(batch_size, height, width, seed=1, step=0, **kw)

        self.assertRefuses(call, cases)


if __name__ == "__main__":
    tf.test.main()
