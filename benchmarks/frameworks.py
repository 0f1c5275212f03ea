"""tf_onthefly's JAX and PyTorch front ends next to their framework's own random numbers and
to the TensorFlow op: generation rates at several sizes and the cost of one call in a
compiled loop, side by side in one run per framework.

    python -m benchmarks.frameworks jax   [--mib=256,1024,4096] [--rounds=2] [--json=FILE] [--smoke]
    python -m benchmarks.frameworks torch [--mib=256,1024,4096] [--rounds=2] [--json=FILE] [--smoke]
                                          [--parts=otf-torch,torch]   (no TensorFlow needed)

jax:   tf_onthefly.jax.random_batch (uniform float32 features) against jax.random.uniform
       (threefry and rbg keys) and the TensorFlow op; per call in a jax.jit fori_loop of
       small batches against jax.random.uniform (fold_in of the loop index), with the loop
       index int32 and, with jax_enable_x64, int64.
torch: tf_onthefly.torch.random_batch (uniform and normal) against torch.rand/torch.randn
       and the TensorFlow op; per call of small batches eagerly, under torch.compile and
       replayed from a CUDA graph (mode="reduce-overhead", the step tensor a static input),
       against torch.rand the same way and against the ops' Python implementation
       (otf-torch-python: TF_ONTHEFLY_TORCH_KERNELS=python, per call only); and per call
       paired: otf-torch's loops and torch.rand's taking turns in one process, the
       difference taken within each turn.

Every part runs in a process of its own (`--part`), on the first GPU where there is one:
no framework shares a process or the GPU's memory with another (a CUDA 13 PyTorch cannot
follow TensorFlow into a process). A rate is the median over `repeats` calls of `unroll`
outputs back to back, then one synchronisation (tf_onthefly/bench/timing.py), in GB/s of
bytes written (features and labels: [n, 1024] and [n, 1]); the parts run in `rounds`
rounds, one after the other, and each ratio is given as the median of the rounds' ratios
with the range of the rounds and the within-run spreads added.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

from benchmarks.peers.common import seconds_per_output, timing

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WIDTH = 1024  # features per row: a row of [n, 1024] float32 features is 4 KiB
SMALL = (16, 16)  # the per-call batch: 256 floats
LOOP = 1000  # calls per compiled loop
PAIRED_ROUNDS = 7  # turns of tf_onthefly.torch's and torch.rand's loops in one process

PARTS = {
    "jax": ["otf-jax", "jax-threefry", "jax-rbg", "tensorflow"],
    "torch": ["otf-torch", "otf-torch-python", "torch", "tensorflow"],
}


def _rows(mib):
    return max(1, (mib << 20) // (4 * WIDTH))


def _rate(generate, sync, nbytes, args):
    seconds, spread = seconds_per_output(generate, sync, args)
    return dict(gb_per_s=nbytes / seconds / 1e9, spread=spread)


def _rates(out, batch, sync, args, distributions=("uniform", "normal")):
    """out["<distribution> <MiB>"]: the rate of `batch(rows, distribution, step)` for each
    size, over 64 steps in turn."""
    for distribution in distributions:
        for mib in args.sizes:
            rows, steps = _rows(mib), iter(range(1 << 40))
            out[f"{distribution} {mib}"] = _rate(
                lambda rows=rows, d=distribution: batch(rows, d, next(steps) % 64), sync, rows * (WIDTH + 1) * 4, args
            )


def _per_call(run_loop, args):
    """Microseconds per call of a loop of LOOP calls (its median and spread)."""
    s = timing.summary(timing.call_times(run_loop, args.repeats, warmup=1))
    return dict(us=s["median"] / LOOP * 1e6, spread=s["spread"])


def part_jax(name, args):
    import jax
    import jax.numpy as jnp

    out = {}
    sync = jax.block_until_ready
    if name == "otf-jax":
        import tf_onthefly.jax as otf

        jitted = {
            mib: jax.jit(lambda s, rows=_rows(mib): otf.random_batch(rows, WIDTH, seed=1, step=s)) for mib in args.sizes
        }
        by_rows = {_rows(mib): f for mib, f in jitted.items()}
        # The steps made on the device beforehand, as the TensorFlow part's are: a Python step
        # would cost each call a host-to-device copy of its own.
        steps = [jax.device_put(jnp.int32(s)) for s in range(64)]
        _rates(out, lambda rows, d, i: by_rows[rows](steps[i]), sync, args, ("uniform",))
        one = lambda i: otf.random_batch(*SMALL, seed=1, step=i)[0][0, 0]  # noqa: E731
    else:
        key = jax.random.key(1, impl={"jax-threefry": "threefry2x32", "jax-rbg": "rbg"}[name])
        keys = jax.random.split(key, 64)
        by_rows = {
            _rows(mib): jax.jit(lambda k, rows=_rows(mib): jax.random.uniform(k, (rows, WIDTH + 1), jnp.float32))
            for mib in args.sizes
        }
        _rates(out, lambda rows, d, i: by_rows[rows](keys[i]), sync, args, ("uniform",))
        one = lambda i: jax.random.uniform(jax.random.fold_in(key, i), SMALL, jnp.float32)[0, 0]  # noqa: E731

    def loop_cost(index_dtype):
        @jax.jit
        def loop():
            body = lambda i, acc: acc + one(i)  # noqa: E731
            return jax.lax.fori_loop(index_dtype(0), index_dtype(LOOP), body, jnp.float32(0))

        return _per_call(lambda: loop().block_until_ready(), args)

    out["per_call"] = loop_cost(jnp.int32)
    # The same loop with a 64-bit index (jax_enable_x64): tf_onthefly takes the step as it is,
    # where a 32-bit one is first widened to the two 32-bit halves of a word by a small fusion
    # of its own (a kernel per call in the loop).
    jax.config.update("jax_enable_x64", True)
    out["per_call x64"] = loop_cost(jnp.int64)
    out["device"] = str(jax.devices()[0])
    return out


def part_torch(name, args):
    import torch

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    sync = (lambda _: torch.cuda.synchronize()) if device.type == "cuda" else (lambda _: None)
    out = {"device": str(device)}
    steps = [torch.tensor(s, dtype=torch.int64, device=device) for s in range(64)]
    if name.startswith("otf-torch"):  # otf-torch-python: the ops' Python implementation (run_part)
        import tf_onthefly.torch as otf

        if name == "otf-torch":  # the same kernels at any size: only the per-call cost differs
            _rates(
                out, lambda rows, d, i: otf.random_batch(rows, WIDTH, seed=1, step=steps[i], distribution=d), sync, args
            )
        one = lambda s: otf.random_batch(*SMALL, seed=1, step=s)  # noqa: E731
    else:
        peers = {"uniform": torch.rand, "normal": torch.randn}
        _rates(out, lambda rows, d, i: peers[d]((rows, WIDTH + 1), device=device), sync, args)
        one = lambda s: torch.rand(SMALL, device=device)  # noqa: E731

    # One step tensor for every call, as a training loop keeps it (and advances it in place,
    # which the loop leaves out: the cost measured is the random op's). Marked static, a CUDA
    # graph reads it where it is; unmarked, every replay would first copy it into the graph's
    # own input buffer, a copy torch.rand's loop, which takes no step, does not make.
    step = steps[0]
    if device.type == "cuda":
        torch._dynamo.mark_static_address(step)

    def loop_of(call):
        def run():
            for _ in range(LOOP):
                call(step)
            sync(None)

        return run

    def modes(call):
        """mode -> the call as that mode runs it."""
        made = {"eager": call, "compiled": torch.compile(call, fullgraph=True)}
        if device.type == "cuda":
            made["cuda graph"] = torch.compile(call, mode="reduce-overhead", fullgraph=True)
        return made

    ours = modes(one)
    for mode, call in ours.items():
        out[f"per_call {mode}"] = _per_call(loop_of(call), args)
    if name == "otf-torch":
        # The same loops and torch.rand's taking turns in this process: how fast the host
        # dispatches a call moves between processes and rounds (up to 2x between two rounds on
        # an H100's host), so the difference that counts is the one taken within a round.
        rand = modes(lambda s: torch.rand(SMALL, device=device))
        for mode, call in ours.items():
            differences = []
            for _ in range(PAIRED_ROUNDS):
                a = _per_call(loop_of(call), args)["us"]
                differences.append(a - _per_call(loop_of(rand[mode]), args)["us"])
            out[f"paired {mode}"] = dict(
                us=statistics.median(differences), low=min(differences), high=max(differences), n=len(differences)
            )
    return out


def part_tensorflow(args):
    import tensorflow as tf

    import tf_onthefly

    gpus = tf.config.list_physical_devices("GPU")
    for g in gpus:
        tf.config.experimental.set_memory_growth(g, True)
    out = {"device": "GPU" if gpus else "CPU"}
    sync = lambda o: o[0][0, 0].numpy()  # noqa: E731 - waits for the op (same stream)
    steps = [tf.constant(s, tf.int64) for s in range(64)]
    _rates(
        out, lambda rows, d, i: tf_onthefly.random_batch(rows, WIDTH, seed=1, step=steps[i], distribution=d), sync, args
    )
    return out


def run_part(part, args):
    cmd = [sys.executable, "-m", "benchmarks.frameworks", args.framework, f"--part={part}", f"--mib={args.mib}"]
    cmd += [f"--repeats={args.repeats}", f"--unroll={args.unroll}"] + (["--smoke"] if args.smoke else [])
    env = dict(os.environ, XLA_PYTHON_CLIENT_PREALLOCATE="false", TF_CPP_MIN_LOG_LEVEL="2")
    if part == "otf-torch-python":
        env["TF_ONTHEFLY_TORCH_KERNELS"] = "python"
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env, cwd=ROOT)
    if done.returncode != 0:
        raise RuntimeError(f"part {part} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def ratio(rounds, ours, theirs, key, field):
    """Median over rounds of ours/theirs, the rounds' range and the within-run spreads added."""
    values = []
    spread = 0.0
    for r in rounds:
        a, b = r[ours][key], r[theirs][key]
        values.append(a[field] / b[field])
        spread = max(spread, a["spread"] + b["spread"])
    return dict(ratio=statistics.median(values), low=min(values), high=max(values), spread=spread)


