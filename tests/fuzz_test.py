"""Property-based tests (hypothesis) over every generator op's attributes and inputs.

For any drawn arguments, valid or not: no crash, no hang, and either outputs of the
documented shapes or an InvalidArgumentError / ResourceExhaustedError whose message names
one of the arguments. Requests over the 64 GiB per-output cap are refused before any
allocation (the test would run out of memory otherwise). Derandomized, so CI sees the same
cases every run; docs/hardening.md records the counts.
"""
import re

import hypothesis
from hypothesis import strategies as st
import numpy as np
import tensorflow as tf

import device_util
import tf_onthefly

EXAMPLES = 250
SETTINGS = hypothesis.settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
                               suppress_health_check=list(hypothesis.HealthCheck), database=None)
MAX_BYTES_TO_RUN = 32 << 20  # valid draws larger than this are not executed (memory of CI)
CAP = 1 << 36


def mostly(valid, invalid):
    """`valid` nine times in ten, else `invalid`: so many draws are valid as a whole."""
    return st.integers(0, 9).flatmap(lambda i: invalid if i == 0 else valid)


EDGE_INTS = st.sampled_from([0, -1, -3, 2**31 - 1, 2**31, 2**40, 2**62, -2**63])
EDGE_FLOATS = st.sampled_from([float("nan"), float("inf"), -float("inf"), 3e38, -3e38, 1e-45, -0.0])
sizes = mostly(st.integers(1, 40), EDGE_INTS)
floats = mostly(st.floats(-10, 10, allow_nan=False), EDGE_FLOATS)
unit = mostly(st.floats(0, 1), EDGE_FLOATS | st.floats(-2, 3))
seeds = mostly(st.one_of(st.integers(-2**63, 2**63 - 1), st.lists(st.integers(-2**63, 2**63 - 1), min_size=2, max_size=2)),
               st.lists(st.integers(0, 9), min_size=0, max_size=3).filter(lambda l: len(l) != 2))
steps = mostly(st.integers(-2**63, 2**63 - 1), st.lists(st.integers(0, 5), min_size=1, max_size=2))
firsts = mostly(st.integers(0, 5), EDGE_INTS)

ALLOWED_ERRORS = (tf.errors.InvalidArgumentError, tf.errors.ResourceExhaustedError)


