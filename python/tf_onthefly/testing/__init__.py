"""The contract checks of a generator, for its own tests: the ones every built-in generator
passes, for a generator of yours (built in, or loaded with `tf_onthefly.load_generators`).

    import tf_onthefly
    from tf_onthefly import testing

    class BlockSortTest(testing.GeneratorTestCase):
        generator = "block_sort"         # its name in tf_onthefly.REGISTRY
        arguments = dict(length=1024)    # its own arguments (attributes and tensor inputs)
        fuzz_arguments = dict(length=testing.arguments.sizes(1, 4096))  # optional

    if __name__ == "__main__":
        testing.main()

Each check is a test method `test_contract_*` (pytest and unittest collect them): the same
(seed, step) gives the same bits; another seed or step changes them; shards
(first_sample, num_samples) tile the batch bit for bit; traced shapes are the eager ones;
bad common arguments and bad tensor inputs are refused naming them; seed, step,
first_sample and tensor inputs work as tensors and variables; XLA (jit_compile) equals
the TensorFlow kernel on the test's device; CPU == GPU == XLA on the GPU bit for bit; a
fuzz of the documented arguments (hypothesis). Checks that need what this process lacks (a
GPU, XLA kernels, hypothesis, tensor inputs) are skipped with the reason.
"""

import os
import re

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from tf_onthefly import _load  # noqa: E402

FUZZ_MAX_BYTES_TO_RUN = 32 << 20  # valid fuzz calls with larger outputs are traced, not run


def __getattr__(name):
    """`testing.arguments`, the hypothesis strategies, imported on first use (the checks
    themselves need no hypothesis)."""
    if name == "arguments":
        import importlib

        try:
            return importlib.import_module("tf_onthefly.testing.arguments")
        except ImportError as e:
            raise ImportError(f"tf_onthefly.testing.arguments needs hypothesis: pip install hypothesis ({e})") from e
    raise AttributeError(f"module 'tf_onthefly.testing' has no attribute {name!r}")


def main():
    """Runs the tests of the calling module (tf.test.main)."""
    tf.test.main()


def bits(t):
    """An array whose equality means bit-identity (floats compared by their bits)."""
    a = np.asarray(t)
    return a.view(f"u{a.dtype.itemsize}") if a.dtype.kind == "f" or a.dtype.name == "bfloat16" else a


def assert_bits_equal(test, a, b, msg=None):
    """Sequences of arrays/tensors `a` and `b` are equal bit for bit, element by element."""
    test.assertEqual(len(a), len(b))
    for x, y in zip(a, b):
        test.assertAllEqual(bits(x), bits(y), msg=msg)


def assert_refuses(test, call, cases, graph=True):
    """call(**overrides) raises InvalidArgumentError containing `message` for each
    (overrides, message), eagerly and (graph=True) at tf.function trace time, where
    TensorFlow reports it as ValueError."""
    for overrides, message in cases:
        with test.subTest(**{k: str(v) for k, v in overrides.items()}):
            with test.assertRaisesRegex(tf.errors.InvalidArgumentError, re.escape(message)):
                call(**overrides)
            if graph:
                with test.assertRaisesRegex((ValueError, tf.errors.InvalidArgumentError), re.escape(message)):
                    tf.function(lambda: call(**overrides))()


def _gpu_visible():
    return bool(tf.config.list_physical_devices("GPU"))


