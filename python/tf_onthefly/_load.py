"""Loads the op library for the installed TensorFlow, after checking that the package has one.

An op library is compiled against one TensorFlow minor's C++ ABI; loading it into another
fails with an obscure 'undefined symbol' (or, worse, loads and misbehaves). The wheel holds
one per supported minor (_variants.py, docs/packaging.md); pick the one that matches, or
say plainly which versions are supported and what to do.
"""

import ctypes
import os

import tensorflow as tf

from tf_onthefly import _variants

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
ops = tf.load_op_library(VARIANT["library"])


def gpu_kernels() -> tuple:
    """(True, where the CUDA runtime came from) where the GPU kernels can run, (False, why not)
    where they cannot: the kernels library finds the CUDA runtime at load time
    (tf_ops/common/cuda_runtime.h), and a CPU-only TensorFlow such as tensorflow-cpu has none."""
    lib = ctypes.CDLL(os.path.join(os.path.dirname(VARIANT["library"]), "libtf_onthefly_kernels.so"))
    lib.tf_onthefly_cuda_runtime_unavailable_reason.restype = ctypes.c_char_p
    lib.tf_onthefly_cuda_runtime_source.restype = ctypes.c_char_p
    why = lib.tf_onthefly_cuda_runtime_unavailable_reason()
    if why is not None:
        return False, why.decode()
    return True, lib.tf_onthefly_cuda_runtime_source().decode()
