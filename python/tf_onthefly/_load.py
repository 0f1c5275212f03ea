"""Loads the op library that sits beside this package, after checking TensorFlow's version.

The library is compiled against one TensorFlow release's C++ ABI; loading it into another
fails with an obscure 'undefined symbol'. So compare versions first and say what to do.
"""
import os

import tensorflow as tf

from tf_onthefly import _build_info


def check_tensorflow(found: str = None) -> None:
    found = found or tf.__version__
    built = _build_info.TF_VERSION
    if found.split(".")[:2] != built.split(".")[:2]:
        major_minor = ".".join(built.split(".")[:2])
        raise ImportError(
            f"tf_onthefly was built against TensorFlow {built} but TensorFlow {found} is installed; "
            f"its op library only loads into TensorFlow {major_minor}.x. Fix: "
            f"pip install 'tensorflow=={major_minor}.*', or rebuild tf_onthefly against "
            f"TensorFlow {found} (./configure.sh && bash build_pip_pkg.sh dist).")


check_tensorflow()
ops = tf.load_op_library(os.path.join(os.path.dirname(os.path.abspath(__file__)), "_tf_onthefly_ops.so"))
