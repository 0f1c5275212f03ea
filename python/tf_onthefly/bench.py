"""The main job: measure every input path side by side, and whether input is your bottleneck.

    python -m tf_onthefly.bench                    # CPU machine: CPU paths, under 2 minutes
    python -m tf_onthefly.bench --device=gpu       # every path, GPU sizes
    bazel run //:bench -- --out=/tmp/bench

For each configuration (the seed model: 16 features, batch 32, a small MLP; a wide one;
a CNN on procedural_shapes) it trains with each input path, in one run:

  constant        a batch already on the device: the upper bound
  numpy           NumPy batches through tf.data.Dataset.from_generator
  numpy+prefetch  the same with prefetch
  op-cpu-tfdata   the native op on the CPU inside tf.data (data.host_dataset)
  op-in-step      the native op inside the training step, on the step's device
  tf-stateless    TensorFlow's own stateless random ops inside the step

and prints steps/s, samples/s, the input overhead against the upper bound and the input
rate in GB/s; writes bench.json and bench.png to --out. `profile_input()` (and
`--profile=module:function`) answers the question for your own pipeline.
"""
import importlib
import json
import os
import time

from absl import app, flags, logging
import numpy as np
import tensorflow as tf

import tf_onthefly
from tf_onthefly import data

FLAGS = flags.FLAGS
flags.DEFINE_enum("device", "auto", ["auto", "cpu", "gpu"], "Where the model (and in-step generation) runs.")
flags.DEFINE_string("out", "bench_out", "Folder for bench.json and bench.png.")
flags.DEFINE_list("configs", ["seed", "wide", "cnn"], "Configurations to run.")
flags.DEFINE_list("paths", ["constant", "numpy", "numpy+prefetch", "op-cpu-tfdata", "op-in-step", "tf-stateless"],
                  "Input paths to run.")
flags.DEFINE_float("seconds", 0.0, "Timed seconds per measurement (0: 1.5 on CPU, 3 on GPU).")
flags.DEFINE_string("profile", "", "module:function returning (dataset, train_step): profile your own pipeline.")

PATHS = ["constant", "numpy", "numpy+prefetch", "op-cpu-tfdata", "op-in-step", "tf-stateless"]


def _configs(gpu):
    """name -> (batch, make_model, loss, generator(batch, step, first, n), numpy_batch(rng, batch), tf_batch)."""
    def mlp(shape, outputs):
        return lambda: tf.keras.Sequential([tf.keras.Input(shape), tf.keras.layers.Dense(64, activation="relu"),
                                            tf.keras.layers.Dense(64, activation="relu"), tf.keras.layers.Dense(outputs)])

    def cnn():
        return tf.keras.Sequential([
            tf.keras.Input((32, 32, 1)), tf.keras.layers.Conv2D(16, 3, activation="relu"), tf.keras.layers.MaxPooling2D(),
            tf.keras.layers.Conv2D(32, 3, activation="relu"), tf.keras.layers.MaxPooling2D(), tf.keras.layers.Flatten(),
            tf.keras.layers.Dense(3)])

    bce = tf.keras.losses.BinaryCrossentropy(from_logits=True)
    sce = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def features(batch, dim):
        return dict(
            gen=lambda step: tf_onthefly.random_batch(batch, dim, seed=1, step=step),
            numpy=lambda rng: (rng.random((batch, dim), dtype=np.float32),
                               (rng.random((batch, 1), dtype=np.float32) < 0.5).astype(np.float32)),
            tf=lambda step: (tf.random.stateless_uniform([batch, dim], seed=tf.stack([step, 1])),
                             tf.cast(tf.random.stateless_uniform([batch, 1], seed=tf.stack([step, 2])) < 0.5,
                                     tf.float32)))

    wide = 65536 if gpu else 4096
    images = 1024 if gpu else 64
    return {
        "seed": dict(batch=32, model=mlp((16,), 1), loss=bce, **features(32, 16)),
        "wide": dict(batch=wide, model=mlp((256,), 1), loss=bce, **features(wide, 256)),
        "cnn": dict(batch=images, model=cnn, loss=sce,
                    gen=lambda step: tf_onthefly.procedural_shapes(images, 32, 32, seed=1, step=step, channels=1,
                                                                    dtype=tf.float32),
                    numpy=lambda rng: (rng.random((images, 32, 32, 1), dtype=np.float32),
                                       rng.integers(0, 3, (images, 1), dtype=np.int32)),
                    tf=lambda step: (tf.random.stateless_uniform([images, 32, 32, 1], seed=tf.stack([step, 1])),
                                     tf.random.stateless_uniform([images, 1], seed=tf.stack([step, 2]), minval=0,
                                                                 maxval=3, dtype=tf.int32))),
    }


