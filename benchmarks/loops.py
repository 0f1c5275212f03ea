"""Op calls timed the way the benchmarks compare them: unrolled, in graph loops, interleaved.

One generator's calls are timed against another's in the same rounds, each round giving
every path one median, so a slow spell of a busy machine lands on all paths of a round and
drops out of their ratio (or difference). `unrolled` includes a tf.function's dispatch and
final sync (paid once for its calls); `graph_loop` is a training loop's steady state.
"""

import contextlib
import itertools

import tensorflow as tf

from tf_onthefly.bench import timing


def probe(outputs):
    """One element of an op's first output, as float32, so the op is not pruned. An int32
    output is read through a float32 view: TensorFlow runs int32 slices on the host, which
    would copy the whole batch to the host inside every timed call."""
    x = outputs[0]
    if x.dtype == tf.int32:
        x = tf.bitcast(x, tf.float32)
    return tf.cast(tf.reshape(x, [-1])[-1], tf.float32)


def unrolled(op, calls, device=None):
    """A callable running `op(step)` `calls` times in one tf.function, each call's probe
    returned. The steps are a tensor argument that moves on with every call: with constant
    steps Grappler would fold a stateless op away before it runs."""

    @tf.function
    def run(first):
        with tf.device(device):
            return tf.stack([probe(op(first + i)) for i in range(calls)])

    count = itertools.count()
    return lambda: run(tf.constant(next(count) * calls, tf.int64))


def graph_loop(op, steps, device=None, *, host_step=False, jit=False):
    """A tf.function running `op(i)` for i < `steps` in a tf.while_loop (TensorFlow's
    per-call work overlaps the previous call's kernels), returning the largest probe so no
    call is pruned. The counter is int32 against a constant count, kept on the host as
    DataPosition.run_steps keeps it (an int64 one costs a device-to-host wait a step).
    `device` pins the op and its probe (the placer may put a small op's whole step on the
    CPU otherwise). host_step: the int64 step is made on the CPU, as GeneratorModel keeps it
    for a generator that reads its step on the host (the device-array bridge). jit: the
    whole loop compiled by XLA (jit_compile=True)."""

    @tf.function(jit_compile=jit)
    def run():
        def body(i, acc):
            with tf.device("/CPU:0") if host_step else contextlib.nullcontext():
                step = tf.cast(i, tf.int64)
            with tf.device(device):
                return i + 1, tf.maximum(acc, probe(op(step)))

        return tf.while_loop(lambda i, _: i < steps, body, (tf.constant(0, tf.int32), tf.constant(0.0)))[1]

    return run


def _numpy(result):
    return result.numpy()


def timed_rounds(paths, rounds, repeats):
    """{name: [per-round median seconds per op call]}, the paths interleaved in rounds.

    paths: name -> (run, op calls per run) or (run, op calls per run, sync), where
    sync(result) waits for the run's work (default: result.numpy()). Each round times
    `repeats` runs of each path after one untimed run."""
    per_round = {name: [] for name in paths}
    for _ in range(rounds):
        for name, (run, calls, *sync) in paths.items():
            times = timing.call_times(run, repeats, warmup=1, sync=sync[0] if sync else _numpy)
            per_round[name].append(timing.summary(times)["median"] / calls)
    return per_round


def summaries(per_round, key, scale, **extra):
    """{name: {key: the rounds' median times `scale`, "spread": its spread, **extra}} of
    timed_rounds' result."""
    out = {}
    for name, values in per_round.items():
        s = timing.summary(values)
        out[name] = {key: scale * s["median"], "spread": s["spread"], **extra}
    return out


def ratio(numerators, denominators):
    """The per-round ratios' median and spread ({"median", "spread", "n"})."""
    return timing.summary([a / b for a, b in zip(numerators, denominators)])


def difference_us(minuends, subtrahends):
    """The per-round differences in microseconds: their median and [min, max]."""
    diffs = sorted(1e6 * (a - b) for a, b in zip(minuends, subtrahends))
    return {"median": timing.summary(diffs)["median"], "range": [diffs[0], diffs[-1]]}
