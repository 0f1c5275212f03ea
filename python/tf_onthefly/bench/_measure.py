"""The measurement: each row's training loop (a runner), the rounds in which the paths take
turns, and each row's rate, ratio to the constant batch and uncertainty (the package's
docstring says how, and why no row can claim the impossible)."""

import gc
import math
import statistics
import threading
import time

import numpy as np
import tensorflow as tf

from tf_onthefly import _load, data
from tf_onthefly.bench import _configs, models, timing
from tf_onthefly.bench._configs import EXTRA_PATHS, MODES

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
# A row whose call outlasts a round (one turn a round: a slow input feeding 64 steps a call,
# 5.3 s a call for wide_mlp's numpy+prefetch on an H100) that its first round puts below this
# fraction of the base is not timed again: no verdict turns on how far below it is, and its
# later rounds were a tenth of a GPU run's time. One round has no spread between rounds: its
# uncertainty is taken as a fifth of its ratio (such rows' three-round uncertainties in the
# H100 and H200 default runs: 5-16 % of their ratios).
SETTLED = 0.25
SETTLED_UNCERTAINTY = 0.2
TIMES = {}  # the last run's seconds: measuring_s (timing rows), setup_s (building, tracing, sizing)


class _Runner:
    """One row's training loop. `granule` steps per call; `calls` calls per chunk, and a
    turn of `discard` untimed chunks then `chunks` timed ones (set by `calibrate`)."""

    calls, chunks, discard, turns = 1, CHUNKS, 1, PASSES
    first_untimed = 1  # untimed calls before the first timed one (that first call traces)

    def calibrate(self, seconds):
        """Warms up (traces, compiles) and sizes a chunk so that a round's PASSES turns
        last about `seconds`: CHUNKS + 1 chunks a turn. A path whose single call is longer
        than that (a slow input feeding 64 steps a call) gets fewer chunks a turn, and no
        untimed one when even two calls would overrun, and a call longer than `seconds`
        runs once a round, so the run stays bounded; a prefetch buffer filled meanwhile then
        shortens its call by a few steps of 64."""
        turn = seconds / PASSES
        # The first call (fit's, for the fit modes) traces and compiles, untimed. A call
        # after it longer than a turn is timed once: its start-up is small against it (a
        # slow input feeding 64 steps a call: seconds saved a row); a shorter one twice,
        # the faster counting (a fresh iterator's first call may include its start-up).
        per_call = self._times(1, 1, self.first_untimed)[0]
        if per_call <= turn:
            per_call = min(per_call, self._times(1, 1, 0)[0])
        self.calls = max(1, round(turn / (CHUNKS + 1) / max(per_call, 1e-6)))
        if self.calls == 1 and per_call * (CHUNKS + 1) > turn:
            self.chunks = max(1, min(CHUNKS, int(turn / per_call) - 1))
            self.discard = 1 if per_call * (self.chunks + 1) <= 2 * turn else 0
            # A call longer than a whole round's budget: one turn a round, its middle one.
            self.turns = PASSES if per_call <= seconds else 1
        # No untimed call at the final size: every turn discards its first chunk anyway.
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

    def __init__(self, cfg, path, steps_per_execution, jit, model=None):
        """model: a compiled model of another built-in dataset path of the same (config,
        mode, jit) to train here too: the same train function, traced and compiled once
        for both (it takes the iterator as its argument; the element specs are the same)."""
        self.granule, self.iterator = steps_per_execution, None
        self.first_untimed = 0  # the first timing starts with a model.fit, which traces
        if model is not None:
            self.model, self.ds = model, _configs.dataset(cfg, path)
            return
        if _configs.in_step(path):
            self.model = data.GeneratorModel(cfg["model"](), _configs.batch_generator(cfg, path))
            self.ds = data.device_dataset()
        else:
            self.model, self.ds = cfg["model"](), _configs.dataset(cfg, path)
        self.model.compile(
            optimizer=tf.keras.optimizers.Adam(1e-3),
            loss=cfg["loss"],
            steps_per_execution=steps_per_execution,
            jit_compile=jit,
        )

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
        objects = [self.iterator, self.model, self.ds]
        self.iterator = self.model = self.ds = None
        _release(objects)


