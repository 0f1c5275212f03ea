"""Runs the measurements from a built wheel on any GPU host with TensorFlow.

    python -m benchmarks.run --wheel dist/tf_onthefly-*.whl --out DIR \\
        [--target D] [--kernels D] [--steps STEP,...] [--dry-run] MODE [MODE ...]

Run from the repository's root (the benchmarks are read from it); the wheel is installed
as the GPU test runner installs it (tools/testing/gpu_run.py, whose machinery this uses:
into this Python, or into folder D with --target). Modes:

  bench     the input benchmark's GPU rows (python -m tf_onthefly.bench), and its default
            run twice
  rates     generation rates: the peers (peer_rates), ours next to TF's ops, a copy and
            NumPy (rates), one op's kernel timeline (op_timeline)
  frameworks  the JAX and PyTorch front ends against jax.random, torch.rand/randn and the
            TensorFlow op, rates and per-call cost (frameworks jax, frameworks torch; JAX or
            PyTorch for the GPU installed next to TensorFlow)
  cost      what one op adds to a step (op_cost), with and without XLA, and what a graph
            loop's counter costs (loop_counter)
  trace     where a step's time goes, path by path (step_timeline)
  bound     whether the constant batch bounds cnn's step: cnn fit1 and fit64 traced with
            its int32 labels captured as int32 and as the bench keeps them, beside
            op-in-step (host-to-device copies and wall time a step), then the bench's cnn
            rows without XLA
  floor     small and big batches under XLA against their floors: small_mlp and wide_mlp
            fit64 jit on, constant against op-in-step, 5 rounds, with XLA's command buffers
            (CUDA graphs) as they come and turned off (XLA_FLAGS), small_mlp's step
            traced (where each microsecond of op-in-step's step goes), and the levers
            that could remove the generator's cost a step (small_batch_levers)
  copies    host<->device bytes per step, one GPU and MirroredStrategy (no_copy_profile)
  mirrored  the MirroredStrategy rows one change at a time, and the placer's log
  kernels   the kernel bench (and its baseline build, if D has one), torch.rand/randn next
            to random_batch's op and kernels (vs_torch), and the launcher-generator
            comparison; --kernels D holds what `benchmarks/kernel_bench/build.sh D
            [BASELINE_REV]` built and bazel-bin/tests/sdk_ops/*.so
  ptx       one PTX kernel run four ways (ptx_paths: the PTX op with and without XLA
            against CuPy, the bridge's per-batch overhead and steps/s at 32 x 16 and 64 MiB
            against the built-in op and numpy+prefetch) and the input benchmark with its two
            paths at fit64, XLA off and on (input_bench_ptx_paths); needs the test
            PTX (bazel-bin/tf_ops/cuda_kernel/test_kernels.ptx) in --kernels D or
            $OTF_TEST_PTX
  soak      1,000,000 training steps, memory and data position checked (soak)
  all       every mode above, in that order

`--dry-run` lists each mode's steps and commands; `--steps` runs some of them (a long mode
in parts). Each step's raw output goes to DIR/<date>_<card>_<step>.log (JSON beside it
where the module writes some), ready to be kept under benchmarks/results/ (README.md
there); DIR/<date>_<card>_header.txt says which card, driver, software, commit and command;
DIR/<date>_<card>_summary.txt has one line per step with its exit status. The exit status
is 1 if any step failed.
"""

import os
import sys

from tools.testing import gpu_run

ROOT, PY = gpu_run.ROOT, gpu_run.PY
MODES = [
    "bench",
    "rates",
    "frameworks",
    "cost",
    "trace",
    "bound",
    "floor",
    "copies",
    "mirrored",
    "kernels",
    "ptx",
    "soak",
]


def module(name, *args):
    """The command running benchmarks/<name>.py as the module it is."""
    return [PY, "-m", f"benchmarks.{name}", *args]


def bench(out, configs, modes, paths, rounds=3):
    return [PY, "-m", "tf_onthefly.bench", "--device=gpu", f"--configs={configs}", f"--modes={modes}"] + [
        "--jit=off,on",
        f"--paths={paths}",
        "--seconds=1",
        f"--rounds={rounds}",
        f"--out={out}",
    ]


