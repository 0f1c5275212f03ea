#!/usr/bin/env bash
# Builds the wheel, installs it into a fresh virtual environment (TensorFlow from PyPI,
# nothing of the source tree) and runs a smoke test there: ops on the CPU, the build
# report, the TensorFlow-mismatch error. Run by .ci/run; GPU variant: docs/benchmarks.md.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bash build_pip_pkg.sh "$work/dist" >/dev/null
python3 -m venv "$work/venv"
"$work/venv/bin/python" -m pip install -q --disable-pip-version-check "$work"/dist/tf_onthefly-*.whl
cd "$work"  # away from the source tree
export TF_CPP_MIN_LOG_LEVEL=2
"$work/venv/bin/python" -m tf_onthefly.info
"$work/venv/bin/python" - <<'PY'
import numpy as np
import tensorflow as tf
import tf_onthefly

assert "site-packages" in tf_onthefly.__file__, tf_onthefly.__file__
f, l = tf_onthefly.random_batch(4, 6, seed=[1, 2], step=3)
golden = np.array([0.30296677, 0.31367546, 0.20855665, 0.18873435, 0.19950825, 0.76777154], np.float32)
assert np.array_equal(f.numpy()[0], golden), f.numpy()[0]
for name, gen in sorted(tf_onthefly.GENERATORS.items()):
    args = {"random_batch": (8, 4), "teacher_task": (8, 4), "procedural_shapes": (2, 16, 16), "random_walk": (8, 10)}[name]
    outs = gen(*args, seed=1, step=0)
    print(f"{name}: {[tuple(o.shape) for o in outs]} on {outs[0].device.split('/')[-1]}")
print("ops: OK")
PY
# A different TensorFlow (faked in a fresh interpreter): ImportError at import, naming both.
out=$("$work/venv/bin/python" -c "import tensorflow as tf; tf.__version__ = '2.20.0'; import tf_onthefly" 2>&1 || true)
echo "$out" | grep -q "ImportError: tf_onthefly was built against TensorFlow 2.21.0 but TensorFlow 2.20.0 is installed" \
  || { echo "mismatch not reported as expected:"; echo "$out"; exit 1; }
echo "$out" | grep -q "pip install 'tensorflow==2.21.\*'" || { echo "no fix named: $out"; exit 1; }
echo "mismatch check: $(echo "$out" | grep ImportError)"
echo "wheel smoke test: OK"