class _LoopRunner(_Runner):
    """Calls of one tf.function that runs `granule` steps in a graph loop."""

    def __init__(self, cfg, path, loop_steps, jit):
        apply = models.train_step(cfg["model"](), cfg["loss"], tf.keras.optimizers.Adam(1e-3))
        self.granule, self.iterator = loop_steps, None
        if _configs.in_step(path):
            # The whole loop, generation included, in one function (one XLA cluster with jit).
            position = data.DataPosition(_configs.batch_generator(cfg, path))
            self.call = tf.function(lambda n: position.run_steps(lambda batch: apply(*batch), n), jit_compile=jit)
        else:
            # A dataset iterator cannot be compiled: XLA compiles the step inside the loop.
            self.iterator = iterator = iter(_configs.dataset(cfg, path))
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
        objects = [self.iterator, self.call]
        self.iterator = self.call = None
        _release(objects)


SHARED_MODEL = ("numpy", "numpy+prefetch", "op-cpu-tfdata")  # built-in dataset paths: one model a setting


def _release(objects):
    """Drops the last references to `objects` (a list) on a thread of its own: deleting a
    tf.data iterator whose prefetch is autotuned waits for its tuning thread, seconds after
    a few seconds of use, which would otherwise be the run's time."""
    threading.Thread(target=objects.clear, daemon=True).start()


def _make_runner(cfg, path, mode, jit, built=None):
    """built: the runners of this (config, mode, jit) built so far; a built-in dataset path
    of fit trains the model of one built before it (one trace and compile for them all)."""
    if mode == "loop64":
        return _LoopRunner(cfg, path, 64, jit)
    shared = next((r.model for p, r in (built or {}).items() if p in SHARED_MODEL), None)
    return _FitRunner(cfg, path, int(mode[len("fit") :]), jit, shared if path in SHARED_MODEL else None)


def runner(cfg, path, mode, jit):
    """(run(steps), granule) of one row: run `steps` steps as that row trains (benchmarks/
    step_timeline.py traces them)."""
    made = _make_runner(cfg, path, mode, jit)
    return made.run, made.granule


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
    marked a measurement problem. A row timed once a round (its call outlasts a round)
    that the first round puts below SETTLED of the base is timed in that round only
    (`one_round`, its uncertainty SETTLED_UNCERTAINTY of its ratio).
    """
    samples = {path: [] for path in runners}  # path -> [(rate, rel_se)] per round
    spent = dict.fromkeys(runners, 0.0)  # path -> seconds its timed chunks took, in all

    def rounds_of(paths, count, first, what):
        for r in range(first, first + count):
            times = {path: [] for path in paths}
            for turn in range(PASSES):
                order = paths if (r * PASSES + turn) % 2 == 0 else paths[::-1]
                if progress:
                    done = min(1.0, (r * PASSES + turn) / (rounds * PASSES))
                    left = f"; about {_duration(time_left(done))} left" if time_left else ""
                    progress(f"round {r + 1}/{max(rounds, first + count)}, turn {turn + 1}/{PASSES} of {what}{left}")
                for path in order:
                    runner = runners[path]
                    if getattr(runner, "turns", PASSES) == 1 and turn != PASSES // 2:
                        continue
                    t0 = time.perf_counter()
                    times[path] += runner.chunk_times(getattr(runner, "chunks", chunks))
                    spent[path] += time.perf_counter() - t0
            for path in paths:
                samples[path].append(_round_rate(times[path], runners[path].steps_per_chunk))

    rounds_of(list(runners), 1, 0, "all paths")
    settled = [p for p in runners if _settled(p, runners[p], samples, base)]
    if rounds > 1:
        rest = [p for p in runners if p not in settled]
        rounds_of(rest, rounds - 1, 1, "all paths" if not settled else "all paths but " + ", ".join(settled))
    stats = {path: _row_stats(samples[path], samples.get(base)) for path in runners}
    suspect = [p for p, s in stats.items() if p != base and base in runners and _suspect(s)]
    if suspect:
        rounds_of([base, *suspect], rounds, rounds, "again: " + ", ".join([base, *suspect]))
        # The base was measured again too: every row's ratio uses the rounds it shares with it.
        for path in runners:
            stats[path] = _row_stats(samples[path], samples.get(base))
        for path in suspect:
            stats[path]["remeasured"] = True
    for path in settled:
        s = stats[path]
        s.update(one_round=True, uncertainty=max(s["uncertainty"], SETTLED_UNCERTAINTY * s["vs_constant"]))
    for path, s in stats.items():
        s["status"] = _status(s) if path != base and base in runners else ("upper bound" if path == base else "")
        s["measure_s"] = spent[path]
    return stats


def _settled(path, runner, samples, base):
    """Whether a slow-call row's first round leaves it far below the base (SETTLED)."""
    if path == base or base not in samples or getattr(runner, "turns", PASSES) != 1:
        return False
    return samples[path][0][0] < SETTLED * samples[base][0][0]


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
    all_cfgs = _configs.configs(gpu)
    settings = settings or [(m, j) for m in modes for j in jits]
    groups = [(c, m, j) for c in config_names for m, j in settings]
    t_start, setup_s, setups, table, ceiling = time.perf_counter(), 0.0, 0, [], None
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
        build_s = {}  # path -> seconds to build and calibrate its runner (bench.json: where a run's time went)
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
                runner = _make_runner(cfg, path, mode, jit, runners)
                runner.calibrate(seconds)
            runners[path] = runner
            build_s[path] = time.perf_counter() - t0
            setup_s, setups = setup_s + build_s[path], setups + 1
            TIMES["setup_s"] = setup_s
        t0 = time.perf_counter()
        with tf.device(device):
            stats = measure(runners, rounds, progress=lambda m: progress(f"{label}: {m}"), time_left=time_left)
        TIMES["measuring_s"] += time.perf_counter() - t0
        nbytes = _configs.batch_bytes(cfg)
        if ceiling is None:
            ceiling = write_ceiling(device, gpu)
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
                    batch_bytes=nbytes,
                    write_gb_per_s=ceiling / 1e9,
                    build_s=build_s[path],
                    **s,
                )
            )
        group = table[len(table) - len(stats) :]
        constant = next((r for r in group if r["path"] == "constant"), None)
        for r in group:
            r["write_floor"] = write_floor(r, constant) if constant else None
        for path, why in skipped:
            progress(f"{label}: {path} skipped ({why})")
        for runner in runners.values():
            runner.close()
        del runners
        gc.collect()
        progress(f"{label}: done ({_duration(time.perf_counter() - t_start)} so far)")
    return table


