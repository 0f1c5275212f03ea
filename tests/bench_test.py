"""The input benchmark (tf_onthefly.bench): its measurement under a fake, noisy clock; the
benchmark end to end (tiny timings: no timed assertions); profile_input."""

import json
import math
import os
import random
import tempfile
import time

import tensorflow as tf

from tf_onthefly import bench
from tf_onthefly.bench import _configs, _measure, _verdict

import device_util


class FakeMachine:
    """A clock that a busy machine slows: spells during which every chunk takes `factor`
    times longer (another build took the cores), single slow chunks, and a few per cent of
    scatter. Time only passes when a runner asks for chunks."""

    def __init__(self, rng, chunk_s, slow_factor=3.0, spell_chunks=20.0):
        self.t, self.rng, self.spells = 0.0, rng, []
        t = 0.0
        while t < 100000 * chunk_s:
            t += rng.expovariate(1 / (spell_chunks * chunk_s))  # calm, then a slow spell
            length = rng.uniform(0.3, spell_chunks) * chunk_s
            self.spells.append((t, t + length, rng.uniform(1.3, slow_factor)))
            t += length
        self._next = 0

    def factor(self):
        while self._next < len(self.spells) and self.spells[self._next][1] <= self.t:
            self._next += 1
        if self._next < len(self.spells) and self.spells[self._next][0] <= self.t:
            return self.spells[self._next][2]
        return 1.0


class FakeRunner:
    """A path whose steps truly take `step_s` seconds each, timed on the fake machine."""

    def __init__(self, machine, step_s, steps_per_chunk):
        self.machine, self.step_s, self.steps_per_chunk = machine, step_s, steps_per_chunk

    def chunk_times(self, chunks):
        m, out = self.machine, []
        for i in range(chunks + 1):
            d = self.steps_per_chunk * self.step_s * m.factor() * math.exp(m.rng.gauss(0, 0.05))
            if m.rng.random() < 0.05:
                d *= m.rng.uniform(1.5, 4)  # one chunk hit by something else
            if i == 0:
                d *= 2  # start-up: discarded by the measurement
            m.t += d
            if i:
                out.append(d)
        return out


def fake_group(seed, **machine):
    """One (config, mode, jit) on a fake machine: true ratios against the constant batch,
    and what the measurement makes of them."""
    rng = random.Random(seed)
    m = FakeMachine(rng, 0.1, **machine)
    step_s = rng.uniform(1e-3, 1e-2)
    truth = {
        "constant": 1.0,
        "as-fast": 1.0,
        "near": rng.uniform(0.9, 1.0),
        "mid": rng.uniform(0.2, 1.0),
        "slow": rng.uniform(0.02, 0.5),
    }
    runners = {p: FakeRunner(m, step_s / r, max(1, round(0.1 / (step_s / r)))) for p, r in truth.items()}
    return truth, _measure.measure(runners, rounds=3)


