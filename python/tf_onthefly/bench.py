"""The input benchmark: measure every input path side by side, and whether input is your bottleneck.

    python -m tf_onthefly.bench                    # the default run (docs/bench.md: its time)
    python -m tf_onthefly.bench --full             # every path and mode (and XLA on a GPU)
    bazel run //:bench -- --out=/tmp/bench

For each configuration (the seed model: 16 features, batch 32, a small MLP; a wide one;
a CNN on procedural_shapes) it trains with each input path, in each execution mode:

  paths
    constant        a batch already on the device: the upper bound
    numpy           NumPy batches through tf.data.Dataset.from_generator
    numpy+prefetch  the same with prefetch (the simple path)
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

The default run covers the choice of path (constant, numpy+prefetch, op-cpu-tfdata,
op-in-step) in the modes most programs use (fit1 and fit64; on a GPU also fit64 under
XLA); `--full` runs every path, mode and XLA setting.

How it measures (so that no row can claim the impossible): the paths of one (config,
mode, jit) are built together, then timed in `--rounds` rounds. A round gives every path
three short turns, the order reversed at each turn, so a path's time is spread over the
round as the constant batch's is and a slow spell of the machine falls on both. A turn
runs chunks of a fixed number of steps (fit: calls of the model's train function, as fit
makes them, on one iterator; the loop: calls of its tf.function) and discards the first
(a prefetch buffer filled while other paths ran); the round's rate is taken at the
chunks' lower quartile (a busy machine only adds time). A row's speed against the
constant batch is the median of its rounds' ratios, with an uncertainty from the rounds
(their half range, or the chunks' own scatter when larger). A row above the constant
batch by more than its uncertainty is measured again (more rounds, pooled); if it stays
above (or above 1.15x at all), it is reported as a measurement problem, never as a
speed-up. A difference inside the uncertainty reads "same as constant".

Outputs: the table (steps/s, samples/s, `vs constant` with its uncertainty, input GB/s,
what the input costs of the step), a verdict per (config, mode, jit) in plain words, and
bench.json (the rows, their rounds, the verdicts) and bench.png in --out.

`profile_input(dataset, train_step)` (and `--profile=module:function`) breaks your own
pipeline's step down: the Python generator, tf.data, host-to-device copies and the step,
with the projected gain of each path.

Extra paths plug in through `register_path`:

    bench.register_path("my-dataset", lambda cfg: make_dataset(cfg["batch"], cfg["x_shape"]),
                        in_step=False)
    bench.register_path("my-op", lambda cfg: lambda step: my_op(cfg["batch"], step),
                        in_step=True)

(`benchmarks/input_bench_interop.py` adds the PTX op and the CuPy bridge this way.)

`make(cfg)` gets the configuration (`name`, `batch`, `x_shape`, `x_dtype`, `y_shape`,
`y_dtype`, `gpu`, `jit`, and `gen(step)`, this package's own generator of that batch) and returns
either a function step -> (x, y) that runs inside the training step (`in_step=True`) or
a tf.data.Dataset of (x, y) batches (`in_step=False`). A registered path runs in every
(config, mode, jit) after the built-in ones, is named in `--paths`, and is a candidate
of the verdict when `candidate=True`; make may return None to skip a configuration.
"""

import gc
import importlib
import json
import math
import os
import statistics
import sys
import time

import numpy as np
import tensorflow as tf
from absl import app, flags

import tf_onthefly
from tf_onthefly import _load, data, models, timing

PATHS = ["constant", "numpy", "numpy+prefetch", "op-cpu-tfdata", "op-in-step", "tf-stateless"]
MODES = ["fit1", "fit64", "loop64"]
IN_STEP = ("constant", "op-in-step", "tf-stateless")  # paths whose batch is made inside the step
SIMPLE = "numpy+prefetch"  # the path a program starts with: gains are counted from it
# The paths the verdict chooses among, simplest first: a simpler path wins a tie.
CANDIDATES = ["numpy+prefetch", "op-cpu-tfdata", "op-in-step"]
# The default run: the paths to choose among (with the bound), in the (mode, jit) settings
# of most programs; numpy without prefetch, TF's own random ops and loop64 are in --full.
DEFAULT_PATHS = ["constant", "numpy+prefetch", "op-cpu-tfdata", "op-in-step"]
DEFAULT_SETTINGS = {
    "cpu": [("fit1", False), ("fit64", False)],
    "gpu": [("fit1", False), ("fit64", False), ("fit64", True)],
}
PASSES = 3  # turns of every path per round, the order reversed each turn
CHUNKS = 3  # timed chunks per turn (after one discarded)
LIMIT = 1.15  # a ratio above this, left after re-measuring, is a measurement problem