def write_ceiling(device, gpu, calls=40):
    """Bytes a second the device's memory takes when written, measured here: `calls` fills
    of 256 MiB (16 MiB on a CPU) in one graph, the best of three runs of it (a fill writes
    and reads nothing). The fills are unrolled in the graph, so no host call or copy stands
    between two of them: called one by one, each with its value from the host, an H100's
    fills came to 0.86-1.58 TB/s of its 3.2 (an XLA-compiled fill no faster). A step whose
    batch is made on the device writes the batch's bytes at least once: at this rate that
    takes batch bytes / ceiling seconds (the write floor)."""
    n = ((256 if gpu else 16) << 20) // 4
    with tf.device(device):

        @tf.function
        def fills(v):
            for _ in range(calls):  # unrolled: each fill's value is the last one's last element
                v = tf.fill([n], v + 1.0)[-1]
            return v  # only one element leaves the device

        fills(tf.constant(0.0)).numpy()  # trace, allocate
        best = float("inf")
        for i in range(3):
            t0 = time.perf_counter()
            fills(tf.constant(float(i))).numpy()
            best = min(best, time.perf_counter() - t0)
    return calls * n * 4 / best


def write_floor(row, constant):
    """The highest `vs constant` a path that writes its batch each step can reach: the
    constant batch's step plus the batch's bytes at the measured write ceiling (None where
    the row has no such figures, or its path does not make its batch in the step)."""
    if row["path"] == "constant" or not _configs.in_step(row["path"]) or not row.get("write_gb_per_s"):
        return None
    write_s = row["batch_bytes"] / (row["write_gb_per_s"] * 1e9)
    return 1.0 / (1.0 + write_s * constant["steps_per_s"])


def _input_share(s):
    """What the input costs of the step on this path: 1 - steps/s against the constant batch."""
    ratio = s.get("vs_constant", float("nan"))
    if not np.isfinite(ratio):
        return float("nan")
    return float(min(1.0, max(0.0, 1.0 - ratio)))


def default_settings(gpu, full, modes=None, jits=None):
    """The (mode, jit) pairs of a run: flags first, else the full matrix or the default run's."""
    kind = "gpu" if gpu else "cpu"
    all_jits = [False, True] if gpu else [False]
    if modes or jits:
        return [(m, j) for m in (modes or MODES) for j in (jits if jits else all_jits)]
    if full:
        return [(m, j) for m in MODES for j in all_jits]
    return DEFAULT_SETTINGS[kind]
