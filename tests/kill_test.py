"""A real kill: training in a subprocess is SIGKILLed and restarted, and ends where an
uninterrupted run ends, bit for bit (weights and data_step).

Each case kills the same run twice: once mid-epoch (between backups), then, after a
restart, while a backup is being written (its files on disk, not yet in place); a third
process finishes the run. Two forms: model.fit with GeneratorModel and
data.BackupAndRestore, and a custom loop with DataPosition and tf.train.CheckpointManager.
The processes run on the CPU with op determinism on (tests/kill_worker.py). One more case
shows what Keras's own BackupAndRestore gives after a kill inside its write.
"""

import glob
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np
from absl import flags
from absl.testing import absltest

# Run by hand among the device tests (tools/testing/gpu_run.py passes --test_device to every
# test file): the training processes run on the CPU either way.
flags.DEFINE_string("test_device", "cpu", "ignored: the killed processes train on the CPU")

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "kill_worker.py")
TOTAL = 48  # the steps of a run, both forms (kill_worker.py)


class KillTest(absltest.TestCase):
    def setUp(self):
        super().setUp()
        self.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        self.env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), CUDA_VISIBLE_DEVICES="")

    def start(self, mode, directory, out, **pause):
        args = [sys.executable, WORKER, "--mode", mode, "--dir", directory, "--out", out]
        for name, value in pause.items():
            args += [f"--{name}"] + ([str(value)] if value != "" else [])
        return subprocess.Popen(args, env=self.env)

    def run_to_end(self, mode, directory, name, **flags):
        out = os.path.join(self.tmp, name + ".npz")
        proc = self.start(mode, directory, out, **flags)
        self.assertEqual(proc.wait(timeout=600), 0, f"{name}: the training process failed")
        with np.load(out) as f:
            return {k: f[k] for k in f.files}

    def kill_when_paused(self, mode, directory, name, **pause):
        """Starts a run that pauses where told, SIGKILLs it there; returns once it is dead."""
        marker = os.path.join(self.tmp, name + ".paused")
        proc = self.start(mode, directory, os.path.join(self.tmp, name + ".npz"), marker=marker, **pause)
        deadline = time.monotonic() + 600
        while not os.path.exists(marker):
            self.assertIsNone(proc.poll(), f"{name}: the process ended before its pause point")
            self.assertLess(time.monotonic(), deadline, f"{name}: never reached its pause point")
            time.sleep(0.2)
        os.kill(proc.pid, signal.SIGKILL)
        self.assertEqual(proc.wait(timeout=60), -signal.SIGKILL)

    def assertSameRun(self, expected, actual):
        self.assertEqual(int(actual["data_step"]), TOTAL)
        self.assertEqual(int(expected["data_step"]), TOTAL)
        weights = sorted(k for k in expected if k.startswith("w"))
        self.assertEqual(weights, sorted(k for k in actual if k.startswith("w")))
        for k in weights:
            np.testing.assert_array_equal(expected[k], actual[k], err_msg=k)  # bit for bit

    def backup_epochs(self, directory):
        """The epoch recorded in each complete backup, and the number of partial writes."""
        epochs = []
        for path in sorted(glob.glob(os.path.join(directory, "backup-*"))):
            with open(os.path.join(path, "training_metadata.json")) as f:
                epochs.append(json.load(f)["epoch"])
        return epochs, len(glob.glob(os.path.join(directory, ".tmp-backup-*")))

    def test_fit_with_backup_and_restore_survives_kills(self):
        reference = self.run_to_end("fit", os.path.join(self.tmp, "ref"), "fit_ref")
        directory = os.path.join(self.tmp, "fit")
        # Killed mid-epoch: step 17 is the 6th of the second epoch (12 steps an epoch).
        self.kill_when_paused("fit", directory, "fit_kill1", pause_at_step=17)
        self.assertEqual(self.backup_epochs(directory), ([1], 0))
        # Restarted from epoch 1's backup, killed inside its second backup write (epoch 3's).
        self.kill_when_paused("fit", directory, "fit_kill2", pause_in_save=2)
        self.assertEqual(self.backup_epochs(directory), ([2], 1))  # the write left a partial copy
        final = self.run_to_end("fit", directory, "fit_final")
        self.assertEqual(int(final["start"]), 24)  # resumed from epoch 2's backup
        self.assertSameRun(reference, final)

    def test_keras_backup_killed_between_its_writes_trains_an_extra_epoch(self):
        """What data.BackupAndRestore is for: Keras's own callback writes the weights (with
        data_step), then the epoch. Killed between the two (the weights of epoch 2, the
        epoch number of epoch 1), the rerun trains epochs 1..3 from epoch 2's weights: one
        epoch more than asked, ending 12 steps past an uninterrupted run."""
        directory = os.path.join(self.tmp, "keras")
        self.kill_when_paused("fit", directory, "keras_kill", pause_in_save=2, keras_backup="")
        final = self.run_to_end("fit", directory, "keras_final", keras_backup="")
        self.assertEqual(int(final["start"]), 24)
        self.assertEqual(int(final["data_step"]), TOTAL + 12)

    def test_custom_loop_with_checkpoint_manager_survives_kills(self):
        reference = self.run_to_end("loop", os.path.join(self.tmp, "ref"), "loop_ref")
        directory = os.path.join(self.tmp, "loop")
        # Killed between saves (every 8 steps): after step 13, the last save was at step 8.
        self.kill_when_paused("loop", directory, "loop_kill1", pause_at_step=13)
        # Restarted at step 8; saves at 16, then killed inside the save at 24: its files
        # are written, the manager's record still names the save at 16.
        self.kill_when_paused("loop", directory, "loop_kill2", pause_in_save=2)
        final = self.run_to_end("loop", directory, "loop_final")
        self.assertEqual(int(final["start"]), 16)
        self.assertSameRun(reference, final)


if __name__ == "__main__":
    absltest.main()
