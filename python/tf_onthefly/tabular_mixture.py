"""tabular_mixture: tabular features from a mixture of Gaussian clusters, with class labels."""

from typing import Optional, Tuple, Union

import tensorflow as tf

from tf_onthefly._generator import call_generator, register


def tabular_mixture(
    batch_size: int,
    feature_dim: int,
    seed: Union[int, Tuple[int, int], tf.Tensor],
    step: Union[int, tf.Tensor],
    *,
    num_classes: int = 3,
    cluster_std: float = 1.0,
    separation: float = 3.0,
    task_seed: int = 0,
    first_sample: Union[int, tf.Tensor] = 0,
    num_samples: Optional[int] = None,
    name: Optional[str] = None,
) -> Tuple[tf.Tensor, tf.Tensor]:
    """Features from one Gaussian cluster per class, and the class (a learnable tabular task).

    Each sample's class is uniform in [0, num_classes); its features are that class's mean
    (uniform in [-separation, separation) per feature, fixed by task_seed for every data seed
    and step) plus cluster_std times standard normals.

    Args:
      batch_size, seed, step, first_sample, num_samples, name: as in `random_batch`.
      feature_dim: features per sample, in [1, 65536].
      num_classes: classes, in [1, 2^20].
      cluster_std: the spread of each cluster, in [0, 1e37].
      separation: the spread of the means, in [0, 1e37].
      task_seed: picks the clusters.

    Returns:
      features float32 `[n, feature_dim]`, labels int32 `[n, 1]`.
    """
    return tuple(
        call_generator(
            "OnTheFly>TabularMixture",
            batch_size,
            seed,
            step,
            first_sample=first_sample,
            num_samples=num_samples,
            name=name,
            feature_dim=feature_dim,
            num_classes=num_classes,
            cluster_std=cluster_std,
            separation=separation,
            task_seed=task_seed,
        )
    )


register(
    "OnTheFly>TabularMixture",
    tabular_mixture,
    examples=[
        dict(batch_size=8, feature_dim=4),
        dict(batch_size=65, feature_dim=10, num_classes=7, cluster_std=0.5),  # a partial last item
        dict(batch_size=12, feature_dim=3, first_sample=5, num_samples=6),
    ],
)
