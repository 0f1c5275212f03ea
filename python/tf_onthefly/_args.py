"""Argument conversion shared by the op wrappers."""
import tensorflow as tf


def as_int64(value, arg: str) -> tf.Tensor:
    """`value` as an int64 tensor; the op itself checks the shape and names `arg`."""
    t = tf.convert_to_tensor(value)
    if not t.dtype.is_integer:
        raise tf.errors.InvalidArgumentError(
            None, None, f"{arg} must be an integer (int64) tensor, got dtype {t.dtype.name}: {value!r}")
    return tf.cast(t, tf.int64)
