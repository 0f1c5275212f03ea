"""random_walk: the tutorial generator (docs/writing-a-generator.md)."""

from tf_onthefly._generator import call_generator, register


def random_walk(batch_size, length, seed, step, **common):
    """Walks of `length` +1/-1 steps, int32 `[n, length]`, and labels int32 `[n, 1]`
    (1 if the walk ends above 0). `common`: first_sample, num_samples, name."""
    return tuple(call_generator("OnTheFly>RandomWalk", batch_size, seed, step, length=length, **common))


register(
    "OnTheFly>RandomWalk",
    random_walk,
    examples=[
        dict(batch_size=8, length=10),
        dict(batch_size=33, length=300),
    ],
)
