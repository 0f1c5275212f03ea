"""tf_onthefly.keras: GeneratorModel trains Keras 3 models on the same batches under
KERAS_BACKEND=tensorflow, jax and torch, the generator inside the compiled train step
(jit_compile=True: XLA, jax.jit, torch.compile). Each backend in a process of its own fits
a model whose loss is a known function of the batch (a fixed linear map, learning rate 0)
for three epochs of one step from step 5: the three losses must be those of steps 5, 6 and
7 of the generator, as NumPy computes them from the core's batches; evaluate() too.

    python tests/keras_test.py [--test_device=cpu|gpu]
"""

import importlib.util
import json
import os
import subprocess
import sys
import unittest

import numpy as np

DEVICE = "gpu" if "--test_device=gpu" in sys.argv else "cpu"
sys.argv = [a for a in sys.argv if not a.startswith("--test_device")]

FIT = r"""
import json, sys
import keras
from tf_onthefly import keras as otf_keras

gen = otf_keras.generators()["random_batch"]
inner = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1, kernel_initializer="ones", use_bias=False)])
model = otf_keras.GeneratorModel(
    inner, lambda step: gen(8, 4, seed=3, step=step), eval_generator=lambda step: gen(8, 4, seed=4, step=step)
)
model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.0), loss="mse", jit_compile=True)
history = model.fit(otf_keras.steps(5), steps_per_epoch=1, epochs=3, verbose=0)
evaluated = model.evaluate(otf_keras.steps(2), steps=1, verbose=0)
print(json.dumps(dict(fit=history.history["loss"], evaluate=evaluated)))
"""


def core():
    """The package's core through _core.py, loaded by path (no framework imported here)."""
    import tf_onthefly

    path = os.path.join(os.path.dirname(tf_onthefly.__file__), "_core.py")
    spec = importlib.util.spec_from_file_location("otf_core", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.Core(os.path.join(os.path.dirname(path), module.LIBRARY))


def loss(seed, step):
    x, y = core().configure("OnTheFly>RandomBatch", batch_size=8, feature_dim=4).run_cpu(seed, step)
    return float(np.mean((x.astype(np.float64).sum(1, keepdims=True) - y) ** 2))


class KerasTest(unittest.TestCase):
    def test_every_backend_trains_on_the_generators_batches(self):
        want = dict(fit=[loss(3, s) for s in (5, 6, 7)], evaluate=loss(4, 2))
        for backend in ("tensorflow", "jax", "torch"):
            with self.subTest(backend=backend):
                env = dict(os.environ, KERAS_BACKEND=backend, TF_CPP_MIN_LOG_LEVEL="2")
                if DEVICE == "cpu":
                    env.update(CUDA_VISIBLE_DEVICES="", JAX_PLATFORMS="cpu")
                out = subprocess.run([sys.executable, "-c", FIT], capture_output=True, text=True, timeout=900, env=env)
                self.assertEqual(out.returncode, 0, out.stderr[-4000:])
                got = json.loads(out.stdout.strip().splitlines()[-1])
                np.testing.assert_allclose(got["fit"], want["fit"], rtol=1e-5, err_msg=backend)
                np.testing.assert_allclose(got["evaluate"], want["evaluate"], rtol=1e-5, err_msg=backend)
                print(f"{backend}: losses of steps 5, 6, 7 {got['fit']}, evaluate {got['evaluate']}")


if __name__ == "__main__":
    unittest.main()
