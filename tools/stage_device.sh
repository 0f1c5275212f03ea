#!/usr/bin/env bash
# Stages what a lent GPU machine needs to run our tests and benchmarks
# (../shared/device/README.md, after its prepare-tf-gpu.sh): the wheel as a real file under
# .devtf/artifacts/, optionally a baseline for before/after in one session (an older wheel,
# or older modules of the Python package: tools/gpu_session.sh runs it), and CUPTI 12 in
# .devtf/extras/libs so TensorFlow's profiler records device events (tools/op_timeline.py).
#   tools/stage_device.sh [BASELINE.whl | BASELINE_COMMIT:python/tf_onthefly/NAME.py ...]
set -euo pipefail
cd "$(dirname "$0")/.."
[ -d .devtf/extras/libs ] || { echo "run ../shared/device/prepare-tf-gpu.sh first" >&2; exit 1; }
rm -rf .devtf/artifacts && mkdir -p .devtf/artifacts
bash build_pip_pkg.sh .devtf/artifacts
for b in "$@"; do
  case "$b" in
    *.whl) cp "$b" ".devtf/artifacts/baseline-$(basename "$b")" ;;
    *:*.py) git show "$b" > ".devtf/artifacts/baseline-$(basename "${b#*:}")" ;;
    *) echo "baseline: a wheel or COMMIT:path.py, not $b" >&2; exit 1 ;;
  esac
done
if [ ! -f .devtf/extras/libs/libcupti.so.12 ]; then
  tmp=$(mktemp -d)
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --platform manylinux2014_x86_64 "nvidia-cuda-cupti-cu12==12.5.*" -d "$tmp"
  unzip -q -j "$tmp"/*.whl 'nvidia/cuda_cupti/lib/libcupti.so.12' -d .devtf/extras/libs
  rm -rf "$tmp"
fi
ls -la .devtf/artifacts .devtf/extras/libs
