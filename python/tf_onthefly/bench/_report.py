"""What a run shows and writes: the table on screen, bench.json and bench.png."""

import json
import os

import numpy as np

from tf_onthefly.bench._verdict import speed_label, verdicts


def ratio_text(row):
    """'0.79x ± 0.04', with the row's status when it has one."""
    if not np.isfinite(row.get("vs_constant", float("nan"))):
        return ""
    text = f"{row['vs_constant']:.2f}x ± {row['uncertainty']:.2f}"
    return text


def format_table(table):
    lines = [
        f"{'config':9s} {'batch':>6s} {'mode':6s} {'jit':3s} {'path':15s} {'steps/s':>9s} {'samples/s':>11s} "
        f"{'vs constant':>13s} {'input GB/s':>10s} {'input cost':>10s}  note"
    ]
    for r in table:
        note = r["status"] + (" (re-measured)" if r.get("remeasured") else "")
        note += " (timed one round: far below the constant batch)" if r.get("one_round") else ""
        share = "" if r["path"] == "constant" or not np.isfinite(r["input_share"]) else f"{r['input_share']:.0%}"
        if r["status"] in ("same as constant", "measurement problem"):
            share = "-"
        lines.append(
            f"{r['config']:9s} {r['batch']:6d} {r['mode']:6s} {'on' if r['jit'] else 'off':3s} "
            f"{r['path']:15s} {r['steps_per_s']:9.1f} {r['samples_per_s']:11.0f} "
            f"{ratio_text(r):>13s} {r['input_gb_per_s']:10.3f} {share:>10s}  {note}"
        )
    return "\n".join(lines)


def write_outputs(table, out, meta):
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "bench.json"), "w") as f:
        json.dump(dict(meta, verdicts=verdicts(table), results=table), f, indent=1)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    config_names = list(dict.fromkeys(r["config"] for r in table))
    settings = list(dict.fromkeys((r["mode"], r["jit"]) for r in table))
    paths = list(dict.fromkeys(r["path"] for r in table))
    fig, axes = plt.subplots(
        1,
        len(config_names),
        figsize=(7 * len(config_names), 1.5 + 0.3 * len(paths) * len(settings)),
        squeeze=False,
    )
    colors = plt.get_cmap("tab10")
    height = 0.8 / len(settings)
    for ax, name in zip(axes[0], config_names):
        rows = [r for r in table if r["config"] == name]
        for k, (mode, jit) in enumerate(settings):
            sub = {r["path"]: r for r in rows if (r["mode"], r["jit"]) == (mode, jit)}
            shown = [p for p in paths if p in sub]
            ys = [paths.index(p) + k * height for p in shown]
            vals = [sub[p]["vs_constant"] for p in shown]
            errs = [sub[p]["uncertainty"] for p in shown]
            bars = ax.barh(
                ys, vals, height=height, xerr=errs, color=colors(k), label=f"{mode}, jit {'on' if jit else 'off'}"
            )
            for bar, p in zip(bars, shown):
                r = sub[p]
                label = f"{r['vs_constant']:.2f} ± {r['uncertainty']:.2f}"
                if p != "constant":
                    label += f"  {speed_label(r['vs_constant'], r['uncertainty'], r['status'])}"
                ax.text(
                    max(bar.get_width(), 0) + r["uncertainty"] + 0.02,
                    bar.get_y() + bar.get_height() / 2,
                    label,
                    va="center",
                    fontsize=7,
                )
        ax.axvline(1.0, color="gray", linestyle="--", linewidth=0.8)
        ax.set_yticks([i + 0.4 - height / 2 for i in range(len(paths))], paths)
        ax.set_xlim(0, max([1.9] + [r["vs_constant"] + r["uncertainty"] + 0.9 for r in rows]))
        ax.ticklabel_format(axis="x", style="plain", useOffset=False)
        ax.set_title(f"{name} (batch {rows[0]['batch']})")
        ax.set_xlabel("steps/s against the constant batch, same mode (1: the bound)")
        ax.invert_yaxis()
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=len(settings))
    fig.suptitle(f"tf_onthefly input paths on {meta['device']}", y=1.0 + 0.25 / fig.get_figheight())
    fig.subplots_adjust(wspace=0.4)
    fig.savefig(os.path.join(out, "bench.png"), dpi=90, bbox_inches="tight")
    plt.close(fig)
