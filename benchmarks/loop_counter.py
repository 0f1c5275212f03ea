"""A graph loop's counter, int64 against int32, and DataPosition.run_steps (run on a GPU).

    python -m benchmarks.loop_counter [--rounds 5] [--smoke]

TensorFlow keeps the int32 tensors of a GPU loop in host memory, where the loop is
controlled, and int64 ones in GPU memory: an int64 counter's condition is copied to the
host, and waited for, every iteration. Side by side in one process, in interleaved rounds,
three loops of drift_walk steps (each step's batch from the step's int64 index):
  int64      a tf.while_loop whose counter is int64;
  int32      the same loop with an int32 counter;
  run_steps  tf_onthefly.data.DataPosition.run_steps (the product's loop);
each at a tiny batch (32 walks of 16: the loop's own cost) and at 1 GiB of walks, with the
median microseconds per step over the rounds and the device-to-host copy events per step
in a profiler trace of one call.
--smoke: toy sizes, any device.
"""

import argparse
import json
import sys
import tempfile

import tensorflow as tf

import tf_onthefly
from benchmarks.no_copy_profile import count_copies
from tf_onthefly import data
from tf_onthefly.bench import timing

UP = [0.3, 0.5, 0.7]


def probe(walks):
    """One element of the int32 walks, read through a float32 view (an int32 slice would run
    on the host and copy the batch there)."""
    return tf.bitcast(walks, tf.float32)[0, -1]


def while_loop(dtype, rows, length, steps):
    up = tf.constant(UP)

    @tf.function
    def run():
        def body(i, acc):
            walks, _ = tf_onthefly.drift_walk(rows, length, up, seed=1, step=tf.cast(i, tf.int64))
            return i + 1, tf.maximum(acc, probe(walks))

        return tf.while_loop(lambda i, _: i < steps, body, (tf.constant(0, dtype), tf.constant(0.0)))[1]

    return run


def run_steps(rows, length, steps):
    up = tf.constant(UP)
    position = data.DataPosition(lambda step: tf_onthefly.drift_walk(rows, length, up, seed=1, step=step))
    return tf.function(lambda: position.run_steps(lambda batch: probe(batch[0]), steps))


def copies_per_step(run, steps):
    """Device-to-host copy events per step in a trace of one call of `run`."""
    logdir = tempfile.mkdtemp()
    tf.profiler.experimental.start(logdir)
    run().numpy()
    tf.profiler.experimental.stop()
    _, _, largest = count_copies(logdir)
    return sum(n for _, n, direction, _, _ in largest if direction == "DtoH") / steps


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--smoke", action="store_true", help="toy sizes, any device")
    args = parser.parse_args(argv)
    sizes = [(32, 16, 2000), (262144, 1023, 40)]  # 262,144 walks of 1,023 int32 steps: 1 GiB
    rounds = args.rounds
    if args.smoke:
        sizes, rounds = [(32, 16, 50), (256, 1023, 4)], 2
    for rows, length, steps in sizes:
        loops = {
            "int64": while_loop(tf.int64, rows, length, steps),
            "int32": while_loop(tf.int32, rows, length, steps),
            "run_steps": run_steps(rows, length, steps),
        }
        per_step = {name: [] for name in loops}
        for _ in range(rounds):
            for name, run in loops.items():
                times = timing.call_times(run, 3, warmup=1, sync=lambda r: r.numpy())
                per_step[name].append(timing.summary(times)["median"] / steps)
        for name, run in loops.items():
            s = timing.summary(per_step[name])
            row = dict(rows=rows, length=length, steps=steps, loop=name, us_per_step=1e6 * s["median"])
            row.update(spread=s["spread"], dtoh_per_step=copies_per_step(run, steps))
            print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
