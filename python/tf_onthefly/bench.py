"""The input benchmark: measure every input path side by side, and whether input is your bottleneck.

    python -m tf_onthefly.bench                    # CPU machine: CPU paths
    python -m tf_onthefly.bench --device=gpu       # every path, GPU sizes, with and without XLA
    bazel run //:bench -- --out=/tmp/bench

For each configuration (the seed model: 16 features, batch 32, a small MLP; a wide one;
a CNN on procedural_shapes) it trains with each input path, in each execution mode, in
one run:

  paths
    constant        a batch already on the device: the upper bound
    numpy           NumPy batches through tf.data.Dataset.from_generator
    numpy+prefetch  the same with prefetch
    op-cpu-tfdata   the native op on the CPU inside tf.data (data.host_dataset)
    op-in-step      the native op inside the training step, on the step's device
                    (data.GeneratorModel, data.DataPosition)
    tf-stateless    TensorFlow's own stateless random ops inside the step
  modes
    fit1            keras model.fit, one step per call (steps_per_execution=1)
    fit64           keras model.fit, steps_per_execution=64
    loop64          a custom loop: one tf.function call runs 64 steps in a graph loop
  jit
    off / on        XLA compiles the step (keras jit_compile; for op-in-step the generator
                    op is compiled with it)

and prints steps/s, samples/s, the speed against the constant batch of the same mode
and jit setting, and the input rate in GB/s (medians over --rounds rounds, the paths timed
in turn); writes bench.json and bench.png to --out.
`profile_input()` (and `--profile=module:function`) answers the question for your own
pipeline.
"""

import importlib
import json
import os
import time

import numpy as np
import tensorflow as tf
from absl import app, flags

import tf_onthefly
from tf_onthefly import _load, data, models

PATHS = ["constant", "numpy", "numpy+prefetch", "op-cpu-tfdata", "op-in-step", "tf-stateless"]
MODES = ["fit1", "fit64", "loop64"]
IN_STEP = ("constant", "op-in-step", "tf-stateless")  # paths whose batch is made inside the step

FLAGS = flags.FLAGS
flags.DEFINE_enum("device", "auto", ["auto", "cpu", "gpu"], "Where the model (and in-step generation) runs.")
flags.DEFINE_string("out", "bench_out", "Folder for bench.json and bench.png.")
flags.DEFINE_list("configs", ["seed", "wide", "cnn"], "Configurations to run.")
flags.DEFINE_list("paths", PATHS, "Input paths to run.")
flags.DEFINE_list("modes", MODES, "Execution modes to run.")
flags.DEFINE_list("jit", [], "XLA settings to run, of off,on (default: off on a CPU, off,on on a GPU).")
flags.DEFINE_float("seconds", 0.0, "Timed seconds per measurement (0: 1 on a CPU, 2 on a GPU).")
flags.DEFINE_integer(
    "rounds", 0, "Rounds of measurements, paths in turn; rows report medians (0: 1 on a CPU, 3 on a GPU)."
)
flags.DEFINE_string("profile", "", "module:function returning (dataset, train_step): profile your own pipeline.")


def configs(gpu):
    """name -> dict(batch, model(), loss, gen(step), numpy(rng), tf(step)): the batch each
    path feeds, made by our op, by NumPy and by TF's stateless ops."""
    bce = tf.keras.losses.BinaryCrossentropy(from_logits=True)
    sce = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def features(batch, dim):
        return dict(
            gen=lambda step: tf_onthefly.random_batch(batch, dim, seed=1, step=step),
            numpy=lambda rng: (
                rng.random((batch, dim), dtype=np.float32),
                (rng.random((batch, 1), dtype=np.float32) < 0.5).astype(np.float32),
            ),
            tf=lambda step: (
                tf.random.stateless_uniform([batch, dim], seed=tf.stack([step, 1])),
                tf.cast(tf.random.stateless_uniform([batch, 1], seed=tf.stack([step, 2])) < 0.5, tf.float32),
            ),
        )

    wide = 65536 if gpu else 4096
    images = 1024 if gpu else 64
    return {
        "seed": dict(batch=32, model=lambda: models.mlp(16, 1), loss=bce, **features(32, 16)),
        "wide": dict(batch=wide, model=lambda: models.mlp(256, 1), loss=bce, **features(wide, 256)),
        "cnn": dict(
            batch=images,
            model=lambda: models.cnn((32, 32, 1), 3),
            loss=sce,
            gen=lambda step: tf_onthefly.procedural_shapes(
                images, 32, 32, seed=1, step=step, channels=1, dtype=tf.float32
            ),
            numpy=lambda rng: (
                rng.random((images, 32, 32, 1), dtype=np.float32),
                rng.integers(0, 3, (images, 1), dtype=np.int32),
            ),
            tf=lambda step: (
                tf.random.stateless_uniform([images, 32, 32, 1], seed=tf.stack([step, 1])),
                tf.random.stateless_uniform([images, 1], seed=tf.stack([step, 2]), minval=0, maxval=3, dtype=tf.int32),
            ),
        ),
    }


