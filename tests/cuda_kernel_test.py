"""Tests of tf_onthefly.cuda_kernel (OnTheFly>CudaKernel): a user's PTX as a native op.

CPU variant: argument checks, the op's errors, the CPU kernel's refusal, shapes, the XLA
refusal and the SavedModel round trip of a graph that uses the op (the PTX travels as an
attribute). GPU variant (tagged requires-gpu): launches, the match with random_batch bit for
bit, inputs and scalars, grid rules, graph loops, errors that must not crash the process,
tf.distribute, and the loaded SavedModel running the kernel.

The PTX comes from //tf_ops/interop:test_ptx (built by clang from test_kernels.cu); outside
Bazel, point OTF_TEST_PTX at that file:
    OTF_TEST_PTX=.../test_kernels.ptx python3 tests/cuda_kernel_test.py --test_device=gpu
"""

import os
import tempfile

# TensorFlow must leave GPU memory to the other library in the process (docs/interop.md).
os.environ.setdefault("TF_FORCE_GPU_ALLOW_GROWTH", "true")
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import numpy as np
import tensorflow as tf

import tf_onthefly
from tf_onthefly import _load
from tf_onthefly.cuda_kernel import contract_source, cuda_kernel, ptx_entries

import device_util


def find_file(name: str, env: str) -> str:
    """tf_ops/interop/<name>: $env, else in Bazel's runfiles or the source tree."""
    path = os.environ.get(env)
    if path:
        return path
    roots = [
        os.path.join(os.environ.get("TEST_SRCDIR", ""), "tf_onthefly"),
        os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."),
    ]
    for root in roots:
        candidate = os.path.join(root, "tf_ops", "interop", name)
        if os.path.exists(candidate):
            return candidate
    raise FileNotFoundError(f"{name} not found: build //tf_ops/interop:test_ptx and set {env} to its path")


def headers_folder() -> str:
    """tf_ops/common, beside the test kernels (runfiles or the source tree)."""
    return os.path.join(os.path.dirname(find_file("test_kernels.cu", "OTF_TEST_CU")), "..", "common")


def load_ptx() -> str:
    with open(find_file("test_kernels.ptx", "OTF_TEST_PTX")) as f:
        return f.read()


PTX = load_ptx()
UNIFORM = dict(outputs=[((16,), tf.float32), ((1,), tf.float32)], int_scalars=[16], float_scalars=[0.5])


def uniform_batch(batch_size=64, feature_dim=16, seed=7, step=3, **kwargs):
    args = dict(
        outputs=[((feature_dim,), tf.float32), ((1,), tf.float32)], int_scalars=[feature_dim], float_scalars=[0.5]
    )
    args.update(kwargs)
    return cuda_kernel(PTX, "otf_uniform_batch", batch_size=batch_size, seed=seed, step=step, **args)


