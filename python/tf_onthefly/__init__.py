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

__all__ = sorted(GENERATORS) + ["GENERATORS", "REGISTRY", "data", "__version__"]
