"""The Python half of the generator SDK: the registry, and one call that wraps any generator op.

Every generator op (tf_ops/sdk) takes seed, step and first_sample tensors and the
batch_size and num_samples attributes, plus its own attributes and tensor inputs. A
generator's module
(python/tf_onthefly/<name>.py) defines its wrapper, which calls `call_generator`, and
registers it once with `register`: that marks the op not differentiable and lists it, with
example arguments, in REGISTRY and GENERATORS, which every tool and test iterates (the
data pipelines, the bench and rates, the contract, fuzz and sanitizer tests, the wheel's
smoke test, the op reference). Which modules exist is the build's list,
tf_ops/generators.bzl.
"""

import dataclasses
import importlib
import re
from typing import Callable, Dict, Optional, Tuple

import tensorflow as tf
from tensorflow.python.framework import op_def_registry

from tf_onthefly import _args, _load


@dataclasses.dataclass(frozen=True)
class Generator:
    """A registered generator op."""

    name: str  # Python name: tf_onthefly.<name>
    op: str  # op name, OnTheFly>Name
    fn: Callable  # the wrapper
    examples: Tuple[dict, ...]  # keyword arguments (without seed and step) that exercise it;
    # the first is its canonical small call


# Python name -> Generator / wrapper, for every generator op of the package.
REGISTRY: Dict[str, Generator] = {}
GENERATORS: Dict[str, Callable] = {}


def register(op: str, fn: Callable, examples) -> Callable:
    """Lists `fn`, the wrapper of op `op`, with example arguments (keyword dicts without seed
    and step, the first a small canonical call), and marks the op not differentiable (data
    takes no gradients)."""
    if not examples or "batch_size" not in examples[0]:
        raise ValueError(f"{op}: register() needs examples, each with batch_size")
    tf.no_gradient(op)
    REGISTRY[fn.__name__] = Generator(fn.__name__, op, fn, tuple(examples))
    GENERATORS[fn.__name__] = fn
    return fn


def load_generators():
    """Imports every generator module the build lists (each registers itself)."""
    from tf_onthefly import _build_info

    for module in _build_info.GENERATOR_MODULES:
        importlib.import_module(f"tf_onthefly.{module}")


def op_function(op: str) -> Callable:
    """The generated Python function of op `op` (OnTheFly>RandomBatch -> on_the_fly_random_batch)."""
    return getattr(_load.ops, re.sub(r"(?<!^)(?=[A-Z])", "_", op.replace(">", "")).lower())


# seed, step and first_sample: the inputs every generator op starts with (tf_ops/sdk).
COMMON_INPUTS = 3


def call_generator(
    op: str,
    batch_size: int,
    seed,
    step,
    *,
    first_sample=0,
    num_samples: Optional[int] = None,
    name: Optional[str] = None,
    **arguments,
):
    """Calls generator op `op` with every argument converted and checked by one rule per
    OpDef type (tf_onthefly/_args.py): seeds and steps as 64-bit words, integers within
    int64, floats within float32, never a float truncated to an integer; the generator's
    own tensor inputs (named like the op's inputs) as tensors of their dtype."""
    op_def = op_def_registry.get(op)
    attr_defs = {a.name: a for a in op_def.attr}
    input_defs = {a.name: a for a in op_def.input_arg[COMMON_INPUTS:]}
    converted = {}
    for arg, value in dict(
        arguments, batch_size=batch_size, num_samples=-1 if num_samples is None else num_samples
    ).items():
        if arg in input_defs:
            converted[arg] = _args.input_tensor(value, arg, tf.as_dtype(input_defs[arg].type))
        elif arg in attr_defs:
            converted[arg] = _args.attr_value(value, attr_defs[arg])
        else:
            raise TypeError(f"{op} has no argument {arg!r}")
    for arg in input_defs:
        if arg not in converted:
            raise TypeError(f"{op} needs the tensor input {arg!r}")
    with tf.name_scope(name or op.split(">")[-1]):
        # Every kernel reads first_sample in host memory (its range check must be exact and
        # an error); index_tensor makes it where that costs the step nothing. seed and step
        # stay where they are (the GPU kernels read them on the device).
        return op_function(op)(
            seed=_args.int64_tensor(seed, "seed", unsigned_64=True),
            step=_args.int64_tensor(step, "step", unsigned_64=True),
            first_sample=_args.index_tensor(first_sample, "first_sample"),
            **converted,
        )
