"""Generation rates of the ops against TensorFlow's own random ops and a copy, in one run.

    python -m tf_onthefly.rates [--mib=1024] [--repeats=7] [--unroll=10]

Each candidate (every generator, TF's stateless random ops, a copy as the memory ceiling,
and NumPy's fastest float32 generator on one host thread as the CPU yardstick) runs `unroll` times inside one tf.function (distinct steps, so nothing is cached
or folded), every output consumed; the time per call is the median over `repeats` calls
after a warm-up, synchronised by fetching the result. Rates count bytes written (for the
copy: read + written). Absolute times mean something only on a GPU.
"""
import json
import os
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
flags.DEFINE_list("only", [], "Measure only candidates whose name contains one of these.")

FEATURES = 4096  # random_batch columns; rows follow from the size


def _candidates(mib):
    """name -> (fn(step) -> tensors, bytes moved per call): every generator, ~mib MiB each."""
    from tf_onthefly.procedural_shapes import procedural_shapes
    from tf_onthefly.random_walk import random_walk
    from tf_onthefly.teacher_task import teacher_task

    size = mib << 20
    rows = max(1, size // (4 * FEATURES))
    shape = [rows, FEATURES]
    n_teacher = max(1, size // (4 * 256))
    n_images = max(1, size // (64 * 64 * 3))
    n_walks = max(1, size // (4 * 1024))
    x = tf.random.stateless_uniform(shape, seed=[3, 4])
    fb = rows * FEATURES * 4

    def ours(distribution):
        return lambda step: random_batch(rows, FEATURES, seed=[1, 2], step=step, distribution=distribution)

    return {
        "random_batch uniform": (ours("uniform"), fb + rows * 4),
        "random_batch normal": (ours("normal"), fb + rows * 4),
        "teacher_task 256->32->4": (lambda step: teacher_task(n_teacher, 256, seed=1, step=step),
                                    n_teacher * (256 + 1) * 4),
        "procedural_shapes 64x64x3 u8": (lambda step: procedural_shapes(n_images, 64, 64, seed=1, step=step),
                                         n_images * (64 * 64 * 3 + 4)),
        "random_walk length 1024": (lambda step: random_walk(n_walks, 1024, seed=1, step=step),
                                    n_walks * (1024 + 1) * 4),
        "tf.random.stateless_uniform": (lambda step: tf.random.stateless_uniform(shape, seed=tf.stack([step, 1])), fb),
        "tf.random.stateless_normal": (lambda step: tf.random.stateless_normal(shape, seed=tf.stack([step, 1])), fb),
        "copy x*2 (read+write)": (lambda step: x * tf.cast(step, tf.float32), 2 * fb),
        NUMPY: (None, fb),
    }


NUMPY = "numpy default_rng float32, out="


def _timed(name, moved, call, repeats, unroll):
    """Result row for a candidate: call(r) makes `unroll` outputs (after any warm-up); the
    median over `repeats` calls of the time per output."""
    times = []
    for r in range(repeats):
        t0 = time.perf_counter()
        call(r)
        times.append((time.perf_counter() - t0) / unroll)
    t = statistics.median(times)
    logging.info("%-32s %9.3f ms  %8.1f GB/s", name, t * 1e3, moved / t / 1e9)
    return dict(name=name, ms=t * 1e3, gb_per_s=moved / t / 1e9, bytes=moved)


def _measure_numpy(name, moved, repeats, unroll):
    """NumPy's fastest float32 generator on one host thread into a preallocated array."""
    import numpy as np

    rng = np.random.default_rng(0)
    out = np.empty(moved // 4, np.float32)
    rng.random(dtype=np.float32, out=out)  # warm up, fault the pages in

    def call(_):
        for _ in range(unroll):
            rng.random(dtype=np.float32, out=out)

    return _timed(name, moved, call, repeats, unroll)


def measure(mib=1024, repeats=7, unroll=10, only=None):
    """Times each candidate; returns [{name, ms, gb_per_s, bytes}] (time per call)."""
    results = []
    for name, (make, moved) in _candidates(mib).items():
        if only and not any(o in name for o in only):
            continue
        if make is None:  # NumPy on the host
            results.append(_measure_numpy(name, moved, repeats, unroll))
            continue

        @tf.function
        def run(step0, make=make):
            acc = tf.constant(0.0)
            # Steps are computed on the host: the ops read them from host memory, and a step
            # made on the GPU would cost each op a device-to-host copy that waits for all the
            # work queued before it (measured: a quarter of the time of a 1 GiB uniform).
            with tf.device("/CPU:0"):
                steps = [step0 + k for k in range(unroll)]
            for k in range(unroll):
                # One element of the first output keeps the op from being pruned (every
                # output comes from the same kernel); the same consumer for every candidate.
                t = tf.nest.flatten(make(steps[k]))[0]
                acc += tf.cast(tf.reshape(t, [-1])[0], tf.float32)
            return acc

        run(tf.constant(0, tf.int64)).numpy()  # trace, warm up, allocate
        results.append(_timed(name, moved, lambda r, run=run: run(tf.constant((r + 1) * unroll, tf.int64)).numpy(),
                              repeats, unroll))
    return results


def main(argv):
    del argv
    gpus = tf.config.list_physical_devices("GPU")
    device = tf.config.experimental.get_device_details(gpus[0]).get("device_name", "GPU") if gpus else "CPU"
    res = measure(FLAGS.mib, FLAGS.repeats, FLAGS.unroll, FLAGS.only)
    copy = [r for r in res if r["name"].startswith("copy")]
    by_name = {r["name"]: r for r in res}
    ceiling = copy[0]["gb_per_s"] if copy else float("nan")
    print(f"device: {device}; outputs of about {FLAGS.mib} MiB; "
          f"median of {FLAGS.repeats} calls x {FLAGS.unroll} outputs; GB/s = bytes written "
          f"(copy: read + written) / time")
    print(f"{'what':32s} {'ms/call':>9s} {'GB/s':>8s} {'of copy':>8s}")
    for r in res:
        print(f"{r['name']:32s} {r['ms']:9.3f} {r['gb_per_s']:8.1f} {r['gb_per_s'] / ceiling:8.1%}")
    if not gpus and os.environ.get("TF_CPU_ALLOCATOR_USE_BFC", "").lower() not in ("1", "true"):
        print("note: TensorFlow's default CPU allocator returns large outputs to the OS, so every "
              "call page-faults its output in again; TF_CPU_ALLOCATOR_USE_BFC=true pools them "
              "(docs/bench.md)")
    ours = by_name.get("random_batch uniform")
    if ours and NUMPY in by_name:
        print(f"random_batch uniform / NumPy: {ours['gb_per_s'] / by_name[NUMPY]['gb_per_s']:.2f}x "
              f"({'GPU' if gpus else 'CPU'} op vs one host thread of NumPy)")
    if FLAGS.json:
        with open(FLAGS.json, "w") as f:
            json.dump(dict(device=device, results=res), f, indent=1)


if __name__ == "__main__":
    app.run(main)
