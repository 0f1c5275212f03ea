"""The input benchmark (`python -m tf_onthefly.bench`) with the two PTX kernel paths added as
in-step rows, next to numpy+prefetch and the built-in op: "ptx-op" (tf_onthefly.cuda_kernel
running the test kernel that reproduces random_batch's batch) and "cupy-bridge" (CuPy
launching the same kernel, handed over by tf_onthefly.interop.DeviceBridge). Both need a
GPU (the bridge also CuPy) and run without XLA only; elsewhere their rows are skipped.

    python -m benchmarks.input_bench_ptx_paths --ptx=bazel-bin/tf_ops/cuda_kernel/test_kernels.ptx \\
        --device=gpu --configs=small_mlp,wide_mlp --out=OUT    # any flag of the input benchmark
"""

import os

from absl import flags

from benchmarks import ptx_paths  # the two paths' generators
from tf_onthefly import bench

flags.DEFINE_string(
    "ptx",
    os.environ.get("OTF_TEST_PTX", "bazel-bin/tf_ops/cuda_kernel/test_kernels.ptx"),
    "the PTX of //tf_ops/cuda_kernel:test_ptx",
)


def path(name):
    """make(cfg) for bench.register_path: the path's step -> (features, labels), or None
    where it cannot run (not a features batch, no GPU or CuPy, XLA)."""

    def make(cfg):
        if cfg["jit"] or not cfg["gpu"] or len(cfg["x_shape"]) != 2:
            return None
        return ptx_paths.generators(cfg["batch"], cfg["x_shape"][1], flags.FLAGS.ptx).get(name)

    return make


def main():
    for name in ("ptx-op", "cupy-bridge"):
        bench.register_path(name, path(name), in_step=True)
    bench.main()


if __name__ == "__main__":
    main()
