"""tf_onthefly: training data generated on the fly by native TensorFlow ops, on CPU or GPU.

    features, labels = tf_onthefly.random_batch(32, 16, seed=7, step=step)

Every generator of the build (tf_ops/generators.bzl) is a function of this package:
random_batch, teacher_task, procedural_shapes, random_walk, ...; GENERATORS maps their
names to them, REGISTRY to their records (op name, example arguments).
"""

from tf_onthefly import data
from tf_onthefly._generator import GENERATORS, REGISTRY, load_generators
from tf_onthefly._version import __version__

load_generators()
globals().update(GENERATORS)


def include_dir() -> str:
    """The folder of the C++ headers the wheel ships (`tf_ops/common/philox.h`, `uniform.h`:
    the counter contract's Philox and number mappings), for code compiled against an
    installed wheel: `-I$(python -c 'import tf_onthefly; print(tf_onthefly.include_dir())')`.
    In a source checkout, the repository's root."""
    import os

    here = os.path.dirname(os.path.abspath(__file__))
    shipped = os.path.join(here, "include")
    return shipped if os.path.isdir(shipped) else os.path.dirname(os.path.dirname(here))


__all__ = sorted(GENERATORS) + ["GENERATORS", "REGISTRY", "data", "include_dir", "__version__"]
