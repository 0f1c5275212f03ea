"""Counts host<->device traffic in steady-state training steps (run on a GPU machine).

    python -m benchmarks.no_copy_profile [--mirrored [--spe=1,64] [--attribute]] [--smoke]

Trains the same small model several ways and, for each, measures what crosses between host
and device per step, counted by the GPU itself: NVML's PCIe RX (host to device) and TX
(device to host) throughput, sampled back to back over about 6 s of steady-state steps and
integrated, per step. (A TF profiler count of MemcpyHtoD events is added where TensorFlow
can load CUPTI.) The paths, each with steps_per_execution 1 and 64:
  constant: a batch already on the GPU, through GeneratorModel (the baseline every step has)
  device:   tf_onthefly.data.GeneratorModel (batch generated inside the step), with and
            without XLA
  host:     tf_onthefly.data.host_dataset (native op in tf.data on the CPU)
  python:   tf_onthefly.data.from_python (NumPy batches)
The device path should move no batch bytes host to device and nothing device to host beyond
the constant batch's baseline: its step counter lives on the GPU. --mirrored runs the
constant and device paths under MirroredStrategy over two logical GPUs (data.sharded);
--attribute adds rows that each change one thing in the device path (the shard's
first_sample, the step, the generator and its run time, TensorFlow's own ops in its place)
and a second constant row: which part of the path any extra traffic comes with, and how
far two identical rows differ. --smoke: the constant and device paths, a few steps of a
small batch, the trace's copy count only (no NVML), on any device.
count_copies(logdir) reads a profiler trace's copies; other benchmarks use it too.
"""

import glob
import json
import os
import re
import sys
import tempfile

import numpy as np
import tensorflow as tf
from tensorflow.tsl.profiler.protobuf import xplane_pb2

import tf_onthefly
from tf_onthefly import data

BATCH, DIM, STEPS = 4096, 256, 40
BATCH_BYTES = BATCH * DIM * 4 + BATCH * 4


def gen(step):
    return tf_onthefly.teacher_task(BATCH, DIM, seed=1, step=step)


def make():
    m = tf.keras.Sequential(
        [tf.keras.Input((DIM,)), tf.keras.layers.Dense(256, activation="relu"), tf.keras.layers.Dense(4)]
    )
    return m


def compile_(m, spe=1, jit=False):
    m.compile(
        optimizer="adam",
        loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        steps_per_execution=spe,
        jit_compile=jit,
    )
    return m


def count_copies(logdir):
    """(host-to-device events, their bytes, the largest copies in either direction) from the
    GPU planes of the profile: [(bytes in all, count, "HtoD"/"DtoH", bytes each, the op)]."""
    by_kind = {}
    for path in glob.glob(os.path.join(logdir, "**", "*.xplane.pb"), recursive=True):
        space = xplane_pb2.XSpace()
        with open(path, "rb") as f:
            space.ParseFromString(f.read())
        for plane in space.planes:
            if "GPU" not in plane.name:
                continue
            names = {k: v.name for k, v in plane.event_metadata.items()}
            stat_names = {k: v.name for k, v in plane.stat_metadata.items()}
            for line in plane.lines:
                for ev in line.events:
                    name = names.get(ev.metadata_id, "")
                    direction = (
                        "HtoD" if "HtoD" in name or "H2D" in name else "DtoH" if "DtoH" in name or "D2H" in name else ""
                    )
                    if not direction:
                        continue
                    nbytes, op = 0, ""
                    for st in list(ev.stats) + list(plane.event_metadata[ev.metadata_id].stats):
                        stat = stat_names.get(st.metadata_id)
                        if stat == "memcpy_details":
                            found = re.search(r"num_bytes:\s*(\d+)", st.str_value)
                            nbytes = int(found.group(1)) if found else nbytes
                        elif stat in ("tf_op", "hlo_op", "kernel_details") and st.str_value:
                            op = op or st.str_value[:80]
                    key = (direction, nbytes, op)
                    by_kind[key] = by_kind.get(key, 0) + 1
    htod = [(b, n) for (d, b, _), n in by_kind.items() if d == "HtoD"]
    largest = sorted(((b * n, n, d, b, op) for (d, b, op), n in by_kind.items()), reverse=True)[:8]
    # TensorFlow 2.21's traces leave memcpy_details empty on this GPU: bytes unknown, not 0
    htod_bytes = sum(b * n for b, n in htod) if any(b for b, _ in htod) else None
    return sum(n for _, n in htod), htod_bytes, largest