EXTRA_PATHS = {}  # name -> dict(make, in_step, candidate): see register_path
TIMES = {}  # the last run's seconds: measuring_s (timing rows), setup_s (building, tracing, sizing)

FLAGS = flags.FLAGS
flags.DEFINE_enum("device", "auto", ["auto", "cpu", "gpu"], "Where the model (and in-step generation) runs.")
flags.DEFINE_string("out", "bench_out", "Folder for bench.json and bench.png.")
flags.DEFINE_list("configs", ["seed", "wide", "cnn"], "Configurations to run.")
flags.DEFINE_list(
    "paths", [], "Input paths to run, of the built-in ones and any registered (default: the default run's, or all)."
)
flags.DEFINE_list("modes", [], "Execution modes to run, of fit1,fit64,loop64 (default: the default run's).")
flags.DEFINE_list("jit", [], "XLA settings to run, of off,on (default: the default run's).")
flags.DEFINE_bool("full", False, "Every path, mode and XLA setting (on a CPU: jit off only).")
flags.DEFINE_float("seconds", 0.0, "Timed seconds per path and round (0: 1).")
flags.DEFINE_integer("rounds", 3, "Rounds, paths in turn; rows report medians, the uncertainty comes from them.")
flags.DEFINE_string("profile", "", "module:function returning (dataset, train_step): profile your own pipeline.")


def register_path(name, make, *, in_step, candidate=True):
    """Adds an input path to every (config, mode, jit) of the bench (module docstring)."""
    if name in PATHS:
        raise ValueError(f"{name!r} is a built-in path")
    EXTRA_PATHS[name] = dict(make=make, in_step=in_step, candidate=candidate)


