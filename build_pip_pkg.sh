#!/usr/bin/env bash
# Builds the tf-onthefly wheel into DEST. Not built yet: the wheel (manylinux policy,
# TensorFlow-version check at import, `python -m tf_onthefly.info`) is its own issue.
# Until then, use the package from Bazel: `bazel build //python/tf_onthefly`.
echo "build_pip_pkg.sh: the wheel is not built yet (see docs/packaging.md when it lands)" >&2
exit 1
