"""Soak: a long model.fit run on generated data, watching memory and the data position.

    python -m benchmarks.soak --steps 1000000 --out soak.json     # on a GPU
    python -m benchmarks.soak --steps 100000 --out soak.json      # on a CPU
    python -m benchmarks.soak --smoke                             # a few hundred steps

Trains the small MLP (16 -> 64 -> 64 -> 1, random_batch(32, 16)) with GeneratorModel,
steps_per_execution=64 and XLA (where the op library has XLA kernels), in epochs of
--epoch_steps steps, so the run is whole epochs: the steps run are --steps rounded up to
a multiple of --epoch_steps (exactly --steps when it is a multiple of 64: 1,000,000 runs
as 125 epochs of 8,000; 100,000, not a multiple of 64, as 16 of 6,400). After every epoch it samples GPU memory in use
(tf.config.experimental.get_memory_info) and the host's resident set size; the first
sample is taken after the first epoch, once compilation and allocation are done. It
reports first/last/max of each and checks, exiting 1 if any fails:
  - data_step equals the steps run;
  - the batch the last step trained on (recorded inside the step) equals a fresh call of
    the generator at that step, on the training device and on the CPU, bit for bit;
  - host RSS and GPU memory grow by at most --slack_mib from the first sample to the last
    and to the maximum (flat: nothing leaks per step or per epoch).
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import tf_onthefly  # noqa: E402
from tf_onthefly import _load, data  # noqa: E402
from tf_onthefly.bench import models  # noqa: E402

BATCH, DIM, SEED = 32, 16, 1
MIB = 1 << 20


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def gpu_bytes():
    if not tf.config.list_physical_devices("GPU"):
        return None
    return tf.config.experimental.get_memory_info("GPU:0")["current"]


class LastBatch(tf.Module):
    """Keeps a copy of the batch each step generated, so the last one can be checked."""

    def __init__(self):
        super().__init__()
        self.x = tf.Variable(tf.zeros([BATCH, DIM]), trainable=False)
        self.y = tf.Variable(tf.zeros([BATCH, 1]), trainable=False)
        self.step = tf.Variable(tf.constant(-1, tf.int64), trainable=False)

    def generator(self, step):
        x, y = tf_onthefly.random_batch(BATCH, DIM, seed=SEED, step=step)
        with tf.control_dependencies([self.x.assign(x), self.y.assign(y), self.step.assign(step)]):
            return tf.identity(x), tf.identity(y)


class Sampler(tf.keras.callbacks.Callback):
    def __init__(self, epoch_steps, progress):
        super().__init__()
        self.epoch_steps = epoch_steps
        self.progress = progress
        self.samples = []
        self.start = None

    def on_epoch_begin(self, epoch, logs=None):
        if self.start is None:
            self.start = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        sample = dict(
            epoch=epoch + 1,
            steps=(epoch + 1) * self.epoch_steps,
            seconds=round(time.perf_counter() - self.start, 3),
            rss_bytes=rss_bytes(),
            gpu_bytes=gpu_bytes(),
            loss=float(logs.get("loss", float("nan"))) if logs else None,
        )
        self.samples.append(sample)
        if self.progress:
            gpu = "" if sample["gpu_bytes"] is None else f" gpu {sample['gpu_bytes'] / MIB:.1f} MiB"
            print(
                f"epoch {sample['epoch']}: {sample['steps']} steps, {sample['seconds']:.1f} s, "
                f"rss {sample['rss_bytes'] / MIB:.1f} MiB{gpu}, loss {sample['loss']:.4f}",
                flush=True,
            )


def summary(values):
    values = [v for v in values if v is not None]
    if not values:
        return None
    return dict(first=values[0], last=values[-1], max=max(values), growth=values[-1] - values[0])


def commit():
    try:
        here = os.path.dirname(os.path.abspath(__file__))
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=here, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def default_epoch_steps(steps, per_execution, most=10_000):
    """Whole epochs that add up to `steps` exactly where they can."""
    calls = steps // per_execution
    if steps % per_execution == 0:
        for k in range(most // per_execution, 0, -1):
            if calls % k == 0:
                return k * per_execution
    return 100 * per_execution


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument(
        "--epoch_steps",
        type=int,
        default=0,
        help="a multiple of --steps_per_execution; default: the largest one up to 10,000 that "
        "divides --steps (8,000 for 1,000,000), else 6,400",
    )
    parser.add_argument("--steps_per_execution", type=int, default=64)
    parser.add_argument("--jit", choices=["on", "off"], default="on", help="XLA (needs an op library with XLA)")
    parser.add_argument("--slack_mib", type=float, default=64.0, help="memory growth allowed, first to last/max")
    parser.add_argument("--out", default="", help="write the result as JSON here")
    parser.add_argument("--smoke", action="store_true", help="256 steps in epochs of 128: keeps the script working")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    if args.smoke:
        args.steps, args.epoch_steps = 256, 128
    if not args.epoch_steps:
        args.epoch_steps = default_epoch_steps(args.steps, args.steps_per_execution)
    if args.epoch_steps % args.steps_per_execution:
        parser.error("--epoch_steps must be a multiple of --steps_per_execution")
    jit = args.jit == "on" and _load.HAS_XLA
    epochs = -(-args.steps // args.epoch_steps)
    steps_run = epochs * args.epoch_steps
    gpu = bool(tf.config.list_physical_devices("GPU"))

    tf.keras.utils.set_random_seed(0)
    last = LastBatch()
    model = data.GeneratorModel(models.mlp(DIM, 1), last.generator)
    model.compile(
        optimizer=tf.keras.optimizers.Adam(1e-3),
        loss=tf.keras.losses.BinaryCrossentropy(from_logits=True),
        steps_per_execution=args.steps_per_execution,
        jit_compile=jit,
    )
    sampler = Sampler(args.epoch_steps, not args.quiet)
    rss_start = rss_bytes()
    begin = time.perf_counter()
    model.fit(
        data.device_dataset(),
        epochs=epochs,
        steps_per_epoch=args.epoch_steps,
        verbose=0,
        callbacks=[sampler],
    )
    seconds = time.perf_counter() - begin

    data_step = int(model.data_step.numpy())
    last_step = int(last.step.numpy())
    recorded = (last.x.numpy(), last.y.numpy())
    fresh = [t.numpy() for t in tf_onthefly.random_batch(BATCH, DIM, seed=SEED, step=steps_run - 1)]
    with tf.device("/CPU:0"):
        fresh_cpu = [t.numpy() for t in tf_onthefly.random_batch(BATCH, DIM, seed=SEED, step=steps_run - 1)]
    rss = summary([s["rss_bytes"] for s in sampler.samples])
    gmem = summary([s["gpu_bytes"] for s in sampler.samples])
    slack = args.slack_mib * MIB
    checks = {
        "data_step_equals_steps_run": data_step == steps_run,
        "last_step_trained_is_steps_run_minus_1": last_step == steps_run - 1,
        "last_batch_equals_fresh_call": all(np.array_equal(a, b) for a, b in zip(recorded, fresh)),
        "last_batch_equals_fresh_cpu_call": all(np.array_equal(a, b) for a, b in zip(recorded, fresh_cpu)),
        "host_rss_flat": rss["max"] - rss["first"] <= slack and rss["growth"] <= slack,
    }
    if gmem is not None:
        checks["gpu_memory_flat"] = gmem["max"] - gmem["first"] <= slack and gmem["growth"] <= slack
    result = dict(
        steps_requested=args.steps,
        steps_run=steps_run,
        epochs=epochs,
        epoch_steps=args.epoch_steps,
        steps_per_execution=args.steps_per_execution,
        jit_compile=bool(model.jit_compile),
        device="GPU" if gpu else "CPU",
        data_step=data_step,
        seconds=round(seconds, 1),
        steps_per_second=round(steps_run / seconds, 1),
        host_rss_before_fit=rss_start,
        host_rss=rss,
        gpu_memory=gmem,
        slack_bytes=int(slack),
        checks=checks,
        ok=all(checks.values()),
        samples=sampler.samples,
        tensorflow=tf.__version__,
        python=platform.python_version(),
        machine=platform.node(),
        cpu=platform.processor() or platform.machine(),
        gpus=[
            tf.config.experimental.get_device_details(d).get("device_name")
            for d in tf.config.list_physical_devices("GPU")
        ],
        commit=commit(),
        date=time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
    )
    brief = {k: v for k, v in result.items() if k != "samples"}
    print(json.dumps(brief, indent=2))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=2)
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
