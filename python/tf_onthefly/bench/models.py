"""The models the input benchmark trains (its configurations), defined once; the tests train
them too."""

from typing import Callable, Sequence

import tensorflow as tf


def mlp(input_dim: int, outputs: int, hidden: Sequence[int] = (64, 64)) -> tf.keras.Model:
    """Dense ReLU layers on `input_dim` features (the bench's small_mlp: mlp(16, 1),
    16 -> 64 -> 64 -> 1)."""
    layers = [tf.keras.Input((input_dim,))]
    layers += [tf.keras.layers.Dense(h, activation="relu") for h in hidden]
    return tf.keras.Sequential(layers + [tf.keras.layers.Dense(outputs)])


def cnn(input_shape: Sequence[int], classes: int, dense: int = 0) -> tf.keras.Model:
    """Two conv + max-pool stages, then (optionally) a dense layer and the class logits."""
    layers = [
        tf.keras.Input(tuple(input_shape)),
        tf.keras.layers.Conv2D(16, 3, activation="relu"),
        tf.keras.layers.MaxPooling2D(),
        tf.keras.layers.Conv2D(32, 3, activation="relu"),
        tf.keras.layers.MaxPooling2D(),
        tf.keras.layers.Flatten(),
    ]
    if dense:
        layers.append(tf.keras.layers.Dense(dense, activation="relu"))
    return tf.keras.Sequential(layers + [tf.keras.layers.Dense(classes)])


def train_step(model: tf.keras.Model, loss_fn: Callable, optimizer) -> Callable:
    """apply(x, y) -> loss: one gradient step of `model` on a batch (not yet a tf.function)."""

    def apply(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
        return loss

    return apply
