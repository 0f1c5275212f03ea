"""torch.rand / torch.randn next to random_batch's [0, 1) and normal features, in one run.

    python -m benchmarks.vs_torch [--mib=256,1024,4096] [--rounds=3]
        [--kernel-bench-json=FILE ...] [--json=OUT] [--smoke]

PyTorch runs in its own process (benchmarks/peers/torch_rates.py: `unroll` outputs back to
back, then a synchronisation; median of 5), before and after the ops, so a card that
drifts shows as a difference between the two. The ops (the installed tf_onthefly, float32,
4096 features a row, the step of each output its own GPU variable) are timed inside one
tf.function making N outputs and one making 2N, in interleaved rounds: the difference is
the time of N outputs with TensorFlow's fixed cost per call taken out, which is what
torch's back-to-back calls pay. Each output's only consumer is a control dependency (no
kernel of its own; Grappler's dependency optimizer, which would drop such an op, is off). A kernel bench JSON (kernel_bench --json, one per build: new and
baseline) adds its kernels' rates at the same sizes. Rates count bytes written; ratios are
ours over torch's, their spread the sum of both relative spreads (half the interquartile
range over the median, tf_onthefly/bench/timing.py) and half the two torch runs'
difference. Exit status 1 if PyTorch cannot be timed (except with --smoke).
"""

import argparse
import json
import os
import subprocess
import sys

# The folder that holds benchmarks/: PyTorch runs as `python -m benchmarks.peers.torch_rates` there.
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FEATURES = 4096
TARGETS = {"normal": 1.4}  # ours / torch, docs/performance.md


def torch_rates(sizes_mib, smoke):
    """{(mib, "uniform"|"normal"): (seconds per output, spread)}, or a note why there are none."""
    out = {}
    for mib in sizes_mib:
        floats = (mib << 20) // 4
        cmd = [sys.executable, "-m", "benchmarks.peers.torch_rates", f"--floats={floats}"]
        cmd += ["--repeats=2", "--unroll=2"] if smoke else ["--repeats=5", f"--unroll={max(4, min(20, 8192 // mib))}"]
        try:
            run = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=ROOT)
        except subprocess.TimeoutExpired:
            return "PyTorch timed out"
        if run.returncode != 0:
            return "PyTorch: " + ((run.stderr.strip().splitlines() or ["failed"])[-1][:200])
        for name, r in json.loads(run.stdout.strip().splitlines()[-1]).items():
            out[(mib, "normal" if name.startswith("torch.randn") else "uniform")] = (r["seconds"], r["spread"])
    return out


