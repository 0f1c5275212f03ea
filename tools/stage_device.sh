#!/usr/bin/env bash
# Stages what a lent GPU machine needs to run our tests and benchmarks
# (../shared/device/README.md): the built package, with its op library beside it, as real
# files under .devtf/artifacts/ (bazel-bin is a link and would travel only as a link).
# There: PYTHONPATH=.devtf/artifacts python3 tests/random_batch_test.py --test_device=gpu
set -euo pipefail
cd "$(dirname "$0")/.."
bazel build //python/tf_onthefly >/dev/null
rm -rf .devtf/artifacts/tf_onthefly && mkdir -p .devtf/artifacts/tf_onthefly
cp python/tf_onthefly/*.py .devtf/artifacts/tf_onthefly/
cp bazel-bin/python/tf_onthefly/_tf_onthefly_ops.so .devtf/artifacts/tf_onthefly/
chmod u+w .devtf/artifacts/tf_onthefly/*
echo "staged: $(ls .devtf/artifacts/tf_onthefly | tr '\n' ' ')"
