"""One PTX kernel run four ways: the PTX op and the device-array bridge against the built-in
op and CuPy (run on a GPU; docs/interop.md).

    python -m benchmarks.ptx_paths --ptx bazel-bin/tf_ops/cuda_kernel/test_kernels.ptx [--out FILE.json]

One kernel, random_batch's default batch bit for bit (uniform [0, 1) float32 features,
Bernoulli labels; tf_ops/cuda_kernel/test_kernels.cu, otf_uniform_batch), produced four ways
side by side in one process:
  builtin      tf_onthefly.random_batch, the built-in op;
  ptx-op       the PTX through tf_onthefly.cuda_kernel (OnTheFly>CudaKernel);
  cupy         CuPy launching the same PTX (cupy.RawModule), outside TensorFlow;
  cupy-bridge  CuPy launching it, handed to TensorFlow by tf_onthefly.interop.DeviceBridge.
Parts:
  rate       1 GiB of features per call, K calls unrolled in a tf.function, the paths
             interleaved in rounds (target: ptx-op >= 0.95x cupy, per round's ratio), the
             PTX op also in a graph loop of 4K calls and by its kernel's GPU time in a trace;
  step_cost  per step of a graph loop at a tiny batch (32 x 16), where launching is all
             there is, interleaved in rounds (target: ptx-op within 5 us of builtin, the
             rounds' paired differences);
  wide       64 MiB batches (65,536 x 256) consumed by a reduction in a tf.function loop:
             steps/s of cupy-bridge and ptx-op against numpy+prefetch (from_python), the
             simple path (target: bridge >= 2x numpy+prefetch);
  copies     host-to-device copies per step of the same loops in a profiler trace, with the
             copies' GPU time as a bound on their bytes where the trace has no sizes
             (target: none for ptx-op and cupy-bridge; numpy+prefetch is the control).
  trace      the GPU's events for a graph loop of the PTX op and of the built-in op at
             1 GiB: whether the host runs ahead of the GPU (no idle gap before a kernel).
--smoke runs every part at toy sizes on any device (host arrays for the bridge, no PTX
launch without a GPU), to keep the script working where there is no GPU.

`generators(batch, feature_dim, ptx)` gives the step -> (features, labels) functions of the
new paths ("ptx-op", and "cupy-bridge" where CuPy is installed) for the input benchmark.
"""

import argparse
import gc
import json
import os
import sys
import time

# TensorFlow must leave GPU memory to the other library in the process (docs/interop.md).
os.environ.setdefault("TF_FORCE_GPU_ALLOW_GROWTH", "true")
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import numpy as np
import tensorflow as tf

import tf_onthefly
from benchmarks import loops
from benchmarks.op_timeline import events as trace_events
from benchmarks.op_timeline import gpu_kernels, kernel_ms, traced
from tf_onthefly import cuda_kernel, data
from tf_onthefly.bench import timing
from tf_onthefly.interop import DeviceBridge

ENTRY = "otf_uniform_batch"
P = 0.5
SEED = 1


def _gpu() -> bool:
    return bool(tf.config.list_logical_devices("GPU"))


def _cupy():
    try:
        import cupy

        return cupy if cupy.cuda.runtime.getDeviceCount() > 0 else None
    except Exception:  # noqa: BLE001 - absent, or no GPU for it
        return None


def ptx_op(batch, feature_dim, ptx):
    """step -> (features, labels) by OnTheFly>CudaKernel."""

    def gen(step):
        return tuple(
            cuda_kernel(
                ptx,
                ENTRY,
                batch_size=batch,
                seed=SEED,
                step=step,
                items_per_thread=4,
                outputs=[((feature_dim,), tf.float32), ((1,), tf.float32)],
                int_scalars=[feature_dim],
                float_scalars=[P],
            )
        )

    return gen