def op_rates(sizes_mib, rounds, smoke):
    """{(mib, "uniform"|"normal"): (seconds per output, spread, bytes per output)}."""
    import tensorflow as tf

    for gpu in tf.config.list_physical_devices("GPU"):
        tf.config.experimental.set_memory_growth(gpu, True)  # PyTorch runs after us
    # Grappler's dependency optimizer turns a stateless op whose outputs only have control
    # consumers into a NoOp: keep the ops (their rate next to the kernel bench's shows it).
    tf.config.optimizer.set_experimental_options({"dependency_optimization": False})
    import tf_onthefly
    from tf_onthefly.bench import timing

    device = "/GPU:0" if tf.config.list_physical_devices("GPU") else "/CPU:0"
    out = {}
    for mib in sizes_mib:
        rows = max(1, (mib << 20) // (4 * FEATURES))
        n = 2 if smoke else max(2, min(32, 8192 // mib))
        with tf.device(device):
            steps = [tf.Variable(k, dtype=tf.int64) for k in range(2 * n)]
        for dist in ("uniform", "normal"):

            def make(count, dist=dist):
                @tf.function
                def run():
                    outs = []
                    with tf.device(device):
                        for k in range(count):
                            outs += tf_onthefly.random_batch(
                                rows, FEATURES, seed=[1, 2], step=steps[k], distribution=dist
                            )
                        with tf.control_dependencies(outs):
                            # One element of the last output: the GPU has finished every
                            # output when it arrives (one stream).
                            return tf.reshape(outs[-2], [-1])[-1]

                run().numpy()  # trace, warm up, allocate
                return run

            once, twice = make(n), make(2 * n)
            per_round = []
            for _ in range(rounds):
                t1 = timing.summary(timing.call_times(lambda: once().numpy(), 2 if smoke else 5))["median"]
                t2 = timing.summary(timing.call_times(lambda: twice().numpy(), 2 if smoke else 5))["median"]
                per_round.append((t2 - t1) / n)
            s = timing.summary(per_round)
            out[(mib, dist)] = (s["median"], s["spread"], rows * (FEATURES + 1) * 4)
    return out


def kernel_rows(paths):
    """{(label, mib, "uniform"|"normal"): TB/s} of random_batch's float32 4096-feature kernels."""
    out = {}
    for path in paths:
        if not os.path.exists(path):
            print(f"note: no kernel bench rows: {path} does not exist (did the bench fail?)")
            continue
        with open(path) as f:
            for line in f:
                r = json.loads(line)
                what = r.get("what", "")
                for dist, prefix in (
                    ("uniform", "random_batch float32 uniform [0,1), "),
                    ("normal", "random_batch float32 normal, "),
                ):
                    if what.startswith(prefix) and what.endswith(f" x {FEATURES}"):
                        out[(r["label"], r["mib"], dist)] = r["tb_s"]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mib", default="256,1024,4096", help="output sizes, MiB of float32")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds of the ops' timings")
    ap.add_argument("--kernel-bench-json", action="append", default=[], help="kernel_bench --json output")
    ap.add_argument("--json", help="also write the rows here")
    ap.add_argument("--smoke", action="store_true", help="toy sizes on any device")
    args = ap.parse_args()
    sizes = [1] if args.smoke else [int(m) for m in args.mib.split(",")]
    rounds = 1 if args.smoke else args.rounds

    before = torch_rates(sizes, args.smoke)
    ours = op_rates(sizes, rounds, args.smoke)
    after = torch_rates(sizes, args.smoke) if isinstance(before, dict) else before
    kernels = kernel_rows(args.kernel_bench_json)

    rows = []
    print(
        f"{'MiB':>5s}  {'what':44s} {'TB/s':>6s} {'spread':>7s}  {'/ torch':>12s} {'TB/s':>6s}  {'ratio':>6s} {'spread':>7s}"
    )
    for mib in sizes:
        for dist in ("uniform", "normal"):
            peer = "torch.randn" if dist == "normal" else "torch.rand"
            seconds, spread, nbytes = ours[(mib, dist)]
            mine = [(f"random_batch {dist} (op, installed wheel)", nbytes / seconds / 1e12, spread)]
            mine += [
                (f"random_batch {dist} (kernel_bench {label})", tbs, 0.0)
                for (label, m, d), tbs in sorted(kernels.items())
                if m == mib and d == dist
            ]
            torch = None
            if isinstance(before, dict):
                (s1, e1), (s2, e2) = before[(mib, dist)], after[(mib, dist)]
                s = (s1 + s2) / 2
                torch = ((mib << 20) / s / 1e12, max(e1, e2) + abs(s1 - s2) / 2 / s)
            for what, tbs, spread_ours in mine:
                row = dict(mib=mib, what=what, tb_s=tbs, spread=spread_ours, peer=peer)
                line = f"{mib:5d}  {what:44s} {tbs:6.2f} {spread_ours:7.1%}"
                if torch:
                    ratio, spread_ratio = tbs / torch[0], spread_ours + torch[1]
                    row.update(peer_tb_s=torch[0], peer_spread=torch[1], ratio=ratio, ratio_spread=spread_ratio)
                    line += f"  {'/ ' + peer:>12s} {torch[0]:6.2f}  {ratio:5.2f}x {spread_ratio:7.1%}"
                    if dist in TARGETS:
                        line += f"  target {TARGETS[dist]}x: {'met' if ratio >= TARGETS[dist] else 'BELOW'}"
                rows.append(row)
                print(line, flush=True)
    if not isinstance(before, dict):
        print(f"note: no PyTorch rates: {before}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(rows=rows, torch=None if isinstance(before, dict) else before), f, indent=1)
    return 0 if isinstance(before, dict) or args.smoke else 1


if __name__ == "__main__":
    sys.exit(main())
