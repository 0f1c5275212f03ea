"""The command line of the input benchmark: python -m tf_onthefly.bench, tf-onthefly bench."""

import gc
import importlib
import os
import sys
import time

import tensorflow as tf
from absl import app, flags

import tf_onthefly
from tf_onthefly.bench._configs import EXTRA_PATHS, PATHS
from tf_onthefly.bench._measure import DEFAULT_PATHS, TIMES, _duration, default_settings, run
from tf_onthefly.bench._profile import profile_input
from tf_onthefly.bench._report import format_table, write_outputs
from tf_onthefly.bench._verdict import disagreements, verdicts

FLAGS = flags.FLAGS
flags.DEFINE_enum("device", "auto", ["auto", "cpu", "gpu"], "Where the model (and in-step generation) runs.")
flags.DEFINE_string("out", "bench_out", "Folder for bench.json and bench.png.")
flags.DEFINE_list("configs", ["small_mlp", "wide_mlp", "cnn"], "Configurations to run.")
flags.DEFINE_list(
    "paths", [], "Input paths to run, of the built-in ones and any registered (default: the default run's, or all)."
)
flags.DEFINE_list("modes", [], "Execution modes to run, of fit1,fit64,loop64 (default: the default run's).")
flags.DEFINE_list("jit", [], "XLA settings to run, of off,on (default: the default run's).")
flags.DEFINE_bool("full", False, "Every path, mode and XLA setting (on a CPU: jit off only).")
flags.DEFINE_float("seconds", 0.0, "Timed seconds per path and round (0: 1).")
flags.DEFINE_integer(
    "rounds",
    0,
    "Rounds, paths in turn; rows report medians, the uncertainty comes from them (0: 3 on a GPU, 5 on a CPU).",
)
flags.DEFINE_string("profile", "", "module:function returning (dataset, train_step): profile your own pipeline.")


def main(argv):
    """The command line's program (run by absl's app.run, which parses the flags above)."""
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
    # A CPU that runs the model also runs the input pipelines' threads, and its rows move more
    # between rounds: on the CPU of docs/performance.md, 3 rounds left a row at 1.13x its
    # constant batch and two rows 25 % apart between two runs; 5 rounds, none above 1.03x and
    # all within 25 %.
    rounds = max(1, FLAGS.rounds or (3 if gpu else 5))
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
    made = verdicts(table)
    for v in made:
        print(v["text"])
    rows = [r for r in table if r["path"] != "constant" and r["vs_constant"] == r["vs_constant"]]
    if rows:
        top = max(rows, key=lambda r: r["vs_constant"])
        print(
            f"\n{len(disagreements(table, made))} of {len(made)} verdicts recommend a path measured clearly slower "
            f"than another; the highest row against its constant batch: {top['vs_constant']:.2f}x "
            f"({top['config']} {top['mode']} jit {'on' if top['jit'] else 'off'} {top['path']})"
        )
    meta = dict(
        device=device_name,
        tensorflow=tf.__version__,
        seconds=seconds,
        rounds=rounds,
        settings=[dict(mode=m, jit=j) for m, j in settings],
        elapsed_s=elapsed,
        measuring_s=TIMES["measuring_s"],
        setup_s=TIMES["setup_s"],
        write_gb_per_s=table[0]["write_gb_per_s"] if table else None,
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