def pcie_per_step(model, dataset, steps_per_call, seconds=6.0):
    """(PCIe host->device bytes per step, device->host bytes per step, steps per second),
    from the GPU's own counters: NVML's PCIe RX and TX throughput (KB/s over a 20 ms window),
    sampled back to back by a thread for the whole run and integrated over time."""
    import threading
    import time

    import pynvml

    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByIndex(0)
    total, stop = {"rx": 0.0, "tx": 0.0}, threading.Event()
    counters = {"rx": pynvml.NVML_PCIE_UTIL_RX_BYTES, "tx": pynvml.NVML_PCIE_UTIL_TX_BYTES}

    def sample():
        last = time.perf_counter()
        while not stop.is_set():
            rates = {k: pynvml.nvmlDeviceGetPcieThroughput(handle, c) for k, c in counters.items()}
            now = time.perf_counter()
            for k, kb_per_s in rates.items():
                total[k] += kb_per_s * 1024 * (now - last)
            last = now

    thread = threading.Thread(target=sample, daemon=True)
    steps, t0 = 0, time.perf_counter()
    chunk = max(64, steps_per_call)
    thread.start()
    while time.perf_counter() - t0 < seconds:
        model.fit(dataset, epochs=1, steps_per_epoch=chunk, verbose=0)
        steps += chunk
    elapsed = time.perf_counter() - t0
    stop.set()
    thread.join()
    return total["rx"] / steps, total["tx"] / steps, steps / elapsed


def profile(name, model, dataset, spe):
    model.fit(dataset, epochs=1, steps_per_epoch=max(64, spe), verbose=0)  # warm up, trace
    rx, tx, steps_per_s = pcie_per_step(model, dataset, spe)
    logdir = tempfile.mkdtemp(prefix=name)
    tf.profiler.experimental.start(logdir)
    model.fit(dataset, epochs=1, steps_per_epoch=max(STEPS, spe), verbose=0)
    tf.profiler.experimental.stop()
    ev, nbytes, largest = count_copies(logdir)
    row = dict(
        path=name,
        steps_per_execution=spe,
        steps_per_s=round(steps_per_s, 1),
        pcie_rx_bytes_per_step=round(rx),
        pcie_tx_bytes_per_step=round(tx),
        batch_bytes=BATCH_BYTES,
        trace_htod_events=ev,
        trace_htod_bytes=nbytes,
        trace_largest_copies=largest,
    )
    print(json.dumps(row), flush=True)
    return row


def smoke():
    """The constant and device paths profiled for a few steps of a small batch, without NVML
    (which needs a GPU): the script's parts, kept working on any machine."""
    const = (tf.zeros([64, DIM]), tf.zeros([64, 1], tf.int32))
    for name, generator in (
        ("constant", lambda step: const),
        ("device", lambda step: tf_onthefly.teacher_task(64, DIM, seed=1, step=step)),
    ):
        model = compile_(data.GeneratorModel(make(), generator))
        model.fit(data.device_dataset(), epochs=1, steps_per_epoch=2, verbose=0)
        logdir = tempfile.mkdtemp(prefix=name)
        tf.profiler.experimental.start(logdir)
        model.fit(data.device_dataset(), epochs=1, steps_per_epoch=4, verbose=0)
        tf.profiler.experimental.stop()
        ev, nbytes, largest = count_copies(logdir)
        print(json.dumps(dict(path=name, trace_htod_events=ev, trace_htod_bytes=nbytes, largest=largest)))
    return 0


def main():
    if "--smoke" in sys.argv:
        return smoke()
    if not tf.config.list_physical_devices("GPU"):
        print("no GPU (--smoke runs a small profile on any device)")
        return 1
    if "--mirrored" in sys.argv:
        return mirrored()
    # Baseline: the same step on a constant batch already on the GPU. Whatever PCIe traffic
    # a step has without any input (launch commands, the tick, Keras's loop) shows here.
    with tf.device("/GPU:0"):
        const = (tf.random.normal([BATCH, DIM]), tf.zeros([BATCH, 1], tf.int32))

    def py():
        rng = np.random.default_rng(0)
        while True:
            yield (rng.standard_normal((BATCH, DIM), dtype=np.float32), rng.integers(0, 4, (BATCH, 1), dtype=np.int32))

    sig = (tf.TensorSpec([BATCH, DIM], tf.float32), tf.TensorSpec([BATCH, 1], tf.int32))
    rows = {}
    for spe in [1, 64]:
        rows["constant", spe] = profile(
            "constant", compile_(data.GeneratorModel(make(), lambda step: const), spe), data.device_dataset(), spe
        )
        rows["device", spe] = profile(
            "device", compile_(data.GeneratorModel(make(), gen), spe), data.device_dataset(), spe
        )
        rows["device+xla", spe] = profile(
            "device+xla", compile_(data.GeneratorModel(make(), gen), spe, jit=True), data.device_dataset(), spe
        )
        rows["host", spe] = profile("host", compile_(make(), spe), data.host_dataset(gen), spe)
        rows["python", spe] = profile("python", compile_(make(), spe), data.from_python(py, sig), spe)
    ok = True
    for spe in [1, 64]:
        base = rows["constant", spe]
        for path in ["device", "device+xla", "host", "python"]:
            r = rows[path, spe]
            rx = r["pcie_rx_bytes_per_step"] - base["pcie_rx_bytes_per_step"]
            tx = r["pcie_tx_bytes_per_step"] - base["pcie_tx_bytes_per_step"]
            print(
                f"steps_per_execution={spe:2d} {path:10s}: beyond the constant batch, "
                f"{rx:+9d} B host->device, {tx:+7d} B device->host per step (one batch: {BATCH_BYTES} B)"
            )
            if path.startswith("device"):
                ok = ok and rx < 0.01 * BATCH_BYTES and tx < 64
    print("no batch bytes host->device and no device->host traffic on the device path:", ok)
    return 0 if ok else 2


