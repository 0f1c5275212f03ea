"""The input benchmark (`python -m tf_onthefly.bench`) with the two PTX kernel paths added as
in-step rows, next to numpy+prefetch and the built-in op: "ptx-op" (tf_onthefly.cuda_kernel
running the test kernel that reproduces random_batch's batch) and "cupy-bridge" (CuPy
launching the same kernel, handed over by tf_onthefly.interop.DeviceBridge). Both need a
GPU (the bridge also CuPy); the PTX op runs with and without XLA (its custom call), the
bridge without XLA only (its op takes batches from Python); elsewhere their rows are
skipped. After the table, one TARGET line per setting: the ptx-op row's steps/s over
op-in-step's (the built-in op making the same batch; target >= 0.95 at fit64 with XLA).

    python -m benchmarks.input_bench_ptx_paths --ptx=bazel-bin/tf_ops/cuda_kernel/test_kernels.ptx \\
        --device=gpu --configs=small_mlp,wide_mlp --modes=fit64 --jit=off,on --out=OUT
                                                        # any flag of the input benchmark
"""

import json
import os

import numpy as np
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
    where it cannot run (not a features batch, no GPU or CuPy, the bridge under XLA)."""

    def make(cfg):
        if (cfg["jit"] and name != "ptx-op") or not cfg["gpu"] or len(cfg["x_shape"]) != 2:
            return None
        return ptx_paths.generators(cfg["batch"], cfg["x_shape"][1], flags.FLAGS.ptx).get(name)

    return make


def ptx_op_ratios(table):
    """One line per setting (config, mode, XLA) where both ran: the ptx-op row's steps/s
    over op-in-step's (the built-in op making the same batch), the rounds' ratios' median and
    [min, max] (target: >= 0.95)."""
    rows = {(r["config"], r["mode"], r["jit"], r["path"]): r for r in table}
    lines = []
    for (config, mode, jit, name), row in rows.items():
        builtin = rows.get((config, mode, jit, "op-in-step"))
        if name != "ptx-op" or builtin is None:
            continue
        ratios = sorted(a / b for a, b in zip(row["rounds"], builtin["rounds"]))
        median = float(np.median(ratios))
        lines.append(
            f"TARGET input bench {config} {mode} jit {'on' if jit else 'off'} ptx-op / op-in-step steps/s: "
            f"{median:.3f} (rounds {ratios[0]:.3f}..{ratios[-1]:.3f}); target >= 0.95: "
            f"{'met' if median >= 0.95 else 'MISSED'}"
        )
    return lines


def main():
    for name in ("ptx-op", "cupy-bridge"):
        bench.register_path(name, path(name), in_step=True)
    try:
        bench.main()
    except SystemExit as done:
        # The ptx-op rows against the built-in op, from the table the run wrote.
        results = os.path.join(flags.FLAGS.out, "bench.json")
        if os.path.exists(results):
            with open(results) as f:
                print("\n".join(ptx_op_ratios(json.load(f)["results"])), flush=True)
        raise done


if __name__ == "__main__":
    main()
