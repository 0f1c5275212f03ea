"""Every GPU kernel of every registered generator once per example (the examples cover
tails, ragged rows, shards and empty shards), as TF kernels and under XLA, for
compute-sanitizer (memcheck / racecheck) on a GPU host
(`tools/testing/gpu_run.py ... sanitize` runs both):

    compute-sanitizer --tool memcheck python3 tests/gpu_sanitizer_smoke.py

Exits non-zero if TensorFlow sees no GPU. Small sizes: the sanitizer slows kernels ~100x.
"""

import sys

import tensorflow as tf

import tf_onthefly


def main():
    if not tf.config.list_physical_devices("GPU"):
        print("no GPU visible")
        return 1
    with tf.device("/GPU:0"):
        for name, spec in tf_onthefly.REGISTRY.items():
            for example in spec.examples:
                for jit in (False, True):
                    outs = tf.function(lambda: spec.fn(**example, seed=1, step=2), jit_compile=jit)()
                    print(name, "xla" if jit else "tf", example, [tuple(o.shape) for o in outs])
                    assert all("GPU" in o.device for o in outs), [o.device for o in outs]
    print("sanitizer smoke: all kernels ran")
    return 0


if __name__ == "__main__":
    sys.exit(main())
