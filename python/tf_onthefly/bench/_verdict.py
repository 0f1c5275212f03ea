"""The verdicts: a row's speed in words, and per (config, mode, jit) which path to use and
what it gains."""

import math

import numpy as np

from tf_onthefly.bench._configs import EXTRA_PATHS

SIMPLE = "numpy+prefetch"  # the path a program starts with: gains are counted from it
# The paths the verdict chooses among, simplest first: a simpler path wins a tie.
CANDIDATES = ["numpy+prefetch", "op-cpu-tfdata", "op-in-step"]


def speed_label(ratio, uncertainty=0.0, status=""):
    """'12 % slower' / 'same as constant' / 'measurement problem' against the constant batch.
    A row is never 'faster' than the upper bound."""
    if not np.isfinite(ratio):
        return ""
    if status == "measurement problem":
        return "measurement problem"
    if status == "same as constant" or abs(ratio - 1.0) <= uncertainty or round(100 * (ratio - 1)) >= 0:
        return "same as constant"
    return f"{round(100 * (1 - ratio))} % slower"


def verdicts(table):
    """One verdict per (config, mode, jit), in plain words: what the input costs of the step
    on each path, which path to use, and what it gains over the simple path."""
    out = []
    for key in dict.fromkeys((r["config"], r["mode"], r["jit"]) for r in table):
        rows = {r["path"]: r for r in table if (r["config"], r["mode"], r["jit"]) == key}
        out.append(dict(config=key[0], mode=key[1], jit=key[2], **_verdict(rows, key)))
    return out


def _verdict(rows, key):
    name, mode, jit = key
    where = f"{name}, {mode}, jit {'on' if jit else 'off'}"
    if "constant" not in rows:
        return dict(text=f"{where}: no constant batch measured, so no verdict.", use=None, gain=None)
    if len(rows) == 1:
        return dict(text=f"{where}: only the constant batch was measured, so no verdict.", use=None, gain=None)
    costs = []
    for path, r in rows.items():
        if path == "constant":
            continue
        if r["status"] == "measurement problem":
            costs.append(f"not measurable on this machine with {path}")
        elif r["status"] == "same as constant":
            costs.append(f"none measurable with {path}")
        else:
            costs.append(f"{round(100 * r['input_share'])} % with {path}")
    candidates = [p for p in CANDIDATES + [p for p, e in EXTRA_PATHS.items() if e["candidate"]] if p in rows]
    candidates = [p for p in candidates if rows[p]["status"] != "measurement problem"]
    text = f"{where}: the input's share of the step is {', '.join(costs)}."
    if not candidates:
        return dict(text=text, use=None, gain=None)
    best = max(candidates, key=lambda p: rows[p]["vs_constant"])
    # The simplest candidate as good as the best, inside their uncertainties.
    use = next(
        p
        for p in candidates
        if rows[best]["vs_constant"] - rows[p]["vs_constant"]
        <= math.hypot(rows[best]["uncertainty"], rows[p]["uncertainty"])
    )
    gain = None
    if SIMPLE in rows and use != SIMPLE and rows[SIMPLE]["status"] != "measurement problem":
        gain = rows[use]["vs_constant"] / rows[SIMPLE]["vs_constant"]
        rel = math.hypot(
            rows[use]["uncertainty"] / rows[use]["vs_constant"],
            rows[SIMPLE]["uncertainty"] / rows[SIMPLE]["vs_constant"],
        )
        text += f" Use {use}: {gain:.2f}x ± {gain * rel:.2f} the steps/s of {SIMPLE}"
        text += ", as fast as the constant batch." if rows[use]["status"] == "same as constant" else "."
    elif use == SIMPLE and rows[SIMPLE]["status"] == "same as constant":
        text += f" Input is not the bottleneck: keep {SIMPLE}; the model step sets the pace."
    else:
        text += f" Use {use}: no other path is measurably faster here."
    return dict(text=text, use=use, gain=gain)
