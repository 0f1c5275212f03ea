"""Generation rates of the ops next to TensorFlow's random ops, a copy and NumPy, in one run.

    python -m benchmarks.rates [--mib=256,1024,4096] [--repeats=7] [--unroll=20]

TF candidates (every registered generator, random_batch's uniform and normal features, the
same under XLA, TF's stateless random ops, a copy as the memory ceiling) run `unroll` times
inside one tf.function (distinct steps from a step counter kept where the candidate reads
it: on the device for our ops, on the host for TF's stateless ops), each output consumed by
one element; the time per output is the median over `repeats` calls after a
warm-up, synchronised by fetching the result. NumPy's float32 generators run on one host
thread into a preallocated array (the CPU yardstick). Rates count bytes written (the copy:
read + written). Absolute times mean something only on a GPU. The same outputs from
PyTorch, JAX and CuPy: benchmarks/peer_rates.py (docs/performance.md).
"""

import json
import os

import numpy as np
import tensorflow as tf
from absl import app, flags, logging

import tf_onthefly
from tf_onthefly import _load
from tf_onthefly.bench import timing

FLAGS = flags.FLAGS
flags.DEFINE_list("mib", ["1024"], "Output sizes, MiB of float32.")
flags.DEFINE_integer("repeats", 7, "Timed calls per candidate (median reported).")
flags.DEFINE_integer("unroll", 20, "Outputs generated per timed call.")
flags.DEFINE_string("json", "", "Also write the results here.")
flags.DEFINE_list("only", [], "Measure only candidates whose name contains one of these.")

FEATURES = 4096  # random_batch columns; rows follow from the size
DEVICE_STEPS, HOST_STEPS = "device", "host"  # where a candidate's step counter lives
NUMPY = "numpy default_rng random float32, out="
NUMPY_NORMAL = "numpy default_rng standard_normal float32, out="


