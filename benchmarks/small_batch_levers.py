"""What a small batch's step could still lose under XLA: the levers against their bounds.

    python -m benchmarks.small_batch_levers [--rounds 7] [--repeats 5] [--steps 64] [--smoke]

The input benchmark's small_mlp (batch 32 x 16, random_batch's features and labels) trained
`steps` steps a call in one XLA-compiled graph loop (as DataPosition.run_steps and
GeneratorModel's steps_per_execution loop are compiled), on the default device. Each loop
is paired with a bound that makes its batch the same way minus the generator's kernel:

  constant            the bound: the batch made once, the step read from a data_step
                      variable and advanced each step (what the input benchmark compares with)
  op                  random_batch of data_step each step: today's op-in-step
  constant, counter   the bound of the next: no per-step data_step; the step is the start
                      read once plus the loop's counter, data_step advanced once a call
  op, counter         random_batch of (start + counter) each step
  constant block      one constant block of `steps` batches, step k's batch taken from it
  op, block           one random_batch call a call with the vector of its `steps` steps
                      (the same batches as `steps` calls), step k's batch taken from it:
                      GeneratorModel's steps_in_one_call

Loops take turns in interleaved rounds; each prints its microseconds a step, its rate
against `constant` (median ratio over rounds and its spread) and, from a profiler trace of
one call, its GPU kernels a step and the GPU busy time a step (traces run without XLA's
command buffers: they show which kernels run, the timed rounds what they cost).
--smoke: toy sizes, any device.
"""

import argparse
import json
import statistics
import sys

import tensorflow as tf

import tf_onthefly
from benchmarks import loops
from benchmarks.op_timeline import gpu_kernels, traced
from tf_onthefly.bench import models

BATCH, DIM = 32, 16
# name -> (whether it generates, where each step's batch comes from, its bound)
LOOPS = {
    "constant": (False, "variable", "constant"),
    "op": (True, "variable", "constant"),
    "constant, counter": (False, "counter", "constant"),
    "op, counter": (True, "counter", "constant, counter"),
    "constant block": (False, "block", "constant"),
    "op, block": (True, "block", "constant block"),
}


def batch_of(step):
    """The batch of `step`; of a vector of steps, their batches stacked."""
    return tf_onthefly.random_batch(BATCH, DIM, seed=1, step=step)


def loop(name, steps):
    """A tf.function (XLA) running `steps` training steps of its own small_mlp a call."""
    loss = tf.keras.losses.BinaryCrossentropy(from_logits=True)
    apply = models.train_step(models.mlp(DIM, 1), loss, tf.keras.optimizers.Adam(1e-3))
    data_step = tf.Variable(0, dtype=tf.int64, trainable=False)
    generates, how, _ = LOOPS[name]
    block = tf.range(steps, dtype=tf.int64) if how == "block" else tf.constant(0, tf.int64)
    kept = [tf.identity(t) for t in batch_of(block)]

    def make(step):
        return batch_of(step) if generates else kept

    @tf.function(jit_compile=True)
    def run():
        start = tf.convert_to_tensor(data_step)
        block = make(start + tf.range(steps, dtype=tf.int64)) if how == "block" else None

        def body(k, _):
            if how == "variable":
                batch = make(tf.convert_to_tensor(data_step))
                with tf.control_dependencies(batch):
                    data_step.assign_add(1)
            elif how == "counter":
                batch = make(start + tf.cast(k, tf.int64))
            else:
                batch = [t[k] for t in block]
            return k + 1, apply(*batch)

        _, last = tf.while_loop(lambda k, _: k < steps, body, (tf.constant(0, tf.int32), tf.constant(0.0)))
        if how != "variable":
            with tf.control_dependencies([last]):
                data_step.assign_add(steps)
        return last

    return run


def trace_row(run, steps):
    """GPU kernels and GPU busy microseconds a step in a trace of one call (None without CUPTI)."""
    kernels = gpu_kernels(traced(run)[1])
    if not kernels:
        return dict(kernels_per_step=None, gpu_us_per_step=None)
    return dict(kernels_per_step=len(kernels) / steps, gpu_us_per_step=sum(d for _, _, d in kernels) / 1e6 / steps)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--repeats", type=int, default=5, help="timed calls of each loop a round")
    parser.add_argument("--steps", type=int, default=64, help="steps a call (steps_per_execution)")
    parser.add_argument("--smoke", action="store_true", help="toy sizes, any device")
    args = parser.parse_args(argv)
    rounds, repeats, steps = (2, 2, 4) if args.smoke else (args.rounds, args.repeats, args.steps)
    runs = {name: loop(name, steps) for name in LOOPS}
    per_round = loops.timed_rounds({name: (run, steps) for name, run in runs.items()}, rounds, repeats)
    print(f"# {tf.config.list_logical_devices()[-1].name}, {steps} steps a call, {rounds} rounds of {repeats} calls")
    for name, (_, _, bound) in LOOPS.items():
        vs_constant = loops.ratio(per_round["constant"], per_round[name])
        row = dict(loop=name, us_per_step=1e6 * statistics.median(per_round[name]))
        row.update(vs_constant=vs_constant["median"], spread=vs_constant["spread"])
        row.update(vs_its_bound=loops.ratio(per_round[bound], per_round[name])["median"], bound=bound)
        row.update(trace_row(runs[name], steps))
        print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
