"""The input benchmark: measure every input path side by side, and whether input is your bottleneck.

    python -m tf_onthefly.bench                    # the default run (docs/bench.md: its time)
    python -m tf_onthefly.bench --full             # every path and mode (and XLA on a GPU)
    bazel run //:bench -- --out=/tmp/bench

For each configuration (small_mlp: 16 features, batch 32, Dense 64-64-1; wide_mlp: 256
features in large batches, the same layers; cnn: a CNN on procedural_shapes images) it
trains with each input path, in each execution mode:

  paths
    constant        a batch already on the device: the upper bound
    numpy           NumPy batches through tf.data.Dataset.from_generator
    numpy+prefetch  the same with prefetch (the simple path)
    op-cpu-tfdata   the native op on the CPU inside tf.data (data.host_dataset)
    op-in-step      the native op inside the training step, on the step's device
                    (data.GeneratorModel, data.DataPosition)
    tf-stateless    TensorFlow's own stateless random ops inside the step
  modes
    fit1            keras model.fit, one step per call (steps_per_execution=1)
    fit64           keras model.fit, steps_per_execution=64
    loop64          a custom loop: one tf.function call runs 64 steps in a graph loop
  jit
    off / on        XLA compiles the step (keras jit_compile; for op-in-step the generator
                    op is compiled with it)

The default run covers the choice of path (constant, numpy+prefetch, op-cpu-tfdata,
op-in-step) in the modes most programs use (fit1 and fit64; on a GPU also fit64 under
XLA); `--full` runs every path, mode and XLA setting.

How it measures (so that no row can claim the impossible): the paths of one (config,
mode, jit) are built together, then timed in `--rounds` rounds. A round gives every path
three short turns, the order reversed at each turn, so a path's time is spread over the
round as the constant batch's is and a slow spell of the machine falls on both. A turn
runs chunks of a fixed number of steps (fit: calls of the model's train function, as fit
makes them, on one iterator; the loop: calls of its tf.function) and discards the first
(a prefetch buffer filled while other paths ran); the round's rate is taken at the
chunks' lower quartile (a busy machine only adds time). A row's speed against the
constant batch is the median of its rounds' ratios, with an uncertainty from the rounds
(their half range, or the chunks' own scatter when larger). A row above the constant
batch by more than its uncertainty is measured again (more rounds, pooled); if it stays
above (or above 1.15x at all), it is reported as a measurement problem, never as a
speed-up. A difference inside the uncertainty reads "same as constant".

Outputs: the table (steps/s, samples/s, `vs constant` with its uncertainty, input GB/s,
what the input costs of the step), a verdict per (config, mode, jit) in plain words, and
bench.json (the rows, their rounds, the verdicts) and bench.png in --out.

`profile_input(dataset, train_step)` (and `--profile=module:function`) breaks your own
pipeline's step down: the Python generator, tf.data, host-to-device copies and the step,
with the projected gain of each path.

Extra paths plug in through `register_path`:

    bench.register_path("my-dataset", lambda cfg: make_dataset(cfg["batch"], cfg["x_shape"]),
                        in_step=False)
    bench.register_path("my-op", lambda cfg: lambda step: my_op(cfg["batch"], step),
                        in_step=True)

(`benchmarks/input_bench_ptx_paths.py` adds the PTX op and the CuPy bridge this way.)

`make(cfg)` gets the configuration (`name`, `batch`, `x_shape`, `x_dtype`, `y_shape`,
`y_dtype`, `gpu`, `jit`, and `gen(step)`, this package's own generator of that batch) and returns
either a function step -> (x, y) that runs inside the training step (`in_step=True`) or
a tf.data.Dataset of (x, y) batches (`in_step=False`). A registered path runs in every
(config, mode, jit) after the built-in ones, is named in `--paths`, and is a candidate
of the verdict when `candidate=True`; make may return None to skip a configuration.
"""

from absl import app

from tf_onthefly.bench._configs import MODES, PATHS, register_path
from tf_onthefly.bench._measure import run
from tf_onthefly.bench._profile import profile_input
from tf_onthefly.bench._report import format_table, write_outputs
from tf_onthefly.bench._verdict import verdicts


def main():
    """The command line (python -m tf_onthefly.bench, tf-onthefly bench): parses sys.argv,
    runs, exits. Its flags are defined here, on the first call, not when the package is
    imported, so `profile_input` adds no flags to a program of yours."""
    from tf_onthefly.bench import _cli

    app.run(_cli.main)


__all__ = [
    "MODES",
    "PATHS",
    "format_table",
    "main",
    "profile_input",
    "register_path",
    "run",
    "verdicts",
    "write_outputs",
]
