"""tf_onthefly: training data generated on the fly by native ops, on CPU or GPU, the same
batch in TensorFlow, JAX and PyTorch.

    features, labels = tf_onthefly.random_batch(32, 16, seed=7, step=step)        # TensorFlow
    features, labels = tf_onthefly.jax.random_batch(32, 16, seed=7, step=step)    # JAX
    features, labels = tf_onthefly.torch.random_batch(32, 16, seed=7, step=step)  # PyTorch

Every generator of the build (tf_ops/generators.bzl) is a function of this package:
random_batch, teacher_task, procedural_shapes, random_walk, ...; GENERATORS maps their
names to them, REGISTRY to their records (op name, example arguments). These TensorFlow
parts load on first use, so `import tf_onthefly.jax` and `import tf_onthefly.torch` work
where TensorFlow is not installed.

    features, labels = tf_onthefly.cuda_kernel(ptx, "my_kernel", batch_size=4096, ...)

runs a CUDA kernel written from Python (PTX) as a native TensorFlow op (docs/interop.md),
with `contract_source()` (the counter contract's helpers as CUDA source) and
`ptx_entries(ptx)` beside it; `tf_onthefly.interop.DeviceBridge` hands device arrays of CuPy,
PyTorch, Numba or JAX to TensorFlow.

    tf_onthefly.load_generators("build/libmy_generators.so")

registers the generators of a library built from one's own folder against the installed
package (`python -m tf_onthefly.build FOLDER`, tf_onthefly.sysconfig) as the built-in ones
are: functions of this package, REGISTRY and GENERATORS entries, TensorFlow ops with XLA
kernels (examples/external_generator/).
"""

import importlib
import importlib.util

from tf_onthefly import _build_info
from tf_onthefly._version import __version__

# The names whose first use loads TensorFlow and the op library.
_CUDA_KERNEL_NAMES = ("contract_source", "cuda_kernel", "ptx_entries")
_TENSORFLOW_NAMES = (
    "GENERATORS",
    "REGISTRY",
    "data",
    "load_generators",
    *_CUDA_KERNEL_NAMES,
    *_build_info.GENERATOR_MODULES,
)


def _load_tensorflow_parts():
    if importlib.util.find_spec("tensorflow") is None:
        raise ImportError(
            "tf_onthefly's TensorFlow ops need TensorFlow, which is not installed: "
            "pip install 'tf-onthefly[gpu]' (or [cpu] for tensorflow-cpu, [and-cuda] for TensorFlow "
            "with CUDA from PyPI). Without it, the same generators are in tf_onthefly.jax "
            "(pip install 'tf-onthefly[jax]') and tf_onthefly.torch (pip install 'tf-onthefly[torch]')."
        )
    data = importlib.import_module("tf_onthefly.data")
    generator = importlib.import_module("tf_onthefly._generator")
    generator.import_builtin_generators()
    globals().update(
        data=data,
        GENERATORS=generator.GENERATORS,
        REGISTRY=generator.REGISTRY,
        load_generators=generator.load_generators,
    )
    globals().update(generator.GENERATORS)
    cuda_kernel = importlib.import_module("tf_onthefly._cuda_kernel")
    globals().update({name: getattr(cuda_kernel, name) for name in _CUDA_KERNEL_NAMES})


def __getattr__(name):
    if name in _TENSORFLOW_NAMES:
        _load_tensorflow_parts()
        return globals()[name]
    raise AttributeError(f"module 'tf_onthefly' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))


def include_dir() -> str:
    """The folder of the SDK's C++ headers (tf_ops/sdk/*.h, tf_ops/common/*.h: what a
    generator's code includes, the counter contract's Philox and number mappings among
    them), for code compiled against an installed wheel; in a source checkout, the
    repository's root. The same as tf_onthefly.sysconfig.get_include()."""
    from tf_onthefly import sysconfig

    return sysconfig.get_include()


__all__ = sorted(_build_info.GENERATOR_MODULES) + [
    "GENERATORS",
    "REGISTRY",
    "contract_source",
    "cuda_kernel",
    "data",
    "include_dir",
    "load_generators",
    "ptx_entries",
    "__version__",
]
