"""The installed wheel's smoke test, run in a fresh environment (tests/wheel_smoke.sh on the
CPU in CI, with TensorFlow's standard build and with tensorflow-cpu;
`tools/testing/gpu_run.py ... smoke` on a GPU host): the op library for the running TensorFlow loads,
every registered generator runs on every device and gives its golden outputs (a digest of
its first example's outputs, the same on every device and with either TensorFlow build),
the golden row is bit-exact, model.fit trains on the GPU-native path, and XLA compiles the
ops where the library has XLA kernels (and jit_compile=True is refused clearly where not).

    python tests/wheel_smoke.py [--any-location]
    python tests/wheel_smoke.py --print-digests   # after a deliberate change of outputs
"""

import hashlib
import sys

import numpy as np
import tensorflow as tf

import tf_onthefly
from tf_onthefly import _load, data
from tf_onthefly.bench import models

GOLDEN = np.array([0.30296677, 0.31367546, 0.20855665, 0.18873435, 0.19950825, 0.76777154], np.float32)
# sha256 of every output (dtype, shape, bytes) of each generator's first example at seed 1,
# step 0 (REGISTRY[name].examples[0]), from the CPU kernels the repository's tests check
# against the NumPy reference. A generator added or its outputs changed on purpose (a
# counter contract change: docs/counter-contract.md): --print-digests.
GOLDEN_DIGESTS = {
    "drift_walk": "67ca5b8cafdc626d72a95d5c721764995e2d187de2c7fe25256a63bcd87852d7",
    "procedural_shapes": "ffdc7ac7896d86e0260966a3df9b6262677d60b73ee79490e92babbb9a162e60",
    "random_batch": "193e10b95031ad807d7e1cac12e33a131514621f6ce4d6e9fc3cc53ab8ffe26f",
    "random_walk": "aee56c4f5ca66cae97821a32f4a0d3264d9846cb2afa5aecd6ad63260a8e3d08",
    "tabular_mixture": "7da473a1f64bb908bc33657dab9ffe6d2f214ef68fad04804861e0d6a1a3b18e",
    "teacher_task": "b2de1b1ea26f4091c6d16ba95ca9611d970e78333e77d9bc1e959830c76a79d7",
}


def digest(outs) -> str:
    h = hashlib.sha256()
    for o in outs:
        a = o.numpy()
        h.update(f"{a.dtype.name}{a.shape}".encode())
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


def example_outputs(spec):
    return spec.fn(**spec.examples[0], seed=1, step=0)


def main():
    if "--print-digests" in sys.argv:
        with tf.device("/CPU:0"):
            for name, spec in sorted(tf_onthefly.REGISTRY.items()):
                print(f'    "{name}": "{digest(example_outputs(spec))}",')
        return
    assert "site-packages" in tf_onthefly.__file__ or "--any-location" in sys.argv, tf_onthefly.__file__
    missing = sorted(set(tf_onthefly.REGISTRY) - set(GOLDEN_DIGESTS))
    assert not missing, f"no golden digest for {missing}: tests/wheel_smoke.py --print-digests"
    devices = ["CPU"] + (["GPU"] if tf.config.list_physical_devices("GPU") else [])
    print(
        f"TensorFlow {tf.__version__}: op library {_load.VARIANT['library'].split('/')[-1]}, "
        f"XLA kernels {_load.HAS_XLA}, devices {devices}"
    )
    for device in devices:
        with tf.device(f"/{device}:0"):
            f, _ = tf_onthefly.random_batch(4, 6, seed=[1, 2], step=3)
            assert np.array_equal(f.numpy()[0], GOLDEN), f.numpy()[0]
            assert device in f.device, f.device
            for name, spec in sorted(tf_onthefly.REGISTRY.items()):
                outs = example_outputs(spec)
                assert all(device in o.device for o in outs), (name, [o.device for o in outs])
                got = digest(outs)
                assert got == GOLDEN_DIGESTS[name], f"{device} {name}: outputs differ from the golden ones ({got})"
                print(f"  {device} {name}: {[tuple(o.shape) for o in outs]}, golden outputs")
            model = data.GeneratorModel(
                models.mlp(16, 4, hidden=(8,)), lambda step: tf_onthefly.teacher_task(32, 16, seed=1, step=step)
            )
            model.compile(
                optimizer="adam",
                loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                steps_per_execution=2,
            )  # jit_compile "auto": XLA on a GPU where the library has it
            model.fit(data.device_dataset(), epochs=1, steps_per_epoch=4, verbose=0)
            assert int(model.data_step.numpy()) == 4
            if _load.HAS_XLA:
                # step as an argument: with constant inputs TensorFlow folds the op away before
                # XLA sees it, and the handler would never run.
                xla = tf.function(lambda s: tf_onthefly.random_batch(4, 6, seed=[1, 2], step=s)[0], jit_compile=True)(
                    tf.constant(3, tf.int64)
                )
                assert np.array_equal(xla.numpy()[0], GOLDEN)
                print(f"  {device} XLA: golden row bit-exact under jit_compile")
            else:
                try:
                    model.compile(optimizer="adam", loss="mse", jit_compile=True)
                    raise AssertionError("jit_compile=True accepted without XLA kernels")
                except ValueError as e:
                    assert "no XLA kernels" in str(e), e
                print(f"  {device} XLA: not in this op library; jit_compile=True refused: ok")
    print("wheel smoke: OK")


if __name__ == "__main__":
    main()
