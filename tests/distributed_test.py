"""tf.distribute: every replica generates only its shard of the global batch, reproducibly.

CPU variant: MirroredStrategy over two logical CPU devices, and MultiWorkerMirroredStrategy
with two worker processes on 127.0.0.1. GPU variant: two logical GPUs on one card.
"""

import json
import os
import socket
import subprocess
import sys
import tempfile
from unittest import mock

import numpy as np
import tensorflow as tf

# Logical devices must exist before TensorFlow initialises its runtime: configure at import.
ON_GPU = "--test_device=gpu" in sys.argv
if ON_GPU and tf.config.list_physical_devices("GPU"):
    tf.config.set_logical_device_configuration(
        tf.config.list_physical_devices("GPU")[0], [tf.config.LogicalDeviceConfiguration(memory_limit=16384)] * 2
    )
tf.config.set_logical_device_configuration(
    tf.config.list_physical_devices("CPU")[0], [tf.config.LogicalDeviceConfiguration()] * 2
)

from multiworker_worker import GLOBAL, gen  # noqa: E402

from tf_onthefly import data  # noqa: E402

import device_util  # noqa: E402


def devices():
    kind = "GPU" if device_util.device() == "gpu" else "CPU"
    return [d.name for d in tf.config.list_logical_devices(kind)][:2]


make_model = device_util.make_model


