"""Tests of tf_onthefly.teacher_task: reference, contract, statistics, learnability, bad input."""

import numpy as np
import tensorflow as tf
from hypothesis import strategies as st

from tf_onthefly import teacher_task, testing
from tf_onthefly.bench import models
from tf_onthefly.testing import arguments

import device_util
import reference as ref


def _features(key, samples, dim, normal):
    nb = (dim + 3) // 4
    w = ref.sample_words(key, samples, np.arange(nb))
    v = ref.normals(w) if normal else ref.symmetric(w, 1.0)
    return v.reshape(len(samples), nb * 4)[:, :dim].astype(np.float32)


def _matrix(key, rows, cols, scale):
    """Row r, column j: symmetric(word j of (key, sample r), scale)."""
    nb = (cols + 3) // 4
    w = ref.sample_words(key, np.arange(rows), np.arange(nb)).reshape(rows, nb * 4)[:, :cols]
    return ref.symmetric(w, scale)


def reference(
    batch_size,
    feature_dim,
    seed,
    step,
    task="classification",
    num_classes=4,
    hidden=32,
    noise=0.0,
    task_seed=0,
    distribution="normal",
    label_dtype=None,
    first_sample=0,
    num_samples=None,
):
    """OnTheFly>TeacherTask from the contract: features (stream 0), the teacher's weights
    (streams 100-102 under (task_seed, 0) at step 0) summed in the kernel's order with one
    rounding per operation, label noise (stream 1)."""
    samples = ref.samples(batch_size, first_sample, num_samples)
    rows = len(samples)
    x = _features(ref.derive_key(seed, 0, step), samples, feature_dim, distribution == "normal")
    outputs = num_classes if task == "classification" else 1
    f32 = np.float32
    w1 = _matrix(ref.derive_key([task_seed, 0], 100, 0), hidden, feature_dim, np.sqrt(f32(3.0) / f32(feature_dim)))
    b1 = ref.symmetric(ref.sample_words(ref.derive_key([task_seed, 0], 101, 0), np.arange(hidden), [0])[:, 0, 0], 0.5)
    w2 = _matrix(ref.derive_key([task_seed, 0], 102, 0), hidden, outputs, np.sqrt(f32(3.0) / f32(hidden)))
    logits = np.zeros((rows, outputs), np.float32)
    for h in range(hidden):
        acc = np.zeros(rows, np.float32)
        for j in range(feature_dim):  # the kernel's summation order, one rounding per op
            acc = (acc + (w1[h, j] * x[:, j]).astype(f32)).astype(f32)
        a = np.maximum((acc + b1[h]).astype(f32), f32(0.0))
        logits = (logits + (w2[h][None, :] * a[:, None]).astype(f32)).astype(f32)
    n = ref.sample_words(ref.derive_key(seed, 1, step), samples, [0])[:, 0, :]
    if task == "classification":
        labels = np.argmax(logits, axis=1)
        flip = ref.uniform01(n[:, 0]) < f32(noise)
        labels = np.where(flip, ref.uniform_below(n[:, 1], n[:, 2], outputs), labels)
        return x, labels.astype(label_dtype or np.int32).reshape(rows, 1)
    z0, _ = ref.box_muller(n[:, 0], n[:, 1])
    return x, (logits[:, 0] + (f32(noise) * z0).astype(f32)).astype(f32).reshape(rows, 1)


# The documented argument space (the contract's fuzz check draws from it).
ARGUMENTS = dict(
    feature_dim=arguments.sizes(),
    hidden=arguments.sizes(),
    task=arguments.one_of(["classification", "regression"]),
    num_classes=arguments.sizes(2, 64),
    noise=arguments.Arg(st.floats(0, 1), arguments.EDGE_FLOATS),
    task_seed=arguments.Arg(arguments.WORD, arguments.EDGE_INTS),
    distribution=arguments.one_of(["normal", "uniform"]),
    label_dtype=arguments.one_of([None, tf.int32, tf.int64, tf.float32]),
)


def output_sets(kw, outputs):
    """Finite features; class labels in [0, num_classes); finite regression labels."""
    features, labels = (t.numpy() for t in outputs)
    assert np.all(np.isfinite(features)) and np.all(np.isfinite(labels))
    if kw.get("task", "classification") == "classification":
        assert np.all((labels >= 0) & (labels < kw.get("num_classes", 4)))


