"""tf_onthefly: training data generated on the fly by native TensorFlow ops, on CPU or GPU.

    features, labels = tf_onthefly.random_batch(32, 16, seed=7, step=step)
"""
from tf_onthefly import data
from tf_onthefly._generator import GENERATORS
from tf_onthefly.procedural_shapes import procedural_shapes
from tf_onthefly.random_batch import random_batch
from tf_onthefly.random_walk import random_walk
from tf_onthefly.teacher_task import teacher_task

from tf_onthefly._version import __version__
__all__ = ["GENERATORS", "data", "procedural_shapes", "random_batch", "random_walk", "teacher_task", "__version__"]
