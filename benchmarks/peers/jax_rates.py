"""JAX's float32 uniform and normal generators (threefry), timed as peer_rates.py asks (one
JSON line).

    python -m benchmarks.peers.jax_rates [--floats N] [--repeats 7] [--unroll 20] [--smoke]

On JAX's default device. Each output takes its own key, split before the clock starts.
"""

import itertools

import jax
import jax.numpy as jnp

from benchmarks.peers.common import arguments, report, seconds_per_output


def main():
    args = arguments(__doc__.split("\n")[0])
    results = {}
    for name, fn in (("jax.random.uniform", jax.random.uniform), ("jax.random.normal", jax.random.normal)):
        f = jax.jit(lambda k, fn=fn: fn(k, (args.floats,), dtype=jnp.float32))
        keys = itertools.cycle(jax.random.split(jax.random.key(1), 64))
        device = jax.devices()[0].platform
        results[f"{name} (JAX {jax.__version__}, threefry, {device})"] = seconds_per_output(
            lambda f=f: f(next(keys)), lambda y: y.block_until_ready(), args
        )
    report(results)


if __name__ == "__main__":
    main()