class MeasurementTest(tf.test.TestCase):
    """The measurement, on a fake clock: what a noisy machine can and cannot make it say."""

    def check(self, groups, max_problems, min_coverage, **machine):
        rows = covered = problems = 0
        for seed in range(groups):
            truth, stats = fake_group(seed, **machine)
            self.assertEqual(stats["constant"]["vs_constant"], 1.0)
            for path, s in stats.items():
                if path == "constant":
                    continue
                rows += 1
                ratio, u = s["vs_constant"], s["uncertainty"]
                if s["status"] == "measurement problem":
                    problems += 1
                else:
                    # The bound: nothing reported above the constant batch beyond its uncertainty.
                    self.assertLessEqual(ratio - u, 1.0, (seed, path, s))
                    self.assertLessEqual(ratio, _measure.LIMIT, (seed, path, s))
                self.assertNotIn("faster", _verdict.speed_label(ratio, u, s["status"]))
                covered += abs(ratio - truth[path]) <= u
        self.assertLessEqual(problems, max_problems)
        self.assertGreaterEqual(covered / rows, min_coverage, f"{covered} of {rows} rows cover the truth")
        return problems

    def test_a_busy_machine_cannot_make_a_row_beat_the_bound(self):
        # Slow spells up to 2x, a fifth of the time: no row reported above the bound (one
        # in a few hundred may be flagged a measurement problem), and the uncertainties
        # cover the true ratio.
        self.check(200, max_problems=2, min_coverage=0.9, slow_factor=2.0, spell_chunks=10.0)

    def test_a_very_busy_machine_gives_problems_not_speed_ups(self):
        # Spells up to 3x, a third of the time, some as long as two windows: a few rows may
        # be reported as measurement problems, none as faster than the bound.
        self.check(200, max_problems=10, min_coverage=0.85, slow_factor=3.0, spell_chunks=20.0)

    def test_a_row_above_the_bound_is_measured_again_then_flagged(self):
        class Rigged:  # a path that really is faster than "constant": the bound is broken
            steps_per_chunk = 10

            def __init__(self, step_s):
                self.step_s = step_s

            def chunk_times(self, chunks):
                return [self.steps_per_chunk * self.step_s] * chunks

        stats = _measure.measure({"constant": Rigged(2e-3), "odd": Rigged(1e-3), "fine": Rigged(4e-3)}, rounds=2)
        self.assertTrue(stats["odd"]["remeasured"])
        self.assertEqual(stats["odd"]["status"], "measurement problem")
        self.assertLen(stats["odd"]["rounds"], 4)  # 2 rounds, then 2 more
        self.assertFalse(stats["fine"]["remeasured"])
        self.assertAllClose(stats["fine"]["vs_constant"], 0.5)
        self.assertEqual(stats["fine"]["status"], "")

    def test_a_slow_call_far_below_the_bound_is_timed_one_round(self):
        class Timed:  # `turns` 1: a call longer than a round, timed once a round
            steps_per_chunk = 64

            def __init__(self, step_s, turns=_measure.PASSES):
                self.step_s, self.turns, self.calls = step_s, turns, 0

            def chunk_times(self, chunks):
                self.calls += 1
                return [self.steps_per_chunk * self.step_s] * chunks

        runners = {
            "constant": Timed(1e-3),
            "far": Timed(1e-1, turns=1),  # 0.01x: settled by its first round
            "near": Timed(2e-3, turns=1),  # 0.5x: timed every round
            "many": Timed(1e-1),  # 0.01x, but a short call: timed every round
        }
        stats = _measure.measure(runners, rounds=3)
        self.assertEqual(runners["far"].calls, 1)
        self.assertLen(stats["far"]["rounds"], 1)
        self.assertTrue(stats["far"]["one_round"])
        self.assertAllClose(stats["far"]["vs_constant"], 0.01)
        self.assertAllClose(stats["far"]["uncertainty"], 0.01 * _measure.SETTLED_UNCERTAINTY)
        for path in ("near", "many"):
            self.assertLen(stats[path]["rounds"], 3)
            self.assertNotIn("one_round", stats[path])
        self.assertEqual(runners["near"].calls, 3)

    def test_labels_never_say_faster(self):
        self.assertEqual(_verdict.speed_label(0.43), "57 % slower")
        self.assertEqual(_verdict.speed_label(1.03), "same as constant")
        self.assertEqual(_verdict.speed_label(0.97, 0.04), "same as constant")
        self.assertEqual(_verdict.speed_label(1.3, 0.1, "measurement problem"), "measurement problem")

    def test_verdict_in_words(self):
        def row(path, ratio, u, status=""):
            return dict(config="small_mlp", mode="fit64", jit=False, path=path, vs_constant=ratio, uncertainty=u,
                        status=status, input_share=max(0.0, 1 - ratio))  # fmt: skip

        table = [
            row("constant", 1.0, 0.01, "upper bound"),
            row("numpy+prefetch", 0.40, 0.02),
            row("op-cpu-tfdata", 0.80, 0.03),
            row("op-in-step", 0.98, 0.03, "same as constant"),
        ]
        (v,) = bench.verdicts(table)
        self.assertEqual(v["use"], "op-in-step")
        self.assertAllClose(v["gain"], 0.98 / 0.40)
        self.assertIn("the input's share of the step is 60 % with numpy+prefetch, 20 % with op-cpu-tfdata, "
                      "none measurable with op-in-step.", v["text"])  # fmt: skip
        self.assertIn("Use op-in-step: 2.45x", v["text"])
        # The simple path as good as the rest: keep it.
        table = [row("constant", 1.0, 0.01, "upper bound"), row("numpy+prefetch", 0.99, 0.03, "same as constant"),
                 row("op-in-step", 1.0, 0.02, "same as constant")]  # fmt: skip
        (v,) = bench.verdicts(table)
        self.assertEqual(v["use"], "numpy+prefetch")
        self.assertIn("not the bottleneck", v["text"])


def fixture(name):
    """The rows of a GPU run kept as test data (testdata/README.md says which run)."""
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "testdata", name)) as f:
        return json.load(f)["results"]


