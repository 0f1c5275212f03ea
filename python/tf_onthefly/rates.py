"""Generation rates of the ops against TensorFlow's own random ops and a copy, in one run.

    python -m tf_onthefly.rates [--mib=1024] [--repeats=7] [--unroll=10]

Each candidate runs `unroll` times inside one tf.function (distinct steps, so nothing is
cached or folded), each output reduced to one element; the time per output is the median
over `repeats` calls after a warm-up, synchronised by fetching the result. Rates count
bytes written (for the copy: written + read). Absolute times mean something only on a GPU.
"""
import json
import statistics
import time

from absl import app, flags, logging
import tensorflow as tf

from tf_onthefly.random_batch import random_batch

FLAGS = flags.FLAGS
flags.DEFINE_integer("mib", 1024, "Size of each generated output, MiB of float32.")
flags.DEFINE_integer("repeats", 7, "Timed calls per candidate (median reported).")
flags.DEFINE_integer("unroll", 10, "Outputs generated per timed call.")
flags.DEFINE_string("json", "", "Also write the results here.")

FEATURES = 4096  # columns; rows follow from the size


def _candidates(rows, cols):
    shape = [rows, cols]

    def ours(distribution):
        return lambda step: random_batch(rows, cols, seed=[1, 2], step=step, distribution=distribution)[0]

    x = tf.random.stateless_uniform(shape, seed=[3, 4])
    return {
        "random_batch uniform": (ours("uniform"), 1),
        "random_batch normal": (ours("normal"), 1),
        "tf.random.stateless_uniform": (lambda step: tf.random.stateless_uniform(shape, seed=tf.stack([step, 1])), 1),
        "tf.random.stateless_normal": (lambda step: tf.random.stateless_normal(shape, seed=tf.stack([step, 1])), 1),
        "copy x*2 (read+write)": (lambda step: x * tf.cast(step, tf.float32), 2),
    }


def measure(mib=1024, repeats=7, unroll=10):
    rows = max(1, mib * (1 << 20) // (4 * FEATURES))
    out_bytes = rows * FEATURES * 4
    results = []
    for name, (make, traffic) in _candidates(rows, FEATURES).items():
        @tf.function
        def run(step0, make=make):
            acc = tf.constant(0.0)
            for k in range(unroll):
                acc += make(step0 + k)[0, 0]
            return acc

        run(tf.constant(0, tf.int64)).numpy()  # trace, warm up, allocate
        times = []
        for r in range(repeats):
            t0 = time.perf_counter()
            run(tf.constant((r + 1) * unroll, tf.int64)).numpy()
            times.append((time.perf_counter() - t0) / unroll)
        t = statistics.median(times)
        results.append(dict(name=name, ms=t * 1e3, tb_per_s=traffic * out_bytes / t / 1e12,
                            bytes=out_bytes))
        logging.info("%-32s %9.3f ms  %6.3f TB/s", name, t * 1e3, results[-1]["tb_per_s"])
    return results


def main(argv):
    del argv
    gpus = tf.config.list_physical_devices("GPU")
    device = tf.config.experimental.get_device_details(gpus[0]).get("device_name", "GPU") if gpus else "CPU"
    res = measure(FLAGS.mib, FLAGS.repeats, FLAGS.unroll)
    base = {r["name"]: r for r in res}
    ref = base["tf.random.stateless_uniform"]["ms"]
    print(f"device: {device}; output {res[0]['bytes'] / 2**20:.0f} MiB float32; "
          f"median of {FLAGS.repeats} calls x {FLAGS.unroll} outputs")
    print(f"{'what':32s} {'ms/output':>10s} {'TB/s':>7s} {'vs stateless_uniform':>21s}")
    for r in res:
        print(f"{r['name']:32s} {r['ms']:10.3f} {r['tb_per_s']:7.3f} {ref / r['ms']:20.2f}x")
    if FLAGS.json:
        with open(FLAGS.json, "w") as f:
            json.dump(dict(device=device, results=res), f, indent=1)


if __name__ == "__main__":
    app.run(main)
