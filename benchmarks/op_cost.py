"""What one small generator op adds to a training step, measured in a graph loop, beside
what TensorFlow's own ops add in the same loop.

    python -m benchmarks.op_cost [--device=gpu] [--steps=2000] [--repeats=5] [--jit] [--placement] [--smoke]

One tf.function call runs a tf.range loop of `steps` iterations; each iteration reads and
advances a step counter held in a variable on the device (as GeneratorModel and
DataPosition do) and reduces a 32 x 16 float batch that depends on the step. Rows:
  constant      the batch is a constant already on the device (no generation)
  op            random_batch(32, 16) for the step (one op)
  op x4         four such ops per iteration (their cost adds up; the loop's own does not)
  tf cast*mul   constant * cast(step): two of TensorFlow's cheapest GPU ops, the floor any
                op pays in TensorFlow's executor
  tf stateless  tf.random.stateless_uniform([32, 16], seed=[k, step]): TensorFlow's own
                random batch for the step (stack, key/counter, uniform: three ops)
A row's added cost is (row - constant) / steps; per op, divided by the ops it adds. The
rows are timed in turn, `repeats` rounds after a warm-up, and each row reports its median.
--jit compiles each loop with XLA (the generator runs as its custom call). Prints one JSON
line. --smoke: 20 steps, one round, every row (placement included), on any device.
"""

import argparse
import json

import tensorflow as tf

import tf_onthefly
from tf_onthefly.bench import timing

# name -> (ops the row adds to the constant loop, batch of the step s)
ROWS = {
    "constant": (0, None),
    "op": (1, lambda c, s: [tf_onthefly.random_batch(32, 16, seed=[1, 0], step=s)[0]]),
    "op x4": (4, lambda c, s: [tf_onthefly.random_batch(32, 16, seed=[1, k], step=s)[0] for k in range(4)]),
    "tf cast*mul": (2, lambda c, s: [c * tf.cast(s, tf.float32)]),
    "tf stateless": (
        3,
        lambda c, s: [tf.random.stateless_uniform([32, 16], seed=tf.stack([tf.constant(1, tf.int64), s]))],
    ),
}


def _on_cpu(make):
    with tf.device("/CPU:0"):
        return make()


# --placement: what a node placed on the host costs inside a loop that runs on the GPU
# (TensorFlow gives each device's part of a loop its own copy of the loop's control, and
# the parts exchange it every iteration). reshape's shape is a host-memory input of the GPU
# kernel; an int32 constant made on the GPU device lives in host memory but in the GPU's
# part, one made on /CPU:0 in the host's part. So with a generator's first_sample: an int64
# known only when running and made on /CPU:0 (here a host variable's value) is in the
# host's part; what the wrappers make of a value known when tracing, an int32 constant on
# the op's device (the "op" row), is not.
PLACEMENT_ROWS = {
    "tf cast*mul reshape": (3, lambda c, s: [tf.reshape(c * tf.cast(s, tf.float32), tf.constant([16, 32]))]),
    "tf cast*mul reshape cpu": (
        3,
        lambda c, s: [tf.reshape(c * tf.cast(s, tf.float32), _on_cpu(lambda: tf.constant([16, 32])))],
    ),
    "op first_sample host variable": (
        1,
        lambda c, s: [tf_onthefly.random_batch(32, 16, seed=[1, 0], step=s, first_sample=_FIRST_SAMPLE)[0]],
    ),
}
_FIRST_SAMPLE = _on_cpu(lambda: tf.Variable(0, dtype=tf.int64))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="gpu" if tf.config.list_physical_devices("GPU") else "cpu")
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--jit", action="store_true", help="compile each loop with XLA")
    ap.add_argument("--placement", action="store_true", help="add the host-placement rows")
    ap.add_argument("--label", default="")
    ap.add_argument("--smoke", action="store_true", help="a few steps, one round, every row")
    args = ap.parse_args()
    if args.smoke:
        args.steps, args.repeats, args.placement = 20, 1, True
    rows = dict(ROWS, **(PLACEMENT_ROWS if args.placement else {}))
    with tf.device("/GPU:0" if args.device == "gpu" else "/CPU:0"):
        step = tf.Variable(0, dtype=tf.int64)
        constant = tf.random.uniform([32, 16])

        def loop(make):
            @tf.function(jit_compile=args.jit)
            def run(n):
                acc = tf.constant(0.0)
                for _ in tf.range(n):
                    s = step.read_value()
                    batch = [constant] if make is None else make(constant, s)
                    acc += tf.add_n([tf.reduce_sum(b) for b in batch])
                    step.assign_add(1)
                return acc

            return run

        runs = {name: loop(make) for name, (_, make) in rows.items()}
        for run in runs.values():
            float(run(tf.constant(10)))  # trace, warm up
        samples = {name: [] for name in rows}
        for _ in range(args.repeats):
            for name, run in runs.items():
                samples[name] += timing.call_times(lambda: float(run(tf.constant(args.steps))), 1, warmup=0)
    times = {k: timing.summary(v)["median"] for k, v in samples.items()}
    added = {k: 1e6 * (t - times["constant"]) / args.steps for k, t in times.items() if k != "constant"}
    print(
        json.dumps(
            dict(
                label=args.label,
                device=args.device,
                jit=args.jit,
                steps=args.steps,
                steps_per_s={k: round(args.steps / t, 1) for k, t in times.items()},
                us_added={k: round(v, 2) for k, v in added.items()},
                us_per_op={k: round(v / rows[k][0], 2) for k, v in added.items()},
            )
        )
    )


if __name__ == "__main__":
    main()
