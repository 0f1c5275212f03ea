#!/usr/bin/env bash
# Stages what a lent GPU machine needs to run our tests and benchmarks
# (../shared/device/README.md): the wheel, as a real file under .devtf/artifacts/.
# There, install it beside the carried TensorFlow and run the test files directly:
#   python3 -m pip install -q --no-deps --target /tmp/otf .devtf/artifacts/*.whl
#   PYTHONPATH=/tmp/otf:$PYTHONPATH python3 tests/random_batch_test.py --test_device=gpu
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf .devtf/artifacts && mkdir -p .devtf/artifacts
bash build_pip_pkg.sh .devtf/artifacts
