"""Runs the GPU tests and benchmarks from a built wheel on any GPU host with TensorFlow.

    python3 tools/testing/gpu_run.py --wheel dist/tf_onthefly-*.whl --out DIR \\
        [--target D] [--kernels D] [--tests NAME,...] [--dry-run] MODE [MODE ...]

Run from a checkout of the repository (the test files and benchmarks/ are read from it).
The wheel is installed into this Python (`pip install --no-deps`; TensorFlow must already
be there), or into folder D with --target, put first on every run's PYTHONPATH. Modes:

  tests     every tests/*_test.py with --test_device=gpu (the requires-gpu variants), as
            plain Python test files (--tests picks some: --tests=data,sdk)
  smoke     the wheel's smoke test from outside the checkout (tests/wheel_smoke.py)
  bench     the input benchmark's GPU rows (python -m tf_onthefly.bench), and its default
            run twice
  rates     generation rates: the peers (benchmarks/peer_rates.py), ours next to TF's ops,
            a copy and NumPy (python -m tf_onthefly.rates), one op's kernel timeline
  cost      what one op adds to a step (benchmarks/op_cost.py), with and without XLA, and
            what a graph loop's counter costs (benchmarks/loop_counter.py)
  trace     where a step's time goes, path by path (benchmarks/step_timeline.py)
  copies    host<->device bytes per step, one GPU and MirroredStrategy (no_copy_profile)
  mirrored  the MirroredStrategy rows one change at a time, and the placer's log
  sanitize  compute-sanitizer memcheck and racecheck over every GPU kernel
  kernels   the kernel bench and the launcher-generator comparison; --kernels D holds what
            `benchmarks/kernel_bench/build.sh D` built and bazel-bin/tests/sdk_ops/*.so
  interop   the PTX op and the device-array bridge (benchmarks/interop.py) and the input
            benchmark with their rows (benchmarks/input_bench_interop.py); needs the test
            PTX (bazel-bin/tf_ops/interop/test_kernels.ptx) in --kernels D or $OTF_TEST_PTX
  soak      1,000,000 training steps, memory and data position checked (benchmarks/soak.py)
  all       every mode above, in that order

--kernels D also lets `tests` run tests/sdk_test.py (it needs the SDK's test op library).
Each step's raw output goes to DIR/<date>_<card>_<step>.log (JSON beside it where the
script writes some), ready to be kept under benchmarks/results/; DIR/<date>_<card>_header.txt
says which card, driver, software, commit and command; DIR/<date>_<card>_summary.txt has one
line per step with its exit status. The exit status is 1 if any step failed.
"""

import argparse
import datetime
import glob
import importlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
MODES = [
    "tests",
    "smoke",
    "bench",
    "rates",
    "cost",
    "trace",
    "copies",
    "mirrored",
    "sanitize",
    "kernels",
    "interop",
    "soak",
]
NO_DEVICE_TESTS = {"tutorial_test", "conventions_test"}  # read files only: nothing runs on a GPU
PY = sys.executable


def bench(out, configs, modes, paths, rounds=3):
    return [
        PY,
        "-m",
        "tf_onthefly.bench",
        "--device=gpu",
        f"--configs={configs}",
        f"--modes={modes}",
        "--jit=off,on",
    ] + [
        f"--paths={paths}",
        "--seconds=1",
        f"--rounds={rounds}",
        f"--out={out}",
    ]


