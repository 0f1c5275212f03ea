#!/usr/bin/env bash
# Builds the wheel (an op library per supported TensorFlow) and installs it, from PyPI and
# nothing of the source tree, into two fresh virtual environments that cover both ends of
# the supported range and both TensorFlow builds:
#   - the oldest supported TensorFlow, its standard (GPU-capable) build: wheel[gpu];
#   - the newest, as tensorflow-cpu (CPU-only: no CUDA runtime in the process): wheel[cpu],
#     which must not pull in the `tensorflow` distribution.
# In each: `tf-onthefly info` / `python -m tf_onthefly.info` (the GPU kernels usable, or not
# and why), and tests/wheel_smoke.py (every generator's golden outputs, model.fit, XLA).
# Then an unsupported TensorFlow must get an ImportError naming the supported range. Run by
# .ci/run; the GPU variant: tools/testing/gpu_run.py ... smoke (docs/packaging.md).
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bash build_pip_pkg.sh "$work/dist" >/dev/null
wheel=$(ls "$work"/dist/tf_onthefly-*.whl)
echo "wheel: $(basename "$wheel") ($(du -k "$wheel" | cut -f1) KiB)"
# The JAX range the wheel's handlers (XLA FFI API 0.1) serve, ends tested (docs/jax.md); the
# PyTorch range (docs/torch.md): the oldest supported (the ops' Python implementation), the
# oldest the op library's stable ABI loads into, and the development one.
JAX_OLDEST=0.5.0
JAX_NEWEST=0.10.2
TORCH_OLDEST=2.4.0
TORCH_STABLE_ABI=2.10.0
TORCH_VERSION=2.13.0
read -r oldest newest < <(python3 -c "exec(open('tf_ops/tf_versions.bzl').read()); print(TF_VERSIONS[0], TF_VERSIONS[-1])")
export TF_CPP_MIN_LOG_LEVEL=2
# venv name, TensorFlow requirement, the wheel's extra, what info must say of the GPU kernels
setups=(
  "gpu-$oldest|tensorflow==$oldest|gpu|GPU kernels +yes: CUDA runtime from libtensorflow_framework"
  "cpu-$newest|tensorflow-cpu==$newest|cpu|GPU kernels +not available: .*CPU-only TensorFlow"
)
for setup in "${setups[@]}"; do
  IFS='|' read -r name requirement extra gpu_kernels <<<"$setup"
  venv="$work/venv-$name"
  python3 -m venv "$venv"
  py="$venv/bin/python"
  "$py" -m pip install -q --disable-pip-version-check "$requirement" "${wheel}[$extra]"
  echo "== $requirement, tf_onthefly[$extra]"
  if [ "$extra" = cpu ] && "$py" -m pip show -q tensorflow >/dev/null 2>&1; then
    echo "FAIL: installing tf_onthefly[cpu] next to tensorflow-cpu pulled in tensorflow"; exit 1
  fi
  # The console script in one, python -m in the other: both serve users of the wheel.
  info=$(cd "$work" && if [ "$extra" = cpu ]; then "$venv/bin/tf-onthefly" info; else "$py" -m tf_onthefly.info; fi)
  echo "$info"
  echo "$info" | grep -Eq "$gpu_kernels" || { echo "FAIL: info does not say '$gpu_kernels'"; exit 1; }
  (cd "$work" && "$py" "$OLDPWD/tests/wheel_smoke.py")
  # A generator of one's own against the installed wheel (examples/external_generator/, as
  # a user's repository): its README's `## Build and test` block, run in a copy of the
  # folder with this environment's python first on PATH. With the newest TensorFlow (XLA
  # kernels: jit_compile is checked too).
  if [ "$extra" = cpu ]; then
    cp -r examples/external_generator "$work/external_generator"
    awk '/^## Build and test/ {s = 1} s && /^```/ {if (b) exit; b = 1; next} b' \
      examples/external_generator/README.md >"$work/external_generator/build_and_test.sh"
    echo "== examples/external_generator: $(grep -c . "$work/external_generator/build_and_test.sh") commands of its README"
    if ! (cd "$work/external_generator" && PATH="$venv/bin:$PATH" bash -euo pipefail build_and_test.sh >"$work/example.log" 2>&1); then
      cat "$work/example.log"
      echo "FAIL: examples/external_generator's README block"
      exit 1
    fi
    tail -5 "$work/example.log"
  fi
done
# An unsupported TensorFlow (faked in a fresh interpreter): ImportError at import, naming the
# range and the installed TensorFlow's own distribution (tensorflow-cpu here).
py="$work/venv-cpu-$newest/bin/python"
out=$(cd "$work" && "$py" -c "import tensorflow as tf; tf.__version__ = '2.15.1'; import tf_onthefly; tf_onthefly.random_batch" 2>&1 || true)
echo "$out" | grep -q "ImportError: tf_onthefly has op libraries for TensorFlow 2.16 to 2.21" \
  || { echo "unsupported version not reported as expected:"; echo "$out"; exit 1; }
echo "$out" | grep -q "pip install 'tensorflow-cpu>=2.16,<2.22'" || { echo "no fix named: $out"; exit 1; }
echo "unsupported check: $(echo "$out" | grep "^ImportError")"
# The JAX and PyTorch front ends, each in a fresh environment without TensorFlow: the oldest
# and newest supported JAX (docs/jax.md) and the three PyTorch releases above, wheel[jax] /
# wheel[torch]; their tests (every golden batch, jit/vmap/shard_map, torch.compile, which
# kernels run) from the checkout.
for requirement in "jax==$JAX_OLDEST jaxlib==$JAX_OLDEST|jax|jax_test.py" "jax==$JAX_NEWEST jaxlib==$JAX_NEWEST|jax|jax_test.py" \
  "torch==$TORCH_OLDEST numpy<2|torch|torch_test.py" "torch==$TORCH_STABLE_ABI|torch|torch_test.py" \
  "torch==$TORCH_VERSION|torch|torch_test.py"; do
  IFS='|' read -r pins extra test <<<"$requirement"
  venv="$work/venv-${pins%% *}"
  python3 -m venv "$venv"
  # shellcheck disable=SC2086 # the pins are separate words
  "$venv/bin/python" -m pip install -q --disable-pip-version-check $pins "${wheel}[$extra]"
  echo "== $pins, tf_onthefly[$extra], no TensorFlow"
  if "$venv/bin/python" -m pip show -q tensorflow >/dev/null 2>&1; then echo "FAIL: tf_onthefly[$extra] pulled in tensorflow"; exit 1; fi
  out=$(cd "$work" && "$venv/bin/python" -c "import tf_onthefly; tf_onthefly.random_batch" 2>&1 || true)
  echo "$out" | grep -q "ImportError: tf_onthefly's TensorFlow ops need TensorFlow, which is not installed: pip install 'tf-onthefly\[gpu\]'" \
    || { echo "no clear ImportError for a TensorFlow name without TensorFlow: $out"; exit 1; }
  (cd "$work" && "$venv/bin/python" "$OLDPWD/tests/$test" 2>&1 | tail -3)
  (cd "$work" && "$venv/bin/python" "$OLDPWD/tests/framework_batches.py" --framework="$extra" >/dev/null)
  rm -rf "$venv"  # a framework's environment is gigabytes: one at a time on disk
done
echo "wheel smoke test: OK"
