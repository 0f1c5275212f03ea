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
"""

import importlib
import importlib.util

from tf_onthefly import _build_info
from tf_onthefly._version import __version__

# The names whose first use loads TensorFlow and the op library.
_TENSORFLOW_NAMES = ("GENERATORS", "REGISTRY", "data", "load_generators", *_build_info.GENERATOR_MODULES)


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
    generator.load_generators()
    globals().update(
        data=data,
        GENERATORS=generator.GENERATORS,
        REGISTRY=generator.REGISTRY,
        load_generators=generator.load_generators,
    )
    globals().update(generator.GENERATORS)


def __getattr__(name):
    if name in _TENSORFLOW_NAMES:
        _load_tensorflow_parts()
        return globals()[name]
    raise AttributeError(f"module 'tf_onthefly' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))


def include_dir() -> str:
    """The folder of the C++ headers the wheel ships (`tf_ops/common/philox.h`, `uniform.h`:
    the counter contract's Philox and number mappings), for code compiled against an
    installed wheel: `-I$(python -c 'import tf_onthefly; print(tf_onthefly.include_dir())')`.
    In a source checkout, the repository's root."""
    import os

    here = os.path.dirname(os.path.abspath(__file__))
    shipped = os.path.join(here, "include")
    return shipped if os.path.isdir(shipped) else os.path.dirname(os.path.dirname(here))


__all__ = sorted(_build_info.GENERATOR_MODULES) + ["GENERATORS", "REGISTRY", "data", "include_dir", "__version__"]