def report(framework, rounds, args):
    ours, *peers = args.parts
    lines, table = [], []
    sizes = args.sizes
    distributions = ("uniform",) if framework == "jax" else ("uniform", "normal")
    comparisons = [
        (p, f"{d} {mib}") for p in peers for d in distributions for mib in sizes if f"{d} {mib}" in rounds[0][p]
    ]
    for peer, key in comparisons:
        q = ratio(rounds, ours, peer, key, "gb_per_s")
        rate = statistics.median(r[ours][key]["gb_per_s"] for r in rounds)
        theirs = statistics.median(r[peer][key]["gb_per_s"] for r in rounds)
        table.append(dict(ours=ours, peer=peer, what=key, gb_per_s=rate, peer_gb_per_s=theirs, **q))
        lines.append(
            f"{key + ' MiB':>16s}  {ours} {rate:8.1f} GB/s  {peer:13s} {theirs:8.1f} GB/s  "
            f"ratio {q['ratio']:.3f} (rounds {q['low']:.3f}-{q['high']:.3f}, spread {q['spread']:.1%})"
        )
    costs = [k for k in rounds[0][ours] if k.startswith("per_call")]
    for k in costs:
        for peer in (p for p in peers if k in rounds[0][p]):  # the TensorFlow part times no calls
            a = statistics.median(r[ours][k]["us"] for r in rounds)
            b = statistics.median(r[peer][k]["us"] for r in rounds)
            table.append(dict(ours=ours, peer=peer, what=k, us=a, peer_us=b, difference_us=a - b))
            lines.append(f"{k:>24s}  {ours} {a:8.2f} us  {peer:13s} {b:8.2f} us  difference {a - b:+.2f} us")
    for k in (k for k in rounds[0][ours] if k.startswith("paired")):
        mode = k[len("paired ") :]
        for i, r in enumerate(rounds):
            p = r[ours][k]
            table.append(dict(ours=ours, peer="torch", what=f"per_call {mode}, paired", round=i, difference_us=p["us"]))
            lines.append(
                f"{'per_call ' + mode:>24s}  {ours} - torch.rand, {p['n']} turns in one process (round {i + 1}): "
                f"{p['us']:+.2f} us (turns {p['low']:+.2f} to {p['high']:+.2f})"
            )
    return lines, table


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("framework", choices=sorted(PARTS))
    ap.add_argument("--part", help="(internal) run one part in this process, print its JSON")
    ap.add_argument(
        "--parts",
        help="the parts to run, comma-separated, ours first (default: all; on a host without "
        "TensorFlow leave out `tensorflow`)",
    )
    ap.add_argument("--mib", default="256,1024,4096", help="output sizes, MiB of float32 features")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--unroll", type=int, default=10)
    ap.add_argument("--json", help="also write the results here")
    ap.add_argument("--smoke", action="store_true", help="toy sizes on any device, to keep the script working")
    args = ap.parse_args()
    if args.smoke:
        args.mib, args.rounds, args.repeats, args.unroll = "1", 1, 2, 2
        global LOOP, PAIRED_ROUNDS
        LOOP, PAIRED_ROUNDS = 20, 2
    args.sizes = [int(m) for m in args.mib.split(",")]
    args.parts = args.parts.split(",") if args.parts else PARTS[args.framework]
    if args.parts[0] != PARTS[args.framework][0] or not set(args.parts) <= set(PARTS[args.framework]):
        ap.error(f"--parts: {PARTS[args.framework][0]} first, then any of {', '.join(PARTS[args.framework][1:])}")
    if args.part:
        result = (
            part_tensorflow(args)
            if args.part == "tensorflow"
            else (part_jax(args.part, args) if args.framework == "jax" else part_torch(args.part, args))
        )
        print(json.dumps(result))
        return
    rounds = [{part: run_part(part, args) for part in args.parts} for _ in range(args.rounds)]
    devices = {part: rounds[0][part]["device"] for part in args.parts}
    lines, table = report(args.framework, rounds, args)
    print(f"{args.framework}: {args.rounds} rounds, devices {devices}")
    print("\n".join(lines))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(framework=args.framework, devices=devices, rounds=rounds, results=table), f, indent=1)


if __name__ == "__main__":
    main()
