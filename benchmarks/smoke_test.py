"""Every module of benchmarks/ run as the scripts they are, at toy sizes on the CPU, so none of
them rots where CI has no GPU. The parts that need a GPU (NVML counters, CUDA programs, CuPy)
are skipped by the scripts themselves; a peer library that is not installed gives a note.

    bazel test //benchmarks:smoke_test
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)  # holds benchmarks/: `python -m benchmarks.<name>` runs there

# (module, arguments): every module of benchmarks/ (the test below checks none is missing).
CPU_RUNS = [
    ("op_cost", ["--smoke", "--device=cpu"]),
    ("loop_counter", ["--smoke"]),
    ("small_batch_levers", ["--smoke"]),
    ("op_timeline", ["--smoke"]),
    ("step_timeline", ["--smoke"]),
    ("mirrored_placement", ["--smoke"]),
    ("no_copy_profile", ["--smoke"]),
    ("launcher_generators", ["--smoke", "--sdk-test-ops", "{sdk_test_ops}"]),
    ("rates", ["--mib=1", "--repeats=1", "--unroll=2"]),
    ("peer_rates", ["--smoke"]),
    ("frameworks", ["jax", "--smoke"]),
    ("frameworks", ["torch", "--smoke"]),
    ("ptx_paths", ["--smoke", "--ptx", "{test_ptx}"]),
    ("soak", ["--smoke", "--quiet"]),
    ("vs_torch", ["--smoke"]),
    ("from_python_copy", ["--smoke"]),
    (
        "input_bench_ptx_paths",
        ["--ptx={test_ptx}", "--configs=small_mlp", "--modes=fit1", "--paths=constant,ptx-op,cupy-bridge"]
        + ["--seconds=0.2", "--rounds=1", "--out={tmp}"],
    ),
    ("bench_compare", ["{bench_json}", "{bench_json}"]),
    ("run", ["--wheel=tf_onthefly.whl", "--out={tmp}", "--kernels={tmp}", "--dry-run", "all"]),
]
# Not run here: loops is a module the scripts import, run through them; the peers (peers/)
# run through peer_rates; kernel_bench/'s CUDA program is compiled by `bazel build //...`
# and runs on a GPU only.
NOT_RUN = {"__init__", "smoke_test", "loops"}


def bench_json():
    """A bench.json of two rows, as the input benchmark writes it, for bench_compare."""
    rows = [
        dict(config="small_mlp", mode="fit1", jit=False, path=p, vs_constant=r, uncertainty=0.01)
        for p, r in (("constant", 1.0), ("op-in-step", 0.9))
    ]
    path = os.path.join(tempfile.mkdtemp(), "bench.json")
    with open(path, "w") as f:
        json.dump(dict(results=rows, measuring_s=1.0, elapsed_s=2.0), f)
    return path


class SmokeTest(unittest.TestCase):
    def test_every_module_is_run(self):
        modules = {f[: -len(".py")] for f in os.listdir(HERE) if f.endswith(".py")} - NOT_RUN
        self.assertEqual(sorted(modules - {module for module, _ in CPU_RUNS}), [])

    def test_modules(self):
        env = dict(os.environ, CUDA_VISIBLE_DEVICES="", TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=os.pathsep.join(sys.path))
        compared = bench_json()
        for module, args in CPU_RUNS:
            args = [
                a.format(
                    sdk_test_ops=ARGS.sdk_test_ops, test_ptx=ARGS.test_ptx, tmp=tempfile.mkdtemp(), bench_json=compared
                )
                for a in args
            ]
            with self.subTest(module=module):
                out = subprocess.run(
                    [sys.executable, "-m", f"benchmarks.{module}"] + args,
                    capture_output=True,
                    text=True,
                    timeout=400,
                    env=env,
                    cwd=ROOT,
                )
                print(f"== {module} rc={out.returncode}\n{out.stdout[-1500:]}", flush=True)
                self.assertEqual(out.returncode, 0, f"{module}: {out.stderr[-3000:]}")

    def test_rates_every_candidate(self):
        """rates.measure runs every candidate: each registered generator, XLA, TF's ops, NumPy
        (tiny sizes; no timed assertion)."""
        import tf_onthefly
        from benchmarks import rates
        from tf_onthefly import _load

        res, notes = rates.measure([1], repeats=1, unroll=2)
        names = [r["name"] for r in res]
        expected = ["random_batch uniform", "random_batch normal float16", rates.NUMPY, rates.NUMPY_NORMAL]
        for name in expected + (["random_batch normal, XLA"] if _load.HAS_XLA else []):
            self.assertIn(name, names)
        for generator in tf_onthefly.REGISTRY:
            self.assertTrue(any(n.startswith(generator + " (") for n in names), generator)
        self.assertEqual(len(names), len(set(names)))
        if _load.HAS_XLA:
            self.assertEqual(notes, [])
        else:  # XLA rows are left out, and the notes say why
            self.assertFalse([n for n in names if "XLA" in n])
            self.assertEqual(len(notes), 1)
            self.assertIn("no XLA kernels", notes[0])
        for r in res:
            self.assertGreater(r["gb_per_s"], 0, r)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--sdk-test-ops", required=True, help="tests/sdk_ops' _sdk_test_ops.so")
    parser.add_argument("--test-ptx", required=True, help="the test kernels as PTX (test_ptx)")
    ARGS, rest = parser.parse_known_args()
    unittest.main(argv=[sys.argv[0]] + rest)
