"""Training integration: the three paths train with model.fit, resume exactly, report drift."""

import os
import tempfile
import weakref

import numpy as np
import tensorflow as tf
from tensorflow.python.framework import config as tf_config  # disable_op_determinism

import tf_onthefly
from tf_onthefly import data
from tf_onthefly.bench import models

import device_util

SEED = 3


def teacher(step):
    return tf_onthefly.teacher_task(128, 16, seed=SEED, step=step, task_seed=1)


make_model = device_util.make_model


def compile_(model, **kwargs):
    model.compile(
        optimizer=tf.keras.optimizers.Adam(3e-3),
        loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        **kwargs,
    )
    return model


class TrainingPathsTest(device_util.DeviceTestCase):
    def assertLossFalls(self, history):
        loss = history.history["loss"]
        self.assertLess(loss[-1], 0.8 * loss[0], msg=str(loss))

    def test_simple_path_fit(self):
        def gen():
            rng = np.random.default_rng(0)
            for _ in range(400):
                x = rng.standard_normal((64, 16), dtype=np.float32)
                yield x, (x[:, :4].argmax(1)[:, None]).astype(np.int32)

        sig = (tf.TensorSpec([64, 16], tf.float32), tf.TensorSpec([64, 1], tf.int32))
        model = compile_(make_model())
        self.assertLossFalls(model.fit(data.from_python(gen, sig), epochs=4, steps_per_epoch=100, verbose=0))

    def test_host_path_fit(self):
        model = compile_(make_model())
        self.assertLossFalls(model.fit(data.host_dataset(teacher), epochs=4, steps_per_epoch=50, verbose=0))

    def test_device_path_fit_every_generator(self):
        model = compile_(data.GeneratorModel(make_model(), teacher))
        history = model.fit(data.device_dataset(), epochs=4, steps_per_epoch=50, verbose=0)
        self.assertLossFalls(history)
        self.assertEqual(int(model.data_step.numpy()), 200)
        # evaluate() takes step numbers from its dataset and the eval generator
        model.evaluate(data.device_dataset(3), verbose=0)

        # the same wrapper trains on every registered generator (its canonical example): the
        # first output, flattened, as the input; the second as a float regression target
        for name, spec in tf_onthefly.REGISTRY.items():
            with self.subTest(generator=name):

                def gen(step, spec=spec):
                    outs = spec.fn(**spec.examples[0], seed=1, step=step)
                    x = tf.reshape(tf.cast(outs[0], tf.float32), [outs[0].shape[0], -1])
                    return x, tf.cast(outs[1], tf.float32)

                width = gen(tf.constant(0, tf.int64))[0].shape[1]
                m = data.GeneratorModel(models.mlp(width, 1, hidden=(8,)), gen)
                m.compile(optimizer="adam", loss="mse")
                m.fit(data.device_dataset(), epochs=1, steps_per_epoch=3, verbose=0)
                self.assertEqual(int(m.data_step.numpy()), 3)


def fit(model, epochs, callbacks=(), initial_epoch=0, steps=10):
    return model.fit(
        data.device_dataset(),
        epochs=epochs,
        steps_per_epoch=steps,
        verbose=0,
        callbacks=list(callbacks),
        initial_epoch=initial_epoch,
    )


class Interrupt(tf.keras.callbacks.Callback):
    """Stops fit() after the second epoch, as a preemption would."""

    def on_epoch_end(self, epoch, logs=None):
        if epoch == 1:
            raise RuntimeError("simulated preemption")