def attribution_variants(n):
    """Generators of n samples that each differ from the device path (teacher_task through
    data.sharded) in one thing: which part of the path extra traffic comes with."""

    def zero_labels(x):
        return x, tf.zeros([n, 1], tf.int32)

    def tf_matmuls(step):  # TensorFlow's own ops, ~ms of GPU time per step, then a zero batch
        a = tf.fill([4096, 4096], tf.cast(step, tf.float32) * 1e-9)
        for _ in range(4):
            a = tf.linalg.matmul(a, a)
        return zero_labels(tf.zeros([n, DIM]) + 0.0 * tf.reduce_mean(a))

    return {
        "unsharded": lambda step: tf_onthefly.teacher_task(n, DIM, seed=1, step=step),
        "step unread": lambda step: tf_onthefly.teacher_task(n, DIM, seed=1, step=0),
        "teacher_task 4 hidden": lambda step: tf_onthefly.teacher_task(n, DIM, seed=1, step=step, hidden=4),
        "random_batch": lambda step: zero_labels(tf_onthefly.random_batch(n, DIM, seed=1, step=step)[0]),
        "random data": lambda step: (tf.random.normal([n, DIM]), tf.random.uniform([n, 1], 0, 4, tf.int32)),
        "tf matmuls": tf_matmuls,
        "constant again": lambda step: zero_labels(tf.zeros([n, DIM])),
    }


def mirrored():
    """The device path under MirroredStrategy (two logical GPUs, data.sharded) next to a
    constant batch under the same strategy."""
    gpu = tf.config.list_physical_devices("GPU")[0]
    tf.config.set_logical_device_configuration(gpu, [tf.config.LogicalDeviceConfiguration(memory_limit=16384)] * 2)
    strategy = tf.distribute.MirroredStrategy([d.name for d in tf.config.list_logical_devices("GPU")])
    shard = data.sharded(lambda step, **s: tf_onthefly.teacher_task(BATCH, DIM, seed=1, step=step, **s), BATCH)
    ticks = data.device_dataset(ticks_per_step=2)
    rows = {}
    chosen = [a.split("=", 1)[1] for a in sys.argv if a.startswith("--spe=")]
    for spe in [int(x) for x in chosen[0].split(",")] if chosen else [1, 64]:
        with strategy.scope():
            const_model = compile_(
                data.GeneratorModel(
                    make(), lambda step: (tf.zeros([BATCH // 2, DIM]), tf.zeros([BATCH // 2, 1], tf.int32))
                ),
                spe,
            )
            device_model = compile_(data.GeneratorModel(make(), shard), spe)
        rows["constant", spe] = profile("mirrored constant", const_model, ticks, spe)
        rows["device", spe] = profile("mirrored device", device_model, ticks, spe)
        if "--attribute" in sys.argv:
            for name, generator in attribution_variants(BATCH // 2).items():
                with strategy.scope():
                    model = compile_(data.GeneratorModel(make(), generator), spe)
                rows[name, spe] = profile(f"mirrored {name}", model, ticks, spe)
        base, r = rows["constant", spe], rows["device", spe]
        print(
            f"MirroredStrategy x2, steps_per_execution={spe}: device path beyond the constant batch: "
            f"{r['pcie_rx_bytes_per_step'] - base['pcie_rx_bytes_per_step']:+d} B host->device, "
            f"{r['pcie_tx_bytes_per_step'] - base['pcie_tx_bytes_per_step']:+d} B device->host per step"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
