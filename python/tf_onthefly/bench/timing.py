"""Per-call timing of the input benchmark (its rows, profile_input); the repository's
benchmarks/ time with it too. It imports nothing but the standard library.

A rate taken from one long window, or from the difference of two timings, moves with every
hiccup of a busy machine. Timing many calls of a fixed amount of work each and taking their
median is what stays put: a slow spell spoils a few calls, not the figure. The spread is
reported with it (half the interquartile range, relative to the median), so a reader can
tell a difference from noise.
"""

import statistics
import time


def call_times(call, calls, *, warmup=1, sync=None):
    """Seconds taken by each of `calls` calls of `call()`, after `warmup` untimed calls.

    `sync(result)`, when given, waits for the work a call started (for example a GPU's
    queue) before the clock is read; without it a call is timed as it returns.
    """
    if calls < 1:
        raise ValueError(f"calls must be at least 1, got {calls}")
    for _ in range(warmup):
        result = call()
        if sync is not None:
            sync(result)
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        result = call()
        if sync is not None:
            sync(result)
        times.append(time.perf_counter() - t0)
    return times


def summary(samples):
    """Median of `samples` and its relative spread: {"median", "spread", "n"}.

    The spread is half the interquartile range over the median (0 for fewer than 4 samples
    would claim a precision they do not have, so it is then the half range instead).
    """
    samples = sorted(samples)
    if not samples:
        raise ValueError("summary of no samples")
    median = statistics.median(samples)
    if len(samples) >= 4:
        q1, _, q3 = statistics.quantiles(samples, n=4, method="inclusive")
        half = (q3 - q1) / 2
    else:
        half = (samples[-1] - samples[0]) / 2
    return {"median": median, "spread": half / median if median else 0.0, "n": len(samples)}
