"""The bench main job runs end to end (tiny timings: no timed assertions), and profile_input."""
import json
import os
import tempfile
import time

import tensorflow as tf

import device_util
from tf_onthefly import bench, rates


class BenchTest(device_util.DeviceTestCase):

    def test_every_path_and_outputs(self):
        gpu = device_util.device() == "gpu"
        lines = []
        table = bench.run(["seed"], bench.PATHS, gpu, seconds=0.05, progress=lines.append)
        self.assertLen(table, len(bench.PATHS))
        self.assertLen(lines, len(bench.PATHS))  # progress, one line per measurement
        for row in table:
            self.assertGreater(row["steps_per_s"], 0)
            self.assertEqual(row["samples_per_s"], row["steps_per_s"] * 32)
        out = tempfile.mkdtemp()
        bench.write_outputs(table, out, dict(device="test"))
        with open(os.path.join(out, "bench.json")) as f:
            self.assertLen(json.load(f)["results"], len(bench.PATHS))
        self.assertGreater(os.path.getsize(os.path.join(out, "bench.png")), 1000)
        self.assertIn("overhead", bench.format_table(table))

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
        """rates.measure runs every candidate, NumPy included (tiny sizes; no timed assertion)."""
        res = rates.measure(mib=1, repeats=1, unroll=2)
        names = [r["name"] for r in res]
        self.assertIn("random_batch uniform", names)
        self.assertIn(rates.NUMPY, names)
        self.assertLen(names, len(set(names)))
        for r in res:
            self.assertGreater(r["gb_per_s"], 0, r)


if __name__ == "__main__":
    tf.test.main()
