"""Where a training step's time goes, path against path: traces the bench's rows.

    python -m benchmarks.step_timeline [--config=small_mlp] [--mode=loop64] [--jit]
                                        [--paths=constant,op-in-step,tf-stateless] [--calls=4] [--top=20]
                                        [--smoke]

For each path, builds the bench's runner of that mode (python -m tf_onthefly.bench; loop64:
one tf.function call runs 64 training steps in a graph loop; fitN: model.fit with
steps_per_execution=N), warms it up, traces `calls` executions with the TF profiler (device
events need CUPTI) and prints per step:
  - the wall time, the GPU's busy and idle time, kernels and copies by direction;
  - the host events (TensorFlow's op annotations, CUDA API calls) and the GPU's kernels and
    copies, each summed by name, and for every path after the first, the names whose time
    per step differs most from the first path's: what the extra time of a path is spent on.
Besides the bench's paths, `constant-int32-captured`: the constant batch with its int32
outputs (cnn's labels) captured as int32, which TensorFlow keeps in host memory on a GPU,
where the bench's `constant` keeps them in device memory as float32 bits; against
`constant`, its HtoD_per_step and wall time are what that placement costs a step:

    python -m benchmarks.step_timeline --config=cnn --mode=fit64 \
        --paths=constant-int32-captured,constant,op-in-step

--smoke: one call, two paths, the top 3 names, on any device.
"""

import argparse
import collections
import re

import tensorflow as tf

from benchmarks.op_timeline import traced
from tf_onthefly import bench
from tf_onthefly.bench import _configs, _measure


def event_kind(name):
    """A host event's name without what differs between two models of one shape: an op's
    annotation ("while/body/.../MatMul:MatMul") becomes its type ("op MatMul")."""
    name = name.split("<")[0]
    if ":" in name and "/" in name:
        return "op " + name.rsplit(":", 1)[1][:50]
    return re.sub(r"\d+", "#", name)[:60]


def summarize(wall, planes, steps):
    """Per-step numbers of one traced run, and {host event name: us per step}."""
    gpu = sorted(
        ((n, s, d) for name, evs in planes.items() if "GPU" in name for line, n, s, d in evs if "Stream" in line),
        key=lambda e: e[1],
    )
    busy, last_end, kinds = 0.0, None, collections.Counter()
    device = collections.defaultdict(float)  # kernel or copy name -> us per step on the GPU
    for name, start, dur in gpu:
        device[re.sub(r"\d+", "#", name.split("(")[0])[:60]] += dur / 1e6 / steps
        end = start + dur
        if last_end is None or start >= last_end:
            busy += dur
        elif end > last_end:
            busy += end - last_end
        last_end = end if last_end is None else max(last_end, end)
        kind = next((k for k in ("HtoD", "DtoH", "DtoD") if k in name or k.replace("to", "2") in name), "kernel")
        kinds[kind] += 1
    span = (last_end - gpu[0][1]) if gpu else 0
    host = collections.defaultdict(float)
    for name, evs in planes.items():
        if "host" in name.lower():
            for _line, ev, _start, dur in evs:
                host[event_kind(ev)] += dur / 1e6 / steps
    row = dict(
        wall_us=1e6 * wall / steps,
        gpu_span_us=span / 1e6 / steps,
        gpu_busy_us=busy / 1e6 / steps,
        **{f"{k}_per_step": v / steps for k, v in sorted(kinds.items())},
    )
    return row, host, device


def int32_captured(cfg):
    """The constant batch captured as the generator made it (int32 stays int32)."""
    x, y = (tf.identity(t) for t in cfg["gen"](tf.constant(0, tf.int64)))
    return lambda step: (x, y)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="small_mlp")
    ap.add_argument("--mode", default="loop64", choices=bench.MODES)
    ap.add_argument("--paths", default="constant,op-in-step,tf-stateless")
    ap.add_argument("--calls", type=int, default=4)
    ap.add_argument("--jit", action="store_true")
    ap.add_argument("--top", type=int, default=20)
    ap.add_argument("--smoke", action="store_true", help="one call, two paths, any device")
    args = ap.parse_args()
    if args.smoke:
        args.calls, args.paths, args.top = 1, "constant,op-in-step", 3
    bench.register_path("constant-int32-captured", int32_captured, in_step=True, candidate=False)
    gpu = bool(tf.config.list_physical_devices("GPU"))
    cfg = _configs.configs(gpu)[args.config]
    results = {}
    traced(lambda: tf.constant(1) + 1)  # the profiler's own start-up, traced away
    with tf.device("/GPU:0" if gpu else "/CPU:0"):
        for path in args.paths.split(","):
            tf.keras.utils.set_random_seed(0)
            run, granule = _measure.runner(cfg, path, args.mode, args.jit)
            steps = granule * args.calls
            run(granule)
            run(steps)  # trace, warm up
            results[path] = summarize(*traced(lambda: run(steps)), steps)
    first = next(iter(results))
    for path, (row, host, device) in results.items():
        print(
            f"== {args.config} {args.mode} {path}{' jit' if args.jit else ''}: "
            + ", ".join(f"{k} {v:.1f}" for k, v in row.items())
        )
        for name, us in sorted(host.items(), key=lambda kv: -kv[1])[: args.top]:
            print(f"  host {us:9.1f} us/step  {name}")
        for name, us in sorted(device.items(), key=lambda kv: -kv[1])[: args.top]:
            print(f"  gpu  {us:9.1f} us/step  {name}")
        if path != first:
            base_row, base_host, base_device = results[first]
            print(
                f"  against {first}: wall {row['wall_us'] - base_row['wall_us']:+.1f} us/step, "
                f"GPU busy {row['gpu_busy_us'] - base_row['gpu_busy_us']:+.1f} us/step; host and GPU events:"
            )
            for kind, mine, base in (("diff", host, base_host), ("gpu diff", device, base_device)):
                diff = {n: mine.get(n, 0.0) - base.get(n, 0.0) for n in set(mine) | set(base)}
                for name, us in sorted(diff.items(), key=lambda kv: -abs(kv[1]))[: args.top]:
                    print(f"  {kind} {us:+9.1f} us/step  {name}")


if __name__ == "__main__":
    main()
