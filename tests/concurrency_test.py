"""The same generator called concurrently gives exactly the batches of sequential calls,
keyed by step: from a parallel tf.data map (num_parallel_calls=AUTOTUNE,
deterministic=False) and from several Python threads at once (eager calls and one shared
tf.function). Every registered generator's op holds no state between calls; these tests
check that nothing shared (kernel objects, scratch memory, the XLA-free GPU launch path)
mixes calls up under concurrency. CPU and GPU variants (the GPU variant's threads call
the GPU kernels; tf.data maps run on the host, so they are checked against the CPU)."""

import queue
import random
import threading

import numpy as np
import tensorflow as tf

import tf_onthefly

import device_util

# Steps include large ones, so a mix-up of the counter's high words would show.
STEPS = list(range(24)) + [2**32 - 1, 2**32, 2**40 + 7, 2**63 - 1]
THREADS = 8

GENERATORS = {
    "random_batch": lambda step: tf_onthefly.random_batch(64, 16, seed=5, step=step),
    "random_batch_normal": lambda step: tf_onthefly.random_batch(64, 16, seed=5, step=step, distribution="normal"),
    "teacher_task": lambda step: tf_onthefly.teacher_task(64, 16, seed=5, step=step),
    "procedural_shapes": lambda step: tf_onthefly.procedural_shapes(8, 16, 16, seed=5, step=step),
    "random_walk": lambda step: tf_onthefly.random_walk(32, 50, seed=5, step=step),
    "tabular_mixture": lambda step: tf_onthefly.tabular_mixture(64, 8, seed=5, step=step),
    "drift_walk": lambda step: tf_onthefly.drift_walk(32, 50, [0.3, 0.7], seed=5, step=step),
}


def sequential(gen, device):
    with tf.device(device):
        return {s: [t.numpy() for t in gen(tf.constant(s, tf.int64))] for s in STEPS}


class ConcurrencyTest(device_util.DeviceTestCase):
    def device_name(self):
        return "/GPU:0" if device_util.device() == "gpu" else "/CPU:0"

    def assertSameBatches(self, expected, got, name):
        self.assertEqual(sorted(expected), sorted(got), name)
        for step in expected:
            for a, b in zip(expected[step], got[step]):
                np.testing.assert_array_equal(a, b, err_msg=f"{name}, step {step}")

    def test_parallel_tf_data_map(self):
        """map(num_parallel_calls=AUTOTUNE, deterministic=False): batches come in any order,
        each equal to the sequential call at its step."""
        steps = tf.constant(STEPS * 4, tf.int64)  # each step four times, interleaved
        for name, gen in GENERATORS.items():
            with self.subTest(name):
                expected = sequential(gen, "/CPU:0")
                ds = tf.data.Dataset.from_tensor_slices(steps).map(
                    lambda s, gen=gen: (s, *gen(s)), num_parallel_calls=tf.data.AUTOTUNE, deterministic=False
                )
                seen = 0
                for step, *batch in ds:
                    step = int(step.numpy())
                    for a, b in zip(expected[step], batch):
                        np.testing.assert_array_equal(a, b.numpy(), err_msg=f"{name}, step {step}")
                    seen += 1
                self.assertEqual(seen, 4 * len(STEPS))

    def test_python_threads(self):
        """THREADS threads, each calling every step in its own shuffled order, eagerly and
        through one tf.function they share, all at once."""
        device = self.device_name()
        for name, gen in GENERATORS.items():
            with self.subTest(name):
                expected = sequential(gen, device)
                traced = tf.function(gen, input_signature=[tf.TensorSpec([], tf.int64)])
                with tf.device(device):
                    traced(tf.constant(0, tf.int64))  # traced once, then shared by every thread
                results, errors = queue.Queue(), queue.Queue()
                start = threading.Barrier(THREADS)

                def worker(seed, gen=gen, traced=traced):
                    try:
                        order = STEPS * 2
                        random.Random(seed).shuffle(order)
                        start.wait()
                        with tf.device(device):  # device scopes are per thread
                            for i, s in enumerate(order):
                                call = traced if i % 2 else gen
                                results.put((s, [t.numpy() for t in call(tf.constant(s, tf.int64))]))
                    except Exception as e:  # noqa: BLE001 -- reported by the main thread
                        errors.put(e)

                threads = [threading.Thread(target=worker, args=(i,)) for i in range(THREADS)]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
                self.assertTrue(errors.empty(), f"{name}: {list(errors.queue)}")
                count = 0
                while not results.empty():
                    step, batch = results.get()
                    for a, b in zip(expected[step], batch):
                        np.testing.assert_array_equal(a, b, err_msg=f"{name}, step {step}")
                    count += 1
                self.assertEqual(count, THREADS * 2 * len(STEPS))


if __name__ == "__main__":
    tf.test.main()
