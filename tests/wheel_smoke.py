"""The installed wheel's smoke test, run in a fresh environment (tests/wheel_smoke.sh on the
CPU in CI, with TensorFlow's standard build and with tensorflow-cpu;
`tools/testing/gpu_run.py ... smoke` on a GPU host): the op library for the running TensorFlow loads,
every registered generator runs on every device and gives its golden outputs (the digests of
tests/goldens.py, the same on every device, with either TensorFlow build and in JAX and PyTorch),
the golden row is bit-exact, model.fit trains on the GPU-native path, and XLA compiles the
ops where the library has XLA kernels (and jit_compile=True is refused clearly where not).

    python tests/wheel_smoke.py [--any-location]

The golden cases and digests: tests/goldens.py (one set for every front end).
"""

import sys

import goldens  # noqa: E402
import numpy as np
import tensorflow as tf

import tf_onthefly
from tf_onthefly import _load, data
from tf_onthefly.bench import models

GOLDEN = np.array([0.30296677, 0.31367546, 0.20855665, 0.18873435, 0.19950825, 0.76777154], np.float32)


def outputs(case):
    """A golden case's outputs (tests/goldens.py) through the TensorFlow wrapper."""
    generator, args, seed, step = case
    return tf_onthefly.GENERATORS[generator](**args, seed=seed, step=step)


def digest(outs) -> str:
    return goldens.digest(
        [(o.numpy().dtype.name, tuple(o.shape), np.ascontiguousarray(o.numpy()).tobytes()) for o in outs]
    )


def main():
    assert "site-packages" in tf_onthefly.__file__ or "--any-location" in sys.argv, tf_onthefly.__file__
    missing = sorted(set(tf_onthefly.REGISTRY) - {generator for generator, *_ in goldens.CASES.values()})
    assert not missing, f"no golden case for {missing}: tests/goldens.py"
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
            for name, case in goldens.CASES.items():
                outs = outputs(case)
                assert all(device in o.device for o in outs), (name, [o.device for o in outs])
                got = digest(outs)
                assert got == goldens.DIGESTS[name], f"{device} {name}: outputs differ from the golden ones ({got})"
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
