"""A kernel brought as it is, against the other ways of running it (run on a GPU).

    python -m benchmarks.launcher_generators --sdk-test-ops DIR/_sdk_test_ops.so \\
        --by-hand DIR/drift_walk_by_hand [--rounds 5] [--out FILE.json]

drift_walk's GPU code is a block-cooperative launcher generator (CUB block scans, scratch
memory, a tensor input). Side by side in one process, in interleaved rounds, each ratio
with its spread over the rounds (docs/performance.md, "Kernels you bring"):
  forms        its kernels against its own Generate run by the SDK's per-sample kernel
               (the op of tests/sdk_ops, same walks bit for bit), 65,536 walks of 1,000 steps;
  by_hand      the op against the same launcher called outside TensorFlow by a plain CUDA
               program (kernel_bench/drift_walk_by_hand, CUDA events), 1 GiB of walks;
  step_cost    the cost per step in a graph loop, drift_walk against random_walk (a struct
               generator) at a tiny batch, where launching is all there is;
  input_copies a tf.Variable input updated every step: device-to-host copies per step in a
               profiler trace of the loop, against the same loop with a constant input.
--smoke runs every part at toy sizes on any device (no by_hand without --by-hand), to keep
the script working where there is no GPU.
"""

import argparse
import json
import subprocess
import sys
import tempfile

import numpy as np
import tensorflow as tf

import tf_onthefly
from benchmarks.loops import difference_us, graph_loop, probe, ratio, timed_rounds, unrolled
from benchmarks.no_copy_profile import count_copies
from benchmarks.op_timeline import kernel_ms
from tf_onthefly import _load
from tf_onthefly.bench import timing

UP = [0.3, 0.5, 0.7]


def forms(lib, rows, length, rounds):
    up = tf.constant(UP)

    def launcher(i):
        return tf_onthefly.drift_walk(rows, length, up, seed=1, step=i)

    def per_sample(i):
        return lib.on_the_fly_sdk_test_per_sample_drift_walk(
            up_probability=up,
            length=length,
            seed=tf.constant(1, tf.int64),
            step=tf.cast(i, tf.int64),
            first_sample=tf.constant(0, tf.int64),
            batch_size=rows,
            num_samples=-1,
        )

    same = all(np.array_equal(a, b) for a, b in zip(launcher(3), per_sample(3)))
    t = timed_rounds({"launcher": (unrolled(launcher, 4), 4), "per_sample": (unrolled(per_sample, 4), 4)}, rounds, 5)
    r = ratio(t["per_sample"], t["launcher"])
    return dict(
        rows=rows,
        length=length,
        identical=same,
        launcher_ms=1e3 * np.median(t["launcher"]),
        per_sample_ms=1e3 * np.median(t["per_sample"]),
        speedup=r["median"],
        spread=r["spread"],
    )


def by_hand(binary, rows, length, rounds):
    """The op's rate against the by-hand program's (which times each launch with CUDA
    events: GPU time), three ways: wall time per call of ten calls unrolled in one
    tf.function (the function's own dispatch and the final sync included), of forty calls
    in a graph loop (a training loop's steady state), and the op's kernels' GPU time from
    a trace."""
    up = tf.constant(UP)
    calls, loop_calls = 10, 40

    def walks(i):
        return tf_onthefly.drift_walk(rows, length, up, seed=1, step=i)

    run, loop = unrolled(walks, calls), graph_loop(walks, loop_calls)
    op, op_loop, op_device, hand = [], [], [], []
    for _ in range(rounds):
        times = timing.call_times(run, 5, warmup=1, sync=lambda r: r.numpy())
        op.append(timing.summary(times)["median"] / calls)
        times = timing.call_times(loop, 3, warmup=1, sync=lambda r: r.numpy())
        op_loop.append(timing.summary(times)["median"] / loop_calls)
        op_device.append(kernel_ms(run, "drift_walk", calls))
        out = subprocess.run([binary, str(rows), str(length), "50"], capture_output=True, text=True, check=True)
        hand.append(timing.summary(json.loads(out.stdout)["ms"])["median"] / 1e3)
    r, r_loop = ratio(hand, op), ratio(hand, op_loop)
    result = dict(
        rows=rows,
        length=length,
        bytes=rows * (length + 1) * 4,
        op_ms=1e3 * np.median(op),
        by_hand_ms=1e3 * np.median(hand),
        op_rate_vs_by_hand=r["median"],
        spread=r["spread"],
        op_loop_ms=1e3 * np.median(op_loop),
        loop_rate_vs_by_hand=r_loop["median"],
        loop_spread=r_loop["spread"],
    )
    if None not in op_device:
        d = ratio(hand, [ms / 1e3 for ms in op_device])
        result.update(
            op_kernel_ms=float(np.median(op_device)), kernel_rate_vs_by_hand=d["median"], kernel_spread=d["spread"]
        )
    return result


