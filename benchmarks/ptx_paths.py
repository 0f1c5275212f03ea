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
             PTX op also in a graph loop of 4K calls, in that loop compiled by XLA (its
             custom call; target: >= 0.95x cupy), and by its kernel's GPU time in a trace;
  step_cost  per step of a graph loop at a tiny batch (32 x 16), where launching is all
             there is, interleaved in rounds (target: ptx-op within 5 us of builtin, the
             rounds' paired differences); then the bridge (its default: the streams ordered
             on the GPU; a host wait a batch; no wait) with the step on the host, against
             numpy+prefetch, the built-in op and an empty step in the same rounds (target:
             the default bridge's per-batch overhead over the empty step <= 150 us);
  wide       64 MiB batches (65,536 x 256) in a graph loop: steps/s of the bridges, ptx-op
             and the built-in op against numpy+prefetch (from_python), the simple path
             (target: bridge >= 2x numpy+prefetch);
  copies     host-to-device copies per step of the same loops in a profiler trace, with the
             copies' GPU time as a bound on their bytes where the trace has no sizes
             (target: none for ptx-op and cupy-bridge; numpy+prefetch is the control).
  trace      the GPU's events for a graph loop of the PTX op and of the built-in op at
             1 GiB: whether the host runs ahead of the GPU (no idle gap before a kernel);
  stages     where the bridge's hand-over waits and spends its time: CuPy launching the
             PTX for 4 GiB (~6 ms) on a stream of its own, handed over eagerly five times
             (after each stage, whether the producer is still busy: the first stage after
             which it is not is the one that waited for it), then at 32 x 16 in a graph
             loop with the step on the host (each stage's microseconds a batch in the
             bridge's producer thread, against the loop's time a step).
--smoke runs every part at toy sizes on any device (host arrays for the bridge, no PTX
launch without a GPU; stages needs CuPy on a GPU and says so), to keep the script working
where there is no GPU.

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
from tf_onthefly import _load, cuda_kernel, data, interop
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


def cupy_bridge(batch, feature_dim, ptx_path, sync="auto"):
    """step -> (features, labels): CuPy launching the PTX, through the bridge. sync: the
    bridge's default ("auto": TensorFlow's stream waits for CuPy's on the GPU), or "device"
    (a host wait a batch, the bridge's earlier way), or a callable."""
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


def _numpy_prefetch(batch, feature_dim):
    """step -> (features, labels) of from_python over NumPy batches with prefetch (the step
    is ignored: the pipeline yields the next batch)."""
    rng = np.random.default_rng(0)

    def numpy_batches():
        while True:
            yield (
                rng.random((batch, feature_dim), dtype=np.float32),
                (rng.random((batch, 1)) < P).astype(np.float32),
            )

    it = iter(data.from_python(numpy_batches, _signature(batch, feature_dim), prefetch=True))
    return lambda step: next(it)


def generators(batch, feature_dim, ptx):
    """name -> step -> (features, labels), for the input benchmark's in-step paths:
    "ptx-op" (GPU only; with or without XLA) and "cupy-bridge" (GPU and CuPy; compile the
    model with jit_compile=False: the bridge is a tf.py_function). `ptx` is the path of the
    PTX file built by //tf_ops/cuda_kernel:test_ptx."""
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
    """name -> step -> (features, labels) of the built-in op and the PTX op (GPU), and the
    bridges: name -> bridge (CuPy on a GPU: its default, a host wait a batch, and no wait at
    all for the difference; host arrays elsewhere)."""
    paths = {"builtin": lambda s: tf_onthefly.random_batch(batch, dim, seed=SEED, step=s, p=P)}
    if gpu:
        paths["ptx-op"] = ptx_op(batch, dim, ptx_text)
    bridges = {}
    if not gpu:
        bridges["host-bridge"] = _host_bridge(batch, dim)
    elif _cupy() is not None:
        bridges["cupy-bridge"] = cupy_bridge(batch, dim, ptx_path)
        bridges["cupy-bridge sync=device"] = cupy_bridge(batch, dim, ptx_path, sync="device")
        bridges["cupy-bridge no wait (unsafe)"] = cupy_bridge(batch, dim, ptx_path, sync=lambda a: None)
    return paths, bridges


def part_rate(args, ptx_text):
    """Milliseconds per call at `--rate-mib` of features, the paths interleaved in rounds,
    and the PTX op's rate against CuPy's per round (median and spread): unrolled, in a graph
    loop, and in a graph loop compiled by XLA (the op's custom call), the built-in op's
    loop with XLA beside it."""
    dim = 256
    batch = args.rate_mib * (1 << 20) // (4 * dim)
    calls, loop_calls = args.calls, 4 * args.calls
    gpu = _gpu()
    # The bridge's rate is part "wide"'s: at 1 GiB, interleaved with the other paths, CuPy's
    # memory pool and TensorFlow's allocator take turns at the GPU's memory.
    paths, _ = _paths(batch, dim, args.ptx, ptx_text, gpu)
    device = "/GPU:0" if gpu else None
    result = {"bytes": batch * dim * 4, "batch": batch, "feature_dim": dim, "calls": calls, "rounds": args.rounds}
    timed = {name: (loops.unrolled(gen, calls, device), calls) for name, gen in paths.items()}
    # A training loop's steady state: the function's dispatch and sync paid once for four
    # times as many calls, as a graph loop of steps pays them; and the loop under XLA.
    timed["builtin xla loop"] = (loops.graph_loop(paths["builtin"], loop_calls, device, jit=True), loop_calls)
    if "ptx-op" in paths:
        timed["ptx-op loop"] = (loops.graph_loop(paths["ptx-op"], loop_calls, device), loop_calls)
        timed["ptx-op xla loop"] = (loops.graph_loop(paths["ptx-op"], loop_calls, device, jit=True), loop_calls)
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
        for name in ("ptx-op", "ptx-op loop", "ptx-op xla loop"):
            r = loops.ratio(t["cupy"], t[name])
            result[f"{name} / cupy rate"] = {"median": r["median"], "spread": r["spread"]}
        # The op's kernel GPU time per call, from a trace of one unrolled call (TensorFlow's
        # trace does not hold CuPy's launches: CuPy's side is its wall time per launch).
        result["ptx-op"]["kernel_ms"] = kernel_ms(timed["ptx-op"][0], ENTRY, calls)
    return result


def part_step_cost(args, ptx_text):
    """Microseconds per step of a graph loop at a tiny batch (32 x 16), where launching is
    all there is: the built-in op, the PTX op and an empty step interleaved in rounds (the
    PTX op's difference from the built-in per round). Then, at a tenth of the steps (Python
    runs each step), the bridges with the step on the host as GeneratorModel keeps it for
    them, numpy+prefetch, and the built-in op and the empty step in the same rounds: each
    bridge's per-batch overhead is its paired difference from the empty step (target: the
    default bridge <= 150 us), steps/s for all."""
    batch, dim, steps = 32, 16, args.loop_steps
    gpu = _gpu()
    paths, bridges = _paths(batch, dim, args.ptx, ptx_text, gpu)
    paths["empty"] = lambda s: (tf.zeros([batch, dim]) + tf.cast(s, tf.float32),)
    device = "/GPU:0" if gpu else None
    result = {"batch": batch, "feature_dim": dim, "steps": steps, "rounds": args.rounds}
    runs = {name: loops.graph_loop(gen, steps, device) for name, gen in paths.items()}
    t = loops.timed_rounds({name: (run, steps) for name, run in runs.items()}, args.rounds, 3)
    result.update(loops.summaries(t, "us_per_step", 1e6))
    if "ptx-op" in t:
        result["ptx-op - builtin us"] = loops.difference_us(t["ptx-op"], t["builtin"])
    bridge_steps = max(1, steps // 10)
    slow = dict(bridges, **{"numpy+prefetch": _numpy_prefetch(batch, dim)})
    slow.update({f"{name} (host step)": paths[name] for name in ("empty", "builtin")})
    runs = {name: loops.graph_loop(gen, bridge_steps, device, host_step=True) for name, gen in slow.items()}
    t = loops.timed_rounds({name: (run, bridge_steps) for name, run in runs.items()}, min(args.rounds, 5), 3)
    per_step = loops.summaries(t, "us_per_step", 1e6, steps=bridge_steps)
    for name, row in per_step.items():
        row["steps_per_s"] = 1e6 / row["us_per_step"]
    result.update(per_step)
    for name in list(bridges) + ["numpy+prefetch", "builtin (host step)"]:
        result[f"{name} - empty us"] = loops.difference_us(t[name], t["empty (host step)"])
    return result


def part_wide(args, ptx_text):
    """Steps/s with 64 MiB batches in a graph loop (one element of each batch read, so none
    is pruned): the built-in op, the PTX op and the bridges (the step on the host) in
    rounds; numpy+prefetch, a few batches a second, on its own (target: the bridge >= 2x
    numpy+prefetch)."""
    batch, dim, steps = args.wide_batch, 256, args.wide_steps
    gpu = _gpu()
    device = "/GPU:0" if gpu else None
    result = {"batch": batch, "feature_dim": dim, "MiB": batch * dim * 4 / 2**20, "steps": steps}
    paths, bridges = _paths(batch, dim, args.ptx, ptx_text, gpu)
    bridges.pop("cupy-bridge no wait (unsafe)", None)
    runs = {name: (loops.graph_loop(gen, steps, device), steps) for name, gen in paths.items()}
    runs.update({name: (loops.graph_loop(b, steps, device, host_step=True), steps) for name, b in bridges.items()})
    t = loops.timed_rounds(runs, min(args.rounds, 5), 2)
    for name, row in loops.summaries(t, "s_per_step", 1).items():
        result[name] = {"steps_per_s": 1 / row["s_per_step"], "spread": row["spread"]}
    # NumPy makes ~0.3 GB/s on one core: a few rounds are minutes already.
    numpy_run = loops.graph_loop(_numpy_prefetch(batch, dim), steps, device, host_step=True)
    times = timing.call_times(numpy_run, min(args.rounds, 3), warmup=1, sync=lambda r: r.numpy())
    result["numpy+prefetch"] = {"steps_per_s": steps / timing.summary(times)["median"]}
    for name in bridges:
        result[f"{name} / numpy+prefetch"] = result[name]["steps_per_s"] / result["numpy+prefetch"]["steps_per_s"]
    return result


def part_copies(args, ptx_text):
    """Host-to-device copies per step of each new path in a graph loop (64 MiB batches), from
    a TensorFlow profiler trace of the GPU (CUPTI's memcpy events; benchmarks/no_copy_profile.py
    counts them), next to numpy+prefetch, whose every batch crosses (the control)."""
    if not _gpu():
        return {"skipped": "no GPU"}
    import tempfile

    from benchmarks import no_copy_profile

    batch, dim, steps = args.wide_batch, 256, 10
    result = {"batch": batch, "MiB": batch * dim * 4 / 2**20, "steps": steps}
    paths = {"ptx-op": (ptx_op(batch, dim, ptx_text), False)}
    bridge = cupy_bridge(batch, dim, args.ptx)
    if bridge is not None:
        paths["cupy-bridge"] = (bridge, True)
    paths["numpy+prefetch"] = (_numpy_prefetch(batch, dim), True)
    for name, (gen, host_step) in paths.items():
        loop = loops.graph_loop(gen, steps, "/GPU:0", host_step=host_step)
        loop().numpy()  # trace and warm up outside the profile
        logdir = tempfile.mkdtemp(prefix="ptx_paths_copies_")
        tf.profiler.experimental.start(logdir)
        loop().numpy()
        tf.profiler.experimental.stop()
        events, nbytes, largest = no_copy_profile.count_copies(logdir)
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


# The hand-over's stages, in the order one batch passes them (module attribute, name).
# Nested: _hand_over holds make_batch, _order, _capsule_of (one a device array) and _put.
# Eagerly the take follows in the caller's thread; in a graph the bridge's producer thread
# runs the hand-over and the take is the graph's op.
STAGES = [
    (interop.DeviceBridge, "_hand_over"),
    (interop.DeviceBridge, "_order"),
    (interop, "_capsule_of"),
    (interop.DeviceBridge, "_put"),
    (_load.ops, "on_the_fly_bridge_take"),
]


class _Staged:
    """Wraps the hand-over's stages (and make_batch) while in use: each stage's seconds a
    call, and after each call whether `busy()` still holds."""

    def __init__(self, busy=None):
        self.busy, self.seconds, self.calls, self.after = busy, {}, {}, []

    def wrap(self, name, fn):
        def staged(*a, **k):
            t0 = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - t0
                self.calls[name] = self.calls.get(name, 0) + 1
                if self.busy is not None:
                    self.after.append((name, bool(self.busy())))

        return staged

    def __enter__(self):
        self.saved = [(owner, name, getattr(owner, name)) for owner, name in STAGES]
        for owner, name, fn in self.saved:
            setattr(owner, name, self.wrap(name, fn))
        return self

    def __exit__(self, *exc):
        for owner, name, fn in self.saved:
            setattr(owner, name, fn)


def part_stages(args, ptx_text):
    """Where DeviceBridge's hand-over waits on the host and spends its time (see the
    module's docstring). The busy check needs CuPy and a GPU; without them the timing runs
    with host arrays on the CPU (the smoke run), the busy check is skipped."""
    cupy = _cupy() if _gpu() else None
    result = {}
    if cupy is None:
        result["producer_busy_after"] = "skipped: needs CuPy and a GPU"
    else:
        result.update(_stages_busy(cupy, args.ptx))
    # Time: the PTX producer at 32 x 16 in a graph loop, the step on the host.
    steps = max(1, args.loop_steps // 10)
    timed = _Staged()
    if cupy is None:
        make, device, result["producer"] = _host_bridge(32, 16).make_batch, None, "NumPy (host arrays)"
    else:
        make, device, result["producer"] = CupyLauncher(cupy, args.ptx, 32, 16), "/GPU:0", "CuPy, the PTX"
    bridge = DeviceBridge(timed.wrap("make_batch", make), _signature(32, 16))
    run = loops.graph_loop(bridge, steps, device, host_step=True)
    with timed:  # the producer thread calls the wrapped hand-over
        run().numpy()
        timed.seconds.clear()
        timed.calls.clear()
        t0 = time.perf_counter()
        run().numpy()
        per_step = (time.perf_counter() - t0) / steps
    result["us_per_step"] = per_step * 1e6
    result["us_per_batch"] = {name: 1e6 * t / timed.calls[name] for name, t in timed.seconds.items()}
    return result


def _stages_busy(cupy, ptx_path):
    """The PTX producer writing 4 GiB (~6 ms of GPU time) on a stream of its own, handed
    over eagerly five times: after each stage, whether it is still busy."""
    stream = cupy.cuda.Stream(non_blocking=True)
    launcher = CupyLauncher(cupy, ptx_path, 1 << 22, 256)
    staged = _Staged(busy=lambda: not stream.done)

    def make(step):
        with stream:
            return launcher(step)

    result = {"producer_busy_after": [], "first_stage_done": []}
    bridge = DeviceBridge(staged.wrap("make_batch", make), _signature(1 << 22, 256), sync=stream)
    with staged:
        for step in range(1, 6):
            staged.after.clear()
            bridge(step)
            staged.after.append(("returned", not stream.done))
            result["producer_busy_after"].append(
                [f"{name}:{'busy' if busy else 'done'}" for name, busy in staged.after]
            )
            result["first_stage_done"].append(next((name for name, busy in staged.after if not busy), None))
            stream.synchronize()
    return result


def targets(results):
    """One line per target of the parts that ran: the measured value, its spread, the
    target and whether it is met ("n/a" where a path did not run)."""
    lines = []

    def line(what, value, spread, target, met):
        if isinstance(spread, (list, tuple)):
            spread = f"rounds {spread[0]:.1f}..{spread[1]:.1f}"
        elif isinstance(spread, float):
            spread = f"spread {spread:.3f}"
        value_text = "n/a" if value is None else f"{value:.3f} ({spread})"
        verdict = "n/a" if value is None else ("met" if met(value) else "MISSED")
        lines.append(f"TARGET {what}: {value_text}; target {target}: {verdict}")

    rate = results.get("rate", {})
    for name in ("ptx-op", "ptx-op loop", "ptx-op xla loop"):
        r = rate.get(f"{name} / cupy rate")
        line(f"rate {name} / cupy", r and r["median"], r and r["spread"], ">= 0.95", lambda v: v >= 0.95)
    cost = results.get("step_cost", {})
    for name in ("cupy-bridge", "host-bridge"):
        d = cost.get(f"{name} - empty us")
        if d is not None:
            line(f"step_cost {name} per-batch overhead us", d["median"], d["range"], "<= 150", lambda v: v <= 150)
    wide = results.get("wide", {})
    for name in ("cupy-bridge", "host-bridge"):
        r = wide.get(f"{name} / numpy+prefetch")
        if r is not None:
            line(f"wide {name} / numpy+prefetch steps/s", r, "medians", ">= 2", lambda v: v >= 2)
    copies = results.get("copies", {})
    for name in ("ptx-op", "cupy-bridge"):
        c = copies.get(name)
        if c is not None:
            b = c["HtoD_bytes_per_step"]
            b = c["HtoD_bytes_per_step_at_most"] if b is None else b
            line(
                f"copies {name} HtoD bytes per step", b, "one trace", "< 64 KiB (no batch copied)", lambda v: v < 65536
            )
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--ptx",
        default=os.environ.get("OTF_TEST_PTX", "bazel-bin/tf_ops/cuda_kernel/test_kernels.ptx"),
        help="the PTX of //tf_ops/cuda_kernel:test_ptx",
    )
    parser.add_argument("--out", help="write the results here as JSON")
    parser.add_argument("--smoke", action="store_true", help="toy sizes, any device")
    parser.add_argument("--parts", default="rate,step_cost,wide,copies,trace,stages")
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
            "stages": part_stages,
        }[part](args, ptx_text)
        print(part, json.dumps(results[part], indent=1), flush=True)
        gc.collect()  # the part's functions, bridges and pipelines go now, while it is quiet
    results["targets"] = targets(results)
    print("\n".join(results["targets"]), flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(results, f, indent=1)
    return results


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