def _scaled(spec, size):
    """A generator's canonical example with batch_size scaled so its outputs hold ~size bytes."""
    example = dict(spec.examples[0], batch_size=1)
    per_sample = sum(int(np.prod(t.shape)) * t.dtype.size for t in spec.fn(**example, seed=1, step=0))
    example["batch_size"] = max(1, size // per_sample)
    return example, example["batch_size"] * per_sample


def candidates(size):
    """name -> (fn(step) -> tensors, bytes moved per call, jit, where its steps live): ~size bytes
    each."""
    rows = max(1, size // (4 * FEATURES))
    shape = [rows, FEATURES]
    fb = rows * FEATURES * 4
    x = tf.random.stateless_uniform(shape, seed=[3, 4])

    def ours(distribution, dtype=tf.float32):
        return lambda step: tf_onthefly.random_batch(
            rows, FEATURES, seed=[1, 2], step=step, distribution=distribution, dtype=dtype
        )

    out = {
        "random_batch uniform": (ours("uniform"), fb + rows * 4, False),
        "random_batch normal": (ours("normal"), fb + rows * 4, False),
        "random_batch uniform, XLA": (ours("uniform"), fb + rows * 4, True),
        "random_batch normal, XLA": (ours("normal"), fb + rows * 4, True),
        # The same samples in half the bytes: compare samples/s (ms) with the float32 rows.
        "random_batch uniform bfloat16": (ours("uniform", tf.bfloat16), fb // 2 + rows * 4, False),
        "random_batch normal bfloat16": (ours("normal", tf.bfloat16), fb // 2 + rows * 4, False),
        "random_batch uniform float16": (ours("uniform", tf.float16), fb // 2 + rows * 4, False),
        "random_batch normal float16": (ours("normal", tf.float16), fb // 2 + rows * 4, False),
    }
    if not _load.HAS_XLA:
        out = {k: v for k, v in out.items() if not v[2]}
    for name, spec in tf_onthefly.REGISTRY.items():
        example, moved = _scaled(spec, size)
        shown = ", ".join(f"{k}={v.name if hasattr(v, 'name') else v}" for k, v in example.items() if k != "batch_size")
        out[f"{name} ({shown})"] = (
            lambda step, spec=spec, example=example: spec.fn(**example, seed=1, step=step),
            moved,
            False,
        )
    out.update(
        {
            # TF's stateless ops read their seed on the host: their steps stay there.
            "tf.random.stateless_uniform": (
                lambda step: tf.random.stateless_uniform(shape, seed=tf.stack([step, 1])),
                fb,
                False,
                HOST_STEPS,
            ),
            "tf.random.stateless_normal": (
                lambda step: tf.random.stateless_normal(shape, seed=tf.stack([step, 1])),
                fb,
                False,
                HOST_STEPS,
            ),
            "copy x*2 (read+write)": (lambda step: x * tf.cast(step, tf.float32), 2 * fb, False),
            NUMPY: (None, fb, False),
            NUMPY_NORMAL: (None, fb, False),
        }
    )
    return {k: v if len(v) == 4 else (*v, DEVICE_STEPS) for k, v in out.items()}


def _row(name, moved, seconds_per_output, size):
    logging.info("%-48s %9.3f ms  %8.1f GB/s", name, seconds_per_output * 1e3, moved / seconds_per_output / 1e9)
    return dict(
        name=name, mib=size >> 20, ms=seconds_per_output * 1e3, gb_per_s=moved / seconds_per_output / 1e9, bytes=moved
    )


def time_per_output(call, repeats, unroll):
    """Median over `repeats` of call()'s wall time (call makes `unroll` outputs, synchronised),
    per output; call() has run once before, so there is no warm-up here."""
    return timing.summary(timing.call_times(call, repeats, warmup=0))["median"] / unroll


def _measure_numpy(name, moved, repeats, unroll):
    """NumPy's float32 generators on one host thread into a preallocated array."""
    rng = np.random.default_rng(0)
    out = np.empty(moved // 4, np.float32)
    draw = rng.random if name == NUMPY else rng.standard_normal
    draw(dtype=np.float32, out=out)  # warm up, fault the pages in

    def call():
        for _ in range(unroll):
            draw(dtype=np.float32, out=out)

    return time_per_output(call, repeats, unroll)


def _measure_tf(make, jit, repeats, unroll, steps):
    # The step counter lives where the candidate reads it, as in a training loop
    # (GeneratorModel keeps it on the device): on the GPU for our ops, whose kernels read seed
    # and step in device memory, on the host for TF's stateless ops. A step made on the host
    # for a GPU kernel costs a host-to-device copy per op, which inside TF takes 0.5-0.7 ms
    # (benchmarks/op_timeline.py --steps_on=cpu; docs/performance.md, "What one op costs in
    # a step"), more than the kernel.
    on = "/CPU:0" if steps == HOST_STEPS or not tf.config.list_physical_devices("GPU") else "/GPU:0"
    with tf.device(on):
        counter = tf.Variable(0, dtype=tf.int64)

    @tf.function(jit_compile=jit)
    def run():
        acc = tf.constant(0.0)
        with tf.device(on):
            step0 = counter.assign_add(unroll)
            step_list = [step0 + k for k in range(unroll)]
        for k in range(unroll):
            # One element of the first output keeps the op from being pruned (every output
            # comes from the same kernel); the same consumer for every candidate.
            t = tf.nest.flatten(make(step_list[k]))[0]
            acc += tf.cast(tf.reshape(t, [-1])[0], tf.float32)
        return acc

    run().numpy()  # trace, warm up, allocate
    return time_per_output(lambda: run().numpy(), repeats, unroll)


def measure(sizes_mib=(1024,), repeats=7, unroll=20, only=None):
    """Times each candidate at each size; returns (rows, notes)."""
    sizes = [int(m) << 20 for m in sizes_mib]
    rows, notes = [], []
    if not _load.HAS_XLA:
        notes.append(f"XLA rows skipped: the op library for TensorFlow {_load.VARIANT['minor']} has no XLA kernels")
    for size in sizes:
        for name, (make, moved, jit, steps) in candidates(size).items():
            if only and not any(o in name for o in only):
                continue
            if make is None:
                seconds = _measure_numpy(name, moved, repeats, unroll)
            else:
                seconds = _measure_tf(make, jit, repeats, unroll, steps)
            rows.append(_row(name, moved, seconds, size))
    return rows, notes


def main(argv):
    del argv
    gpus = tf.config.list_physical_devices("GPU")
    device = tf.config.experimental.get_device_details(gpus[0]).get("device_name", "GPU") if gpus else "CPU"
    rows, notes = measure(FLAGS.mib, FLAGS.repeats, FLAGS.unroll, FLAGS.only)
    print(
        f"device: {device}; median of {FLAGS.repeats} calls x {FLAGS.unroll} outputs; GB/s = bytes written "
        f"(copy: read + written) / time"
    )
    for size in sorted({r["mib"] for r in rows}):
        sized = [r for r in rows if r["mib"] == size]
        copy = [r for r in sized if r["name"].startswith("copy")]
        ceiling = copy[0]["gb_per_s"] if copy else float("nan")
        print(f"\n{size} MiB outputs\n{'what':64s} {'ms/output':>9s} {'GB/s':>8s} {'of copy':>8s}")
        for r in sorted(sized, key=lambda r: -r["gb_per_s"]):
            print(f"{r['name']:64s} {r['ms']:9.3f} {r['gb_per_s']:8.1f} {r['gb_per_s'] / ceiling:8.1%}")
        by_name = {r["name"]: r for r in sized}
        for ours, numpy_name in [("random_batch uniform", NUMPY), ("random_batch normal", NUMPY_NORMAL)]:
            if ours in by_name and numpy_name in by_name:
                print(
                    f"{ours} / NumPy: {by_name[ours]['gb_per_s'] / by_name[numpy_name]['gb_per_s']:.2f}x "
                    f"({'GPU' if gpus else 'CPU'} op vs one host thread of NumPy)"
                )
    for note in notes:
        print("note:", note)
    if not gpus and os.environ.get("TF_CPU_ALLOCATOR_USE_BFC", "").lower() not in ("1", "true"):
        print(
            "note: TensorFlow's default CPU allocator returns large outputs to the OS, so every "
            "call page-faults its output in again; TF_CPU_ALLOCATOR_USE_BFC=true pools them "
            "(docs/bench.md)"
        )
    if FLAGS.json:
        with open(FLAGS.json, "w") as f:
            json.dump(dict(device=device, results=rows, notes=notes), f, indent=1)


if __name__ == "__main__":
    app.run(main)