def _batch_generator(cfg, path):
    """step -> batch, for the paths that make their batch inside the step."""
    if path == "constant":
        x, y = (tf.identity(t) for t in cfg["gen"](tf.constant(0, tf.int64)))  # made once, on the device
        return lambda step: (x, y)
    return cfg["gen"] if path == "op-in-step" else cfg["tf"]


def _dataset(cfg, path):
    """The tf.data pipeline of the paths that feed batches from outside the step."""
    if path == "op-cpu-tfdata":
        return data.host_dataset(cfg["gen"])
    rng = np.random.default_rng(0)
    x0, y0 = cfg["numpy"](rng)
    sig = (tf.TensorSpec(x0.shape, tf.as_dtype(x0.dtype)), tf.TensorSpec(y0.shape, tf.as_dtype(y0.dtype)))
    return data.from_python(lambda: iter(lambda: cfg["numpy"](rng), None), sig, prefetch=path == "numpy+prefetch")


def _fit_runner(cfg, path, steps_per_execution, jit):
    """run(steps): model.fit for `steps` steps, as a user of that path would write it."""
    if path in IN_STEP:
        model, ds = data.GeneratorModel(cfg["model"](), _batch_generator(cfg, path)), data.device_dataset()
    else:
        model, ds = cfg["model"](), _dataset(cfg, path)
    model.compile(
        optimizer=tf.keras.optimizers.Adam(1e-3),
        loss=cfg["loss"],
        steps_per_execution=steps_per_execution,
        jit_compile=jit,
    )
    return lambda steps: model.fit(ds, epochs=1, steps_per_epoch=steps, verbose=0)