class ArgumentTest(device_util.DeviceTestCase):
    def test_entries(self):
        self.assertEqual(ptx_entries(PTX), ["otf_uniform_batch", "otf_affine", "otf_step_fill"])

    def test_python_checks_name_the_argument(self):
        cases = [
            (dict(ptx=12), "ptx must be PTX text"),
            (dict(ptx="not ptx"), "ptx is not PTX text"),
            (dict(entry="nope"), "entry 'nope' is not a kernel of the PTX; its kernels are ['otf_uniform_batch'"),
            (dict(entry=""), "entry must name a kernel"),
            (dict(outputs=[]), "outputs must be a non-empty list"),
            (dict(outputs=[((None,), tf.float32)]), "outputs[0] needs a fully defined sample shape"),
            (dict(outputs=[((4,), tf.string)]), "outputs[0] has dtype string"),
            (dict(outputs=[(4,)]), "outputs[0] must be a (sample_shape, dtype) pair"),
            (dict(grid="rows"), "grid must be one of"),
            (dict(grid="fixed"), "grid_dims must give 1 to 3 block counts"),
            (dict(grid_dims=[4]), "grid_dims is only for grid='fixed'"),
            (dict(block=0), "block must be in [1, 1024]"),
            (dict(block=2048), "block must be in [1, 1024]"),
            (dict(items_per_thread=0), "items_per_thread must be >= 1"),
            (dict(int_scalars=[1.5]), "int_scalars[0] must be an integer"),
            (dict(float_scalars=["x"]), "float_scalars[0] must be a real number"),
            (dict(float_scalars=[1e39]), "float_scalars[0] must fit in float32"),
            (dict(seed=1.5), "seed must be an integer"),
        ]
        for overrides, message in cases:
            with self.subTest(**{k: str(v) for k, v in overrides.items()}):
                args = dict(ptx=PTX, entry="otf_uniform_batch", batch_size=8, **UNIFORM)
                args.update(overrides)
                with self.assertRaisesRegex(tf.errors.InvalidArgumentError, __import__("re").escape(message)):
                    cuda_kernel(args.pop("ptx"), args.pop("entry"), **args)

    def raw(self, **overrides):
        """The op itself, past the Python checks: its own checks must hold too."""
        args = dict(
            seed=tf.constant(1, tf.int64),
            step=tf.constant(0, tf.int64),
            first_sample=tf.constant(0, tf.int32),
            inputs=[],
            ptx=PTX,
            entry="otf_uniform_batch",
            batch_size=8,
            sample_shapes=[[16], [1]],
            Tout=[tf.float32, tf.float32],
            int_scalars=[16],
            float_scalars=[0.5],
        )
        args.update(overrides)
        return _load.ops.on_the_fly_cuda_kernel(**args)

    def test_op_checks_name_the_op_and_entry(self):
        who = "OnTheFly>CudaKernel (entry 'otf_uniform_batch')"
        self.assertRefuses(
            self.raw,
            [
                (
                    dict(entry="missing"),
                    "OnTheFly>CudaKernel (entry 'missing'): the PTX has no entry 'missing'; "
                    "its entries are [otf_uniform_batch, otf_affine, otf_step_fill]",
                ),
                (dict(ptx="hello"), who + ": ptx is not PTX text"),
                (dict(num_samples=9), who + ": num_samples must be -1 (the whole batch) or in [0, batch_size=8]"),
                (dict(sample_shapes=[[16]]), who + ": sample_shapes and Tout give the outputs, one each"),
                (dict(grid_rule="fixed"), who + ": grid_rule 'fixed' needs grid"),
                (dict(grid=[4]), who + ": grid is only for grid_rule 'fixed'"),
                (dict(grid_rule="fixed", grid=[0]), who + ": grid[0] must be in [1, 2147483647]"),
                (dict(block=4096), who + ": block must be in [1, 1024] threads"),
                (
                    dict(sample_shapes=[[2**40], [1]]),
                    who + ": output 0 of 8 x [1099511627776] exceeds the per-output cap",
                ),
            ],
        )

    def test_first_sample_range(self):
        with self.assertRaisesRegex(tf.errors.InvalidArgumentError, "first_sample must be in"):
            self.raw(first_sample=tf.constant(5, tf.int32), num_samples=4)

    def test_shapes(self):
        @tf.function
        def f(step):
            return cuda_kernel(
                PTX, "otf_uniform_batch", batch_size=32, num_samples=8, first_sample=8, step=step, **UNIFORM
            )

        features, labels = f.get_concrete_function(tf.TensorSpec([], tf.int64)).structured_outputs
        self.assertEqual(features.shape.as_list(), [8, 16])
        self.assertEqual(labels.shape.as_list(), [8, 1])

    def test_xla_refuses_clearly(self):
        @tf.function(jit_compile=True)
        def f():
            return uniform_batch()[0]

        with self.assertRaisesRegex(Exception, "cannot run inside an XLA-compiled function"):
            f()

    def test_contract_source(self):
        source = contract_source(headers_folder())
        self.assertIn("Philox4x32_10", source)
        self.assertIn("__CUDACC_RTC__", source)
        self.assertNotIn('#include "tf_ops/common/philox.h"', source)


class CpuTest(device_util.DeviceTestCase):
    def test_cpu_kernel_refuses(self):
        if device_util.device() != "cpu":
            self.skipTest("the CPU kernel's refusal")
        with self.assertRaisesRegex(
            tf.errors.InvalidArgumentError, r"OnTheFly>CudaKernel \(entry 'otf_uniform_batch'\): runs on a GPU only"
        ):
            uniform_batch()


