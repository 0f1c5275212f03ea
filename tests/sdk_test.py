"""The generator SDK itself, through test-only generators (tests/sdk_ops/): a GPU-only
launcher generator (refused on a CPU, naming the op; a launch that fails and scratch memory
that is refused, both reported naming the op), kernels that use CCCL (CUB block radix sort
and scan, Thrust, libcudacxx) equal to their CPU implementation, and an input with one row
per produced sample."""

import os
import re
import shutil

import numpy as np
import tensorflow as tf

import tf_onthefly  # loads the core and the product's op library first, as a user would
from tf_onthefly import _load

import device_util

# A library of generators of its own: it registers them into the core as it loads, and
# TensorFlow's front end registers their ops (LIB: the ops' generated functions).
SDK_OPS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sdk_ops", "_sdk_test_ops.so")
LIB = _load.load_generator_library(SDK_OPS)


def common(batch_size, first_sample=0, num_samples=-1, step=0):
    return dict(
        seed=tf.constant([1, 2], tf.int64),
        step=tf.constant(step, tf.int64),
        first_sample=tf.constant(first_sample, tf.int64),
        batch_size=batch_size,
        num_samples=num_samples,
    )


class SdkTest(device_util.DeviceTestCase):
    def test_gpu_only_generator_refused_on_cpu(self):
        message = "OnTheFly>SdkTestGpuOnlyFill is GPU-only: its generator has no CPU implementation"
        with tf.device("/CPU:0"):
            with self.assertRaisesRegex(tf.errors.InvalidArgumentError, re.escape(message)):
                LIB.on_the_fly_sdk_test_gpu_only_fill(**common(8))
            with self.assertRaisesRegex(tf.errors.InvalidArgumentError, re.escape(message)):
                tf.function(lambda: LIB.on_the_fly_sdk_test_gpu_only_fill(**common(8)), jit_compile=True)()

    def test_gpu_only_generator_on_gpu(self):
        if device_util.device() != "gpu":
            self.skipTest("GPU-only")
        for jit in (False, True):
            out = tf.function(lambda: LIB.on_the_fly_sdk_test_gpu_only_fill(**common(100, 30, 50)), jit_compile=jit)()
            self.assertIn("GPU", out.device)
            self.assertAllEqual(out, np.arange(30, 80))

    def test_failed_launch_names_the_op(self):
        """A <<<>>> launch the generator left unchecked fails: the SDK's cudaGetLastError after
        Launch reports it, naming the op, and the process stays usable."""
        if device_util.device() != "gpu":
            self.skipTest("GPU-only")
        with self.assertRaisesRegex(
            tf.errors.InternalError,
            r"OnTheFly>SdkTestGpuOnlyFill: launching its GPU kernel failed: .*cudaErrorInvalidConfiguration",
        ):
            LIB.on_the_fly_sdk_test_gpu_only_fill(**common(8), fail=1)
        with self.assertRaisesRegex(tf.errors.InternalError, r"OnTheFly>SdkTestGpuOnlyFill \(under XLA\)"):
            tf.function(lambda: LIB.on_the_fly_sdk_test_gpu_only_fill(**common(8), fail=1), jit_compile=True)()
        self.assertAllEqual(LIB.on_the_fly_sdk_test_gpu_only_fill(**common(4)), np.arange(4))

    def test_refused_scratch_names_the_op_and_bytes(self):
        if device_util.device() != "gpu":
            self.skipTest("GPU-only")
        with self.assertRaisesRegex(
            tf.errors.ResourceExhaustedError,
            r"OnTheFly>SdkTestGpuOnlyFill: scratch memory of 1152921504606846976 bytes",
        ):
            LIB.on_the_fly_sdk_test_gpu_only_fill(**common(8), fail=2)
        with self.assertRaisesRegex(
            tf.errors.ResourceExhaustedError,
            r"OnTheFly>SdkTestGpuOnlyFill: scratch memory of 1152921504606846976 bytes",
        ):
            tf.function(lambda: LIB.on_the_fly_sdk_test_gpu_only_fill(**common(8), fail=2), jit_compile=True)()
        self.assertAllEqual(LIB.on_the_fly_sdk_test_gpu_only_fill(**common(4)), np.arange(4))

    @device_util.DeviceTestCase.require_xla
    def test_scratch_beyond_scratch_bytes_refused_under_xla(self):
        """Under XLA on the GPU a launcher's scratch is a buffer of its ScratchBytes (plus one
        alignment unit), sized when the op is compiled: a request beyond it is refused, naming
        the op, the bytes asked and the buffer. Outside XLA, TensorFlow's allocator gives it."""
        if device_util.device() != "gpu":
            self.skipTest("GPU-only")
        self.assertAllEqual(LIB.on_the_fly_sdk_test_gpu_only_fill(**common(8, 2, 5), fail=3), np.arange(2, 7))
        with self.assertRaisesRegex(
            tf.errors.ResourceExhaustedError,
            r"OnTheFly>SdkTestGpuOnlyFill: scratch memory of 4096 bytes was refused: "
            r"the call's scratch buffer of 512 bytes has \d+ left",
        ):
            tf.function(lambda: LIB.on_the_fly_sdk_test_gpu_only_fill(**common(8), fail=3), jit_compile=True)()

    def test_cccl_kernels_equal_the_cpu(self):
        """CUB's block radix sort and block scan, a Thrust algorithm on the op's stream and
        libcudacxx, compiled by the project's toolchain: the GPU's sorted keys and sums equal
        the CPU's std::sort and running sums; under XLA too."""
        with tf.device("/CPU:0"):
            keys, sums = LIB.on_the_fly_sdk_test_cccl_sort(**common(64, 3, 40, step=5))
        k, s = keys.numpy(), sums.numpy()
        self.assertTrue(np.all(np.diff(k, axis=1) >= 0))
        self.assertAllEqual(s, np.cumsum(k, axis=1))
        if device_util.device() == "gpu":
            for jit in (False, True):
                gk, gs = tf.function(
                    lambda: LIB.on_the_fly_sdk_test_cccl_sort(**common(64, 3, 40, step=5)), jit_compile=jit
                )()
                self.assertIn("GPU", gk.device)
                self.assertAllEqual(gk, k)
                self.assertAllEqual(gs, s)

    def test_input_rows_follow_the_shard(self):
        """An input with one row per produced sample (sdk::kRows): row i goes with sample
        first_sample + i; its shape must follow num_samples; non-finite values are refused
        where the kernel reads them on the host."""
        rows = np.arange(12, dtype=np.float32).reshape(3, 4)
        full = LIB.on_the_fly_sdk_test_add_rows(rows=np.tile(rows, (3, 1)), width=4, **common(9)).numpy()
        part = LIB.on_the_fly_sdk_test_add_rows(rows=rows, width=4, **common(9, 3, 3)).numpy()
        self.assertAllEqual(part - rows, full[3:6] - np.tile(rows, (3, 1))[3:6])
        self.assertTrue(np.all((part - rows >= 0) & (part - rows < 1)))
        with self.assertRaisesRegex(
            tf.errors.InvalidArgumentError, re.escape("rows must have shape [num_samples=3, 4], got [4, 4]")
        ):
            LIB.on_the_fly_sdk_test_add_rows(rows=np.zeros([4, 4], np.float32), width=4, **common(9, 3, 3))
        if device_util.device() == "cpu":
            with self.assertRaisesRegex(tf.errors.InvalidArgumentError, re.escape("rows must be finite, got inf")):
                LIB.on_the_fly_sdk_test_add_rows(rows=np.full([3, 4], np.inf, np.float32), width=4, **common(9, 3, 3))
        if device_util.device() == "gpu":
            with tf.device("/CPU:0"):
                cpu = LIB.on_the_fly_sdk_test_add_rows(rows=rows, width=4, **common(9, 3, 3))
            self.assertAllEqual(part, cpu)

    def test_step_vector_inputs_serve_every_step(self):
        """A vector of steps makes each step's batch from the same tensor inputs (one row per
        sample here), on the test's device and under XLA."""
        rows = np.arange(12, dtype=np.float32).reshape(3, 4)
        add = lambda step: LIB.on_the_fly_sdk_test_add_rows(rows=rows, width=4, **dict(common(3), step=step))  # noqa: E731
        alone = [add(tf.constant(s, tf.int64)) for s in (4, 9)]
        steps = tf.Variable([4, 9], dtype=tf.int64)  # not a constant, which TensorFlow would fold before XLA
        for jit in (False, True):
            stacked = tf.function(lambda: add(steps.read_value()), jit_compile=jit)()
            self.assertAllEqual(stacked, tf.stack(alone))

    def test_a_library_of_the_earlier_sdk_takes_step_vectors_eagerly(self):
        """A variant record that ends before launch_gpu_steps (a library built with the SDK
        before calls of several steps) registers; a step vector then makes each step's batch
        eagerly (a launch a step on a GPU) and is refused under XLA, naming the op."""
        rows = np.arange(12, dtype=np.float32).reshape(3, 4)

        def call(fn, step):
            return fn(rows=rows, width=4, **dict(common(3), step=tf.convert_to_tensor(step, tf.int64)))

        earlier = LIB.on_the_fly_sdk_test_earlier_record
        self.assertAllEqual(call(earlier, 4), call(LIB.on_the_fly_sdk_test_add_rows, 4))
        self.assertAllEqual(call(earlier, [4, 9]), tf.stack([call(earlier, 4), call(earlier, 9)]))
        if _load.HAS_XLA:  # steps in variables: TensorFlow would fold a call on constants before XLA
            one, two = tf.Variable(9, dtype=tf.int64), tf.Variable([4, 9], dtype=tf.int64)
            self.assertAllEqual(
                tf.function(lambda: call(earlier, one.read_value()), jit_compile=True)(), call(earlier, 9)
            )
            with self.assertRaisesRegex(
                tf.errors.UnimplementedError, "OnTheFly>SdkTestEarlierRecord: a vector of steps under XLA needs"
            ):
                tf.function(lambda: call(earlier, two.read_value()), jit_compile=True)()

    def test_launcher_and_per_sample_forms_agree(self):
        """drift_walk's block-cooperative launch and its Generate run by the SDK's per-sample
        kernel write the same walks and labels, bit for bit, whole batch and shard, walks of
        one tile and of several (scratch memory), under XLA too."""
        up = tf.constant([0.2, 0.5, 0.9], tf.float32)
        for length in (37, 5000):
            args = dict(up_probability=up, length=length, **common(12, 5, 6, step=3))
            want = tf_onthefly.drift_walk(12, length, up, [1, 2], 3, first_sample=5, num_samples=6)
            for jit in (False, True):
                walks, labels = tf.function(
                    lambda: LIB.on_the_fly_sdk_test_per_sample_drift_walk(**args), jit_compile=jit
                )()
                self.assertAllEqual(walks, want[0])
                self.assertAllEqual(labels, want[1])


