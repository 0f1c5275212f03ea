"""Train the seed model once on batches born inside the step (//:bench measures every input path).

    bazel run //:demo                       # CPU, 300 steps
    bazel run //:demo -- --device=gpu --steps=2000

The seed model (Dense layers on 16 features, batch 32) trains on
tf_onthefly.random_batch called inside the tf.function train step, so a batch is
generated on the step's device and no batch data comes from Python or the host.
random_batch's labels are independent of its features (a throughput workload): the loss
settles at ln 2 = 0.693. Learnable synthetic tasks are generators of their own.
"""

import math
import time

import tensorflow as tf
from absl import app, flags, logging

import tf_onthefly
from tf_onthefly import models

FLAGS = flags.FLAGS
flags.DEFINE_enum("device", "cpu", ["cpu", "gpu"], "Where batches are generated and the model runs.")
flags.DEFINE_integer("steps", 300, "Training steps.")
flags.DEFINE_integer("batch_size", 32, "Samples per step.")
flags.DEFINE_integer("feature_dim", 16, "Features per sample.")
flags.DEFINE_integer("seed", 2024, "Data seed: with the step it fixes every batch.")


def train(device, steps, batch_size, feature_dim, seed, log_every=100):
    """Trains; returns (final mean loss, steps per second after the first step)."""
    if device == "gpu" and not tf.config.list_physical_devices("GPU"):
        raise app.UsageError("--device=gpu but TensorFlow sees no GPU")
    with tf.device("/GPU:0" if device == "gpu" else "/CPU:0"):
        apply = models.train_step(
            models.mlp(feature_dim, 1),
            tf.keras.losses.BinaryCrossentropy(from_logits=True),
            tf.keras.optimizers.Adam(1e-3),
        )

        @tf.function
        def train_step(step):
            return apply(*tf_onthefly.random_batch(batch_size, feature_dim, seed=seed, step=step))

        train_step(tf.constant(0, tf.int64)).numpy()  # trace and warm up
        losses, t0 = [], time.perf_counter()
        for step in range(1, steps):
            losses.append(train_step(tf.constant(step, tf.int64)))
            if step % log_every == 0:
                recent = float(tf.reduce_mean(losses[-log_every:]))
                logging.info("step %5d  loss %.4f  (%.0f steps/s)", step, recent, step / (time.perf_counter() - t0))
        final = float(tf.reduce_mean(losses[-min(len(losses), log_every) :]))
        rate = (steps - 1) / (time.perf_counter() - t0)
    return final, rate


def main(argv):
    del argv
    loss, rate = train(FLAGS.device, FLAGS.steps, FLAGS.batch_size, FLAGS.feature_dim, FLAGS.seed)
    print(
        f"trained {FLAGS.steps} steps of batch {FLAGS.batch_size} x {FLAGS.feature_dim} on "
        f"{FLAGS.device}: {rate:.0f} steps/s, {rate * FLAGS.batch_size:.0f} samples/s, "
        f"final loss {loss:.4f} (ln 2 = {math.log(2):.4f}: labels are independent of features)"
    )


if __name__ == "__main__":
    app.run(main)
