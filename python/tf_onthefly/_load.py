"""Loads the core, then the TensorFlow op library for the installed TensorFlow, after checking
that the package has one.

The core (libtf_onthefly_core.so: every generator, no TensorFlow) serves every TensorFlow
version; the op library is TensorFlow's front end over it, compiled against one TensorFlow
minor's C++ ABI, and loading it into another fails with an obscure 'undefined symbol' (or,
worse, loads and misbehaves). The wheel holds one per supported minor (_variants.py,
docs/packaging.md); pick the one that matches, or say plainly which versions are supported
and what to do.
"""

import ctypes
import hashlib
import importlib.machinery
import importlib.util
import os
import sys

import tensorflow as tf

from tf_onthefly import _core, _variants

HERE = os.path.dirname(os.path.abspath(__file__))


def minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


def variant_for(found: str = None) -> dict:
    """The package's variant for TensorFlow `found` (default: the installed one), or ImportError."""
    found = found or tf.__version__
    supported = sorted(_variants.VARIANTS, key=lambda v: tuple(map(int, v.split("."))))
    if minor(found) not in _variants.VARIANTS:
        span = supported[0] if len(supported) == 1 else f"{supported[0]} to {supported[-1]}"
        raise ImportError(
            f"tf_onthefly has op libraries for TensorFlow {span} ({', '.join(supported)}), but TensorFlow "
            f"{found} is installed. Fix: pip install '{_tf_distribution()}>={supported[0]},<{_next_minor(supported[-1])}' "
            f"(another TensorFlow needs a source build with it added to tf_ops/tf_versions.bzl: "
            f"docs/packaging.md)."
        )
    return dict(
        _variants.VARIANTS[minor(found)],
        minor=minor(found),
        library=os.path.join(HERE, f"_ops_tf{minor(found).replace('.', '_')}.so"),
    )


def _tf_distribution() -> str:
    """The installed TensorFlow's distribution: tensorflow-cpu where only that is installed."""
    from importlib import metadata

    for name in ("tensorflow", "tensorflow-cpu"):
        try:
            metadata.version(name)
            return name
        except metadata.PackageNotFoundError:
            pass
    return "tensorflow"


def _next_minor(version: str) -> str:
    major, m = version.split(".")
    return f"{major}.{int(m) + 1}"


VARIANT = variant_for()
# XLA kernels (jit_compile) exist in the op libraries for TensorFlow 2.20 on.
HAS_XLA = VARIANT["xla"]
# The core first (every generator registers into it as it loads), then TensorFlow's front end
# over it, which registers an op for each of them; the op library finds the core, loaded
# already, by its name.
core = _core.Core(os.path.join(os.path.dirname(VARIANT["library"]), _core.LIBRARY))
core.check_registrations(core.path)
ops = tf.load_op_library(VARIANT["library"])


def gpu_kernels() -> tuple:
    """(True, where the CUDA runtime came from) where the GPU kernels can run, (False, why not)
    where they cannot: the core finds the CUDA runtime at load time
    (tf_ops/common/cuda_runtime.h), and a CPU-only TensorFlow such as tensorflow-cpu has none."""
    return core.cuda_runtime()


def register_tensorflow_ops() -> list:
    """Registers TensorFlow ops (with their kernels and XLA kernels) for the generators added
    to the core since the op library was loaded, and returns their op names."""
    lib = ctypes.CDLL(VARIANT["library"])  # loaded already: the same handle
    lib.tf_onthefly_register_tensorflow_ops.restype = ctypes.c_void_p
    return [n for n in core._string(lib.tf_onthefly_register_tensorflow_ops()).split("\n") if n]


def op_wrappers(names) -> object:
    """A module of TensorFlow's generated Python functions for ops `names` (as
    tf.load_op_library makes one for a library's ops: OnTheFly>MyGen -> on_the_fly_my_gen)."""
    from tensorflow.core.framework import op_def_pb2
    from tensorflow.python.framework import _pywrap_python_op_gen, op_def_registry

    op_list = op_def_pb2.OpList(op=[op_def_registry.get(n) for n in names])
    wrappers = _pywrap_python_op_gen.GetPythonWrappers(op_list.SerializeToString())
    module_name = hashlib.sha1(wrappers).hexdigest()
    if module_name not in sys.modules:
        module = importlib.util.module_from_spec(importlib.machinery.ModuleSpec(module_name, None))
        exec(wrappers, module.__dict__)  # noqa: S102 -- TensorFlow's own generated wrappers
        sys.modules[module_name] = module
    return sys.modules[module_name]


def load_generator_library(path: str) -> object:
    """Loads a library of generators built against the core (its static initialisers register
    them into it), registers their TensorFlow ops and returns the module of their Python
    functions. A refused registration (another SDK ABI or counter contract) is an ImportError
    naming the library and what differs."""
    core.load_library(path)
    return op_wrappers(register_tensorflow_ops())
