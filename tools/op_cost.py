"""What one small generator op adds to a training step, measured in a graph loop.

    python3 tools/op_cost.py [--device=gpu] [--steps=2000] [--repeats=5]

One tf.function call runs a tf.range loop of `steps` iterations; each iteration reads and
advances a step counter held in a variable on the device (as GeneratorModel and
DataPosition do) and consumes a batch of 32 x 16 features. The loop runs three ways:
  constant   the batch is a constant already on the device (no generation)
  op         random_batch(32, 16) for the step, inside the loop
  op x4      four such ops per iteration (their cost adds up; the loop's own does not)
The cost of one op is (op - constant) / steps; with four ops, (op x4 - constant) / (4 steps).
Median of `repeats` calls after a warm-up. Prints one JSON line.
"""

import argparse
import json
import statistics
import time

import tensorflow as tf

import tf_onthefly


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="gpu" if tf.config.list_physical_devices("GPU") else "cpu")
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--label", default="")
    args = ap.parse_args()
    with tf.device("/GPU:0" if args.device == "gpu" else "/CPU:0"):
        step = tf.Variable(0, dtype=tf.int64)
        constant = tf.random.uniform([32, 16])

        def loop(ops_per_step):
            @tf.function
            def run(n):
                acc = tf.constant(0.0)
                for _ in tf.range(n):
                    s = step.read_value()
                    batch = (
                        [constant]
                        if ops_per_step == 0
                        else [tf_onthefly.random_batch(32, 16, seed=[1, k], step=s)[0] for k in range(ops_per_step)]
                    )
                    acc += tf.add_n([tf.reduce_sum(b) for b in batch])
                    step.assign_add(1)
                return acc

            return run

        times = {}
        for name, k in [("constant", 0), ("op", 1), ("op x4", 4)]:
            run = loop(k)
            float(run(tf.constant(10)))  # trace, warm up
            samples = []
            for _ in range(args.repeats):
                t0 = time.perf_counter()
                float(run(tf.constant(args.steps)))
                samples.append(time.perf_counter() - t0)
            times[name] = statistics.median(samples)
    us = lambda t: 1e6 * t / args.steps  # noqa: E731
    print(
        json.dumps(
            dict(
                label=args.label,
                device=args.device,
                steps=args.steps,
                steps_per_s={k: round(args.steps / t, 1) for k, t in times.items()},
                us_per_op=round(us(times["op"] - times["constant"]), 2),
                us_per_op_of_four=round(us(times["op x4"] - times["constant"]) / 4, 2),
            )
        )
    )


if __name__ == "__main__":
    main()