class ResumeTest(device_util.DeviceTestCase):
    def setUp(self):
        super().setUp()
        # Bit-exact weights need deterministic kernels. Keras turns XLA off while this is on,
        # and it is process-wide: XlaTrainingTest runs without it.
        tf.config.experimental.enable_op_determinism()
        self.addCleanup(tf_config.disable_op_determinism)

    def test_checkpoint_resume_is_exact(self):
        full = compile_(data.GeneratorModel(make_model(), teacher))
        fit(full, 4)

        first = compile_(data.GeneratorModel(make_model(), teacher))
        fit(first, 2)
        path = tf.train.Checkpoint(model=first, optimizer=first.optimizer).save(
            os.path.join(tempfile.mkdtemp(), "ckpt")
        )

        resumed = compile_(data.GeneratorModel(make_model(), teacher))
        resumed.optimizer.build(resumed.trainable_variables)
        tf.train.Checkpoint(model=resumed, optimizer=resumed.optimizer).restore(path).assert_existing_objects_matched()
        self.assertEqual(int(resumed.data_step.numpy()), 20)
        # the next batch is the uninterrupted run's batch 20, tensor for tensor
        for a, b in zip(teacher(tf.constant(20, tf.int64)), resumed.generator(tf.convert_to_tensor(resumed.data_step))):
            self.assertAllEqual(a, b)
        fit(resumed, 4, initial_epoch=2)
        self.assertEqual(int(resumed.data_step.numpy()), 40)
        for a, b in zip(full.get_weights(), resumed.get_weights()):
            self.assertAllEqual(a, b)  # same batches in the same order: same weights

    def test_backup_and_restore_is_exact(self):
        full = compile_(data.GeneratorModel(make_model(), teacher))
        fit(full, 4)

        backup = tf.keras.callbacks.BackupAndRestore(tempfile.mkdtemp())
        model = compile_(data.GeneratorModel(make_model(), teacher))
        with self.assertRaisesRegex(RuntimeError, "simulated preemption"):
            fit(model, 4, callbacks=[backup, Interrupt()])
        model = compile_(data.GeneratorModel(make_model(), teacher))  # a new process, say
        fit(model, 4, callbacks=[backup])
        self.assertEqual(int(model.data_step.numpy()), 40)
        for a, b in zip(full.get_weights(), model.get_weights()):
            self.assertAllEqual(a, b)

    def test_steps_per_execution_trains_the_same_steps(self):
        """N steps per call (Keras steps_per_execution, and its unrolled loop) generate and
        train on exactly the batches of N calls of one step: the same weights, bit for bit."""
        weights = {}
        for spe, unrolled in [(1, 1), (4, 1), (4, 2)]:
            model = compile_(data.GeneratorModel(make_model(), teacher), steps_per_execution=spe)
            model.unrolled_steps_per_execution = unrolled
            fit(model, 3, steps=12)
            self.assertEqual(int(model.data_step.numpy()), 36)
            weights[spe, unrolled] = model.get_weights()
        for key in [(4, 1), (4, 2)]:
            for a, b in zip(weights[1, 1], weights[key]):
                self.assertAllEqual(a, b, msg=str(key))

    def test_steps_per_execution_resume_is_exact(self):
        """An interrupted run with steps_per_execution=4 resumes (BackupAndRestore) at the data
        position and weights of an uninterrupted one."""
        full = compile_(data.GeneratorModel(make_model(), teacher), steps_per_execution=4)
        fit(full, 4, steps=12)

        backup = tf.keras.callbacks.BackupAndRestore(tempfile.mkdtemp())
        model = compile_(data.GeneratorModel(make_model(), teacher), steps_per_execution=4)
        with self.assertRaisesRegex(RuntimeError, "simulated preemption"):
            fit(model, 4, callbacks=[backup, Interrupt()], steps=12)
        self.assertEqual(int(model.data_step.numpy()), 24)
        model = compile_(data.GeneratorModel(make_model(), teacher), steps_per_execution=4)
        fit(model, 4, callbacks=[backup], steps=12)
        self.assertEqual(int(model.data_step.numpy()), 48)
        for a, b in zip(full.get_weights(), model.get_weights()):
            self.assertAllEqual(a, b)

    def test_run_steps_is_n_next_batches(self):
        """DataPosition.run_steps(fn, n) in one tf.function call = n calls of one step."""
        looped, stepped = data.DataPosition(teacher), data.DataPosition(teacher)

        @tf.function
        def many(n):
            return looped.run_steps(lambda batch: tf.reduce_sum(batch[0]), n)

        @tf.function
        def one():
            return tf.reduce_sum(stepped.next_batch()[0])

        last = many(tf.constant(5))
        for _ in range(5):
            expected = one()
        self.assertEqual(int(looped.step.numpy()), 5)
        self.assertEqual(int(stepped.step.numpy()), 5)
        self.assertAllEqual(last, expected)
        many(1)
        self.assertEqual(int(looped.step.numpy()), 6)
        # The loop counts in int32 (on the host): a count it cannot hold is refused, not wrapped.
        with self.assertRaisesRegex(tf.errors.InvalidArgumentError, "run_steps: num_steps must be below 2"):
            many(tf.constant(2**31, tf.int64))
        with self.assertRaisesRegex(ValueError, "run_steps: num_steps must be below 2"):
            tf.function(lambda: looped.run_steps(lambda batch: 0.0, 2**31))()
        self.assertEqual(int(looped.step.numpy()), 6)

    def test_host_iterator_checkpoint_resume(self):
        it = iter(data.host_dataset(teacher))
        next(it), next(it)
        ckpt = tf.train.Checkpoint(iterator=it)
        path = ckpt.save(os.path.join(tempfile.mkdtemp(), "it"))
        expected = next(it)
        it2 = iter(data.host_dataset(teacher))
        tf.train.Checkpoint(iterator=it2).restore(path)
        for a, b in zip(expected, next(it2)):
            self.assertAllEqual(a, b)

    def test_position_survives_retracing(self):
        pos = data.DataPosition(teacher)

        @tf.function(reduce_retracing=False)
        def step(scale):
            x, _ = pos.next_batch()
            return tf.reduce_sum(x) * scale

        step(tf.constant(1.0))
        step(tf.constant([1.0]))  # another input shape: a second trace
        step(tf.constant(1.0))
        self.assertGreaterEqual(step.experimental_get_tracing_count(), 2)
        self.assertEqual(int(pos.step.numpy()), 3)
        path = tf.train.Checkpoint(position=pos).save(os.path.join(tempfile.mkdtemp(), "pos"))
        pos2 = data.DataPosition(teacher)
        tf.train.Checkpoint(position=pos2).restore(path)
        self.assertEqual(int(pos2.step.numpy()), 3)


