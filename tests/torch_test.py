"""tf_onthefly.torch: the generators as torch.library custom ops, in a process that never
imports TensorFlow.

Every golden case (tests/goldens.py) gives its golden digest; torch.compile(fullgraph=True)
keeps the op in the graph (its fake implementation gives the shapes) and gives the same
batch for every step without recompiling; opcheck (schema, fake, dispatch) passes; a traced
first_sample is a shard's first sample; errors name the op and the argument.
--test_device=gpu: the same on CUDA, plus a CUDA graph captured once and replayed for new
steps written into the step tensor, and the op on a side stream. --kernels=python: all of it
with the ops' Python implementation (what a PyTorch older than the op library's stable ABI
runs) instead of the op library's kernels.

    python tests/torch_test.py [--test_device=cpu|gpu] [--kernels=library|python]
"""

import os
import sys
import unittest

DEVICE = "gpu" if "--test_device=gpu" in sys.argv else "cpu"
KERNELS = "python" if "--kernels=python" in sys.argv else "library"
sys.argv = [a for a in sys.argv if not a.startswith(("--test_device", "--kernels"))]
os.environ["TF_ONTHEFLY_TORCH_KERNELS"] = KERNELS

import goldens  # noqa: E402
import torch  # noqa: E402

import tf_onthefly.torch as otf  # noqa: E402

SDK_OPS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sdk_ops", "_sdk_test_ops.so")
TARGET = torch.device("cuda" if DEVICE == "gpu" else "cpu")


def digest(outs):
    return goldens.digest(
        [
            (
                str(o.dtype).removeprefix("torch."),
                tuple(o.shape),
                o.cpu().contiguous().view(torch.uint8).numpy().tobytes(),
            )
            for o in outs
        ]
    )


def same(a, b):
    for x, y in zip(a, b, strict=True):
        assert torch.equal(x.cpu().view(torch.uint8), y.cpu().view(torch.uint8)), (x, y)


def step_tensor(value):
    return torch.tensor(value, dtype=torch.int64, device=TARGET)


