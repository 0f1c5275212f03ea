"""The verdicts: a row's speed in words, and per (config, mode, jit) which path to use and
what it gains. The advice follows the table: every measured candidate is weighed, a row that
measured above its constant batch included (named as such), so a verdict never recommends a
path that measured clearly slower than another path of its setting (`disagreements`)."""

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
    for key, rows in _settings(table).items():
        out.append(dict(config=key[0], mode=key[1], jit=key[2], **_verdict(rows, key)))
    return out


def _settings(table):
    """(config, mode, jit) -> {path: row}, in the table's order."""
    groups = {}
    for r in table:
        groups.setdefault((r["config"], r["mode"], r["jit"]), {})[r["path"]] = r
    return groups


def _candidates(rows):
    return [p for p in CANDIDATES + [p for p, e in EXTRA_PATHS.items() if e["candidate"]] if p in rows]


def _clearly_faster(a, b):
    """Row a measured faster than row b by more than their uncertainties together."""
    return a["vs_constant"] - b["vs_constant"] > math.hypot(a["uncertainty"], b["uncertainty"])


def disagreements(table, made=None):
    """The verdicts (of `made`, default: this module's for the table) that recommend a path
    which measured clearly slower than another candidate of the same setting: [(verdict,
    the faster path)]. The benchmark prints their number; it is 0."""
    groups = _settings(table)
    out = []
    for v in made if made is not None else verdicts(table):
        rows = groups.get((v["config"], v["mode"], v["jit"]), {})
        if not v.get("use") or v["use"] not in rows:
            continue
        faster = [p for p in _candidates(rows) if p != v["use"] and _clearly_faster(rows[p], rows[v["use"]])]
        if faster:
            out.append((v, faster[0]))
    return out


def _above(r):
    return f"{r['vs_constant']:.2f}x ± {r['uncertainty']:.2f} the constant batch, above it"


def _floor_text(path, r):
    """Where the path's batch is written in the step and writing it costs the step 1 % or
    more: the write floor (the batch's bytes at the write ceiling measured in the run) and
    how close the path comes to it."""
    floor = r.get("write_floor")
    if not floor or floor > 0.99:
        return ""
    mib, ceiling = r["batch_bytes"] / 2**20, r["write_gb_per_s"]
    if r["vs_constant"] - r["uncertainty"] > floor:
        # The floor assumes the write adds to the step. A path above it wrote its batch while
        # the device had other work or none (as without XLA, where op-in-step measures as fast
        # as the constant batch), or faster than the fills did: the floor bounds nothing here.
        return (
            f" Its {mib:.0f} MiB batch costs the step less than writing it at the {ceiling:.0f} GB/s write "
            f"ceiling measured in this run would ({path} {r['vs_constant']:.2f}x the constant batch, that "
            f"write's floor {floor:.2f}x): the write overlaps other work of the step, or the fills fell short of "
            f"the device's ceiling, so no write floor is given."
        )
    write_us = 1e6 * r["batch_bytes"] / (ceiling * 1e9)
    return (
        f" Writing its {mib:.0f} MiB batch takes a step at least {write_us:.0f} us at the "
        f"{ceiling:.0f} GB/s write ceiling measured in this run, so a batch made in the step reaches "
        f"{floor:.2f}x the constant batch at best; {path} measured {r['vs_constant'] / floor:.0%} of that."
    )


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
            costs.append(f"unknown with {path} (above the constant batch)")
        elif r["status"] == "same as constant":
            costs.append(f"none measurable with {path}")
        else:
            costs.append(f"{round(100 * r['input_share'])} % with {path}")
    # Every measured candidate counts, a row above its constant batch too: it is named as
    # such, and the advice still follows what was measured.
    candidates = _candidates(rows)
    text = f"{where}: the input's share of the step is {', '.join(costs)}."
    if not candidates:
        return dict(text=text, use=None, gain=None)
    best = max(candidates, key=lambda p: rows[p]["vs_constant"])
    # The simplest candidate as good as the best, inside their uncertainties.
    use = next(p for p in candidates if not _clearly_faster(rows[best], rows[p]))
    above = rows[use]["status"] == "measurement problem"
    gain = None
    if SIMPLE in rows and use != SIMPLE:
        gain = rows[use]["vs_constant"] / rows[SIMPLE]["vs_constant"]
        rel = math.hypot(
            rows[use]["uncertainty"] / rows[use]["vs_constant"],
            rows[SIMPLE]["uncertainty"] / rows[SIMPLE]["vs_constant"],
        )
        text += f" Use {use}: {gain:.2f}x ± {gain * rel:.2f} the steps/s of {SIMPLE}"
        if above:
            text += f"; it measured {_above(rows[use])}, so the constant batch is not this setting's bound."
        else:
            text += ", as fast as the constant batch." if rows[use]["status"] == "same as constant" else "."
    elif use == SIMPLE and rows[SIMPLE]["status"] == "same as constant":
        text += f" Input is not the bottleneck: keep {SIMPLE}; the model step sets the pace."
    else:
        text += f" Use {use}: no other path is measurably faster here."
        if above:
            text += f" It measured {_above(rows[use])}, so the constant batch is not this setting's bound."
    text += _floor_text(use, rows[use])
    return dict(text=text, use=use, gain=gain)
