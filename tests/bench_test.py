"""The input benchmark runs end to end (tiny timings: no timed assertions), and profile_input."""

import json
import os
import tempfile
import time

import tensorflow as tf

import tf_onthefly
from tf_onthefly import _load, bench, rates

import device_util


class BenchTest(device_util.DeviceTestCase):
    def test_every_path_mode_and_outputs(self):
        gpu = device_util.device() == "gpu"
        lines = []
        table = bench.run(
            ["seed"], bench.PATHS, bench.MODES, [False], gpu, seconds=0.03, rounds=2, progress=lines.append
        )
        rows = len(bench.PATHS) * len(bench.MODES)
        self.assertLen(table, rows)
        self.assertLen(lines, rows)  # progress, one line per measurement
        for row in table:
            self.assertGreater(row["steps_per_s"], 0)
            self.assertEqual(row["samples_per_s"], row["steps_per_s"] * 32)
            self.assertGreaterEqual(row["spread"], 0)  # (fastest - slowest) / median of the two rounds
            if row["path"] == "constant":
                self.assertEqual(row["vs_constant"], 1.0)
        out = tempfile.mkdtemp()
        bench.write_outputs(table, out, dict(device="test"))
        with open(os.path.join(out, "bench.json")) as f:
            self.assertLen(json.load(f)["results"], rows)
        self.assertGreater(os.path.getsize(os.path.join(out, "bench.png")), 1000)
        self.assertIn("vs constant", bench.format_table(table))

    def test_speed_labels_say_slower_or_faster(self):
        self.assertEqual(bench.speed_label(0.43), "57 % slower")
        self.assertEqual(bench.speed_label(1.03), "3 % faster")
        self.assertEqual(bench.speed_label(1.0), "same as constant")

    def test_profile_input_verdicts(self):
        step = tf.function(lambda b: tf.reduce_sum(b * 2.0))
        fast = tf.data.Dataset.from_tensors(tf.ones([64, 8])).repeat()

        def slow_batches():
            while True:
                time.sleep(0.01)  # a slow producer: input-bound by construction
                yield tf.ones([64, 8]).numpy()

        slow = tf.data.Dataset.from_generator(slow_batches, output_signature=tf.TensorSpec([64, 8], tf.float32))
        fast_result = bench.profile_input(fast, step, steps=20)
        slow_result = bench.profile_input(slow, step, steps=20)
        self.assertTrue(slow_result["verdict"].startswith("Input is your bottleneck"), slow_result)
        self.assertGreater(slow_result["input_share"], fast_result["input_share"])
        for r in (fast_result, slow_result):
            self.assertIn("ms", r["verdict"])

    def test_rates_every_candidate(self):
        """rates.measure runs every candidate: each registered generator, XLA, TF's ops, NumPy
        (tiny sizes; no timed assertion)."""
        res, notes = rates.measure([1], repeats=1, unroll=2)
        names = [r["name"] for r in res]
        expected = ["random_batch uniform", "random_batch normal float16", rates.NUMPY, rates.NUMPY_NORMAL]
        for name in expected + (["random_batch normal, XLA"] if _load.HAS_XLA else []):
            self.assertIn(name, names)
        for generator in tf_onthefly.REGISTRY:
            self.assertTrue(any(n.startswith(generator + " (") for n in names), generator)
        self.assertLen(names, len(set(names)))
        if _load.HAS_XLA:
            self.assertEqual(notes, [])
        else:  # XLA rows are left out, and the notes say why
            self.assertFalse([n for n in names if "XLA" in n])
            self.assertEqual(len(notes), 1)
            self.assertIn("no XLA kernels", notes[0])
        for r in res:
            self.assertGreater(r["gb_per_s"], 0, r)


if __name__ == "__main__":
    tf.test.main()