@device_util.DeviceTestCase.require_xla
class XlaTrainingTest(device_util.DeviceTestCase):
    """Training loops compiled by XLA: model.fit with jit_compile=True (what Keras's "auto"
    picks on a GPU) and DataPosition.run_steps under tf.function(jit_compile=True)."""

    def compile_xla(self, steps_per_execution):
        model = compile_(
            data.GeneratorModel(make_model(), teacher), jit_compile=True, steps_per_execution=steps_per_execution
        )
        self.assertTrue(model.jit_compile)  # Keras turns XLA off silently where it cannot use it
        return model

    def test_xla_fit_trains_and_resumes_exactly(self):
        """Generation is compiled into the steps; an interrupted run resumes at the
        uninterrupted run's data position, and so at its weights."""
        full = self.compile_xla(2)
        history = fit(full, 4)
        self.assertLess(history.history["loss"][-1], history.history["loss"][0])

        backup = tf.keras.callbacks.BackupAndRestore(tempfile.mkdtemp())
        model = self.compile_xla(2)
        with self.assertRaisesRegex(RuntimeError, "simulated preemption"):
            fit(model, 4, callbacks=[backup, Interrupt()])
        model = self.compile_xla(2)
        fit(model, 4, callbacks=[backup])
        self.assertEqual(int(model.data_step.numpy()), 40)
        for a, b in zip(full.get_weights(), model.get_weights()):
            if device_util.device() == "cpu":
                self.assertAllEqual(a, b)
            else:  # the batches are the same; XLA's GPU reductions need not be bit-reproducible
                self.assertAllClose(a, b, rtol=1e-5, atol=1e-6)

    def test_xla_execution_is_one_executable(self):
        """With XLA and no strategy, the loop of an execution (steps_per_execution=4) is
        compiled whole: the train function calls one XLA-compiled function, which holds the
        loop, generation included."""
        model = self.compile_xla(4)
        fit(model, 1, steps=4)
        graph = model.train_function.get_concrete_function(iter(data.device_dataset())).graph.as_graph_def()
        functions = {f.signature.name: f for f in graph.library.function}
        compiled = [n.attr["f"].func.name for n in graph.node if n.attr["_XlaMustCompile"].b]
        self.assertLen(compiled, 1)
        ops = {n.op for n in functions[compiled[0]].node_def}
        self.assertTrue(ops & {"While", "StatelessWhile"}, ops)
        inner = {n.op for f in graph.library.function for n in f.node_def}
        self.assertIn("OnTheFly>TeacherTask", inner)

    def test_xla_steps_in_one_call(self):
        """With XLA and steps_per_execution=4, GeneratorModel makes an execution's four batches
        in one generator call (steps_in_one_call "auto", a vector of four steps): the same
        batches as a call a step, so the same weights and data_step. A generator that does not
        stack a step vector's batches trains a call a step under "auto" and is refused under
        True."""
        ones = {}
        for mode in ("auto", False):
            model = compile_(
                data.GeneratorModel(make_model(), teacher, steps_in_one_call=mode),
                jit_compile=True,
                steps_per_execution=4,
            )
            self.assertEqual(model._generates_steps_in_one_call(4), mode == "auto")
            fit(model, 2, steps=8)
            self.assertEqual(int(model.data_step.numpy()), 16)
            ones[mode] = model.get_weights()
        for a, b in zip(ones["auto"], ones[False]):
            if device_util.device() == "cpu":
                self.assertAllEqual(a, b)
            else:  # the batches are the same; XLA's GPU reductions need not be bit-reproducible
                self.assertAllClose(a, b, rtol=1e-5, atol=1e-6)

        def one_batch(step):  # a vector of steps gets one batch, not one a step
            return teacher(tf.reduce_max(step))

        model = compile_(data.GeneratorModel(make_model(), one_batch), jit_compile=True, steps_per_execution=4)
        self.assertFalse(model._generates_steps_in_one_call(4))
        fit(model, 1, steps=4)
        self.assertEqual(int(model.data_step.numpy()), 4)
        model = compile_(
            data.GeneratorModel(make_model(), one_batch, steps_in_one_call=True),
            jit_compile=True,
            steps_per_execution=4,
        )
        with self.assertRaisesRegex(ValueError, "steps_in_one_call=True.*each step's batch, stacked"):
            fit(model, 1, steps=4)
        with self.assertRaisesRegex(ValueError, "steps_in_one_call must be 'auto', True or False"):
            data.GeneratorModel(make_model(), teacher, steps_in_one_call="yes")

    def test_run_steps_under_xla(self):
        """A DataPosition loop compiled by XLA (where the generator's launch may sit in a
        CUDA graph with the loop's other kernels) generates the batches of the plain loop,
        bit for bit."""
        plain, compiled = data.DataPosition(teacher), data.DataPosition(teacher)
        batch_and_sum = lambda batch: (*batch, tf.reduce_sum(batch[0]) + 1.0)  # noqa: E731 (more kernels around it)
        a = tf.function(lambda: plain.run_steps(batch_and_sum, 5))()
        b = tf.function(lambda: compiled.run_steps(batch_and_sum, 5), jit_compile=True)()
        for x, y in zip(a[:2], b[:2]):  # the last step's batch
            self.assertAllEqual(x, y)
        self.assertEqual(int(compiled.step.numpy()), 5)


