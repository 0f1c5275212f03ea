"""Where the time goes around generator ops on the GPU: one traced call, kernel by kernel.

    python -m benchmarks.op_timeline [--mib=256] [--unroll=10] [--jit] [--steps_on=cpu|gpu] [--smoke]

Runs `unroll` random_batch ops of about `mib` MiB (each consumed by one element, as
python -m benchmarks.rates does) in one tf.function, traces one call with the TF profiler
(device events need CUPTI: TensorFlow loads libcupti.so.12 from LD_LIBRARY_PATH) and prints:
  - every GPU kernel in stream order: its duration and the idle gap before it;
  - the sums: time in our kernels, in other kernels, idle between kernels, and the call's
    wall time;
  - the host time TensorFlow spent in each op's Compute (the op's own launch work), and
    the host events of the call summed by thread and name, largest first.
--smoke: 1 MiB, two ops, on the CPU when there is no GPU (no device events then).
"""

import argparse
import collections
import glob
import os
import tempfile
import time

import tensorflow as tf
from tensorflow.tsl.profiler.protobuf import xplane_pb2

import tf_onthefly


def events(logdir):
    """{plane name: [(line name, event name, start ps, duration ps)]} of the trace."""
    out = collections.defaultdict(list)
    for path in glob.glob(os.path.join(logdir, "**", "*.xplane.pb"), recursive=True):
        space = xplane_pb2.XSpace()
        with open(path, "rb") as f:
            space.ParseFromString(f.read())
        for plane in space.planes:
            names = {k: v.name for k, v in plane.event_metadata.items()}
            for line in plane.lines:
                for ev in line.events:
                    start = line.timestamp_ns * 1000 + ev.offset_ps
                    out[plane.name].append((line.name, names.get(ev.metadata_id, ""), start, ev.duration_ps))
    return out


def gpu_kernels(planes):
    """[(name, start ps, duration ps)] of the GPU kernels and copies in a trace's events,
    in stream order (empty when TensorFlow could not load CUPTI)."""
    gpu = [e for name, evs in planes.items() if "GPU" in name for e in evs if "Stream" in e[0]]
    return sorted(((n, s, d) for _, n, s, d in gpu if d > 0), key=lambda e: e[1])


def traced(call):
    """(wall seconds, events) of one call of `call()`, traced; its result is synced by
    .numpy() when it has one. (The tracer's default levels: TensorFlow 2.21 ignores the
    levels of tf.profiler.experimental.ProfilerOptions, "expects an i value".)"""
    logdir = tempfile.mkdtemp()
    tf.profiler.experimental.start(logdir)
    t0 = time.perf_counter()
    result = call()
    if hasattr(result, "numpy"):
        result.numpy()
    wall = time.perf_counter() - t0
    tf.profiler.experimental.stop()
    return wall, events(logdir)


def kernel_ms(call, match, calls):
    """GPU milliseconds per op call in a trace of one `call()` that makes `calls` op calls:
    the summed durations of the kernels whose name contains `match` (None when the trace
    has none, as when TensorFlow could not load CUPTI)."""
    durations = [d for name, _, d in gpu_kernels(traced(call)[1]) if match in name]
    return sum(durations) / 1e9 / calls if durations else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=256)
    ap.add_argument("--unroll", type=int, default=10)
    ap.add_argument("--jit", action="store_true")
    ap.add_argument("--distribution", default="uniform")
    ap.add_argument("--steps_on", default="cpu", choices=["cpu", "gpu"], help="Where each op's step is computed.")
    ap.add_argument("--host_top", type=int, default=25, help="Host events listed by total time.")
    ap.add_argument("--smoke", action="store_true", help="1 MiB, two ops, any device")
    args = ap.parse_args()
    if args.smoke:
        args.mib, args.unroll, args.host_top = 1, 2, 5
    device = "/GPU:0" if tf.config.list_physical_devices("GPU") else "/CPU:0"
    rows = (args.mib << 20) // (4 * 4096)

    @tf.function(jit_compile=args.jit)
    def run(step0):
        acc = tf.constant(0.0)
        with tf.device(f"/{args.steps_on.upper()}:0"):
            steps = [step0 + k for k in range(args.unroll)]
        for k in range(args.unroll):
            f, _ = tf_onthefly.random_batch(rows, 4096, seed=[1, 2], step=steps[k], distribution=args.distribution)
            acc += f[0, 0]
        return acc

    with tf.device(device):
        for k in range(3):
            run(tf.constant(k * args.unroll, tf.int64)).numpy()  # trace, warm up
        wall, planes = traced(lambda: run(tf.constant(100 * args.unroll, tf.int64)))
    kernels = gpu_kernels(planes)
    if not kernels:
        print("no device events in the trace: TensorFlow could not load CUPTI (libcupti.so.12)")
    print(
        f"{args.unroll} x random_batch {args.distribution} {args.mib} MiB{' under XLA' if args.jit else ''}, "
        f"steps on the {args.steps_on.upper()}: "
        f"call wall time {wall * 1e3:.3f} ms"
    )
    ours = other = idle = 0.0
    last_end = None
    for name, start, dur in kernels:
        gap = 0.0 if last_end is None else max(0.0, (start - last_end) / 1e6)
        mine = "Generator" in name or "tf_onthefly" in name
        ours += dur / 1e6 if mine else 0
        other += 0 if mine else dur / 1e6
        idle += gap
        last_end = max(last_end or 0, start + dur)
        print(f"  gap {gap:9.1f} us  kernel {dur / 1e6:9.1f} us  {'*' if mine else ' '} {name[:90]}")
    if kernels:
        span = (last_end - kernels[0][1]) / 1e6
        print(
            f"GPU span {span:.1f} us: our kernels {ours:.1f} us, other kernels {other:.1f} us, idle {idle:.1f} us "
            f"({idle / span:.0%})"
        )
    host = collections.defaultdict(list)
    for name, evs in planes.items():
        if "host" in name.lower():
            for line, ev, start, dur in evs:
                if "RandomBatch" in ev:
                    host[ev.split(":")[0][:60]].append(dur / 1e6)
    for ev, durs in sorted(host.items()):
        print(f"host: {ev:60s} {len(durs):3d} events, median {sorted(durs)[len(durs) // 2]:8.1f} us")
    # Where the host's time goes: every host event (TensorFlow's TraceMe annotations, the CUDA
    # API calls CUPTI records), summed by thread line and name, largest first.
    total = collections.defaultdict(lambda: [0, 0.0])
    for name, evs in planes.items():
        if "host" in name.lower():
            for line, ev, start, dur in evs:
                key = (line[:24], ev.split("<")[0][:70])
                total[key][0] += 1
                total[key][1] += dur / 1e6
    for (line, ev), (n, us) in sorted(total.items(), key=lambda kv: -kv[1][1])[: args.host_top]:
        print(f"host total: {us:9.1f} us  {n:4d} x  [{line}] {ev}")


if __name__ == "__main__":
    main()
