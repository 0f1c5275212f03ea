"""Tests of tf_onthefly.interop: device arrays (DLPack) into TensorFlow with no host copy.

CPU variant: host arrays through the bridge (eager, tf.function, graph loops, model.fit),
drift errors naming the field, the int32-on-GPU and XLA refusals, the references kept.
GPU variant (requires-gpu; CuPy and/or PyTorch on the machine, else those tests skip): no
copy (the tensor is the producer's memory), ordering against a slow producer on its own
stream (a torn or stale read would show), no memory growth over 10,000 steps, PyTorch and
JAX producers, and tf.distribute.
    python3 tests/interop_test.py --test_device=gpu
"""

import importlib
import os
import time

# TensorFlow must leave GPU memory to the other library in the process (docs/interop.md).
os.environ.setdefault("TF_FORCE_GPU_ALLOW_GROWTH", "true")
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import numpy as np
import tensorflow as tf

from tf_onthefly.bench import models
from tf_onthefly.data import GeneratorModel, SignatureDriftError
from tf_onthefly.interop import BridgeError, DeviceBridge, to_tensor

import device_util

SIG = (tf.TensorSpec([8, 4], tf.float32), tf.TensorSpec([8, 1], tf.float32))


def host_batch(step):
    x = np.full([8, 4], step, np.float32) + np.arange(8, dtype=np.float32)[:, None]
    return x, x[:, :1] * 2


def optional(module):
    try:
        return importlib.import_module(module)
    except Exception:  # noqa: BLE001 - absent or broken: the test skips
        return None


cupy = optional("cupy")
torch = optional("torch")


class HostArrayTest(device_util.DeviceTestCase):
    def test_eager_and_graph(self):
        bridge = DeviceBridge(host_batch, SIG)
        x, y = bridge(5)
        self.assertAllEqual(x, host_batch(5)[0])
        self.assertAllEqual(y, host_batch(5)[1])

        @tf.function
        def loop(n):
            def body(step, total):
                x, y = bridge(step)
                return step + 1, total + tf.reduce_sum(x) + tf.reduce_sum(y)

            return tf.while_loop(lambda s, t: s < n, body, (tf.constant(0, tf.int64), tf.constant(0.0)))

        _, total = loop(tf.constant(10, tf.int64))
        want = sum(host_batch(s)[0].sum() + host_batch(s)[1].sum() for s in range(10))
        self.assertAllClose(total, want)
        self.assertLen(bridge._kept, 2)

    def test_static_shapes_in_graphs(self):
        bridge = DeviceBridge(host_batch, SIG)
        out = tf.function(lambda s: bridge(s)).get_concrete_function(tf.TensorSpec([], tf.int64)).structured_outputs
        self.assertEqual(out[0].shape.as_list(), [8, 4])

    def test_drift_names_the_field(self):
        cases = [
            (
                lambda s: (host_batch(s)[0].astype(np.float64), host_batch(s)[1]),
                "batch 0: field 'features' has dtype float64, expected float32",
            ),
            (
                lambda s: (host_batch(s)[0][:, :3], host_batch(s)[1]),
                "batch 0: field 'features' has shape [8, 3], expected (8, 4)",
            ),
            (lambda s: host_batch(s)[0], "batch 0: structure differs from the output signature"),
        ]
        for fn, message in cases:
            with self.subTest(message=message):
                with self.assertRaisesRegex(SignatureDriftError, __import__("re").escape(message)):
                    DeviceBridge(fn, SIG)(0)
                # In a graph, TensorFlow carries the message in its own error.
                bridge = DeviceBridge(fn, SIG)
                with self.assertRaisesRegex(tf.errors.OpError, __import__("re").escape(message)):
                    tf.function(lambda s: bridge(s))(tf.constant(0, tf.int64))

    def test_dict_signature(self):
        sig = {"a": tf.TensorSpec([2], tf.int64), "b": tf.TensorSpec([3], tf.float32)}
        bridge = DeviceBridge(lambda s: {"a": np.array([s, s], np.int64), "b": np.zeros(3, np.float32)}, sig)
        out = tf.function(lambda s: bridge(s))(tf.constant(4, tf.int64))
        self.assertAllEqual(out["a"], [4, 4])
        with self.assertRaisesRegex(SignatureDriftError, "field 'b' has dtype float64"):
            DeviceBridge(lambda s: {"a": np.array([s, s], np.int64), "b": np.zeros(3)}, sig)(0)

    def test_argument_checks(self):
        with self.assertRaisesRegex(TypeError, "make_batch must be callable"):
            DeviceBridge(3, SIG)
        with self.assertRaisesRegex(TypeError, "output_signature must be"):
            DeviceBridge(host_batch, ([8, 4], tf.float32))
        with self.assertRaisesRegex(ValueError, "keep must be an integer >= 1"):
            DeviceBridge(host_batch, SIG, keep=0)
        with self.assertRaisesRegex(ValueError, "sync must be"):
            DeviceBridge(host_batch, SIG, sync="auto")

    def test_int32_on_a_gpu_is_refused(self):
        class FakeDeviceArray:
            dtype = "int32"

            def __dlpack_device__(self):
                return (2, 0)

        with self.assertRaisesRegex(BridgeError, "field 'labels' is an int32 array on a GPU"):
            to_tensor(FakeDeviceArray(), "labels")

    def test_xla_refuses(self):
        bridge = DeviceBridge(host_batch, SIG)

        @tf.function(jit_compile=True)
        def f(step):
            return bridge(step)[0] * 2

        with self.assertRaisesRegex(Exception, "EagerPyFunc|PyFunc"):
            f(tf.constant(0, tf.int64))

    def test_model_fit(self):
        bridge = DeviceBridge(host_batch, SIG)
        model = GeneratorModel(models.mlp(4, 1, hidden=(8,)), bridge)
        model.compile(optimizer="sgd", loss="mse", jit_compile=False)
        model.fit(bridge.dataset(), steps_per_epoch=5, epochs=1, verbose=0)
        self.assertEqual(int(model.data_step.numpy()), 5)
        self.assertLen(bridge._kept, 2)


