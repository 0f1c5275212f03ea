"""profile_input: where your own pipeline's step time goes, and what each input path would gain."""

import gc

import numpy as np
import tensorflow as tf

from tf_onthefly.bench import timing


def _per_call_ms(call, calls, warmup=3):
    """Median ms of call() (its result synchronised) over `calls` calls."""
    return 1e3 * timing.summary(timing.call_times(call, calls, warmup=warmup, sync=_sync))["median"]


def profile_input(dataset, train_step, steps=50, warmup=5):
    """Where your step's time goes, and what each input path would gain.

    Args:
      dataset: your tf.data.Dataset (or any iterable of batches).
      train_step: a function taking one batch (as the dataset yields it), e.g. a tf.function.
    Returns:
      dict with, in ms per step (medians of `steps` calls):
        real_ms     the step fed by your dataset;
        cached_ms   the step on one batch already on the step's device (the upper bound);
        produce_ms  the dataset alone: your Python generator and tf.data together;
        tfdata_ms   tf.data's own cost per batch (the same batch through a cached pipeline);
        python_ms   produce_ms - tfdata_ms: the Python generator (or your map functions);
        copy_ms     copying one batch from the host to the step's device (0 on a CPU);
        step_ms     = cached_ms;
      input_share (of real_ms waiting for input), projected: path -> dict(ms, gain) for
      "prefetch" (input overlapped with the step), "op on the CPU" (no Python: the native
      op in tf.data, data.host_dataset) and "op in the step" (data.GeneratorModel: no input
      pipeline, no copy), and verdict, in words.
    Projections assume the overlapped parts run in parallel (enough cores) and the op's
    own generation is small next to the step; they are bounds, not measurements.
    """
    it = iter(dataset)
    first = next(it)
    device = _step_device()
    with tf.device(device):
        cached = tf.nest.map_structure(tf.identity, first)
    host = tf.nest.map_structure(lambda t: tf.constant(np.asarray(t)), first)

    step_ms = _per_call_ms(lambda: train_step(cached), steps, warmup)
    real_ms = _per_call_ms(lambda: train_step(next(it)), steps, warmup)
    produce_ms = _per_call_ms(lambda: next(it), steps, warmup)
    tfdata_it = iter(tf.data.Dataset.from_tensors(host).repeat())
    tfdata_ms = _per_call_ms(lambda: next(tfdata_it), steps, warmup)
    python_ms = max(0.0, produce_ms - tfdata_ms)
    copy_ms = 0.0
    if device.startswith("/GPU"):

        def copy():
            with tf.device(device):
                return tf.nest.map_structure(lambda t: tf.identity(t) + tf.zeros((), t.dtype), host)

        copy_ms = _per_call_ms(copy, steps, warmup)
    it = tfdata_it = None  # let the pipelines go now, not at exit
    gc.collect()

    projected = {
        "prefetch": max(step_ms + copy_ms, produce_ms),
        "op on the CPU": max(step_ms + copy_ms, tfdata_ms),
        "op in the step": step_ms,
    }
    projected = {k: dict(ms=v, gain=real_ms / v if v > 0 else float("nan")) for k, v in projected.items()}
    share = max(0.0, 1.0 - step_ms / real_ms)
    parts = (
        f"Python generator {python_ms:.2f} ms, tf.data {tfdata_ms:.2f} ms, host-to-device copy {copy_ms:.2f} ms, "
        f"step {step_ms:.2f} ms"
    )
    gains = ", ".join(f"{k} {v['gain']:.1f}x" for k, v in projected.items())
    if share > 0.1:
        best = max(projected, key=lambda k: projected[k]["gain"])
        verdict = (
            f"Input is your bottleneck: a step takes {real_ms:.2f} ms with your input but {step_ms:.2f} ms "
            f"on a cached batch, so {share:.0%} of each step waits for data. Per batch: {parts}. "
            f"Projected steps/s against now: {gains}; the most: {best} "
            f"(tf_onthefly.data.{'GeneratorModel' if best == 'op in the step' else 'host_dataset'})."
        )
    else:
        verdict = (
            f"Input is not your bottleneck: a step takes {real_ms:.2f} ms with your input and "
            f"{step_ms:.2f} ms on a cached batch ({share:.0%} waiting for data; per batch: {parts}); "
            f"optimise the model step."
        )
    return dict(
        real_ms=real_ms,
        cached_ms=step_ms,
        step_ms=step_ms,
        produce_ms=produce_ms,
        tfdata_ms=tfdata_ms,
        python_ms=python_ms,
        copy_ms=copy_ms,
        input_share=share,
        projected=projected,
        verdict=verdict,
    )


def _step_device():
    return "/GPU:0" if tf.config.list_logical_devices("GPU") else "/CPU:0"


def _sync(out):
    for t in tf.nest.flatten(out):
        if hasattr(t, "numpy"):
            t.numpy()