class CupyLauncher:
    """CuPy launching the PTX (cupy.RawModule loads it with cuModuleLoad)."""

    def __init__(self, cupy, ptx_path, batch, feature_dim):
        self.cp, self.batch, self.dim = cupy, batch, feature_dim
        self.kernel = cupy.RawModule(path=ptx_path).get_function(ENTRY)
        self.seed = cupy.array([SEED], cupy.int64)
        threads = (batch * feature_dim + 3) // 4
        self.grid, self.block = ((threads + 255) // 256,), (256,)

    def __call__(self, step):
        cp = self.cp
        step_arr = cp.full((1,), step, cp.int64)  # filled by a kernel: no host-to-device copy
        features = cp.empty((self.batch, self.dim), cp.float32)
        labels = cp.empty((self.batch, 1), cp.float32)
        self.kernel(
            self.grid,
            self.block,
            (
                self.seed,
                np.int64(1),
                step_arr,
                np.int64(0),
                np.int64(self.batch),
                np.int64(self.batch),
                np.int64(self.dim),
                np.float32(P),
                features,
                labels,
            ),
        )
        return features, labels


def _signature(batch, feature_dim):
    return (tf.TensorSpec([batch, feature_dim], tf.float32), tf.TensorSpec([batch, 1], tf.float32))


def cupy_bridge(batch, feature_dim, ptx_path, sync="device"):
    """step -> (features, labels): CuPy launching the PTX, through the bridge."""
    cupy = _cupy()
    if cupy is None:
        return None
    launcher = CupyLauncher(cupy, ptx_path, batch, feature_dim)
    return DeviceBridge(launcher, _signature(batch, feature_dim), sync=sync)


def _host_bridge(batch, feature_dim):
    rng = np.random.default_rng(0)
    return DeviceBridge(
        lambda step: (
            rng.random((batch, feature_dim), dtype=np.float32),
            (rng.random((batch, 1)) < P).astype(np.float32),
        ),
        _signature(batch, feature_dim),
    )


def generators(batch, feature_dim, ptx):
    """name -> step -> (features, labels), for the input benchmark's in-step paths:
    "ptx-op" (GPU only) and "cupy-bridge" (GPU and CuPy; compile the model with
    jit_compile=False: the bridge is a tf.py_function). `ptx` is the path of the PTX file
    built by //tf_ops/cuda_kernel:test_ptx."""
    with open(ptx) as f:
        text = f.read()
    gens = {}
    if _gpu():
        gens["ptx-op"] = ptx_op(batch, feature_dim, text)
    bridge = cupy_bridge(batch, feature_dim, ptx)
    if bridge is not None:
        gens["cupy-bridge"] = bridge
    return gens


def _paths(batch, dim, ptx_path, ptx_text, gpu):
    """name -> step -> (features, labels) of the built-in op, the PTX op (GPU) and the
    bridge (CuPy on a GPU, host arrays elsewhere), and the bridge (None without CuPy)."""
    paths = {"builtin": lambda s: tf_onthefly.random_batch(batch, dim, seed=SEED, step=s, p=P)}
    if gpu:
        paths["ptx-op"] = ptx_op(batch, dim, ptx_text)
    bridge = cupy_bridge(batch, dim, ptx_path) if gpu else _host_bridge(batch, dim)
    if bridge is not None:
        paths["cupy-bridge" if gpu else "host-bridge"] = bridge
    return paths, bridge


def part_rate(args, ptx_text):
    """Milliseconds per call at `--rate-mib` of features, the paths interleaved in rounds,
    and the PTX op's rate against CuPy's per round (median and spread)."""
    dim = 256
    batch = args.rate_mib * (1 << 20) // (4 * dim)
    calls, loop_calls = args.calls, 4 * args.calls
    gpu = _gpu()
    paths, _ = _paths(batch, dim, args.ptx, ptx_text, gpu)
    # The bridge's rate is part "wide"'s: at 1 GiB, interleaved with the other paths, CuPy's
    # memory pool and TensorFlow's allocator take turns at the GPU's memory.
    paths = {name: gen for name, gen in paths.items() if "bridge" not in name}
    device = "/GPU:0" if gpu else None
    result = {"bytes": batch * dim * 4, "batch": batch, "feature_dim": dim, "calls": calls, "rounds": args.rounds}
    timed = {name: (loops.unrolled(gen, calls, device), calls) for name, gen in paths.items()}
    if "ptx-op" in paths:
        # A training loop's steady state: the function's dispatch and sync paid once for
        # four times as many calls, as a graph loop of steps pays them.
        timed["ptx-op loop"] = (loops.graph_loop(paths["ptx-op"], loop_calls, device), loop_calls)
    cupy = _cupy() if gpu else None
    if cupy is not None:
        launch = CupyLauncher(cupy, args.ptx, batch, dim)
        stream = cupy.cuda.get_current_stream()

        def run_cupy():
            for i in range(calls):
                launch(i)

        timed["cupy"] = (run_cupy, calls, lambda _: stream.synchronize())
    t = loops.timed_rounds(timed, args.rounds, 3)
    result.update(loops.summaries(t, "ms", 1e3))
    for name in t:
        result[name]["TB/s"] = result["bytes"] / result[name]["ms"] / 1e9
    if "cupy" in t:
        for name in ("ptx-op", "ptx-op loop"):
            r = loops.ratio(t["cupy"], t[name])
            result[f"{name} / cupy rate"] = {"median": r["median"], "spread": r["spread"]}
        # The op's kernel GPU time per call, from a trace of one unrolled call (TensorFlow's
        # trace does not hold CuPy's launches: CuPy's side is its wall time per launch).
        result["ptx-op"]["kernel_ms"] = kernel_ms(timed["ptx-op"][0], ENTRY, calls)
    return result


def part_step_cost(args, ptx_text):
    """Microseconds per step of a graph loop at a tiny batch, where launching is all there
    is: the built-in op, the PTX op and an empty step interleaved in rounds (the PTX op's
    difference from the built-in per round); then the bridge, at a tenth of the steps (a
    host wait and Python each step)."""
    batch, dim, steps = 32, 16, args.loop_steps
    gpu = _gpu()
    paths, bridge = _paths(batch, dim, args.ptx, ptx_text, gpu)
    bridges = {name: paths.pop(name) for name in ("cupy-bridge", "host-bridge") if name in paths}
    if gpu and bridge is not None:
        # What the bridge's wait costs: the same bridge waiting only for CuPy's current
        # stream (where CupyLauncher launches), and not at all (unsafe; for the difference).
        bridges["cupy-bridge sync=stream"] = cupy_bridge(batch, dim, args.ptx, sync="stream")
        bridges["cupy-bridge no wait (unsafe)"] = cupy_bridge(batch, dim, args.ptx, sync=lambda a: None)
    paths["empty"] = lambda s: (tf.zeros([batch, dim]) + tf.cast(s, tf.float32),)
    result = {"batch": batch, "feature_dim": dim, "steps": steps, "rounds": args.rounds}
    runs = {name: loops.graph_loop(gen, steps, "/GPU:0" if gpu else None) for name, gen in paths.items()}
    t = loops.timed_rounds({name: (run, steps) for name, run in runs.items()}, args.rounds, 3)
    result.update(loops.summaries(t, "us_per_step", 1e6))
    if "ptx-op" in t:
        result["ptx-op - builtin us"] = loops.difference_us(t["ptx-op"], t["builtin"])
    bridge_steps = max(1, steps // 10)
    runs = {name: loops.graph_loop(gen, bridge_steps) for name, gen in bridges.items()}
    t = loops.timed_rounds({name: (run, bridge_steps) for name, run in runs.items()}, min(args.rounds, 3), 3)
    result.update(loops.summaries(t, "us_per_step", 1e6, steps=bridge_steps))
    return result


def part_wide(args, ptx_text):
    """Steps/s with 64 MiB batches, each consumed by a reduction on the step's device."""
    batch, dim, steps = args.wide_batch, 256, args.wide_steps
    gpu = _gpu()
    result = {"batch": batch, "feature_dim": dim, "MiB": batch * dim * 4 / 2**20, "steps": steps}

    def consume(x, y):
        return tf.reduce_sum(x[:, :8]) + tf.reduce_sum(y)

    in_step = {}
    if gpu:
        in_step["ptx-op"] = ptx_op(batch, dim, ptx_text)
    bridge = cupy_bridge(batch, dim, args.ptx) if gpu else _host_bridge(batch, dim)
    if bridge is not None:
        in_step["cupy-bridge" if gpu else "host-bridge"] = bridge
    in_step["builtin"] = lambda s: tf_onthefly.random_batch(batch, dim, seed=SEED, step=s, p=P)
    for name, gen in in_step.items():

        @tf.function
        def loop(first, gen=gen):
            acc = tf.constant(0.0)
            for i in tf.range(first, first + steps):
                acc += consume(*gen(i))
            return acc

        times = timing.call_times(
            lambda: loop(tf.constant(0, tf.int64)), args.rounds, warmup=1, sync=lambda r: r.numpy()
        )
        result[name] = {"steps_per_s": steps / timing.summary(times)["median"]}

    rng = np.random.default_rng(0)

    def numpy_batches():
        while True:
            yield (rng.random((batch, dim), dtype=np.float32), (rng.random((batch, 1)) < P).astype(np.float32))

    ds = data.from_python(numpy_batches, _signature(batch, dim), prefetch=True)
    it = iter(ds)

    @tf.function
    def numpy_loop():
        acc = tf.constant(0.0)
        for _ in tf.range(steps):
            acc += consume(*next(it))
        return acc

    # NumPy makes ~0.3 GB/s on one core: a few rounds are minutes already.
    times = timing.call_times(numpy_loop, min(args.rounds, 3), warmup=1, sync=lambda r: r.numpy())
    result["numpy+prefetch"] = {"steps_per_s": steps / timing.summary(times)["median"]}
    if "cupy-bridge" in result:
        result["cupy-bridge / numpy+prefetch"] = (
            result["cupy-bridge"]["steps_per_s"] / result["numpy+prefetch"]["steps_per_s"]
        )
    return result


def part_copies(args, ptx_text):
    """Host-to-device copies per step of each new path in a graph loop (64 MiB batches), from
    a TensorFlow profiler trace of the GPU (CUPTI's memcpy events; benchmarks/no_copy_profile.py
    counts them), next to numpy+prefetch, whose every batch crosses (the control)."""
    if not _gpu():
        return {"skipped": "no GPU"}
    import importlib.util
    import tempfile

    here = os.path.dirname(os.path.abspath(__file__))
    spec = importlib.util.spec_from_file_location("no_copy", os.path.join(here, "no_copy_profile.py"))
    no_copy = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(no_copy)
    batch, dim, steps = args.wide_batch, 256, 10
    result = {"batch": batch, "MiB": batch * dim * 4 / 2**20, "steps": steps}
    paths = {"ptx-op": ptx_op(batch, dim, ptx_text)}
    bridge = cupy_bridge(batch, dim, args.ptx)
    if bridge is not None:
        paths["cupy-bridge"] = bridge
    rng = np.random.default_rng(0)

    def numpy_batches():
        while True:
            yield (rng.random((batch, dim), dtype=np.float32), (rng.random((batch, 1)) < P).astype(np.float32))

    it = iter(data.from_python(numpy_batches, _signature(batch, dim), prefetch=True))
    paths["numpy+prefetch"] = lambda s: next(it)
    for name, gen in paths.items():

        @tf.function
        def loop(first, gen=gen):
            acc = tf.constant(0.0)
            for i in tf.range(first, first + steps):
                x, y = gen(i)
                acc += tf.reduce_sum(x[:, :8]) + tf.reduce_sum(y)
            return acc

        loop(tf.constant(0, tf.int64)).numpy()  # trace and warm up outside the profile
        logdir = tempfile.mkdtemp(prefix="interop_copies_")
        tf.profiler.experimental.start(logdir)
        loop(tf.constant(steps, tf.int64)).numpy()
        tf.profiler.experimental.stop()
        events, nbytes, largest = no_copy.count_copies(logdir)
        # Where the trace gives no sizes, the copies' GPU time bounds them: a copy of B
        # bytes takes at least B / 64 GB/s (PCIe 5.0 x16) on the copy engine.
        htod_us = sum(d for n, _, d in gpu_kernels(trace_events(logdir)) if "HtoD" in n or "H2D" in n) / 1e6
        result[name] = {
            "HtoD_events_per_step": events / steps,
            "HtoD_bytes_per_step": None if nbytes is None else nbytes / steps,
            "HtoD_us_per_step": htod_us / steps,
            "HtoD_bytes_per_step_at_most": htod_us * 64e3 / steps,
            "largest": [list(map(str, row)) for row in largest[:3]],
        }
    return result


def part_trace(args, ptx_text):
    """The GPU's events for a graph loop of 8 calls at `--rate-mib`, the PTX op and the
    built-in op: GPU time idle a call, and the idle gap before each generator kernel. A
    loop whose host runs ahead of the GPU launches each kernel right after the last one; a
    loop that waits on the GPU every step shows a gap before each (as the PTX op did while
    it was a stateful op)."""
    if not _gpu():
        return {"skipped": "no GPU"}
    dim, calls = 256, 8
    batch = args.rate_mib * (1 << 20) // (4 * dim)
    paths, _ = _paths(batch, dim, args.ptx, ptx_text, True)
    result = {"batch": batch, "feature_dim": dim, "calls": calls}
    for name, match in (("ptx-op", ENTRY), ("builtin", "GeneratorKernel")):
        run = loops.graph_loop(paths[name], calls, "/GPU:0")
        run().numpy()
        events = gpu_kernels(traced(run)[1])
        if not events:
            return {"skipped": "no device events: TensorFlow could not load CUPTI"}
        gaps, end, busy = [], events[0][1], 0
        for event, start, duration in events:
            if match in event:
                gaps.append(round(max(0, start - end) / 1e6, 1))
            end, busy = max(end, start + duration), busy + duration
        span = end - events[0][1]
        result[name] = {"idle_us_per_call": (span - busy) / 1e6 / calls, "gap_before_each_kernel_us": gaps}
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--ptx",
        default=os.environ.get("OTF_TEST_PTX", "bazel-bin/tf_ops/cuda_kernel/test_kernels.ptx"),
        help="the PTX of //tf_ops/cuda_kernel:test_ptx",
    )
    parser.add_argument("--out", help="write the results here as JSON")
    parser.add_argument("--smoke", action="store_true", help="toy sizes, any device")
    parser.add_argument("--parts", default="rate,step_cost,wide,copies,trace")
    parser.add_argument("--rounds", type=int, default=11)
    args = parser.parse_args(argv)
    if args.smoke:
        args.rate_mib, args.calls, args.loop_steps, args.wide_batch, args.wide_steps, args.rounds = 1, 2, 20, 256, 3, 3
    else:
        args.rate_mib, args.calls, args.loop_steps, args.wide_batch, args.wide_steps = 1024, 10, 2000, 65536, 20
    with open(args.ptx) as f:
        ptx_text = f.read()
    results = {
        "device": tf.config.list_logical_devices("GPU")[0].name if _gpu() else "CPU",
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "tf": tf.__version__,
        "smoke": args.smoke,
    }
    for part in args.parts.split(","):
        results[part] = {
            "rate": part_rate,
            "step_cost": part_step_cost,
            "wide": part_wide,
            "copies": part_copies,
            "trace": part_trace,
        }[part](args, ptx_text)
        print(part, json.dumps(results[part], indent=1), flush=True)
        gc.collect()  # the part's functions, bridges and pipelines go now, while it is quiet
    if args.out:
        with open(args.out, "w") as f:
            json.dump(results, f, indent=1)
    return results


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
