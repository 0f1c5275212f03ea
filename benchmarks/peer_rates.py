"""Generation rates of PyTorch, JAX and CuPy for the outputs python -m benchmarks.rates times.

    python -m benchmarks.peer_rates [--mib=256,1024,4096] [--repeats=5] [--unroll=20] [--json=FILE] [--smoke]

Each peer (benchmarks/peers/*_rates.py) runs in its own process, where it is installed,
timed with its own idiom: `unroll` outputs back to back, then a synchronisation; the median
over `repeats` calls (tf_onthefly/bench/timing.py). Run it before anything TensorFlow
takes the GPU's memory. A peer that is not installed, or fails, gives a note instead of
rows. Rates count bytes written; docs/performance.md puts them next to the copy ceiling.
"""

import argparse
import json
import os
import subprocess
import sys

PEERS = ["torch", "jax", "cupy"]
# The folder that holds benchmarks/: each peer runs as `python -m benchmarks.peers.<peer>_rates` there.
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def measure(sizes_mib, repeats, unroll, smoke=False):
    """(rows, notes): a row per peer generator and size."""
    rows, notes = [], []
    env = dict(os.environ, XLA_PYTHON_CLIENT_PREALLOCATE="false")
    for peer in PEERS:
        for mib in sizes_mib:
            floats = (mib << 20) // 4
            cmd = [sys.executable, "-m", f"benchmarks.peers.{peer}_rates", f"--floats={floats}"]
            cmd += ["--smoke"] if smoke else [f"--repeats={repeats}", f"--unroll={unroll}"]
            try:
                out = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env, cwd=ROOT)
            except subprocess.TimeoutExpired:
                notes.append(f"{peer}: timed out")
                break
            if out.returncode != 0:
                notes.append(f"{peer}: skipped ({(out.stderr.strip().splitlines() or ['failed'])[-1][:120]})")
                break
            nbytes = 4 * (4096 if smoke else floats)
            for name, r in json.loads(out.stdout.strip().splitlines()[-1]).items():
                rows.append(
                    dict(
                        name=name,
                        mib=mib,
                        ms=r["seconds"] * 1e3,
                        gb_per_s=nbytes / r["seconds"] / 1e9,
                        spread=r["spread"],
                        bytes=nbytes,
                    )
                )
    return rows, notes


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mib", default="1024", help="output sizes, MiB of float32, comma-separated")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--unroll", type=int, default=20)
    ap.add_argument("--json", help="also write the rows here")
    ap.add_argument("--smoke", action="store_true", help="toy sizes on any device")
    args = ap.parse_args()
    rows, notes = measure([int(m) for m in args.mib.split(",")], args.repeats, args.unroll, args.smoke)
    print(f"{'what':64s} {'MiB':>5s} {'ms/output':>9s} {'GB/s':>8s} {'spread':>7s}")
    for r in rows:
        print(f"{r['name']:64s} {r['mib']:5d} {r['ms']:9.3f} {r['gb_per_s']:8.1f} {r['spread']:7.1%}")
    for note in notes:
        print("note:", note)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(results=rows, notes=notes), f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