class TeacherTaskTest(device_util.DeviceTestCase, testing.GeneratorContract):
    generator = "teacher_task"
    fuzz_arguments = ARGUMENTS
    output_sets = staticmethod(output_sets)
    gpu_batch_size = 1 << 16

    def generate(self, batch_size, seed, step, first_sample=0, num_samples=None):
        return teacher_task(
            batch_size,
            16,
            seed,
            step,
            noise=0.1,
            first_sample=first_sample,
            num_samples=num_samples,
        )

    def test_reference_bit_exact(self):
        for kw in [
            dict(),
            dict(distribution="uniform", noise=0.3, num_classes=7, task_seed=5, hidden=9),
            dict(task="regression", noise=0.5),
            dict(num_classes=64, hidden=3, feature_dim=1),
        ]:
            kw = dict(dict(feature_dim=13), **kw)
            f, l = teacher_task(40, seed=[3, 4], step=9, **kw)
            rf, rl = reference(40, kw.pop("feature_dim"), [3, 4], 9, **kw)
            self.assertBitsEqual([f, l], [rf, rl], msg=str(kw))

    def test_task_seed_is_a_64_bit_word(self):
        """task_seed 2**64 - 1 and -1 are the same word: the same teacher."""
        self.assertBitsEqual(
            teacher_task(64, 8, seed=1, step=0, task_seed=2**64 - 1), teacher_task(64, 8, seed=1, step=0, task_seed=-1)
        )

    def test_task_seed_picks_the_teacher(self):
        f0, l0 = teacher_task(2000, 8, seed=1, step=0, task_seed=0)
        f1, l1 = teacher_task(2000, 8, seed=1, step=0, task_seed=1)
        self.assertAllEqual(f0, f1)  # same data seed: same features
        self.assertLess(np.mean(l0.numpy() == l1.numpy()), 0.9)  # another teacher

    def test_label_noise_rate(self):
        _, clean = teacher_task(20000, 8, seed=2, step=0, num_classes=4)
        _, noisy = teacher_task(20000, 8, seed=2, step=0, num_classes=4, noise=0.4)
        # a flip picks a uniform class, so 3/4 of flips change the label
        self.assertNear(np.mean(clean.numpy() != noisy.numpy()), 0.4 * 0.75, 0.02)

    def test_regression_noise(self):
        _, y0 = teacher_task(20000, 8, seed=2, step=0, task="regression")
        _, y1 = teacher_task(20000, 8, seed=2, step=0, task="regression", noise=0.5)
        self.assertEqual(y1.dtype, tf.float32)
        self.assertNear(float(np.std(y1.numpy() - y0.numpy())), 0.5, 0.02)

    def test_student_learns_the_teacher(self):
        """A small Keras MLP beats the majority class by far (the task is learnable)."""
        tf.keras.utils.set_random_seed(0)
        model = models.mlp(16, 4)
        x, y = teacher_task(8192, 16, seed=2, step=0, task_seed=7)  # held out: another seed
        acc = device_util.train_and_score(
            model,
            lambda step: teacher_task(256, 16, seed=1, step=step, task_seed=7),
            steps=400,
            learning_rate=3e-3,
            held_out=(x, y),
        )
        majority = float(np.max(np.bincount(y.numpy()[:, 0], minlength=4)) / 8192)
        print(f"teacher_task: student accuracy {acc:.3f}, majority class {majority:.3f}")
        self.assertGreater(acc, 0.85)
        self.assertGreater(acc, majority + 0.2)

    def test_bad_input(self):
        cases = [
            (dict(feature_dim=0), "feature_dim must be in [1, 65536], got 0"),
            (dict(hidden=0), "hidden must be in [1, 4096], got 0"),
            (dict(num_classes=1), "num_classes must be in [2, 64] for task='classification', got 1"),
            (dict(num_classes=65), "got 65"),
            (dict(noise=1.5), "noise (the label flip probability) must be in [0, 1], got 1.5"),
            (
                dict(task="regression", noise=-1.0),
                "noise (the regression noise std) must be in [0, 1e+37] (so every label is finite), got -1",
            ),
            (
                dict(task="regression", label_dtype=tf.int32),
                "label_dtype must be float32 for task='regression', got int32",
            ),
            (dict(task="regression", noise=3e38), "noise (the regression noise std) must be in [0, 1e+37]"),
            (dict(task="regression", noise=-1.4e-45), "noise (the regression noise std) must be in [0, 1e+37]"),
            (dict(noise=-1.4e-45), "noise (the label flip probability) must be in [0, 1], got -1.4013e-45"),
            (dict(task_seed=2**64), "task_seed must be in [-2**63, 2**64), got 18446744073709551616"),
            (dict(task_seed=1.0), "task_seed must be an integer, got 1.0"),
        ]

        def call(feature_dim=4, **kw):
            return teacher_task(8, feature_dim, seed=1, step=0, **kw)

        self.assertRefuses(call, cases)

    @device_util.DeviceTestCase.require_gpu
    def test_normal_features_cpu_gpu(self):
        """Normal features and the labels computed from them: CPU == GPU bit for bit."""
        for task in ["classification", "regression"]:
            with tf.device("/CPU:0"):
                cpu = teacher_task(1 << 16, 32, seed=4, step=1, task=task)
            with tf.device("/GPU:0"):
                gpu = teacher_task(1 << 16, 32, seed=4, step=1, task=task)
            self.assertBitsEqual(cpu, gpu, msg=task)


if __name__ == "__main__":
    tf.test.main()