def _timed(fn, seconds, warmup=3):
    """Calls fn(i) for about `seconds` after warm-up; returns steps per second (synchronised)."""
    for i in range(warmup):
        out = fn(i)
    float(out)
    steps, t0 = 0, time.perf_counter()
    while True:
        out = fn(warmup + steps)
        steps += 1
        if steps % 8 == 0 and time.perf_counter() - t0 > seconds:
            break
    float(out)  # wait for the device
    return steps / (time.perf_counter() - t0)


def run_path(cfg, path, device, seconds):
    tf.keras.utils.set_random_seed(0)
    with tf.device(device):
        model = cfg["model"]()
        opt = tf.keras.optimizers.Adam(1e-3)
        loss_fn = cfg["loss"]

        def apply(x, y):
            with tf.GradientTape() as tape:
                loss = loss_fn(y, model(x, training=True))
            opt.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
            return loss

        step_on_batch = tf.function(apply)
        if path == "constant":
            # Captured, so the call looks like the in-step paths' (one int64 argument).
            x, y = (tf.identity(t) for t in cfg["gen"](tf.constant(0, tf.int64)))
            step_fn = tf.function(lambda s: apply(x, y))
            return _timed(lambda i: step_fn(tf.constant(i, tf.int64)), seconds)
        if path in ("op-in-step", "tf-stateless"):
            make = cfg["gen"] if path == "op-in-step" else cfg["tf"]
            step_fn = tf.function(lambda s: apply(*make(s)))
            return _timed(lambda i: step_fn(tf.constant(i, tf.int64)), seconds)
        if path == "op-cpu-tfdata":
            ds = data.host_dataset(cfg["gen"])
        else:
            rng = np.random.default_rng(0)
            x0, y0 = cfg["numpy"](rng)
            sig = (tf.TensorSpec(x0.shape, tf.as_dtype(x0.dtype)), tf.TensorSpec(y0.shape, tf.as_dtype(y0.dtype)))
            ds = data.from_python(lambda: iter(lambda: cfg["numpy"](rng), None), sig,
                                  prefetch=path == "numpy+prefetch")
        it = iter(ds)
        return _timed(lambda i: step_on_batch(*next(it)), seconds)


def batch_bytes(cfg):
    return sum(int(np.prod(t.shape)) * t.dtype.size for t in cfg["gen"](tf.constant(0, tf.int64)))


def run(configs, paths, gpu, seconds, progress=print):
    device = "/GPU:0" if gpu else "/CPU:0"
    table = []
    all_cfgs = _configs(gpu)
    todo = [(c, p) for c in configs for p in paths]
    for n, (name, path) in enumerate(todo, 1):
        cfg = all_cfgs[name]
        if path == "op-in-step" and not gpu:
            label = "op-in-step (CPU)"
        else:
            label = path
        rate = run_path(cfg, path, device, seconds)
        row = dict(config=name, path=label, batch=cfg["batch"], steps_per_s=rate,
                   samples_per_s=rate * cfg["batch"], input_gb_per_s=rate * batch_bytes(cfg) / 1e9)
        table.append(row)
        progress(f"[{n}/{len(todo)}] {name:5s} {label:18s} {rate:10.1f} steps/s")
    for row in table:
        base = [r for r in table if r["config"] == row["config"] and r["path"] == "constant"]
        row["overhead_pct"] = 100.0 * (1 - row["steps_per_s"] / base[0]["steps_per_s"]) if base else float("nan")
    return table


def format_table(table):
    lines = [f"{'config':6s} {'batch':>6s} {'path':18s} {'steps/s':>9s} {'samples/s':>11s} {'overhead':>9s} {'input GB/s':>10s}"]
    for r in table:
        lines.append(f"{r['config']:6s} {r['batch']:6d} {r['path']:18s} {r['steps_per_s']:9.1f} "
                     f"{r['samples_per_s']:11.0f} {r['overhead_pct']:8.1f}% {r['input_gb_per_s']:10.3f}")
    return "\n".join(lines)


