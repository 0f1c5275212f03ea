"""Runs the GPU tests from a built wheel on any GPU host with TensorFlow.

    python3 tools/testing/gpu_run.py --wheel dist/tf_onthefly-*.whl --out DIR \\
        [--target D] [--kernels D] [--tests NAME,...] [--steps STEP,...] [--dry-run] MODE [MODE ...]

Run from a checkout of the repository (the test files are read from it). The wheel is
installed into this Python (`pip install --no-deps`; TensorFlow must already be there), or
into folder D with --target, put first on every run's PYTHONPATH. Modes:

  tests     every tests/*_test.py with --test_device=gpu (the requires-gpu variants), as
            plain Python test files, each also with the arguments another of its targets in
            tests/BUILD passes (--tests picks some: --tests=data,sdk); --kernels D,
            holding bazel-bin/tests/sdk_ops/*.so, adds tests/sdk_test.py; and the kernel
            bench (benchmarks/kernel_bench: the SDK's kernels checked bit for bit against
            the host; --tests name kernel_bench) from D, built there by
            `benchmarks/kernel_bench/build.sh D`: without --kernels that step fails, so a
            GPU test run does not pass with the bench unbuilt
  smoke     the wheel's smoke test from outside the checkout (tests/wheel_smoke.py)
  sanitize  compute-sanitizer memcheck and racecheck over every GPU kernel
  all       every mode above, in that order

Each step's raw output goes to DIR/<date>_<card>_<step>.log; DIR/<date>_<card>_header.txt
says which card, driver, software, commit and command; DIR/<date>_<card>_summary.txt has one
line per step with its exit status. The exit status is 1 if any step failed.

The measurements run the same way, with this file's machinery, from benchmarks/:
`python -m benchmarks.run --wheel ... --out DIR MODE` (benchmarks/README.md).
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
MODES = ["tests", "smoke", "sanitize"]
# Tests that read files only (nothing runs on a GPU; symbol_versions_test takes its libraries
# from Bazel).
NO_DEVICE_TESTS = {"tutorial_test", "conventions_test", "symbol_versions_test"}
PY = sys.executable


def kernel_bench(args, out, build="kernel_bench"):
    """The step running benchmarks/kernel_bench's program `build` from --kernels D (exit
    status 1 on any mismatch or CUDA error), its rows in out.json; without --kernels, a step
    that fails saying why."""
    if not args.kernels:
        why = f"{build}: no --kernels D (benchmarks/kernel_bench/build.sh D builds it)"
        return (build, [PY, "-c", f"import sys; sys.exit({why!r})"], 60, ROOT)
    label = "old" if build.endswith("baseline") else "new"
    return (build, [os.path.join(args.kernels, build), f"--label={label}", f"--json={out}.json"], 600, args.kernels)


def _variant_args():
    """{test file's name: [its arguments, ...]} of the otf_py_test targets in tests/BUILD that
    pass arguments of their own (torch_python_kernels_test: torch_test --kernels=python)."""
    variants = {}
    for block in re.findall(r"^otf_py_test\((.*?)^\)", open(os.path.join(ROOT, "tests", "BUILD")).read(), re.M | re.S):
        src, extra = re.search(r'srcs = \["(\w+)\.py"', block), re.search(r"args = \[([^\]]*)\]", block)
        if src and extra:
            variants.setdefault(src.group(1), []).append(re.findall(r'"([^"]+)"', extra.group(1)))
    return variants


def steps(mode, args, name):
    """[(step name, command, timeout seconds, working directory)] of one mode."""
    if mode == "tests":
        chosen = [f"{t}_test" for t in args.tests.split(",")] if args.tests else None
        out, variants = [], _variant_args()
        for path in sorted(glob.glob(os.path.join(ROOT, "tests", "*_test.py"))):
            test = os.path.basename(path)[:-3]
            if test in NO_DEVICE_TESTS or (chosen and test not in chosen):
                continue
            if test == "sdk_test" and not args.kernels:
                print("gpu_run: sdk_test skipped (it needs --kernels with _sdk_test_ops.so)")
                continue
            out.append((f"test_{test}", [PY, path, "--test_device=gpu"], 900, ROOT))
            for extra in variants.get(test, []):  # as tests/BUILD's other _gpu targets run it
                label = "_".join(a.lstrip("-").replace("=", "_") for a in extra)
                out.append((f"test_{test}_{label}", [PY, path, "--test_device=gpu", *extra], 900, ROOT))
        if not chosen or "kernel_bench" in args.tests.split(","):
            out.append(("test_kernel_bench",) + kernel_bench(args, name("test_kernel_bench"))[1:])
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
    if mode == "sanitize":
        smoke = os.path.join(ROOT, "tests", "gpu_sanitizer_smoke.py")
        return [
            (f"sanitize_{tool}", ["compute-sanitizer", "--tool", tool, PY, smoke], 600, ROOT)
            for tool in ("memcheck", "racecheck")
        ]
    raise ValueError(mode)


def portable(text):
    """`text` without this machine's paths: the checkout's root, the home folder, this Python
    (so a header or log can be kept under benchmarks/results/ as it is)."""
    for path, short in ((sys.executable, "python"), (ROOT + os.sep, ""), (ROOT, "."), (os.path.expanduser("~"), "~")):
        text = text.replace(path, short)
    return text


def shown(cmd):
    return portable(" ".join(shlex.quote(c) for c in cmd))


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
    # TensorFlow's profiler records device events only where it can load CUPTI, and the
    # core loaded without TensorFlow finds its CUDA runtime as libcudart.so.12
    # (tf_ops/common/cuda_runtime.h): CUDA's own install and
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


def parser(doc, modes):
    """The command line every GPU host runner takes: a wheel, an output folder, modes."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--wheel", required=True, help="the tf_onthefly wheel to install and run")
    ap.add_argument("--out", required=True, help="folder for the raw outputs")
    ap.add_argument("--target", help="install the wheel into this folder instead of this Python")
    ap.add_argument("--kernels", help="folder of built test kernels: bazel-bin/tests/sdk_ops/*.so and the like")
    ap.add_argument("--dry-run", action="store_true", help="print the steps' commands; install and run nothing")
    ap.add_argument("--steps", default="", help="only these steps of the modes, comma-separated (--dry-run lists them)")
    ap.add_argument("modes", nargs="+", choices=modes + ["all"])
    return ap