def _refilled(dtype, offset):
    """A generator of 4 batches that refills one array, `offset` bytes past a 64-byte
    boundary (TensorFlow uses aligned memory in place), with k for batch k, as a native
    extension or NumPy code writing into a preallocated array does."""
    dtype = np.dtype(dtype)
    buf = np.empty(16 * dtype.itemsize + 128, np.uint8)
    start = (-buf.ctypes.data) % 64 + offset
    arr = buf[start : start + 16 * dtype.itemsize].view(dtype)

    def gen():
        for k in range(4):
            arr[...] = k
            yield (arr,)

    return gen


class SimplePathHandOverTest(tf.test.TestCase):
    """A batch never changes after it is yielded, whatever its generator does with the memory."""

    def assertBatches(self, batches, field=lambda b: b[0]):
        """Batch k holds k (as its dtype: True from batch 1 on for bool)."""
        firsts = [np.asarray(field(b)).ravel()[0] for b in batches]
        self.assertAllEqual(firsts, np.arange(4).astype(np.asarray(firsts).dtype))

    def test_refilled_array_gives_every_batch(self):
        """The generator writes batch k into the array it yielded for batch k - 1: read one by
        one or all at once, with and without prefetch, each batch is still k. On a 64-byte
        boundary from_python copies; 16 and 32 bytes past one, TensorFlow must."""
        for dtype in [np.float32, np.uint8, np.int64, np.float16, tf.bfloat16.as_numpy_dtype, np.bool_, np.complex64]:
            for offset in [0, 16, 32]:
                for prefetch in [False, True]:
                    with self.subTest(dtype=np.dtype(dtype).name, offset=offset, prefetch=prefetch):
                        spec = (tf.TensorSpec([16], tf.as_dtype(dtype)),)
                        ds = data.from_python(_refilled(dtype, offset), spec, prefetch=prefetch)
                        self.assertBatches([b for b in ds.take(4)])
                        self.assertBatches(list(ds.take(4)))

    def test_nested_structures_and_shared_memory(self):
        """A dict of pairs, the generator keeping the dict it yields and writing through it; a
        view of a bytearray it refills; a list yielded where an array stands."""
        memory = bytearray(64 * 4 + 64)
        state = {"a": (np.zeros(16, np.float32), np.zeros(2, np.int32)), "b": (np.zeros(3, np.float64),)}

        def gen():
            for k in range(4):
                state["a"][0][...] = k
                state["a"][1][...] = k
                state["b"][0][...] = k
                yield state

        spec = {
            "a": (tf.TensorSpec([16], tf.float32), tf.TensorSpec([2], tf.int32)),
            "b": (tf.TensorSpec([3], tf.float64),),
        }
        for prefetch in [False, True]:
            batches = list(data.from_python(gen, spec, prefetch=prefetch).take(4))
            self.assertBatches(batches, lambda b: b["a"][0])
            self.assertBatches(batches, lambda b: b["a"][1])
            self.assertBatches(batches, lambda b: b["b"][0])

        def views():
            for k in range(4):
                memory[:] = bytes([k]) * len(memory)
                yield np.frombuffer(memory, np.uint8)[:64], [float(k)] * 2

        spec = (tf.TensorSpec([64], tf.uint8), tf.TensorSpec([2], tf.float64))
        for prefetch in [False, True]:
            batches = list(data.from_python(views, spec, prefetch=prefetch).take(4))
            self.assertBatches(batches)
            self.assertBatches(batches, lambda b: b[1])

    def test_copied_only_where_tensorflow_would_share_memory_the_generator_holds(self):
        """Aligned arrays (TensorFlow would use their memory) are copied, once, into aligned
        memory, unless handed over whole: owning their memory, with no reference or weak
        reference left. Unaligned arrays and strings are left to TensorFlow, which copies them."""

        def owned_aligned():
            others = []  # kept until one lands on a 64-byte boundary
            while (a := np.arange(8.0)).ctypes.data % 64:
                others.append(a)
            return a

        held, watched, fresh = owned_aligned(), owned_aligned(), owned_aligned()
        ref = weakref.ref(watched)  # noqa: F841 (alive while the arrays are looked at)
        buf = np.zeros(64, np.float64)
        first = (-buf.ctypes.data) % 64 // 8
        aligned_view, unaligned_view = buf[first : first + 8], buf[first + 2 : first + 10]
        strings = np.array([b"x"], object)
        arrays = [fresh, held, watched, aligned_view, unaligned_view, strings]
        fresh_id = id(fresh)
        del fresh, watched
        out = data._handed_over(arrays)
        self.assertEqual(id(out[0]), fresh_id)
        self.assertIs(out[4], unaligned_view)
        self.assertIs(out[5], strings)
        for i, original in [(1, held), (3, aligned_view)]:
            self.assertIsNot(out[i], original)
            self.assertAllEqual(out[i], original)
            self.assertFalse(np.shares_memory(out[i], original))
            self.assertEqual(out[i].ctypes.data % 64, 0)
        self.assertIsNot(out[2], ref())


