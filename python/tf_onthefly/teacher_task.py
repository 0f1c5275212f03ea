"""teacher_task: a learnable synthetic task, labels from a fixed random teacher network."""

from typing import Optional, Tuple, Union

import tensorflow as tf

from tf_onthefly._generator import call_generator, register


def teacher_task(
    batch_size: int,
    feature_dim: int,
    seed: Union[int, Tuple[int, int], tf.Tensor],
    step: Union[int, tf.Tensor],
    *,
    task: str = "classification",
    num_classes: int = 4,
    hidden: int = 32,
    noise: float = 0.0,
    task_seed: int = 0,
    distribution: str = "normal",
    label_dtype: Optional[tf.DType] = None,
    first_sample: Union[int, tf.Tensor] = 0,
    num_samples: Optional[int] = None,
    name: Optional[str] = None,
) -> Tuple[tf.Tensor, tf.Tensor]:
    """Features and the labels a fixed random teacher gives them (a student can learn it).

    The teacher is a two-layer ReLU network, `o = W2 relu(W1 x + b1)`, whose weights are a
    pure function of `task_seed`: the same task for every data `seed` and `step`.

    Args:
      batch_size, seed, step, first_sample, num_samples, name: as in `random_batch`.
      feature_dim: features per sample, in [1, 65536].
      task: "classification" (label = argmax o) or "regression" (label = o[0] + noise).
      num_classes: classes for classification, in [2, 64].
      hidden: the teacher's hidden units, in [1, 4096].
      noise: classification: probability that a label is replaced by a uniformly random
        class, in [0, 1]; regression: standard deviation of added Gaussian noise (>= 0).
      task_seed: picks the teacher.
      distribution: features "normal" (standard) or "uniform" (in [-1, 1)).
      label_dtype: tf.int32 (classification default), tf.int64, or tf.float32
        (required for, and the default of, regression).

    Returns:
      features float32 `[num_samples, feature_dim]`, labels `[num_samples, 1]`.
    """
    if label_dtype is None:
        label_dtype = tf.int32 if task == "classification" else tf.float32
    return tuple(
        call_generator(
            "OnTheFly>TeacherTask",
            batch_size,
            seed,
            step,
            first_sample=first_sample,
            num_samples=num_samples,
            name=name,
            feature_dim=feature_dim,
            task=task,
            num_classes=num_classes,
            hidden=hidden,
            noise=noise,
            task_seed=task_seed,
            distribution=distribution,
            label_dtype=label_dtype,
        )
    )


register(
    "OnTheFly>TeacherTask",
    teacher_task,
    examples=[
        dict(batch_size=8, feature_dim=4),
        dict(batch_size=300, feature_dim=17, num_classes=5, noise=0.1),
        dict(batch_size=64, feature_dim=8, task="regression", noise=0.3),
    ],
)