def _loop_runner(cfg, path, loop_steps, jit):
    """run(steps): calls of one tf.function that runs `loop_steps` steps in a graph loop."""
    apply = models.train_step(cfg["model"](), cfg["loss"], tf.keras.optimizers.Adam(1e-3))
    if path in IN_STEP:
        # The whole loop, generation included, in one function (one XLA cluster with jit).
        position = data.DataPosition(_batch_generator(cfg, path))
        call = tf.function(lambda n: position.run_steps(lambda batch: apply(*batch), n), jit_compile=jit)
    else:
        # A dataset iterator cannot be compiled: XLA compiles the step inside the loop.
        iterator = iter(_dataset(cfg, path))
        step = tf.function(apply, jit_compile=jit)

        @tf.function
        def call(n):
            loss = step(*next(iterator))
            for _ in tf.range(n - 1):
                loss = step(*next(iterator))
            return loss

    def run(steps):
        for _ in range(max(1, steps // loop_steps)):
            out = call(tf.constant(loop_steps, tf.int64))
        out.numpy()  # wait for the device

    return run


def calibrate(run, granule, seconds):
    """Traces and warms up run(steps); returns n, the steps of one timing: a multiple of
    `granule` (the steps of one call), doubled until a call of n steps lasts a third of
    `seconds`."""
    run(granule)  # trace, compile, warm up
    steps = granule
    while _timed(run, steps) < seconds / 3 and steps < 1 << 24:
        steps *= 2
    return steps


def rate(run, steps):
    """Steps per second of run(), without its fixed cost per call: n and 2n steps are
    timed and the rate is n over the difference, so keras fit()'s own set-up per call,
    which is large next to a small step, cancels out."""
    t_n, t_2n = _timed(run, steps), _timed(run, 2 * steps)
    return steps / (t_2n - t_n) if t_2n > 1.1 * t_n else 2 * steps / t_2n


def _timed(run, steps):
    t0 = time.perf_counter()
    run(steps)
    return time.perf_counter() - t0


def _runner(cfg, path, mode, jit):
    """(run(steps), granule) of one row."""
    if mode == "loop64":
        return _loop_runner(cfg, path, 64, jit), 64
    spe = int(mode[len("fit") :])
    return _fit_runner(cfg, path, spe, jit), spe


def run(config_names, paths, modes, jits, gpu, seconds, rounds=1, progress=print):
    """Measures every (config, path, mode, jit); returns the rows (dicts).

    The paths of one (config, mode, jit) are built and calibrated together, then timed
    `rounds` times in turn (path after path, round after round), so a slow spell of the
    machine falls on every path alike; a row reports the median rate, and its ratio to
    the constant batch is the median of the rounds' ratios.
    """
    device = "/GPU:0" if gpu else "/CPU:0"
    all_cfgs = configs(gpu)
    groups = [(c, m, j) for c in config_names for m in modes for j in jits]
    total, done, table = len(groups) * len(paths), 0, []
    for name, mode, jit in groups:
        cfg, runners = all_cfgs[name], {}
        for path in paths:
            if jit and path == "op-in-step" and not _load.HAS_XLA:
                done += 1
                progress(
                    f"[{done}/{total}] {name:5s} {mode:6s} jit=on  {path:15s} skipped: the op library for "
                    f"TensorFlow {_load.VARIANT['minor']} has no XLA kernels"
                )
                continue
            tf.keras.utils.set_random_seed(0)
            with tf.device(device):
                run_path, granule = _runner(cfg, path, mode, jit)
                runners[path] = run_path, calibrate(run_path, granule, seconds)
        rates = {path: [] for path in runners}
        for _ in range(rounds):
            for path, (run_path, steps) in runners.items():
                with tf.device(device):
                    rates[path].append(rate(run_path, steps))
        base, nbytes = rates.get("constant"), batch_bytes(cfg)
        for path, samples in rates.items():
            done += 1
            row_rate = float(np.median(samples))
            table.append(
                dict(
                    config=name,
                    path=path,
                    mode=mode,
                    jit=jit,
                    batch=cfg["batch"],
                    steps_per_s=row_rate,
                    samples_per_s=row_rate * cfg["batch"],
                    input_gb_per_s=row_rate * nbytes / 1e9,
                    vs_constant=float(np.median([a / b for a, b in zip(samples, base)])) if base else float("nan"),
                    spread=float((max(samples) - min(samples)) / row_rate),
                    rounds=[float(r) for r in samples],
                )
            )
            progress(
                f"[{done}/{total}] {name:5s} {mode:6s} jit={'on' if jit else 'off':3s} {path:15s} "
                f"{row_rate:10.1f} steps/s"
            )
    return table


def batch_bytes(cfg):
    return sum(int(np.prod(t.shape)) * t.dtype.size for t in cfg["gen"](tf.constant(0, tf.int64)))


def format_table(table):
    lines = [
        f"{'config':6s} {'batch':>6s} {'mode':6s} {'jit':3s} {'path':15s} {'steps/s':>9s} {'samples/s':>11s} "
        f"{'vs constant':>11s} {'input GB/s':>10s} {'spread':>6s}"
    ]
    for r in table:
        lines.append(
            f"{r['config']:6s} {r['batch']:6d} {r['mode']:6s} {'on' if r['jit'] else 'off':3s} "
            f"{r['path']:15s} {r['steps_per_s']:9.1f} {r['samples_per_s']:11.0f} "
            f"{r['vs_constant']:10.2f}x {r['input_gb_per_s']:10.3f} {r['spread']:6.0%}"
        )
    return "\n".join(lines)


def speed_label(ratio):
    """'12 % slower' / '3 % faster' than the constant batch (a loss reads as a loss)."""
    if not np.isfinite(ratio):
        return ""
    pct = round(100 * (ratio - 1))
    return "same as constant" if pct == 0 else f"{abs(pct)} % {'faster' if pct > 0 else 'slower'}"


def write_outputs(table, out, meta):
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "bench.json"), "w") as f:
        json.dump(dict(meta, results=table), f, indent=1)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    config_names = list(dict.fromkeys(r["config"] for r in table))
    settings = list(dict.fromkeys((r["mode"], r["jit"]) for r in table))
    fig, axes = plt.subplots(
        1, len(config_names), figsize=(6 * len(config_names), 1.2 + 0.9 * len(settings) * 2), squeeze=False
    )
    colors = plt.get_cmap("tab10")
    for ax, name in zip(axes[0], config_names):
        rows = [r for r in table if r["config"] == name]
        paths = list(dict.fromkeys(r["path"] for r in rows))
        height = 0.8 / len(settings)
        for k, (mode, jit) in enumerate(settings):
            sub = {r["path"]: r for r in rows if (r["mode"], r["jit"]) == (mode, jit)}
            ys = [i + k * height for i, p in enumerate(paths) if p in sub]
            vals = [sub[p]["samples_per_s"] for p in paths if p in sub]
            bars = ax.barh(ys, vals, height=height, color=colors(k), label=f"{mode}, jit {'on' if jit else 'off'}")
            for bar, p in zip(bars, [p for p in paths if p in sub]):
                ax.text(
                    bar.get_width(),
                    bar.get_y() + bar.get_height() / 2,
                    " " + speed_label(sub[p]["vs_constant"]),
                    va="center",
                    fontsize=7,
                )
        ax.set_yticks([i + 0.4 - height / 2 for i in range(len(paths))], paths)
        ax.set_xlim(0, max(r["samples_per_s"] for r in rows) * 1.35)
        ax.set_title(f"{name} (batch {rows[0]['batch']})")
        ax.set_xlabel("samples/s (label: against the constant batch, same mode)")
        ax.invert_yaxis()
        ax.legend(fontsize=7, loc="lower right")
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
    cached = tf.nest.map_structure(tf.identity, next(it))

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
        verdict = (
            f"Input is your bottleneck: a step takes {real_ms:.2f} ms with your input but {cached_ms:.2f} ms "
            f"on a cached batch, so {share:.0%} of each step waits for data; generate on the device "
            f"(tf_onthefly.data.GeneratorModel) or parallelise the input pipeline."
        )
    else:
        verdict = (
            f"Input is not your bottleneck: a step takes {real_ms:.2f} ms with your input and "
            f"{cached_ms:.2f} ms on a cached batch ({share:.0%} waiting for data); optimise the model step."
        )
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
    seconds = FLAGS.seconds or (2.0 if gpu else 1.0)
    rounds = FLAGS.rounds or (3 if gpu else 1)
    jits = [j == "on" for j in (FLAGS.jit or (["off", "on"] if gpu else ["off"]))]
    device_name = (
        tf.config.experimental.get_device_details(gpus[0]).get("device_name", "GPU")
        if gpu
        else f"CPU ({os.cpu_count()} cores)"
    )
    print(
        f"tf_onthefly {tf_onthefly.__version__} bench on {device_name}; {seconds:g} s per measurement, "
        f"{rounds} round{'s' if rounds > 1 else ''}"
    )
    t0 = time.perf_counter()
    table = run(FLAGS.configs, FLAGS.paths, FLAGS.modes, jits, gpu, seconds, rounds)
    print()
    print(format_table(table))
    meta = dict(
        device=device_name,
        tensorflow=tf.__version__,
        seconds=seconds,
        rounds=rounds,
        date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    )
    write_outputs(table, FLAGS.out, meta)
    print(f"\nwrote {os.path.join(FLAGS.out, 'bench.json')} and bench.png ({time.perf_counter() - t0:.0f} s)")
    print("Reading it: docs/bench.md. 'vs constant' is steps/s against the constant batch of the same mode and jit.")
    return 0


if __name__ == "__main__":
    app.run(main)
