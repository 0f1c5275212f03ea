"""One training process for kill_test.py: trains to the end, or pauses where told and waits
there to be killed.

    python3 kill_worker.py --mode fit|loop --dir DIR --out RESULT.npz
        [--pause_at_step S] [--pause_in_save N] [--marker FILE]

fit: GeneratorModel + model.fit + data.BackupAndRestore(DIR), an epoch of STEPS steps
(--keras_backup: Keras's own tf.keras.callbacks.BackupAndRestore instead).
loop: a custom loop, DataPosition + tf.train.CheckpointManager(DIR), a save every SAVE_EVERY
steps. --pause_at_step S pauses once the step S (0-based, global) has been trained;
--pause_in_save N pauses inside the N-th backup write of this process (1-based): for fit
after the backup's files are written and before it is put in place (with --keras_backup,
after the weights are written and before the epoch is), for loop after the
checkpoint's files are written and before the manager records it. Pausing writes
--marker first. At the end the weights and the data position go to --out, with the
data step the run started from.
"""

import argparse
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import tf_onthefly  # noqa: E402
from tf_onthefly import data  # noqa: E402
from tf_onthefly.bench import models  # noqa: E402

EPOCHS, STEPS = 4, 12  # fit: 48 steps
TOTAL, SAVE_EVERY = 48, 8  # loop


def generator(step):
    return tf_onthefly.random_batch(32, 16, seed=3, step=step)


def pause(marker):
    with open(marker + ".tmp", "w") as f:
        f.write(str(os.getpid()))
    os.rename(marker + ".tmp", marker)
    time.sleep(600)  # killed here
    sys.exit("kill_worker: not killed")


class PauseAtStep(tf.keras.callbacks.Callback):
    def __init__(self, step, marker):
        super().__init__()
        self.step, self.marker = step, marker

    def on_train_batch_end(self, batch, logs=None):
        if int(self.model.data_step.numpy()) == self.step + 1:
            pause(self.marker)


class PausingBackup(data.BackupAndRestore):
    """Pauses inside its N-th backup write: files written, not yet put in place."""

    def __init__(self, backup_dir, pause_in_save, marker):
        super().__init__(backup_dir, delete_checkpoint=False)
        self.saves, self.pause_in_save, self.marker = 0, pause_in_save, marker

    def _write_backup(self, directory):
        super()._write_backup(directory)
        self.saves += 1
        if self.saves == self.pause_in_save:
            pause(self.marker)


class PausingSavesModel(data.GeneratorModel):
    """For Keras's own BackupAndRestore, which writes the weights and then the epoch: pauses
    between the two, after the N-th weights write."""

    pause_in_save, marker, saves = 0, "", 0

    def save_weights(self, *args, **kwargs):
        super().save_weights(*args, **kwargs)
        PausingSavesModel.saves += 1
        if PausingSavesModel.saves == self.pause_in_save:
            pause(self.marker)


def model_and_loss():
    tf.keras.utils.set_random_seed(0)  # the same initial weights in every process
    return models.mlp(16, 1), tf.keras.losses.BinaryCrossentropy(from_logits=True)


def run_fit(args):
    inner, loss = model_and_loss()
    if args.keras_backup:
        model = PausingSavesModel(inner, generator)
        model.pause_in_save, model.marker = args.pause_in_save, args.marker
        backup = tf.keras.callbacks.BackupAndRestore(args.dir, delete_checkpoint=False)
    else:
        model = data.GeneratorModel(inner, generator)
        backup = PausingBackup(args.dir, args.pause_in_save, args.marker)
    model.compile(optimizer=tf.keras.optimizers.Adam(1e-2), loss=loss, jit_compile=False)
    callbacks = [backup]
    if args.pause_at_step >= 0:
        callbacks.append(PauseAtStep(args.pause_at_step, args.marker))

    class Start(tf.keras.callbacks.Callback):
        def on_train_begin(self, logs=None):  # after the backup's restore (callbacks run in order)
            self.step = int(self.model.data_step.numpy())

    start = Start()
    model.fit(data.device_dataset(), epochs=EPOCHS, steps_per_epoch=STEPS, verbose=0, callbacks=callbacks + [start])
    return model.get_weights(), int(model.data_step.numpy()), start.step


def run_loop(args):
    model, loss_fn = model_and_loss()
    opt = tf.keras.optimizers.Adam(1e-2)
    opt.build(model.trainable_variables)
    pos = data.DataPosition(generator)
    ckpt = tf.train.Checkpoint(model=model, optimizer=opt, position=pos)
    manager = tf.train.CheckpointManager(ckpt, args.dir, max_to_keep=2)
    if manager.latest_checkpoint:
        ckpt.restore(manager.latest_checkpoint).assert_existing_objects_matched()
    start = int(pos.step.numpy())
    apply = models.train_step(model, loss_fn, opt)

    saves = 0
    record = manager._record_state

    def record_state():  # the checkpoint's files are written; the manager has not recorded it
        if saves == args.pause_in_save:
            pause(args.marker)
        record()

    manager._record_state = record_state

    @tf.function
    def train_step():
        apply(*pos.next_batch())

    while int(pos.step.numpy()) < TOTAL:
        train_step()
        step = int(pos.step.numpy())
        if step - 1 == args.pause_at_step:
            pause(args.marker)
        if step % SAVE_EVERY == 0:
            saves += 1
            manager.save()
    return model.get_weights(), int(pos.step.numpy()), start


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", choices=["fit", "loop"], required=True)
    parser.add_argument("--dir", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--pause_at_step", type=int, default=-1)
    parser.add_argument("--pause_in_save", type=int, default=0)
    parser.add_argument("--marker", default="")
    parser.add_argument("--keras_backup", action="store_true", help="fit: Keras's own BackupAndRestore")
    args = parser.parse_args()
    tf.config.experimental.enable_op_determinism()  # bit-exact weights across processes
    weights, data_step, start = (run_fit if args.mode == "fit" else run_loop)(args)
    np.savez(args.out, data_step=data_step, start=start, **{f"w{i}": w for i, w in enumerate(weights)})


if __name__ == "__main__":
    main()