class TorchTest(unittest.TestCase):
    def tearDown(self):
        self.assertNotIn("tensorflow", sys.modules)

    def test_generators_ops_and_signatures(self):
        self.assertLessEqual(
            {"drift_walk", "procedural_shapes", "random_batch", "random_walk", "tabular_mixture", "teacher_task"},
            set(otf.GENERATORS),
        )
        for name in otf.GENERATORS:
            self.assertTrue(hasattr(torch.ops.tf_onthefly, name), name)
        sig = str(otf.random_batch.__signature__)
        self.assertTrue(sig.startswith("(batch_size, feature_dim, seed, step, *, distribution='uniform'"), sig)
        self.assertTrue(sig.endswith("name=None, device=None)"), sig)

    def test_kernels(self):
        # The op library's kernels wherever PyTorch has the stable ABI they target.
        from tf_onthefly import _build_info

        version = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2])
        library = KERNELS == "library" and version >= _build_info.TORCH_STABLE_ABI
        self.assertEqual(otf.KERNELS is not None, library)
        # Either kernel checks what a direct call passes it, naming the op and the argument.
        ops, attrs = torch.ops.tf_onthefly, '{"batch_size": 6, "feature_dim": 3, "num_samples": -1}'
        error = RuntimeError if library else ValueError
        with self.assertRaisesRegex(error, r"OnTheFly>RandomBatch: seed must be a contiguous int64 tensor"):
            ops.random_batch(step_tensor([1, 0, 2])[::2], step_tensor(3), None, [], 0, attrs)
        with self.assertRaisesRegex(error, r"OnTheFly>RandomBatch: step must be a contiguous int64 tensor"):
            ops.random_batch(step_tensor(1), step_tensor(3).int(), None, [], 0, attrs)
        with self.assertRaisesRegex((RuntimeError, otf._core.CoreError), r"OnTheFly>RandomBatch: .*feature_dim"):
            ops.random_batch(step_tensor(1), step_tensor(3), None, [], 0, attrs.replace("3", "-3"))
        up = torch.tensor([[0.3, 0.7]], device=TARGET)
        with self.assertRaisesRegex((RuntimeError, otf._core.CoreError), r"up_probability must have shape \[n\]"):
            ops.drift_walk(step_tensor(1), step_tensor(3), None, [up], 0, '{"batch_size": 4, "length": 9}')

    def test_goldens(self):
        for name, (generator, args, seed, step) in goldens.CASES.items():
            with self.subTest(case=name):
                fn = otf.GENERATORS[generator]
                outs = fn(**args, seed=seed, step=step, device=TARGET)
                self.assertTrue(all(o.device.type == TARGET.type for o in outs))
                self.assertEqual(digest(outs), goldens.DIGESTS[name])
                self.assertEqual(
                    digest(fn(**args, seed=seed, step=step_tensor(step - 2**64 if step >= 2**63 else step))),
                    goldens.DIGESTS[name],
                )

    def test_compile_keeps_the_op_in_the_graph(self):
        torch._dynamo.reset()
        compiled = torch.compile(lambda s: otf.random_batch(64, 8, seed=[1, 2], step=s), fullgraph=True)
        for step in range(3):
            same(compiled(step_tensor(step)), otf.random_batch(64, 8, seed=[1, 2], step=step, device=TARGET))
        # A Python seed is a constant of the graph: the graph makes no tensor per call.
        graphs = []
        kept = torch.compile(
            lambda s: otf.random_batch(64, 8, seed=5, step=s),
            fullgraph=True,
            backend=lambda gm, example: graphs.append(gm) or gm.forward,
        )
        same(kept(step_tensor(2)), otf.random_batch(64, 8, seed=5, step=2, device=TARGET))
        targets = [n.target for n in graphs[0].graph.nodes if n.op == "call_function"]
        self.assertEqual(targets.count(torch.ops.tf_onthefly.random_batch), 1, graphs[0].code)
        self.assertNotIn(torch.tensor, targets, graphs[0].code)
        walks = torch.compile(lambda s: otf.drift_walk(5, 5000, [0.45, 0.55], seed=[3, 4], step=s), fullgraph=True)
        self.assertEqual(digest(walks(step_tensor(7))), goldens.DIGESTS["drift_walk/scratch"])

    def test_modes_tracers_and_the_profiler_see_the_op(self):
        # A torch function mode, a dispatch mode, the profiler and a torch.jit trace see
        # tf_onthefly::random_batch (no call bypasses the dispatcher), with the same batch;
        # meta tensors get the fake implementation's.
        from torch.overrides import TorchFunctionMode
        from torch.utils._python_dispatch import TorchDispatchMode

        class SeenByDispatch(TorchDispatchMode):
            ops = []

            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                self.ops.append(str(func))
                return func(*args, **(kwargs or {}))

        class SeenByFunction(TorchFunctionMode):
            ops = []

            def __torch_function__(self, func, types, args=(), kwargs=None):
                self.ops.append(str(func))
                return func(*args, **(kwargs or {}))

        want = otf.random_batch(6, 3, seed=[1, 2], step=step_tensor(3))
        for mode, seen in [
            (SeenByDispatch, "tf_onthefly.random_batch.default"),
            (SeenByFunction, "tf_onthefly.random_batch"),
        ]:
            with mode():
                same(otf.random_batch(6, 3, seed=[1, 2], step=step_tensor(3)), want)
            self.assertIn(seen, mode.ops)
        meta = otf.random_batch(6, 3, seed=[1, 2], step=torch.tensor(3, device="meta"))
        self.assertEqual([(o.device.type, o.shape) for o in meta], [("meta", d.shape) for d in want])
        with torch.profiler.profile() as profile:
            same(otf.random_batch(6, 3, seed=[1, 2], step=step_tensor(3)), want)
        self.assertIn("tf_onthefly::random_batch", {e.name for e in profile.events()})
        traced = torch.jit.trace(
            lambda s: otf.random_batch(6, 3, seed=[1, 2], step=s), (step_tensor(0),), check_trace=False
        )
        self.assertIn("tf_onthefly::random_batch", str(traced.graph))
        same(traced(step_tensor(3)), want)
        attrs = '{"batch_size": 6, "feature_dim": 3, "num_samples": -1}'
        same(torch.ops.tf_onthefly.random_batch(step_tensor([1, 2]), step_tensor(3), None, [], 0, attrs), want)

    def test_opcheck(self):
        attrs = '{"batch_size": 6, "feature_dim": 3, "num_samples": -1}'
        seed, step = step_tensor([1, 2]), step_tensor(3)
        torch.library.opcheck(torch.ops.tf_onthefly.random_batch.default, (seed, step, None, [], 0, attrs))
        up = torch.tensor([0.3, 0.7], device=TARGET)
        torch.library.opcheck(
            torch.ops.tf_onthefly.drift_walk.default,
            (seed, step, None, [up], 0, '{"batch_size": 4, "length": 9, "num_samples": -1}'),
        )

    def test_a_step_vector_is_its_steps_batches_stacked(self):
        """step of shape [n] (a list, or an int64 or int32 tensor, compiled or not) gives the n
        steps' batches stacked, each bit for bit its step's alone: for a shard, with tensor
        inputs, with scratch (drift_walk's long walks on a GPU), and with no step."""
        steps = goldens.STEP_VECTOR
        for name, kw in goldens.STEP_VECTOR_CASES:
            fn = otf.GENERATORS[name]
            with self.subTest(generator=name, **{k: str(v) for k, v in kw.items()}):
                alone = [fn(**kw, seed=[5, 6], step=s, device=TARGET) for s in steps]
                want = [torch.stack([a[i] for a in alone]) for i in range(len(alone[0]))]
                same(fn(**kw, seed=[5, 6], step=steps, device=TARGET), want)
                same(
                    fn(
                        **kw,
                        seed=[5, 6],
                        step=torch.tensor(goldens.STEP_VECTOR_INT32, dtype=torch.int32, device=TARGET),
                    ),
                    want,
                )
                torch._dynamo.reset()  # a new function each case: no sizes turned dynamic by a recompile
                compiled = torch.compile(lambda s, fn=fn, kw=kw: fn(**kw, seed=[5, 6], step=s), fullgraph=True)
                same(compiled(step_tensor(goldens.STEP_VECTOR_INT32)), want)
                none = fn(**kw, seed=[5, 6], step=step_tensor([]))
                self.assertEqual([tuple(o.shape) for o in none], [(0, *o.shape) for o in alone[0]])
        attrs = '{"batch_size": 6, "feature_dim": 3, "num_samples": -1}'
        torch.library.opcheck(
            torch.ops.tf_onthefly.random_batch.default,
            (step_tensor([1, 2]), step_tensor([3, 4, 5]), None, [], 0, attrs),
        )
        with self.assertRaisesRegex(
            (RuntimeError, ValueError),  # the op library's kernel; the Python implementation
            r"OnTheFly>RandomBatch: step must be an int(64|eger) scalar, or a vector of steps of shape \[n\], "
            r"got shape \[1, ?2\]",
        ):  # the op called directly checks the step's shape as TensorFlow's op does
            torch.ops.tf_onthefly.random_batch(step_tensor([1, 2]), step_tensor([[3, 4]]), None, [], 0, attrs)
        meta = otf.random_batch(6, 3, seed=1, step=torch.zeros(5, dtype=torch.int64, device="meta"))
        self.assertEqual([tuple(o.shape) for o in meta], [(5, 6, 3), (5, 6, 1)])

    def test_tensor_first_sample_and_32_bit_words(self):
        whole = otf.tabular_mixture(10, 3, seed=4, step=2, device=TARGET)
        part = otf.tabular_mixture(10, 3, seed=4, step=step_tensor(2), first_sample=step_tensor(3), num_samples=4)
        same(part, [w[3:7] for w in whole])
        same(
            otf.random_walk(
                4,
                5,
                seed=torch.tensor([-1, 7], dtype=torch.int32, device=TARGET),
                step=torch.tensor(-3, dtype=torch.int32, device=TARGET),
            ),
            otf.random_walk(4, 5, seed=[-1, 7], step=-3, device=TARGET),
        )

    @unittest.skipUnless(os.path.exists(SDK_OPS), "the SDK's test library is built by Bazel")
    def test_generators_of_ones_own(self):
        added = otf.load_generators(SDK_OPS)
        self.assertIn("sdk_test_add_rows", added)
        rows = torch.arange(12, dtype=torch.float32).reshape(4, 3)
        compiled = torch.compile(lambda r, s: otf.sdk_test_add_rows(4, 3, r, seed=5, step=s), fullgraph=True)
        (out,) = compiled(rows.to(TARGET), step_tensor(2))
        (want,) = otf.CORE.configure("OnTheFly>SdkTestAddRows", batch_size=4, width=3).run_cpu(
            5, 2, inputs=[rows.numpy()]
        )
        same((out,), (torch.from_numpy(want),))
        for fn in (otf.sdk_test_add_rows, otf.sdk_test_earlier_record):  # the earlier SDK: a launch a step
            (stacked,) = fn(4, 3, rows.to(TARGET), seed=5, step=step_tensor([2, 7]))
            same((stacked[0],), (out,))

    def test_errors_name_the_op_and_the_argument(self):
        core_error = otf._core.CoreError
        for call, error, message in [
            (lambda: otf.random_walk(4, 0, seed=1, step=0), core_error, "OnTheFly>RandomWalk: length must be in"),
            (
                lambda: otf.random_walk(4, 3, seed=1, step=0, lenght=2),
                TypeError,
                "unexpected keyword argument 'lenght'",
            ),
            (lambda: otf.random_walk(4, seed=1, step=0), TypeError, "missing required arguments: 'length'"),
            (lambda: otf.random_walk(4, 3, seed=[1, 2, 3], step=0), ValueError, "seed must be an integer or a pair"),
            (
                lambda: otf.random_walk(4, 3, seed=1, step=torch.zeros((1, 2), dtype=torch.int64)),
                ValueError,
                r"OnTheFly>RandomWalk: step must be an integer scalar, or a vector of steps of shape \[n\], got shape \[1, 2\]",
            ),
            (lambda: otf.random_walk(4, 3, seed=1, step=torch.zeros(())), ValueError, "step must be an integer tensor"),
            (lambda: otf.random_batch(4, 3, seed=1, step=0, dtype=torch.int32), core_error, "attr 'dtype' of int32"),
            (
                lambda: otf.random_batch(1 << 20, 1024, seed=1, step=torch.zeros(20, dtype=torch.int64, device=TARGET)),
                core_error,
                "OnTheFly>RandomBatch: output features of 20 steps of",
            ),
            (lambda: otf.random_batch(4, 3, seed=1, step=0, high=1e39), ValueError, "high must fit in float32"),
            (
                lambda: otf.random_batch(4, 3, seed=1, step=0, first_sample=2, num_samples=3),
                core_error,
                "first_sample must be in",
            ),
            (
                lambda: otf.drift_walk(4, 3, [[0.5]], seed=1, step=0),
                core_error,
                r"up_probability must have shape \[n\], got \[1, 1\]",
            ),
            (
                lambda: otf.drift_walk(4, 3, torch.tensor([1]), seed=1, step=0),
                ValueError,
                "up_probability must be a float32 tensor",
            ),
        ]:
            with self.subTest(message=message):
                with self.assertRaisesRegex(error, message):
                    call()
        if TARGET.type == "cpu":
            with self.assertRaisesRegex(core_error, r"OnTheFly>DriftWalk: up_probability must be in \[0, 1\]"):
                otf.drift_walk(4, 3, [1.5], seed=1, step=0)

    @unittest.skipIf(DEVICE != "gpu", "CUDA graphs: the GPU variant")
    def test_cuda_graph_replays_new_steps(self):
        step = step_tensor(0)
        static = {}

        def body():
            static["out"] = otf.random_batch(256, 16, seed=[1, 2], step=step) + otf.teacher_task(
                64, 8, seed=3, step=step
            )

        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            body()  # warm up: configure, constants
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            body()
        for s in (5, 6, 2**40):
            step.fill_(s)
            graph.replay()
            want = otf.random_batch(256, 16, seed=[1, 2], step=s, device=TARGET) + otf.teacher_task(
                64, 8, seed=3, step=s, device=TARGET
            )
            same(static["out"], want)
        compiled = torch.compile(
            lambda s: otf.random_batch(1024, 64, seed=9, step=s), mode="reduce-overhead", fullgraph=True
        )
        for s in range(4):
            same(compiled(step_tensor(s)), otf.random_batch(1024, 64, seed=9, step=s, device=TARGET))


if __name__ == "__main__":
    unittest.main()
