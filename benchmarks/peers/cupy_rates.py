"""CuPy's float32 uniform and normal generators, timed as peer_rates.py asks (one JSON line).

    python -m benchmarks.peers.cupy_rates [--floats N] [--repeats 7] [--unroll 20] [--smoke]

GPU only: CuPy has no CPU device, so without a GPU it reports nothing.
"""

import cupy

from benchmarks.peers.common import arguments, report, seconds_per_output


def main():
    args = arguments(__doc__.split("\n")[0])
    results = {}
    for name, fn in (
        ("cupy.random.random", cupy.random.random),
        ("cupy.random.standard_normal", cupy.random.standard_normal),
    ):
        results[f"{name} (CuPy {cupy.__version__})"] = seconds_per_output(
            lambda fn=fn: fn(args.floats, dtype=cupy.float32), lambda _: cupy.cuda.Device().synchronize(), args
        )
    report(results)


if __name__ == "__main__":
    main()
