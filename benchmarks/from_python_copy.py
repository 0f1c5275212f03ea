"""What from_python's copy of each batch costs, per MiB (run on the CPU: it is host work).

    python -m benchmarks.from_python_copy [--mib 1,16,64] [--rounds 5] [--smoke]

A generator that refills one NumPy array per batch would change batches already handed out
if TensorFlow used the array's memory in place, which it does for memory aligned to 64
bytes (and copies otherwise). from_python therefore copies every field its generator may
still write into aligned memory that TensorFlow then uses in place: one copy a batch. Here a
generator yields the same array, 64-byte aligned or 16 bytes past that, and a batch is
taken from the dataset (prefetch off) with the copy and without it (the copy replaced by
nothing: what from_python did before it copied), in interleaved rounds; printed: the median
milliseconds a batch and the difference per MiB, and the bare copy (NumPy) per MiB.
--smoke: toy sizes.
"""

import argparse
import json

import numpy as np
import tensorflow as tf

from tf_onthefly import data
from tf_onthefly.bench import timing


def refilled(mib, offset):
    """A generator yielding one float32 array of `mib` MiB, `offset` bytes past 64-byte alignment."""
    count = mib * 2**20 // 4
    buf = np.empty(count * 4 + 128, np.uint8)
    start = (-buf.ctypes.data) % 64 + offset
    arr = buf[start : start + count * 4].view(np.float32)
    arr[...] = 1.0

    def gen():
        while True:
            yield (arr,)

    return gen, tf.TensorSpec([count], tf.float32)


def batch_ms(mib, offset, copy, calls):
    gen, spec = refilled(mib, offset)
    handed_over = data._handed_over
    if not copy:
        data._handed_over = lambda arrays: arrays
    try:
        it = iter(data.from_python(gen, (spec,), prefetch=False))
        times = timing.call_times(lambda: next(it), calls, warmup=2)
    finally:
        data._handed_over = handed_over
    return [t * 1e3 for t in times]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mib", default="1,16,64")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=20, help="batches per round and variant")
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    sizes = [1] if args.smoke else [int(m) for m in args.mib.split(",")]
    rounds, calls = (1, 3) if args.smoke else (args.rounds, args.calls)
    rows = []
    for mib in sizes:
        for offset in [0, 16]:
            samples = {True: [], False: []}
            for _ in range(rounds):
                for copy in [False, True]:
                    samples[copy] += batch_ms(mib, offset, copy, calls)
            with_copy, without = timing.summary(samples[True]), timing.summary(samples[False])
            rows.append(
                dict(
                    mib=mib,
                    offset=offset,
                    ms_with_copy=with_copy,
                    ms_without=without,
                    extra_ms_per_mib=(with_copy["median"] - without["median"]) / mib,
                )
            )
            print(
                f"{mib:4d} MiB, {offset:2d} bytes past 64: {with_copy['median']:8.3f} ms a batch with the copy "
                f"(+-{with_copy['spread']:.0%}), {without['median']:8.3f} without (+-{without['spread']:.0%}): "
                f"{rows[-1]['extra_ms_per_mib']:+.3f} ms per MiB",
                flush=True,
            )
        src = np.ones(mib * 2**20 // 4, np.float32)
        bare = timing.summary(timing.call_times(lambda: data._aligned_copy(src), rounds * calls))
        rows.append(dict(mib=mib, bare_copy_ms_per_mib=bare["median"] * 1e3 / mib, spread=bare["spread"]))
        print(f"{mib:4d} MiB: the bare copy {rows[-1]['bare_copy_ms_per_mib']:.3f} ms per MiB", flush=True)
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
