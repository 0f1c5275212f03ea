"""What the input benchmark trains, and how each input path feeds it: the configurations
(model, batch, the batch made by our op, by NumPy and by TensorFlow's stateless ops) and the
input paths, built-in and registered."""

import numpy as np
import tensorflow as tf

import tf_onthefly
from tf_onthefly import data
from tf_onthefly.bench import models

PATHS = ["constant", "numpy", "numpy+prefetch", "op-cpu-tfdata", "op-in-step", "tf-stateless"]
MODES = ["fit1", "fit64", "loop64"]
IN_STEP = ("constant", "op-in-step", "tf-stateless")  # paths whose batch is made inside the step
EXTRA_PATHS = {}  # name -> dict(make, in_step, candidate): see register_path


def register_path(name, make, *, in_step, candidate=True):
    """Adds an input path to every (config, mode, jit) of the bench (tf_onthefly.bench's docstring)."""
    if name in PATHS:
        raise ValueError(f"{name!r} is a built-in path")
    EXTRA_PATHS[name] = dict(make=make, in_step=in_step, candidate=candidate)


def configs(gpu):
    """name -> dict(batch, model(), loss, gen(step), numpy(rng), tf(step), x/y shapes and
    dtypes): the batch each path feeds, made by our op, by NumPy and by TF's stateless ops."""
    bce = tf.keras.losses.BinaryCrossentropy(from_logits=True)
    sce = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def features(batch, dim):
        return dict(
            x_shape=(batch, dim),
            x_dtype=tf.float32,
            y_shape=(batch, 1),
            y_dtype=tf.float32,
            gen=lambda step: tf_onthefly.random_batch(batch, dim, seed=1, step=step),
            numpy=lambda rng: (
                rng.random((batch, dim), dtype=np.float32),
                (rng.random((batch, 1), dtype=np.float32) < 0.5).astype(np.float32),
            ),
            tf=lambda step: (
                tf.random.stateless_uniform([batch, dim], seed=tf.stack([step, 1])),
                tf.cast(tf.random.stateless_uniform([batch, 1], seed=tf.stack([step, 2])) < 0.5, tf.float32),
            ),
        )

    wide = 65536 if gpu else 4096
    images = 1024 if gpu else 64
    table = {
        "small_mlp": dict(batch=32, model=lambda: models.mlp(16, 1), loss=bce, **features(32, 16)),
        "wide_mlp": dict(batch=wide, model=lambda: models.mlp(256, 1), loss=bce, **features(wide, 256)),
        "cnn": dict(
            batch=images,
            model=lambda: models.cnn((32, 32, 1), 3),
            loss=sce,
            x_shape=(images, 32, 32, 1),
            x_dtype=tf.float32,
            y_shape=(images, 1),
            y_dtype=tf.int32,
            gen=lambda step: tf_onthefly.procedural_shapes(
                images, 32, 32, seed=1, step=step, channels=1, dtype=tf.float32
            ),
            numpy=lambda rng: (
                rng.random((images, 32, 32, 1), dtype=np.float32),
                rng.integers(0, 3, (images, 1), dtype=np.int32),
            ),
            tf=lambda step: (
                tf.random.stateless_uniform([images, 32, 32, 1], seed=tf.stack([step, 1])),
                tf.random.stateless_uniform([images, 1], seed=tf.stack([step, 2]), minval=0, maxval=3, dtype=tf.int32),
            ),
        ),
    }
    for name, cfg in table.items():
        cfg.update(name=name, gpu=gpu)
    return table


def in_step(path):
    return path in IN_STEP or (path in EXTRA_PATHS and EXTRA_PATHS[path]["in_step"])


def batch_generator(cfg, path):
    """step -> batch, for the paths that make their batch inside the step."""
    if path == "constant":
        kept = [_kept_on_device(t) for t in cfg["gen"](tf.constant(0, tf.int64))]  # made once, on the device
        return lambda step: tuple(tf.bitcast(t, tf.int32) if int32 else t for t, int32 in kept)
    if path in EXTRA_PATHS:
        return EXTRA_PATHS[path]["make"](cfg)
    return cfg["gen"] if path == "op-in-step" else cfg["tf"]


def _kept_on_device(t):
    """(tensor, whether it holds int32 bits) of one output of the constant batch, kept in
    device memory as the generator's own outputs are. TensorFlow keeps an int32 tensor of a
    GPU in host memory when it is a function's capture or argument (and int32 Identity on a
    GPU is a host-memory kernel), so cnn's int32 labels captured as they are would be copied
    host to device at every step, a cost the in-step paths do not pay, and the bound would
    not be one. Kept as their float32 bits instead (the same bytes, in device memory) and
    read back by tf.bitcast in the step, which copies nothing."""
    with tf.device(t.device):  # where the generator made it (a small int32 input could pin an op to the host)
        if t.dtype == tf.int32:
            return tf.bitcast(t, tf.float32), True
        return tf.identity(t), False


def dataset(cfg, path):
    """The tf.data pipeline of the paths that feed batches from outside the step."""
    if path in EXTRA_PATHS:
        return EXTRA_PATHS[path]["make"](cfg)
    if path == "op-cpu-tfdata":
        return data.host_dataset(cfg["gen"])
    rng = np.random.default_rng(0)
    sig = (tf.TensorSpec(cfg["x_shape"], cfg["x_dtype"]), tf.TensorSpec(cfg["y_shape"], cfg["y_dtype"]))
    return data.from_python(lambda: iter(lambda: cfg["numpy"](rng), None), sig, prefetch=path == "numpy+prefetch")


def batch_bytes(cfg):
    return sum(int(np.prod(t.shape)) * t.dtype.size for t in cfg["gen"](tf.constant(0, tf.int64)))
