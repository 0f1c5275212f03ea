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
import functools
import importlib
import os
import re
import sys
from typing import Callable, Dict, Optional, Tuple

import tensorflow as tf
from tensorflow.python.framework import op_def_registry

from tf_onthefly import _args, _frontend, _load


@dataclasses.dataclass(frozen=True)
class Generator:
    """A registered generator op."""

    name: str  # Python name: tf_onthefly.<name>
    op: str  # op name, OnTheFly>Name
    fn: Callable  # the wrapper
    examples: Tuple[dict, ...]  # keyword arguments (without seed and step) that exercise it;
    # the first is its canonical small call (none for a generator loaded from a library)
    library: Optional[str] = None  # the library it was loaded from (load_generators), else None


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


def import_builtin_generators():
    """Imports every generator module the build lists (each registers itself)."""
    from tf_onthefly import _build_info

    for module in _build_info.GENERATOR_MODULES:
        importlib.import_module(f"tf_onthefly.{module}")


# Libraries loaded by load_generators: real path -> (file identity, {name: Generator}).
_LOADED_LIBRARIES: Dict[str, tuple] = {}


@functools.lru_cache(maxsize=None)
def op_function(op: str) -> Callable:
    """The generated Python function of op `op` (OnTheFly>RandomBatch -> on_the_fly_random_batch):
    the op library's, or for an op registered for a library loaded later, TensorFlow's
    wrapper generated for it."""
    name = re.sub(r"(?<!^)(?=[A-Z])", "_", op.replace(">", "")).lower()
    return getattr(_load.ops if hasattr(_load.ops, name) else _load.op_wrappers([op]), name)


def _file_identity(path: str) -> tuple:
    stat = os.stat(path)
    return stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns


def load_generators(path: str) -> Dict[str, Callable]:
    """Loads a library of generators built against the installed package
    (`python -m tf_onthefly.build`, examples/external_generator/README.md) and registers each of its
    generators as the built-in ones are: a TensorFlow op with its shape function, CPU and GPU
    kernels and XLA kernels; a Python function with the same argument handling, also
    `tf_onthefly.<name>`; an entry in REGISTRY and GENERATORS; not differentiable. Returns
    {name: function} of the library's generators.

    Loading the same file again returns the same functions. Refused, with an ImportError
    naming the file and what differs: a missing file; a file changed since it was loaded in
    this process (a process loads a library once: restart it); a library built for another
    SDK ABI, counter contract or C++ string ABI, or one whose op or function names another
    library registered already."""
    real = os.path.realpath(path)
    if not os.path.isfile(real):
        raise ImportError(f"tf_onthefly.load_generators: {path}: no such file")
    if real in _LOADED_LIBRARIES:
        identity, loaded = _LOADED_LIBRARIES[real]
        if identity != _file_identity(real):
            raise ImportError(
                f"tf_onthefly.load_generators: {path} was loaded already in this process and has "
                f"changed since: a process loads a library once; restart it to load the new build"
            )
        return {name: g.fn for name, g in loaded.items()}
    identity = _file_identity(real)
    try:
        _load.core.load_library(real)
    except OSError as e:
        raise ImportError(f"tf_onthefly.load_generators: {path} does not load: {e}") from None
    # TensorFlow ops for the generators the core gained (this library's, and any another front
    # end loaded since); then this library's, by the library the core records for each.
    _load.register_tensorflow_ops()
    specs = [g for g in _load.core.specs()["generators"] if g.get("library") and os.path.realpath(g["library"]) == real]
    if not specs:
        raise ImportError(
            f"tf_onthefly.load_generators: {path} registered no generator (a library of "
            f"generators defines them with OTF_GENERATOR and OTF_GENERATOR_KERNELS)"
        )
    loaded = {}
    for generator in specs:
        spec = _frontend.Spec.from_json(generator)
        taken = REGISTRY.get(spec.name)
        if taken is not None and taken.op != spec.op:
            raise ImportError(
                f"tf_onthefly.load_generators: {path}: the function name {spec.name!r} of "
                f"{spec.op} is taken by {taken.op} ({taken.library or 'built in'})"
            )
        fn = _loaded_function(spec)
        tf.no_gradient(spec.op)
        loaded[spec.name] = REGISTRY[spec.name] = Generator(spec.name, spec.op, fn, (), real)
        GENERATORS[spec.name] = fn
    _LOADED_LIBRARIES[real] = (identity, loaded)
    package = sys.modules["tf_onthefly"]
    for name, g in loaded.items():
        setattr(package, name, g.fn)
    return {name: g.fn for name, g in loaded.items()}


def _loaded_function(spec: "_frontend.Spec") -> Callable:
    """The TensorFlow function of a loaded generator: the signature every front end gives it
    (tf_onthefly/_frontend.py), the arguments through call_generator."""

    def function(*args, **kwargs):
        values, dynamic = spec.split(args, kwargs)
        for k, v in spec.keywords.items():
            values.setdefault(k, v)
        arguments = {n: values[n] for n in spec.attrs}
        arguments.update((n, dynamic[n]) for n in spec.inputs)
        outputs = call_generator(
            spec.op,
            values["batch_size"],
            dynamic["seed"],
            dynamic["step"],
            first_sample=dynamic["first_sample"],
            num_samples=values["num_samples"],
            name=values["name"],
            **arguments,
        )
        return (
            outputs if len(spec.outputs) == 1 else tuple(outputs)
        )  # a Tensor for one output, as TensorFlow returns it

    function.__name__ = function.__qualname__ = spec.name
    function.__doc__ = (
        f"{spec.name}({', '.join(spec.positional)}, *, ...): the op {spec.op}, loaded by "
        f"tf_onthefly.load_generators.\n\n{spec.doc}"
    )
    function.__signature__ = spec.signature()
    return function


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
