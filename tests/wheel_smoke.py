"""The installed wheel's smoke test, run in a fresh environment (tests/wheel_smoke.sh on the
CPU in CI; `tools/testing/gpu_run.py ... smoke` on a GPU host): the op library
for the running TensorFlow loads, every registered generator runs on every device, the
golden row is bit-exact, model.fit trains on the GPU-native path, and XLA compiles the ops
where the library has XLA kernels (and jit_compile=True is refused clearly where not)."""

import sys

import numpy as np
import tensorflow as tf

import tf_onthefly
from tf_onthefly import _load, data, models

GOLDEN = np.array([0.30296677, 0.31367546, 0.20855665, 0.18873435, 0.19950825, 0.76777154], np.float32)


def main():
    assert "site-packages" in tf_onthefly.__file__ or "--any-location" in sys.argv, tf_onthefly.__file__
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
                outs = spec.fn(**spec.examples[0], seed=1, step=0)
                print(f"  {device} {name}: {[tuple(o.shape) for o in outs]}")
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
                xla = tf.function(lambda: tf_onthefly.random_batch(4, 6, seed=[1, 2], step=3)[0], jit_compile=True)()
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
