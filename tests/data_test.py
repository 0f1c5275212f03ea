"""Training integration: the three paths train with model.fit, resume exactly, report drift."""

import os
import tempfile

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
# prefetch thread is still calling the generator.
_EXIT_SCRIPT = """
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
"""


class SimplePathExitTest(tf.test.TestCase):
    def test_exit_with_a_prefetching_iterator_alive(self):
        """An iterator deleted while its prefetch thread waits for the GIL to call the
        generator deadlocks (the deleting thread holds the GIL): without from_python's exit
        hook, 6 runs in 15 of this script hung at exit on a busy two-core machine. Each run
        must end, and say True."""
        import subprocess
        import sys

        env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), CUDA_VISIBLE_DEVICES="")
        script = os.path.join(self.get_temp_dir(), "exit_script.py")  # a file: AutoGraph reads its source
        with open(script, "w") as f:
            f.write(_EXIT_SCRIPT)
        for run in range(6):
            try:
                done = subprocess.run([sys.executable, script], env=env, capture_output=True, text=True, timeout=120)
            except subprocess.TimeoutExpired:
                self.fail(f"run {run}: the process did not exit within 120 s")
            self.assertEqual(done.returncode, 0, done.stderr[-2000:])
            self.assertIn("True", done.stdout)


if __name__ == "__main__":
    tf.test.main()