class GeneratorContract:
    """The checks, a mixin for a tf.test.TestCase. Set `generator` (a name in
    tf_onthefly.REGISTRY) and, unless its registry entry's first example fits, `arguments`;
    or override `generate` for an op not in the registry."""

    generator = None  # name in tf_onthefly.REGISTRY
    arguments = None  # its own arguments; None: REGISTRY[generator].examples[0] without batch_size
    batch_size = 24  # the batch of the checks
    gpu_batch_size = 4096  # the batch of the CPU == GPU check
    device = None  # where the checks run: None, TensorFlow's placement (a GPU where one is visible)
    fuzz_arguments = None  # argument -> testing.arguments.Arg: the documented argument space
    fuzz_examples = 250

    def output_sets(self, kw, outputs):
        """Asserts that `outputs` of an accepted fuzz call `kw` lie in their documented sets."""

    def generate(self, batch_size, seed, step, first_sample=0, num_samples=None, **tensor_inputs):
        """The generator's outputs, a tuple of tensors, for these common arguments; tensor
        inputs given here replace those of `arguments`."""
        fn = self._registry_entry().fn
        own = dict(self._own_arguments(), **tensor_inputs)
        out = fn(batch_size=batch_size, seed=seed, step=step, first_sample=first_sample, num_samples=num_samples, **own)
        return tuple(out) if isinstance(out, (tuple, list)) else (out,)

    @property
    def tensor_inputs(self):
        """The generator's own tensor inputs (its OpDef's inputs after seed, step and
        first_sample) -> their values in `arguments`."""
        from tensorflow.python.framework import op_def_registry

        names = [a.name for a in op_def_registry.get(self._op_name()).input_arg[3:]]
        own = self._own_arguments()
        return {n: own[n] for n in names if n in own}

    def _registry_entry(self):
        import tf_onthefly

        if self.generator is None:
            raise AssertionError(f"{type(self).__name__}: set `generator` (a name in tf_onthefly.REGISTRY)")
        if self.generator not in tf_onthefly.REGISTRY:
            raise AssertionError(
                f"{type(self).__name__}: no generator {self.generator!r} in tf_onthefly.REGISTRY "
                f"(registered: {', '.join(sorted(tf_onthefly.REGISTRY))}); load its library first "
                "with tf_onthefly.load_generators(path)"
            )
        return tf_onthefly.REGISTRY[self.generator]

    def _own_arguments(self):
        if self.arguments is not None:
            return dict(self.arguments)
        examples = self._registry_entry().examples
        if not examples:
            raise AssertionError(f"{type(self).__name__}: set `arguments` ({self.generator} has no registry example)")
        return {k: v for k, v in examples[0].items() if k not in ("batch_size", "first_sample", "num_samples")}

    def _op_name(self):
        if self.generator is not None:
            return self._registry_entry().op
        graph = tf.function(lambda: self.generate(self.batch_size, 1, 2)).get_concrete_function().graph
        (op,) = {op.type for op in graph.get_operations() if op.type.startswith("OnTheFly>")}
        return op

    def _on_gpu(self):
        return "GPU" in self.device.upper() if self.device else _gpu_visible()

    def assertBitsEqual(self, a, b, msg=None):
        assert_bits_equal(self, a, b, msg)

    def _require_xla(self):
        if not _load.HAS_XLA:
            self.skipTest(f"the op library for TensorFlow {_load.VARIANT['minor']} has no XLA kernels")

    def test_contract_deterministic(self):
        self.assertBitsEqual(self.generate(self.batch_size, [1, 2], 3), self.generate(self.batch_size, [1, 2], 3))

    def test_contract_steps_and_seeds_differ(self):
        base = self.generate(self.batch_size, 7, 0)[0].numpy()
        for seed, step in [(7, 1), (8, 0), ([7, 1], 0)]:
            other = self.generate(self.batch_size, seed, step)[0].numpy()
            self.assertLess(np.mean(base == other), 0.9, msg=f"seed={seed} step={step}")

    def test_contract_shards_are_the_global_batch(self):
        n = self.batch_size
        full = self.generate(n, 5, 11)
        for cuts in ([0, n // 2, n], [0, 1, n - 1, n], [0, 3, 3, n]):
            parts = [self.generate(n, 5, 11, first_sample=a, num_samples=b - a) for a, b in zip(cuts[:-1], cuts[1:])]
            joined = [tf.concat([p[i] for p in parts], 0) for i in range(len(full))]
            self.assertBitsEqual(joined, full, msg=str(cuts))

    def test_contract_static_shapes_and_empty_shard(self):
        eager = self.generate(self.batch_size, 1, 2)
        traced = tf.function(lambda s: self.generate(self.batch_size, 1, s)).get_concrete_function(
            tf.TensorSpec([], tf.int64)
        )
        for t, spec in zip(eager, traced.structured_outputs):
            self.assertEqual(spec.shape.as_list(), list(t.shape))
            self.assertEqual(spec.dtype, t.dtype)
        empty = tf.function(lambda: self.generate(self.batch_size, 1, 2, first_sample=self.batch_size, num_samples=0))()
        for e, t in zip(empty, eager):
            self.assertEqual(e.shape.as_list(), [0] + list(t.shape[1:]))

    def test_contract_bad_common_arguments(self):
        cases = [
            (dict(batch_size=0), "batch_size must be >= 1, got 0"),
            (dict(seed=[1, 2, 3]), "seed must be an int64 scalar or an int64 pair of shape [2], got shape [3]"),
            (dict(step=[[1, 2]]), "step must be an int64 scalar, or a vector of steps of shape [n], got shape [1,2]"),
            (
                dict(first_sample=2, num_samples=self.batch_size),
                "first_sample must be in [0, batch_size - num_samples]",
            ),
            (dict(num_samples=self.batch_size + 1), "num_samples must be -1 (the whole batch)"),
        ]

        def call(batch_size=self.batch_size, seed=1, step=0, **kw):
            return self.generate(batch_size, seed, step, **kw)

        assert_refuses(self, call, cases, graph=False)

    def test_contract_tensor_inputs(self):
        """seed, step and first_sample as tensors made by ops or read from variables (as a
        step kept on the GPU is) give the batch their values give."""
        n = self.batch_size
        expected = self.generate(n, [3, 4], 9, first_sample=2, num_samples=n - 2)
        seed = tf.Variable([3, 4], dtype=tf.int64)
        step = tf.Variable(4, dtype=tf.int64)

        @tf.function
        def traced():
            return self.generate(
                n, seed.read_value(), step + 5, first_sample=tf.constant(1, tf.int64) * 2, num_samples=n - 2
            )

        self.assertBitsEqual(traced(), expected)
        self.assertBitsEqual(self.generate(n, seed, step * 2 + 1, first_sample=2, num_samples=n - 2), expected)
        # int32 and int64 tensors, known when tracing or only when running (a variable), and
        # a NumPy integer: both kernel input types
        for first in [tf.constant(2, tf.int32), tf.constant(2, tf.int64), tf.Variable(2, dtype=tf.int64), np.int16(2)]:
            with self.subTest(first_sample=repr(first)):
                self.assertBitsEqual(self.generate(n, [3, 4], 9, first_sample=first, num_samples=n - 2), expected)

    def test_contract_first_sample_known_when_tracing_is_int32(self):
        """A first_sample the wrapper can evaluate when tracing reaches the op as an int32
        constant made on the op's device (host memory there), whatever its type."""
        n = self.batch_size
        for first in [1, np.int64(1), tf.constant(1, tf.int64), tf.constant(1, tf.uint8)]:
            with self.subTest(first_sample=repr(first)):
                graph = (
                    tf.function(lambda: self.generate(n, 1, 2, first_sample=first, num_samples=n - 1))
                    .get_concrete_function()
                    .graph
                )
                (op,) = [op for op in graph.get_operations() if op.type.startswith("OnTheFly>")]
                self.assertEqual(op.get_attr("Tindex"), tf.int32)
                self.assertEqual(op.inputs[2].op.type, "Const")

    def test_contract_graph_loop_is_one_partition(self):
        """A graph loop that generates each step's batch on one device runs in one partition
        of the graph: no node of the op's inputs sits on another device (a part on /CPU:0
        would trade the loop's control with the GPU's part every iteration). On the CPU the
        loop runs on a second CPU device of the tf.compat.v1.Session, which a node on the
        host's /CPU:0 would split from just as it splits a GPU's part."""
        n = self.batch_size
        device = "/GPU:0" if self._on_gpu() else "/CPU:1"
        graph = tf.Graph()
        with graph.as_default(), tf.device(device):

            def body(i, acc):
                batch = self.generate(n, 1, tf.cast(i, tf.int64), first_sample=1, num_samples=n - 1)
                return i + 1, acc + tf.add_n([tf.reduce_sum(tf.cast(t, tf.float32)) for t in batch])

            loop = tf.compat.v1.while_loop(lambda i, acc: i < 3, body, [tf.constant(0), tf.constant(0.0)])
        config = tf.compat.v1.ConfigProto(device_count={"CPU": 2}, allow_soft_placement=False)
        metadata = tf.compat.v1.RunMetadata()
        with tf.compat.v1.Session(graph=graph, config=config) as sess:
            sess.run(loop, options=tf.compat.v1.RunOptions(output_partition_graphs=True), run_metadata=metadata)
        # The run's fetches are received on /CPU:0 after the loop; what counts is which
        # parts run the loop (each has its own copy of the loop's control nodes).
        loop_devices = {
            node.device
            for part in metadata.partition_graphs
            for node in part.node
            if node.op in ("Enter", "NextIteration", "LoopCond")
        }
        self.assertLen(loop_devices, 1)

    def test_contract_gpu_kernels_read_seed_and_step_on_device(self):
        """The GPU kernels take seed and step in device memory (no copy to the host, no wait
        for the GPU before the op runs); only first_sample is read on the host."""
        from tensorflow.python.framework import kernels

        op = self._op_name()
        gpu = [k for k in kernels.get_registered_kernels_for_op(op).kernel if k.device_type == "GPU"]
        if not gpu and not any(
            v["has_gpu"] for g in _load.core.specs()["generators"] if g["name"] == op for v in g["variants"]
        ):
            self.skipTest(f"{op} was built without GPU kernels (a CPU-only build)")
        self.assertNotEmpty(gpu)
        for k in gpu:
            self.assertEqual(list(k.host_memory_arg), ["first_sample"])

    def test_contract_tensor_input_shape_and_dtype_refused(self):
        """Each of the generator's own tensor inputs with a rank too many, or as a tensor of
        another dtype: an InvalidArgumentError naming the input, eagerly and when tracing."""
        from tensorflow.python.framework import op_def_registry

        if not self.tensor_inputs:
            self.skipTest("the generator has no tensor inputs of its own")
        dtypes = {a.name: tf.as_dtype(a.type) for a in op_def_registry.get(self._op_name()).input_arg[3:]}
        for name, value in self.tensor_inputs.items():
            other = tf.float64 if dtypes[name] != tf.float64 else tf.float32
            cases = [
                ({name: np.asarray(value)[None]}, f"{name} must have shape"),
                ({name: tf.cast(tf.constant(value), other)}, f"{name} must be a {dtypes[name].name} tensor"),
            ]
            assert_refuses(self, lambda **kw: self.generate(self.batch_size, 1, 0, **kw), cases)

    def test_contract_tensor_inputs_from_variables(self):
        """Tensor inputs read from variables inside a tf.function (and under XLA, as custom
        call operands) give the batch their values give; a new value changes the batch
        without a retrace."""
        if not self.tensor_inputs:
            self.skipTest("the generator has no tensor inputs of its own")
        n = self.batch_size
        variables = {k: tf.Variable(v) for k, v in self.tensor_inputs.items()}
        traces = []

        def make():
            traces.append(1)
            return self.generate(n, [3, 4], 9, **{k: v.read_value() for k, v in variables.items()})

        compiled = [tf.function(make)] + ([tf.function(make, jit_compile=True)] if _load.HAS_XLA else [])
        for scale in (1.0, 0.5):
            values = {k: (np.asarray(v) * scale).astype(v.dtype.as_numpy_dtype) for k, v in variables.items()}
            for k, v in values.items():
                variables[k].assign(v)
            expected = self.generate(n, [3, 4], 9, **values)
            for f in compiled:
                self.assertBitsEqual(f(), expected, msg=f"scale {scale}")
        self.assertLen(traces, len(compiled))

    def test_contract_step_vector(self):
        """A vector of n steps gives the n steps' batches in one call, stacked along a new
        first dimension, each bit for bit the batch of its step alone: on the test's device,
        for a shard, with no step, traced, and under jit_compile (one XLA custom call)."""
        n = self.batch_size
        steps = [11, 12, 2**64 - 1, 0, 12]
        for kw in [dict(), dict(first_sample=3, num_samples=n - 5), dict(first_sample=n, num_samples=0)]:
            alone = [self.generate(n, [5, 6], s, **kw) for s in steps]
            stacked = self.generate(n, [5, 6], steps, **kw)
            self.assertEqual(len(stacked), len(alone[0]))
            for out, first in zip(stacked, alone[0]):
                self.assertEqual(out.shape.as_list(), [len(steps)] + first.shape.as_list())
            self.assertBitsEqual(
                [t for out in stacked for t in out], [a[i] for i in range(len(stacked)) for a in alone], msg=str(kw)
            )
        none = self.generate(n, 1, tf.zeros([0], tf.int64))
        traced = tf.function(lambda s: self.generate(n, 1, s)).get_concrete_function(tf.TensorSpec([None], tf.int64))
        for e, spec, t in zip(none, traced.structured_outputs, self.generate(n, 1, 0)):
            self.assertEqual(e.shape.as_list(), [0] + list(t.shape))
            self.assertEqual(spec.shape.as_list(), [None] + list(t.shape))
        if _load.HAS_XLA:  # steps in variables: TensorFlow would fold a call on constants before XLA
            for chosen in (steps[:2], []):
                step = tf.Variable(chosen, dtype=tf.int64)
                xla = tf.function(lambda: self.generate(n, [5, 6], step.read_value()), jit_compile=True)()  # noqa: B023
                self.assertBitsEqual(
                    xla, self.generate(n, [5, 6], tf.constant(chosen, tf.int64)), msg=f"XLA, steps {chosen}"
                )

    def test_contract_xla_equals_tf_kernels(self):
        """Under tf.function(jit_compile=True) the op runs as an XLA custom call (the SDK's FFI
        handler on the test's device); every output equals the TF kernel's, bit for bit."""
        self._require_xla()
        n = self.batch_size
        step = tf.Variable(11, dtype=tf.int64)
        for kw in [dict(), dict(first_sample=3, num_samples=n - 5), dict(first_sample=n, num_samples=0)]:
            expected = self.generate(n, [5, 6], 11, **kw)
            xla = tf.function(lambda: self.generate(n, [5, 6], step.read_value(), **kw), jit_compile=True)()
            self.assertBitsEqual(xla, expected, msg=str(kw))
        # first_sample as an int64 tensor that XLA, not the wrapper, finds constant (the
        # wrapper passes what it can evaluate below 2^31 as an int32)
        expected = self.generate(n, [5, 6], 11, first_sample=3, num_samples=n - 5)
        xla = tf.function(
            lambda: self.generate(
                n, [5, 6], step.read_value(), first_sample=tf.constant(1, tf.int64) * 3, num_samples=n - 5
            ),
            jit_compile=True,
        )()
        self.assertBitsEqual(xla, expected, msg="int64 first_sample")

    def test_contract_cpu_equals_gpu(self):
        """gpu_batch_size rows on the CPU, on the GPU, and under jit_compile on the GPU (the
        XLA custom call), whole batch and a shard: bit for bit the same."""
        if not _gpu_visible():
            self.skipTest("compares CPU with GPU: no GPU visible to TensorFlow")
        if not self._on_gpu():
            self.skipTest(f"compares CPU with GPU: the checks run on {self.device}")
        n = self.gpu_batch_size
        for kw in (dict(), dict(first_sample=n // 4, num_samples=n // 2)):
            with self.subTest(**kw):
                with tf.device("/CPU:0"):
                    cpu = self.generate(n, [9, 9], 12345, **kw)
                with tf.device("/GPU:0"):
                    gpu = self.generate(n, [9, 9], 12345, **kw)
                    self.assertIn("GPU", gpu[0].device)
                    self.assertBitsEqual(cpu, gpu, msg="GPU")
                    if _load.HAS_XLA:
                        xla = tf.function(lambda: self.generate(n, [9, 9], 12345, **kw), jit_compile=True)()  # noqa: B023
                        self.assertIn("GPU", xla[0].device)
                        self.assertBitsEqual(cpu, xla, msg="XLA on the GPU")

    def test_contract_fuzz(self):
        """Calls drawn from the common arguments and `fuzz_arguments` (hypothesis, derandomized:
        the same cases every run), half valid, half with one argument at an edge. For each:
        tracing and eager execution judge it alike; a refusal is an InvalidArgumentError
        (ValueError when tracing) naming one of the op's arguments; an accepted call returns
        the traced shapes and passes `output_sets`."""
        if self.fuzz_arguments is None:
            self.skipTest("no fuzz_arguments (the documented argument space) given")
        try:
            import hypothesis
        except ImportError:
            self.skipTest("the fuzz needs hypothesis: pip install hypothesis")
        from tf_onthefly.testing import arguments

        outcomes = {"ran": 0, "refused": 0, "valid, too large to run here": 0}

        @hypothesis.settings(
            max_examples=self.fuzz_examples,
            deadline=None,
            derandomize=True,
            suppress_health_check=list(hypothesis.HealthCheck),
            database=None,
        )
        @hypothesis.given(kw=arguments.calls(self.fuzz_arguments))
        def run(kw):
            outcomes[self._fuzz_call(kw)] += 1

        run()
        print(f"fuzz outcomes of {self._op_name()}: {outcomes}")

    def _fuzz_call(self, kw):
        """Checks one drawn call; returns its outcome."""
        from tensorflow.python.framework import op_def_registry

        op_def = op_def_registry.get(self._op_name())
        names = [a.name for a in op_def.attr] + [a.name for a in op_def.input_arg] + [a.name for a in op_def.output_arg]
        fn = self._registry_entry().fn
        call = lambda: fn(**kw)  # noqa: E731
        try:
            traced = tf.function(call).get_concrete_function().structured_outputs
        except (tf.errors.InvalidArgumentError, ValueError) as e:
            self._assertNamesAnArgument(e, names)
            with self.assertRaises(tf.errors.InvalidArgumentError, msg="refused at trace time only") as eager:
                call()
            self._assertNamesAnArgument(eager.exception, names)
            return "refused"
        traced = traced if isinstance(traced, (tuple, list)) else (traced,)
        if sum(int(np.prod(t.shape)) * t.dtype.size for t in traced) > FUZZ_MAX_BYTES_TO_RUN:
            return "valid, too large to run here"
        try:
            outputs = call()
        except tf.errors.InvalidArgumentError as e:  # values are checked at run time only
            self._assertNamesAnArgument(e, ["first_sample"] + [a.name for a in op_def.input_arg[3:]])
            return "refused"
        outputs = outputs if isinstance(outputs, (tuple, list)) else (outputs,)
        for t, spec in zip(outputs, traced):
            self.assertEqual(t.shape.as_list(), spec.shape.as_list())
        self.output_sets(kw, outputs)
        return "ran"

    def _assertNamesAnArgument(self, error, names):
        message = getattr(error, "message", str(error))
        self.assertTrue(
            any(re.search(rf"\b{re.escape(n)}\b", message) for n in names), msg=f"error names no argument: {message}"
        )


class GeneratorTestCase(GeneratorContract, tf.test.TestCase):
    """The contract checks as a test case: subclass it, set `generator` (and `arguments`).
    The checks run on `device` (None: TensorFlow's placement, a GPU where one is visible);
    the CPU == GPU check runs where a GPU is visible."""

    def setUp(self):
        super().setUp()
        if not self.device:
            return
        scope = tf.device(self.device)
        scope.__enter__()
        self.addCleanup(scope.__exit__, None, None, None)