def steps(mode, args, name):
    """[(step name, command, timeout seconds, working directory)] of one mode."""
    b = os.path.join(ROOT, "benchmarks")
    if mode == "tests":
        chosen = [f"{t}_test" for t in args.tests.split(",")] if args.tests else None
        out = []
        for path in sorted(glob.glob(os.path.join(ROOT, "tests", "*_test.py"))):
            test = os.path.basename(path)[:-3]
            if test in NO_DEVICE_TESTS or (chosen and test not in chosen):
                continue
            if test == "sdk_test" and not args.kernels:
                print("gpu_run: sdk_test skipped (it needs --kernels with _sdk_test_ops.so)")
                continue
            out.append((f"test_{test}", [PY, path, "--test_device=gpu"], 900, ROOT))
        return out
    if mode == "smoke":  # from outside the checkout: the installed wheel, not the sources
        return [
            ("info", [PY, "-m", "tf_onthefly.info"], 120, tempfile.gettempdir()),
            (
                "wheel_smoke",
                [PY, os.path.join(ROOT, "tests", "wheel_smoke.py"), "--any-location"],
                600,
                tempfile.gettempdir(),
            ),
        ]
    if mode == "bench":
        return [
            (
                "bench_seed",
                bench(name("bench_seed"), "seed", "fit1,fit64,loop64", "constant,numpy,op-in-step,tf-stateless"),
                600,
                ROOT,
            ),
            (
                "bench_wide_cnn",
                bench(name("bench_wide_cnn"), "wide,cnn", "fit64", "constant,op-in-step,tf-stateless", 5),
                600,
                ROOT,
            ),
        ] + [  # the default run, as a user runs it, twice back to back (docs/bench.md)
            (f"bench_default{n}", [PY, "-m", "tf_onthefly.bench", f"--out={name(f'bench_default{n}')}"], 600, ROOT)
            for n in (1, 2)
        ]
    if mode == "rates":
        sizes = "--mib=256,1024,4096"
        return [
            (
                "peer_rates",
                [PY, f"{b}/peer_rates.py", sizes, "--repeats=5", f"--json={name('peer_rates')}.json"],
                900,
                ROOT,
            ),
            (
                "rates",
                [
                    PY,
                    "-m",
                    "tf_onthefly.rates",
                    sizes,
                    "--repeats=5",
                    "--unroll=20",
                    f"--json={name('rates')}.json",
                    "--only=random_batch uniform,random_batch normal,stateless,copy,numpy",
                ],
                900,
                ROOT,
            ),
            ("op_timeline_256", [PY, f"{b}/op_timeline.py", "--mib=256"], 300, ROOT),
            ("op_timeline_256_steps_on_gpu", [PY, f"{b}/op_timeline.py", "--mib=256", "--steps_on=gpu"], 300, ROOT),
        ]
    if mode == "cost":
        return [
            ("op_cost", [PY, f"{b}/op_cost.py", "--placement"], 600, ROOT),
            ("op_cost_jit", [PY, f"{b}/op_cost.py", "--jit"], 600, ROOT),
            ("loop_counter", [PY, f"{b}/loop_counter.py"], 600, ROOT),
        ]
    if mode == "trace":
        return [
            (
                f"step_timeline_{spec.replace('--', '').replace(' ', '_').replace('=', '')}",
                [PY, f"{b}/step_timeline.py"] + spec.split(),
                300,
                ROOT,
            )
            for spec in (
                "--mode=fit64 --jit",
                "--mode=loop64 --jit",
                "--mode=loop64",
                "--config=wide --mode=fit64 --jit",
            )
        ]
    if mode == "copies":
        return [
            ("no_copy_profile", [PY, f"{b}/no_copy_profile.py"], 400, ROOT),
            ("no_copy_profile_mirrored", [PY, f"{b}/no_copy_profile.py", "--mirrored"], 400, ROOT),
        ]
    if mode == "mirrored":
        return [
            (
                "no_copy_profile_attribute",
                [PY, f"{b}/no_copy_profile.py", "--mirrored", "--spe=1", "--attribute"],
                600,
                ROOT,
            ),
            ("mirrored_placement", [PY, f"{b}/mirrored_placement.py"], 300, ROOT),
        ]
    if mode == "sanitize":
        smoke = os.path.join(ROOT, "tests", "gpu_sanitizer_smoke.py")
        return [
            (f"sanitize_{tool}", ["compute-sanitizer", "--tool", tool, PY, smoke], 600, ROOT)
            for tool in ("memcheck", "racecheck")
        ]
    if mode == "kernels":
        if not args.kernels:
            sys.exit(
                "gpu_run: mode kernels needs --kernels D (benchmarks/kernel_bench/build.sh D, and the SDK test ops)"
            )
        k = args.kernels
        return [
            ("kernel_bench", [os.path.join(k, "harness"), os.path.join(k, "kernels.cubin"), "new"], 600, k),
            (
                "launcher_generators",
                [
                    PY,
                    f"{b}/launcher_generators.py",
                    f"--sdk-test-ops={k}/_sdk_test_ops.so",
                    f"--by-hand={k}/drift_walk_by_hand",
                    f"--out={name('launcher_generators')}.json",
                ],
                600,
                ROOT,
            ),
        ]
    if mode == "interop":
        ptx = os.environ.get("OTF_TEST_PTX") or os.path.join(args.kernels or ".", "test_kernels.ptx")
        return [
            ("interop", [PY, f"{b}/interop.py", f"--ptx={ptx}", f"--out={name('interop')}.json"], 600, ROOT),
            (
                "input_bench_interop",
                [
                    PY,
                    f"{b}/input_bench_interop.py",
                    f"--ptx={ptx}",
                    "--device=gpu",
                    "--configs=seed,wide",
                    f"--out={name('input_bench_interop')}",
                ],
                600,
                ROOT,
            ),
        ]
    if mode == "soak":
        return [("soak", [PY, f"{b}/soak.py", "--steps=1000000", f"--out={name('soak')}.json"], 600, ROOT)]
    raise ValueError(mode)


def capture(cmd, **kw):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=120, **kw).stdout.strip()
    except (OSError, subprocess.SubprocessError) as e:
        return f"({cmd[0]}: {e})"


