"""Argument conversion shared by every generator wrapper: one place that decides what a
Python value means for an op's input or attribute, and refuses, naming the argument, what
it cannot mean. Range checks that depend on the generator stay in its C++ Configure (they
run in the shape function and the kernel alike); here: types, and the 64-bit ranges.
"""

import functools

import numpy as np
import tensorflow as tf

from tf_onthefly import _values
from tf_onthefly._values import INT32_MAX


def refuse(arg: str, message: str):
    raise tf.errors.InvalidArgumentError(None, None, f"{arg} {message}")


_is_integer = _values.is_integer
int_value = functools.partial(_values.int_value, refuse=refuse)
float_value = functools.partial(_values.float_value, refuse=refuse)


def int64_tensor(value, arg: str, *, unsigned_64: bool = False) -> tf.Tensor:
    """An int64 tensor for a seed, step or first_sample input. Tensors must have an integer
    dtype (uint64 keeps its bits); Python and NumPy integers, alone or in lists, are checked
    element by element with int_value. The op checks the shape and names `arg`."""
    if isinstance(value, (tf.Tensor, tf.Variable)) or hasattr(value, "_as_graph_element"):
        t = tf.convert_to_tensor(value)
        if not t.dtype.is_integer:
            refuse(arg, f"must be an integer (int64) tensor, got dtype {t.dtype.name}")
        return tf.cast(t, tf.int64) if t.dtype != tf.int64 else t
    if isinstance(value, np.ndarray) and value.dtype.kind not in "iu":
        refuse(arg, f"must be an integer, got an array of {value.dtype}")
    if isinstance(value, (list, tuple)) and any(isinstance(v, (tf.Tensor, tf.Variable)) for v in value):
        return int64_tensor(tf.stack([int64_tensor(v, arg, unsigned_64=unsigned_64) for v in value]), arg)
    if isinstance(value, (list, tuple, np.ndarray)):
        flat = np.asarray(value, dtype=object)
        words = [int_value(v, arg, unsigned_64=unsigned_64) for v in flat.ravel()]
        return tf.constant(np.array(words, dtype=np.int64).reshape(flat.shape))
    return tf.constant(int_value(value, arg, unsigned_64=unsigned_64), tf.int64)


def index_tensor(value, arg: str) -> tf.Tensor:
    """An int32 or int64 tensor for first_sample, which every kernel reads in host memory.
    A value known when tracing (a Python or NumPy integer, or an integer tensor TensorFlow
    can evaluate then, such as a constant) in [0, 2^31) becomes an int32 constant on the
    device of the op that reads it: TensorFlow keeps an int32 constant of the GPU device in
    host memory, so a step on the GPU needs no node on /CPU:0 (inside a graph loop such a
    node would cost the loop a host part that trades control with the GPU's every
    iteration). Other int32 and int64 tensors pass as they are, other integer tensors become
    int64; anything else is made on /CPU:0 by int64_tensor, which checks it."""
    t = None
    if isinstance(value, (tf.Tensor, tf.Variable)) or hasattr(value, "_as_graph_element"):
        t = tf.convert_to_tensor(value)
        known = tf.get_static_value(t) if t.dtype.is_integer and t.shape.rank == 0 else None
    else:
        known = value if _is_integer(value) else None
    if known is not None and 0 <= int(known) <= INT32_MAX:
        return tf.constant(int(known), tf.int32)
    if t is not None and t.dtype in (tf.int32, tf.int64):
        return t
    with tf.device("/CPU:0"):
        return int64_tensor(value, arg)


def input_tensor(value, arg: str, dtype: tf.DType) -> tf.Tensor:
    """A tensor of `dtype` for a generator's own tensor input. A tensor or variable must have
    that dtype already (converting it would hide a mistake: a float64 table, an int32
    count); Python and NumPy values are converted by the attribute rules, element by
    element: integers within the type, floats within float32 (NaN and infinities pass for
    the op to judge and name), never a float truncated to an integer. The op checks the
    shape and, where the values are in host memory, the values."""
    if isinstance(value, (tf.Tensor, tf.Variable)) or hasattr(value, "_as_graph_element"):
        t = tf.convert_to_tensor(value)
        if t.dtype != dtype:
            refuse(arg, f"must be a {dtype.name} tensor, got dtype {t.dtype.name}")
        return t
    array = np.asarray(value)
    if array.dtype.kind not in "iuf" or array.dtype == np.bool_:
        refuse(arg, f"must be {dtype.name} numbers, got {array.dtype} values")
    if dtype.is_integer:
        if array.dtype.kind == "f":
            refuse(arg, f"must be {dtype.name} integers, got {array.dtype} values")
        info = np.iinfo(dtype.as_numpy_dtype)
        if array.size and (array.min() < info.min or array.max() > info.max):
            refuse(
                arg,
                f"must be {dtype.name} integers in [{info.min}, {info.max}], got values in "
                f"[{array.min()}, {array.max()}]",
            )
        return tf.constant(array.astype(dtype.as_numpy_dtype))
    for v in array.ravel():
        float_value(v, arg)
    return tf.constant(array.astype(dtype.as_numpy_dtype))


def attr_value(value, attr):
    """`value` for the op attribute `attr` (an OpDef.AttrDef). An int attribute named
    *_seed is a seed: a 64-bit word like the seed input. Types and strings must be among
    the attribute's allowed values."""
    arg = attr.name
    if attr.type == "int":
        return int_value(value, arg, unsigned_64=arg.endswith("_seed"))
    if attr.type == "float":
        return float_value(value, arg)
    if attr.type == "type":
        try:
            value = tf.as_dtype(value)
        except TypeError:
            refuse(arg, f"must be a TensorFlow dtype, got {value!r}")
        allowed = [tf.as_dtype(t) for t in attr.allowed_values.list.type]
        if allowed and value not in allowed:
            refuse(arg, f"must be one of {', '.join(t.name for t in allowed)}, got {value.name}")
    if attr.type == "string":
        allowed = [s.decode() for s in attr.allowed_values.list.s]
        if not isinstance(value, str) or (allowed and value not in allowed):
            refuse(
                arg,
                f"must be one of {', '.join(map(repr, allowed))}, got {value!r}"
                if allowed
                else f"must be a string, got {value!r}",
            )
    return value
