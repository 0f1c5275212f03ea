"""The input benchmark (`python -m tf_onthefly.bench`) with the two Python-GPU paths added as
in-step rows, next to numpy+prefetch and the built-in op: "ptx-op" (tf_onthefly.cuda_kernel
running the test kernel that reproduces random_batch's batch) and "cupy-bridge" (CuPy
launching the same kernel, handed over by tf_onthefly.interop.DeviceBridge). Both need a
GPU (the bridge also CuPy) and run without XLA only; elsewhere their rows are skipped.

    python3 benchmarks/input_bench_interop.py --ptx=bazel-bin/tf_ops/interop/test_kernels.ptx \\
        --device=gpu --configs=seed,wide --out=OUT    # any flag of the input benchmark
"""

import os
import sys

from absl import app, flags

from tf_onthefly import bench

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import interop  # noqa: E402  (benchmarks/interop.py: the two paths' generators)

flags.DEFINE_string(
    "ptx",
    os.environ.get("OTF_TEST_PTX", "bazel-bin/tf_ops/interop/test_kernels.ptx"),
    "the PTX of //tf_ops/interop:test_ptx",
)


def path(name):
    """make(cfg) for bench.register_path: the path's step -> (features, labels), or None
    where it cannot run (not a features batch, no GPU or CuPy, XLA)."""

    def make(cfg):
        if cfg["jit"] or not cfg["gpu"] or len(cfg["x_shape"]) != 2:
            return None
        return interop.generators(cfg["batch"], cfg["x_shape"][1], flags.FLAGS.ptx).get(name)

    return make


def main(argv):
    for name in ("ptx-op", "cupy-bridge"):
        bench.register_path(name, path(name), in_step=True)
    return bench.main(argv)


if __name__ == "__main__":
    app.run(main)
