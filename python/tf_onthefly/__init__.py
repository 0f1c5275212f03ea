"""tf_onthefly: training data generated on the fly by native TensorFlow ops, on CPU or GPU.

    features, labels = tf_onthefly.random_batch(32, 16, seed=7, step=step)
"""
from tf_onthefly.random_batch import random_batch

__version__ = "0.1.0"
__all__ = ["random_batch", "__version__"]