class MirroredTest(device_util.DeviceTestCase):
    def setUp(self):
        super().setUp()
        self.strategy = tf.distribute.MirroredStrategy(devices())
        self.assertEqual(self.strategy.num_replicas_in_sync, 2)

    def _per_replica(self, step):
        shard = data.sharded(gen, GLOBAL)
        out = self.strategy.run(tf.function(lambda: shard(tf.constant(step, tf.int64))))
        return [[t.numpy() for t in self.strategy.experimental_local_results(o)] for o in out]

    def test_shards_tile_the_global_batch(self):
        for step in [0, 7]:
            feats, labels = self._per_replica(step)
            self.assertLen(feats, 2)
            self.assertEqual(feats[0].shape, (GLOBAL // 2, 16))
            full_f, full_l = gen(tf.constant(step, tf.int64))
            self.assertAllEqual(np.concatenate(feats), full_f)  # = the single-device batch
            self.assertAllEqual(np.concatenate(labels), full_l)
            # no sample on two replicas
            rows = {r.tobytes() for f in feats for r in f}
            self.assertLen(rows, GLOBAL)

    def test_first_sample_is_a_constant_per_replica(self):
        """Each replica's first_sample is known when its step is traced: a Python int, so the
        GPU kernels' host-memory input costs no device-to-host copy in any step."""
        firsts = []

        def replica_fn():
            firsts.append(data.replica_shard(GLOBAL)[0])
            return data.sharded(gen, GLOBAL)(tf.constant(0, tf.int64))

        self.strategy.run(tf.function(replica_fn))
        self.assertEqual(sorted(firsts), [0, GLOBAL // 2])
        self.assertTrue(all(isinstance(f, int) for f in firsts), firsts)

    def test_first_sample_of_a_replica_id_known_only_when_running(self):
        """Where the replica id is a tensor, first_sample is computed from it in int32 (host
        memory on the GPU device, where the kernels read it), in int64 only past 2^31 - 1."""

        def first_of(replica, global_batch):
            ctx = mock.Mock(num_replicas_in_sync=2, replica_id_in_sync_group=replica)
            with mock.patch.object(tf.distribute, "get_replica_context", return_value=ctx):
                return data.replica_shard(global_batch)[0]

        for global_batch, dtype in [(GLOBAL, tf.int32), (2**33, tf.int64)]:
            first = tf.function(lambda r: first_of(r, global_batch))(tf.constant(1))
            self.assertEqual(first.dtype, dtype)
            self.assertEqual(int(first), global_batch // 2)

    def test_host_pipeline_from_input_context(self):
        ds = data.distributed_host_dataset(self.strategy, gen, GLOBAL, start_step=3)
        it = iter(ds)
        for step in [3, 4]:
            feats, labels = next(it)
            f = np.concatenate([t.numpy() for t in self.strategy.experimental_local_results(feats)])
            full_f, _ = gen(tf.constant(step, tf.int64))
            self.assertAllEqual(f, full_f)

    def compiled_model(self, **compile_args):
        """The test model, sharded and compiled under the strategy (Adam, from-logits loss)."""
        with self.strategy.scope():
            model = data.GeneratorModel(make_model(), data.sharded(gen, GLOBAL))
            model.compile(
                optimizer=tf.keras.optimizers.Adam(3e-3),
                loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                **compile_args,
            )
        return model

    def test_fit_and_resume(self):
        model = self.compiled_model()
        history = model.fit(data.device_dataset(ticks_per_step=2), epochs=4, steps_per_epoch=25, verbose=0)
        loss = history.history["loss"]
        self.assertLess(loss[-1], 0.85 * loss[0], msg=str(loss))
        self.assertEqual(int(model.data_step.numpy()), 100)
        path = tf.train.Checkpoint(model=model).save(os.path.join(tempfile.mkdtemp(), "ckpt"))
        with self.strategy.scope():
            restored = data.GeneratorModel(make_model(), data.sharded(gen, GLOBAL))
        tf.train.Checkpoint(model=restored).restore(path)
        self.assertEqual(int(restored.data_step.numpy()), 100)  # resume position, as on one device

    def test_fit_steps_per_execution(self):
        """Many steps per call under the strategy: the same steps as one per call."""
        weights = {}
        for spe in [1, 5]:
            model = self.compiled_model(steps_per_execution=spe)
            model.fit(data.device_dataset(ticks_per_step=2), epochs=2, steps_per_epoch=10, verbose=0)
            self.assertEqual(int(model.data_step.numpy()), 20)
            weights[spe] = model.get_weights()
        for a, b in zip(weights[1], weights[5]):
            self.assertAllClose(a, b, rtol=1e-5, atol=1e-6)  # all-reduce order may differ in the last bits

    @device_util.DeviceTestCase.require_xla
    def test_fit_with_xla_trains_on_the_same_batches(self):
        """jit_compile=True under the strategy: Keras would compile the function around
        strategy.run, which spans both replicas' devices ("Trying to access resource
        .../replica_1 ... from device CPU:0"); GeneratorModel has each replica compile its own
        step instead. One step and four per call, fit, evaluate and predict: the data position,
        the losses, predictions and weights of the run without XLA (up to XLA's arithmetic)."""
        results = {}
        for jit in [False, True]:
            for spe in [1, 4]:
                model = self.compiled_model(steps_per_execution=spe, metrics=["accuracy"], jit_compile=jit)
                self.assertEqual(model.jit_compile, jit)
                history = model.fit(data.device_dataset(ticks_per_step=2), epochs=2, steps_per_epoch=8, verbose=0)
                self.assertEqual(int(model.data_step.numpy()), 16)
                evaluation = model.evaluate(data.device_dataset(3, ticks_per_step=2), verbose=0)
                prediction = model.predict(np.ones((4, 16), np.float32), verbose=0)
                results[jit, spe] = (history.history["loss"], evaluation, prediction, model.get_weights())
                if jit:  # compiled once for each replica, on its device
                    self.assertEqual(model._replica_functions["forward_backward"].experimental_get_tracing_count(), 2)
        # Other batches would move the weights by ~1e-3 a step; XLA's GPU kernels may fuse and
        # reorder sums, so its arithmetic is given more room there.
        tol = dict(rtol=1e-5, atol=1e-6) if device_util.device() == "cpu" else dict(rtol=1e-4, atol=1e-5)
        for key, (loss, evaluation, prediction, weights) in results.items():
            with self.subTest(jit=key[0], steps_per_execution=key[1]):
                self.assertAllClose(loss, results[False, 1][0], **tol)
                self.assertAllClose(evaluation, results[False, 1][1], **tol)
                self.assertAllClose(prediction, results[False, 1][2], **tol)
                for a, b in zip(weights, results[False, 1][3]):
                    self.assertAllClose(a, b, **tol)


def _free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


class MultiWorkerTest(tf.test.TestCase):
    """Two worker processes, one CPU replica each: the same global batch as one device."""

    def test_two_workers(self):
        if ON_GPU:
            self.skipTest("multi-worker runs in the CPU variant")
        ports = _free_ports(2)
        cluster = {"worker": [f"127.0.0.1:{p}" for p in ports]}
        out = tempfile.mkdtemp()
        worker = os.path.join(os.path.dirname(os.path.abspath(__file__)), "multiworker_worker.py")
        procs = []
        try:
            for i in range(2):
                env = dict(
                    os.environ,
                    TF_CONFIG=json.dumps({"cluster": cluster, "task": {"type": "worker", "index": i}}),
                    CUDA_VISIBLE_DEVICES="",
                    TF_CPP_MIN_LOG_LEVEL="2",
                )
                procs.append(
                    subprocess.Popen(
                        [sys.executable, worker, out],
                        env=env,
                        stdout=subprocess.PIPE,
                        stderr=subprocess.STDOUT,
                        text=True,
                    )
                )
            logs = [p.communicate(timeout=180)[0] for p in procs]
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()
        for i, (p, log) in enumerate(zip(procs, logs)):
            self.assertEqual(p.returncode, 0, msg=f"worker {i}:\n{log[-3000:]}")
        shards = [np.load(os.path.join(out, f"worker{i}.npz")) for i in range(2)]
        for step in [0, 7]:
            full_f, full_l = gen(tf.constant(step, tf.int64))
            self.assertAllEqual(np.concatenate([s[f"features{step}"] for s in shards]), full_f)
            self.assertAllEqual(np.concatenate([s[f"labels{step}"] for s in shards]), full_l)
        for s in shards:
            self.assertEqual(int(s["data_step"]), 6)  # model.fit ran 6 steps on both workers
            self.assertTrue(np.isfinite(s["loss"]))
            # jit_compile=True: each replica compiled its step, on the batches of the run without XLA
            self.assertEqual(int(s["jit_data_step"]), 6)
            self.assertAllClose(s["jit_loss"], s["loss"], rtol=1e-5)
            weights = sorted(k for k in s.files if k.startswith("weight"))
            self.assertNotEmpty(weights)
            for k in weights:
                self.assertAllClose(s["jit_" + k], s[k], rtol=1e-5, atol=1e-6)


if __name__ == "__main__":
    tf.test.main()