class SimplePathErrorsTest(tf.test.TestCase):
    SIG = (tf.TensorSpec([4, 3], tf.float32), tf.TensorSpec([4, 1], tf.int32))

    def _drain(self, gen):
        return [b for b in data.from_python(gen, self.SIG, prefetch=False)]

    def test_shape_drift_names_field_and_batch(self):
        def gen():
            for i in range(5):
                yield np.zeros((4, 3 if i != 3 else 5), np.float32), np.zeros((4, 1), np.int32)

        with self.assertRaisesRegex(Exception, r"batch 3: field 'features' has shape \[4, 5\], expected \(4, 3\)"):
            self._drain(gen)

    def test_dtype_drift_names_field_and_batch(self):
        def gen():
            for i in range(3):
                yield np.zeros((4, 3), np.float32), np.zeros((4, 1), np.int64 if i == 1 else np.int32)

        with self.assertRaisesRegex(Exception, "batch 1: field 'labels' has dtype int64, expected int32"):
            self._drain(gen)

    def test_early_stop_is_reported_not_truncated(self):
        def short():
            for _ in range(7):
                yield np.zeros((4, 3), np.float32), np.zeros((4, 1), np.int32)

        with self.assertRaisesRegex(Exception, "batch 7: the generator stopped after 7 batches, expected 10"):
            [b for b in data.from_python(short, self.SIG, num_batches=10, prefetch=False)]
        self.assertLen([b for b in data.from_python(short, self.SIG, num_batches=5, prefetch=False)], 5)

    def test_values_that_are_no_array_name_field_and_batch(self):
        for value, message in [
            ([[1.0, 2.0, 3.0]] * 3 + [[1.0]], r"batch 1: field 'features' cannot become an array \(ValueError"),
            (object(), r"batch 1: field 'features' has dtype object, expected float32"),
            (np.zeros((4, 3), np.longdouble), r"batch 1: field 'features' has dtype float128, expected float32"),
            (np.zeros((4, 3), [("a", "f4")]), r"batch 1: field 'features' has dtype \[\('a', '<f4'\)\]"),
        ]:
            with self.subTest(value=type(value).__name__):

                def gen(value=value):
                    yield np.zeros((4, 3), np.float32), np.zeros((4, 1), np.int32)
                    yield value, np.zeros((4, 1), np.int32)

                with self.assertRaisesRegex(Exception, message):
                    self._drain(gen)

        def single():
            yield np.zeros((4, 3), np.float32)

        with self.assertRaisesRegex(Exception, r"batch 0: structure differs .* expected 2 values \(a tuple or list\)"):
            self._drain(single)

    def test_num_batches_is_a_count(self):
        """num_batches is an integer >= 0; a float, a bool or a negative count is refused when
        the dataset is made, not read as some number of batches."""

        def gen():
            while True:
                yield np.zeros((4, 3), np.float32), np.zeros((4, 1), np.int32)

        self.assertLen(list(data.from_python(gen, self.SIG, num_batches=0)), 0)
        self.assertLen(list(data.from_python(gen, self.SIG, num_batches=np.int64(2))), 2)
        for bad, message in [
            (-1, "must be >= 0"),
            (2.5, "must be an integer, got 2.5"),
            (True, "must be an integer, got True"),
            ("3", "must be an integer, got '3'"),
        ]:
            with self.subTest(num_batches=bad):
                with self.assertRaisesRegex(tf.errors.InvalidArgumentError, "from_python: num_batches " + message):
                    data.from_python(gen, self.SIG, num_batches=bad)

    def test_generator_exception_keeps_its_traceback(self):
        def broken_generator():
            yield np.zeros((4, 3), np.float32), np.zeros((4, 1), np.int32)
            raise KeyError("sensor 17 missing")

        with self.assertRaises(Exception) as ctx:
            self._drain(broken_generator)
        message = str(ctx.exception)
        self.assertIn("sensor 17 missing", message)
        self.assertIn("broken_generator", message)  # the traceback names the generator
        self.assertIn("Traceback", message)


