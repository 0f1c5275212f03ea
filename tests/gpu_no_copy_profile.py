"""Counts host-to-device copies in steady-state training steps (run on a GPU machine).

    python3 tests/gpu_no_copy_profile.py

Trains the same small model three ways, profiles steps 20..59 of each with the TF profiler
(CUPTI), and counts MemcpyHtoD events and bytes on the GPU in the trace:
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


def profile(name, model, dataset):
    model.fit(dataset, epochs=1, steps_per_epoch=20, verbose=0)  # warm up, trace
    logdir = tempfile.mkdtemp(prefix=name)
    tf.profiler.experimental.start(logdir)
    model.fit(dataset, epochs=1, steps_per_epoch=STEPS, verbose=0)
    tf.profiler.experimental.stop()
    ev, nbytes = count_htod(logdir)
    row = dict(path=name, steps=STEPS, htod_events=ev, htod_bytes=nbytes,
               htod_bytes_per_step=nbytes / STEPS, batch_bytes=BATCH_BYTES)
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
    device = rows[0]
    ok = device["htod_bytes_per_step"] < 1024 and rows[1]["htod_bytes_per_step"] >= BATCH_BYTES * 0.9
    print("no batch bytes host->device on the device path:", ok)
    return 0 if ok else 2


if __name__ == "__main__":
    sys.exit(main())
