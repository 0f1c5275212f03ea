"""TensorFlow, JAX and PyTorch give the same batch, bit for bit: every golden case
(tests/goldens.py: every generator, every feature dtype, shards, a tensor input, scratch)
through each front end, each in a process of its own (tests/framework_batches.py), equal to
each other and to the golden digests. --test_device=gpu: on the GPU.

    python tests/frameworks_test.py [--test_device=cpu|gpu]
"""

import json
import os
import subprocess
import sys
import unittest

import goldens

DEVICE = "gpu" if "--test_device=gpu" in sys.argv else "cpu"
sys.argv = [a for a in sys.argv if not a.startswith("--test_device")]
SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "framework_batches.py")


def batches(framework):
    out = subprocess.run(
        [sys.executable, SCRIPT, f"--framework={framework}", f"--device={DEVICE}"],
        capture_output=True,
        text=True,
        timeout=900,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"),
    )
    if out.returncode != 0:
        raise AssertionError(f"{framework} on {DEVICE} failed:\n{out.stderr[-4000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


class FrameworksTest(unittest.TestCase):
    def test_the_same_batches_in_every_framework(self):
        got = {framework: batches(framework) for framework in ("tensorflow", "jax", "torch")}
        for name in goldens.CASES:
            with self.subTest(case=name):
                digests = {framework: d[name] for framework, d in got.items()}
                self.assertEqual(set(digests.values()), {goldens.DIGESTS[name]}, digests)
        print(f"{len(goldens.CASES)} cases, {DEVICE}: TensorFlow == JAX == PyTorch == golden")


class SignatureTest(unittest.TestCase):
    """The JAX and PyTorch functions are generated from the op specs in the core; their
    arguments, kinds and defaults must be the TensorFlow wrappers' (python/tf_onthefly/<name>.py),
    or _frontend.ADJUSTMENTS must say how a wrapper differs from its spec."""

    def test_the_tensorflow_wrappers_signatures(self):
        import inspect

        import tensorflow as tf

        import tf_onthefly
        from tf_onthefly import _frontend, _load

        P = inspect.Parameter
        common = [
            ("first_sample", P.KEYWORD_ONLY, 0),
            ("num_samples", P.KEYWORD_ONLY, None),
            ("name", P.KEYWORD_ONLY, None),
        ]

        def normal(signature):
            params = []
            for p in signature.parameters.values():
                if p.kind == P.VAR_KEYWORD:  # **common: the SDK's keyword arguments
                    params += common
                else:
                    params.append((p.name, p.kind, p.default.name if isinstance(p.default, tf.DType) else p.default))
            return params

        specs = _frontend.specs(_load.core)
        for name, fn in tf_onthefly.GENERATORS.items():
            with self.subTest(generator=name):
                self.assertEqual(normal(specs[name].signature()), normal(inspect.signature(fn)))


if __name__ == "__main__":
    unittest.main()
