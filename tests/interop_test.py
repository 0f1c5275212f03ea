"""Tests of tf_onthefly.interop: device arrays (DLPack) into TensorFlow with no host copy.

CPU variant: host arrays through the bridge (eager, tf.function, graph loops, model.fit),
batches that stay as they were when a producer refills its array, drift errors and values
that cannot become tensors naming the field and the batch, the step's refusals, GPU arrays
and CPU DLPack capsules where TensorFlow sees no GPU, the int32-on-GPU and XLA refusals,
the references kept, the PyTorch import-order check. GPU variant (requires-gpu; CuPy,
PyTorch, Numba or JAX on the machine, else those tests skip, naming what is missing): no
copy (the tensor is the producer's memory), ordering on the GPU against a producer kernel
that writes the batch 20 ms after it starts (the control, with no wait, must read torn
batches), no memory growth over 10,000 steps, PyTorch, Numba and JAX producers,
tf.distribute, and torch imported after TensorFlow (a clear error, not a crash).
    python3 tests/interop_test.py --test_device=gpu
"""

import gc
import importlib
import os
import re
import subprocess
import sys
import textwrap
import threading
import time

# TensorFlow must leave GPU memory to the other library in the process (docs/interop.md).
os.environ.setdefault("TF_FORCE_GPU_ALLOW_GROWTH", "true")
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")


def optional(module):
    try:
        return importlib.import_module(module)
    except Exception:  # noqa: BLE001 - absent or broken: the test skips
        return None


# Before TensorFlow: a PyTorch built for another CUDA major imported after it cannot use the
# GPU (docs/interop.md); the bridge refuses there (test_torch_after_tensorflow).
torch = optional("torch")
cupy = optional("cupy")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from tf_onthefly import _load, _torch_order  # noqa: E402
from tf_onthefly.bench import models  # noqa: E402
from tf_onthefly.data import GeneratorModel, SignatureDriftError  # noqa: E402
from tf_onthefly.interop import BridgeError, DeviceBridge, to_tensor  # noqa: E402

import device_util  # noqa: E402

SIG = (tf.TensorSpec([8, 4], tf.float32), tf.TensorSpec([8, 1], tf.float32))