def step_cost(steps, rounds):
    """Microseconds per step of a graph loop at a tiny batch, drift_walk against random_walk:
    wall time per step, the rounds' paired differences, and each op's kernels' GPU time
    per step from a trace of one loop each."""
    up = tf.constant(UP)
    gens = {
        "drift_walk": lambda i: tf_onthefly.drift_walk(32, 16, up, seed=1, step=i),
        "random_walk": lambda i: tf_onthefly.random_walk(32, 16, seed=1, step=i),
    }
    loops = {k: graph_loop(g, steps) for k, g in gens.items()}
    t = timed_rounds({k: (run, steps) for k, run in loops.items()}, rounds, 5)
    diff = difference_us(t["drift_walk"], t["random_walk"])
    result = dict(
        steps=steps,
        drift_walk_us=1e6 * np.median(t["drift_walk"]),
        random_walk_us=1e6 * np.median(t["random_walk"]),
        difference_us=diff["median"],
        difference_range_us=diff["range"],
    )
    for name, run in loops.items():
        ms = kernel_ms(run, name, steps)
        result[f"{name}_kernel_us"] = None if ms is None else 1e3 * ms
    return result


def input_copies(steps):
    """Device-to-host copy events per step in a trace of a loop whose tensor input is a
    variable updated every step, and of the same loop with a constant input."""
    v = tf.Variable(UP)

    def loop(update):
        @tf.function
        def run():
            acc = tf.constant(0.0)
            for i in tf.range(steps, dtype=tf.int32):  # an int32 counter stays on the host
                if update:
                    v.assign(tf.clip_by_value(v * 0.999 + 0.0005, 0.0, 1.0))
                walks = tf_onthefly.drift_walk(256, 64, v, seed=1, step=tf.cast(i, tf.int64))[0]
                acc = tf.maximum(acc, probe([walks]))
            return acc

        return run

    rows = {}
    for name, update in (("updated_variable", True), ("constant_variable", False)):
        run = loop(update)
        run().numpy()
        logdir = tempfile.mkdtemp(prefix=name)
        tf.profiler.experimental.start(logdir)
        run().numpy()
        tf.profiler.experimental.stop()
        _, _, largest = count_copies(logdir)
        rows[name] = sum(n for _, n, direction, _, _ in largest if direction == "DtoH") / steps
    rows["steps"] = steps
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sdk-test-ops", required=True, help="tests/sdk_ops' _sdk_test_ops.so")
    parser.add_argument("--by-hand", help="kernel_bench's drift_walk_by_hand binary")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--smoke", action="store_true", help="toy sizes, any device")
    parser.add_argument("--out", help="write the results as JSON here too")
    args = parser.parse_args(argv)
    for gpu in tf.config.list_physical_devices("GPU"):
        tf.config.experimental.set_memory_growth(gpu, True)  # leave room for the by-hand run
    lib = _load.load_generator_library(args.sdk_test_ops)
    small = args.smoke
    rounds = 2 if small else args.rounds
    result = dict(device=tf.test.gpu_device_name() or "CPU", tf=tf.__version__)
    result["forms"] = forms(lib, 256 if small else 65536, 100 if small else 1000, rounds)
    print(json.dumps({"forms": result["forms"]}), flush=True)
    if args.by_hand:
        result["by_hand"] = by_hand(args.by_hand, 1024 if small else 262144, 1023, rounds)
        print(json.dumps({"by_hand": result["by_hand"]}), flush=True)
    result["step_cost"] = step_cost(50 if small else 2000, rounds)
    print(json.dumps({"step_cost": result["step_cost"]}), flush=True)
    result["input_copies"] = input_copies(10 if small else 100)
    print(json.dumps({"input_copies": result["input_copies"]}), flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)
    ok = result["forms"]["identical"]
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
