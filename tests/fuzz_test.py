"""Property-based tests (hypothesis) over every registered generator's argument space.

For each generator, calls are drawn from the SDK's common arguments and the generator's
own ARGUMENTS (tests/<name>_test.py) by tests/arguments.py: half entirely valid, half with
one argument at an edge (integers past int32 and int64, floats where integers belong, NaN,
infinities, subnormals, float32's limits, malformed seeds and steps). For every draw:
  - the shape function (tracing) and the kernel (eager) judge it alike: both refuse it, or
    the trace accepts it (a refusal at run time may only concern a value the trace cannot
    see: first_sample's, or a tensor input's, which the CPU kernels check);
  - a refusal is an InvalidArgumentError (ValueError at trace time) whose message names
    one of the op's arguments, tensor inputs or outputs;
  - an accepted call returns the traced shapes and outputs in the documented sets
    (output_sets in the generator's test).
Valid calls whose outputs would exceed 32 MiB are traced but not run (CI's memory).
Derandomized, so CI sees the same cases every run; docs/hardening.md records the counts.
"""

import importlib
import re

import hypothesis
import numpy as np
import tensorflow as tf
from tensorflow.python.framework import op_def_registry

import tf_onthefly

import arguments
import device_util

EXAMPLES = 250  # per generator
SETTINGS = hypothesis.settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=list(hypothesis.HealthCheck),
    database=None,
)
MAX_BYTES_TO_RUN = 32 << 20
REFUSALS = (tf.errors.InvalidArgumentError, ValueError)


class FuzzTest(device_util.DeviceTestCase):
    outcomes = {"ran": 0, "refused": 0, "valid, too large to run here": 0}

    @classmethod
    def tearDownClass(cls):
        print("fuzz outcomes:", cls.outcomes)  # counted in docs/hardening.md
        super().tearDownClass()

    def assertNamesAnArgument(self, error, names):
        message = getattr(error, "message", str(error))
        self.assertTrue(
            any(re.search(rf"\b{re.escape(n)}\b", message) for n in names), msg=f"error names no argument: {message}"
        )

    def check(self, name, kw):
        spec, test_module = tf_onthefly.REGISTRY[name], importlib.import_module(f"{name}_test")
        op_def = op_def_registry.get(spec.op)
        names = [a.name for a in op_def.attr] + [a.name for a in op_def.input_arg] + [a.name for a in op_def.output_arg]
        call = lambda: spec.fn(**kw)  # noqa: E731
        try:
            traced = tf.function(call).get_concrete_function().structured_outputs
        except REFUSALS as e:
            self.outcomes["refused"] += 1
            self.assertNamesAnArgument(e, names)
            with self.assertRaises(tf.errors.InvalidArgumentError, msg="refused at trace time only") as eager:
                call()
            self.assertNamesAnArgument(eager.exception, names)
            return
        out_bytes = sum(int(np.prod(t.shape)) * t.dtype.size for t in traced)
        if out_bytes > MAX_BYTES_TO_RUN:
            self.outcomes["valid, too large to run here"] += 1
            return
        try:
            outputs = call()
        except tf.errors.InvalidArgumentError as e:  # values are checked at run time only
            self.outcomes["refused"] += 1
            self.assertNamesAnArgument(e, ["first_sample"] + [a.name for a in op_def.input_arg[3:]])
            return
        self.outcomes["ran"] += 1
        for t, spec_t in zip(outputs, traced):
            self.assertEqual(t.shape.as_list(), spec_t.shape.as_list())
        test_module.output_sets(kw, outputs)


def _fuzz(name):
    strategy = arguments.calls(importlib.import_module(f"{name}_test").ARGUMENTS)

    @SETTINGS
    @hypothesis.given(kw=strategy)
    def test(self, kw):
        self.check(name, kw)

    test.__name__ = f"test_{name}"
    return test


for _name in tf_onthefly.REGISTRY:
    setattr(FuzzTest, f"test_{_name}", _fuzz(_name))


if __name__ == "__main__":
    tf.test.main()