class SavedModelTest(device_util.DeviceTestCase):
    def test_round_trip(self):
        class Module(tf.Module):
            @tf.function(input_signature=[tf.TensorSpec([], tf.int64)])
            def batch(self, step):
                return uniform_batch(step=step)

        module = Module()
        path = os.path.join(tempfile.mkdtemp(), "saved")
        tf.saved_model.save(module, path)
        loaded = tf.saved_model.load(path)
        graph = loaded.batch.get_concrete_function().graph
        graph_def = graph.as_graph_def()
        all_nodes = list(graph_def.node) + [n for f in graph_def.library.function for n in f.node_def]
        nodes = [n for n in all_nodes if n.op == "OnTheFly>CudaKernel"]
        self.assertLen(nodes, 1)
        self.assertEqual(nodes[0].attr["ptx"].s.decode(), PTX)
        self.assertEqual(nodes[0].attr["entry"].s.decode(), "otf_uniform_batch")
        if device_util.device() == "cpu":
            with self.assertRaisesRegex(tf.errors.InvalidArgumentError, "runs on a GPU only"):
                loaded.batch(tf.constant(3, tf.int64))
        else:
            got = loaded.batch(tf.constant(3, tf.int64))
            want = module.batch(tf.constant(3, tf.int64))
            for g, w in zip(got, want):
                self.assertAllEqual(g, w)