def steps(mode, args, name):
    """[(step name, command, timeout seconds, working directory)] of one mode."""
    if mode == "bench":
        return [
            (
                "bench_small_mlp",
                bench(
                    name("bench_small_mlp"), "small_mlp", "fit1,fit64,loop64", "constant,numpy,op-in-step,tf-stateless"
                ),
                600,
                ROOT,
            ),
            (
                "bench_wide_mlp_cnn",
                bench(name("bench_wide_mlp_cnn"), "wide_mlp,cnn", "fit64", "constant,op-in-step,tf-stateless", 5),
                600,
                ROOT,
            ),
        ] + [  # the default run, as a user runs it, twice back to back (docs/bench.md)
            (f"bench_default{n}", [PY, "-m", "tf_onthefly.bench", f"--out={name(f'bench_default{n}')}"], 600, ROOT)
            for n in (1, 2)
        ]
    if mode == "rates":
        sizes = "--mib=256,1024,4096"
        only = "--only=random_batch uniform,random_batch normal,stateless,copy,numpy"
        return [
            ("peer_rates", module("peer_rates", sizes, "--repeats=5", f"--json={name('peer_rates')}.json"), 900, ROOT),
            (
                "rates",
                module("rates", sizes, "--repeats=5", "--unroll=20", f"--json={name('rates')}.json", only),
                900,
                ROOT,
            ),
            ("op_timeline_256", module("op_timeline", "--mib=256"), 300, ROOT),
            ("op_timeline_256_steps_on_gpu", module("op_timeline", "--mib=256", "--steps_on=gpu"), 300, ROOT),
        ]
    if mode == "frameworks":
        return [
            (f"frameworks_{fw}", module("frameworks", fw, f"--json={name('frameworks_' + fw)}.json"), 600, ROOT)
            for fw in ("jax", "torch")
        ]
    if mode == "cost":
        return [
            ("op_cost", module("op_cost", "--placement"), 600, ROOT),
            ("op_cost_jit", module("op_cost", "--jit"), 600, ROOT),
            ("loop_counter", module("loop_counter"), 600, ROOT),
        ]
    if mode == "trace":
        return [
            (
                f"step_timeline_{spec.replace('--', '').replace(' ', '_').replace('=', '')}",
                module("step_timeline", *spec.split()),
                300,
                ROOT,
            )
            for spec in (
                "--mode=fit64 --jit",
                "--mode=loop64 --jit",
                "--mode=loop64",
                "--config=wide_mlp --mode=fit64 --jit",
            )
        ]
    if mode == "bound":
        traces = [
            (
                f"step_timeline_cnn_{m}",
                module(
                    "step_timeline",
                    "--config=cnn",
                    f"--mode={m}",
                    "--paths=constant-int32-captured,constant,op-in-step",
                    "--top=8",
                ),
                300,
                ROOT,
            )
            for m in ("fit64", "fit1")
        ]
        rows = [PY, "-m", "tf_onthefly.bench", "--device=gpu", "--configs=cnn", "--modes=fit1,fit64", "--jit=off"]
        return traces + [("bench_cnn", rows + [f"--out={name('bench_cnn')}"], 300, ROOT)]
    if mode == "floor":
        rows = [PY, "-m", "tf_onthefly.bench", "--device=gpu", "--configs=small_mlp,wide_mlp", "--modes=fit64"]
        rows += ["--jit=on", "--paths=constant,op-in-step", "--rounds=5"]
        no_graphs = ["env", "XLA_FLAGS=--xla_gpu_enable_command_buffer="]
        return [
            ("bench_floor", rows + [f"--out={name('bench_floor')}"], 300, ROOT),
            ("bench_floor_no_command_buffers", no_graphs + rows + [f"--out={name('bench_floor_ncb')}"], 300, ROOT),
            (
                "step_timeline_small_mlp_fit64_jit",
                module("step_timeline", "--mode=fit64", "--jit", "--paths=constant,op-in-step"),
                300,
                ROOT,
            ),
            ("small_batch_levers", module("small_batch_levers"), 300, ROOT),
        ]
    if mode == "copies":
        return [
            ("no_copy_profile", module("no_copy_profile"), 400, ROOT),
            ("no_copy_profile_mirrored", module("no_copy_profile", "--mirrored"), 400, ROOT),
        ]
    if mode == "mirrored":
        return [
            (
                "no_copy_profile_attribute",
                module("no_copy_profile", "--mirrored", "--spe=1", "--attribute"),
                600,
                ROOT,
            ),
            ("mirrored_placement", module("mirrored_placement"), 300, ROOT),
        ]
    if mode == "kernels":
        if not args.kernels:
            sys.exit(
                "benchmarks.run: mode kernels needs --kernels D (benchmarks/kernel_bench/build.sh D, and the SDK test ops)"
            )
        k = args.kernels
        benches = [gpu_run.kernel_bench(args, name("kernel_bench"))]
        if os.path.exists(os.path.join(k, "kernel_bench_baseline")):
            benches.append(gpu_run.kernel_bench(args, name("kernel_bench_baseline"), "kernel_bench_baseline"))
        return benches + [
            (
                "vs_torch",
                module("vs_torch", "--mib=256,1024,4096", f"--json={name('vs_torch')}.json")
                + [f"--kernel-bench-json={cmd[-1].split('=', 1)[1]}" for _, cmd, _, _ in benches],
                900,
                ROOT,
            ),
            (
                "launcher_generators",
                module(
                    "launcher_generators",
                    f"--sdk-test-ops={k}/_sdk_test_ops.so",
                    f"--by-hand={k}/drift_walk_by_hand",
                    f"--out={name('launcher_generators')}.json",
                ),
                600,
                ROOT,
            ),
        ]
    if mode == "ptx":
        ptx = os.environ.get("OTF_TEST_PTX") or os.path.join(args.kernels or ".", "test_kernels.ptx")
        return [
            ("ptx_paths", module("ptx_paths", f"--ptx={ptx}", f"--out={name('ptx_paths')}.json"), 600, ROOT),
            (
                "input_bench_ptx_paths",
                module(
                    "input_bench_ptx_paths",
                    f"--ptx={ptx}",
                    "--device=gpu",
                    "--configs=small_mlp,wide_mlp",
                    "--modes=fit64",
                    "--jit=off,on",
                    "--paths=constant,numpy+prefetch,op-in-step,ptx-op,cupy-bridge",
                    "--seconds=1",
                    f"--out={name('input_bench_ptx_paths')}",
                ),
                600,
                ROOT,
            ),
        ]
    if mode == "soak":
        return [("soak", module("soak", "--steps=1000000", f"--out={name('soak')}.json"), 600, ROOT)]
    raise ValueError(mode)


def main():
    return gpu_run.run(gpu_run.parser(__doc__, MODES).parse_args(), MODES, steps)


if __name__ == "__main__":
    sys.exit(main())