class FuzzTest(device_util.DeviceTestCase):
    outcomes = {"ran": 0, "refused": 0, "skipped (valid, too large to run here)": 0}

    @classmethod
    def tearDownClass(cls):
        print("fuzz outcomes:", cls.outcomes)  # counted in docs/hardening.md
        super().tearDownClass()

    def _check(self, call, arg_names, out_bytes):
        """Runs call() unless it is valid and too big to run here; checks the outcome."""
        try:
            if out_bytes is not None and 0 <= out_bytes <= CAP and out_bytes > MAX_BYTES_TO_RUN:
                self.outcomes["skipped (valid, too large to run here)"] += 1
                hypothesis.assume(False)  # valid and large: would allocate for real
            outs = call()
            self.outcomes["ran"] += 1
        except ALLOWED_ERRORS as e:
            self.outcomes["refused"] += 1
            message = e.message if hasattr(e, "message") else str(e)
            self.assertTrue(any(re.search(rf"\b{re.escape(n)}\b", message) for n in arg_names),
                            msg=f"error names no argument: {message}")
            return None
        for o in outs:
            self.assertTrue(np.all(np.isfinite(o.numpy().astype(np.float64))) or o.dtype.is_integer)
        return outs

    @SETTINGS
    @hypothesis.given(batch=sizes, dim=sizes, num=st.one_of(st.none(), sizes), first=firsts, seed=seeds,
                      step=steps, dist=st.sampled_from(["uniform", "normal"]), low=floats, high=floats,
                      mode=st.sampled_from(["bernoulli", "classes"]), p=unit, classes=sizes,
                      dtype=st.sampled_from([tf.float32, tf.int32, tf.int64]))
    def test_random_batch(self, batch, dim, num, first, seed, step, dist, low, high, mode, p, classes, dtype):
        rows = batch if num in (None, -1) else num  # -1 also means the whole batch
        out_bytes = rows * dim * 4 if rows >= 0 and dim >= 1 else None
        outs = self._check(
            lambda: tf_onthefly.random_batch(batch, dim, seed, step, distribution=dist, low=low, high=high,
                                             label_mode=mode, p=p, num_classes=classes, label_dtype=dtype,
                                             first_sample=first, num_samples=num),
            ["batch_size", "feature_dim", "num_samples", "first_sample", "seed", "step", "low", "high", "p",
             "num_classes", "features", "labels"], out_bytes)
        if outs is not None:
            self.assertEqual(outs[0].shape.as_list(), [rows, dim])
            if dist == "uniform" and rows > 0:
                self.assertTrue(np.all(outs[0].numpy() >= low) and np.all(outs[0].numpy() < high))
            if mode == "classes" and rows > 0:
                self.assertTrue(np.all((outs[1].numpy() >= 0) & (outs[1].numpy() < classes)))

    @SETTINGS
    @hypothesis.given(batch=sizes, dim=sizes, hidden=sizes, classes=sizes, noise=unit, seed=seeds, step=steps,
                      task=st.sampled_from(["classification", "regression"]), task_seed=st.integers(-2**63, 2**63 - 1),
                      dtype=st.sampled_from([tf.float32, tf.int32, tf.int64]))
    def test_teacher_task(self, batch, dim, hidden, classes, noise, seed, step, task, task_seed, dtype):
        out_bytes = batch * dim * 4 if batch >= 0 and dim >= 1 else None
        if out_bytes is not None and hidden > 0 and batch * dim * min(hidden, 4096) > 2e7:
            hypothesis.assume(False)  # valid but slow on two CPU cores
        self._check(lambda: tf_onthefly.teacher_task(batch, dim, seed, step, task=task, num_classes=classes,
                                                      hidden=hidden, noise=noise, task_seed=task_seed,
                                                      label_dtype=dtype),
                    ["batch_size", "feature_dim", "hidden", "num_classes", "noise", "label_dtype", "seed", "step",
                     "features", "labels"], out_bytes)

    @SETTINGS
    @hypothesis.given(batch=sizes, h=mostly(st.integers(8, 40), EDGE_INTS | st.integers(1, 7)),
                      w=mostly(st.integers(8, 40), EDGE_INTS | st.integers(1, 7)),
                      channels=mostly(st.sampled_from([1, 3]), st.integers(-1, 5)), lo=unit, hi=unit, noise=unit, seed=seeds,
                      step=steps, dtype=st.sampled_from([tf.uint8, tf.float32]))
    def test_procedural_shapes(self, batch, h, w, channels, lo, hi, noise, seed, step, dtype):
        out_bytes = batch * h * w * max(channels, 1) * (1 if dtype == tf.uint8 else 4) if min(batch, h, w) >= 0 else None
        outs = self._check(lambda: tf_onthefly.procedural_shapes(batch, h, w, seed, step, channels=channels,
                                                                  dtype=dtype, min_size=lo, max_size=hi, noise=noise,
                                                                  return_boxes=True),
                           ["batch_size", "height", "width", "channels", "min_size", "max_size", "noise", "seed",
                            "step", "images"], out_bytes)
        if outs is not None and batch > 0:
            self.assertTrue(np.all((outs[1].numpy() >= 0) & (outs[1].numpy() < 3)))

    @SETTINGS
    @hypothesis.given(batch=sizes, length=sizes, seed=seeds, step=steps, first=firsts, num=st.one_of(st.none(), sizes))
    def test_random_walk(self, batch, length, seed, step, first, num):
        rows = batch if num in (None, -1) else num  # -1 also means the whole batch
        out_bytes = rows * length * 4 if rows >= 0 and length >= 1 else None
        if out_bytes is not None and rows * length > 4e6:
            hypothesis.assume(False)  # valid but slow: one thread per walk on the CPU
        self._check(lambda: tf_onthefly.random_walk(batch, length, seed, step, first_sample=first, num_samples=num),
                    ["batch_size", "length", "num_samples", "first_sample", "seed", "step", "walks"], out_bytes)


if __name__ == "__main__":
    tf.test.main()