class GpuTest(device_util.DeviceTestCase):
    def setUp(self):
        super().setUp()
        if device_util.device() != "gpu":
            self.skipTest("launches PTX: runs in the _gpu variant")

    def test_matches_random_batch_bit_for_bit(self):
        for feature_dim in (16, 7, 1, 64):
            for seed, step in ((7, 3), ([1, 2], 2**40 + 1), (2**64 - 1, 0)):
                with self.subTest(feature_dim=feature_dim, seed=seed, step=step):
                    want = tf_onthefly.random_batch(1000, feature_dim, seed=seed, step=step)
                    got = uniform_batch(1000, feature_dim, seed=seed, step=step)
                    self.assertAllEqual(got[0], want[0])
                    self.assertAllEqual(got[1], want[1])

    def test_grid_rules_and_shards_give_the_same_batch(self):
        want = uniform_batch(1000, 12)
        for kwargs in (
            dict(grid="samples"),
            dict(grid="fixed", grid_dims=[3]),
            dict(items_per_thread=64),
            dict(block=32),
            dict(grid="fixed", grid_dims=[2, 2, 2], block=1),
        ):
            with self.subTest(**{k: str(v) for k, v in kwargs.items()}):
                got = uniform_batch(1000, 12, **kwargs)
                self.assertAllEqual(got[0], want[0])
        shards = [uniform_batch(1000, 12, first_sample=i * 250, num_samples=250) for i in range(4)]
        self.assertAllEqual(tf.concat([s[0] for s in shards], 0), want[0])
        self.assertAllEqual(tf.concat([s[1] for s in shards], 0), want[1])

    def test_inputs_and_scalars(self):
        x = tf.random.uniform([300, 5])
        (y,) = cuda_kernel(
            PTX,
            "otf_affine",
            batch_size=300,
            outputs=[((5,), tf.float32)],
            inputs=[x],
            int_scalars=[5],
            float_scalars=[2.0, -1.0],
        )
        self.assertAllEqual(y, 2.0 * x - 1.0)

    def test_graph_loop(self):
        @tf.function
        def loop(n):
            def body(step, bad):
                (out,) = cuda_kernel(
                    PTX, "otf_step_fill", batch_size=64, outputs=[((1024,), tf.float32)], step=step, int_scalars=[1024]
                )
                want = tf.cast(step, tf.float32) + tf.range(64, dtype=tf.float32)[:, None]
                return step + 1, bad + tf.reduce_sum(tf.cast(out != want, tf.int64))

            return tf.while_loop(lambda s, b: s < n, body, (tf.constant(0, tf.int64), tf.constant(0, tf.int64)))

        steps, bad = loop(tf.constant(200, tf.int64))
        self.assertEqual(int(steps), 200)
        self.assertEqual(int(bad), 0)

    def test_errors_do_not_crash(self):
        broken = ".version 7.8\n.target sm_60\n.address_size 64\n.visible .entry broken(\n)\n{\n  bogus.instr;\n}\n"
        with self.assertRaisesRegex(
            tf.errors.InvalidArgumentError, r"OnTheFly>CudaKernel \(entry 'broken'\): the PTX did not load"
        ):
            cuda_kernel(broken, "broken", batch_size=4, outputs=[((1,), tf.float32)])
        with self.assertRaisesRegex(
            tf.errors.InvalidArgumentError, r"\(entry 'otf_step_fill'\): the kernel takes 8 parameters"
        ):
            cuda_kernel(PTX, "otf_step_fill", batch_size=4, outputs=[((1,), tf.float32)])  # no int scalar
        with self.assertRaisesRegex(tf.errors.OpError, r"\(entry 'otf_step_fill'\)"):
            cuda_kernel(
                PTX,
                "otf_step_fill",
                batch_size=4,
                outputs=[((1,), tf.float32)],
                int_scalars=[1],
                shared_memory_bytes=64 * 1024 * 1024,
            )
        # The process and the device still work.
        self.assertAllEqual(uniform_batch(10, 16)[0], tf_onthefly.random_batch(10, 16, seed=7, step=3)[0])

    def test_model_fit(self):
        from tf_onthefly.bench import models
        from tf_onthefly.data import GeneratorModel, device_dataset

        def gen(step):
            return tuple(uniform_batch(256, 16, step=step))

        model = GeneratorModel(models.mlp(16, 1, hidden=(8,)), gen)
        model.compile(optimizer="sgd", loss="mse", jit_compile=False)
        model.fit(device_dataset(), steps_per_epoch=20, epochs=1, verbose=0)
        self.assertEqual(int(model.data_step.numpy()), 20)
        # Under XLA (jit_compile=True; GeneratorModel's default "auto" means it on a GPU) the
        # op refuses, saying why.
        model = GeneratorModel(models.mlp(16, 1, hidden=(8,)), gen)
        model.compile(optimizer="sgd", loss="mse", jit_compile=True)
        with self.assertRaisesRegex(Exception, "cannot run inside an XLA-compiled function"):
            model.fit(device_dataset(), steps_per_epoch=2, epochs=1, verbose=0)

    def test_nvrtc_with_the_contract_source(self):
        """The same kernels compiled from source by NVRTC (CuPy's RawModule) with
        contract_source() in place of the #include lines: the batch of random_batch again."""
        try:
            import cupy
        except ImportError:
            self.skipTest("cupy is not installed")
        path = find_file("test_kernels.cu", "OTF_TEST_CU")
        with open(path) as f:
            body = "".join(line for line in f if not line.startswith("#include"))
        module = cupy.RawModule(code=contract_source(headers_folder()) + body, options=("-std=c++17",))
        kernel = module.get_function("otf_uniform_batch")
        batch, dim = 1000, 12
        seed, step = cupy.array([7], cupy.int64), cupy.array([3], cupy.int64)
        features = cupy.empty((batch, dim), cupy.float32)
        labels = cupy.empty((batch, 1), cupy.float32)
        kernel(
            (64,),
            (128,),
            (
                seed,
                np.int64(1),
                step,
                np.int64(0),
                np.int64(batch),
                np.int64(batch),
                np.int64(dim),
                np.float32(0.5),
                features,
                labels,
            ),
        )
        want = tf_onthefly.random_batch(batch, dim, seed=7, step=3)
        self.assertAllEqual(cupy.asnumpy(features), want[0])
        self.assertAllEqual(cupy.asnumpy(labels), want[1])

    def test_distribute(self):
        strategy = tf.distribute.MirroredStrategy()
        replicas = strategy.num_replicas_in_sync
        per_replica = 128

        @tf.function
        def step_fn(step):
            ctx = tf.distribute.get_replica_context()
            return uniform_batch(
                per_replica * replicas,
                16,
                step=step,
                first_sample=ctx.replica_id_in_sync_group * per_replica,
                num_samples=per_replica,
            )

        result = strategy.run(step_fn, args=(tf.constant(5, tf.int64),))
        features = tf.concat(strategy.experimental_local_results(result[0]), 0)
        want = tf_onthefly.random_batch(per_replica * replicas, 16, seed=7, step=5)[0]
        self.assertAllEqual(features, want)


if __name__ == "__main__":
    tf.test.main()
