"""Every GPU kernel once, on shapes that exercise tails and ragged rows, for
compute-sanitizer (memcheck / racecheck) on the lent GPU:

    compute-sanitizer --tool memcheck python3 tests/gpu_sanitizer_smoke.py

Exits non-zero if TensorFlow sees no GPU. Small sizes: the sanitizer slows kernels ~100x.
"""
import sys

import tensorflow as tf

import tf_onthefly


def main():
    if not tf.config.list_physical_devices("GPU"):
        print("no GPU visible"); return 1
    with tf.device("/GPU:0"):
        calls = [
            lambda: tf_onthefly.random_batch(257, 13, seed=1, step=2),
            lambda: tf_onthefly.random_batch(256, 64, seed=1, step=2, distribution="normal"),
            # 37 features = 10 items: 4 per thread (ItemsPerThread) with a ragged last group.
            lambda: tf_onthefly.random_batch(129, 37, seed=1, step=2, low=-1.0, high=2.0),
            lambda: tf_onthefly.random_batch(100, 7, seed=1, step=2, first_sample=50, num_samples=33,
                                             label_mode="classes", num_classes=9, label_dtype=tf.int64),
            lambda: tf_onthefly.teacher_task(300, 17, seed=1, step=2, num_classes=5, noise=0.1),
            lambda: tf_onthefly.teacher_task(64, 8, seed=1, step=2, task="regression", noise=0.3),
            lambda: tf_onthefly.procedural_shapes(9, 21, 35, seed=1, step=2, return_boxes=True),
            lambda: tf_onthefly.procedural_shapes(5, 16, 16, seed=1, step=2, channels=1, dtype=tf.float32),
            lambda: tf_onthefly.random_walk(33, 300, seed=1, step=2),
            lambda: tf_onthefly.random_batch(8, 4, seed=1, step=2, num_samples=0),
        ]
        for i, call in enumerate(calls):
            outs = call()
            print(i, [tuple(o.shape) for o in outs], [o.device.split("/")[-1] for o in outs][:1])
            assert all("GPU" in o.device for o in outs)
    print("sanitizer smoke: all kernels ran")
    return 0


if __name__ == "__main__":
    sys.exit(main())
