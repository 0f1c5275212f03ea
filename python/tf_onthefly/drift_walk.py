"""drift_walk: walks whose drift is their class's, from a block-cooperative CUDA kernel
(docs/bringing-a-kernel.md)."""

from tf_onthefly._generator import call_generator, register


def drift_walk(batch_size, length, up_probability, seed, step, **common):
    """Walks of `length` +1/-1 steps, int32 `[n, length]`, and their classes, int32 `[n, 1]`.

    A walk of class c steps up with probability `up_probability[c]` (float32 `[classes]`,
    values in [0, 1]: a tensor, a variable or a list; a variable updated between steps
    changes the walks without retracing). `common`: first_sample, num_samples, name."""
    return tuple(
        call_generator(
            "OnTheFly>DriftWalk", batch_size, seed, step, length=length, up_probability=up_probability, **common
        )
    )


register(
    "OnTheFly>DriftWalk",
    drift_walk,
    examples=[
        dict(batch_size=8, length=10, up_probability=[0.3, 0.7]),
        dict(batch_size=33, length=300, up_probability=[0.1, 0.5, 0.9]),
        dict(batch_size=5, length=5000, up_probability=[0.45, 0.55]),  # three tiles: scratch
        dict(batch_size=40, length=2049, up_probability=[0.5], first_sample=7, num_samples=20),
    ],
)