def host_batch(step):
    x = np.full([8, 4], step, np.float32) + np.arange(8, dtype=np.float32)[:, None]
    return x, x[:, :1] * 2


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
                with self.assertRaisesRegex(SignatureDriftError, re.escape(message)):
                    DeviceBridge(fn, SIG)(0)
                # In a graph, TensorFlow carries the message in its own error.
                bridge = DeviceBridge(fn, SIG)
                with self.assertRaisesRegex(tf.errors.OpError, re.escape(message)):
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
        with self.assertRaisesRegex(ValueError, "sync must be 'auto', 'device', 'stream', a CuPy/PyTorch/Numba stream"):
            DeviceBridge(host_batch, SIG, sync="fast")
        with self.assertRaisesRegex(ValueError, "keep must be an integer >= 1"):
            DeviceBridge(host_batch, SIG, keep=True)

    def test_step_must_be_an_integer(self):
        """A step that is not an integer is refused, never rounded or parsed."""
        bridge = DeviceBridge(host_batch, SIG)
        for step in (1.5, "3", True, None, np.float32(2)):
            with self.subTest(step=repr(step)):
                with self.assertRaisesRegex(tf.errors.InvalidArgumentError, "^DeviceBridge: step must be an integer"):
                    bridge(step)
        with self.assertRaisesRegex(tf.errors.InvalidArgumentError, "^DeviceBridge: step must be an integer scalar"):
            bridge(tf.constant(1.5))
        with self.assertRaisesRegex(tf.errors.InvalidArgumentError, "DeviceBridge: step must be an integer scalar"):
            tf.function(lambda s: bridge(s))(tf.constant([1, 2], tf.int64))
        self.assertAllEqual(bridge(np.int64(4))[0], host_batch(4)[0])
        self.assertAllEqual(bridge(tf.constant(4, tf.int32))[0], host_batch(4)[0])

    def test_values_that_are_not_arrays_name_field_and_batch(self):
        single = tf.TensorSpec([2], tf.float32)
        structured = np.zeros(2, dtype=[("a", np.float32), ("b", np.float32)])
        cases = [
            (SIG, lambda s: (object(), host_batch(s)[1]), "batch 0: field 'features' has dtype object"),
            (single, lambda s: None, "batch 0: field 'output 0' has dtype object"),
            (SIG, lambda s: (host_batch(s)[0], {1, 2}), "batch 0: field 'labels' has dtype object"),
            (single, lambda s: np.zeros(2, np.longdouble), "batch 0: field 'output 0' has dtype float128"),
            (single, lambda s: np.zeros(2, "datetime64[s]"), "batch 0: field 'output 0' has dtype datetime64[s]"),
            (single, lambda s: structured, "batch 0: field 'output 0' has dtype [('a', '<f4'), ('b', '<f4')]"),
        ]
        for sig, fn, message in cases:
            with self.subTest(message=message):
                with self.assertRaisesRegex(SignatureDriftError, "^" + re.escape(message)):
                    DeviceBridge(fn, sig)(0)
                bridge = DeviceBridge(fn, sig)
                with self.assertRaisesRegex(tf.errors.OpError, re.escape(message)):
                    tf.function(lambda s: bridge(s))(tf.constant(0, tf.int64))

    def test_a_refilled_array_does_not_change_a_batch(self):
        """A producer that refills one buffer per batch (aligned so TensorFlow could wrap it)
        gets every batch as it was when it was made, eagerly and in a graph loop."""
        buf = np.empty(16 + 64, np.uint8)
        off = (-buf.ctypes.data) % 64
        arr = buf[off : off + 16].view(np.float32)

        def gen(step):
            arr[...] = step
            return arr

        bridge = DeviceBridge(gen, tf.TensorSpec([4], tf.float32), keep=1)
        eager = [bridge(k) for k in range(4)]
        self.assertEqual([float(b[0]) for b in eager], [0.0, 1.0, 2.0, 3.0])

        @tf.function
        def four():
            return [bridge(tf.constant(k, tf.int64)) for k in range(4)]

        self.assertEqual([float(b[0]) for b in four()], [0.0, 1.0, 2.0, 3.0])

    def test_takes_that_cannot_be_served_are_refused(self):
        """A take of a bridge that is gone (a saved graph loaded elsewhere), and of a step
        nobody put where no producer thread serves the bridge, fail at once instead of
        waiting."""
        bridge = DeviceBridge(host_batch, SIG)
        take = _load.ops.on_the_fly_bridge_take
        with self.assertRaisesRegex(
            tf.errors.FailedPreconditionError, "no batch of this step was put, and no producer thread makes it"
        ):
            take(step=tf.constant(7, tf.int64), bridge=bridge._id, T=[tf.float32, tf.float32])
        gone = bridge._id
        del bridge
        gc.collect()
        with self.assertRaisesRegex(tf.errors.FailedPreconditionError, f"no DeviceBridge {gone} in this process"):
            take(step=tf.constant(7, tf.int64), bridge=gone, T=[tf.float32, tf.float32])

    def test_producer_thread(self):
        """Inside a graph, a producer thread makes the step the take asks for and the next
        `prefetch` steps ahead, each once; a step off the sequence is made when asked; an
        exception of make_batch is the take's error, with the TensorFlow code a
        tf.py_function would give it; eager calls run make_batch in the calling thread."""
        made, threads = [], set()

        def make(step):
            made.append(step)
            threads.add(threading.current_thread().name)
            if step == 100:
                raise ValueError("no batch 100")
            if step == 101:
                raise RuntimeError("producer broke")
            return host_batch(step)

        bridge = DeviceBridge(make, SIG, prefetch=3)
        run = tf.function(lambda s: bridge(s)[0])
        for step in range(4):
            self.assertAllEqual(run(tf.constant(step, tf.int64)), host_batch(step)[0])
        deadline = time.time() + 10
        while len(made) < 7 and time.time() < deadline:
            time.sleep(0.01)
        self.assertEqual(made[:7], list(range(7)))  # 0..3 taken, 4..6 made ahead
        self.assertAllEqual(run(tf.constant(50, tf.int64)), host_batch(50)[0])
        self.assertIn(50, made)
        with self.assertRaisesRegex(tf.errors.InvalidArgumentError, r"\(step 100\): ValueError: no batch 100"):
            run(tf.constant(100, tf.int64))
        with self.assertRaisesRegex(tf.errors.UnknownError, r"\(step 101\): RuntimeError: producer broke"):
            run(tf.constant(101, tf.int64))
        self.assertEqual(threads, {f"DeviceBridge-{bridge._id}"})
        bridge(7)
        self.assertIn(threading.current_thread().name, threads)

    def test_gpu_arrays_where_tensorflow_has_no_gpu(self):
        """A CUDA array (DLPack, or __cuda_array_interface__ only) where TensorFlow sees no GPU
        is refused, naming the field and the batch; a CPU DLPack capsule is a host array."""
        if device_util.device() != "cpu" or tf.config.list_logical_devices("GPU"):
            self.skipTest("needs a process where TensorFlow sees no GPU")

        class DLPackOnGpu:
            dtype = "float32"

            def __dlpack_device__(self):
                return (2, 0)

        class InterfaceOnly:
            __cuda_array_interface__ = {"shape": (8, 4), "typestr": "<f4", "data": (0, False), "version": 3}

        for array in (DLPackOnGpu(), InterfaceOnly()):
            with self.subTest(array=type(array).__name__):
                with self.assertRaisesRegex(
                    BridgeError, "^batch 0: field 'features' is a GPU array .* but TensorFlow sees no GPU"
                ):
                    DeviceBridge(lambda s, a=array: (a, host_batch(s)[1]), SIG)(0)
        source = host_batch(3)[0].copy()
        bridge = DeviceBridge(lambda s: (source.__dlpack__(), host_batch(s)[1]), SIG)
        x, _ = bridge(3)
        source[...] = -1  # the batch is a copy, not the producer's memory
        self.assertAllEqual(x, host_batch(3)[0])

    def test_torch_import_order_check(self):
        """The error where PyTorch (CUDA 13) was imported after TensorFlow (CUDA 12); nothing
        where torch came first, the majors agree, or one has no CUDA (stand-in import orders
        and versions)."""
        order, versions = _torch_order.import_order, _torch_order.cuda_versions
        try:
            _torch_order.import_order = lambda: ["numpy", "tensorflow", "torch"]
            _torch_order.cuda_versions = lambda: ("12.5.1", "13.0")
            with self.assertRaisesRegex(
                _torch_order.TorchImportOrderError,
                r"^tf_onthefly.interop.DeviceBridge: PyTorch \(built for CUDA 13.0\) was imported after TensorFlow "
                r"\(built for CUDA 12.5.1\).*import torch before tensorflow",
            ):
                DeviceBridge(host_batch, SIG)
            for pair in (("12.5.1", "12.8"), ("12.5.1", ""), ("", "13.0")):
                _torch_order.cuda_versions = lambda pair=pair: pair
                _torch_order.check_torch_import_order("test")
            _torch_order.cuda_versions = lambda: ("12.5.1", "13.0")
            _torch_order.import_order = lambda: ["torch", "tensorflow"]
            _torch_order.check_torch_import_order("test")
        finally:
            _torch_order.import_order, _torch_order.cuda_versions = order, versions

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

        with self.assertRaisesRegex(Exception, "OnTheFly>BridgeTake"):
            f(tf.constant(0, tf.int64))

    def test_model_fit(self):
        bridge = DeviceBridge(host_batch, SIG)
        model = GeneratorModel(models.mlp(4, 1, hidden=(8,)), bridge)
        model.compile(optimizer="sgd", loss="mse", jit_compile=False)
        model.fit(bridge.dataset(), steps_per_epoch=5, epochs=1, verbose=0)
        self.assertEqual(int(model.data_step.numpy()), 5)


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
        """The producer's kernel spins for ~20 ms on its own non-blocking stream, then writes
        `step` into a 64 MiB batch (fresh memory from CuPy's pool, holding whatever an older
        batch left there); TensorFlow reads the batch at once. A read that does not wait for
        the producer sees the memory's old contents. With the bridge's wait on the GPU (the
        stream given as sync=, or the current stream by default) TensorFlow's stream waits
        and the host does not: the producer is still busy when the bridge returns. The
        host-wait mode waits on the host. The control, with no wait at all, must read torn
        batches, or this check could not catch a race."""
        self.require(cupy, "cupy")
        n = 16 << 20
        kernel = cupy.RawKernel(
            r"""
            extern "C" __global__ void slow_fill(float* out, long long n, float value, long long cycles) {
              const long long start = clock64();
              while (clock64() - start < cycles) {}
              for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
                   i += (long long)gridDim.x * blockDim.x)
                out[i] = value;
            }""",
            "slow_fill",
        )
        rate = cupy.cuda.Device().attributes["ClockRate"] * 1000  # kHz -> cycles per second
        stream = cupy.cuda.Stream(non_blocking=True)
        busy_after_return = []

        def make(step, on=stream):
            with on:
                out = cupy.empty(n, cupy.float32)
                # 8 blocks: most of the GPU stays free for TensorFlow's reads meanwhile.
                kernel((8,), (256,), (out, np.int64(n), np.float32(step), np.int64(int(0.02 * rate))))
            return (out.reshape(-1, 1024),)

        sig = (tf.TensorSpec([n // 1024, 1024], tf.float32),)

        def run(bridge, producer=stream):
            wrong = 0
            bridge(0)  # the first hand-over may wait once, as the process's first use of it
            producer.synchronize()
            for step in range(1, 11):
                (x,) = bridge(step)
                busy_after_return.append(not producer.done)
                wrong += (float(tf.reduce_min(x)), float(tf.reduce_max(x))) != (step, step)
            producer.synchronize()
            return wrong

        self.assertEqual(run(DeviceBridge(make, sig, sync=stream)), 0)
        self.assertTrue(all(busy_after_return), "the bridge waited on the host for the producer")
        # The default: the library's current stream as make_batch returns (here the producer
        # leaves its work on the current stream).
        current = cupy.cuda.get_current_stream()
        busy_after_return.clear()
        self.assertEqual(run(DeviceBridge(lambda s: make(s, on=current), sig), producer=current), 0)
        self.assertTrue(all(busy_after_return), "the default mode waited on the host for CuPy")
        busy_after_return.clear()
        self.assertEqual(run(DeviceBridge(make, sig, sync="device")), 0)  # waits on the host
        self.assertFalse(any(busy_after_return))
        torn = run(DeviceBridge(make, sig, sync=lambda a: None))
        print(f"control, no wait: {torn} of 10 batches read torn or stale")
        self.assertGreater(torn, 0, "the control run read no torn batch: this check would not catch a race")

        # In a graph loop too (the step read on the host, the batch taken in on the GPU).
        bridge = DeviceBridge(make, sig, sync=stream)

        @tf.function
        def loop(first):
            wrong = tf.constant(0, tf.int64)
            for i in tf.range(first, first + 10):
                (x,) = bridge(i)
                want = tf.cast(i, tf.float32)
                wrong += tf.cast(tf.logical_or(tf.reduce_min(x) != want, tf.reduce_max(x) != want), tf.int64)
            return wrong

        self.assertEqual(int(loop(tf.constant(1, tf.int64))), 0)
        stream.synchronize()

    def ordering_check(self, make, done, n, library):
        """Ten batches of a producer whose stream spins ~20 ms before it writes `step` into n
        floats (memory that held an earlier batch): through the bridge's default (the
        producer's stream waited for on the GPU) none reads wrong and the producer is still
        busy when each returns (no host wait); the control, with no wait at all, must read
        torn batches."""
        sig = (tf.TensorSpec([n], tf.float32),)

        def run(bridge, first):
            wrong, busy = 0, 0
            bridge(first - 1)  # the first hand-over may wait once, as the process's first use of it
            for step in range(first, first + 10):
                (x,) = bridge(step)
                busy += not done()
                wrong += (float(tf.reduce_min(x)), float(tf.reduce_max(x))) != (step, step)
            return wrong, busy

        wrong, busy = run(DeviceBridge(make, sig), 1)
        self.assertEqual(wrong, 0, f"{library}: torn batches with the wait on the GPU")
        self.assertEqual(busy, 10, f"{library}: the bridge waited on the host for the producer")
        torn, _ = run(DeviceBridge(make, sig, sync=lambda a: None), 21)
        print(f"{library} control, no wait: {torn} of 10 batches read torn or stale")
        self.assertGreater(torn, 0, f"{library}: the control read no torn batch: this check would not catch a race")

    def test_torch_ordering_on_the_gpu(self):
        """A PyTorch producer on a stream of its own, current as make_batch returns."""
        self.require(torch, "torch")
        if not torch.cuda.is_available():
            self.skipTest("torch sees no GPU")
        n = 16 << 20
        stream = torch.cuda.Stream()
        cycles = 40_000_000  # 20-30 ms at a GPU's clock
        torch.cuda.set_stream(stream)
        try:

            def make(step):
                torch.cuda._sleep(cycles)  # spins on the current stream
                return (torch.full((n,), float(step), device="cuda"),)

            self.ordering_check(make, lambda: stream.query(), n, "torch")
        finally:
            stream.synchronize()
            torch.cuda.set_stream(torch.cuda.default_stream())

    def test_numba_ordering_on_the_gpu(self):
        """A Numba producer on a stream of its own (its array's __cuda_array_interface__
        stream), through a CuPy view that must not wait for that stream on the host."""
        numba_cuda = optional("numba.cuda")
        self.require(numba_cuda, "numba")
        self.require(cupy, "cupy")
        if not numba_cuda.is_available():
            self.skipTest("numba sees no GPU")
        n = 16 << 20

        @numba_cuda.jit
        def slow_fill(out, value):
            for _ in range(20):
                numba_cuda.nanosleep(1000000)  # at most ~1 ms each
            start, stride = numba_cuda.grid(1), numba_cuda.gridsize(1)
            for i in range(start, out.size, stride):
                out[i] = value

        stream = numba_cuda.stream()
        # Buffers allocated once (Numba frees device memory with cuMemFree, which waits for
        # the device): batch `step` goes to buffer step % 12, which holds an older batch.
        buffers = [numba_cuda.device_array(n, np.float32, stream=stream) for _ in range(12)]
        try:  # compiled here: a Numba older than this NumPy fails in its own modules
            slow_fill[1, 1, stream](buffers[0], np.float32(0))
        except AttributeError as e:
            self.skipTest(f"this Numba cannot compile a kernel with NumPy {np.__version__}: {e}")

        def make(step):
            out = buffers[step % len(buffers)]
            slow_fill[8, 256, stream](out, np.float32(step))
            return (out,)

        try:
            handle = stream.handle  # a ctypes pointer, or a CUstream of NVIDIA's binding
            handle = int(handle.value or 0) if hasattr(handle, "value") else int(handle)
            self.ordering_check(make, lambda: cupy.cuda.ExternalStream(handle).done, n, "numba")
        finally:
            stream.synchronize()

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
        self.assertLessEqual(usage[-1][0], (bridge.keep + bridge.prefetch + 3) * 4 << 20)

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

    def test_torch_after_tensorflow(self):
        """The sequence that crashed with "Floating point exception": TensorFlow runs an op on
        the GPU, then torch and CuPy are imported, then a bridge over a torch producer
        (torch.randn on the GPU). In a new process: it must work, or stop with the bridge's
        error saying "import torch before tensorflow", never die of a signal."""
        probe = subprocess.run(
            [sys.executable, "-c", "import torch; print(torch.version.cuda, torch.cuda.is_available())"],
            capture_output=True,
            text=True,
            timeout=300,
        )
        if probe.returncode != 0:
            self.skipTest("torch is not installed")
        if not probe.stdout.strip().endswith("True"):
            self.skipTest("torch sees no GPU")
        script = textwrap.dedent(
            """
            import os
            os.environ.setdefault("TF_FORCE_GPU_ALLOW_GROWTH", "true")
            import tensorflow as tf
            import tf_onthefly
            from tf_onthefly.interop import DeviceBridge
            print("tensorflow on the GPU:", float(tf.reduce_sum(tf_onthefly.random_batch(256, 16, seed=1, step=0)[0])))
            import torch
            try:
                import cupy
            except ImportError:
                pass
            gen = torch.Generator(device="cuda")

            def make(step):
                gen.manual_seed(step)
                return (torch.randn(256, 16, device="cuda", generator=gen),)

            bridge = DeviceBridge(make, (tf.TensorSpec([256, 16], tf.float32),))
            for step in range(3):
                (x,) = bridge(step)
                print("bridge batch", step, float(tf.reduce_sum(x)))
            print("WORKED")
            """
        )
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=os.pathsep.join(sys.path))
        run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=600)
        output = run.stdout + run.stderr
        print(
            f"torch after TensorFlow: exit {run.returncode}; {output.strip().splitlines()[-1] if output.strip() else ''}"
        )
        self.assertGreaterEqual(run.returncode, 0, f"died of signal {-run.returncode}:\n{output[-3000:]}")
        if run.returncode == 0:
            self.assertIn("WORKED", run.stdout)
        else:
            self.assertIn("TorchImportOrderError", output)
            self.assertIn("import torch before tensorflow", output)

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
