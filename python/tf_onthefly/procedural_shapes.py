"""procedural_shapes: images of random circles, rectangles and triangles, with labels and boxes."""

from typing import Optional, Tuple, Union

import tensorflow as tf

from tf_onthefly._generator import call_generator, register

CLASS_NAMES = ("circle", "rectangle", "triangle")


def procedural_shapes(
    batch_size: int,
    height: int,
    width: int,
    seed: Union[int, Tuple[int, int], tf.Tensor],
    step: Union[int, tf.Tensor],
    *,
    channels: int = 3,
    dtype: tf.DType = tf.uint8,
    min_size: float = 0.25,
    max_size: float = 0.7,
    noise: float = 0.15,
    return_boxes: bool = False,
    first_sample: Union[int, tf.Tensor] = 0,
    num_samples: Optional[int] = None,
    name: Optional[str] = None,
):
    """Images `[n, height, width, channels]` of one random shape each, with its class.

    Each image holds one circle (class 0), rectangle (1) or triangle (2) of random size,
    position and colour on a dark noisy background. Bit-identical on CPU and GPU.

    Args:
      batch_size, seed, step, first_sample, num_samples, name: as in `random_batch`.
      height, width: image size in pixels, each in [8, 8192].
      channels: 1 (grey) or 3 (RGB).
      dtype: tf.uint8 (0..255), or tf.float32, tf.bfloat16 or tf.float16 (0..1; 16-bit values
        are the float32 ones rounded to nearest even).
      min_size, max_size: shape size as a fraction of the shorter side,
        0 < min_size <= max_size <= 1.
      noise: background noise amplitude in [0, 1].
      return_boxes: also return the boxes.

    Returns:
      `(images, labels)`, or `(images, labels, boxes)` with `return_boxes`: labels int32
      `[n, 1]`, boxes float32 `[n, 4]` as normalised `[ymin, xmin, ymax, xmax]`.
    """
    images, labels, boxes = call_generator(
        "OnTheFly>ProceduralShapes",
        batch_size,
        seed,
        step,
        first_sample=first_sample,
        num_samples=num_samples,
        name=name,
        height=height,
        width=width,
        channels=channels,
        dtype=dtype,
        min_size=min_size,
        max_size=max_size,
        noise=noise,
    )
    return (images, labels, boxes) if return_boxes else (images, labels)


register(
    "OnTheFly>ProceduralShapes",
    procedural_shapes,
    examples=[
        dict(batch_size=2, height=16, width=16),
        dict(batch_size=9, height=21, width=35, return_boxes=True),  # a partial last item per row
        dict(batch_size=5, height=16, width=16, channels=1, dtype=tf.float32),
        dict(batch_size=3, height=12, width=20, dtype=tf.bfloat16),
    ],
)