# A script that leaves a prefetching from_python iterator to the interpreter's exit while its
# prefetch thread is still calling the generator, or, with the argument "del", lets go of it
# (and of the tf.function that captured it) before the end.
_EXIT_SCRIPT = """
import sys
import numpy as np, tensorflow as tf
from tf_onthefly import data
rng = np.random.default_rng(0)
def batches():
    while True:
        yield rng.random((256, 256), dtype=np.float32), (rng.random((256, 1)) < 0.5).astype(np.float32)
spec = (tf.TensorSpec([256, 256], tf.float32), tf.TensorSpec([256, 1], tf.float32))
it = iter(data.from_python(batches, spec, prefetch=True))
@tf.function
def loop():
    acc = tf.constant(0.0)
    for _ in tf.range(3):
        acc += tf.reduce_sum(next(it)[0])
    return acc
print(float(loop()) > 0, flush=True)
if sys.argv[1:] == ["del"]:
    del loop, it
"""


class SimplePathExitTest(tf.test.TestCase):
    def run_script(self, runs, *args):
        """Runs _EXIT_SCRIPT `runs` times; each must end, and say True. Their stderr."""
        import subprocess
        import sys

        env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), CUDA_VISIBLE_DEVICES="")
        script = os.path.join(self.get_temp_dir(), "exit_script.py")  # a file: AutoGraph reads its source
        with open(script, "w") as f:
            f.write(_EXIT_SCRIPT)
        logs = []
        for run in range(runs):
            try:
                done = subprocess.run(
                    [sys.executable, script, *args], env=env, capture_output=True, text=True, timeout=120
                )
            except subprocess.TimeoutExpired:
                self.fail(f"run {run}: the process did not exit within 120 s")
            self.assertEqual(done.returncode, 0, done.stderr[-2000:])
            self.assertIn("True", done.stdout)
            logs.append(done.stderr)
        return logs

    def test_exit_with_a_prefetching_iterator_alive(self):
        """An iterator deleted while its prefetch thread waits for the GIL to call the
        generator deadlocks (the deleting thread holds the GIL): without from_python's exit
        hook, 6 runs in 15 of this script hung at exit."""
        self.run_script(6)

    def test_exit_after_letting_go_of_the_iterator_is_silent(self):
        """An iterator and tf.function deleted before the end (a reference cycle: freed by the
        exit hook's collection, while Python can still run the generator's cleanup) leave
        nothing in the log. Without that collection, TensorFlow logged 'Error occurred when
        finalizing GeneratorDataset iterator' in 4 runs of 10."""
        for log in self.run_script(3, "del"):
            self.assertNotIn("Error occurred when finalizing GeneratorDataset iterator", log)


if __name__ == "__main__":
    tf.test.main()