def configs(gpu):
    """name -> dict(batch, model(), loss, gen(step), numpy(rng), tf(step), x/y shapes and
    dtypes): the batch each path feeds, made by our op, by NumPy and by TF's stateless ops."""
    bce = tf.keras.losses.BinaryCrossentropy(from_logits=True)
    sce = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def features(batch, dim):
        return dict(
            x_shape=(batch, dim),
            x_dtype=tf.float32,
            y_shape=(batch, 1),
            y_dtype=tf.float32,
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
    table = {
        "seed": dict(batch=32, model=lambda: models.mlp(16, 1), loss=bce, **features(32, 16)),
        "wide": dict(batch=wide, model=lambda: models.mlp(256, 1), loss=bce, **features(wide, 256)),
        "cnn": dict(
            batch=images,
            model=lambda: models.cnn((32, 32, 1), 3),
            loss=sce,
            x_shape=(images, 32, 32, 1),
            x_dtype=tf.float32,
            y_shape=(images, 1),
            y_dtype=tf.int32,
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
    for name, cfg in table.items():
        cfg.update(name=name, gpu=gpu)
    return table


def _in_step(path):
    return path in IN_STEP or (path in EXTRA_PATHS and EXTRA_PATHS[path]["in_step"])


def _batch_generator(cfg, path):
    """step -> batch, for the paths that make their batch inside the step."""
    if path == "constant":
        x, y = (tf.identity(t) for t in cfg["gen"](tf.constant(0, tf.int64)))  # made once, on the device
        return lambda step: (x, y)
    if path in EXTRA_PATHS:
        return EXTRA_PATHS[path]["make"](cfg)
    return cfg["gen"] if path == "op-in-step" else cfg["tf"]


def _dataset(cfg, path):
    """The tf.data pipeline of the paths that feed batches from outside the step."""
    if path in EXTRA_PATHS:
        return EXTRA_PATHS[path]["make"](cfg)
    if path == "op-cpu-tfdata":
        return data.host_dataset(cfg["gen"])
    rng = np.random.default_rng(0)
    sig = (tf.TensorSpec(cfg["x_shape"], cfg["x_dtype"]), tf.TensorSpec(cfg["y_shape"], cfg["y_dtype"]))
    return data.from_python(lambda: iter(lambda: cfg["numpy"](rng), None), sig, prefetch=path == "numpy+prefetch")


class _Runner:
    """One row's training loop. `granule` steps per call; `calls` calls per chunk, and a
    turn of `discard` untimed chunks then `chunks` timed ones (set by `calibrate`)."""

    calls, chunks, discard, turns = 1, CHUNKS, 1, PASSES

    def calibrate(self, seconds):
        """Warms up (traces, compiles) and sizes a chunk so that a round's PASSES turns
        last about `seconds`: CHUNKS + 1 chunks a turn. A path whose single call is longer
        than that (a slow input feeding 64 steps a call) gets fewer chunks a turn, and no
        untimed one when even two calls would overrun, and a call longer than `seconds`
        runs once a round, so the run stays bounded; a prefetch buffer filled meanwhile then
        shortens its call by a few steps of 64."""
        per_call = min(self._times(1, 1, 1))  # the untimed first call traces and compiles
        turn = seconds / PASSES
        self.calls = max(1, round(turn / (CHUNKS + 1) / max(per_call, 1e-6)))
        if self.calls == 1 and per_call * (CHUNKS + 1) > turn:
            self.chunks = max(1, min(CHUNKS, int(turn / per_call) - 1))
            self.discard = 1 if per_call * (self.chunks + 1) <= 2 * turn else 0
            # A call longer than a whole round's budget: one turn a round, its middle one.
            self.turns = PASSES if per_call <= seconds else 1
        else:
            self._times(1, self.calls, 0)  # once at the final size, untimed
        return self.calls * self.granule

    @property
    def steps_per_chunk(self):
        return self.calls * self.granule

    def chunk_times(self, chunks=None):
        return self._times(chunks or self.chunks, self.calls, self.discard)

    def close(self):
        pass


class _FitRunner(_Runner):
    """model.fit's steps, as a user of that path would write them: the model compiled with
    steps_per_execution and jit_compile, trained once by model.fit (which builds it and its
    train function); then timed as fit runs them, one call of the model's train function per
    execution on one iterator of the dataset, without fit's own set-up per call, so the
    paths can take turns chunk by chunk."""

    def __init__(self, cfg, path, steps_per_execution, jit):
        if _in_step(path):
            self.model = data.GeneratorModel(cfg["model"](), _batch_generator(cfg, path))
            self.ds = data.device_dataset()
        else:
            self.model, self.ds = cfg["model"](), _dataset(cfg, path)
        self.model.compile(
            optimizer=tf.keras.optimizers.Adam(1e-3),
            loss=cfg["loss"],
            steps_per_execution=steps_per_execution,
            jit_compile=jit,
        )
        self.granule, self.iterator = steps_per_execution, None

    def run(self, steps):
        self.model.fit(
            self.ds, epochs=1, steps_per_epoch=max(1, steps // self.granule) * self.granule, verbose=0, shuffle=False
        )

    def _times(self, chunks, calls, discard):
        if self.iterator is None:
            self.run(self.granule)  # fit builds the model and its train function
            self.iterator = iter(self.ds)
        train, it = self.model.train_function, self.iterator

        def chunk():
            for _ in range(calls):
                logs = train(it)
            return logs

        # fit reads the loss back after every execution too (its callbacks' logs)
        return timing.call_times(chunk, chunks, warmup=discard, sync=lambda logs: float(logs["loss"]))

    def close(self):
        self.iterator = self.model = self.ds = None


class _LoopRunner(_Runner):
    """Calls of one tf.function that runs `granule` steps in a graph loop."""

    def __init__(self, cfg, path, loop_steps, jit):
        apply = models.train_step(cfg["model"](), cfg["loss"], tf.keras.optimizers.Adam(1e-3))
        self.granule, self.iterator = loop_steps, None
        if _in_step(path):
            # The whole loop, generation included, in one function (one XLA cluster with jit).
            position = data.DataPosition(_batch_generator(cfg, path))
            self.call = tf.function(lambda n: position.run_steps(lambda batch: apply(*batch), n), jit_compile=jit)
        else:
            # A dataset iterator cannot be compiled: XLA compiles the step inside the loop.
            self.iterator = iterator = iter(_dataset(cfg, path))
            step = tf.function(apply, jit_compile=jit)

            @tf.function
            def call(n):
                loss = step(*next(iterator))
                for _ in tf.range(n - 1):
                    loss = step(*next(iterator))
                return loss

            self.call = call

    def run(self, steps):
        n = tf.constant(self.granule, tf.int32)  # an int32 loop counter stays on the host
        for _ in range(max(1, steps // self.granule)):
            out = self.call(n)
        out.numpy()  # wait for the device

    def _times(self, chunks, calls, discard):
        n = tf.constant(self.granule, tf.int32)  # an int32 loop counter stays on the host

        def chunk():
            for _ in range(calls):
                out = self.call(n)
            return out

        return timing.call_times(chunk, chunks, warmup=discard, sync=lambda out: out.numpy())

    def close(self):
        self.iterator = self.call = None


def _make_runner(cfg, path, mode, jit):
    if mode == "loop64":
        return _LoopRunner(cfg, path, 64, jit)
    return _FitRunner(cfg, path, int(mode[len("fit") :]), jit)


def _runner(cfg, path, mode, jit):
    """(run(steps), granule) of one row: run `steps` steps as that row trains (tools use it)."""
    runner = _make_runner(cfg, path, mode, jit)
    return runner.run, runner.granule


# ---------------------------------------------------------------------------------------
# The measurement itself: pure Python on runners, so a fake clock can test it.


def _round_rate(times, steps):
    """(steps/s, relative standard error) of one path's round, from its chunks' times.

    The rate is taken at the chunks' lower quartile: a busy machine only ever adds time to
    a chunk (another process takes the cores, a cache is cold), so the faster chunks are
    the ones a slow spell spared; a quartile rather than the fastest chunk, so that one
    lucky chunk does not make the figure. Its error comes from the same, spared, chunks:
    the distance from the fastest to the median, over the square root of their number.
    """
    lower = statistics.quantiles(times, n=4, method="inclusive")[0] if len(times) >= 2 else times[0]
    spread = (statistics.median(times) - min(times)) / lower
    return steps / lower, spread / math.sqrt(len(times))


def measure(runners, rounds, chunks=CHUNKS, base="constant", progress=None, time_left=None):
    """Times every runner `rounds` rounds in turn; returns path -> row statistics.

    runners: path -> object with steps_per_chunk and chunk_times(chunks) (seconds per
    chunk). Rows above the base (the upper bound) by more than their uncertainty are
    measured again, with the base, for `rounds` more rounds; a row that stays above is
    marked a measurement problem.
    """
    samples = {path: [] for path in runners}  # path -> [(rate, rel_se)] per round

    def rounds_of(paths, count, first):
        for r in range(first, first + count):
            times = {path: [] for path in paths}
            for turn in range(PASSES):
                order = paths if (r * PASSES + turn) % 2 == 0 else paths[::-1]
                if progress:
                    done = min(1.0, (r * PASSES + turn) / (rounds * PASSES))
                    left = f"; about {_duration(time_left(done))} left" if time_left else ""
                    what = "all paths" if len(paths) == len(runners) else "again: " + ", ".join(paths)
                    progress(f"round {r + 1}/{first + count}, turn {turn + 1}/{PASSES} of {what}{left}")
                for path in order:
                    runner = runners[path]
                    if getattr(runner, "turns", PASSES) == 1 and turn != PASSES // 2:
                        continue
                    times[path] += runner.chunk_times(getattr(runner, "chunks", chunks))
            for path in paths:
                samples[path].append(_round_rate(times[path], runners[path].steps_per_chunk))

    rounds_of(list(runners), rounds, 0)
    stats = {path: _row_stats(samples[path], samples.get(base)) for path in runners}
    suspect = [p for p, s in stats.items() if p != base and base in runners and _suspect(s)]
    if suspect:
        rounds_of([base, *suspect], rounds, rounds)
        # The base was measured again too: every row's ratio uses the rounds it shares with it.
        for path in runners:
            stats[path] = _row_stats(samples[path], samples.get(base))
        for path in suspect:
            stats[path]["remeasured"] = True
    for path, s in stats.items():
        s["status"] = _status(s) if path != base and base in runners else ("upper bound" if path == base else "")
    return stats


def _suspect(s):
    return s["vs_constant"] - s["uncertainty"] > 1.0 or s["vs_constant"] > LIMIT


def _status(s):
    ratio, u = s["vs_constant"], s["uncertainty"]
    if ratio - u > 1.0 or ratio > LIMIT:
        return "measurement problem"
    if abs(ratio - 1.0) <= u:
        return "same as constant"
    return ""


def _row_stats(own, base):
    """Row statistics from per-round (rate, rel_se) of the row and of the base."""
    rates = [r for r, _ in own]
    out = dict(steps_per_s=float(np.median(rates)), rounds=[float(r) for r, _ in own], remeasured=False)
    if not base:
        out.update(vs_constant=float("nan"), uncertainty=float("nan"))
        return out
    pairs = list(zip(own, base))  # rounds both were timed in
    ratios = [a / b for (a, _), (b, _) in pairs]
    ratio = float(np.median(ratios))
    # Between rounds: the half range (a slow spell over a whole window shows up here).
    between = (max(ratios) - min(ratios)) / 2 if len(ratios) > 1 else 0.0
    # Within rounds: the chunks' scatter, propagated to the ratio, two standard errors (for
    # the base against itself, its own only).
    ses = [math.hypot(sa, sb) if own is not base else sa for (_, sa), (_, sb) in pairs]
    within = 2 * ratio * float(np.median(ses)) / math.sqrt(len(pairs))
    out.update(vs_constant=ratio, uncertainty=max(between, within, 0.005 * ratio), round_ratios=ratios)
    return out


def _duration(seconds):
    seconds = max(0, int(round(seconds)))
    return f"{seconds // 60} min {seconds % 60:02d} s" if seconds >= 60 else f"{seconds} s"


def run(config_names, paths, modes, jits, gpu, seconds, rounds=3, progress=print, settings=None):
    """Measures every (config, mode, jit) and path; returns the rows (dicts).

    settings: (mode, jit) pairs to run; default every mode with every jit.
    """
    device = "/GPU:0" if gpu else "/CPU:0"
    all_cfgs = configs(gpu)
    settings = settings or [(m, j) for m in modes for j in jits]
    groups = [(c, m, j) for c in config_names for m, j in settings]
    t_start, setup_s, setups, table = time.perf_counter(), 0.0, 0, []
    TIMES.update(measuring_s=0.0, setup_s=0.0)
    per_group_measure = len(paths) * rounds * seconds

    for g, (name, mode, jit) in enumerate(groups):
        cfg, runners = dict(all_cfgs[name], jit=jit), {}
        label = f"[{g + 1}/{len(groups)}] {name} {mode} jit={'on' if jit else 'off'}"

        def time_left(done, to_build=0, g=g):
            """Seconds left in the run when `done` of this group's rounds are, and
            `to_build` of its paths are still to be built."""
            avg_setup = setup_s / setups if setups else 5.0
            remaining = len(groups) - g - 1
            return (
                remaining * (per_group_measure + len(paths) * avg_setup)
                + per_group_measure * (1 - done)
                + to_build * avg_setup
            )

        skipped = []  # (path, why)
        for i, path in enumerate(paths):
            if jit and path == "op-in-step" and not _load.HAS_XLA:
                skipped.append((path, f"no XLA kernels for TensorFlow {_load.VARIANT['minor']}"))
                continue
            progress(f"{label}: building {path}; about {_duration(time_left(0.0, len(paths) - i))} left")
            t0 = time.perf_counter()
            tf.keras.utils.set_random_seed(0)
            with tf.device(device):
                if path in EXTRA_PATHS:
                    made = EXTRA_PATHS[path]["make"](cfg)
                    if made is None:
                        skipped.append((path, "not available in this setting"))
                        continue
                runner = _make_runner(cfg, path, mode, jit)
                runner.calibrate(seconds)
            runners[path] = runner
            setup_s, setups = setup_s + time.perf_counter() - t0, setups + 1
            TIMES["setup_s"] = setup_s
        t0 = time.perf_counter()
        with tf.device(device):
            stats = measure(runners, rounds, progress=lambda m: progress(f"{label}: {m}"), time_left=time_left)
        TIMES["measuring_s"] += time.perf_counter() - t0
        nbytes = batch_bytes(cfg)
        for path, s in stats.items():
            table.append(
                dict(
                    config=name,
                    path=path,
                    mode=mode,
                    jit=jit,
                    batch=cfg["batch"],
                    samples_per_s=s["steps_per_s"] * cfg["batch"],
                    input_gb_per_s=s["steps_per_s"] * nbytes / 1e9,
                    input_share=_input_share(s),
                    **s,
                )
            )
        for path, why in skipped:
            progress(f"{label}: {path} skipped ({why})")
        for runner in runners.values():
            runner.close()
        del runners
        gc.collect()
        progress(f"{label}: done ({_duration(time.perf_counter() - t_start)} so far)")
    return table


def _input_share(s):
    """What the input costs of the step on this path: 1 - steps/s against the constant batch."""
    ratio = s.get("vs_constant", float("nan"))
    if not np.isfinite(ratio):
        return float("nan")
    return float(min(1.0, max(0.0, 1.0 - ratio)))


def batch_bytes(cfg):
    return sum(int(np.prod(t.shape)) * t.dtype.size for t in cfg["gen"](tf.constant(0, tf.int64)))


def ratio_text(row):
    """'0.79x ± 0.04', with the row's status when it has one."""
    if not np.isfinite(row.get("vs_constant", float("nan"))):
        return ""
    text = f"{row['vs_constant']:.2f}x ± {row['uncertainty']:.2f}"
    return text


def speed_label(ratio, uncertainty=0.0, status=""):
    """'12 % slower' / 'same as constant' / 'measurement problem' against the constant batch.
    A row is never 'faster' than the upper bound."""
    if not np.isfinite(ratio):
        return ""
    if status == "measurement problem":
        return "measurement problem"
    if status == "same as constant" or abs(ratio - 1.0) <= uncertainty or round(100 * (ratio - 1)) >= 0:
        return "same as constant"
    return f"{round(100 * (1 - ratio))} % slower"


def verdicts(table):
    """One verdict per (config, mode, jit), in plain words: what the input costs of the step
    on each path, which path to use, and what it gains over the simple path."""
    out = []
    for key in dict.fromkeys((r["config"], r["mode"], r["jit"]) for r in table):
        rows = {r["path"]: r for r in table if (r["config"], r["mode"], r["jit"]) == key}
        out.append(dict(config=key[0], mode=key[1], jit=key[2], **_verdict(rows, key)))
    return out


def _verdict(rows, key):
    name, mode, jit = key
    where = f"{name}, {mode}, jit {'on' if jit else 'off'}"
    if "constant" not in rows:
        return dict(text=f"{where}: no constant batch measured, so no verdict.", use=None, gain=None)
    if len(rows) == 1:
        return dict(text=f"{where}: only the constant batch was measured, so no verdict.", use=None, gain=None)
    costs = []
    for path, r in rows.items():
        if path == "constant":
            continue
        if r["status"] == "measurement problem":
            costs.append(f"not measurable on this machine with {path}")
        elif r["status"] == "same as constant":
            costs.append(f"none measurable with {path}")
        else:
            costs.append(f"{round(100 * r['input_share'])} % with {path}")
    candidates = [p for p in CANDIDATES + [p for p, e in EXTRA_PATHS.items() if e["candidate"]] if p in rows]
    candidates = [p for p in candidates if rows[p]["status"] != "measurement problem"]
    text = f"{where}: the input's share of the step is {', '.join(costs)}."
    if not candidates:
        return dict(text=text, use=None, gain=None)
    best = max(candidates, key=lambda p: rows[p]["vs_constant"])
    # The simplest candidate as good as the best, inside their uncertainties.
    use = next(
        p
        for p in candidates
        if rows[best]["vs_constant"] - rows[p]["vs_constant"]
        <= math.hypot(rows[best]["uncertainty"], rows[p]["uncertainty"])
    )
    gain = None
    if SIMPLE in rows and use != SIMPLE and rows[SIMPLE]["status"] != "measurement problem":
        gain = rows[use]["vs_constant"] / rows[SIMPLE]["vs_constant"]
        rel = math.hypot(
            rows[use]["uncertainty"] / rows[use]["vs_constant"],
            rows[SIMPLE]["uncertainty"] / rows[SIMPLE]["vs_constant"],
        )
        text += f" Use {use}: {gain:.2f}x ± {gain * rel:.2f} the steps/s of {SIMPLE}"
        text += ", as fast as the constant batch." if rows[use]["status"] == "same as constant" else "."
    elif use == SIMPLE and rows[SIMPLE]["status"] == "same as constant":
        text += f" Input is not the bottleneck: keep {SIMPLE}; the model step sets the pace."
    else:
        text += f" Use {use}: no other path is measurably faster here."
    return dict(text=text, use=use, gain=gain)


def format_table(table):
    lines = [
        f"{'config':6s} {'batch':>6s} {'mode':6s} {'jit':3s} {'path':15s} {'steps/s':>9s} {'samples/s':>11s} "
        f"{'vs constant':>13s} {'input GB/s':>10s} {'input cost':>10s}  note"
    ]
    for r in table:
        note = r["status"] + (" (re-measured)" if r.get("remeasured") else "")
        share = "" if r["path"] == "constant" or not np.isfinite(r["input_share"]) else f"{r['input_share']:.0%}"
        if r["status"] in ("same as constant", "measurement problem"):
            share = "-"
        lines.append(
            f"{r['config']:6s} {r['batch']:6d} {r['mode']:6s} {'on' if r['jit'] else 'off':3s} "
            f"{r['path']:15s} {r['steps_per_s']:9.1f} {r['samples_per_s']:11.0f} "
            f"{ratio_text(r):>13s} {r['input_gb_per_s']:10.3f} {share:>10s}  {note}"
        )
    return "\n".join(lines)


def write_outputs(table, out, meta):
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "bench.json"), "w") as f:
        json.dump(dict(meta, verdicts=verdicts(table), results=table), f, indent=1)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    config_names = list(dict.fromkeys(r["config"] for r in table))
    settings = list(dict.fromkeys((r["mode"], r["jit"]) for r in table))
    paths = list(dict.fromkeys(r["path"] for r in table))
    fig, axes = plt.subplots(
        1,
        len(config_names),
        figsize=(7 * len(config_names), 1.5 + 0.3 * len(paths) * len(settings)),
        squeeze=False,
    )
    colors = plt.get_cmap("tab10")
    height = 0.8 / len(settings)
    for ax, name in zip(axes[0], config_names):
        rows = [r for r in table if r["config"] == name]
        for k, (mode, jit) in enumerate(settings):
            sub = {r["path"]: r for r in rows if (r["mode"], r["jit"]) == (mode, jit)}
            shown = [p for p in paths if p in sub]
            ys = [paths.index(p) + k * height for p in shown]
            vals = [sub[p]["vs_constant"] for p in shown]
            errs = [sub[p]["uncertainty"] for p in shown]
            bars = ax.barh(
                ys, vals, height=height, xerr=errs, color=colors(k), label=f"{mode}, jit {'on' if jit else 'off'}"
            )
            for bar, p in zip(bars, shown):
                r = sub[p]
                label = f"{r['vs_constant']:.2f} ± {r['uncertainty']:.2f}"
                if p != "constant":
                    label += f"  {speed_label(r['vs_constant'], r['uncertainty'], r['status'])}"
                ax.text(
                    max(bar.get_width(), 0) + r["uncertainty"] + 0.02,
                    bar.get_y() + bar.get_height() / 2,
                    label,
                    va="center",
                    fontsize=7,
                )
        ax.axvline(1.0, color="gray", linestyle="--", linewidth=0.8)
        ax.set_yticks([i + 0.4 - height / 2 for i in range(len(paths))], paths)
        ax.set_xlim(0, max([1.9] + [r["vs_constant"] + r["uncertainty"] + 0.9 for r in rows]))
        ax.ticklabel_format(axis="x", style="plain", useOffset=False)
        ax.set_title(f"{name} (batch {rows[0]['batch']})")
        ax.set_xlabel("steps/s against the constant batch, same mode (1: the bound)")
        ax.invert_yaxis()
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=len(settings))
    fig.suptitle(f"tf_onthefly input paths on {meta['device']}", y=1.0 + 0.25 / fig.get_figheight())
    fig.subplots_adjust(wspace=0.4)
    fig.savefig(os.path.join(out, "bench.png"), dpi=90, bbox_inches="tight")
    plt.close(fig)


# ---------------------------------------------------------------------------------------
# Your own pipeline.


def _per_call_ms(call, calls, warmup=3):
    """Median ms of call() (its result synchronised) over `calls` calls."""
    return 1e3 * timing.summary(timing.call_times(call, calls, warmup=warmup, sync=_sync))["median"]


def profile_input(dataset, train_step, steps=50, warmup=5):
    """Where your step's time goes, and what each input path would gain.

    Args:
      dataset: your tf.data.Dataset (or any iterable of batches).
      train_step: a function taking one batch (as the dataset yields it), e.g. a tf.function.
    Returns:
      dict with, in ms per step (medians of `steps` calls):
        real_ms     the step fed by your dataset;
        cached_ms   the step on one batch already on the step's device (the upper bound);
        produce_ms  the dataset alone: your Python generator and tf.data together;
        tfdata_ms   tf.data's own cost per batch (the same batch through a cached pipeline);
        python_ms   produce_ms - tfdata_ms: the Python generator (or your map functions);
        copy_ms     copying one batch from the host to the step's device (0 on a CPU);
        step_ms     = cached_ms;
      input_share (of real_ms waiting for input), projected: path -> dict(ms, gain) for
      "prefetch" (input overlapped with the step), "op on the CPU" (no Python: the native
      op in tf.data, data.host_dataset) and "op in the step" (data.GeneratorModel: no input
      pipeline, no copy), and verdict, in words.
    Projections assume the overlapped parts run in parallel (enough cores) and the op's
    own generation is small next to the step; they are bounds, not measurements.
    """
    it = iter(dataset)
    first = next(it)
    device = _step_device()
    with tf.device(device):
        cached = tf.nest.map_structure(tf.identity, first)
    host = tf.nest.map_structure(lambda t: tf.constant(np.asarray(t)), first)

    step_ms = _per_call_ms(lambda: train_step(cached), steps, warmup)
    real_ms = _per_call_ms(lambda: train_step(next(it)), steps, warmup)
    produce_ms = _per_call_ms(lambda: next(it), steps, warmup)
    tfdata_it = iter(tf.data.Dataset.from_tensors(host).repeat())
    tfdata_ms = _per_call_ms(lambda: next(tfdata_it), steps, warmup)
    python_ms = max(0.0, produce_ms - tfdata_ms)
    copy_ms = 0.0
    if device.startswith("/GPU"):

        def copy():
            with tf.device(device):
                return tf.nest.map_structure(lambda t: tf.identity(t) + tf.zeros((), t.dtype), host)

        copy_ms = _per_call_ms(copy, steps, warmup)
    it = tfdata_it = None  # let the pipelines go now, not at exit
    gc.collect()

    projected = {
        "prefetch": max(step_ms + copy_ms, produce_ms),
        "op on the CPU": max(step_ms + copy_ms, tfdata_ms),
        "op in the step": step_ms,
    }
    projected = {k: dict(ms=v, gain=real_ms / v if v > 0 else float("nan")) for k, v in projected.items()}
    share = max(0.0, 1.0 - step_ms / real_ms)
    parts = (
        f"Python generator {python_ms:.2f} ms, tf.data {tfdata_ms:.2f} ms, host-to-device copy {copy_ms:.2f} ms, "
        f"step {step_ms:.2f} ms"
    )
    gains = ", ".join(f"{k} {v['gain']:.1f}x" for k, v in projected.items())
    if share > 0.1:
        best = max(projected, key=lambda k: projected[k]["gain"])
        verdict = (
            f"Input is your bottleneck: a step takes {real_ms:.2f} ms with your input but {step_ms:.2f} ms "
            f"on a cached batch, so {share:.0%} of each step waits for data. Per batch: {parts}. "
            f"Projected steps/s against now: {gains}; the most: {best} "
            f"(tf_onthefly.data.{'GeneratorModel' if best == 'op in the step' else 'host_dataset'})."
        )
    else:
        verdict = (
            f"Input is not your bottleneck: a step takes {real_ms:.2f} ms with your input and "
            f"{step_ms:.2f} ms on a cached batch ({share:.0%} waiting for data; per batch: {parts}); "
            f"optimise the model step."
        )
    return dict(
        real_ms=real_ms,
        cached_ms=step_ms,
        step_ms=step_ms,
        produce_ms=produce_ms,
        tfdata_ms=tfdata_ms,
        python_ms=python_ms,
        copy_ms=copy_ms,
        input_share=share,
        projected=projected,
        verdict=verdict,
    )


def _step_device():
    return "/GPU:0" if tf.config.list_logical_devices("GPU") else "/CPU:0"


def _sync(out):
    for t in tf.nest.flatten(out):
        if hasattr(t, "numpy"):
            t.numpy()


def default_settings(gpu, full, modes=None, jits=None):
    """The (mode, jit) pairs of a run: flags first, else the full matrix or the default run's."""
    kind = "gpu" if gpu else "cpu"
    all_jits = [False, True] if gpu else [False]
    if modes or jits:
        return [(m, j) for m in (modes or MODES) for j in (jits if jits else all_jits)]
    if full:
        return [(m, j) for m in MODES for j in all_jits]
    return DEFAULT_SETTINGS[kind]


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
    unknown = [p for p in FLAGS.paths if p not in PATHS and p not in EXTRA_PATHS]
    if unknown:
        raise app.UsageError(f"unknown paths {unknown}; known: {PATHS + list(EXTRA_PATHS)}")
    paths = FLAGS.paths or (PATHS if FLAGS.full else DEFAULT_PATHS) + list(EXTRA_PATHS)
    seconds = FLAGS.seconds or 1.0
    rounds = max(1, FLAGS.rounds)
    settings = default_settings(gpu, FLAGS.full, FLAGS.modes, [j == "on" for j in FLAGS.jit])
    device_name = (
        tf.config.experimental.get_device_details(gpus[0]).get("device_name", "GPU")
        if gpu
        else f"CPU ({os.cpu_count()} cores)"
    )
    groups = len(FLAGS.configs) * len(settings)
    described = ", ".join(f"{m} jit {'on' if j else 'off'}" for m, j in settings)
    estimate = groups * len(paths) * rounds * seconds
    print(
        f"tf_onthefly {tf_onthefly.__version__} bench on {device_name}: {len(FLAGS.configs)} configs x "
        f"{described}, {len(paths)} paths; "
        f"{rounds} rounds of {seconds:g} s per path: about {_duration(estimate)} of measuring, plus set-up"
        + ("" if FLAGS.full else " (--full: every path and mode)")
    )
    tty = sys.stdout.isatty()

    def progress(msg):
        if tty:
            print(f"\r{msg[:150]:150s}", end="", flush=True)
        else:
            print(msg, flush=True)

    t0 = time.perf_counter()
    table = run(FLAGS.configs, paths, None, None, gpu, seconds, rounds, progress=progress, settings=settings)
    elapsed = time.perf_counter() - t0
    if tty:
        print()
    print()
    print(format_table(table))
    print()
    for v in verdicts(table):
        print(v["text"])
    meta = dict(
        device=device_name,
        tensorflow=tf.__version__,
        seconds=seconds,
        rounds=rounds,
        settings=[dict(mode=m, jit=j) for m, j in settings],
        elapsed_s=elapsed,
        measuring_s=TIMES["measuring_s"],
        setup_s=TIMES["setup_s"],
        date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    )
    write_outputs(table, FLAGS.out, meta)
    problems = sum(r["status"] == "measurement problem" for r in table)
    print(
        f"\nwrote {os.path.join(FLAGS.out, 'bench.json')} and bench.png; the run took {_duration(elapsed)} "
        f"(measuring {_duration(TIMES['measuring_s'])}, building and tracing {_duration(TIMES['setup_s'])})"
        + (f"; {problems} row(s) could not be measured reliably on this machine" if problems else "")
    )
    print("Reading it: docs/bench.md. 'vs constant' is steps/s against the constant batch of the same mode and jit.")
    gc.collect()
    return 0


if __name__ == "__main__":
    app.run(main)