class VerdictTest(tf.test.TestCase):
    """The advice follows the table: on two GPU runs' tables, a path measured above its
    constant batch (cnn, fit64, jit off: 1.19x on an H100, 1.16x on an H200) is weighed
    like any other row and named, never set aside for a path that measured 2x slower."""

    def test_no_verdict_disagrees_with_its_table(self):
        for name in ("bench_h100.json", "bench_h200.json"):
            table = fixture(name)
            made = bench.verdicts(table)
            self.assertLen(made, 9, name)
            self.assertEqual(_verdict.disagreements(table, made), [], name)

    def test_a_row_above_the_bound_is_named_and_still_chosen(self):
        for name in ("bench_h100.json", "bench_h200.json"):
            (v,) = [
                v
                for v in bench.verdicts(fixture(name))
                if (v["config"], v["mode"], v["jit"]) == ("cnn", "fit64", False)
            ]
            self.assertEqual(v["use"], "op-in-step", (name, v))
            self.assertIn("above it, so the constant batch is not this setting's bound", v["text"])
            self.assertIn("unknown with op-in-step (above the constant batch)", v["text"])
            self.assertGreater(v["gain"], 1.5)

    def test_the_check_finds_advice_against_the_table(self):
        table = fixture("bench_h100.json")
        made = bench.verdicts(table)
        for v in made:
            if (v["config"], v["mode"], v["jit"]) == ("cnn", "fit64", False):
                v["use"] = "numpy+prefetch"  # what the benchmark advised before it weighed every row
        (bad,) = _verdict.disagreements(table, made)
        self.assertEqual(bad[1], "op-in-step")

    def test_a_big_batch_verdict_names_the_write_floor(self):
        # wide_mlp under XLA on an H100: 64 MiB a step, the constant batch at 5,887 steps/s;
        # at a 3,280 GB/s write ceiling the batch's write alone takes 20 us of a 170 us step.
        def row(path, ratio, u, status=""):
            r = dict(config="wide_mlp", mode="fit64", jit=True, path=path, vs_constant=ratio, uncertainty=u,
                     status=status, input_share=max(0.0, 1 - ratio), steps_per_s=5887.0 * ratio,
                     batch_bytes=64 << 20, write_gb_per_s=3280.0)  # fmt: skip
            return r

        table = [row("constant", 1.0, 0.01, "upper bound"), row("numpy+prefetch", 0.002, 0.001),
                 row("op-in-step", 0.86, 0.01)]  # fmt: skip
        for r in table:
            r["write_floor"] = _measure.write_floor(r, table[0])
        self.assertIsNone(table[0]["write_floor"])
        self.assertIsNone(table[1]["write_floor"])  # made outside the step
        self.assertAllClose(table[2]["write_floor"], 1 / (1 + (64 << 20) / 3280e9 * 5887.0))
        (v,) = bench.verdicts(table)
        self.assertIn("Writing its 64 MiB batch takes a step at least 20 us at the 3280 GB/s write ceiling", v["text"])
        self.assertIn("reaches 0.89x the constant batch at best; op-in-step measured 96% of that.", v["text"])

    def test_a_floor_a_path_beat_is_not_given(self):
        # The H100's floor run: its fills measured 858 GB/s, a floor of 0.68x for wide_mlp's
        # 64 MiB batch, and op-in-step measured 0.85x: that ceiling bounds nothing.
        table = fixture("bench_h100_floor.json")
        wide = [v for v in bench.verdicts(table) if v["config"] == "wide_mlp"][0]["text"]
        self.assertIn("no write floor is given", wide)
        self.assertNotIn("at best", wide)