class LoadGeneratorsTest(tf.test.TestCase):
    """tf_onthefly.load_generators: a library's generators registered as the built-in ones are."""

    def test_registered_like_the_builtin_ones(self):
        functions = tf_onthefly.load_generators(SDK_OPS)
        self.assertIn("sdk_test_cccl_sort", functions)
        entry = tf_onthefly.REGISTRY["sdk_test_cccl_sort"]
        self.assertEqual(entry.op, "OnTheFly>SdkTestCcclSort")
        self.assertEqual(entry.library, os.path.realpath(SDK_OPS))
        self.assertIs(tf_onthefly.GENERATORS["sdk_test_cccl_sort"], functions["sdk_test_cccl_sort"])
        self.assertIs(tf_onthefly.sdk_test_cccl_sort, functions["sdk_test_cccl_sort"])
        with tf.device("/CPU:0"):
            keys, sums = tf_onthefly.sdk_test_cccl_sort(64, seed=[1, 2], step=5, first_sample=3, num_samples=40)
            want = LIB.on_the_fly_sdk_test_cccl_sort(**common(64, 3, 40, step=5))
            self.assertAllEqual(keys, want[0])
            self.assertAllEqual(sums, want[1])
            # The arguments are checked as the built-in wrappers check them (tf_onthefly/_args.py).
            with self.assertRaisesRegex(tf.errors.InvalidArgumentError, "batch_size must be an integer"):
                tf_onthefly.sdk_test_cccl_sort(64.5, seed=1, step=0)
            with self.assertRaisesRegex(TypeError, "unexpected keyword argument 'length'"):
                tf_onthefly.sdk_test_cccl_sort(64, seed=1, step=0, length=3)
        # Not differentiable, as every generator: registered with no gradient function (an
        # op never registered raises LookupError here).
        from tensorflow.python.framework import ops as tf_ops

        self.assertIsNone(tf_ops._gradient_registry.lookup("OnTheFly>SdkTestCcclSort"))

    def test_same_file_twice_returns_the_same_functions(self):
        first = tf_onthefly.load_generators(SDK_OPS)
        self.assertEqual(tf_onthefly.load_generators(SDK_OPS), first)

    def test_missing_file(self):
        missing = os.path.join(self.get_temp_dir(), "libnone.so")
        with self.assertRaisesRegex(ImportError, re.escape(f"{missing}: no such file")):
            tf_onthefly.load_generators(missing)

    def test_another_file_with_the_same_generators_is_refused(self):
        tf_onthefly.load_generators(SDK_OPS)
        copy = os.path.join(self.get_temp_dir(), "libcopy.so")
        shutil.copyfile(SDK_OPS, copy)
        with self.assertRaisesRegex(
            ImportError, re.escape(copy) + r".*OnTheFly>SdkTestCcclSort.*registered already, by .*_sdk_test_ops.so"
        ):
            tf_onthefly.load_generators(copy)


if __name__ == "__main__":
    tf.test.main()
