"""Tests of tf_onthefly.cuda_kernel (OnTheFly>CudaKernel): a user's PTX as a native op.

CPU variant: argument checks (each refusal names the op, the entry and the argument), the
PTX entry parser over a corpus (the op's C++ parser, which Python calls too), the op's
errors, the CPU kernel's refusal and XLA's on the CPU, shapes, and the SavedModel round trip
of a graph that uses the op (the PTX travels as an attribute). GPU variant (tagged
requires-gpu): launches, the match with random_batch bit for bit, eagerly and under XLA
(jit_compile=True, GeneratorModel with steps_per_execution), inputs and scalars, grid
rules, graph loops, errors that must not crash the process, tf.distribute, and the loaded
SavedModel running the kernel, eagerly and under XLA.

The PTX comes from //tf_ops/cuda_kernel:test_ptx (built by clang from test_kernels.cu); outside
Bazel, point OTF_TEST_PTX at that file:
    OTF_TEST_PTX=.../test_kernels.ptx python3 tests/cuda_kernel_test.py --test_device=gpu
"""

import os
import re
import tempfile

# TensorFlow must leave GPU memory to the other library in the process (docs/interop.md).
os.environ.setdefault("TF_FORCE_GPU_ALLOW_GROWTH", "true")
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import numpy as np
import tensorflow as tf

import tf_onthefly
from tf_onthefly import _load, contract_source, cuda_kernel, ptx_entries

import device_util