class BenchTest(device_util.DeviceTestCase):
    def test_every_path_mode_and_outputs(self):
        gpu = device_util.device() == "gpu"
        lines = []
        table = bench.run(
            ["small_mlp"], bench.PATHS, bench.MODES, [False], gpu, seconds=0.05, rounds=2, progress=lines.append
        )
        rows = len(bench.PATHS) * len(bench.MODES)
        self.assertLen(table, rows)
        self.assertTrue(any("round 2/2" in line for line in lines), lines)  # progress: what runs
        self.assertTrue(any("left" in line for line in lines), lines)  # and how long is left
        for row in table:
            self.assertGreater(row["steps_per_s"], 0)
            self.assertEqual(row["samples_per_s"], row["steps_per_s"] * 32)
            self.assertGreaterEqual(row["uncertainty"], 0)
            self.assertGreaterEqual(len(row["rounds"]), 1 if row.get("one_round") else 2)  # SETTLED
            if row["path"] == "constant":
                self.assertEqual(row["vs_constant"], 1.0)
            else:
                self.assertTrue(row["vs_constant"] <= _measure.LIMIT or row["status"] == "measurement problem", row)
        out = tempfile.mkdtemp()
        bench.write_outputs(table, out, dict(device="test"))
        with open(os.path.join(out, "bench.json")) as f:
            written = json.load(f)
        self.assertLen(written["results"], rows)
        self.assertLen(written["verdicts"], len(bench.MODES))
        self.assertGreater(os.path.getsize(os.path.join(out, "bench.png")), 1000)
        self.assertEqual(_verdict.disagreements(table), [])
        for row in table:  # the write ceiling measured in the run, the floor of in-step rows
            self.assertGreater(row["write_gb_per_s"], 0)
            self.assertEqual(row["write_floor"] is not None, row["path"] in ("op-in-step", "tf-stateless"), row)
        self.assertIn("vs constant", bench.format_table(table))
        self.assertIn(" ± ", bench.format_table(table))

    def test_the_constant_batch_keeps_no_int32_capture(self):
        # TensorFlow keeps a GPU function's int32 captures in host memory: cnn's int32 labels
        # captured as they are would be copied to the device at every step of the bound. The
        # constant batch is captured as float32 bits and bitcast back in the step: the same
        # values, no int32 capture (on a GPU: no host-to-device copy a step).
        cfg = _configs.configs(device_util.device() == "gpu")["cnn"]
        gen = _configs.batch_generator(cfg, "constant")
        f = tf.function(gen).get_concrete_function(tf.TensorSpec([], tf.int64))
        self.assertEqual([c.dtype for c in f.captured_inputs], [tf.float32, tf.float32])
        self.assertIn("Bitcast", [op.type for op in f.graph.get_operations()])
        x, y = f(tf.constant(7, tf.int64))
        want_x, want_y = cfg["gen"](tf.constant(0, tf.int64))
        self.assertEqual(y.dtype, tf.int32)
        self.assertAllEqual(x, want_x)
        self.assertAllEqual(y, want_y)

    def test_registered_path_runs_beside_the_built_in_ones(self):
        gpu = device_util.device() == "gpu"
        bench.register_path("twice", lambda cfg: lambda step: cfg["gen"](step * 2), in_step=True)
        try:
            table = bench.run(["small_mlp"], ["constant", "twice"], ["loop64"], [False], gpu, seconds=0.05, rounds=1,
                              progress=lambda m: None)  # fmt: skip
        finally:
            _configs.EXTRA_PATHS.pop("twice")
        self.assertEqual([r["path"] for r in table], ["constant", "twice"])

    def test_importing_the_package_adds_no_flags(self):
        # profile_input is imported into users' programs: the command line's flags (--device,
        # --out, ...) are defined only when bench.main runs.
        from absl import flags

        self.assertNotIn("configs", flags.FLAGS)
        self.assertNotIn("paths", flags.FLAGS)

    def test_default_run_is_the_bounded_one(self):
        self.assertEqual(_measure.default_settings(False, False), [("fit1", False), ("fit64", False)])
        self.assertLen(_measure.default_settings(False, True), len(bench.MODES))
        self.assertLen(_measure.default_settings(True, True), 2 * len(bench.MODES))
        self.assertEqual(_measure.default_settings(True, False, ["loop64"], [True]), [("loop64", True)])

    def test_profile_input_breakdown_and_verdicts(self):
        step = tf.function(lambda b: tf.reduce_sum(b * 2.0))
        fast = tf.data.Dataset.from_tensors(tf.ones([64, 8])).repeat()

        def slow_batches():
            while True:
                time.sleep(0.01)  # a slow producer: input-bound by construction
                yield tf.ones([64, 8]).numpy()

        slow = tf.data.Dataset.from_generator(slow_batches, output_signature=tf.TensorSpec([64, 8], tf.float32))
        fast_result = bench.profile_input(fast, step, steps=20)
        slow_result = bench.profile_input(slow, step, steps=20)
        self.assertTrue(slow_result["verdict"].startswith("Input is your bottleneck"), slow_result)
        self.assertGreater(slow_result["input_share"], fast_result["input_share"])
        self.assertGreater(slow_result["python_ms"], 5.0)  # the 10 ms sleep is the generator's
        self.assertGreater(slow_result["projected"]["op in the step"]["gain"], 2.0)
        for key in ("python_ms", "tfdata_ms", "copy_ms", "step_ms"):
            self.assertIn(key, slow_result)
        for r in (fast_result, slow_result):
            self.assertIn("ms", r["verdict"])


if __name__ == "__main__":
    tf.test.main()
