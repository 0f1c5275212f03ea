"""One worker of distributed_test.MultiWorkerTest (TF_CONFIG from the environment), and
the generator every distributed test shards (`gen`, `GLOBAL`), defined once here.

Writes its replica's shard of the global batch at steps 0 and 7, and trains a few steps
with model.fit, without and with XLA (jit_compile, where the op library has XLA kernels),
into OUT/worker<i>.npz.
"""

import json
import os
import sys

import numpy as np
import tensorflow as tf

import tf_onthefly
from tf_onthefly import _load, data
from tf_onthefly.bench import models

GLOBAL = 64  # the global batch


def gen(step, first_sample=0, num_samples=None):
    # Bit-identical on every device (normal features included), so shards made on GPUs, on
    # tf.data's CPU threads, on other workers and on one device can be compared bit for bit.
    return tf_onthefly.teacher_task(GLOBAL, 16, seed=5, step=step, first_sample=first_sample, num_samples=num_samples)


def main(out):
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    index = json.loads(os.environ["TF_CONFIG"])["task"]["index"]
    shard = data.sharded(gen, GLOBAL)
    result = {}
    for step in [0, 7]:
        f, l = strategy.run(tf.function(lambda: shard(tf.constant(step, tf.int64))))
        result[f"features{step}"] = strategy.experimental_local_results(f)[0].numpy()
        result[f"labels{step}"] = strategy.experimental_local_results(l)[0].numpy()

    ticks = data.device_dataset(ticks_per_step=strategy.num_replicas_in_sync)
    # With and without XLA (each replica compiles its own step): the same batches, so the
    # same weights up to XLA's arithmetic.
    for name, jit in [("", False), ("jit_", _load.HAS_XLA)]:
        with strategy.scope():
            tf.keras.utils.set_random_seed(0)
            net = models.mlp(16, 4, hidden=(8,))
            model = data.GeneratorModel(net, shard)
            model.compile(
                optimizer="adam",
                loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                jit_compile=jit,
            )
        hist = model.fit(ticks, epochs=2, steps_per_epoch=3, verbose=0)
        result[name + "data_step"] = np.array(int(model.data_step.numpy()))
        result[name + "loss"] = np.array(hist.history["loss"][-1])
        for i, w in enumerate(model.model.get_weights()):
            result[f"{name}weight{i}"] = w
    np.savez(os.path.join(out, f"worker{index}.npz"), **result)
    print(f"worker {index}: done")


if __name__ == "__main__":
    main(sys.argv[1])
