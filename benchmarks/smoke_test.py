"""Every script of benchmarks/ in its --smoke mode on the CPU: toy sizes, so none of them
rots where CI has no GPU. The parts that need a GPU (NVML counters, CUDA programs, CuPy)
are skipped by the scripts themselves; a peer library that is not installed gives a note.

    bazel test //benchmarks:smoke_test
"""

import argparse
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SDK_TEST_OPS = "{sdk_test_ops}"  # filled in from --sdk-test-ops

# (script, arguments): every script in benchmarks/ (tests/ below checks none is missing).
CPU_RUNS = [
    ("op_cost.py", ["--smoke", "--device=cpu"]),
    ("loop_counter.py", ["--smoke"]),
    ("op_timeline.py", ["--smoke"]),
    ("step_timeline.py", ["--smoke"]),
    ("mirrored_placement.py", ["--smoke"]),
    ("no_copy_profile.py", ["--smoke"]),
    ("launcher_generators.py", ["--smoke", "--sdk-test-ops", SDK_TEST_OPS]),
    ("peer_rates.py", ["--smoke"]),
    ("interop.py", ["--smoke", "--ptx", "{test_ptx}"]),
    ("soak.py", ["--smoke", "--quiet"]),
    (
        "input_bench_interop.py",
        ["--ptx={test_ptx}", "--configs=seed", "--modes=fit1", "--paths=constant,ptx-op,cupy-bridge"]
        + ["--seconds=0.2", "--rounds=1", "--out={tmp}"],
    ),
]
# Not here: the peers (peers/) run through peer_rates.py; loops.py is a module the scripts
# import, run through them; kernel_bench/ is a CUDA program built by its build.sh (GPU only);
# __init__.py is Bazel's.
NOT_RUN = {"smoke_test.py", "__init__.py", "loops.py"}


class SmokeTest(unittest.TestCase):
    def test_every_script_is_run(self):
        scripts = {f for f in os.listdir(HERE) if f.endswith(".py")} - NOT_RUN
        self.assertEqual(sorted(scripts - {script for script, _ in CPU_RUNS}), [])

    def test_scripts(self):
        env = dict(os.environ, CUDA_VISIBLE_DEVICES="", TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=os.pathsep.join(sys.path))
        for script, args in CPU_RUNS:
            args = [
                a.format(sdk_test_ops=ARGS.sdk_test_ops, test_ptx=ARGS.test_ptx, tmp=tempfile.mkdtemp()) for a in args
            ]
            with self.subTest(script=script):
                out = subprocess.run(
                    [sys.executable, os.path.join(HERE, script)] + args,
                    capture_output=True,
                    text=True,
                    timeout=400,
                    env=env,
                )
                print(f"== {script} rc={out.returncode}\n{out.stdout[-1500:]}", flush=True)
                self.assertEqual(out.returncode, 0, f"{script}: {out.stderr[-3000:]}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--sdk-test-ops", required=True, help="tests/sdk_ops' _sdk_test_ops.so")
    parser.add_argument("--test-ptx", required=True, help="tf_ops/interop's test kernels as PTX")
    ARGS, rest = parser.parse_known_args()
    unittest.main(argv=[sys.argv[0]] + rest)
