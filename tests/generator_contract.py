"""Contract tests every generator op must pass, written once (mix into a DeviceTestCase).

A test class sets `generate(batch_size, seed, step, first_sample=0, num_samples=None,
**tensor_inputs)` returning a tuple of tensors, `batch_size` (small, for CPU runs) and, for
a generator with tensor inputs of its own, `tensor_inputs` (input name -> a valid value,
the default of `generate`).
"""

import numpy as np
import tensorflow as tf

from tf_onthefly.bench import models

import device_util


def bits(t):
    """An array whose equality means bit-identity (floats compared by their bits)."""
    a = np.asarray(t)
    return a.view(f"u{a.dtype.itemsize}") if a.dtype.kind == "f" or a.dtype.name == "bfloat16" else a


def assert_bits_equal(test, a, b, msg=None):
    """Sequences of arrays/tensors `a` and `b` are equal bit for bit, element by element."""
    test.assertEqual(len(a), len(b))
    for x, y in zip(a, b):
        test.assertAllEqual(bits(x), bits(y), msg=msg)


def train_and_score(model, make_batch, steps, learning_rate, held_out):
    """Trains a classifier on a generator: Adam on make_batch(step) -> (x, y), y of shape
    [n, 1] with class ids, one step per batch; returns its accuracy on held_out = (x, y)."""
    apply = models.train_step(
        model, tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True), tf.keras.optimizers.Adam(learning_rate)
    )
    train_step = tf.function(lambda step: apply(*make_batch(step)))
    for step in range(steps):
        train_step(tf.constant(step, tf.int64))
    x, y = held_out
    return float(np.mean(np.argmax(model(x), axis=1) == y.numpy()[:, 0]))


def _load_has_xla():
    from tf_onthefly import _load

    return _load.HAS_XLA


class GeneratorContract:
    batch_size = 24
    tensor_inputs = {}

    def generate(self, batch_size, seed, step, first_sample=0, num_samples=None, **tensor_inputs):
        raise NotImplementedError

    def assertBitsEqual(self, a, b, msg=None):
        assert_bits_equal(self, a, b, msg)

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
            (dict(step=[1, 2]), "step must be an int64 scalar, got shape [2]"),
            (
                dict(first_sample=2, num_samples=self.batch_size),
                "first_sample must be in [0, batch_size - num_samples]",
            ),
            (dict(num_samples=self.batch_size + 1), "num_samples must be -1 (the whole batch)"),
        ]

        def call(batch_size=self.batch_size, seed=1, step=0, **kw):
            return self.generate(batch_size, seed, step, **kw)

        self.assertRefuses(call, cases, graph=False)

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
        would trade the loop's control with the GPU's part every iteration). In the CPU
        variant the loop runs on a second CPU device of the tf.compat.v1.Session, which a node on the
        host's /CPU:0 would split from just as it splits a GPU's part."""
        n = self.batch_size
        device = "/GPU:0" if device_util.device() == "gpu" else "/CPU:1"
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
        # The Session's fetches are received on /CPU:0 after the loop; what counts is which
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

        gpu = [k for k in kernels.get_registered_kernels_for_op(self._op_name()).kernel if k.device_type == "GPU"]
        self.assertNotEmpty(gpu)
        for k in gpu:
            self.assertEqual(list(k.host_memory_arg), ["first_sample"])

    def test_contract_tensor_input_shape_and_dtype_refused(self):
        """Each of the generator's own tensor inputs with a rank too many, or as a tensor of
        another dtype: an InvalidArgumentError naming the input, eagerly and when tracing."""
        from tensorflow.python.framework import op_def_registry

        if not self.tensor_inputs:
            self.skipTest("no tensor inputs")
        op = self._op_name()
        dtypes = {a.name: tf.as_dtype(a.type) for a in op_def_registry.get(op).input_arg[3:]}
        for name, value in self.tensor_inputs.items():
            other = tf.float64 if dtypes[name] != tf.float64 else tf.float32
            cases = [
                ({name: np.asarray(value)[None]}, f"{name} must have shape"),
                ({name: tf.cast(tf.constant(value), other)}, f"{name} must be a {dtypes[name].name} tensor"),
            ]
            self.assertRefuses(lambda **kw: self.generate(self.batch_size, 1, 0, **kw), cases)

    def test_contract_tensor_inputs_from_variables(self):
        """Tensor inputs read from variables inside a tf.function (and under XLA, as custom
        call operands) give the batch their values give; a new value changes the batch
        without a retrace."""
        if not self.tensor_inputs:
            self.skipTest("no tensor inputs")
        n = self.batch_size
        variables = {k: tf.Variable(v) for k, v in self.tensor_inputs.items()}
        traces = []

        def make():
            traces.append(1)
            return self.generate(n, [3, 4], 9, **{k: v.read_value() for k, v in variables.items()})

        compiled = [tf.function(make)] + ([tf.function(make, jit_compile=True)] if _load_has_xla() else [])
        for scale in (1.0, 0.5):
            values = {k: (np.asarray(v) * scale).astype(v.dtype.as_numpy_dtype) for k, v in variables.items()}
            for k, v in values.items():
                variables[k].assign(v)
            expected = self.generate(n, [3, 4], 9, **values)
            for f in compiled:
                self.assertBitsEqual(f(), expected, msg=f"scale {scale}")
        self.assertLen(traces, len(compiled))

    def _op_name(self):
        graph = tf.function(lambda: self.generate(self.batch_size, 1, 2)).get_concrete_function().graph
        (op,) = {op.type for op in graph.get_operations() if op.type.startswith("OnTheFly>")}
        return op

    @device_util.DeviceTestCase.require_xla
    def test_contract_xla_equals_tf_kernels(self):
        """Under tf.function(jit_compile=True) the op runs as an XLA custom call (the SDK's FFI
        handler on the test's device); every output equals the TF kernel's, bit for bit."""
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

    @device_util.DeviceTestCase.require_gpu
    def test_contract_cpu_equals_gpu(self):
        n = self.gpu_batch_size if hasattr(self, "gpu_batch_size") else 4096
        with tf.device("/CPU:0"):
            cpu = self.generate(n, [9, 9], 12345, first_sample=0)
        with tf.device("/GPU:0"):
            gpu = self.generate(n, [9, 9], 12345, first_sample=0)
        self.assertIn("GPU", gpu[0].device)
        self.assertBitsEqual(cpu, gpu)
