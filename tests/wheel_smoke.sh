#!/usr/bin/env bash
# Builds the wheel (an op library per supported TensorFlow), installs it into fresh virtual
# environments with the oldest and the newest supported TensorFlow (from PyPI, nothing of the
# source tree) and runs the smoke test there (tests/wheel_smoke.py), then checks that an
# unsupported TensorFlow gets an ImportError naming the supported range. Run by .ci/run;
# the GPU variant: tools/testing/gpu_run.py ... smoke (docs/packaging.md).
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bash build_pip_pkg.sh "$work/dist" >/dev/null
wheel=$(ls "$work"/dist/tf_onthefly-*.whl)
echo "wheel: $(basename "$wheel") ($(du -k "$wheel" | cut -f1) KiB)"
read -r -a versions < <(python3 -c "exec(open('tf_ops/tf_versions.bzl').read()); print(TF_VERSIONS[0], TF_VERSIONS[-1])")
export TF_CPP_MIN_LOG_LEVEL=2
for v in "${versions[@]}"; do
  python3 -m venv "$work/venv-$v"
  py="$work/venv-$v/bin/python"
  "$py" -m pip install -q --disable-pip-version-check "tensorflow==$v" "$wheel"
  echo "== TensorFlow $v"
  (cd "$work" && "$py" -m tf_onthefly.info && "$py" "$OLDPWD/tests/wheel_smoke.py")
done
# An unsupported TensorFlow (faked in a fresh interpreter): ImportError at import, naming the range.
py="$work/venv-${versions[-1]}/bin/python"
out=$(cd "$work" && "$py" -c "import tensorflow as tf; tf.__version__ = '2.15.1'; import tf_onthefly" 2>&1 || true)
echo "$out" | grep -q "ImportError: tf_onthefly has op libraries for TensorFlow 2.16 to 2.21" \
  || { echo "unsupported version not reported as expected:"; echo "$out"; exit 1; }
echo "$out" | grep -q "pip install 'tensorflow>=2.16,<2.22'" || { echo "no fix named: $out"; exit 1; }
echo "unsupported check: $(echo "$out" | grep ImportError)"
echo "wheel smoke test: OK"
