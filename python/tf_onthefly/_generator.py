"""The Python half of the generator SDK: one call wraps any generator op.

Every generator op (tf_ops/sdk) takes seed, step and first_sample tensors and the
batch_size and num_samples attributes, plus its own attributes. `call_generator` converts
and passes the common part; `register` marks the op not differentiable and lists it in
GENERATORS, so tools (tf_onthefly.data, the benchmarks) work with every generator.
"""
from typing import Callable, Dict, Optional

import tensorflow as tf

from tf_onthefly._args import as_int64

# Python name -> wrapper, for every generator op of the package.
GENERATORS: Dict[str, Callable] = {}


def register(op_name: str, fn: Callable) -> Callable:
    """Marks `op_name` not differentiable (data takes no gradients) and lists `fn`."""
    tf.no_gradient(op_name)
    GENERATORS[fn.__name__] = fn
    return fn


def call_generator(op_fn: Callable, batch_size: int, seed, step, *, first_sample=0,
                   num_samples: Optional[int] = None, name: Optional[str] = None, **attrs):
    """Calls a generated op wrapper with the SDK's common arguments converted."""
    with tf.name_scope(name or op_fn.__name__.replace("on_the_fly_", "")):
        # Every kernel reads first_sample in host memory (its range check must be exact), so
        # it is made there; seed and step stay where they are (the GPU kernels read them on
        # the device).
        with tf.device("/CPU:0"):
            first = as_int64(first_sample, "first_sample")
        return op_fn(
            seed=as_int64(seed, "seed"),
            step=as_int64(step, "step"),
            first_sample=first,
            batch_size=batch_size,
            num_samples=-1 if num_samples is None else num_samples,
            **attrs,
        )