def install(args, env):
    """Installs the wheel; returns the environment every step runs with."""
    if args.target:
        shutil.rmtree(args.target, ignore_errors=True)
        subprocess.run([PY, "-m", "pip", "install", "-q", "--no-deps", "--target", args.target, args.wheel], check=True)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (args.target, env.get("PYTHONPATH")) if p)
    else:
        subprocess.run([PY, "-m", "pip", "install", "-q", "--no-deps", "--force-reinstall", args.wheel], check=True)
    # TensorFlow's profiler records device events only where it can load CUPTI, and
    # kernel_bench's drift_walk_by_hand needs the CUDA 12 runtime: CUDA's own install and
    # PyPI's nvidia-cuda-cupti-cu12 / nvidia-cuda-runtime-cu12, where present, on the library
    # path of every step.
    cupti = glob.glob("/usr/local/cuda*/extras/CUPTI/lib64/libcupti.so*")
    for package in ("nvidia.cuda_cupti", "nvidia.cuda_runtime"):
        try:
            module = importlib.import_module(package)
        except ImportError:
            continue
        cupti += glob.glob(os.path.join(list(module.__path__)[0], "lib", "lib*.so*"))
    dirs = sorted({os.path.dirname(c) for c in cupti})
    if dirs:
        env["LD_LIBRARY_PATH"] = os.pathsep.join(dirs + [env.get("LD_LIBRARY_PATH", "")])
    if args.kernels:  # tests/sdk_test.py loads the SDK's test ops from beside it
        for so in glob.glob(os.path.join(args.kernels, "*.so")):
            shutil.copy(so, os.path.join(ROOT, "tests", "sdk_ops"))
    return env


def main():
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--wheel", required=True, help="the tf_onthefly wheel to install and run")
    ap.add_argument("--out", required=True, help="folder for the raw outputs")
    ap.add_argument("--target", help="install the wheel into this folder instead of this Python")
    ap.add_argument("--kernels", help="folder of kernel_bench's build and the SDK test op libraries")
    ap.add_argument("--tests", default="", help="tests mode: only these, comma-separated (data,sdk,...)")
    ap.add_argument("--dry-run", action="store_true", help="print the steps' commands; install and run nothing")
    ap.add_argument("modes", nargs="+", choices=MODES + ["all"])
    args = ap.parse_args()
    args.kernels = args.kernels and os.path.abspath(args.kernels)
    modes = MODES if "all" in args.modes else args.modes
    if args.dry_run:
        for mode in modes:
            for step, cmd, timeout, cwd in steps(mode, args, lambda s: os.path.join(args.out, s)):
                print(f"{mode:9s} {step:32s} (cd {cwd}; timeout {timeout} s) {' '.join(map(shlex.quote, cmd))}")
        return 0
    os.makedirs(args.out, exist_ok=True)
    out = os.path.abspath(args.out)

    gpu = capture(["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"])
    first = gpu.splitlines()[0].split(",")[0] if gpu and not gpu.startswith("(") else "nogpu"
    card = re.sub(r"[^a-z0-9]+", "", first.lower().replace("nvidia", ""))[:16] or "gpu"
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    name = lambda step: os.path.join(out, f"{stamp}_{card}_{step}")  # noqa: E731

    env = install(args, dict(os.environ, PYTHONUNBUFFERED="1", TF_CPP_MIN_LOG_LEVEL="2"))
    header = [
        f"command: {' '.join(shlex.quote(a) for a in sys.argv)}",
        f"date: {datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')}",
        f"commit: {capture(['git', '-C', ROOT, 'rev-parse', 'HEAD'])} {capture(['git', '-C', ROOT, 'status', '--short', '-uno']) and '(modified)'}",
        f"wheel: {os.path.basename(args.wheel)}",
        f"gpu: {gpu}",
        f"python: {sys.version.split()[0]}",
        f"CUPTI and CUDA runtime libraries: {env.get('LD_LIBRARY_PATH') or 'not found (traces have no device events)'}",
        capture([PY, "-m", "tf_onthefly.info"], env=env, cwd=tempfile.gettempdir()),
    ]
    with open(name("header") + ".txt", "w") as f:
        f.write("\n".join(header) + "\n")
    print("\n".join(header), flush=True)

    failed = 0
    with open(name("summary") + ".txt", "a") as summary:
        for mode in modes:
            for step, cmd, timeout, cwd in steps(mode, args, name):
                log = name(step) + ".log"
                with open(log, "w") as f:
                    f.write(f"$ {' '.join(shlex.quote(c) for c in cmd)}\n")
                    f.flush()
                    try:
                        rc = subprocess.run(
                            cmd, stdout=f, stderr=subprocess.STDOUT, env=env, cwd=cwd, timeout=timeout
                        ).returncode
                    except subprocess.TimeoutExpired:
                        rc = "timeout"
                    except OSError as e:
                        f.write(f"{e}\n")
                        rc = "not run"
                line = f"{mode:9s} {step:40s} rc={rc}"
                print(line, flush=True)
                summary.write(line + "\n")
                failed += rc != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
