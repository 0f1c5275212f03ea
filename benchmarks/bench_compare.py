"""Checks two bench.json files of the same command, run back to back, against the bench's
targets: no row above its constant batch by more than 1.15x in either run, every row at
0.2x or above agreeing within 25 % between the runs, and the measuring time of each run.

    python -m benchmarks.bench_compare run1/bench.json run2/bench.json [--limit-s=300]
"""

import argparse
import json


def rows(doc):
    return {(r["config"], r["mode"], r["jit"], r["path"]): r for r in doc["results"]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("first")
    ap.add_argument("second")
    ap.add_argument("--limit-s", type=float, default=300.0, help="measuring time allowed per run")
    args = ap.parse_args()
    docs = [json.load(open(f)) for f in (args.first, args.second)]
    a, b = (rows(d) for d in docs)
    above, apart, compared = [], [], 0
    print(f"{'row':34s} {'run 1':>17s} {'run 2':>17s} {'apart':>6s}")
    for key, x in a.items():
        y = b.get(key)
        if y is None:
            continue
        rx, ry = x["vs_constant"], y["vs_constant"]
        gap = abs(rx - ry) / max(min(rx, ry), 1e-9)
        notes = []
        if max(rx, ry) > 1.15:
            above.append(key)
            notes.append("above 1.15x")
        if key[3] != "constant" and max(rx, ry) >= 0.2:
            compared += 1
            if gap > 0.25:
                apart.append(key)
                notes.append("apart > 25 %")
        name = f"{key[0]} {key[1]} jit {'on' if key[2] else 'off'} {key[3]}"
        print(
            f"{name:34s} {rx:6.2f}x ± {x['uncertainty']:.2f} {ry:8.2f}x ± {y['uncertainty']:.2f} {gap:6.0%}  "
            + ", ".join(notes)
        )
    print(f"\nrows above 1.15x of their constant batch, either run: {len(above)}")
    print(f"rows at 0.2x or above: {compared}; apart by more than 25 %: {len(apart)}")
    ok = not above and not apart
    for n, d in enumerate(docs, 1):
        measuring = d.get("measuring_s", float("nan"))
        print(
            f"run {n}: measuring {measuring:.0f} s (limit {args.limit_s:.0f}), in all {d.get('elapsed_s', float('nan')):.0f} s"
        )
        ok = ok and measuring <= args.limit_s
    print("targets: " + ("met" if ok else "NOT met"))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
