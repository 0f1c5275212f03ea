"""Counts host-to-device traffic in steady-state training steps (run on a GPU machine).

    python3 tests/gpu_no_copy_profile.py

Trains the same small model three ways and, for each, measures what crosses host to device
per step in two independent ways:
  - PCIe receive bytes counted by the GPU itself (NVML PCIe RX throughput, sampled back
    to back over about 6 s of steady-state steps and integrated), per step;
  - MemcpyHtoD events in a TF profiler trace (needs CUPTI for CUDA 12; where TensorFlow
    cannot load it, the trace has no device events and this count reads 0).
The paths:
  constant: a batch already on the GPU (the baseline every step has)
  device: tf_onthefly.data.GeneratorModel (batch generated inside the step)
  host:   tf_onthefly.data.host_dataset (native op in tf.data on the CPU)
  python: tf_onthefly.data.from_python (NumPy batches)
The device path should move no batch bytes: at most a few bytes a step (the tick).
"""
import glob
import json
import os
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
    m = tf.keras.Sequential([tf.keras.Input((DIM,)), tf.keras.layers.Dense(256, activation="relu"),
                             tf.keras.layers.Dense(4)])
    return m


def compile_(m):
    m.compile(optimizer="adam", loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return m


def count_htod(logdir):
    """(events, bytes) of host-to-device memcpys on GPU planes in the profile."""
    events = total = 0
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
                    if "MemcpyHtoD" not in name and "HtoD" not in name:
                        continue
                    events += 1
                    for st in list(ev.stats) + list(plane.event_metadata[ev.metadata_id].stats):
                        if stat_names.get(st.metadata_id) == "memcpy_details":
                            for part in st.str_value.split():
                                if part.startswith("num_bytes:"):
                                    total += int(part.split(":")[1])
    return events, total


def pcie_rx_per_step(model, dataset, seconds=6.0):
    """(PCIe host->device bytes per step, steps per second, mean MB/s), from the GPU's own
    counters: NVML's PCIe RX throughput (KB/s over a 20 ms window), sampled back to back
    by a thread for the whole run and integrated over time."""
    import threading
    import time
    import pynvml

    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByIndex(0)
    total, stop = [0.0], threading.Event()

    def sample():
        last = time.perf_counter()
        while not stop.is_set():
            kb_per_s = pynvml.nvmlDeviceGetPcieThroughput(handle, pynvml.NVML_PCIE_UTIL_RX_BYTES)
            now = time.perf_counter()
            total[0] += kb_per_s * 1024 * (now - last)
            last = now

    thread = threading.Thread(target=sample, daemon=True)
    steps, t0 = 0, time.perf_counter()
    thread.start()
    while time.perf_counter() - t0 < seconds:
        model.fit(dataset, epochs=1, steps_per_epoch=50, verbose=0)
        steps += 50
    elapsed = time.perf_counter() - t0
    stop.set()
    thread.join()
    return total[0] / steps, steps / elapsed, total[0] / elapsed / 1e6


def profile(name, model, dataset):
    model.fit(dataset, epochs=1, steps_per_epoch=20, verbose=0)  # warm up, trace
    rx_per_step, steps_per_s, rx_mb_s = pcie_rx_per_step(model, dataset)
    logdir = tempfile.mkdtemp(prefix=name)
    tf.profiler.experimental.start(logdir)
    model.fit(dataset, epochs=1, steps_per_epoch=STEPS, verbose=0)
    tf.profiler.experimental.stop()
    ev, nbytes = count_htod(logdir)
    row = dict(path=name, steps_per_s=round(steps_per_s, 1), pcie_rx_mb_per_s=rx_mb_s,
               pcie_rx_bytes_per_step=round(rx_per_step), batch_bytes=BATCH_BYTES,
               trace_htod_events=ev, trace_htod_bytes=nbytes)
    print(json.dumps(row))
    return row


def main():
    if not tf.config.list_physical_devices("GPU"):
        print("no GPU"); return 1
    # Baseline: the same step on a constant batch already on the GPU. Whatever PCIe traffic
    # a step has without any input (launch commands, the tick, Keras's loop) shows here.
    with tf.device("/GPU:0"):
        const = (tf.random.normal([BATCH, DIM]), tf.zeros([BATCH, 1], tf.int32))
    rows = [profile("constant", compile_(data.GeneratorModel(make(), lambda step: const)), data.device_dataset()),
            profile("device", compile_(data.GeneratorModel(make(), gen)), data.device_dataset()),
            profile("host", compile_(make()), data.host_dataset(gen))]

    def py():
        rng = np.random.default_rng(0)
        while True:
            yield (rng.standard_normal((BATCH, DIM), dtype=np.float32),
                   rng.integers(0, 4, (BATCH, 1), dtype=np.int32))

    sig = (tf.TensorSpec([BATCH, DIM], tf.float32), tf.TensorSpec([BATCH, 1], tf.int32))
    rows.append(profile("python", compile_(make()), data.from_python(py, sig)))
    base, device, host, python = (r["pcie_rx_bytes_per_step"] for r in rows)
    ok = device - base < 0.01 * BATCH_BYTES and host - base > 0.9 * BATCH_BYTES
    print(f"PCIe rx per step beyond the constant-batch baseline ({base} B): device path "
          f"{device - base} B, host path {host - base} B, python path {python - base} B; "
          f"one batch is {BATCH_BYTES} B")
    print("no batch bytes host->device on the device path:", ok)
    return 0 if ok else 2


if __name__ == "__main__":
    sys.exit(main())
