"""Keras 3 on any backend: a model trained on batches that a tf_onthefly generator makes inside
the compiled train step, under KERAS_BACKEND=tensorflow, jax or torch alike, the same batch
for the same step on each (docs/training.md, "Keras 3 on JAX or PyTorch").

    import keras
    from tf_onthefly import keras as otf_keras

    teacher = otf_keras.generators()["teacher_task"]     # the backend's front end
    model = otf_keras.GeneratorModel(
        keras.Sequential([keras.layers.Dense(64, activation="relu"), keras.layers.Dense(4)]),
        lambda step: teacher(32, 16, seed=1, step=step),
    )
    model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  jit_compile=True)
    model.fit(otf_keras.steps(), steps_per_epoch=100, epochs=3)

`fit` reads step numbers (`steps(start)`: one per train step, counting on across epochs; a
run resumes at the step it stopped at), and the train step generates the batch of that
step on the device that runs it: no batch crosses from the host. For TensorFlow alone,
tf_onthefly.data.GeneratorModel keeps the step in the model (no input at all) and supports
steps_per_execution and tf.distribute (docs/training.md).
"""

import itertools

import keras
import numpy as np

BACKEND = keras.backend.backend()


def generators() -> dict:
    """The generators of the running Keras backend's front end: name -> function
    (tf_onthefly.GENERATORS, tf_onthefly.jax.GENERATORS or tf_onthefly.torch.GENERATORS)."""
    if BACKEND == "tensorflow":
        import tf_onthefly

        return tf_onthefly.GENERATORS
    if BACKEND == "jax":
        import tf_onthefly.jax

        return tf_onthefly.jax.GENERATORS
    if BACKEND == "torch":
        import tf_onthefly.torch

        return tf_onthefly.torch.GENERATORS
    raise ValueError(f"tf_onthefly has no front end for the Keras backend {BACKEND!r} (tensorflow, jax or torch)")


def steps(start: int = 0):
    """fit's input: the step numbers start, start + 1, ... (one per train step, in batches of
    one), endless: give fit `steps_per_epoch`. The TensorFlow backend gets a tf.data pipeline
    (int64); JAX and PyTorch a Python iterator of NumPy arrays (int32 for JAX without
    jax_enable_x64, so a run counts to 2^31 - 1 there; int64 otherwise)."""
    if BACKEND == "tensorflow":
        import tensorflow as tf

        return tf.data.Dataset.range(start, 2**62).batch(1)
    dtype = np.int64
    if BACKEND == "jax":
        import jax

        dtype = np.int64 if jax.config.read("jax_enable_x64") else np.int32
    return ((np.asarray([s], dtype),) for s in itertools.count(start))


class GeneratorModel(keras.Model):
    """Wraps a Keras model so fit trains on the batches `generator(step)` makes inside the
    train step (and evaluate tests on them).

    Args:
      model: the model to train (its input is the generator's first output).
      generator: step (a scalar integer tensor of the backend) -> (x, y) or (x, y,
        sample_weight); a function of the backend's front end (generators()).
      eval_generator: the same for evaluate()/validation. Default: generator.

    predict() and __call__ take real inputs and are the wrapped model's.
    """

    def __init__(self, model, generator, eval_generator=None, **kwargs):
        super().__init__(**kwargs)
        self.model = model
        self.generator = generator
        self.eval_generator = eval_generator or generator

    def call(self, inputs, training=False):
        return self.model(inputs, training=training)

    def batch(self, step, generator=None):
        """The batch of `step` (a Python integer or a scalar integer tensor)."""
        return tuple((generator or self.generator)(step))

    @staticmethod
    def _step(data):
        ticks = data[0] if isinstance(data, tuple) else data
        return keras.ops.reshape(ticks, ())

    def _symbolic_build(self, iterator=None, data_batch=None):
        # Keras builds the compiled loss and metrics from one element of the data; ours are
        # step numbers, so it builds from a generated batch instead (Keras 3's hook).
        del iterator, data_batch
        return super()._symbolic_build(data_batch=self.batch(0))

    if BACKEND == "jax":

        def train_step(self, state, data):
            return super().train_step(state, self.batch(self._step(data)))

        def test_step(self, state, data):
            return super().test_step(state, self.batch(self._step(data), self.eval_generator))

    else:

        def train_step(self, data):
            return super().train_step(self.batch(self._step(data)))

        def test_step(self, data):
            return super().test_step(self.batch(self._step(data), self.eval_generator))