def write_outputs(table, out, meta):
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "bench.json"), "w") as f:
        json.dump(dict(meta, results=table), f, indent=1)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    configs = list(dict.fromkeys(r["config"] for r in table))
    fig, axes = plt.subplots(1, len(configs), figsize=(5 * len(configs), 4), squeeze=False)
    for ax, name in zip(axes[0], configs):
        rows = [r for r in table if r["config"] == name]
        bars = ax.barh([r["path"] for r in rows], [r["samples_per_s"] for r in rows], color="tab:blue")
        for bar, r in zip(bars, rows):  # the input overhead against the constant batch
            ax.text(bar.get_width(), bar.get_y() + bar.get_height() / 2, f" {r['overhead_pct']:+.0f}%",
                    va="center", fontsize=8)
        ax.set_xlim(0, max(r["samples_per_s"] for r in rows) * 1.2)
        ax.set_title(f"{name} (batch {rows[0]['batch']})")
        ax.set_xlabel("samples/s (label: overhead vs constant)")
        ax.invert_yaxis()
    fig.suptitle(f"tf_onthefly input paths on {meta['device']}")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "bench.png"), dpi=90)
    plt.close(fig)


def profile_input(dataset, train_step, steps=50, warmup=5):
    """Is input the bottleneck? Times train_step on your dataset and on one cached batch.

    Args:
      dataset: your tf.data.Dataset (or any iterable of batches).
      train_step: a function taking one batch (as the dataset yields it), e.g. a tf.function.
    Returns:
      dict(real_ms, cached_ms, input_share, verdict): step time with real input, on a
      batch already in memory, the share of step time spent waiting for input, and the
      verdict in one sentence.
    """
    it = iter(dataset)
    cached = next(it)
    cached = tf.nest.map_structure(tf.identity, cached)

    def timed(fetch):
        for _ in range(warmup):
            out = train_step(fetch())
        _sync(out)
        t0 = time.perf_counter()
        for _ in range(steps):
            out = train_step(fetch())
        _sync(out)
        return (time.perf_counter() - t0) / steps * 1e3

    cached_ms = timed(lambda: cached)
    real_ms = timed(lambda: next(it))
    share = max(0.0, 1.0 - cached_ms / real_ms)
    if share > 0.1:
        verdict = (f"Input is your bottleneck: a step takes {real_ms:.2f} ms with your input but {cached_ms:.2f} ms "
                   f"on a cached batch, so {share:.0%} of each step waits for data; generate on the device "
                   f"(tf_onthefly.data.GeneratorModel) or parallelise the input pipeline.")
    else:
        verdict = (f"Input is not your bottleneck: a step takes {real_ms:.2f} ms with your input and "
                   f"{cached_ms:.2f} ms on a cached batch ({share:.0%} waiting for data); optimise the model step.")
    return dict(real_ms=real_ms, cached_ms=cached_ms, input_share=share, verdict=verdict)


def _sync(out):
    for t in tf.nest.flatten(out):
        if hasattr(t, "numpy"):
            t.numpy()


def main(argv):
    del argv
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    if FLAGS.profile:
        module, fn = FLAGS.profile.split(":")
        dataset, train_step = getattr(importlib.import_module(module), fn)()
        print(profile_input(dataset, train_step)["verdict"])
        return 0
    gpus = tf.config.list_physical_devices("GPU")
    gpu = FLAGS.device == "gpu" or (FLAGS.device == "auto" and bool(gpus))
    if gpu and not gpus:
        raise app.UsageError("--device=gpu but TensorFlow sees no GPU")
    seconds = FLAGS.seconds or (3.0 if gpu else 1.5)
    device_name = (tf.config.experimental.get_device_details(gpus[0]).get("device_name", "GPU") if gpu
                   else f"CPU ({os.cpu_count()} cores)")
    print(f"tf_onthefly {tf_onthefly.__version__} bench on {device_name}; {seconds:g} s per measurement")
    t0 = time.perf_counter()
    table = run(FLAGS.configs, FLAGS.paths, gpu, seconds)
    print()
    print(format_table(table))
    meta = dict(device=device_name, tensorflow=tf.__version__, seconds=seconds, date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))
    write_outputs(table, FLAGS.out, meta)
    print(f"\nwrote {os.path.join(FLAGS.out, 'bench.json')} and bench.png ({time.perf_counter() - t0:.0f} s)")
    print("Reading it: docs/bench.md. 'overhead' is the loss in steps/s against the constant batch.")
    return 0


if __name__ == "__main__":
    app.run(main)