def run(args, modes, steps_of):
    """Installs the wheel, writes the header, runs every step of the chosen modes (`steps_of(mode,
    args, name)` gives them) with its log; the exit status: 1 if any step failed."""
    args.kernels = args.kernels and os.path.abspath(args.kernels)
    modes = modes if "all" in args.modes else args.modes
    if args.steps:  # a long mode in parts, each within a time limit
        chosen, every = set(args.steps.split(",")), steps_of

        def steps_of(mode, args, name):
            return [s for s in every(mode, args, name) if s[0] in chosen]

    if args.dry_run:
        for mode in modes:
            for step, cmd, timeout, cwd in steps_of(mode, args, lambda s: os.path.join(args.out, s)):
                print(f"{mode:9s} {step:32s} (cd {portable(cwd)}; timeout {timeout} s) {shown(cmd)}")
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
        f"command: {shown(sys.argv)}",
        f"date: {datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')}",
        f"commit: {capture(['git', '-C', ROOT, 'rev-parse', 'HEAD'])} {capture(['git', '-C', ROOT, 'status', '--short', '-uno']) and '(modified)'}",
        f"wheel: {os.path.basename(args.wheel)}",
        f"gpu: {gpu}",
        f"python: {sys.version.split()[0]}",
        f"CUPTI and CUDA runtime libraries: {env.get('LD_LIBRARY_PATH') or 'not found (traces have no device events)'}",
        capture([PY, "-m", "tf_onthefly.info"], env=env, cwd=tempfile.gettempdir()),
    ]
    header = portable("\n".join(header))
    with open(name("header") + ".txt", "w") as f:
        f.write(header + "\n")
    print(header, flush=True)

    failed = 0
    with open(name("summary") + ".txt", "a") as summary:
        for mode in modes:
            for step, cmd, timeout, cwd in steps_of(mode, args, name):
                log = name(step) + ".log"
                with open(log, "w") as f:
                    f.write(f"$ {shown(cmd)}\n")
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


def main():
    ap = parser(__doc__, MODES)
    ap.add_argument("--tests", default="", help="tests mode: only these, comma-separated (data,sdk,...)")
    return run(ap.parse_args(), MODES, steps)


if __name__ == "__main__":
    sys.exit(main())