def find_file(name: str, env: str) -> str:
    """tf_ops/cuda_kernel/<name>: $env, else in Bazel's runfiles or the source tree."""
    path = os.environ.get(env)
    if path:
        return path
    roots = [
        os.path.join(os.environ.get("TEST_SRCDIR", ""), "tf_onthefly"),
        os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."),
    ]
    for root in roots:
        candidate = os.path.join(root, "tf_ops", "cuda_kernel", name)
        if os.path.exists(candidate):
            return candidate
    raise FileNotFoundError(f"{name} not found: build //tf_ops/cuda_kernel:test_ptx and set {env} to its path")


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
        self.assertEqual(ptx_entries(PTX.encode()), ptx_entries(PTX))

    def test_entry_parser_corpus(self):
        """One parser: Python's ptx_entries is the op's C++ one, and the op lists the same
        entries in its refusal of a missing one."""
        head = ".version 7.8\n.target sm_60\n.address_size 64\n"
        corpus = [
            (".visible .entry a(\n)\n{\n}\n", ["a"]),
            (".visible .entry\nb(\n)\n{\n}\n", ["b"]),
            (".visible .entry\r\n\t c (\n)\n{\n}\n", ["c"]),
            (".weak .entry $d_1(\n)\n{\n}\n.entry _Z1ev()\n{\n}\n", ["$d_1", "_Z1ev"]),
            ("// .entry commented(\n/* .entry hidden( */\n.entry real(){}\n", ["real"]),
            ('.file 1 ".entry not_a_kernel"\n.func helper()\n{\n}\n.entry k(){}\n', ["k"]),
            (".entry/* gap */g(){}\n", ["g"]),
            (".entry_like x(){}\n.func .entry(){}\n", []),
        ]
        for body, want in corpus:
            with self.subTest(body=body):
                ptx = head + body
                self.assertEqual(ptx_entries(ptx), want)
                with self.assertRaisesRegex(tf.errors.InvalidArgumentError, "its entries are") as caught:
                    self.raw(ptx=ptx, entry="missing_entry")
                listed = re.search(r"its entries are \[([^\]]*)\]", str(caught.exception)).group(1)
                self.assertEqual([e for e in listed.split(", ") if e], want)

    def test_python_checks_name_the_op_entry_and_argument(self):
        who = "OnTheFly>CudaKernel (entry 'otf_uniform_batch'): "
        cases = [
            (dict(ptx=12), who + "ptx must be PTX text"),
            (dict(ptx="not ptx"), who + "ptx is not PTX text"),
            (
                dict(entry="nope"),
                "OnTheFly>CudaKernel (entry 'nope'): entry 'nope' is not a kernel of the PTX; its kernels are "
                "['otf_uniform_batch'",
            ),
            (dict(entry=""), "OnTheFly>CudaKernel: entry must name a kernel"),
            (dict(outputs=[]), who + "outputs must be a non-empty list"),
            (dict(outputs=[((None,), tf.float32)]), who + "outputs[0] needs a fully defined sample shape"),
            (dict(outputs=[((4,), tf.string)]), who + "outputs[0] has dtype string"),
            (dict(outputs=[(4,)]), who + "outputs[0] must be a (sample_shape, dtype) pair"),
            (dict(outputs=[((1,), tf.float32)] * 17), who + "outputs has 17 pairs; the op writes at most 16"),
            (dict(grid="rows"), who + "grid must be one of"),
            (dict(grid="fixed"), who + "grid_dims must give 1 to 3 block counts"),
            (dict(grid_dims=[4]), who + "grid_dims is only for grid='fixed'"),
            (dict(grid_dims=np.array([2, 2])), who + "grid_dims is only for grid='fixed'"),
            (dict(grid="fixed", grid_dims=5), who + "grid_dims must be a list of block counts, got 5 (int)"),
            (dict(grid="fixed", grid_dims=[2, 0]), who + "grid_dims[1] must be in [1, 65535], got 0"),
            (dict(grid="fixed", grid_dims=[1.5]), who + "grid_dims[0] must be an integer"),
            (dict(block=0), who + "block must be in [1, 1024]"),
            (dict(block=2048), who + "block must be in [1, 1024]"),
            (dict(block=2.0), who + "block must be an integer"),
            (dict(items_per_thread=0), who + "items_per_thread must be >= 1"),
            (dict(shared_memory_bytes=-1), who + "shared_memory_bytes must be >= 0"),
            (dict(batch_size=0), who + "batch_size must be >= 1, got 0"),
            (dict(batch_size=None), who + "batch_size must be an integer"),
            (dict(num_samples=9), who + "num_samples must be in [0, 8], got 9"),
            (dict(int_scalars=5), who + "int_scalars must be a list of integers, got 5 (int)"),
            (dict(int_scalars=[1.5]), who + "int_scalars[0] must be an integer"),
            (dict(float_scalars=0.5), who + "float_scalars must be a list of real numbers, got 0.5 (float)"),
            (dict(float_scalars=["x"]), who + "float_scalars[0] must be a real number"),
            (dict(float_scalars=[1e39]), who + "float_scalars[0] must fit in float32"),
            (dict(inputs=None), who + "inputs must be a list of tensors, got None"),
            (dict(inputs=5), who + "inputs must be a list of tensors, got 5 (int)"),
            (dict(inputs=[None]), who + "inputs[0] must be a tensor (or an array), got None"),
            (dict(inputs=[object()]), who + "inputs[0] cannot become a tensor (object)"),
            (dict(inputs=[["a"]]), who + "inputs[0] has dtype string"),
            (dict(seed=1.5), who + "seed must be an integer"),
            (dict(step="3"), who + "step must be an integer"),
        ]
        for overrides, message in cases:
            with self.subTest(**{k: str(v)[:40] for k, v in overrides.items()}):
                args = dict(ptx=PTX, entry="otf_uniform_batch", batch_size=8, **UNIFORM)
                args.update(overrides)
                with self.assertRaisesRegex(tf.errors.InvalidArgumentError, "^" + re.escape(message)):
                    cuda_kernel(args.pop("ptx"), args.pop("entry"), **args)

    def test_accepted_forms_reach_the_device_check(self):
        """What is accepted passes every check, the op's own included, and reaches the CPU
        kernel's GPU-only refusal (on the GPU: the launch): a grid given as an array, a
        2-row shard of a 2^62-row batch (the per-output cap is on the rows written), PTX
        with a line break after .entry."""
        if device_util.device() != "cpu":
            self.skipTest("the CPU kernel's refusal marks how far the call got")
        wrapped = PTX.replace(".entry otf_uniform_batch", ".entry\n\totf_uniform_batch")
        self.assertNotEqual(wrapped, PTX)
        for ptx, kwargs in (
            (PTX, dict(grid="fixed", grid_dims=np.array([2, 2]))),
            (PTX, dict(batch_size=2**62, num_samples=2, first_sample=2**61)),
            (wrapped, {}),
            (PTX.encode(), dict(int_scalars=np.array([16]), float_scalars=(0.5,))),
        ):
            with self.subTest(**{k: str(v) for k, v in kwargs.items()}):
                args = dict(batch_size=8, **UNIFORM)
                args.update(kwargs)
                with self.assertRaisesRegex(tf.errors.InvalidArgumentError, "runs on a GPU only"):
                    cuda_kernel(ptx, "otf_uniform_batch", **args)

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
                (dict(batch_size=0), who + ": batch_size must be >= 1, got 0"),
                (
                    dict(batch_size=2**62, sample_shapes=[[16], [1]]),
                    who + ": output 0 of 4611686018427387904 x [16] exceeds the per-output cap",
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

    def test_xla_on_the_cpu_refuses_as_the_op_does(self):
        if device_util.device() != "cpu":
            self.skipTest("XLA's CPU backend")

        @tf.function(jit_compile=True)
        def f():
            return uniform_batch()[0]

        with self.assertRaisesRegex(
            tf.errors.InvalidArgumentError,
            r"OnTheFly>CudaKernel \(entry 'otf_uniform_batch'\): runs on a GPU only .* XLA's CPU backend",
        ):
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
        """The PTX travels as an attribute, in a function compiled by XLA too."""
        for jit in (False, True):
            with self.subTest(jit_compile=jit):

                class Module(tf.Module):
                    @tf.function(input_signature=[tf.TensorSpec([], tf.int64)], jit_compile=jit)
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
                    want = uniform_batch(step=3)
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

    def test_xla_matches_the_op_bit_for_bit(self):
        """Under jit_compile=True the op is a custom call launching the same kernel on XLA's
        stream: the same bits, for every shape, seed, step, grid and shard, with XLA's own
        ops around it and across calls of one compiled function."""

        def both(batch, dim, **kwargs):
            eager = uniform_batch(batch, dim, **kwargs)
            step = kwargs.pop("step", 3)
            compiled = tf.function(lambda s: uniform_batch(batch, dim, step=s, **kwargs), jit_compile=True)
            return eager, compiled(tf.constant(step, tf.int64))

        for batch, dim, kwargs in (
            (1000, 16, {}),
            (1000, 7, dict(seed=[1, 2], step=2**40 + 1)),
            (333, 1, dict(seed=2**64 - 1, step=2**63 - 1)),
            (1000, 64, dict(grid="fixed", grid_dims=[3], block=64)),
            (1000, 12, dict(first_sample=250, num_samples=250)),
            (1000, 12, dict(num_samples=0)),
        ):
            with self.subTest(batch=batch, dim=dim, **{k: str(v) for k, v in kwargs.items()}):
                eager, compiled = both(batch, dim, **kwargs)
                self.assertAllEqual(compiled[0], eager[0])
                self.assertAllEqual(compiled[1], eager[1])

        @tf.function(jit_compile=True)
        def around(step):
            x, y = uniform_batch(256, 16, step=step)
            return tf.reduce_sum(x * 2.0, axis=1) + y[:, 0], x

        for step in (0, 5, 5, 9):
            total, x = around(tf.constant(step, tf.int64))
            want = uniform_batch(256, 16, step=step)
            self.assertAllEqual(x, want[0])
            # XLA sums in another order than TensorFlow's kernel: the batch is compared bit for
            # bit, the sum of its rows only as floats.
            self.assertAllClose(total, tf.reduce_sum(want[0] * 2.0, axis=1) + want[1][:, 0], rtol=1e-6, atol=0)

    def test_xla_errors_name_the_op(self):
        with self.assertRaisesRegex(
            tf.errors.InvalidArgumentError, r"\(entry 'otf_step_fill', under XLA\): the kernel takes"
        ):
            tf.function(
                lambda: cuda_kernel(PTX, "otf_step_fill", batch_size=4, outputs=[((1,), tf.float32)]),
                jit_compile=True,
            )()
        self.assertAllEqual(uniform_batch(10, 16)[0], tf_onthefly.random_batch(10, 16, seed=7, step=3)[0])

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

        def affine(x):
            return cuda_kernel(
                PTX,
                "otf_affine",
                batch_size=300,
                outputs=[((5,), tf.float32)],
                inputs=[x],
                int_scalars=[5],
                float_scalars=[2.0, -1.0],
            )[0]

        self.assertAllEqual(affine(x), 2.0 * x - 1.0)
        self.assertAllEqual(tf.function(affine, jit_compile=True)(x), affine(x))

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
        """GeneratorModel with the op in the step, without XLA and with it (the whole loop of
        steps_per_execution steps one XLA executable; test_xla_matches_the_op_bit_for_bit
        shows the batches are the same bits)."""
        from tf_onthefly.bench import models
        from tf_onthefly.data import GeneratorModel, device_dataset

        def gen(step):
            return tuple(uniform_batch(256, 16, step=step))

        for jit in (False, True):
            model = GeneratorModel(models.mlp(16, 1, hidden=(8,)), gen)
            model.compile(optimizer="sgd", loss="mse", jit_compile=jit, steps_per_execution=8)
            history = model.fit(device_dataset(), steps_per_epoch=32, epochs=2, verbose=0)
            self.assertEqual(int(model.data_step.numpy()), 64)
            self.assertTrue(all(np.isfinite(history.history["loss"])))

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
