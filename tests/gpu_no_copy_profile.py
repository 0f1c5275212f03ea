"""Counts host-to-device traffic in steady-state training steps (run on a GPU machine).

    python3 tests/gpu_no_copy_profile.py

Trains the same small model three ways and, for each, measures what crosses host to device
per step in two independent ways:
  - PCIe receive bytes counted by the GPU itself (`nvidia-smi dmon -s t`, MB/s each
    second) over about 6 s of steady-state steps, divided by the steps per second;
  - MemcpyHtoD events in a TF profiler trace (needs CUPTI for CUDA 12; where TensorFlow
    cannot load it, the trace has no device events and this count reads 0).
The paths:
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
    """(PCIe host->device bytes per step, steps per second) from the GPU's own counters."""
    import subprocess
    import time
    dmon = subprocess.Popen(["nvidia-smi", "dmon", "-s", "t", "-d", "1"], stdout=subprocess.PIPE, text=True)
    time.sleep(1.5)
    steps, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        model.fit(dataset, epochs=1, steps_per_epoch=50, verbose=0)
        steps += 50
    rate = steps / (time.perf_counter() - t0)
    dmon.terminate()
    out = dmon.communicate()[0]
    header = [l for l in out.splitlines() if l.startswith("#") and "rxpci" in l][0].lstrip("# ").split()
    col = header.index("rxpci")
    rx = [float(l.split()[col]) for l in out.splitlines() if l.strip() and not l.startswith("#")]
    rx = rx[1:-1] if len(rx) > 2 else rx  # whole seconds inside the run
    mb_per_s = float(np.median(rx)) if rx else float("nan")
    return mb_per_s * 1e6 / rate, rate, mb_per_s


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
    rows = [profile("device", compile_(data.GeneratorModel(make(), gen)), data.device_dataset()),
            profile("host", compile_(make()), data.host_dataset(gen))]

    def py():
        rng = np.random.default_rng(0)
        while True:
            yield (rng.standard_normal((BATCH, DIM), dtype=np.float32),
                   rng.integers(0, 4, (BATCH, 1), dtype=np.int32))

    sig = (tf.TensorSpec([BATCH, DIM], tf.float32), tf.TensorSpec([BATCH, 1], tf.int32))
    rows.append(profile("python", compile_(make()), data.from_python(py, sig)))
    device, host = rows[0], rows[1]
    ratio = device["pcie_rx_bytes_per_step"] / host["pcie_rx_bytes_per_step"]
    ok = device["pcie_rx_bytes_per_step"] < 0.01 * BATCH_BYTES and host["pcie_rx_bytes_per_step"] > 0.5 * BATCH_BYTES
    print(f"device path PCIe rx per step: {device['pcie_rx_bytes_per_step']} B "
          f"({ratio:.4f} of the host path's); batch is {BATCH_BYTES} B")
    print("no batch bytes host->device on the device path:", ok)
    return 0 if ok else 2


if __name__ == "__main__":
    sys.exit(main())
