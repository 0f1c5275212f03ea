"""Loads the op library that sits beside this package (built by //tf_ops:_tf_onthefly_ops.so)."""
import os

import tensorflow as tf

ops = tf.load_op_library(os.path.join(os.path.dirname(os.path.abspath(__file__)), "_tf_onthefly_ops.so"))