class GpuBridgeTest(device_util.DeviceTestCase):
    def setUp(self):
        super().setUp()
        if device_util.device() != "gpu":
            self.skipTest("device arrays: runs in the _gpu variant")

    def require(self, module, name):
        if module is None:
            self.skipTest(f"{name} is not installed")

    def test_cupy_no_copy(self):
        self.require(cupy, "cupy")
        a = cupy.arange(1 << 20, dtype=cupy.float32)
        t = to_tensor(a)
        self.assertIn("GPU", t.device)
        a[0] = 42.0  # the same memory: the tensor sees the write
        cupy.cuda.get_current_stream().synchronize()
        self.assertEqual(float(t[0]), 42.0)

    def test_cupy_ordering_against_a_slow_producer(self):
        """The producer writes `step` into a 64 MiB batch on its own non-blocking stream,
        behind a matrix product that keeps that stream busy for milliseconds; TensorFlow
        reads the batch at once. A read that does not wait for the producer sees the
        memory's previous contents (the last batch's values from CuPy's pool, or fresh
        memory): a stale or torn read. The control run, with the wait turned off, must see
        such reads, or the check could not catch a race."""
        self.require(cupy, "cupy")
        n = 16 << 20
        stream = cupy.cuda.Stream(non_blocking=True)
        with stream:
            weight = cupy.ones((8192, 8192), cupy.float32)  # a product of ~1 TFLOP

        def make(step):
            with stream:
                busy = weight @ weight
                out = cupy.full(n, step, cupy.float32)  # queued behind the product
                del busy
            return (out.reshape(-1, 1024),)

        sig = (tf.TensorSpec([n // 1024, 1024], tf.float32),)

        def run(bridge):
            wrong = 0
            for step in range(1, 11):
                (x,) = bridge(step)
                wrong += (float(tf.reduce_min(x)), float(tf.reduce_max(x))) != (step, step)
            return wrong

        self.assertEqual(run(DeviceBridge(make, sig, sync=lambda a: stream.synchronize())), 0)
        self.assertEqual(run(DeviceBridge(make, sig)), 0)  # the default: the whole device
        stream.synchronize()
        torn = run(DeviceBridge(make, sig, sync=lambda a: None))
        stream.synchronize()
        print(f"control, no wait: {torn} of 10 batches read torn or stale")
        self.assertGreater(torn, 0, "the control run read no torn batch: this check would not catch a race")

    def test_no_memory_growth_over_10000_steps(self):
        self.require(cupy, "cupy")
        pool = cupy.get_default_memory_pool()
        sig = (tf.TensorSpec([1024, 1024], tf.float32),)
        bridge = DeviceBridge(lambda s: (cupy.full((1024, 1024), s, cupy.float32),), sig)

        @tf.function
        def run(first, n):
            def body(step, total):
                (x,) = bridge(step)
                return step + 1, total + x[0, 0]

            return tf.while_loop(lambda s, t: s < first + n, body, (first, tf.constant(0.0)))

        usage = []
        for chunk in range(10):
            run(tf.constant(chunk * 1000, tf.int64), tf.constant(1000, tf.int64))
            usage.append((pool.used_bytes(), tf.config.experimental.get_memory_info("GPU:0")["current"]))
        print("cupy used / TF current bytes after each 1,000 steps:", usage)
        self.assertLessEqual(usage[-1][0], usage[1][0] + (4 << 20))
        self.assertLessEqual(usage[-1][1], usage[1][1] + (4 << 20))
        self.assertLessEqual(usage[-1][0], (bridge.keep + 2) * 4 << 20)

    def test_torch(self):
        self.require(torch, "torch")
        if not torch.cuda.is_available():
            self.skipTest("torch sees no GPU")
        sig = (tf.TensorSpec([256, 8], tf.float32), tf.TensorSpec([256], tf.int64))
        bridge = DeviceBridge(
            lambda s: (torch.full((256, 8), float(s), device="cuda"), torch.arange(256, device="cuda") + s), sig
        )
        x, y = tf.function(lambda s: bridge(s))(tf.constant(3, tf.int64))
        self.assertAllEqual(x, np.full([256, 8], 3.0, np.float32))
        self.assertAllEqual(y, np.arange(256) + 3)

    def test_numba(self):
        """A Numba device array (CUDA array interface, no DLPack) goes through a CuPy view."""
        numba_cuda = optional("numba.cuda")
        self.require(numba_cuda, "numba")
        self.require(cupy, "cupy")
        sig = (tf.TensorSpec([128], tf.float32),)
        bridge = DeviceBridge(lambda s: (numba_cuda.to_device(np.full(128, s, np.float32)),), sig)
        (x,) = bridge(4)
        self.assertAllEqual(x, np.full([128], 4.0, np.float32))

    def test_jax(self):
        jnp = optional("jax.numpy")
        if jnp is None:
            self.skipTest("jax is not installed")
        jax = __import__("jax")
        if not any(d.platform == "gpu" for d in jax.devices()):
            self.skipTest("jax sees no GPU")
        sig = (tf.TensorSpec([64], tf.float32),)
        bridge = DeviceBridge(lambda s: (jnp.full((64,), float(s), jnp.float32),), sig)
        (x,) = bridge(9)
        self.assertAllEqual(x, np.full([64], 9.0, np.float32))

    def test_distribute(self):
        """One bridge per replica, each making its arrays on its replica's GPU."""
        self.require(cupy, "cupy")
        strategy = tf.distribute.MirroredStrategy()
        sig = (tf.TensorSpec([16, 4], tf.float32),)
        bridges = {}

        def bridge_for(replica):
            def make(step):
                with cupy.cuda.Device(replica):
                    return (cupy.full((16, 4), step, cupy.float32),)

            return bridges.setdefault(replica, DeviceBridge(make, sig, device=f"/GPU:{replica}"))

        @tf.function
        def step_fn(step):
            replica = tf.get_static_value(tf.distribute.get_replica_context().replica_id_in_sync_group)
            (x,) = bridge_for(int(replica))(step)
            return tf.reduce_sum(x)

        result = strategy.run(step_fn, args=(tf.constant(2, tf.int64),))
        total = strategy.reduce(tf.distribute.ReduceOp.SUM, result, axis=None)
        self.assertEqual(float(total), 2 * 64 * strategy.num_replicas_in_sync)


class StepCostTest(device_util.DeviceTestCase):
    def test_reports_cost(self):
        """Not a target, a record: a batch through the bridge in a graph loop (host arrays
        here; benchmarks/ptx_paths.py measures the GPU paths)."""
        bridge = DeviceBridge(host_batch, SIG)
        run = tf.function(
            lambda n: tf.while_loop(
                lambda s: s < n,
                lambda s: (s + 1 + 0 * tf.cast(tf.reduce_sum(bridge(s)[0]), tf.int64),),
                (tf.constant(0, tf.int64),),
            )
        )
        run(tf.constant(10, tf.int64))
        start = time.perf_counter()
        run(tf.constant(200, tf.int64))
        print(f"bridge, host arrays: {(time.perf_counter() - start) / 200 * 1e6:.0f} us per step")


if __name__ == "__main__":
    tf.test.main()
